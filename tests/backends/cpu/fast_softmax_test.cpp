// fast_softmax (backends/cpu/fast_softmax.h) against double precision: rows of 1 to 197 values
// (ViT's attention rows) spread over +-30, softmax and log-softmax; rows with inf or NaN, in
// place.
#include "backends/cpu/fast_softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backends/cpu/vector_exp.h"

namespace trtutils::cpu {
namespace {

TEST(FastSoftmax, MatchesDouble) {
#if defined(__x86_64__)
  if (!has_avx512f()) GTEST_SKIP() << "no AVX-512F here: the caller's kernels run";
#endif
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-30.0f, 30.0f);
  for (int64_t n : {1, 15, 16, 17, 197}) {
    const int64_t rows = 37;
    std::vector<float> x(static_cast<size_t>(rows * n)), y(x.size()), l(x.size());
    for (float& v : x) v = u(rng);
    ASSERT_TRUE(fast_softmax(x.data(), y.data(), rows, n, false));
    ASSERT_TRUE(fast_softmax(x.data(), l.data(), rows, n, true));
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -1e300, sum = 0;
      for (int64_t i = 0; i < n; ++i) mx = std::max(mx, double(x[r * n + i]));
      for (int64_t i = 0; i < n; ++i) sum += std::exp(double(x[r * n + i]) - mx);
      for (int64_t i = 0; i < n; ++i) {
        const double d = double(x[r * n + i]) - mx;
        // x - max rounds to float: exp then carries |d| ulps of relative error.
        const double want = std::exp(d) / sum;
        EXPECT_NEAR(y[r * n + i], want, 1e-6 * std::max(1.0, std::fabs(d)) * want + 1e-30);
        EXPECT_NEAR(l[r * n + i], d - std::log(sum), 2e-6 * std::max(1.0, std::fabs(d)));
      }
    }
  }
}

// A row with +inf, NaN or only -inf becomes NaN (as the reference's: exp(inf - inf)), the rows
// beside it stay right, and x may be y (in place: the Softmax kernel donates dying inputs).
TEST(FastSoftmax, NonFiniteRowsBecomeNanInPlace) {
#if defined(__x86_64__)
  if (!has_avx512f()) GTEST_SKIP() << "no AVX-512F here: the caller's kernels run";
#endif
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const bool log : {false, true}) {
    std::vector<float> x = {1.0f, inf,  2.0f, 3.0f, 1.0f, nan,  2.0f, 3.0f,
                            -inf, -inf, -inf, -inf, 0.0f, -inf, 0.0f, 0.0f};
    ASSERT_TRUE(fast_softmax(x.data(), x.data(), 4, 4, log));
    for (int i = 0; i < 12; ++i) EXPECT_TRUE(std::isnan(x[i])) << "log " << log << " at " << i;
    const float third = log ? -std::log(3.0f) : 1.0f / 3.0f;
    EXPECT_NEAR(x[12], third, 1e-6);
    if (log)
      EXPECT_EQ(x[13], -inf);
    else
      EXPECT_NEAR(x[13], 0.0f, 1e-30f);  // exp(-inf) clamps near 0
    EXPECT_NEAR(x[14], third, 1e-6);
  }
}

}  // namespace
}  // namespace trtutils::cpu
