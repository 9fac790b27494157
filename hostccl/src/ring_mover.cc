// RunRing and the pieces both movers share (see data_mover.h).
#include <chrono>
#include <deque>
#include <thread>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "hostccl/src/data_mover.h"

namespace trirace::hostccl {

MemRegion* MoverEnv::RegionOf(const void* p, size_t n) const {
  if (staging_region != nullptr && staging_region->Contains(p, n)) return staging_region;
  for (const auto& r : regions) {
    if (r->Contains(p, n)) return r.get();
  }
  return nullptr;
}

absl::Status MoverEnv::AddRegion(const void* p, size_t n) {
  if (n == 0 || p == nullptr || RegionOf(p, n) != nullptr) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<MemRegion>> r = links->Register(const_cast<void*>(p), n);
  if (!r.ok()) return r.status();
  regions.push_back(std::move(*r));
  return absl::OkStatus();
}

void Backoff::Idle(PeerLinks* links) {
  // The plugin's own threads move the bytes; polling harder only steals
  // their CPU, so after a few yields sleep a little.
  if (idle_ < (1 << 20)) ++idle_;
  if (idle_ < 32) {
    std::this_thread::yield();
    return;
  }
  const std::chrono::microseconds pause(idle_ < 256 ? 5 : 50);
  if (links != nullptr) {
    links->WaitForActivity(pause);
  } else {
    std::this_thread::sleep_for(pause);
  }
}

namespace {

struct Posted {
  size_t index;
  void* request;
  int slot;
};

struct OutState {
  const char* src = nullptr;
  int slot = -1;
  bool ready = false;
};

// The receiver-ready handshake (data_mover.h): a token to the rank this
// one receives from, and the token of the rank it sends to. Every rank
// sends before it waits, so the handshake cannot deadlock.
absl::Status AwaitReceiverReady(const RingPlan& plan, MoverEnv& env) {
  std::vector<P2pTransfer> tokens;
  if (!plan.ins.empty() && plan.prev != env.rank && env.links->CrossesNetwork(plan.prev, false)) {
    tokens.push_back({plan.prev, true, env.ready_tokens, 1});
  }
  if (!plan.outs.empty() && plan.next != env.rank && env.links->CrossesNetwork(plan.next, true)) {
    tokens.push_back({plan.next, false, env.ready_tokens + 1, 1});
  }
  if (tokens.empty()) return absl::OkStatus();
  return RunP2p(tokens, env);
}

}  // namespace

absl::Status RunRing(const RingPlan& plan, MoverEnv& env) {
  if (plan.ring && env.receiver_ready && env.ready_tokens != nullptr) {
    TRIRACE_RETURN_IF_ERROR(AwaitReceiverReady(plan, env));
  }
  PeerLinks& t = *env.links;
  const size_t ts = plan.type_size;
  const int depth = env.depth;
  auto slot_ptr = [&](int s) { return env.staging + static_cast<size_t>(s) * env.slot_bytes; };
  std::vector<int> free_recv, free_send;
  for (int s = depth - 1; s >= 0; --s) free_recv.push_back(s);
  for (int s = 2 * depth - 1; s >= depth; --s) free_send.push_back(s);
  auto release = [&](int s) { (s < depth ? free_recv : free_send).push_back(s); };

  std::vector<OutState> out(plan.outs.size());
  for (size_t i = 0; i < plan.outs.size(); ++i) {
    if (plan.outs[i].producer < 0) out[i] = OutState{plan.outs[i].src, -1, true};
  }
  std::deque<Posted> recvs, sends;
  size_t next_in = 0, next_out = 0, in_done = 0, out_done = 0;
  Backoff backoff;

  while (in_done < plan.ins.size() || out_done < plan.outs.size()) {
    bool progress = false;
    while (next_in < plan.ins.size() && static_cast<int>(recvs.size()) < depth) {
      const RingIn& m = plan.ins[next_in];
      size_t bytes = m.elems * ts;
      int slot = -1;
      char* where = m.dst;
      if (m.local != nullptr) {
        if (free_recv.empty()) break;
        slot = free_recv.back();
        where = slot_ptr(slot);
      }
      MemRegion* region = env.RegionOf(where, bytes);
      if (region == nullptr) return InternalError("ring receive outside every registered buffer");
      absl::StatusOr<void*> req = t.Irecv(plan.prev, where, bytes, *region);
      if (!req.ok()) return req.status();
      if (*req == nullptr) break;
      if (slot >= 0) free_recv.pop_back();
      recvs.push_back({next_in++, *req, slot});
      progress = true;
    }
    while (!recvs.empty()) {
      size_t got = 0;
      absl::StatusOr<bool> done = t.Test(recvs.front().request, &got);
      if (!done.ok()) return done.status();
      if (!*done) break;
      Posted p = recvs.front();
      recvs.pop_front();
      const RingIn& m = plan.ins[p.index];
      if (got != m.elems * ts) {
        return InternalError(absl::StrFormat(
            "rank %d received %zu bytes from rank %d where %zu were expected: the ranks called "
            "mismatched collectives (count, datatype or order) or use different "
            "TRIRACE_HOSTCCL_SLICE_BYTES", env.rank, got, plan.prev, m.elems * ts));
      }
      const char* result = m.dst;
      int keep = -1;
      if (m.local != nullptr) {
        char* slot = slot_ptr(p.slot);
        if (m.dst != nullptr) {
          Combine(plan.reduction, m.dst, m.local, slot, m.elems);
          release(p.slot);
        } else {
          Combine(plan.reduction, slot, m.local, slot, m.elems);
          result = slot;
          keep = p.slot;
        }
      }
      if (m.finish) Finish(plan.reduction, m.dst, m.elems);
      if (m.forward >= 0) {
        out[m.forward] = OutState{result, keep, true};
      } else if (keep >= 0) {
        release(keep);
      }
      ++in_done;
      progress = true;
    }
    while (next_out < plan.outs.size() && static_cast<int>(sends.size()) < depth) {
      const RingOut& o = plan.outs[next_out];
      OutState& st = out[next_out];
      if (!st.ready) break;
      if (o.contribute && st.slot < 0) {
        if (free_send.empty()) break;
        st.slot = free_send.back();
        free_send.pop_back();
        Contribute(plan.reduction, slot_ptr(st.slot), o.src, o.elems);
        st.src = slot_ptr(st.slot);
      }
      size_t bytes = o.elems * ts;
      MemRegion* region = env.RegionOf(st.src, bytes);
      if (region == nullptr) return InternalError("ring send outside every registered buffer");
      absl::StatusOr<void*> req = t.Isend(plan.next, st.src, bytes, *region);
      if (!req.ok()) return req.status();
      if (*req == nullptr) break;
      sends.push_back({next_out++, *req, st.slot});
      progress = true;
    }
    while (!sends.empty()) {
      absl::StatusOr<bool> done = t.Test(sends.front().request, nullptr);
      if (!done.ok()) return done.status();
      if (!*done) break;
      if (sends.front().slot >= 0) release(sends.front().slot);
      sends.pop_front();
      ++out_done;
      progress = true;
    }
    if (env.abort->load(std::memory_order_acquire)) return absl::AbortedError("communicator aborted");
    if (progress) {
      backoff.Reset();
    } else {
      backoff.Idle(env.links);
    }
  }
  return absl::OkStatus();
}

}  // namespace trirace::hostccl
