// Shared pieces of the multi-process test program hostccl_test_rank: the
// per-rank context, result reporting and typed element access used by the
// reference computations (which use CUDA's own host half/bfloat16
// conversions, independent of hostccl's).
#ifndef TRIRACE_TESTS_HOSTCCL_RANK_UTIL_H_
#define TRIRACE_TESTS_HOSTCCL_RANK_UTIL_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <hostccl/stream.h>
#include <nccl.h>

namespace hostccl_test {

struct RankContext {
  int rank = 0;
  int nranks = 1;
  ncclUniqueId id{};
  std::string arg;  // scenario argument
};

// Counts and prints case results: "PASS name" / "FAIL name: why".
class Report {
 public:
  void Pass(const std::string& name) {
    ++passed_;
    if (verbose_) std::printf("PASS %s\n", name.c_str());
  }
  void Fail(const std::string& name, const std::string& why) {
    ++failed_;
    std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
    std::fflush(stdout);
  }
  bool Check(bool ok, const std::string& name, const std::string& why) {
    if (ok) Pass(name);
    else Fail(name, why);
    return ok;
  }
  int passed() const { return passed_; }
  int failed() const { return failed_; }
  void set_verbose(bool v) { verbose_ = v; }

 private:
  int passed_ = 0;
  int failed_ = 0;
  bool verbose_ = false;
};

inline size_t SizeOf(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

inline bool IsFloat(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclBfloat16 || t == ncclFloat32 || t == ncclFloat64;
}
inline bool IsSigned(ncclDataType_t t) {
  return IsFloat(t) || t == ncclInt8 || t == ncclInt32 || t == ncclInt64;
}

// Stores `v` (an exactly representable value) as element i of type t.
inline void Store(ncclDataType_t t, void* buf, size_t i, double v) {
  auto* p = static_cast<char*>(buf);
  switch (t) {
    case ncclInt8: reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<int64_t>(v)); break;
    case ncclUint8: reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int64_t>(v)); break;
    case ncclInt32: reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(static_cast<int64_t>(v)); break;
    case ncclUint32: reinterpret_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(static_cast<int64_t>(v)); break;
    case ncclInt64: reinterpret_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case ncclUint64: reinterpret_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(static_cast<int64_t>(v)); break;
    case ncclFloat16: reinterpret_cast<__half*>(p)[i] = __float2half(static_cast<float>(v)); break;
    case ncclBfloat16: reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(static_cast<float>(v)); break;
    case ncclFloat32: reinterpret_cast<float*>(p)[i] = static_cast<float>(v); break;
    default: reinterpret_cast<double*>(p)[i] = v; break;
  }
}

inline double Load(ncclDataType_t t, const void* buf, size_t i) {
  auto* p = static_cast<const char*>(buf);
  switch (t) {
    case ncclInt8: return reinterpret_cast<const int8_t*>(p)[i];
    case ncclUint8: return reinterpret_cast<const uint8_t*>(p)[i];
    case ncclInt32: return reinterpret_cast<const int32_t*>(p)[i];
    case ncclUint32: return reinterpret_cast<const uint32_t*>(p)[i];
    case ncclInt64: return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case ncclUint64: return static_cast<double>(reinterpret_cast<const uint64_t*>(p)[i]);
    case ncclFloat16: return __half2float(reinterpret_cast<const __half*>(p)[i]);
    case ncclBfloat16: return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(p)[i]);
    case ncclFloat32: return reinterpret_cast<const float*>(p)[i];
    default: return reinterpret_cast<const double*>(p)[i];
  }
}

// Wraps an exact integer result to type t (two's complement), as the device
// arithmetic does; floats are returned unchanged.
inline double Wrap(ncclDataType_t t, double v) {
  if (IsFloat(t)) return v;
  int64_t x = static_cast<int64_t>(v);
  switch (t) {
    case ncclInt8: return static_cast<int8_t>(x);
    case ncclUint8: return static_cast<uint8_t>(x);
    case ncclInt32: return static_cast<int32_t>(x);
    case ncclUint32: return static_cast<uint32_t>(x);
    case ncclUint64: return static_cast<double>(static_cast<uint64_t>(x));
    default: return static_cast<double>(x);
  }
}

// Scenario entry points (each returns the process exit code).
int RunSweep(const RankContext& ctx);

}  // namespace hostccl_test

#define HT_CHECK_NCCL(call)                                                          \
  do {                                                                               \
    ncclResult_t r_ = (call);                                                        \
    if (r_ != ncclSuccess) {                                                         \
      std::printf("FAIL %s:%d %s -> %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
      std::fflush(stdout);                                                           \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

#endif  // TRIRACE_TESTS_HOSTCCL_RANK_UTIL_H_
