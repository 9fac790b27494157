// Annotation state: the shim's implementation of include/trirace/trirace.h.
//
// Each thread has a stack of tags. A push stores the tag merged with the
// one below it (fields left TRIRACE_UNSET inherit), so CurrentTag() is one
// thread-local read: the op takes the top, or TRIRACE_TAG_INIT when the
// stack is empty. An op whose tag has no iteration takes the one set by
// trirace_iteration_begin(). Iterations may overlap (pipeline schedules
// such as PipeDream-2BW begin step i+1 before step i ends): an end closes
// the open iteration of the same number (OpenIterations). Misuse (pop on an
// empty stack, an end whose iteration is not open, a stack deeper than
// kMaxTagDepth) returns the header's error code
// and logs one WARN per kind of misuse per process; the counts appear in
// the exit summary. A bad argument (a NULL tag, a tag field outside its
// range, a negative iteration number, a role that is not a
// trirace_role_t) changes nothing and returns TRIRACE_ERR_INVALID, with one
// WARN per call naming the field, its value and the accepted range.
//
// AnnotationApi() is the table trirace_get_api() returns. set_comm_role
// and the trace/summary hooks go through the process's Shim (shim.h).
//
// Thread safety: tag stacks are thread-local; the iteration and counters
// are atomics.
#ifndef TRIRACE_INTERPOSE_ANNOTATIONS_H_
#define TRIRACE_INTERPOSE_ANNOTATIONS_H_

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "trirace/trirace.h"

namespace trirace::interpose {

inline constexpr int kMaxTagDepth = 64;

// The innermost (merged) tag of the calling thread, with the current
// iteration filled in when the tag has none.
trirace_tag_t CurrentTag();
// Depth of the calling thread's stack.
int TagDepth();
// The role the calling thread gives the comms it creates
// (trirace_set_new_comm_role); TRIRACE_ROLE_UNKNOWN when none.
int NewCommRole();

// `inner` with every TRIRACE_UNSET field taken from `outer`.
trirace_tag_t MergeTags(const trirace_tag_t& outer, const trirace_tag_t& inner);

// The API table handed to programs (size, version and every function set).
const trirace_api_v1_t* AnnotationApi();

// The iterations begun and not yet ended. Bounded: beyond kMaxOpen the
// oldest is forgotten (a program that never ends its iterations must not
// grow the shim).
//
// Thread safety: all methods may be called from any thread.
class OpenIterations {
 public:
  static constexpr size_t kMaxOpen = 64;
  // Marks `iteration` open (again, if it already is: still one entry).
  void Begin(int64_t iteration);
  // Closes `iteration`; false when it is not open (never begun, already
  // ended, or forgotten).
  bool End(int64_t iteration);
  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<int64_t> open_ ABSL_GUARDED_BY(mu_);  // oldest first
};

struct AnnotationCounters {
  uint64_t unbalanced_pops;
  uint64_t unbalanced_iteration_ends;
  uint64_t overflowed_pushes;
};
AnnotationCounters GetAnnotationCounters();

}  // namespace trirace::interpose

#endif  // TRIRACE_INTERPOSE_ANNOTATIONS_H_
