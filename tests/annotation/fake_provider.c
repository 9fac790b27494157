/* A provider of the annotation API for tests: it keeps a per-thread tag
 * stack like the shim does and prints every call on stdout, so a test can
 * see exactly what reached the implementation. */
#include <stddef.h>
#include <stdio.h>

#include "trirace/trirace.h"

#define MAX_DEPTH 64
static __thread trirace_tag_t stack[MAX_DEPTH];
static __thread int depth;

static int push_tag(const trirace_tag_t* tag) {
  if (tag == NULL || depth == MAX_DEPTH) return TRIRACE_ERR_INVALID;
  stack[depth++] = *tag;
  printf("provider: push layer=%d stage=%d mb=%d phase=%d iter=%lld class=%d prio=%d depth=%d\n", tag->layer,
         tag->stage, tag->micro_batch, tag->phase, (long long)tag->iteration, tag->traffic_class, tag->priority,
         depth);
  return TRIRACE_OK;
}

static int pop_tag(void) {
  if (depth == 0) {
    printf("provider: unbalanced pop\n");
    return TRIRACE_ERR_UNBALANCED;
  }
  --depth;
  printf("provider: pop depth=%d\n", depth);
  return TRIRACE_OK;
}

static int set_comm_role(struct ncclComm* comm, int role) {
  printf("provider: role comm=%p role=%d\n", (void*)comm, role);
  return TRIRACE_OK;
}

static int iteration_begin(int64_t it) {
  printf("provider: iteration begin %lld\n", (long long)it);
  return TRIRACE_OK;
}

static int iteration_end(int64_t it) {
  printf("provider: iteration end %lld\n", (long long)it);
  return TRIRACE_OK;
}

static int scheduler_active(void) { return 0; }

/* An older provider: its table ends before set_new_comm_role, so clients
 * built against this header must see that entry as absent (size check). */
static const trirace_api_v1_t kApi = {
    .size = offsetof(trirace_api_v1_t, set_new_comm_role),
    .version = TRIRACE_API_VERSION,
    .push_tag = push_tag,
    .pop_tag = pop_tag,
    .set_comm_role = set_comm_role,
    .iteration_begin = iteration_begin,
    .iteration_end = iteration_end,
    .scheduler_active = scheduler_active,
    .set_new_comm_role = NULL,
};

__attribute__((visibility("default"))) const trirace_api_v1_t* trirace_get_api(uint32_t version) {
  return version == 1 ? &kApi : NULL;
}
