// Internal: the raw rows of the parameter registry (param_table.cc).
// Use Params::Specs() outside common/.
#ifndef TRIRACE_COMMON_PARAM_TABLE_H_
#define TRIRACE_COMMON_PARAM_TABLE_H_

#include <span>

#include "common/params.h"

namespace trirace {
std::span<const ParamSpec> ParamTable();
}  // namespace trirace

#endif  // TRIRACE_COMMON_PARAM_TABLE_H_
