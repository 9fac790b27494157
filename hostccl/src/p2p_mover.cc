// RunP2p (see data_mover.h).
#include <algorithm>
#include <cstring>
#include <deque>

#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "common/status.h"
#include "hostccl/src/data_mover.h"

namespace trirace::hostccl {
namespace {

// The transfers of one direction to one peer, run in order.
struct Lane {
  int peer = 0;
  bool send = false;
  std::vector<const P2pTransfer*> items;
  size_t item = 0;
  size_t offset = 0;
  std::deque<std::pair<void*, size_t>> posted;  // request, expected bytes
  bool Done() const { return item == items.size() && posted.empty(); }
};

absl::Status CopyToSelf(const std::vector<P2pTransfer>& transfers, int rank) {
  std::vector<const P2pTransfer*> sends, recvs;
  for (const P2pTransfer& x : transfers) {
    if (x.peer != rank || x.bytes == 0) continue;
    (x.send ? sends : recvs).push_back(&x);
  }
  if (sends.size() != recvs.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rank %d: %zu ncclSend to itself but %zu ncclRecv from itself in one group", rank,
        sends.size(), recvs.size()));
  }
  for (size_t i = 0; i < sends.size(); ++i) {
    if (sends[i]->bytes != recvs[i]->bytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "rank %d: send to itself of %zu bytes matched with a receive of %zu bytes", rank,
          sends[i]->bytes, recvs[i]->bytes));
    }
    if (recvs[i]->data != sends[i]->data) std::memmove(recvs[i]->data, sends[i]->data, sends[i]->bytes);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunP2p(const std::vector<P2pTransfer>& transfers, MoverEnv& env) {
  TRIRACE_RETURN_IF_ERROR(CopyToSelf(transfers, env.rank));
  std::vector<Lane> lanes;
  auto lane_for = [&](int peer, bool send) -> Lane& {
    for (Lane& l : lanes) {
      if (l.peer == peer && l.send == send) return l;
    }
    lanes.emplace_back();
    lanes.back().peer = peer;
    lanes.back().send = send;
    return lanes.back();
  };
  for (const P2pTransfer& x : transfers) {
    if (x.peer == env.rank || x.bytes == 0) continue;
    TRIRACE_RETURN_IF_ERROR(env.AddRegion(x.data, x.bytes));
    lane_for(x.peer, x.send).items.push_back(&x);
  }
  PeerLinks* const t = env.links;  // null when every transfer is to this rank
  const size_t piece_max = env.slot_bytes;
  Backoff backoff;
  for (;;) {
    bool all_done = true;
    bool progress = false;
    for (Lane& l : lanes) {
      while (l.item < l.items.size() && static_cast<int>(l.posted.size()) < env.depth) {
        const P2pTransfer& x = *l.items[l.item];
        size_t piece = std::min(piece_max, x.bytes - l.offset);
        char* p = x.data + l.offset;
        MemRegion* region = env.RegionOf(p, piece);
        absl::StatusOr<void*> req = l.send ? t->Isend(l.peer, p, piece, *region) : t->Irecv(l.peer, p, piece, *region);
        if (!req.ok()) return req.status();
        if (*req == nullptr) break;
        l.posted.emplace_back(*req, piece);
        l.offset += piece;
        if (l.offset == x.bytes) {
          ++l.item;
          l.offset = 0;
        }
        progress = true;
      }
      while (!l.posted.empty()) {
        size_t got = 0;
        absl::StatusOr<bool> done = t->Test(l.posted.front().first, l.send ? nullptr : &got);
        if (!done.ok()) return done.status();
        if (!*done) break;
        if (!l.send && got != l.posted.front().second) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "rank %d: a receive from rank %d got %zu bytes where %zu were expected (the "
              "ncclSend and ncclRecv counts or datatypes differ)",
              env.rank, l.peer, got, l.posted.front().second));
        }
        l.posted.pop_front();
        progress = true;
      }
      all_done = all_done && l.Done();
    }
    if (all_done) return absl::OkStatus();
    if (env.abort->load(std::memory_order_acquire)) return absl::AbortedError("communicator aborted");
    if (env.deadline_ns != 0 && MonotonicNs() > env.deadline_ns) {
      return absl::DeadlineExceededError("transfers unfinished at the deadline");
    }
    if (progress) {
      backoff.Reset();
    } else {
      backoff.Idle(env.links);
    }
  }
}

}  // namespace trirace::hostccl
