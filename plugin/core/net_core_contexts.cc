// NetCore's context registry: v11 contexts per communicator, the
// process-wide default context of v8..v10, and the transfer hint of each.
#include <algorithm>

#include "common/logging.h"
#include "plugin/core/core_objects.h"
#include "plugin/core/net_core.h"

namespace trirace::net {

void* NetCore::DefaultContext() { return default_context_; }

absl::Status NetCore::InitContext(uint64_t comm_id, const ncclNetCommConfig_v11_t* config, void** ctx) {
  if (ctx == nullptr) return InvalidCall("init", "ctx is NULL");
  *ctx = nullptr;
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  auto c = std::make_unique<Context>();
  c->comm_id = comm_id;
  if (config != nullptr) {
    int tc = config->trafficClass;
    if (tc == NCCL_NET_TRAFFIC_CLASS_UNDEF || (tc >= 0 && tc <= 255)) {
      c->config.traffic_class = tc;
    } else {
      TRIRACE_WARN(NET, "init: trafficClass=%d ignored (accepted: -1 or 0..255)", tc);
    }
  }
  TRIRACE_RETURN_IF_ERROR(transport_->InitContext(comm_id, c->config, &c->inner));
  absl::MutexLock lock(&mu_);
  *ctx = c.get();
  contexts_.push_back(std::move(c));
  return absl::OkStatus();
}

absl::StatusOr<NetCore::Context*> NetCore::LookupContext(void* ctx, const char* call) {
  if (ctx == nullptr) return default_context_;
  absl::MutexLock lock(&mu_);
  for (const auto& c : contexts_) {
    if (c.get() == ctx && !c->finalized) return c.get();
  }
  return InvalidCall(call, absl::StrCat("ctx ", absl::Hex(reinterpret_cast<uintptr_t>(ctx)),
                                    " is not a live context of this plugin"));
}

absl::Status NetCore::Finalize(void* ctx) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (ctx == nullptr || ctx == default_context_) return InvalidCall("finalize", "ctx is not one init returned");
  auto c = LookupContext(ctx, "finalize");
  if (!c.ok()) return c.status();
  {
    absl::MutexLock lock(&mu_);
    (*c)->finalized = true;  // its comms may still be closed later
  }
  absl::Status st = transport_->FinalizeContext((*c)->inner);
  absl::MutexLock lock(&mu_);
  if (--(*c)->refs == 0) {
    contexts_.erase(std::find_if(contexts_.begin(), contexts_.end(),
                                 [&](const auto& p) { return p.get() == *c; }));
  }
  return st;
}

absl::Status NetCore::SetNetAttr(void* ctx, const ncclNetAttr_v11_t* attr) {
  TRIRACE_RETURN_IF_ERROR(RequireInit());
  if (attr == nullptr) return InvalidCall("setNetAttr", "netAttr is NULL");
  auto c = LookupContext(ctx, "setNetAttr");
  if (!c.ok()) return c.status();
  (*c)->cls.store(ClassForOpMask(attr->op), std::memory_order_relaxed);
  return transport_->SetNetAttr((*c)->inner, *attr);
}

}  // namespace trirace::net
