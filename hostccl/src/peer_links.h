// PeerLinks: the seam between hostccl's algorithms and whatever carries the
// bytes. A PeerLinks is the set of point-to-point links of one communicator
// rank: one send link and one receive link to every other rank. The
// production implementation is NetPeerLinks (a net plugin); tests may supply
// their own.
//
// The interface mirrors the non-blocking style of the net plugin API:
// Isend/Irecv start a transfer and return a request, or nullptr when the
// link is busy ("try again later"); Test polls a request and releases it
// when it reports completion. Messages on one link arrive in the order they
// were sent and each receive matches exactly one send.
//
// Buffers are registered first (Register); the region must contain every
// pointer later passed with it and outlive the transfers that use it.
//
// Thread safety: one thread drives a PeerLinks at a time (the
// communicator's executor); Close() may be called from any thread once that
// thread has stopped.
#ifndef TRIRACE_HOSTCCL_SRC_PEER_LINKS_H_
#define TRIRACE_HOSTCCL_SRC_PEER_LINKS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>

#include "absl/status/statusor.h"
#include "common/nccl_func.h"

namespace trirace::hostccl {

// A registered buffer; deregisters itself when destroyed.
class MemRegion {
 public:
  MemRegion(char* base, size_t size) : base_(base), size_(size) {}
  virtual ~MemRegion() = default;
  bool Contains(const void* p, size_t n) const {
    auto* c = static_cast<const char*>(p);
    return c >= base_ && c + n <= base_ + size_;
  }

 private:
  char* base_;
  size_t size_;
};

class PeerLinks {
 public:
  virtual ~PeerLinks() = default;

  virtual absl::StatusOr<std::unique_ptr<MemRegion>> Register(void* base, size_t size) = 0;
  // Starts sending `size` bytes to `peer`; nullptr when busy.
  virtual absl::StatusOr<void*> Isend(int peer, const void* data, size_t size, MemRegion& region) = 0;
  // Starts receiving up to `size` bytes from `peer`; nullptr when busy.
  virtual absl::StatusOr<void*> Irecv(int peer, void* data, size_t size, MemRegion& region) = 0;
  // Polls `request`; true (and *size = bytes moved) once it has completed,
  // after which the request is gone.
  virtual absl::StatusOr<bool> Test(void* request, size_t* size) = 0;
  // The largest message a single Isend/Irecv may carry.
  virtual size_t MaxMessageBytes() const = 0;
  // Whether messages to (`send`) or from `peer` cross the network, as
  // opposed to shared memory inside a host. Both ends of a link agree.
  virtual bool CrossesNetwork(int peer, bool send) const {
    (void)peer;
    (void)send;
    return true;
  }
  // A hint: the transfers that follow serve NCCL function `func` (a net
  // plugin v11 gets it with setNetAttr). May be ignored.
  virtual void SetTransferFunc(NcclFunc func) { (void)func; }
  // The device clock of one operation (hostccl's emulated stream time, see
  // docs/hostccl.md "Device clock"), in CLOCK_MONOTONIC nanoseconds.
  // StartClock(t) before an operation's transfers: t is the time its stream
  // reached it, or nullopt when the operation has no single stream (its
  // messages then carry the real time). ClockEnd() after them: the time the
  // operation ends on the device clock when every transfer went over links
  // that carry the clock (shared memory, where a hop takes no device time,
  // as over NVLink), the later of t and the clocks the messages came with;
  // nullopt when any transfer went over links that do not (the network,
  // whose time is real) or no clock was started. Links without a clock
  // (the default) always give nullopt.
  virtual void StartClock(std::optional<int64_t> start_ns) { (void)start_ns; }
  virtual std::optional<int64_t> ClockEnd() { return std::nullopt; }
  // Called by a caller with nothing to do: returns when a transfer may have
  // progressed. Links that cannot tell sleep `hint`; links that can (shared
  // memory) may block longer, up to 1 ms, and return as soon as data comes.
  virtual void WaitForActivity(std::chrono::microseconds hint) { std::this_thread::sleep_for(hint); }
  // Closes every link; later calls fail. Idempotent.
  virtual void Close() = 0;
};

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_PEER_LINKS_H_
