#include "hostccl/src/shm_ring.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <new>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace trirace::hostccl {
namespace {

constexpr uint64_t kMagic = 0x74726972696e6733;  // "triring3"
constexpr size_t kLine = 64;

// At the start of every slot.
struct Fragment {
  uint64_t message_bytes;
  uint64_t offset;
  uint64_t bytes;
  int64_t clock_ns;  // the sender's device clock for the message
};
static_assert(sizeof(Fragment) <= kLine);

absl::Status Errno(const char* what, const std::string& name, int err) {
  std::string text = absl::StrFormat("%s %s: %s", what, name, std::strerror(err));
  if (err == ENOSPC || err == ENOMEM) return absl::ResourceExhaustedError(text + " (is /dev/shm full?)");
  return absl::UnavailableError(text);
}

}  // namespace

// The segment's first bytes; each atomic on its own cache line so that the
// sender's and the receiver's stores do not share one.
struct ShmRing::Header {
  std::atomic<uint64_t> magic;  // written last by the creator
  uint64_t slot_bytes;
  uint64_t slots;
  alignas(kLine) std::atomic<uint64_t> head;  // fragments published (sender)
  alignas(kLine) std::atomic<uint64_t> tail;  // fragments consumed (receiver)
  alignas(kLine) std::atomic<uint32_t> closed;
  alignas(kLine) std::atomic<uint32_t> doorbell;  // futex word: bumped to wake the receiver
  std::atomic<uint32_t> receiver_waiting;
  alignas(kLine) std::atomic<int64_t> consumer_clock_ns;  // stored before tail (receiver)
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<int64_t>::is_always_lock_free,
              "ring indices must be address-free atomics to live in shared memory");
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "the doorbell is a futex word");

namespace {
constexpr size_t kHeaderBytes = 6 * kLine;
size_t SlotStride(size_t slot_bytes) { return kLine + (slot_bytes + kLine - 1) / kLine * kLine; }
size_t MapBytes(size_t slot_bytes) { return kHeaderBytes + ShmRing::kSlots * SlotStride(slot_bytes); }
}  // namespace

std::string ShmRing::Name(uint64_t comm_hash, int src, int dst) {
  return absl::StrFormat("/trirace-hostccl-u%d-%016x-%d-%d", static_cast<int>(getuid()), comm_hash, src, dst);
}

ShmRing::ShmRing(void* base, size_t map_bytes, size_t slot_bytes)
    : base_(base), map_bytes_(map_bytes), slot_bytes_(slot_bytes) {}

ShmRing::~ShmRing() {
  Close();
  munmap(base_, map_bytes_);
}

ShmRing::Header& ShmRing::header() const {
  static_assert(sizeof(Header) <= kHeaderBytes);
  return *static_cast<Header*>(base_);
}

char* ShmRing::slot(uint64_t index) const {
  return static_cast<char*>(base_) + kHeaderBytes + (index % kSlots) * SlotStride(slot_bytes_);
}

absl::StatusOr<std::unique_ptr<ShmRing>> ShmRing::Create(const std::string& name, size_t slot_bytes) {
  if (slot_bytes == 0) return absl::InvalidArgumentError("shared-memory ring with 0-byte slots");
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("creating shared memory", name, errno);
  absl::Cleanup close_fd = [fd] { close(fd); };
  absl::Cleanup remove = [&name] { shm_unlink(name.c_str()); };
  const size_t bytes = MapBytes(slot_bytes);
  if (int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0) {
    return Errno(absl::StrFormat("reserving %zu bytes of shared memory for", bytes).c_str(), name, err);
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return Errno("mapping shared memory", name, errno);
  std::unique_ptr<ShmRing> ring(new ShmRing(base, bytes, slot_bytes));
  Header* h = new (base) Header;
  h->slot_bytes = slot_bytes;
  h->slots = kSlots;
  h->head.store(0, std::memory_order_relaxed);
  h->tail.store(0, std::memory_order_relaxed);
  h->closed.store(0, std::memory_order_relaxed);
  h->doorbell.store(0, std::memory_order_relaxed);
  h->receiver_waiting.store(0, std::memory_order_relaxed);
  h->consumer_clock_ns.store(0, std::memory_order_relaxed);
  h->magic.store(kMagic, std::memory_order_release);
  std::move(remove).Cancel();
  return ring;
}

absl::StatusOr<std::unique_ptr<ShmRing>> ShmRing::Open(const std::string& name) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return Errno("opening shared memory", name, errno);
  absl::Cleanup close_fd = [fd] { close(fd); };
  shm_unlink(name.c_str());  // both sides hold it now; nothing is left behind
  struct stat st {};
  if (fstat(fd, &st) != 0) return Errno("inspecting shared memory", name, errno);
  if (st.st_uid != getuid()) {
    return absl::PermissionDeniedError(absl::StrFormat("shared memory %s belongs to uid %d, not to us (uid %d)",
                                                       name, static_cast<int>(st.st_uid),
                                                       static_cast<int>(getuid())));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < kHeaderBytes) return absl::InternalError(absl::StrFormat("shared memory %s is too small (%zu bytes)", name, size));
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return Errno("mapping shared memory", name, errno);
  const Header& h = *static_cast<Header*>(base);
  if (h.magic.load(std::memory_order_acquire) != kMagic || h.slots != kSlots || h.slot_bytes == 0 ||
      MapBytes(h.slot_bytes) != size) {
    munmap(base, size);
    return absl::InternalError(absl::StrFormat("shared memory %s is not a hostccl ring of this version", name));
  }
  return std::unique_ptr<ShmRing>(new ShmRing(base, size, h.slot_bytes));
}

void ShmRing::Unlink(const std::string& name) { shm_unlink(name.c_str()); }

absl::StatusOr<bool> ShmRing::Push(const char* data, size_t size, size_t* offset, int64_t clock_ns) {
  Header& h = header();
  if (h.closed.load(std::memory_order_acquire) != 0 && !closed_by_me_) {
    return absl::UnavailableError("the receiving rank closed the shared-memory link (it destroyed or aborted the communicator)");
  }
  uint64_t head = h.head.load(std::memory_order_relaxed);
  const uint64_t tail = h.tail.load(std::memory_order_acquire);
  bool first = *offset == 0;
  bool published = false;
  while ((*offset < size || first) && head - tail < kSlots) {
    char* s = slot(head);
    const size_t n = std::min(slot_bytes_, size - *offset);
    Fragment f{size, *offset, n, clock_ns};
    std::memcpy(s, &f, sizeof(f));
    if (n > 0) std::memcpy(s + kLine, data + *offset, n);
    *offset += n;
    ++head;
    h.head.store(head, std::memory_order_release);
    first = false;
    published = true;
  }
  if (published) RingDoorbell();
  // Done once every byte is out and at least the first fragment went.
  return *offset == size && !(size == 0 && first);
}

absl::StatusOr<bool> ShmRing::Pop(char* buf, size_t capacity, size_t* offset, size_t* total, int64_t* clock_ns,
                                  int64_t consumer_clock_ns) {
  Header& h = header();
  uint64_t tail = h.tail.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t head = h.head.load(std::memory_order_acquire);
    if (tail == head) {
      if (h.closed.load(std::memory_order_acquire) != 0 && !closed_by_me_) {
        return absl::UnavailableError("the sending rank closed the shared-memory link (it destroyed or aborted the communicator)");
      }
      return false;
    }
    Fragment f;
    const char* s = slot(tail);
    std::memcpy(&f, s, sizeof(f));
    if (f.offset != *offset || f.bytes > slot_bytes_ || f.offset + f.bytes > f.message_bytes) {
      return absl::InternalError(absl::StrFormat(
          "shared-memory ring out of step: fragment at offset %d of %d bytes where offset %d was expected",
          f.offset, f.message_bytes, *offset));
    }
    if (f.message_bytes > capacity) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "a message of %d bytes arrived for a receive of %zu bytes", f.message_bytes, capacity));
    }
    *total = f.message_bytes;
    if (clock_ns != nullptr) *clock_ns = f.clock_ns;
    if (f.bytes > 0) std::memcpy(buf + f.offset, s + kLine, f.bytes);
    *offset += f.bytes;
    ++tail;
    // Before tail: a sender that finds the slot free sees the clock of its reader.
    h.consumer_clock_ns.store(consumer_clock_ns, std::memory_order_relaxed);
    h.tail.store(tail, std::memory_order_release);
    if (*offset == f.message_bytes) return true;
  }
}

// The receiver announces itself, then looks at head; the sender publishes,
// then looks for a waiter. With a full fence on both sides at least one
// sees the other's store, so a wake-up is never lost: either the receiver
// finds the fragment, or the sender bumps the word the receiver waits on
// (FUTEX_WAIT then returns at once, the word having changed).
void ShmRing::RingDoorbell() {
  Header& h = header();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h.receiver_waiting.load(std::memory_order_relaxed) == 0) return;
  h.doorbell.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h.doorbell), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

void ShmRing::WaitForData(int64_t timeout_ns) {
  Header& h = header();
  const uint32_t seen = h.doorbell.load(std::memory_order_acquire);
  h.receiver_waiting.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h.head.load(std::memory_order_relaxed) == h.tail.load(std::memory_order_relaxed) &&
      h.closed.load(std::memory_order_relaxed) == 0) {
    timespec ts{static_cast<time_t>(timeout_ns / 1000000000), static_cast<long>(timeout_ns % 1000000000)};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h.doorbell), FUTEX_WAIT, seen, &ts, nullptr, 0);
  }
  h.receiver_waiting.store(0, std::memory_order_relaxed);
}

void ShmRing::Close() {
  if (closed_by_me_) return;
  closed_by_me_ = true;
  header().closed.store(1, std::memory_order_release);
  RingDoorbell();
}

int64_t ShmRing::consumer_clock_ns() const {
  // After the tail load in Push (acquire), so at least the clock of the
  // fragment that freed the slot.
  return header().consumer_clock_ns.load(std::memory_order_relaxed);
}

bool ShmRing::peer_closed() const {
  return !closed_by_me_ && header().closed.load(std::memory_order_acquire) != 0;
}

}  // namespace trirace::hostccl
