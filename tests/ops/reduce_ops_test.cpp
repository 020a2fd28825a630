// Reductions and the softmax family: CPU kernels through cpu::run_node and shape inference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/elementwise_test_util.h"

namespace trtutils {
namespace {

using namespace ew_testing;  // NOLINT

// Naive reduction over `axes` of a float tensor (double accumulation), keepdims layout.
std::vector<double> naive_reduce(const Tensor& x, const std::vector<bool>& red, const char* op) {
  const Shape& s = x.shape();
  Shape out_s;
  for (size_t d = 0; d < s.size(); ++d) out_s.push_back(red[d] ? 1 : s[d]);
  const int64_t n_out = shape_numel(out_s);
  const std::string o = op;
  std::vector<double> acc(n_out, o == "max" ? -INFINITY : (o == "prod" ? 1.0 : 0.0));
  std::vector<int64_t> cnt(n_out, 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rem = i, oi = 0, ostride = 1;
    for (size_t k = s.size(); k-- > 0;) {
      const int64_t c = rem % s[k];
      rem /= s[k];
      if (!red[k]) oi += c * ostride;
      ostride *= out_s[k];
    }
    const double v = x.at_double(i);
    if (o == "sum" || o == "mean") acc[oi] += v;
    if (o == "max") acc[oi] = std::max(acc[oi], v);
    if (o == "prod") acc[oi] *= v;
    if (o == "l2") acc[oi] += v * v;
    ++cnt[oi];
  }
  for (int64_t i = 0; i < n_out; ++i) {
    if (o == "mean") acc[i] /= static_cast<double>(cnt[i]);
    if (o == "l2") acc[i] = std::sqrt(acc[i]);
  }
  return acc;
}

void expect_reduce_matches(const char* onnx_op, const char* naive_op, const Shape& shape,
                           const std::vector<int64_t>& axes, bool keepdims, int64_t opset) {
  const Tensor x = random_f32(shape, 11, 0.5f, 1.5f);
  std::vector<ir::Attribute> attrs = {attr_i("keepdims", keepdims)};
  const bool axes_input = opset >= 18 || (opset >= 13 && std::string(onnx_op) == "ReduceSum");
  Tensor axes_t = i64({static_cast<int64_t>(axes.size())}, axes);
  ir::Node node;
  if (axes_input) {
    node =
        make_node(onnx_op, 2, attrs, axes.empty() ? std::vector<size_t>{1} : std::vector<size_t>{});
  } else {
    if (!axes.empty()) attrs.push_back(attr_ints("axes", axes));
    node = make_node(onnx_op, 1, attrs);
  }
  std::vector<const Tensor*> ins = {&x};
  if (axes_input) ins.push_back(axes.empty() ? nullptr : &axes_t);
  const Tensor y = run1(node, opset, ins);
  std::vector<bool> red(shape.size(), axes.empty());
  for (int64_t a : axes) red[a < 0 ? a + static_cast<int64_t>(shape.size()) : a] = true;
  Shape want;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!red[d])
      want.push_back(shape[d]);
    else if (keepdims)
      want.push_back(1);
  }
  ASSERT_EQ(y.shape(), want) << onnx_op;
  const auto ref = naive_reduce(x, red, naive_op);
  ASSERT_EQ(static_cast<size_t>(y.numel()), ref.size());
  for (int64_t i = 0; i < y.numel(); ++i)
    ASSERT_NEAR(y.at_double(i), ref[i], 1e-5 * std::max(1.0, std::fabs(ref[i])))
        << onnx_op << " element " << i;
}

TEST(ReduceTest, AxesKeepdimsVariantsMatchNaive) {
  for (bool keep : {true, false}) {
    for (const auto& axes : std::vector<std::vector<int64_t>>{
             {}, {0}, {1}, {2}, {-1}, {0, 2}, {1, 2}, {0, 1, 2}, {-3, -2}}) {
      expect_reduce_matches("ReduceSum", "sum", {3, 4, 5}, axes, keep, 11);
      expect_reduce_matches("ReduceSum", "sum", {3, 4, 5}, axes, keep, 13);
      expect_reduce_matches("ReduceMean", "mean", {3, 4, 5}, axes, keep, 13);
      expect_reduce_matches("ReduceMean", "mean", {3, 4, 5}, axes, keep, 18);
      expect_reduce_matches("ReduceMax", "max", {3, 4, 5}, axes, keep, 13);
      expect_reduce_matches("ReduceMax", "max", {3, 4, 5}, axes, keep, 18);
      expect_reduce_matches("ReduceProd", "prod", {3, 4, 5}, axes, keep, 18);
      expect_reduce_matches("ReduceL2", "l2", {3, 4, 5}, axes, keep, 13);
    }
  }
}

TEST(ReduceTest, LargeShapesUseParallelPath) {
  expect_reduce_matches("ReduceMean", "mean", {2, 64, 56, 56}, {2, 3}, true, 13);
  expect_reduce_matches("ReduceMean", "mean", {2, 64, 56, 56}, {1}, true, 13);
  expect_reduce_matches("ReduceSum", "sum", {512, 768}, {-1}, false, 11);
  expect_reduce_matches("ReduceMax", "max", {4, 300, 300}, {0}, false, 11);
  expect_reduce_matches("ReduceSum", "sum", {1, 200000}, {}, false, 11);
}

TEST(ReduceTest, KnownValuesAndSize1Dims) {
  const Tensor x = f32({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor y =
      run1(make_node("ReduceSum", 1, {attr_ints("axes", {1}), attr_i("keepdims", 0)}), 11, {x});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(y), values(x));
  const Tensor m = run1(make_node("ReduceMean", 1, {attr_ints("axes", {2})}), 11, {x});
  EXPECT_EQ(m.shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(values(m), (std::vector<float>{2, 5}));
  const Tensor mn = run1(make_node("ReduceMin", 1, {attr_ints("axes", {0})}), 11, {x});
  EXPECT_EQ(values(mn), (std::vector<float>{1, 2, 3}));
  const Tensor l1 =
      run1(make_node("ReduceL1", 1, {attr_i("keepdims", 0)}), 11, {f32({3}, {-1, 2, -3})});
  EXPECT_EQ(l1.shape(), Shape{});
  EXPECT_EQ(values(l1)[0], 6);
  const Tensor ss = run1(make_node("ReduceSumSquare", 1), 11, {f32({2}, {3, 4})});
  EXPECT_EQ(values(ss)[0], 25);
  const Tensor lse = run1(make_node("ReduceLogSumExp", 1), 11, {f32({2}, {1000, 1000})});
  EXPECT_NEAR(values(lse)[0], 1000 + std::log(2.0f), 1e-3);
  const Tensor ls = run1(make_node("ReduceLogSum", 1), 11, {f32({2}, {1, 2})});
  EXPECT_NEAR(values(ls)[0], std::log(3.0f), 1e-6);
}

TEST(ReduceTest, NoopWithEmptyAxes) {
  const Tensor x = f32({2, 2}, {1, -2, 3, 4});
  const Tensor axes = i64({0}, {});
  // Empty axes input + noop -> identity.
  const Tensor y =
      run1(make_node("ReduceSum", 2, {attr_i("noop_with_empty_axes", 1)}), 13, {x, axes});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values(y), values(x));
  // Omitted axes + noop -> identity as well; without noop -> reduce all.
  const Tensor z = run1(make_node("ReduceMax", 2, {attr_i("noop_with_empty_axes", 1)}, {1}), 18,
                        std::vector<const Tensor*>{&x, nullptr});
  EXPECT_EQ(values(z), values(x));
  const Tensor all = run1(make_node("ReduceSum", 2), 13, {x, axes});
  EXPECT_EQ(all.shape(), (Shape{1, 1}));
  EXPECT_EQ(values(all)[0], 6);
}

TEST(ReduceTest, IntegerTypes) {
  const Tensor x = i64({2, 3}, {1, 2, 3, 4, 5, 7});
  EXPECT_EQ(
      run1(make_node("ReduceSum", 1, {attr_ints("axes", {1}), attr_i("keepdims", 0)}), 11, {x})
          .to_int64_vector(),
      (std::vector<int64_t>{6, 16}));
  EXPECT_EQ(
      run1(make_node("ReduceMean", 1, {attr_ints("axes", {1}), attr_i("keepdims", 0)}), 11, {x})
          .to_int64_vector(),
      (std::vector<int64_t>{2, 5}));  // 16/3 truncates
  EXPECT_EQ(run1(make_node("ReduceProd", 1, {attr_i("keepdims", 0)}), 11, {x}).to_int64_vector(),
            (std::vector<int64_t>{840}));
  const Tensor xi = i32({3}, {-5, 3, -9});
  EXPECT_EQ(run1(make_node("ReduceMax", 1), 13, {xi}).to_int64_vector(), (std::vector<int64_t>{3}));
  EXPECT_EQ(run1(make_node("ReduceMin", 1), 13, {xi}).to_int64_vector(),
            (std::vector<int64_t>{-9}));
  const Tensor b = boolean({3}, {false, true, false});
  EXPECT_EQ(run1(make_node("ReduceMax", 1), 20, {b}).to_int64_vector(), (std::vector<int64_t>{1}));
  EXPECT_EQ(run1(make_node("ReduceMin", 1), 20, {b}).to_int64_vector(), (std::vector<int64_t>{0}));
}

TEST(ReduceTest, EmptyReductionGivesIdentityValues) {
  const Tensor x(DataType::kFloat32, {2, 0});
  const auto axes = std::vector<ir::Attribute>{attr_ints("axes", {1}), attr_i("keepdims", 0)};
  EXPECT_EQ(values(run1(make_node("ReduceSum", 1, axes), 13, {x})), (std::vector<float>{0, 0}));
  EXPECT_EQ(values(run1(make_node("ReduceProd", 1, axes), 13, {x})), (std::vector<float>{1, 1}));
  EXPECT_EQ(values(run1(make_node("ReduceMax", 1, axes), 13, {x}))[0], -INFINITY);
  const Tensor e = run1(make_node("ReduceSum", 1, {attr_ints("axes", {0})}), 13, {x});
  EXPECT_EQ(e.shape(), (Shape{1, 0}));
}

TEST(ReduceTest, ErrorsNameTheNode) {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  const ir::Node node = make_node("ReduceSum", 1, {attr_ints("axes", {2})});
  try {
    run1(node, 11, {x});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(node.describe()), std::string::npos);
  }
  EXPECT_THROW(run1(make_node("ReduceSum", 1, {attr_ints("axes", {0, -2})}), 11, {x}), Error);
  EXPECT_THROW(run1(make_node("ReduceLogSum", 1), 13, {i64({1}, {1})}), Error);
}

TEST(ReduceTest, ShapeInference) {
  const auto in = sym({ir::Dim("N"), 3, 4, 5});
  const auto a = infer(make_node("ReduceMean", 1, {attr_ints("axes", {2, 3})}), 13,
                       {InferInput{DataType::kFloat32, in}});
  EXPECT_EQ(*a.shape, sym({ir::Dim("N"), 3, 1, 1}));
  const Tensor axes = i64({1}, {-1});
  const auto b =
      infer(make_node("ReduceSum", 2, {attr_i("keepdims", 0)}), 13,
            {InferInput{DataType::kFloat32, in}, InferInput{DataType::kInt64, sym({1}), &axes}});
  EXPECT_EQ(*b.shape, sym({ir::Dim("N"), 3, 4}));
  // Axes from a non-constant input: rank is kept with keepdims, unknown otherwise.
  const auto c = infer(make_node("ReduceMax", 2), 18,
                       {InferInput{DataType::kFloat32, sym({ir::Dim("N"), 1, 4})},
                        InferInput{DataType::kInt64, sym({1})}});
  ASSERT_TRUE(c.shape.has_value());
  EXPECT_EQ(c.shape->size(), 3u);
  EXPECT_EQ((*c.shape)[1], ir::Dim(1));
  EXPECT_FALSE((*c.shape)[0].is_static());
  const auto d =
      infer(make_node("ReduceMax", 2, {attr_i("keepdims", 0)}), 18,
            {InferInput{DataType::kFloat32, in}, InferInput{DataType::kInt64, sym({1})}});
  EXPECT_FALSE(d.shape.has_value());
  const auto e = infer(make_node("ReduceSum", 1, {attr_i("keepdims", 0)}), 11,
                       {InferInput{DataType::kInt64, in}});
  EXPECT_EQ(e.dtype, DataType::kInt64);
  EXPECT_EQ(*e.shape, sym({}));
  const auto f = infer(make_node("ReduceSum", 2, {attr_i("noop_with_empty_axes", 1)}, {1}), 13,
                       {InferInput{DataType::kFloat32, in}, std::nullopt});
  EXPECT_EQ(*f.shape, in);
}

// ---- softmax family ----------------------------------------------------------------------------
TEST(SoftmaxTest, Opset11CoercesTo2D) {
  const Tensor x = random_f32({2, 3, 4}, 5);
  const Tensor y = run1(make_node("Softmax", 1, {attr_i("axis", 1)}), 11, {x});
  // Each batch's 12 values sum to 1 (softmax over dims 1 and 2 together).
  for (int b = 0; b < 2; ++b) {
    double s = 0, m = -1e9;
    for (int i = 0; i < 12; ++i) m = std::max<double>(m, x.data<float>()[b * 12 + i]);
    for (int i = 0; i < 12; ++i) s += std::exp(x.data<float>()[b * 12 + i] - m);
    double total = 0;
    for (int i = 0; i < 12; ++i) {
      EXPECT_NEAR(y.data<float>()[b * 12 + i], std::exp(x.data<float>()[b * 12 + i] - m) / s, 1e-6);
      total += y.data<float>()[b * 12 + i];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  // Default axis is 1 before opset 13.
  EXPECT_EQ(values(run1(make_node("Softmax", 1), 11, {x})), values(y));
}

TEST(SoftmaxTest, Opset13SingleAxis) {
  const Tensor x = random_f32({2, 3, 4}, 6);
  const Tensor y = run1(make_node("Softmax", 1, {attr_i("axis", 1)}), 13, {x});
  for (int b = 0; b < 2; ++b)
    for (int k = 0; k < 4; ++k) {
      double s = 0;
      for (int c = 0; c < 3; ++c) s += std::exp(x.data<float>()[b * 12 + c * 4 + k]);
      for (int c = 0; c < 3; ++c)
        EXPECT_NEAR(y.data<float>()[b * 12 + c * 4 + k],
                    std::exp(x.data<float>()[b * 12 + c * 4 + k]) / s, 1e-6);
    }
  // Default axis is -1 from opset 13.
  const Tensor d = run1(make_node("Softmax", 1), 13, {x});
  for (int r = 0; r < 6; ++r) {
    double total = 0;
    for (int k = 0; k < 4; ++k) total += d.data<float>()[r * 4 + k];
    EXPECT_NEAR(total, 1.0, 1e-6);
  }
  // Opset 11 with axis=2 (the last) equals opset 13 with axis=-1.
  EXPECT_EQ(values(run1(make_node("Softmax", 1, {attr_i("axis", 2)}), 11, {x})), values(d));
}

TEST(SoftmaxTest, LargeValuesAreStable) {
  const Tensor x = f32({1, 3}, {1000, 1001, 1002});
  const auto y = values(run1(make_node("Softmax", 1), 13, {x}));
  const double e0 = std::exp(-2.0), e1 = std::exp(-1.0), s = e0 + e1 + 1;
  EXPECT_NEAR(y[0], e0 / s, 1e-6);
  EXPECT_NEAR(y[2], 1 / s, 1e-6);
  const auto l = values(run1(make_node("LogSoftmax", 1), 13, {x}));
  EXPECT_NEAR(l[2], -std::log(s), 1e-5);
  const auto h = values(run1(make_node("Hardmax", 1), 13, {f32({2, 3}, {1, 3, 3, 0, -1, -2})}));
  EXPECT_EQ(h, (std::vector<float>{0, 1, 0, 1, 0, 0}));
}

TEST(SoftmaxTest, LargeTensorAndHalf) {
  const Tensor x = random_f32({8, 1000, 50}, 9, -5, 5);
  const Tensor y = run1(make_node("Softmax", 1, {attr_i("axis", 1)}), 13, {x});
  for (int o = 0; o < 8; o += 3)
    for (int j = 0; j < 50; j += 7) {
      double total = 0;
      for (int k = 0; k < 1000; ++k) total += y.data<float>()[(o * 1000 + k) * 50 + j];
      EXPECT_NEAR(total, 1.0, 1e-4);
    }
  Tensor h(DataType::kFloat16, {2, 2});
  for (int i = 0; i < 4; ++i) h.data<half>()[i] = float_to_half(static_cast<float>(i));
  const auto hv = values(run1(make_node("Softmax", 1), 13, {h}));
  EXPECT_NEAR(hv[1], std::exp(1.0) / (1 + std::exp(1.0)), 1e-3);
  EXPECT_THROW(run1(make_node("Softmax", 1), 13, {i64({2}, {1, 2})}), Error);
  EXPECT_THROW(run1(make_node("Softmax", 1, {attr_i("axis", 3)}), 13, {x}), Error);
}

TEST(SoftmaxTest, ShapeInference) {
  const auto s =
      infer(make_node("Softmax", 1), 13, {InferInput{DataType::kFloat32, sym({ir::Dim("N"), 10})}});
  EXPECT_EQ(*s.shape, sym({ir::Dim("N"), 10}));
  EXPECT_THROW(infer(make_node("Softmax", 1, {attr_i("axis", 2)}), 11,
                     {InferInput{DataType::kFloat32, sym({2, 3})}}),
               Error);
}

}  // namespace
}  // namespace trtutils
