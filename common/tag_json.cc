#include "common/tag_json.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trirace {

void AppendTagJson(const trirace_tag_t& tag, std::string* out) {
  std::string fields;
  auto add = [&](const char* name, int64_t v) {
    if (v == TRIRACE_UNSET) return;
    absl::StrAppendFormat(&fields, "%s\"%s\":%d", fields.empty() ? "" : ",", name, v);
  };
  add("layer", tag.layer);
  add("stage", tag.stage);
  add("micro_batch", tag.micro_batch);
  add("phase", tag.phase);
  add("iteration", tag.iteration);
  add("class", tag.traffic_class);
  add("priority", tag.priority);
  if (!fields.empty()) absl::StrAppend(out, ",\"tag\":{", fields, "}");
}

}  // namespace trirace
