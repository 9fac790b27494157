// The C reader API of include/trirace/occupancy.h.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "plugin/occupancy/segment.h"
#include "trirace/occupancy.h"

using trirace::occupancy::Atomic;

struct trirace_occ_reader {
  void* map = nullptr;
  size_t bytes = 0;
  trirace_occ_proc_t* procs = nullptr;
};

extern "C" {

namespace {

// Adds one live process slot to `sum`: its NICs merged by name, per class
// and in total.
void AddProc(const trirace_occ_proc_t& proc, trirace_occ_snapshot_t* sum) {
  sum->num_procs++;
  for (uint32_t n = 0; n < proc.num_nics && n < TRIRACE_OCC_MAX_NICS; ++n) {
    const trirace_occ_nic_t& nic = proc.nics[n];
    uint32_t k = 0;
    while (k < sum->num_nics && std::strncmp(sum->nics[k].name, nic.name, TRIRACE_OCC_NAME_LEN) != 0) ++k;
    if (k == sum->num_nics) {
      if (sum->num_nics == TRIRACE_OCC_MAX_NICS) continue;
      sum->num_nics++;
      std::memcpy(sum->nics[k].name, nic.name, TRIRACE_OCC_NAME_LEN);
      sum->nics[k].speed_mbps = nic.speed_mbps;
    }
    trirace_occ_nic_summary_t& nic_sum = sum->nics[k];
    nic_sum.num_procs++;
    if (proc.update_ns > nic_sum.update_ns) nic_sum.update_ns = proc.update_ns;
    for (int c = 0; c < TRIRACE_OCC_NUM_CLASSES; ++c) {
      const auto* src = reinterpret_cast<const uint64_t*>(&nic.cls[c]);
      auto* dst = reinterpret_cast<uint64_t*>(&nic_sum.cls[c]);
      auto* total = reinterpret_cast<uint64_t*>(&nic_sum.total);
      for (size_t f = 0; f < sizeof(trirace_occ_counters_t) / sizeof(uint64_t); ++f) {
        dst[f] += src[f];
        total[f] += src[f];
      }
    }
  }
}

}  // namespace

int trirace_occ_segment_name(const char* job, char* buf, size_t len) {
  std::string name = trirace::occupancy::SegmentName(job ? job : "");
  if (buf == nullptr || len <= name.size()) return ENOSPC;
  std::memcpy(buf, name.c_str(), name.size() + 1);
  return 0;
}

int trirace_occ_open(const char* job, trirace_occ_reader_t** out) {
  std::string name = trirace::occupancy::SegmentName(job ? job : "");
  return trirace_occ_open_name(name.c_str(), out);
}

int trirace_occ_open_name(const char* shm_name, trirace_occ_reader_t** out) {
  if (out == nullptr || shm_name == nullptr || shm_name[0] != '/') return EINVAL;
  *out = nullptr;
  int fd = shm_open(shm_name, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return errno;
  struct stat st{};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return err;
  }
  if (st.st_uid != geteuid()) {
    close(fd);
    return EPERM;
  }
  const size_t bytes = TRIRACE_OCC_SEGMENT_BYTES;
  if (st.st_size != static_cast<off_t>(bytes)) {
    close(fd);
    return st.st_size == 0 ? ENOENT : EPROTO;  // 0: its creator is still initialising
  }
  void* map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (map == MAP_FAILED) return err;
  auto* header = static_cast<trirace_occ_header_t*>(map);
  if (Atomic(header->magic).load(std::memory_order_acquire) != TRIRACE_OCC_MAGIC) {
    munmap(map, bytes);
    return ENOENT;
  }
  if (!trirace::occupancy::HeaderMatches(*header)) {
    munmap(map, bytes);
    return EPROTO;
  }
  auto* reader = new (std::nothrow) trirace_occ_reader;
  if (reader == nullptr) {
    munmap(map, bytes);
    return ENOMEM;
  }
  reader->map = map;
  reader->bytes = bytes;
  reader->procs = reinterpret_cast<trirace_occ_proc_t*>(static_cast<char*>(map) +
                                                        sizeof(trirace_occ_header_t));
  *out = reader;
  return 0;
}

int trirace_occ_read_proc(trirace_occ_reader_t* reader, uint32_t index, trirace_occ_proc_t* out) {
  if (reader == nullptr || out == nullptr || index >= TRIRACE_OCC_MAX_PROCS) return EINVAL;
  trirace_occ_proc_t& slot = reader->procs[index];
  int32_t pid = Atomic(slot.owner_pid).load(std::memory_order_acquire);
  if (pid == 0) return ENOENT;
  if (!trirace::occupancy::ReadSlot(slot, out)) {
    // Busy: its writer is descheduled mid-write (try again), or died there
    // (killed between the two halves of the sequence lock), and a dead
    // process's slot counts for nothing, as it would were it complete.
    pid = Atomic(slot.owner_pid).load(std::memory_order_acquire);
    const uint64_t start = Atomic(slot.owner_start_time).load(std::memory_order_relaxed);
    return pid != 0 && trirace::occupancy::ProcessAlive(pid, start) ? EAGAIN : ENOENT;
  }
  if (out->owner_pid == 0 || !trirace::occupancy::ProcessAlive(out->owner_pid, out->owner_start_time)) {
    return ENOENT;
  }
  return 0;
}

int trirace_occ_read(trirace_occ_reader_t* reader, trirace_occ_snapshot_t* out) {
  return trirace_occ_read_split(reader, 0, out, nullptr);
}

int trirace_occ_read_split(trirace_occ_reader_t* reader, int32_t pid, trirace_occ_snapshot_t* out,
                           trirace_occ_snapshot_t* own) {
  if (reader == nullptr || out == nullptr) return EINVAL;
  std::memset(out, 0, sizeof(*out));
  out->time_ns = trirace::occupancy::NowNs();
  if (own != nullptr) {
    std::memset(own, 0, sizeof(*own));
    own->time_ns = out->time_ns;
  }
  auto* proc = new (std::nothrow) trirace_occ_proc_t;
  if (proc == nullptr) return ENOMEM;
  int rc = 0;
  for (uint32_t i = 0; i < TRIRACE_OCC_MAX_PROCS && rc == 0; ++i) {
    const int slot_rc = trirace_occ_read_proc(reader, i, proc);
    if (slot_rc == EAGAIN) rc = EAGAIN;  // a partial sum would look like a drop in traffic
    if (slot_rc != 0) continue;
    AddProc(*proc, out);
    if (own != nullptr && pid != 0 && proc->owner_pid == pid) AddProc(*proc, own);
  }
  delete proc;
  if (rc != 0) {
    std::memset(out, 0, sizeof(*out));
    if (own != nullptr) std::memset(own, 0, sizeof(*own));
  }
  return rc;
}

void trirace_occ_close(trirace_occ_reader_t* reader) {
  if (reader == nullptr) return;
  munmap(reader->map, reader->bytes);
  delete reader;
}

}  // extern "C"
