// fast_quantize: the per-tensor QuantizeLinear / DequantizeLinear lanes give exactly the scalar
// formulas' values (ties to even, NaN to the zero point, saturation, infinities) at every tail
// length and across the parallel chunks.
#include "backends/cpu/fast_quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace trtutils::cpu {
namespace {

int32_t reference_q(float x, float s, float z, bool is_signed) {
  float v = std::nearbyint(x / s) + z;
  if (std::isnan(v)) v = z;
  const float lo = is_signed ? -128.0f : 0.0f, hi = is_signed ? 127.0f : 255.0f;
  return static_cast<int32_t>(v < lo ? lo : (v > hi ? hi : v));
}

std::vector<float> hostile_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 40.0f);
  std::vector<float> x(static_cast<size_t>(n));
  const float specials[] = {0.5f * 0.1f,
                            1.5f * 0.1f,
                            2.5f * 0.1f,
                            -0.5f * 0.1f,
                            -2.5f * 0.1f,
                            std::nanf(""),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            1e30f,
                            -1e30f,
                            -0.0f};
  for (int64_t i = 0; i < n; ++i)
    x[i] = i % 7 == 3 ? specials[(i / 7) % std::size(specials)] : d(rng);
  return x;
}

TEST(FastQuantize, MatchesTheScalarFormula) {
  for (bool is_signed : {true, false}) {
    const float z = is_signed ? 3.0f : 128.0f;
    for (int64_t n : {0, 1, 5, 15, 16, 17, 33, 100, 70001}) {
      SCOPED_TRACE(::testing::Message() << "signed " << is_signed << " n " << n);
      const std::vector<float> x = hostile_values(n, static_cast<uint32_t>(n));
      std::vector<uint8_t> q(static_cast<size_t>(n) + 1, 0xAB);
      quantize_per_tensor(x.data(), n, 0.1f, z, is_signed, q.data());
      for (int64_t i = 0; i < n; ++i) {
        const int32_t got = is_signed ? static_cast<int8_t>(q[i]) : q[i];
        ASSERT_EQ(got, reference_q(x[i], 0.1f, z, is_signed)) << "element " << i << " x " << x[i];
      }
      EXPECT_EQ(q[n], 0xAB) << "wrote past the end";
      std::vector<float> y(static_cast<size_t>(n) + 1, -7.0f);
      dequantize_per_tensor(q.data(), n, 0.1f, static_cast<int32_t>(z), is_signed, y.data());
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = is_signed ? static_cast<int8_t>(q[i]) : q[i];
        ASSERT_EQ(y[i], static_cast<float>(v - static_cast<int32_t>(z)) * 0.1f) << "element " << i;
      }
      EXPECT_EQ(y[n], -7.0f) << "wrote past the end";
    }
  }
}

}  // namespace
}  // namespace trtutils::cpu
