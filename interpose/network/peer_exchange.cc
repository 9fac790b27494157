#include "interpose/network/peer_exchange.h"

#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "interpose/comm/comm_state.h"

namespace trirace::interpose {

struct PeerExchange::Pending {
  PeerExchange* owner = nullptr;
  CommState* state = nullptr;
  int nranks = 0;
  std::unique_ptr<device::GateBlock> buffer;  // nranks records

  uint8_t* record(int rank) const {
    return reinterpret_cast<uint8_t*>(buffer->host_word(0)) + static_cast<size_t>(rank) * topo::kPeerIdentityBytes;
  }
};

static_assert(topo::kPeerIdentityBytes % sizeof(uint32_t) == 0);

PeerExchange::PeerExchange(const RealNccl& real, device::Device& dev, Done done)
    : real_(real), dev_(dev), done_(std::move(done)) {}

PeerExchange::~PeerExchange() = default;

absl::Status PeerExchange::Start(CommState& state, const topo::PeerIdentity& me, device::StreamHandle stream,
                                 ncclResult_t* result) {
  *result = ncclSuccess;
  if (real_.AllGather == nullptr) return absl::UnimplementedError("the real NCCL has no ncclAllGather");
  if (state.rank < 0 || state.rank >= state.nranks) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", state.rank, " of ", state.nranks));
  }
  auto p = std::make_unique<Pending>();
  p->owner = this;
  p->state = &state;
  p->nranks = state.nranks;
  absl::StatusOr<std::unique_ptr<device::GateBlock>> buffer =
      dev_.AllocateGates(static_cast<size_t>(state.nranks) * topo::kPeerIdentityBytes / sizeof(uint32_t));
  if (!buffer.ok()) return buffer.status();
  p->buffer = *std::move(buffer);
  topo::EncodePeerIdentity(me, std::span<uint8_t, topo::kPeerIdentityBytes>(p->record(state.rank),
                                                                            topo::kPeerIdentityBytes));
  // In place: this rank's record is already at its slot of the result.
  *result = real_.AllGather(p->record(state.rank), p->record(0), topo::kPeerIdentityBytes, ncclUint8, state.comm,
                            static_cast<cudaStream_t>(stream));
  if (*result != ncclSuccess && *result != ncclInProgress) {
    return absl::InternalError(absl::StrCat("ncclAllGather returned ", static_cast<int>(*result)));
  }
  Pending* raw = p.get();
  {
    absl::MutexLock lock(&mu_);
    pending_.push_back(std::move(p));
  }
  if (absl::Status s = dev_.LaunchHostFunc(stream, &PeerExchange::Finished, raw); !s.ok()) {
    // The all-gather is queued; without the callback its result is never read.
    done_(state, absl::Status(s.code(), absl::StrCat("queueing the decoding of the exchange: ", s.message())));
  }
  return absl::OkStatus();
}

void PeerExchange::Finished(void* arg) {
  auto* p = static_cast<Pending*>(arg);
  std::vector<topo::PeerIdentity> ranks;
  ranks.reserve(p->nranks);
  for (int r = 0; r < p->nranks; ++r) {
    absl::StatusOr<topo::PeerIdentity> id = topo::DecodePeerIdentity(
        std::span<const uint8_t, topo::kPeerIdentityBytes>(p->record(r), topo::kPeerIdentityBytes));
    if (!id.ok()) {
      const absl::Status& bad = id.status();
      p->owner->done_(*p->state, absl::Status(bad.code(), absl::StrCat("rank ", r, ": ", bad.message())));
      return;
    }
    ranks.push_back(*std::move(id));
  }
  p->owner->done_(*p->state, std::move(ranks));
}

}  // namespace trirace::interpose
