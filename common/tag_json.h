// The JSON form of an annotation tag (trirace_tag_t) in TriRace's traces:
// `,"tag":{"layer":3,"stage":0,...}` with only the fields that are set, in
// the order layer, stage, micro_batch, phase, iteration, class, priority.
// The shim's trace (interpose/trace/trace_json.h) and the simulator's
// (sim/run/trace_out.h) both write it, so bench/e2e's scripts and the
// simulator's replay read one format.
//
// Thread safety: a pure function.
#ifndef TRIRACE_COMMON_TAG_JSON_H_
#define TRIRACE_COMMON_TAG_JSON_H_

#include <string>

#include "trirace/trirace.h"

namespace trirace {

// Appends `,"tag":{...}` to `out`; nothing when no field of `tag` is set.
void AppendTagJson(const trirace_tag_t& tag, std::string* out);

}  // namespace trirace

#endif  // TRIRACE_COMMON_TAG_JSON_H_
