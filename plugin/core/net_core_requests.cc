// NetCore's data path: isend, irecv, iflush and test behind request
// handles (request_handle.h), and the occupancy accounting of every posted
// and completed byte.
#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <utility>

#include "plugin/core/core_objects.h"
#include "plugin/core/net_core.h"
#include "plugin/core/request_handle.h"

namespace trirace::net {

void* NetCore::RequestHandle(const Comm& comm, int slot) const {
  return reinterpret_cast<void*>(PackRequestHandle({.comm_index = comms_.IndexOf(comm.handle),
                                                    .generation = comms_.GenerationOf(comm.handle),
                                                    .seq = comm.reqs[slot].seq,
                                                    .slot = slot}));
}

absl::StatusOr<std::pair<NetCore::Comm*, NetCore::Request*>> NetCore::LookupRequest(void* handle) {
  const uint64_t h = reinterpret_cast<uint64_t>(handle);
  // Built only on failure: test() is polled in a loop, and a message costs an allocation.
  auto bad = [h] {
    return InvalidCall("test", absl::StrCat("request ", absl::Hex(h), " is not an outstanding request of this plugin"));
  };
  const std::optional<RequestHandleFields> f = UnpackRequestHandle(h);
  if (!f) return bad();
  Comm* comm = comms_.LookupPacked(f->comm_index, f->generation, kRequestGenerationMask);
  if (comm == nullptr || f->slot >= NCCL_NET_MAX_REQUESTS || comm->kind == Kind::kListen) return bad();
  Request* req = &comm->reqs[f->slot];
  if (!req->busy.load(std::memory_order_acquire) || req->seq != f->seq) return bad();
  return std::make_pair(comm, req);
}

int NetCore::AcquireSlot(Comm& comm) {
  for (int i = 0; i < NCCL_NET_MAX_REQUESTS; ++i) {
    bool expected = false;
    if (comm.reqs[i].busy.compare_exchange_strong(expected, true)) return i;
  }
  return -1;  // NCCL_NET_MAX_REQUESTS outstanding: the caller returns a null request
}

absl::Status NetCore::Isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                            void* phandle, void** request) {
  if (request == nullptr) return InvalidCall("isend", "request is NULL");
  *request = nullptr;
  auto c = LookupComm(send_comm, Kind::kSend, "isend");
  if (!c.ok()) return c.status();
  if (data == nullptr && size > 0) return InvalidCall("isend", absl::StrCat("data is NULL with size=", size));
  if (size > static_cast<size_t>(INT_MAX)) {
    return InvalidCall("isend", absl::StrCat("size=", size, " exceeds the largest message (", INT_MAX, " bytes)"));
  }
  Comm* comm = *c;
  const int slot = AcquireSlot(*comm);
  if (slot < 0) return absl::OkStatus();  // NCCL_NET_MAX_REQUESTS outstanding: retry later
  Request& req = comm->reqs[slot];
  const TrafficClass cls = comm->ctx->cls.load(std::memory_order_relaxed);
  if (class_priority_ && !comm->explicit_traffic_class) ApplyClassPriority(*comm, cls);
  void* inner = nullptr;
  absl::Status st = transport_->Isend(comm->inner, data, size, tag, mhandle, phandle, &inner);
  if (!st.ok() || inner == nullptr) {
    req.busy.store(false, std::memory_order_release);
    return st;
  }
  req.inner = inner;
  req.flush = false;
  req.n = 1;
  req.cls = cls;
  req.posted = size;
  req.seq++;
  publisher_.SendPosted(comm->dev, ClassIndex(req.cls), size);
  *request = RequestHandle(*comm, slot);
  return absl::OkStatus();
}

absl::Status NetCore::Irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                            void** mhandles, void** phandles, void** request) {
  if (request == nullptr) return InvalidCall("irecv", "request is NULL");
  bool optional = *request == reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION);
  *request = nullptr;
  auto c = LookupComm(recv_comm, Kind::kRecv, "irecv");
  if (!c.ok()) return c.status();
  Comm* comm = *c;
  const int max_recvs = comm->max_recvs;
  if (n < 1 || n > max_recvs || n > NCCL_NET_MAX_REQUESTS) {
    return InvalidCall("irecv", absl::StrCat("n=", n, " (accepted: 1..", max_recvs, ", maxRecvs)"));
  }
  if (data == nullptr || sizes == nullptr || tags == nullptr) return InvalidCall("irecv", "data, sizes or tags is NULL");
  uint64_t posted = 0;
  for (int i = 0; i < n; ++i) {
    if (data[i] == nullptr && sizes[i] > 0) {
      return InvalidCall("irecv", absl::StrCat("data[", i, "] is NULL with sizes[", i, "]=", sizes[i]));
    }
    if (sizes[i] > static_cast<size_t>(INT_MAX)) {
      return InvalidCall("irecv", absl::StrCat("sizes[", i, "]=", sizes[i], " exceeds ", INT_MAX, " bytes"));
    }
    posted += sizes[i];
  }
  const int slot = AcquireSlot(*comm);
  if (slot < 0) return absl::OkStatus();
  Request& req = comm->reqs[slot];
  void* inner = optional ? reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION) : nullptr;
  absl::Status st = transport_->Irecv(comm->inner, n, data, sizes, tags, mhandles, phandles, &inner);
  if (inner == reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION)) inner = nullptr;
  if (!st.ok() || inner == nullptr) {
    req.busy.store(false, std::memory_order_release);
    return st;
  }
  req.inner = inner;
  req.flush = false;
  req.n = n;
  req.cls = comm->ctx->cls.load(std::memory_order_relaxed);
  req.posted = posted;
  req.seq++;
  publisher_.RecvPosted(comm->dev, ClassIndex(req.cls), posted);
  *request = RequestHandle(*comm, slot);
  return absl::OkStatus();
}

absl::Status NetCore::Iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                             void** request) {
  if (request == nullptr) return InvalidCall("iflush", "request is NULL");
  *request = nullptr;
  auto c = LookupComm(recv_comm, Kind::kRecv, "iflush");
  if (!c.ok()) return c.status();
  if (n < 0 || n > NCCL_NET_MAX_REQUESTS) return InvalidCall("iflush", absl::StrCat("n=", n));
  Comm* comm = *c;
  const int slot = AcquireSlot(*comm);
  if (slot < 0) return absl::OkStatus();
  Request& req = comm->reqs[slot];
  void* inner = nullptr;
  absl::Status st = transport_->Iflush(comm->inner, n, data, sizes, mhandles, &inner);
  if (!st.ok() || inner == nullptr) {
    req.busy.store(false, std::memory_order_release);
    return st;
  }
  req.inner = inner;
  req.flush = true;
  req.n = 0;
  req.posted = 0;
  req.seq++;
  *request = RequestHandle(*comm, slot);
  return absl::OkStatus();
}

absl::Status NetCore::Test(void* request, int* done, int* sizes) {
  if (done == nullptr) return InvalidCall("test", "done is NULL");
  *done = 0;
  auto found = LookupRequest(request);
  if (!found.ok()) return found.status();
  auto [comm, req] = *found;
  int local[NCCL_NET_MAX_REQUESTS] = {};
  absl::Status st = transport_->Test(req->inner, done, local);
  bool send = comm->kind == Kind::kSend;
  if (!st.ok()) {
    *done = 0;
    if (!req->flush) publisher_.Abandoned(comm->dev, ClassIndex(req->cls), send, req->posted);
    req->busy.store(false, std::memory_order_release);
    return st;
  }
  if (!*done) {
    publisher_.Poll();  // counters changed earlier get copied once a period old
    return absl::OkStatus();
  }
  if (!req->flush) {
    uint64_t total = 0;
    for (int i = 0; i < req->n; ++i) total += static_cast<uint64_t>(std::max(local[i], 0));
    if (send) {
      publisher_.SendCompleted(comm->dev, ClassIndex(req->cls), req->posted, total);
    } else {
      publisher_.RecvCompleted(comm->dev, ClassIndex(req->cls), req->posted, total);
    }
    if (sizes != nullptr) std::memcpy(sizes, local, sizeof(int) * req->n);
  }
  req->busy.store(false, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status NetCore::IrecvConsumed(void* recv_comm, int n, void* request) {
  auto c = LookupComm(recv_comm, Kind::kRecv, "irecvConsumed");
  if (!c.ok()) return c.status();
  auto found = LookupRequest(request);
  return transport_->IrecvConsumed((*c)->inner, n, found.ok() ? found->second->inner : nullptr);
}

}  // namespace trirace::net
