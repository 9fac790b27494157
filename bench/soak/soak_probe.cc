#include "soak_probe.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/hash.h"

namespace trirace::soak {
namespace {

// The number after "<key>:" in /proc/self/status, or -1.
int64_t StatusField(const char* key) {
  std::ifstream in("/proc/self/status");
  const size_t n = std::strlen(key);
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') {
      return std::strtoll(line.c_str() + n + 1, nullptr, 10);
    }
  }
  return -1;
}

std::string Hex16(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016" PRIx64, v);
  return text;
}

}  // namespace

int64_t RssKb() { return StatusField("VmRSS"); }
int64_t ThreadCount() { return StatusField("Threads"); }

int64_t OpenFds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int64_t n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;  // the directory's own fd
}

int64_t MappedShmFiles() {
  std::ifstream in("/proc/self/maps");
  std::set<std::string> files;  // a file mapped as several areas counts once
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(" /dev/shm/");
    if (at != std::string::npos) files.insert(line.substr(at + 1));
  }
  return static_cast<int64_t>(files.size());
}

std::string OccupancySegmentPath(const std::string& job) {
  return "/dev/shm/trirace-" + std::to_string(static_cast<unsigned>(geteuid())) + "-" + job;
}

ShmNames::ShmNames(const std::string& job) {
  segment_ = OccupancySegmentPath(job).substr(std::strlen("/dev/shm/"));
  ring_prefix_ = "trirace-hostccl-u" + std::to_string(static_cast<int>(getuid())) + "-";
}

void ShmNames::AddComm(const ncclUniqueId& id) { hashes_.insert(Hex16(Fnv1a64(id.internal, sizeof(id.internal)))); }

int64_t ShmNames::Count() const {
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return -1;
  int64_t n = 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == segment_) {
      ++n;
    } else if (name.compare(0, ring_prefix_.size(), ring_prefix_) == 0 &&
               hashes_.count(name.substr(ring_prefix_.size(), 16)) != 0) {
      ++n;
    }
  }
  closedir(d);
  return n;
}

bool ParseTraceSummary(const std::string& line, TraceSummary* out) {
  static constexpr char kMark[] = "summary: trace buffer: ";
  const size_t at = line.find(kMark);
  if (at == std::string::npos) return false;
  TraceSummary t;
  long long records = 0, dropped = 0, waiting = 0, high = 0, capacity = 0;
  if (std::sscanf(line.c_str() + at + sizeof(kMark) - 1,
                  "%lld records in, %lld dropped (buffer full), %lld waiting, at most %lld of %lld waiting", &records,
                  &dropped, &waiting, &high, &capacity) != 5) {
    return false;
  }
  t.found = true;
  t.records = records;
  t.dropped = dropped;
  t.waiting = waiting;
  t.high = high;
  t.capacity = capacity;
  *out = t;
  return true;
}

TraceSummary TraceSummaryReader::Next() {
  TraceSummary newest;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return newest;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written: read it next time
    offset_ += line.size() + 1;
    ParseTraceSummary(line, &newest);
  }
  return newest;
}

TraceSummary TraceSummaryReader::Last(const std::string& log_path) {
  TraceSummaryReader reader(log_path);
  return reader.Next();
}

bool TraceFileCounts(const std::string& path, int64_t* records, int64_t* dropped) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  // The footer names every comm's tracks; a few MiB hold it for thousands of comms.
  const std::streamoff size = in.tellg();
  const std::streamoff tail = std::min<std::streamoff>(size, 8 << 20);
  in.seekg(size - tail);
  std::string text(static_cast<size_t>(tail), '\0');
  in.read(text.data(), tail);
  const size_t other = text.rfind("\"otherData\":{");
  if (other == std::string::npos) return false;
  auto value = [&](const char* key, int64_t* out) {
    const std::string quoted = std::string("\"") + key + "\":\"";
    const size_t at = text.find(quoted, other);
    if (at == std::string::npos) return false;
    *out = std::strtoll(text.c_str() + at + quoted.size(), nullptr, 10);
    return true;
  };
  return value("records", records) && value("dropped_events", dropped);
}

}  // namespace trirace::soak
