// annotation_misuse: a program that misuses the annotation API, built with
// nothing but include/trirace/trirace.h, for tests/annotation/
// annotation_bad_input_test.cc. Run it with libtrirace.so preloaded.
//
// Before each call it writes "mark <label>" on stderr, so the test can
// count the warnings each call caused, and prints "<label> rc=<code>" on
// stdout. What it tries:
//   - tags with a field out of range (negative, INT32_MIN/INT64_MIN, past
//     the enums), one field at a time, plain and through trirace::TagScope;
//     a NULL tag; fields at the top of their range (accepted);
//   - roles out of range, a comm the shim never saw;
//   - negative iteration numbers; iterations that overlap as PipeDream-2BW
//     runs them (k+1 begins before k ends: accepted, no warning); an end
//     of an iteration never begun;
//   - a tag pushed on one thread and popped on another; pops on an empty
//     stack.
// The stack is checked at the end: one outer tag was pushed at the start,
// so exactly one pop succeeds before the stack is empty.
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "trirace/trirace.h"

namespace {

void Mark(const std::string& label) {
  std::fprintf(stderr, "mark %s\n", label.c_str());
  std::fflush(stderr);
}

void Report(const std::string& label, int rc) {
  std::printf("%s rc=%d\n", label.c_str(), rc);
  std::fflush(stdout);
}

template <typename Call>
void Try(const std::string& label, Call call) {
  Mark(label);
  Report(label, call());
}

trirace_tag_t With(void (*set)(trirace_tag_t&)) {
  trirace_tag_t t = TRIRACE_TAG_INIT;
  set(t);
  return t;
}

}  // namespace

int main() {
  // The shim starts here (its start-up lines come before the first mark).
  std::printf("version=%d active=%d\n", trirace_api_version(), trirace_scheduler_active());
  trirace_tag_t outer = TRIRACE_TAG_INIT;
  outer.layer = 1;
  Try("outer-push", [&] { return trirace_push_tag(&outer); });

  struct Bad {
    const char* label;
    trirace_tag_t tag;
  };
  const Bad bad[] = {
      {"layer-neg2", With([](trirace_tag_t& t) { t.layer = -2; })},
      {"layer-min", With([](trirace_tag_t& t) { t.layer = INT32_MIN; })},
      {"stage-neg7", With([](trirace_tag_t& t) { t.stage = -7; })},
      {"microbatch-min", With([](trirace_tag_t& t) { t.micro_batch = INT32_MIN; })},
      {"phase-3", With([](trirace_tag_t& t) { t.phase = 3; })},
      {"phase-max", With([](trirace_tag_t& t) { t.phase = INT32_MAX; })},
      {"class-4", With([](trirace_tag_t& t) { t.traffic_class = 4; })},
      {"class-neg5", With([](trirace_tag_t& t) { t.traffic_class = -5; })},
      {"priority-min", With([](trirace_tag_t& t) { t.priority = INT32_MIN; })},
      {"iteration-neg2", With([](trirace_tag_t& t) { t.iteration = -2; })},
      {"iteration-min", With([](trirace_tag_t& t) { t.iteration = INT64_MIN; })},
  };
  for (const Bad& b : bad) Try(std::string("push-") + b.label, [&] { return trirace_push_tag(&b.tag); });
  Try("push-null", [] { return trirace_push_tag(nullptr); });
  Mark("scope-bad");
  { trirace::TagScope scope(trirace::Tag().Layer(-3)); }  // refused, so not popped either
  // The top of every range is accepted.
  const trirace_tag_t top = {INT32_MAX, INT32_MAX, INT32_MAX, TRIRACE_PHASE_OPTIMIZER, INT64_MAX, TRIRACE_CLASS_DENSE,
                             INT32_MAX};
  Try("push-top", [&] { return trirace_push_tag(&top); });
  Try("pop-top", [] { return trirace_pop_tag(); });
  trirace_tag_t low_priority = TRIRACE_TAG_INIT;
  low_priority.priority = INT32_MIN + 1;
  Try("push-priority-low", [&] { return trirace_push_tag(&low_priority); });
  Try("pop-priority-low", [] { return trirace_pop_tag(); });

  for (int role : {-1, 5, INT32_MIN, INT32_MAX}) {
    Try("role" + std::to_string(role), [&] { return trirace_set_comm_role(nullptr, role); });
    Try("new-role" + std::to_string(role), [&] { return trirace_set_new_comm_role(role, nullptr); });
  }
  Try("role-unknown-comm",
      [] { return trirace_set_comm_role(reinterpret_cast<struct ncclComm*>(0x1000), TRIRACE_ROLE_PIPELINE); });

  Try("begin-neg1", [] { return trirace_iteration_begin(-1); });
  Try("begin-min", [] { return trirace_iteration_begin(INT64_MIN); });
  Try("end-neg3", [] { return trirace_iteration_end(-3); });
  // PipeDream-2BW: iteration k+1 begins before k ends.
  Mark("overlap");
  int overlap = 0;
  for (int64_t k = 0; k < 6; ++k) {
    overlap |= trirace_iteration_begin(k);
    if (k > 0) overlap |= trirace_iteration_end(k - 1);
  }
  overlap |= trirace_iteration_end(5);
  Report("overlap", overlap);
  Try("begin-max", [] { return trirace_iteration_begin(INT64_MAX); });
  Try("end-max", [] { return trirace_iteration_end(INT64_MAX); });
  Try("end-never-begun", [] { return trirace_iteration_end(77); });

  // A tag pushed on one thread and popped on another: each stack is its own.
  Mark("other-thread-pop");
  int pushed = -1, popped_elsewhere = -1, popped_here = -1;
  std::thread owner([&] {
    trirace_tag_t t = TRIRACE_TAG_INIT;
    t.stage = 2;
    pushed = trirace_push_tag(&t);
    std::thread([&] { popped_elsewhere = trirace_pop_tag(); }).join();
    popped_here = trirace_pop_tag();
  });
  owner.join();
  std::printf("other-thread-pop rc=%d pushed=%d popped_here=%d\n", popped_elsewhere, pushed, popped_here);
  std::fflush(stdout);

  // Only the outer tag is on this thread's stack now.
  Try("outer-pop", [] { return trirace_pop_tag(); });
  Try("empty-pop", [] { return trirace_pop_tag(); });
  Try("empty-pop-again", [] { return trirace_pop_tag(); });
  Mark("end");
  std::printf("done\n");
  return 0;
}
