// Fuzz target: the parsers of configuration text. The first byte picks a
// registry row; the rest is the value, parsed as that row's type. Also the
// subsystem list (TRIRACE_DEBUG_SUBSYS). Each accepted value must be in range.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/logging.h"
#include "common/params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using trirace::ParamType;
  if (size == 0) return 0;
  const auto specs = trirace::Params::Specs();
  const trirace::ParamSpec& spec = specs[data[0] % specs.size()];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const absl::StatusOr<trirace::ParamValue> v = trirace::Params::Parse(spec, text);
  if (v.ok()) {
    const bool in_range =
        (spec.type != ParamType::kInt || (v->i >= spec.min_int && v->i <= spec.max_int)) &&
        (spec.type != ParamType::kDouble ||
         (std::isfinite(v->d) && v->d >= spec.min_double && v->d <= spec.max_double)) &&
        (spec.type != ParamType::kEnum || (v->choice >= 0 && v->choice < static_cast<int>(spec.choices.size())));
    if (!in_range) std::abort();
    // The canonical text parses back to the same value.
    const absl::StatusOr<trirace::ParamValue> again = trirace::Params::Parse(spec, v->text);
    if (!again.ok() || again->text != v->text) std::abort();
  } else if (v.status().message().find(spec.name) == absl::string_view::npos) {
    std::abort();  // every error names the variable
  }
  (void)trirace::log::ParseSubsysMask(text);
  return 0;
}
