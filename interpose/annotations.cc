#include "interpose/annotations.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_format.h"

#include "common/logging.h"
#include "interpose/network/front_stage.h"
#include "interpose/shim.h"

namespace trirace::interpose {
namespace {

struct TagStack {
  trirace_tag_t merged[kMaxTagDepth];
  int depth;
};
// Zero-initialised POD: no TLS constructor on the hot path.
thread_local TagStack t_stack;

std::atomic<int64_t> g_iteration{TRIRACE_UNSET};
OpenIterations g_open_iterations;
std::atomic<uint64_t> g_unbalanced_pops{0};
std::atomic<uint64_t> g_unbalanced_ends{0};
std::atomic<uint64_t> g_overflows{0};

// The first field of `t` outside what the API accepts (trirace.h), with
// its value and the accepted range; false when every field is accepted.
bool BadField(const trirace_tag_t& t, std::string* what) {
  struct Field {
    const char* name;
    int64_t value, low, high;
  };
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  const Field fields[] = {
      {"layer", t.layer, 0, kInt32Max},
      {"stage", t.stage, 0, kInt32Max},
      {"micro_batch", t.micro_batch, 0, kInt32Max},
      {"phase", t.phase, TRIRACE_PHASE_FORWARD, TRIRACE_PHASE_OPTIMIZER},
      {"iteration", t.iteration, 0, std::numeric_limits<int64_t>::max()},
      {"traffic_class", t.traffic_class, TRIRACE_CLASS_AUTO, TRIRACE_CLASS_DENSE},
      {"priority", t.priority, std::numeric_limits<int32_t>::min() + 1, kInt32Max},
  };
  for (const Field& f : fields) {
    if (f.value == TRIRACE_UNSET || (f.value >= f.low && f.value <= f.high)) continue;
    *what = absl::StrFormat("%s=%d is not accepted (accepted: %d..%d, or TRIRACE_UNSET (-1) to inherit)", f.name,
                            f.value, f.low, f.high);
    return true;
  }
  return false;
}

int PushTag(const trirace_tag_t* tag) {
  if (tag == nullptr) {
    TRIRACE_WARN(INTERPOSE, "trirace_push_tag: tag is NULL (accepted: a trirace_tag_t); nothing is pushed");
    return TRIRACE_ERR_INVALID;
  }
  if (std::string what; BadField(*tag, &what)) {
    TRIRACE_WARN(INTERPOSE, "trirace_push_tag: %s; the tag is not pushed (do not pop it)", what);
    return TRIRACE_ERR_INVALID;
  }
  TagStack& s = t_stack;
  if (s.depth >= kMaxTagDepth) {
    g_overflows.fetch_add(1, std::memory_order_relaxed);
    TRIRACE_WARN_ONCE(INTERPOSE, "trirace_push_tag: the tag stack of this thread is already %d deep (the most "
                      "accepted); the tag is ignored", kMaxTagDepth);
    return TRIRACE_ERR_INVALID;
  }
  s.merged[s.depth] = s.depth == 0 ? *tag : MergeTags(s.merged[s.depth - 1], *tag);
  ++s.depth;
  return TRIRACE_OK;
}

int PopTag() {
  TagStack& s = t_stack;
  if (s.depth == 0) {
    g_unbalanced_pops.fetch_add(1, std::memory_order_relaxed);
    TRIRACE_WARN_ONCE(INTERPOSE, "trirace_pop_tag: called with no tag pushed on this thread (unbalanced push/pop); "
                      "ignored. Further unbalanced pops are counted in the exit summary");
    return TRIRACE_ERR_UNBALANCED;
  }
  --s.depth;
  return TRIRACE_OK;
}

int SetCommRole(struct ncclComm* comm, int role) {
  if (role < TRIRACE_ROLE_UNKNOWN || role > TRIRACE_ROLE_EXPERT) {
    TRIRACE_WARN(INTERPOSE, "trirace_set_comm_role: role %d is not a trirace_role_t (accepted: 0..4); ignored", role);
    return TRIRACE_ERR_INVALID;
  }
  return Shim::Get().SetCommRole(comm, role) ? TRIRACE_OK : TRIRACE_ERR_INVALID;
}

// True for an iteration number the API accepts; warns for another.
bool IterationAccepted(const char* function, int64_t iteration) {
  if (iteration >= 0) return true;
  TRIRACE_WARN(INTERPOSE, "%s: iteration=%d is not accepted (accepted: 0..%d); ignored", function, iteration,
               std::numeric_limits<int64_t>::max());
  return false;
}

int IterationBegin(int64_t iteration) {
  if (!IterationAccepted("trirace_iteration_begin", iteration)) return TRIRACE_ERR_INVALID;
  g_iteration.store(iteration, std::memory_order_relaxed);
  g_open_iterations.Begin(iteration);
  Shim::Get().RecordIteration(iteration, /*begin=*/true);
  return TRIRACE_OK;
}

int IterationEnd(int64_t iteration) {
  if (!IterationAccepted("trirace_iteration_end", iteration)) return TRIRACE_ERR_INVALID;
  if (!g_open_iterations.End(iteration)) {
    g_unbalanced_ends.fetch_add(1, std::memory_order_relaxed);
    TRIRACE_WARN_ONCE(INTERPOSE, "trirace_iteration_end(%lld): iteration %lld is not open (never begun, or "
                      "already ended); ignored. Further unbalanced ends are counted in the exit summary",
                      static_cast<long long>(iteration), static_cast<long long>(iteration));
    return TRIRACE_ERR_UNBALANCED;
  }
  Shim::Get().RecordIteration(iteration, /*begin=*/false);
  return TRIRACE_OK;
}

int SchedulerActive() { return Shim::Get().scheduling() ? 1 : 0; }

// Called by the net plugin's threads at each send: no Shim::Get() (the
// plugin may send while the shim starts or after it shut down).
int DenseAheadOfHost() { return DenseAhead() ? 1 : 0; }

thread_local int t_new_comm_role = TRIRACE_ROLE_UNKNOWN;

int SetNewCommRole(int role, int* previous) {
  if (role < TRIRACE_ROLE_UNKNOWN || role > TRIRACE_ROLE_EXPERT) {
    TRIRACE_WARN(INTERPOSE, "trirace_set_new_comm_role: role %d is not a trirace_role_t (accepted: 0..4); ignored",
                 role);
    return TRIRACE_ERR_INVALID;
  }
  if (previous != nullptr) *previous = t_new_comm_role;
  t_new_comm_role = role;
  return TRIRACE_OK;
}

const trirace_api_v1_t kApi = {
    .size = sizeof(trirace_api_v1_t),
    .version = TRIRACE_API_VERSION,
    .push_tag = PushTag,
    .pop_tag = PopTag,
    .set_comm_role = SetCommRole,
    .iteration_begin = IterationBegin,
    .iteration_end = IterationEnd,
    .scheduler_active = SchedulerActive,
    .set_new_comm_role = SetNewCommRole,
    .dense_ahead = DenseAheadOfHost,
};

int32_t Pick32(int32_t outer, int32_t inner) { return inner != TRIRACE_UNSET ? inner : outer; }

}  // namespace

void OpenIterations::Begin(int64_t iteration) {
  absl::MutexLock lock(&mu_);
  if (std::find(open_.begin(), open_.end(), iteration) != open_.end()) return;
  if (open_.size() >= kMaxOpen) open_.erase(open_.begin());
  open_.push_back(iteration);
}

bool OpenIterations::End(int64_t iteration) {
  absl::MutexLock lock(&mu_);
  auto it = std::find(open_.begin(), open_.end(), iteration);
  if (it == open_.end()) return false;
  open_.erase(it);
  return true;
}

size_t OpenIterations::size() const {
  absl::MutexLock lock(&mu_);
  return open_.size();
}

trirace_tag_t MergeTags(const trirace_tag_t& outer, const trirace_tag_t& inner) {
  trirace_tag_t t;
  t.layer = Pick32(outer.layer, inner.layer);
  t.stage = Pick32(outer.stage, inner.stage);
  t.micro_batch = Pick32(outer.micro_batch, inner.micro_batch);
  t.phase = Pick32(outer.phase, inner.phase);
  t.iteration = inner.iteration != TRIRACE_UNSET ? inner.iteration : outer.iteration;
  t.traffic_class = Pick32(outer.traffic_class, inner.traffic_class);
  t.priority = Pick32(outer.priority, inner.priority);
  return t;
}

trirace_tag_t CurrentTag() {
  const TagStack& s = t_stack;
  static constexpr trirace_tag_t kNoTag = TRIRACE_TAG_INIT;
  trirace_tag_t t = s.depth > 0 ? s.merged[s.depth - 1] : kNoTag;
  if (t.iteration == TRIRACE_UNSET) t.iteration = g_iteration.load(std::memory_order_relaxed);
  return t;
}

int TagDepth() { return t_stack.depth; }

int NewCommRole() { return t_new_comm_role; }

const trirace_api_v1_t* AnnotationApi() { return &kApi; }

AnnotationCounters GetAnnotationCounters() {
  return {g_unbalanced_pops.load(std::memory_order_relaxed), g_unbalanced_ends.load(std::memory_order_relaxed),
          g_overflows.load(std::memory_order_relaxed)};
}

}  // namespace trirace::interpose
