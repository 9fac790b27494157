/* A C program that uses the annotation API and links nothing for it. It
 * prints the return code of every call so the test can compare a run with
 * the provider loaded against one without. */
#include <stdio.h>

#include "trirace/trirace.h"

int main(void) {
  printf("client: version=%d active=%d\n", trirace_api_version(), trirace_scheduler_active());
  printf("client: dense_ahead=%d\n", trirace_dense_ahead());
  printf("client: begin=%d\n", trirace_iteration_begin(7));
  trirace_tag_t outer = TRIRACE_TAG_INIT;
  outer.layer = 3;
  outer.stage = 1;
  outer.phase = TRIRACE_PHASE_BACKWARD;
  outer.iteration = 7;
  outer.traffic_class = TRIRACE_CLASS_DENSE;
  printf("client: push=%d\n", trirace_push_tag(&outer));
  trirace_tag_t inner = TRIRACE_TAG_INIT;
  inner.micro_batch = 2;
  inner.priority = 5;
  printf("client: push=%d\n", trirace_push_tag(&inner));
  printf("client: role=%d\n", trirace_set_comm_role((struct ncclComm*)0x1234, TRIRACE_ROLE_PIPELINE));
  printf("client: new_comm_role=%d\n", trirace_set_new_comm_role(TRIRACE_ROLE_PIPELINE, NULL));
  printf("client: pop=%d\n", trirace_pop_tag());
  printf("client: pop=%d\n", trirace_pop_tag());
  printf("client: pop=%d\n", trirace_pop_tag()); /* unbalanced */
  printf("client: end=%d\n", trirace_iteration_end(7));
  return 0;
}
