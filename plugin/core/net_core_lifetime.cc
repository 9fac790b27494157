// The process-wide NetCore and its end: created on first use, its threads
// stopped and (when nothing is left open) freed when the library unloads.
#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "plugin/core/core_objects.h"
#include "plugin/core/net_core.h"

namespace trirace::net {

namespace {

std::atomic<NetCore*> g_core{nullptr};
ABSL_CONST_INIT absl::Mutex g_core_mu(absl::kConstInit);

// NCCL dlcloses a net plugin after its last communicator is finalized (and
// the library is unloaded at exit): no TriRace thread may outlive the code
// it runs, so the publisher is stopped here. The core is freed only when no
// comm or context is left (the dlclose case); at exit with comms still
// open, NCCL's threads may still call in, so it stays.
struct UnloadGuard {
  ~UnloadGuard() { NetCore::OnUnload(); }
} g_unload_guard;

}  // namespace

NetCore& NetCore::Get() {
  NetCore* core = g_core.load(std::memory_order_acquire);
  if (core != nullptr) return *core;
  absl::MutexLock lock(&g_core_mu);
  if (g_core.load(std::memory_order_relaxed) == nullptr) g_core.store(new NetCore(), std::memory_order_release);
  return *g_core.load(std::memory_order_relaxed);
}

void NetCore::OnUnload() {
  NetCore* core = g_core.load(std::memory_order_acquire);
  if (core == nullptr) return;
  core->publisher_.Stop();
  bool idle;
  {
    absl::MutexLock lock(&core->mu_);
    idle = core->open_comms_.load() == 0 && core->contexts_.size() <= 1;
  }
  if (idle) {
    g_core.store(nullptr, std::memory_order_release);
    delete core;
  }
}

NetCore::NetCore() = default;
NetCore::~NetCore() = default;

}  // namespace trirace::net
