#include "quantize/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "trtutils/status.h"

namespace trtutils::quantize {
namespace {

Tensor vec_tensor(const std::vector<float>& v) {
  return Tensor::from_vector<float>(DataType::kFloat32, {static_cast<int64_t>(v.size())}, v);
}

std::vector<float> normal(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(CalibrationTest, MethodNames) {
  EXPECT_EQ(calibration_method_from_name("entropy"), CalibrationMethod::kEntropy);
  try {
    calibration_method_from_name("minmax");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max, entropy, percentile, mse"), std::string::npos);
  }
}

TEST(CalibrationTest, MaxIsAbsmaxOverBatches) {
  TensorStats s(2048);
  s.add(vec_tensor({0.5f, -1.0f, 0.25f}));
  s.add(vec_tensor({2.0f, -3.5f}));
  s.add(vec_tensor({0.1f}));
  EXPECT_DOUBLE_EQ(s.absmax(), 3.5);
  EXPECT_DOUBLE_EQ(compute_amax(s, CalibrationMethod::kMax, {}), 3.5);
  EXPECT_EQ(s.count(), 6);
  const auto& h = s.histogram();
  EXPECT_NEAR(std::accumulate(h.begin(), h.end(), 0.0), 6.0, 1e-9);  // re-binning keeps counts
}

TEST(CalibrationTest, AllZerosGivesZero) {
  TensorStats s(2048);
  s.add(vec_tensor({0, 0, 0}));
  for (auto m : {CalibrationMethod::kMax, CalibrationMethod::kEntropy,
                 CalibrationMethod::kPercentile, CalibrationMethod::kMse})
    EXPECT_EQ(compute_amax(s, m, {}), 0.0);
}

TEST(CalibrationTest, PercentileOfUniformGrid) {
  // 0, 1/N, ..., (N-1)/N in 10 batches whose range grows: the 99th percentile is 0.99 within
  // a bin width (re-binning spreads counts, so allow two bins).
  const int n = 100000;
  TensorStats s(2048);
  for (int b = 0; b < 10; ++b) {
    std::vector<float> v;
    for (int i = b; i < n; i += 10) v.push_back(static_cast<float>(i) / n * (b + 1) / 10.0f);
    s.add(vec_tensor(v));
  }
  TensorStats u(2048);
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i) / n;
  u.add(vec_tensor(v));
  CalibratorParams p;
  p.percentile = 99.0;
  EXPECT_NEAR(compute_amax(u, CalibrationMethod::kPercentile, p), 0.99, 1.0 / 2048 + 1e-9);
  p.percentile = 50.0;
  EXPECT_NEAR(compute_amax(u, CalibrationMethod::kPercentile, p), 0.5, 1.0 / 2048 + 1e-9);
  EXPECT_GT(s.range(), 0.99);
}

TEST(CalibrationTest, UniformDataIsNotClipped) {
  // With no outliers, clipping only hurts: mse and entropy stay near the max.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(200000);
  for (auto& x : v) x = d(rng);
  TensorStats s(2048);
  s.add(vec_tensor(v));
  EXPECT_GT(compute_amax(s, CalibrationMethod::kMse, {}), 0.95);
  EXPECT_GT(compute_amax(s, CalibrationMethod::kEntropy, {}), 0.9);
}

TEST(CalibrationTest, FourMethodsDifferOnGaussian) {
  TensorStats s(2048);
  for (uint32_t b = 0; b < 8; ++b) s.add(vec_tensor(normal(100000, 10 + b)));
  CalibratorParams p;
  p.percentile = 99.9;
  const double mx = compute_amax(s, CalibrationMethod::kMax, p);
  const double pc = compute_amax(s, CalibrationMethod::kPercentile, p);
  const double ms = compute_amax(s, CalibrationMethod::kMse, p);
  const double en = compute_amax(s, CalibrationMethod::kEntropy, p);
  // 800k samples of N(0, 1): max ~ 4.9 sigma, 99.9% of |x| at 3.29 sigma; the MSE-optimal
  // 8-bit clip of a Gaussian is ~ 3.9 sigma (Banner et al., ACIQ); KL's lies below the max.
  EXPECT_GT(mx, 4.4);
  EXPECT_NEAR(pc, 3.29, 0.03);
  EXPECT_GT(ms, 3.6);
  EXPECT_LT(ms, 4.2);
  std::printf("gaussian amax: max %.3f percentile %.3f mse %.3f entropy %.3f\n", mx, pc, ms, en);
  EXPECT_GT(en, 2.5);
  EXPECT_LT(en, 4.5);
  const std::vector<double> all = {mx, pc, ms, en};
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j)
      EXPECT_GT(std::fabs(all[i] - all[j]), 0.02) << i << " " << j;
}

TEST(CalibrationTest, ReluOutputKeepsMostOfTheRange) {
  // Half exact zeros (a ReLU): the zero spike must not drag the threshold down.
  std::vector<float> v = normal(200000, 5);
  for (auto& x : v) x = std::max(x, 0.0f);
  TensorStats s(2048);
  s.add(vec_tensor(v));
  const double en = compute_amax(s, CalibrationMethod::kEntropy, {});
  const double ms = compute_amax(s, CalibrationMethod::kMse, {});
  EXPECT_GT(en, 2.0);
  EXPECT_GT(ms, 2.0);
}

TEST(CalibrationTest, OutlierIsClippedByAllButMax) {
  // One outlier at 50 sigma among 400k: covering it costs ~ s^2/12 per value with s = 50/127,
  // i.e. ~ 5000, clipping at T costs (50 - T)^2 + 400k (T/127)^2/12: the optimum is T ~ 17.
  std::vector<float> v = normal(400000, 7);
  v[123] = 50.0f;
  TensorStats s(2048);
  s.add(vec_tensor(v));
  EXPECT_DOUBLE_EQ(compute_amax(s, CalibrationMethod::kMax, {}), 50.0);
  EXPECT_LT(compute_amax(s, CalibrationMethod::kPercentile, {}), 10.0);
  EXPECT_NEAR(compute_amax(s, CalibrationMethod::kMse, {}), 17.0, 3.0);
  EXPECT_LT(compute_amax(s, CalibrationMethod::kEntropy, {}), 10.0);
}

}  // namespace
}  // namespace trtutils::quantize
