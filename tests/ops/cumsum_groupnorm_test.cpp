// CumSum and GroupNormalization on the CPU: hand-computed values (ONNX's operator examples) and,
// for GroupNormalization, agreement with InstanceNormalization (one group per channel) and with
// the statistics of a whole sample (one group).
#include <cmath>

#include "ops/tensor_test_util.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

using namespace tensor_testing;
constexpr auto F = DataType::kFloat32;

TEST(CumSum, ExclusiveReverseAndAxes) {
  const Tensor x = f32({5}, {1, 2, 3, 4, 5});
  const Tensor axis0 = i64({}, {0});
  expect_tensor(run1(node("CumSum"), 14, {x, axis0}), F, {5}, {1, 3, 6, 10, 15});
  expect_tensor(run1(node("CumSum", {ai("exclusive", 1)}), 14, {x, axis0}), F, {5},
                {0, 1, 3, 6, 10});
  expect_tensor(run1(node("CumSum", {ai("reverse", 1)}), 14, {x, axis0}), F, {5},
                {15, 14, 12, 9, 5});
  expect_tensor(run1(node("CumSum", {ai("reverse", 1), ai("exclusive", 1)}), 14, {x, axis0}), F,
                {5}, {14, 12, 9, 5, 0});
  const Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_tensor(run1(node("CumSum"), 14, {m, i64({}, {0})}), F, {2, 3}, {1, 2, 3, 5, 7, 9});
  expect_tensor(run1(node("CumSum"), 14, {m, i32({1}, {-1})}), F, {2, 3}, {1, 3, 6, 4, 9, 15});
  expect_tensor(run1(node("CumSum"), 14, {i64({3}, {7, -2, 5}), axis0}), DataType::kInt64, {3},
                {7, 5, 10});
}

TEST(CumSum, RefusesAnAxisOutsideTheRank) {
  EXPECT_THROW(run1(node("CumSum"), 14, {f32({2}, {1, 2}), i64({}, {1})}), Error);
}

ir::Attribute groups(int64_t g) {
  return ai("num_groups", g);
}

TEST(GroupNormalization, OneGroupPerChannelIsInstanceNormalization) {
  Tensor x(F, {2, 4, 3, 2});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.7f * i) * (1 + i % 5);
  const Tensor s = f32({4}, {1.0f, 0.5f, -2.0f, 3.0f}), b = f32({4}, {0.0f, 1.0f, -1.0f, 0.25f});
  const Tensor want = run1(node("InstanceNormalization"), 17, {x, s, b});
  const Tensor got = run1(node("GroupNormalization", {groups(4)}), 21, {x, s, b});
  expect_tensor(got, F, want.shape(), values(want), 1e-5);
}

TEST(GroupNormalization, OneGroupNormalizesTheWholeSample) {
  const Tensor x = f32({1, 2, 2}, {1, 2, 3, 6});  // mean 3, variance 3.5
  const Tensor s = f32({2}, {1, 2}), b = f32({2}, {0, 10});
  const double r = 1.0 / std::sqrt(3.5 + 1e-5);
  expect_tensor(run1(node("GroupNormalization", {groups(1)}), 21, {x, s, b}), F, {1, 2, 2},
                {-2 * r, -1 * r, 2 * 0 * r + 10, 2 * 3 * r + 10}, 1e-5);
  // opset 18's per-group scale and bias: one value for the one group
  expect_tensor(
      run1(node("GroupNormalization", {groups(1)}), 18, {x, f32({1}, {2}), f32({1}, {1})}), F,
      {1, 2, 2}, {-4 * r + 1, -2 * r + 1, 1, 6 * r + 1}, 1e-5);
}

TEST(GroupNormalization, RefusesGroupsThatDoNotDivideTheChannels) {
  const Tensor x = f32({1, 3, 1}, {1, 2, 3});
  EXPECT_THROW(run1(node("GroupNormalization", {groups(2)}), 21,
                    {x, f32({3}, {1, 1, 1}), f32({3}, {0, 0, 0})}),
               Error);
}

}  // namespace
}  // namespace trtutils
