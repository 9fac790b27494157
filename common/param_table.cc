// The registry of TRIRACE_* parameters, made from common/param_list.inc
// (see params.h for how to add one).
#include <array>
#include "absl/strings/string_view.h"

#include "common/params.h"
#include "common/param_table.h"

namespace trirace {
namespace {

// One row per line of param_list.inc; the designated initialisers follow
// ParamSpec's member order, as the rows' optional fields do.
const ParamSpec kTable[] = {
#define TRIRACE_PARAM(id_, name_, type_, default_, component_, description_, ...)                        \
  {.id = ParamId::id_, .name = name_, .type = ParamType::type_, .default_text = default_,                \
   .description = description_, .component = component_ __VA_OPT__(, ) __VA_ARGS__},
#include "common/param_list.inc"
#undef TRIRACE_PARAM
};

static_assert(std::size(kTable) == static_cast<size_t>(ParamId::kCount),
              "every ParamId needs exactly one row in kTable");

}  // namespace

std::span<const ParamSpec> ParamTable() { return kTable; }

}  // namespace trirace
