// ShmRing: a one-way, single-producer single-consumer ring of message
// fragments in a POSIX shared-memory segment, hostccl's path between two
// ranks on one host (as NCCL's SHM transport is between the GPUs of a node).
//
// The receiving rank creates the ring (Create: O_EXCL, mode 0600, memory
// reserved up front so that a full /dev/shm is an error now rather than a
// SIGBUS later), the sending rank maps it (Open) and removes its name; from
// then on the ring lives only in the two mappings and disappears with them.
//
// A message is cut into fragments of at most slot_bytes; each fragment
// carries the message's size and its offset, so the receiver knows where the
// message ends. The sender publishes a fragment by advancing `head` (release)
// after writing it; the receiver frees it by advancing `tail` (release) after
// copying it out. No locks: a rank killed at any point leaves the other side
// a consistent ring.
//
//   Sender:   size_t off = 0; while (!*ring.Push(data, size, &off)) { poll }
//   Receiver: size_t off = 0, total = 0;
//             while (!*ring.Pop(buf, cap, &off, &total)) { poll }
//
// Either side may Close(): the other side's Push fails at once, its Pop fails
// once every fragment already published has been read (data sent before a
// close is still delivered).
//
// Thread safety: one thread pushes and one thread pops (in different
// processes); Close() and peer_closed() from those threads.
#ifndef TRIRACE_HOSTCCL_SRC_SHM_RING_H_
#define TRIRACE_HOSTCCL_SRC_SHM_RING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace trirace::hostccl {

class ShmRing {
 public:
  static constexpr uint32_t kSlots = 8;

  // The shared-memory name ("/trirace-hostccl-...") of the ring that carries
  // src -> dst for the communicator hashed `comm_hash` (its unique id: per
  // job and communicator), per user. Either rank of the pair can derive it,
  // so a survivor can remove a ring its dead peer made.
  static std::string Name(uint64_t comm_hash, int src, int dst);

  // Creates and maps a ring of kSlots fragments of `slot_bytes` each.
  static absl::StatusOr<std::unique_ptr<ShmRing>> Create(const std::string& name, size_t slot_bytes);
  // Maps the ring `name` made by Create and removes the name.
  static absl::StatusOr<std::unique_ptr<ShmRing>> Open(const std::string& name);
  // Removes `name` if it is still there (ENOENT is fine).
  static void Unlink(const std::string& name);

  ~ShmRing();
  ShmRing(const ShmRing&) = delete;
  ShmRing& operator=(const ShmRing&) = delete;

  // Copies as many fragments of [data + *offset, data + size) as there are
  // free slots, advancing *offset; true once the whole message is in the
  // ring (a zero-byte message takes one fragment). Every fragment carries
  // `clock_ns`, the sender's device-clock time for the message (see
  // ShmPeerLinks). Unavailable if the receiver closed the ring.
  absl::StatusOr<bool> Push(const char* data, size_t size, size_t* offset, int64_t clock_ns = 0);
  // Copies the published fragments of the next message into `buf` (room for
  // `capacity` bytes), advancing *offset; *total is the message's size once
  // its first fragment is read, and *clock_ns (when not null) the sender's
  // clock_ns. Each fragment read stores `consumer_clock_ns` for the sender
  // (consumer_clock_ns()). True once the message is complete. A message
  // larger than `capacity` is InvalidArgument; Unavailable if the sender
  // closed the ring with nothing left to read.
  absl::StatusOr<bool> Pop(char* buf, size_t capacity, size_t* offset, size_t* total, int64_t* clock_ns = nullptr,
                           int64_t consumer_clock_ns = 0);
  // The consumer_clock_ns the receiver gave with the last fragment it read
  // (0 before the first).
  int64_t consumer_clock_ns() const;

  // Receiver: blocks until the sender publishes a fragment or closes the
  // ring, or `timeout_ns` passes; returns at once when a fragment is there.
  // The sender rings a doorbell (a futex word in the segment) only while
  // the receiver waits, so a busy ring costs no system call.
  void WaitForData(int64_t timeout_ns);

  // Marks the ring closed for the other side (idempotent).
  void Close();
  // True when the other side closed the ring.
  bool peer_closed() const;
  size_t slot_bytes() const { return slot_bytes_; }

 private:
  struct Header;
  ShmRing(void* base, size_t map_bytes, size_t slot_bytes);
  Header& header() const;
  char* slot(uint64_t index) const;
  void RingDoorbell();

  void* base_;
  size_t map_bytes_;
  size_t slot_bytes_;
  bool closed_by_me_ = false;
};

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_SHM_RING_H_
