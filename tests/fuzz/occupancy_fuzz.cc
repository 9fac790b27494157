// Fuzz target: the occupancy segment reader on a corrupt segment. The input
// becomes the bytes of a shared-memory object; the reader opens it, reads a
// snapshot and the first slots, and must answer with an error or a snapshot
// within its bounds, never crash.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "trirace/occupancy.h"

namespace {

std::string SegmentName() {
  static const std::string name = "/trirace-fuzz-" + std::to_string(getpid());
  return name;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // Byte 0 even: a segment of the real size holding the rest of the input
  // from its start (zeros after); odd: a segment of the rest's own size, so
  // truncated and oversized segments are tried too.
  const uint8_t* bytes = data + 1;
  const size_t len = size - 1;
  const size_t segment = (data[0] & 1) != 0 ? len : TRIRACE_OCC_SEGMENT_BYTES;
  const std::string name = SegmentName();
  const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
  if (fd < 0) return 0;
  if (ftruncate(fd, static_cast<off_t>(segment)) == 0 && len > 0) {
    const ssize_t wrote = write(fd, bytes, len < segment ? len : segment);  // a short write is one more odd segment
    (void)wrote;
  }
  close(fd);
  trirace_occ_reader_t* reader = nullptr;
  if (trirace_occ_open_name(name.c_str(), &reader) == 0) {
    trirace_occ_snapshot_t snap;
    if (trirace_occ_read(reader, &snap) == 0 &&
        (snap.num_nics > TRIRACE_OCC_MAX_NICS || snap.num_procs > TRIRACE_OCC_MAX_PROCS)) {
      std::abort();
    }
    trirace_occ_proc_t proc;
    for (uint32_t i = 0; i < 4; ++i) (void)trirace_occ_read_proc(reader, i, &proc);
    trirace_occ_close(reader);
  }
  shm_unlink(name.c_str());
  return 0;
}
