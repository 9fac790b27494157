// Element types and reduction operators of the NCCL API, on host memory.
//
// Supported types: int8, uint8, int32, uint32, int64, uint64, half, float,
// double, bfloat16 (fp8 types are rejected by the API layer). Integers wrap
// modulo 2^bits like NCCL's device code. half and bfloat16 are computed in
// float and rounded to nearest-even after every operation; float has more
// than 2p+2 significand bits for both, so the double rounding is innocuous
// and each result equals a correctly rounded half/bfloat16 operation.
//
// Operators, as NCCL defines them:
//   sum, prod, max, min    elementwise
//   avg                    float types: premultiply every input by 1/nranks
//                          (rounded to the type) then sum; integer types:
//                          sum (wrapping), then divide by nranks at the end
//                          (truncating division)
//   PreMulSum(scalar)      every input is multiplied by the scalar (rounded
//                          to the type) before the sum
//
// Determinism: every function is a fixed elementwise loop, so a collective
// that combines contributions in a fixed order (hostccl's ring and chain
// algorithms do, for a given nranks and chunk size) gives bit-identical
// results run after run and, for AllReduce, on every rank.
//
// Thread safety: all functions are pure.
#ifndef TRIRACE_HOSTCCL_SRC_REDUCE_H_
#define TRIRACE_HOSTCCL_SRC_REDUCE_H_

#include <cstddef>
#include <cstdint>

#include "nccl_adapter/nccl_types.h"
#include "nccl.h"

namespace trirace::hostccl {

// True for the types hostccl reduces and moves (all but fp8).
bool TypeSupported(ncclDataType_t type);
const char* TypeName(ncclDataType_t type);

enum class ReduceKind { kSum, kProd, kMax, kMin, kPreMulSum, kSumPostDiv };

// A resolved operator: what the collective does with each element.
struct Reduction {
  ReduceKind kind = ReduceKind::kSum;
  ncclDataType_t type = ncclFloat32;
  // kPreMulSum: the scalar, one element of `type` (raw bytes).
  alignas(8) unsigned char scalar[8] = {};
  // kSumPostDiv: the divisor (nranks).
  int divisor = 1;
};

// The operator for built-in `op` on a communicator of `nranks` ranks
// (avg becomes kPreMulSum or kSumPostDiv).
Reduction BuiltinReduction(ncclRedOp_t op, ncclDataType_t type, int nranks);
// PreMulSum with the scalar at `scalar` (one element of `type`).
Reduction PreMulSumReduction(ncclDataType_t type, const void* scalar);

// A rank's own input enters a reduction through Contribute: the identity,
// or its premultiplied value for kPreMulSum. dst may alias src.
void Contribute(const Reduction& r, void* dst, const void* src, size_t count);
// dst[i] = Contribute(local[i]) (+) partial[i]; dst may alias either input.
void Combine(const Reduction& r, void* dst, const void* local, const void* partial, size_t count);
// The last step once every contribution is in: divides for kSumPostDiv,
// nothing otherwise.
void Finish(const Reduction& r, void* data, size_t count);
bool NeedsContribute(const Reduction& r);
bool NeedsFinish(const Reduction& r);

// IEEE binary16 / bfloat16 conversions, round to nearest even; NaN stays NaN.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float Bfloat16ToFloat(uint16_t b);
uint16_t FloatToBfloat16(float f);

}  // namespace trirace::hostccl

#endif  // TRIRACE_HOSTCCL_SRC_REDUCE_H_
