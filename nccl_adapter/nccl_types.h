// Facts about nccl.h's value types shared by every module: element sizes and
// short names for logs and traces.
//
// Thread safety: stateless.
#ifndef TRIRACE_NCCL_ADAPTER_NCCL_TYPES_H_
#define TRIRACE_NCCL_ADAPTER_NCCL_TYPES_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "nccl.h"

namespace trirace {

// Size in bytes of one element of `dtype`; 0 for a value nccl.h does not define.
size_t DataTypeSize(ncclDataType_t dtype);
// "float32", "int8", ...; "unknown" for a value nccl.h does not define.
absl::string_view DataTypeName(ncclDataType_t dtype);
// "sum", "prod", "max", "min", "avg", or "custom" for a PreMulSum op.
absl::string_view RedOpName(ncclRedOp_t op);

}  // namespace trirace

#endif  // TRIRACE_NCCL_ADAPTER_NCCL_TYPES_H_
