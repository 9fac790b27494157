// hostccl's element kernels: half/bfloat16 conversions checked against
// CUDA's own host implementations, and every operator on every type.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "hostccl/src/reduce.h"

namespace trirace::hostccl {
namespace {

uint16_t Bits(__half h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
uint16_t Bits(__nv_bfloat16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
__half AsHalf(uint16_t b) {
  __half_raw raw;
  raw.x = b;
  return __half(raw);
}
float AsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(HostcclConversions, HalfToFloatMatchesCudaForEveryHalf) {
  for (uint32_t b = 0; b < 65536; ++b) {
    float mine = HalfToFloat(static_cast<uint16_t>(b));
    float cuda = __half2float(AsHalf(static_cast<uint16_t>(b)));
    if (std::isnan(cuda)) {
      EXPECT_TRUE(std::isnan(mine)) << b;
    } else {
      ASSERT_EQ(mine, cuda) << "half bits " << b;
      ASSERT_EQ(std::signbit(mine), std::signbit(cuda)) << b;
    }
  }
}

TEST(HostcclConversions, FloatToHalfRoundsToNearestEvenLikeCuda) {
  std::vector<float> samples;
  // Every half value, the midpoints between neighbours (ties) and a nudge
  // either side, in both signs; then random bit patterns.
  for (uint32_t b = 0; b < 0x7c00; ++b) {
    float lo = HalfToFloat(static_cast<uint16_t>(b)), hi = HalfToFloat(static_cast<uint16_t>(b + 1));
    float mid = (lo + hi) / 2;
    for (float f : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      samples.push_back(f);
      samples.push_back(-f);
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) samples.push_back(AsFloat(rng()));
  samples.push_back(65520.0f);
  samples.push_back(1e10f);
  samples.push_back(INFINITY);
  for (float f : samples) {
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), Bits(__float2half_rn(f))) << "float " << f;
  }
}

TEST(HostcclConversions, Bfloat16MatchesCuda) {
  std::mt19937 rng(11);
  for (int i = 0; i < 300000; ++i) {
    float f = AsFloat(rng());
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bfloat16ToFloat(FloatToBfloat16(f))));
      continue;
    }
    ASSERT_EQ(FloatToBfloat16(f), Bits(__float2bfloat16_rn(f))) << f;
    uint16_t b = static_cast<uint16_t>(rng());
    __nv_bfloat16_raw raw;
    raw.x = b;
    float cuda = __bfloat162float(__nv_bfloat16(raw));
    if (!std::isnan(cuda)) {
      ASSERT_EQ(Bfloat16ToFloat(b), cuda);
    }
  }
}

template <typename T>
std::vector<T> Combined(const Reduction& r, std::vector<T> a, const std::vector<T>& b) {
  Combine(r, a.data(), a.data(), b.data(), a.size());
  return a;
}

TEST(HostcclReduce, IntegerOperatorsWrapLikeTheDevice) {
  std::vector<int8_t> a = {100, -100, 7, -1}, b = {100, -100, -9, 3};
  EXPECT_EQ(Combined(BuiltinReduction(ncclSum, ncclInt8, 2), a, b), (std::vector<int8_t>{-56, 56, -2, 2}));
  EXPECT_EQ(Combined(BuiltinReduction(ncclProd, ncclInt8, 2), a, b), (std::vector<int8_t>{16, 16, -63, -3}));
  EXPECT_EQ(Combined(BuiltinReduction(ncclMax, ncclInt8, 2), a, b), (std::vector<int8_t>{100, -100, 7, 3}));
  EXPECT_EQ(Combined(BuiltinReduction(ncclMin, ncclInt8, 2), a, b), (std::vector<int8_t>{100, -100, -9, -1}));
  std::vector<uint64_t> ua = {~0ull, 5}, ub = {2, 7};
  EXPECT_EQ(Combined(BuiltinReduction(ncclSum, ncclUint64, 2), ua, ub), (std::vector<uint64_t>{1, 12}));
}

TEST(HostcclReduce, IntegerAvgSumsThenDividesTruncating) {
  Reduction r = BuiltinReduction(ncclAvg, ncclInt32, 3);
  ASSERT_TRUE(NeedsFinish(r));
  ASSERT_FALSE(NeedsContribute(r));
  std::vector<int32_t> acc = {1, -1, 10}, more = {1, -1, 0}, third = {0, -5, 1};
  Combine(r, acc.data(), acc.data(), more.data(), 3);
  Combine(r, acc.data(), acc.data(), third.data(), 3);
  Finish(r, acc.data(), 3);
  EXPECT_EQ(acc, (std::vector<int32_t>{0, -2, 3}));
}

TEST(HostcclReduce, FloatAvgPremultipliesByOneOverN) {
  Reduction r = BuiltinReduction(ncclAvg, ncclFloat32, 4);
  ASSERT_TRUE(NeedsContribute(r));
  std::vector<float> x = {4, 8}, partial(2);
  Contribute(r, partial.data(), x.data(), 2);
  EXPECT_EQ(partial, (std::vector<float>{1, 2}));
  std::vector<float> y = {8, 4};
  Combine(r, partial.data(), y.data(), partial.data(), 2);
  EXPECT_EQ(partial, (std::vector<float>{3, 3}));
}

TEST(HostcclReduce, HalfSumRoundsEveryStep) {
  // 2048 + 1 is not a half: it rounds to even (2048) each time.
  Reduction r = BuiltinReduction(ncclSum, ncclFloat16, 2);
  std::vector<uint16_t> a = {FloatToHalf(2048)}, b = {FloatToHalf(1)};
  Combine(r, a.data(), a.data(), b.data(), 1);
  EXPECT_EQ(HalfToFloat(a[0]), 2048.0f);
  b[0] = FloatToHalf(3);
  Combine(r, a.data(), a.data(), b.data(), 1);
  EXPECT_EQ(HalfToFloat(a[0]), 2052.0f);
}

TEST(HostcclReduce, PreMulSumUsesTheScalarOfTheType) {
  uint16_t s = FloatToBfloat16(0.5f);
  Reduction r = PreMulSumReduction(ncclBfloat16, &s);
  std::vector<uint16_t> local = {FloatToBfloat16(6)}, partial = {FloatToBfloat16(1)};
  Combine(r, partial.data(), local.data(), partial.data(), 1);
  EXPECT_EQ(Bfloat16ToFloat(partial[0]), 4.0f);
  double ds = 3;
  Reduction rd = PreMulSumReduction(ncclFloat64, &ds);
  std::vector<double> l = {2}, p = {1};
  Combine(rd, p.data(), l.data(), p.data(), 1);
  EXPECT_EQ(p[0], 7.0);
}

TEST(HostcclReduce, TypeTable) {
  EXPECT_EQ(DataTypeSize(ncclBfloat16), 2u);
  EXPECT_EQ(DataTypeSize(ncclUint64), 8u);
  EXPECT_EQ(DataTypeSize(static_cast<ncclDataType_t>(99)), 0u);
  EXPECT_FALSE(TypeSupported(ncclFloat8e4m3));
  EXPECT_TRUE(TypeSupported(ncclInt8));
}

}  // namespace
}  // namespace trirace::hostccl
