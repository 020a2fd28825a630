// silu_inplace (backends/cpu/silu.h): x / (1 + exp(-x)) within 1e-6 relative (absolute near 0) of
// the double-precision value from -100 to 100, at every length remainder of the 16-lane loop,
// and through the parallel chunks; NaN stays NaN, +inf stays +inf.
#include "backends/cpu/silu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace trtutils::cpu {
namespace {

double silu(double x) {
  return x / (1.0 + std::exp(-x));
}

TEST(Silu, MatchesDoubleOverTheRange) {
  for (int64_t n : {1, 15, 16, 17, 33, 70001}) {
    std::vector<float> y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      y[i] = -100.0f +
             200.0f * static_cast<float>(i) / static_cast<float>(std::max<int64_t>(1, n - 1));
    const std::vector<float> x = y;
    silu_inplace(y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double want = silu(x[i]);
      EXPECT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-30) << "x = " << x[i] << ", n = " << n;
    }
  }
}

TEST(Silu, SpecialValues) {
  std::vector<float> y = {0.0f,
                          -0.0f,
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity(),
                          1e-30f,
                          -1e-30f,
                          88.0f,
                          -88.0f};
  silu_inplace(y.data(), static_cast<int64_t>(y.size()));
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], std::numeric_limits<float>::infinity());
  EXPECT_NEAR(y[4], 0.5e-30f, 1e-36f);
  EXPECT_NEAR(y[6], 88.0f, 1e-4f);
  EXPECT_NEAR(y[7], silu(-88.0), 1e-40);
}

}  // namespace
}  // namespace trtutils::cpu
