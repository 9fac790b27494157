#include "hostccl/src/reduce.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace trirace::hostccl {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// How one element type is stored and computed. Integers compute in their own
// type (sums and products wrap through the unsigned type); half and bfloat16
// compute in float.
template <typename T>
struct IntElem {
  using Storage = T;
  using Compute = T;
  using U = std::make_unsigned_t<T>;
  static T Load(T v) { return v; }
  static T Store(T v) { return v; }
  static T Add(T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); }
  static T Mul(T a, T b) { return static_cast<T>(static_cast<U>(a) * static_cast<U>(b)); }
  static T Div(T a, int n) { return static_cast<T>(a / static_cast<T>(n)); }
};

template <typename T>
struct FloatElem {
  using Storage = T;
  using Compute = T;
  static T Load(T v) { return v; }
  static T Store(T v) { return v; }
  static T Add(T a, T b) { return a + b; }
  static T Mul(T a, T b) { return a * b; }
  static T Div(T a, int n) { return a / static_cast<T>(n); }
};

struct HalfElem {
  using Storage = uint16_t;
  using Compute = float;
  static float Load(uint16_t v) { return HalfToFloat(v); }
  static uint16_t Store(float v) { return FloatToHalf(v); }
  // Each operation rounds to half, as the device's __hadd/__hmul do.
  static float Add(float a, float b) { return HalfToFloat(FloatToHalf(a + b)); }
  static float Mul(float a, float b) { return HalfToFloat(FloatToHalf(a * b)); }
  static float Div(float a, int n) { return a / static_cast<float>(n); }
};

struct Bf16Elem {
  using Storage = uint16_t;
  using Compute = float;
  static float Load(uint16_t v) { return Bfloat16ToFloat(v); }
  static uint16_t Store(float v) { return FloatToBfloat16(v); }
  static float Add(float a, float b) { return Bfloat16ToFloat(FloatToBfloat16(a + b)); }
  static float Mul(float a, float b) { return Bfloat16ToFloat(FloatToBfloat16(a * b)); }
  static float Div(float a, int n) { return a / static_cast<float>(n); }
};

template <typename E>
typename E::Compute Scalar(const Reduction& r) {
  typename E::Storage s;
  std::memcpy(&s, r.scalar, sizeof(s));
  return E::Load(s);
}

template <typename E, typename F>
void Binary(void* dst, const void* a, const void* b, size_t n, F f) {
  using S = typename E::Storage;
  auto* d = static_cast<S*>(dst);
  auto* x = static_cast<const S*>(a);
  auto* y = static_cast<const S*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = E::Store(f(E::Load(x[i]), E::Load(y[i])));
}

template <typename E, typename F>
void Unary(void* dst, const void* a, size_t n, F f) {
  using S = typename E::Storage;
  auto* d = static_cast<S*>(dst);
  auto* x = static_cast<const S*>(a);
  for (size_t i = 0; i < n; ++i) d[i] = E::Store(f(E::Load(x[i])));
}

template <typename E>
struct Kernels {
  using C = typename E::Compute;

  static void Combine(const Reduction& r, void* dst, const void* local, const void* partial, size_t n) {
    switch (r.kind) {
      case ReduceKind::kSum:
      case ReduceKind::kSumPostDiv:
        return Binary<E>(dst, local, partial, n, [](C a, C b) { return E::Add(a, b); });
      case ReduceKind::kProd:
        return Binary<E>(dst, local, partial, n, [](C a, C b) { return E::Mul(a, b); });
      case ReduceKind::kMax:
        return Binary<E>(dst, local, partial, n, [](C a, C b) { return b > a ? b : a; });
      case ReduceKind::kMin:
        return Binary<E>(dst, local, partial, n, [](C a, C b) { return b < a ? b : a; });
      case ReduceKind::kPreMulSum: {
        C s = Scalar<E>(r);
        return Binary<E>(dst, local, partial, n, [s](C a, C b) { return E::Add(E::Mul(a, s), b); });
      }
    }
  }

  static void Contribute(const Reduction& r, void* dst, const void* src, size_t n) {
    if (r.kind == ReduceKind::kPreMulSum) {
      C s = Scalar<E>(r);
      return Unary<E>(dst, src, n, [s](C a) { return E::Mul(a, s); });
    }
    if (dst != src) std::memmove(dst, src, n * sizeof(typename E::Storage));
  }

  static void Finish(const Reduction& r, void* data, size_t n) {
    if (r.kind != ReduceKind::kSumPostDiv) return;
    int d = r.divisor;
    Unary<E>(data, data, n, [d](C a) { return E::Div(a, d); });
  }
};

template <template <typename> class Op, typename... Args>
void Dispatch(ncclDataType_t type, Args&&... args) {
  switch (type) {
    case ncclInt8: return Op<IntElem<int8_t>>::Run(args...);
    case ncclUint8: return Op<IntElem<uint8_t>>::Run(args...);
    case ncclInt32: return Op<IntElem<int32_t>>::Run(args...);
    case ncclUint32: return Op<IntElem<uint32_t>>::Run(args...);
    case ncclInt64: return Op<IntElem<int64_t>>::Run(args...);
    case ncclUint64: return Op<IntElem<uint64_t>>::Run(args...);
    case ncclFloat16: return Op<HalfElem>::Run(args...);
    case ncclFloat32: return Op<FloatElem<float>>::Run(args...);
    case ncclFloat64: return Op<FloatElem<double>>::Run(args...);
    case ncclBfloat16: return Op<Bf16Elem>::Run(args...);
    default: return;  // rejected by the API layer
  }
}

template <typename E>
struct CombineOp {
  static void Run(const Reduction& r, void* d, const void* a, const void* b, size_t n) {
    Kernels<E>::Combine(r, d, a, b, n);
  }
};
template <typename E>
struct ContributeOp {
  static void Run(const Reduction& r, void* d, const void* a, size_t n) { Kernels<E>::Contribute(r, d, a, n); }
};
template <typename E>
struct FinishOp {
  static void Run(const Reduction& r, void* d, size_t n) { Kernels<E>::Finish(r, d, n); }
};
template <typename E>
struct StoreScalarOp {
  static void Run(Reduction& r, double value) {
    typename E::Storage s = E::Store(static_cast<typename E::Compute>(value));
    std::memcpy(r.scalar, &s, sizeof(s));
  }
};

}  // namespace

bool TypeSupported(ncclDataType_t type) {
  return DataTypeSize(type) != 0 && type != ncclFloat8e4m3 && type != ncclFloat8e5m2;
}

const char* TypeName(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return "ncclInt8";
    case ncclUint8: return "ncclUint8";
    case ncclInt32: return "ncclInt32";
    case ncclUint32: return "ncclUint32";
    case ncclInt64: return "ncclInt64";
    case ncclUint64: return "ncclUint64";
    case ncclFloat16: return "ncclFloat16";
    case ncclFloat32: return "ncclFloat32";
    case ncclFloat64: return "ncclFloat64";
    case ncclBfloat16: return "ncclBfloat16";
    case ncclFloat8e4m3: return "ncclFloat8e4m3";
    case ncclFloat8e5m2: return "ncclFloat8e5m2";
    default: return "unknown";
  }
}

Reduction BuiltinReduction(ncclRedOp_t op, ncclDataType_t type, int nranks) {
  Reduction r;
  r.type = type;
  switch (op) {
    case ncclSum: r.kind = ReduceKind::kSum; break;
    case ncclProd: r.kind = ReduceKind::kProd; break;
    case ncclMax: r.kind = ReduceKind::kMax; break;
    case ncclMin: r.kind = ReduceKind::kMin; break;
    default: {  // ncclAvg
      bool is_float = type == ncclFloat16 || type == ncclFloat32 || type == ncclFloat64 || type == ncclBfloat16;
      if (is_float) {
        r.kind = ReduceKind::kPreMulSum;
        Dispatch<StoreScalarOp>(type, r, 1.0 / nranks);
      } else {
        r.kind = ReduceKind::kSumPostDiv;
        r.divisor = nranks;
      }
    }
  }
  return r;
}

Reduction PreMulSumReduction(ncclDataType_t type, const void* scalar) {
  Reduction r;
  r.kind = ReduceKind::kPreMulSum;
  r.type = type;
  std::memcpy(r.scalar, scalar, std::min(DataTypeSize(type), sizeof(r.scalar)));
  return r;
}

void Contribute(const Reduction& r, void* dst, const void* src, size_t count) {
  Dispatch<ContributeOp>(r.type, r, dst, src, count);
}
void Combine(const Reduction& r, void* dst, const void* local, const void* partial, size_t count) {
  Dispatch<CombineOp>(r.type, r, dst, local, partial, count);
}
void Finish(const Reduction& r, void* data, size_t count) { Dispatch<FinishOp>(r.type, r, data, count); }
bool NeedsContribute(const Reduction& r) { return r.kind == ReduceKind::kPreMulSum; }
bool NeedsFinish(const Reduction& r) { return r.kind == ReduceKind::kSumPostDiv; }

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return BitsFloat(FloatBits(v) | sign);
  }
  if (exp == 31) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t FloatToHalf(float f) {
  uint32_t bits = FloatBits(f);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN (NaN stays quiet NaN)
    return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  }
  if (abs >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65536: overflow
  if (abs < 0x38800000u) {
    // Below the smallest normal half (2^-14): adding 0.5 aligns the value so
    // the float adder does the round-to-nearest-even into the low bits.
    float aligned = BitsFloat(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (FloatBits(aligned) - 0x3f000000u));
  }
  // Normal: rebias the exponent and round the 13 dropped bits to nearest
  // even (a carry into the exponent gives the next binade or infinity).
  uint32_t odd = (abs >> 13) & 1u;
  uint32_t rounded = abs - 0x38000000u + 0xfffu + odd;
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

float Bfloat16ToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

uint16_t FloatToBfloat16(float f) {
  uint32_t bits = FloatBits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t odd = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + odd) >> 16);
}

}  // namespace trirace::hostccl
