#include "plugin/occupancy/segment.h"

#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/params.h"

namespace trirace::occupancy {

std::string SanitizeJobId(absl::string_view job) {
  std::string out;
  for (char c : job.substr(0, 48)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  return out.empty() ? "default" : out;
}

std::string DefaultJobId() {
  const std::string& own = ParamString(ParamId::kJobId);
  if (!own.empty()) return SanitizeJobId(own);
  for (const char* name : {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE", "LSB_JOBID",
                           "PBS_JOBID", "FLUX_JOB_ID"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return SanitizeJobId(v);
  }
  return "default";
}

std::string SegmentName(absl::string_view job) {
  std::string id = job.empty() ? DefaultJobId() : SanitizeJobId(job);
  return absl::StrCat("/trirace-", static_cast<unsigned>(geteuid()), "-", id);
}

namespace {

// Reads the state (field 3) and starttime (field 22) of /proc/<pid>/stat.
bool ReadStat(pid_t pid, char* state, uint64_t* start_time) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text;
  if (!in || !std::getline(in, text)) return false;
  size_t close = text.rfind(')');  // the command name may contain spaces and ')'
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return false;
    if (i == 3) *state = field[0];
  }
  *start_time = std::strtoull(field.c_str(), nullptr, 10);
  return true;
}

}  // namespace

uint64_t ProcessStartTime(pid_t pid) {
  char state = '?';
  uint64_t start = 0;
  return ReadStat(pid, &state, &start) ? start : 0;
}

bool ProcessAlive(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return false;
  char state = '?';
  uint64_t start = 0;
  if (!ReadStat(pid, &state, &start)) {
    if (access("/proc/self/stat", R_OK) == 0) return false;  // /proc works: the pid is gone
    return ::kill(pid, 0) == 0 || errno == EPERM;              // no /proc: ask the kernel
  }
  if (state == 'Z' || state == 'X') return false;  // killed, not yet reaped
  return start_time == 0 || start == start_time;
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool ReadSlot(trirace_occ_proc_t& src, trirace_occ_proc_t* out) {
  // A write takes microseconds, but its writer can be descheduled halfway
  // (the machine is shared with the job): spin briefly, then yield, for up
  // to kBusyWaitNs before calling the slot busy.
  constexpr uint64_t kBusyWaitNs = 20'000'000;
  const uint64_t start = NowNs();
  for (int attempt = 0;; ++attempt) {
    if (attempt >= 64) {
      if (NowNs() - start > kBusyWaitNs) return false;
      sched_yield();
    }
    uint32_t before = Atomic(src.seq).load(std::memory_order_acquire);
    if (before & 1u) continue;
    out->seq = before;
    out->owner_pid = Atomic(src.owner_pid).load(std::memory_order_relaxed);
    out->owner_start_time = Atomic(src.owner_start_time).load(std::memory_order_relaxed);
    out->update_ns = Atomic(src.update_ns).load(std::memory_order_relaxed);
    out->num_nics = Atomic(src.num_nics).load(std::memory_order_relaxed);
    uint32_t n = out->num_nics > TRIRACE_OCC_MAX_NICS ? TRIRACE_OCC_MAX_NICS : out->num_nics;
    for (uint32_t i = 0; i < n; ++i) {
      trirace_occ_nic_t& s = src.nics[i];
      trirace_occ_nic_t& d = out->nics[i];
      for (int k = 0; k < TRIRACE_OCC_NAME_LEN; ++k) {
        d.name[k] = Atomic(s.name[k]).load(std::memory_order_relaxed);
      }
      d.speed_mbps = Atomic(s.speed_mbps).load(std::memory_order_relaxed);
      auto* sc = reinterpret_cast<uint64_t*>(s.cls);
      auto* dc = reinterpret_cast<uint64_t*>(d.cls);
      for (size_t k = 0; k < sizeof(s.cls) / (sizeof(uint64_t)); ++k) {
        dc[k] = Atomic(sc[k]).load(std::memory_order_relaxed);
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (Atomic(src.seq).load(std::memory_order_relaxed) == before) {
      for (uint32_t i = 0; i < n; ++i) out->nics[i].name[TRIRACE_OCC_NAME_LEN - 1] = '\0';
      out->num_nics = n;
      return true;
    }
  }
}

bool HeaderMatches(const trirace_occ_header_t& h) {
  return h.version == TRIRACE_OCC_VERSION && h.header_bytes == sizeof(trirace_occ_header_t) &&
         h.proc_bytes == sizeof(trirace_occ_proc_t) && h.max_procs == TRIRACE_OCC_MAX_PROCS &&
         h.max_nics == TRIRACE_OCC_MAX_NICS && h.num_classes == TRIRACE_OCC_NUM_CLASSES;
}

}  // namespace trirace::occupancy
