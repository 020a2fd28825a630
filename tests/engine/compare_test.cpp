// compare::compare_tensors / compare_tensor_maps: the figures and the PASS rule of each
// --check_error_stat.
#include "trtutils/compare.h"

#include <gtest/gtest.h>

#include <cmath>

#include "trtutils/status.h"

namespace trtutils {
namespace {

using compare::CompareOptions;
using compare::ErrorStat;

Tensor vec(const std::vector<float>& v) {
  return Tensor::from_vector(DataType::kFloat32, {static_cast<int64_t>(v.size())}, v);
}

TEST(Compare, EqualTensorsPassWithInfiniteSqnr) {
  const auto c = compare::compare_tensors("y", vec({1, 2, 3}), vec({1, 2, 3}), {});
  EXPECT_TRUE(c.pass);
  EXPECT_TRUE(std::isinf(c.sqnr_db));
  EXPECT_DOUBLE_EQ(c.cosine, 1.0);
  EXPECT_EQ(c.num_mismatched, 0);
}

TEST(Compare, FiguresOfAPerturbedTensor) {
  CompareOptions o;
  o.error_quantile = 0.5;
  const auto c = compare::compare_tensors("y", vec({1, 2, 4, 0}), vec({1, 2.5f, 4, 0.5f}), o);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.num_mismatched, 2);
  EXPECT_DOUBLE_EQ(c.abs_error.max, 0.5);
  EXPECT_DOUBLE_EQ(c.abs_error.mean, 0.25);
  EXPECT_DOUBLE_EQ(c.abs_error.median, 0.25);
  EXPECT_TRUE(std::isinf(c.rel_error.max));  // 0 in A, 0.5 in B
  EXPECT_NEAR(c.sqnr_db, 10 * std::log10(21.0 / 0.5), 1e-9);
}

TEST(Compare, StatisticDecidesWithAtolOrRtol) {
  CompareOptions o;
  o.tolerance = {.atol = 0.1, .rtol = 0};
  const Tensor a = vec({1, 1, 1, 1}), b = vec({1, 1, 1, 2});  // one outlier
  o.check_error_stat = ErrorStat::kMax;
  EXPECT_FALSE(compare::compare_tensors("y", a, b, o).pass);
  o.check_error_stat = ErrorStat::kMedian;
  EXPECT_TRUE(compare::compare_tensors("y", a, b, o).pass);
  o.check_error_stat = ErrorStat::kMean;  // 0.25
  EXPECT_FALSE(compare::compare_tensors("y", a, b, o).pass);
  o.tolerance.rtol = 0.3;  // mean rel 0.25
  EXPECT_TRUE(compare::compare_tensors("y", a, b, o).pass);
}

TEST(Compare, PerNameToleranceAndMissingNames) {
  CompareOptions o;
  o.per_name["loose"] = {.atol = 1, .rtol = 0};
  const std::map<std::string, Tensor> a = {
      {"loose", vec({1})}, {"tight", vec({1})}, {"only_a", vec({1})}};
  const std::map<std::string, Tensor> b = {{"loose", vec({1.5f})}, {"tight", vec({1.5f})}};
  const auto r = compare::compare_tensor_maps(a, b, o, {"tight"});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].name, "tight");
  EXPECT_FALSE(r[0].pass);
  EXPECT_EQ(r[1].name, "loose");
  EXPECT_TRUE(r[1].pass);
  EXPECT_EQ(r[2].problem, "only in A");
}

TEST(Compare, ShapesMustMatchUpToOnes) {
  const Tensor a = Tensor::from_vector(DataType::kFloat32, {1, 2}, std::vector<float>{1, 2});
  EXPECT_TRUE(compare::compare_tensors("y", a, vec({1, 2}), {}).pass);
  const auto c = compare::compare_tensors("y", a, vec({1, 2, 3}), {});
  EXPECT_FALSE(c.pass);
  EXPECT_NE(c.problem.find("shapes differ"), std::string::npos);
}

TEST(Compare, ParsesErrorStats) {
  EXPECT_EQ(compare::parse_error_stat("quantile"), ErrorStat::kQuantile);
  EXPECT_THROW(compare::parse_error_stat("p99"), Error);
}

}  // namespace
}  // namespace trtutils
