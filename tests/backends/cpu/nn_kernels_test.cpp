// CPU kernels of the nn op family: the oneDNN fast paths against the plain reference kernels
// at tile-edge sizes, plus hand-computed known values and error cases.
#include "backends/cpu/nn_kernels.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "backends/cpu/kernel_registry.h"
#include "ir/graph_builder.h"
#include "trtutils/status.h"

namespace trtutils::cpu {
namespace {

// Fast path vs reference: max |fast - ref| <= kFp32Tol * max(1, max |ref|).
constexpr double kFp32Tol = 1e-4;
// Known values computed by hand (exact in float32 up to rounding).
constexpr double kExactTol = 1e-5;

ir::Attribute ints_attr(const std::string& name, std::vector<int64_t> v) {
  return ir::attr_ints(name, v);
}
ir::Attribute int_attr(const std::string& name, int64_t v) {
  return ir::attr_int(name, v);
}
ir::Attribute float_attr(const std::string& name, float v) {
  return ir::attr_float(name, v);
}
ir::Attribute str_attr(const std::string& name, std::string v) {
  return ir::attr_string(name, v);
}

ir::Node make_node(const std::string& op, size_t n_inputs, std::vector<ir::Attribute> attrs = {},
                   size_t n_outputs = 1) {
  ir::Node n;
  n.op_type = op;
  n.name = fmt::format("test_{}", op);
  for (size_t i = 0; i < n_inputs; ++i) n.inputs.push_back(fmt::format("in{}", i));
  for (size_t i = 0; i < n_outputs; ++i) n.outputs.push_back(fmt::format("out{}", i));
  for (auto& a : attrs) n.attributes[a.name] = a;
  return n;
}

Tensor random_tensor(Shape shape, uint32_t seed, DataType dt = DataType::kFloat32) {
  Tensor t(dt, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = dist(rng);
    if (dt == DataType::kFloat32)
      t.data<float>()[i] = v;
    else if (dt == DataType::kFloat64)
      t.data<double>()[i] = v;
    else
      t.data<half>()[i] = float_to_half(v);
  }
  return t;
}

Tensor f32(Shape shape, std::vector<float> v) {
  return Tensor::from_vector(DataType::kFloat32, std::move(shape), v);
}

std::vector<Tensor> run(const ir::Node& node, const std::vector<const Tensor*>& inputs,
                        bool reference, int64_t opset = 17) {
  return run_node(node, opset, inputs, reference);
}

// Max |a - b| relative to max(1, max |b|), over all elements (as double).
double rel_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return 1e9;
  double max_ref = 1, max_diff = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    max_ref = std::max(max_ref, std::abs(b.at_double(i)));
    const double d = std::abs(a.at_double(i) - b.at_double(i));
    max_diff = std::isnan(d) ? 1e9 : std::max(max_diff, d);
  }
  return max_diff / max_ref;
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = kExactTol) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i)
    EXPECT_NEAR(t.at_double(i), want[i], tol * std::max(1.0, std::abs(want[i]))) << "at " << i;
}

// oneDNN fast-path runs so far for the kernel family of `op`.
int64_t fast_runs(const std::string& op) {
  const nn::FastPathStats s = nn::onednn_stats();
  return (op == "Conv" || op == "ConvTranspose") ? s.conv_runs : s.matmul_runs;
}

// Runs `node` on `inputs` with the fast path and the reference and compares; also checks that
// the fast path really ran (rather than silently falling back to the reference).
void expect_fast_matches_reference(const ir::Node& node, const std::vector<const Tensor*>& inputs,
                                   const std::string& what, bool expect_onednn = true) {
  const int64_t before = fast_runs(node.op_type);
  const auto fast = run(node, inputs, false);
  if (expect_onednn) {
    EXPECT_EQ(fast_runs(node.op_type), before + 1) << what << ": no oneDNN run";
  }
  const auto ref = run(node, inputs, true);
  ASSERT_EQ(fast.size(), ref.size());
  for (size_t i = 0; i < fast.size(); ++i)
    EXPECT_LE(rel_error(fast[i], ref[i]), kFp32Tol) << what << " output " << i;
}

// ---- Conv ----------------------------------------------------------------------------------

struct ConvCase {
  int64_t n, c, m, h, w, k, stride, dilation, group;
  std::vector<int64_t> pads;  // 4 values
  bool bias;
};

std::string describe(const ConvCase& t) {
  return fmt::format("n{} c{} m{} {}x{} k{} s{} d{} g{} pads {}{}", t.n, t.c, t.m, t.h, t.w, t.k,
                     t.stride, t.dilation, t.group, shape_str(t.pads), t.bias ? " bias" : "");
}

TEST(NnKernelsConv, FastMatchesReferenceAtTileEdges) {
  std::vector<ConvCase> cases = {
      {1, 1, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, false},
      {1, 3, 16, 7, 7, 3, 1, 1, 1, {1, 1, 1, 1}, true},
      {3, 3, 13, 9, 8, 3, 2, 1, 1, {1, 1, 1, 1}, true},
      {1, 13, 24, 8, 9, 3, 1, 1, 1, {0, 1, 2, 0}, false},
      {3, 16, 16, 8, 8, 1, 1, 1, 1, {0, 0, 0, 0}, true},
      {1, 16, 33, 9, 9, 1, 2, 1, 1, {0, 0, 0, 0}, true},
      {1, 24, 16, 7, 7, 3, 1, 2, 1, {2, 2, 2, 2}, true},
      {3, 33, 24, 9, 7, 5, 2, 1, 1, {2, 1, 2, 1}, true},
      {1, 16, 16, 8, 8, 3, 1, 1, 16, {1, 1, 1, 1}, true},   // depthwise
      {3, 24, 24, 9, 9, 3, 2, 1, 24, {1, 1, 1, 1}, false},  // depthwise, stride 2
      {1, 13, 26, 7, 9, 3, 1, 2, 13, {2, 2, 2, 2}, true},   // depthwise multiplier 2, dilated
      {1, 16, 24, 8, 8, 3, 1, 1, 4, {1, 1, 1, 1}, true},    // groups
      {3, 24, 33, 9, 8, 3, 2, 1, 3, {0, 1, 1, 0}, true},    // groups, asymmetric pads
      {1, 3, 16, 9, 9, 7, 2, 1, 1, {3, 3, 3, 3}, true},     // stem-like
      {1, 64, 64, 7, 7, 3, 1, 1, 1, {1, 1, 1, 1}, true},
      {1, 16, 8, 1, 9, 1, 1, 1, 1, {0, 0, 0, 0}, true},  // H = 1
  };
  uint32_t seed = 1;
  for (const auto& t : cases) {
    const Tensor x = random_tensor({t.n, t.c, t.h, t.w}, seed++);
    const Tensor w = random_tensor({t.m, t.c / t.group, t.k, t.k}, seed++);
    const Tensor b = random_tensor({t.m}, seed++);
    auto node = make_node("Conv", t.bias ? 3 : 2,
                          {ints_attr("strides", {t.stride, t.stride}),
                           ints_attr("dilations", {t.dilation, t.dilation}),
                           ints_attr("pads", t.pads), int_attr("group", t.group)});
    std::vector<const Tensor*> in{&x, &w};
    if (t.bias) in.push_back(&b);
    expect_fast_matches_reference(node, in, describe(t));
    // Second call hits the primitive / weights cache.
    expect_fast_matches_reference(node, in, fmt::format("{} (cached)", describe(t)));
  }
}

TEST(NnKernelsConv, OneAndThreeDAndAutoPad) {
  const Tensor x1 = random_tensor({3, 13, 9}, 11), w1 = random_tensor({16, 13, 3}, 12);
  expect_fast_matches_reference(
      make_node("Conv", 2, {ints_attr("pads", {1, 2}), ints_attr("strides", {2})}), {&x1, &w1},
      "conv1d");
  const Tensor x3 = random_tensor({1, 3, 7, 8, 9}, 13), w3 = random_tensor({16, 3, 3, 3, 3}, 14);
  const Tensor b3 = random_tensor({16}, 15);
  expect_fast_matches_reference(make_node("Conv", 3, {ints_attr("pads", {1, 1, 1, 0, 1, 2})}),
                                {&x3, &w3, &b3}, "conv3d");
  // Strided pointwise (subsampled, then a batched matmul).
  const Tensor w31 = random_tensor({16, 3, 1, 1, 1}, 18);
  expect_fast_matches_reference(make_node("Conv", 3, {ints_attr("strides", {1, 2, 3})}),
                                {&x3, &w31, &b3}, "conv3d pointwise strided");
  const Tensor x = random_tensor({1, 8, 9, 8}, 16), w = random_tensor({8, 8, 3, 3}, 17);
  for (const char* ap : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    expect_fast_matches_reference(
        make_node("Conv", 2, {str_attr("auto_pad", ap), ints_attr("strides", {2, 2})}), {&x, &w},
        ap);
  }
  // SAME_UPPER vs SAME_LOWER put the odd padding on different sides.
  const auto up =
      run(make_node("Conv", 2, {str_attr("auto_pad", "SAME_UPPER"), ints_attr("strides", {2, 2})}),
          {&x, &w}, true);
  const auto lo =
      run(make_node("Conv", 2, {str_attr("auto_pad", "SAME_LOWER"), ints_attr("strides", {2, 2})}),
          {&x, &w}, true);
  EXPECT_EQ(up[0].shape(), (Shape{1, 8, 5, 4}));
  EXPECT_GT(rel_error(up[0], lo[0]), 1e-3);
}

TEST(NnKernelsConv, KnownValues) {
  // ONNX's basic conv example: 5x5 ramp, 3x3 ones.
  std::vector<float> ramp(25);
  for (int i = 0; i < 25; ++i) ramp[i] = static_cast<float>(i);
  const Tensor x = f32({1, 1, 5, 5}, ramp);
  const Tensor w = f32({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  for (bool ref : {false, true}) {
    auto y = run(make_node("Conv", 2), {&x, &w}, ref);
    EXPECT_EQ(y[0].shape(), (Shape{1, 1, 3, 3}));
    expect_values(y[0], {54, 63, 72, 99, 108, 117, 144, 153, 162});
    y = run(make_node("Conv", 2, {ints_attr("pads", {1, 1, 1, 1}), ints_attr("strides", {2, 2})}),
            {&x, &w}, ref);
    expect_values(y[0], {12, 27, 24, 63, 108, 81, 72, 117, 84});
  }
  // Bias and two groups: y[g] = sum of group g's channel * weight + bias.
  const Tensor x2 = f32({1, 2, 1, 1}, {2, 3});
  const Tensor w2 = f32({2, 1, 1, 1}, {10, 100});
  const Tensor b2 = f32({2}, {1, -1});
  for (bool ref : {false, true}) {
    auto y = run(make_node("Conv", 3, {int_attr("group", 2)}), {&x2, &w2, &b2}, ref);
    expect_values(y[0], {21, 299});
  }
}

TEST(NnKernelsConv, Float16AndFloat64UseTheReference) {
  const Tensor x = random_tensor({2, 4, 7, 7}, 21), w = random_tensor({6, 4, 3, 3}, 22);
  const Tensor xh = random_tensor({2, 4, 7, 7}, 21, DataType::kFloat16);
  const Tensor wh = random_tensor({6, 4, 3, 3}, 22, DataType::kFloat16);
  const Tensor xd = random_tensor({2, 4, 7, 7}, 21, DataType::kFloat64);
  const Tensor wd = random_tensor({6, 4, 3, 3}, 22, DataType::kFloat64);
  auto node = make_node("Conv", 2, {ints_attr("pads", {1, 1, 1, 1})});
  const auto y = run(node, {&x, &w}, false);
  const auto yh = run(node, {&xh, &wh}, false);
  const auto yd = run(node, {&xd, &wd}, false);
  EXPECT_EQ(yh[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(yd[0].dtype(), DataType::kFloat64);
  EXPECT_LE(rel_error(yh[0], y[0]), 1e-2);  // inputs rounded to fp16
  EXPECT_LE(rel_error(yd[0], y[0]), kFp32Tol);
}

TEST(NnKernelsConv, Errors) {
  const Tensor x = random_tensor({1, 4, 5, 5}, 1), w = random_tensor({8, 3, 3, 3}, 2);
  try {
    run(make_node("Conv", 2), {&x, &w}, false);
    FAIL() << "channel mismatch accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("test_Conv"), std::string::npos) << e.what();
  }
  const Tensor xi(DataType::kInt32, {1, 3, 5, 5}), wi(DataType::kInt32, {8, 3, 3, 3});
  try {
    run(make_node("Conv", 2), {&xi, &wi}, false);
    FAIL() << "int32 conv accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
  }
}

TEST(NnKernelsConv, WeightsCacheSeesNewValuesInTheSameBuffer) {
  const Tensor x = random_tensor({1, 16, 8, 8}, 31);
  Tensor w = random_tensor({16, 16, 3, 3}, 32);
  auto node = make_node("Conv", 2, {ints_attr("pads", {1, 1, 1, 1})});
  (void)run(node, {&x, &w}, false);
  // Mutate in place (not done by the executor, but must not give stale results).
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] *= -2.0f;
  expect_fast_matches_reference(node, {&x, &w}, "mutated weights");
  nn::onednn_clear_caches();
  expect_fast_matches_reference(node, {&x, &w}, "after clearing the caches");
}

TEST(NnKernelsConv, EmptyBatchAndConcurrentCalls) {
  const Tensor x0(DataType::kFloat32, {0, 4, 5, 5});
  const Tensor w = random_tensor({8, 4, 3, 3}, 41);
  auto y = run(make_node("Conv", 2), {&x0, &w}, false);
  EXPECT_EQ(y[0].shape(), (Shape{0, 8, 3, 3}));
  // Two threads share the cached primitive and weights; each has its own scratch buffers.
  const Tensor x = random_tensor({3, 4, 9, 9}, 42);
  auto node = make_node("Conv", 2, {ints_attr("pads", {1, 1, 1, 1})});
  const Tensor want = run(node, {&x, &w}, true)[0];
  std::vector<double> err(2, 1e9);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      double worst = 0;
      for (int i = 0; i < 20; ++i)
        worst = std::max(worst, rel_error(run(node, {&x, &w}, false)[0], want));
      err[t] = worst;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(err[0], kFp32Tol);
  EXPECT_LE(err[1], kFp32Tol);
}

TEST(NnKernelsConvTranspose, OneAndThreeD) {
  const Tensor x1 = random_tensor({3, 13, 9}, 51), w1 = random_tensor({13, 8, 4}, 52);
  expect_fast_matches_reference(make_node("ConvTranspose", 2,
                                          {ints_attr("strides", {2}), ints_attr("pads", {1, 2}),
                                           ints_attr("output_padding", {1})}),
                                {&x1, &w1}, "convtranspose1d");
  const Tensor x3 = random_tensor({1, 4, 3, 4, 5}, 53), w3 = random_tensor({4, 6, 3, 3, 3}, 54);
  const Tensor b3 = random_tensor({6}, 55);
  expect_fast_matches_reference(make_node("ConvTranspose", 3, {ints_attr("strides", {1, 2, 2})}),
                                {&x3, &w3, &b3}, "convtranspose3d");
}

// ---- ConvTranspose -------------------------------------------------------------------------

TEST(NnKernelsConvTranspose, FastMatchesReference) {
  struct Case {
    int64_t n, c, m, h, w, k, stride, dilation, group;
    std::vector<int64_t> pads, output_padding;
  };
  std::vector<Case> cases = {
      {1, 1, 2, 3, 3, 3, 1, 1, 1, {0, 0, 0, 0}, {0, 0}},
      {3, 13, 16, 7, 8, 3, 2, 1, 1, {1, 1, 1, 1}, {1, 1}},
      {1, 16, 24, 8, 8, 4, 2, 1, 1, {1, 1, 1, 1}, {0, 0}},
      {1, 24, 24, 9, 7, 3, 2, 1, 3, {1, 0, 0, 1}, {0, 1}},
      {1, 16, 16, 7, 7, 3, 1, 2, 16, {2, 2, 2, 2}, {0, 0}},
      {1, 3, 33, 1, 9, 3, 3, 1, 1, {0, 1, 0, 1}, {2, 2}},
  };
  uint32_t seed = 100;
  for (const auto& t : cases) {
    const Tensor x = random_tensor({t.n, t.c, t.h, t.w}, seed++);
    const Tensor w = random_tensor({t.c, t.m / t.group, t.k, t.k}, seed++);
    const Tensor b = random_tensor({t.m}, seed++);
    auto node =
        make_node("ConvTranspose", 3,
                  {ints_attr("strides", {t.stride, t.stride}),
                   ints_attr("dilations", {t.dilation, t.dilation}), ints_attr("pads", t.pads),
                   int_attr("group", t.group), ints_attr("output_padding", t.output_padding)});
    expect_fast_matches_reference(node, {&x, &w, &b},
                                  fmt::format("convtranspose c{} m{} g{}", t.c, t.m, t.group));
  }
}

TEST(NnKernelsConvTranspose, KnownValues) {
  // ONNX's 1-D example: x = [0, 1, 2], w = ones(1, 2, 3) -> [0, 1, 3, 3, 2] per channel.
  const Tensor x = f32({1, 1, 3}, {0, 1, 2});
  const Tensor w = f32({1, 2, 3}, std::vector<float>(6, 1.0f));
  for (bool ref : {false, true}) {
    auto y = run(make_node("ConvTranspose", 2), {&x, &w}, ref);
    EXPECT_EQ(y[0].shape(), (Shape{1, 2, 5}));
    expect_values(y[0], {0, 1, 3, 3, 2, 0, 1, 3, 3, 2});
    // Stride 2 with output_shape 8: natural size 7, one extra column from the padding split.
    y = run(
        make_node("ConvTranspose", 2, {ints_attr("strides", {2}), ints_attr("output_shape", {8})}),
        {&x, &w}, ref);
    EXPECT_EQ(y[0].shape(), (Shape{1, 2, 8}));
  }
}

// ---- Gemm / MatMul -------------------------------------------------------------------------

TEST(NnKernelsGemm, FastMatchesReference) {
  const int64_t m = 13, k = 33, n = 24;
  uint32_t seed = 200;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      const Tensor a = random_tensor(ta ? Shape{k, m} : Shape{m, k}, seed++);
      const Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, seed++);
      for (const Shape& cs : {Shape{}, Shape{1}, Shape{n}, Shape{m, 1}, Shape{m, n}, Shape{1, n}}) {
        const Tensor c = random_tensor(cs, seed++);
        for (float beta : {1.0f, 0.5f, 0.0f}) {
          auto node = make_node("Gemm", 3,
                                {int_attr("transA", ta), int_attr("transB", tb),
                                 float_attr("alpha", 0.75f), float_attr("beta", beta)});
          expect_fast_matches_reference(node, {&a, &b, &c},
                                        fmt::format("gemm ta{} tb{} C{}", ta, tb, shape_str(cs)));
        }
      }
      auto node = make_node("Gemm", 2, {int_attr("transA", ta), int_attr("transB", tb)});
      expect_fast_matches_reference(node, {&a, &b}, "gemm without C");
    }
  }
  // ResNet-50 classifier shape.
  const Tensor a = random_tensor({8, 2048}, 300), b = random_tensor({1000, 2048}, 301);
  const Tensor c = random_tensor({1000}, 302);
  expect_fast_matches_reference(make_node("Gemm", 3, {int_attr("transB", 1)}), {&a, &b, &c},
                                "fc 8x2048x1000");
}

TEST(NnKernelsGemm, KnownValues) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  const Tensor c = f32({2}, {10, 20});
  for (bool ref : {false, true}) {
    auto y = run(make_node("Gemm", 3, {float_attr("alpha", 2.0f), float_attr("beta", 0.5f)}),
                 {&a, &b, &c}, ref);
    expect_values(y[0], {2 * 4 + 5, 2 * 5 + 10, 2 * 10 + 5, 2 * 11 + 10});
  }
}

TEST(NnKernelsMatMul, FastMatchesReferenceWithBroadcast) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{13, 33}, {33, 24}},
      {{3, 13, 16}, {16, 9}},
      {{9}, {9, 7}},
      {{8, 9}, {9}},
      {{33}, {33}},
      {{2, 1, 7, 8}, {3, 8, 9}},
      {{1, 3, 7, 8}, {2, 1, 8, 9}},
      {{3, 1, 16}, {3, 16, 1}},
      {{2, 3, 4, 5, 6}, {6, 7}},
      {{37, 1, 24}, {1, 24, 40}},  // B's batch dims all 1: A's fold into its rows (ViT's QKV)
      {{5, 1, 7}, {1, 1, 7, 3}},
  };
  uint32_t seed = 400;
  for (const auto& [as, bs] : cases) {
    const Tensor a = random_tensor(as, seed++), b = random_tensor(bs, seed++);
    expect_fast_matches_reference(make_node("MatMul", 2), {&a, &b},
                                  fmt::format("matmul {} x {}", shape_str(as), shape_str(bs)));
  }
}

TEST(NnKernelsMatMul, KnownValuesAndIntegers) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2}, {1, 1});
  for (bool ref : {false, true}) {
    auto y = run(make_node("MatMul", 2), {&a, &b}, ref);
    EXPECT_EQ(y[0].shape(), (Shape{2}));
    expect_values(y[0], {3, 7});
  }
  const Tensor ai = Tensor::from_vector(DataType::kInt64, {1, 2}, std::vector<int64_t>{3, -4});
  const Tensor bi = Tensor::from_vector(DataType::kInt64, {2, 1}, std::vector<int64_t>{5, 6});
  auto y = run(make_node("MatMul", 2), {&ai, &bi}, false);
  EXPECT_EQ(y[0].dtype(), DataType::kInt64);
  EXPECT_EQ(y[0].data<int64_t>()[0], -9);
}

// ---- Pools -----------------------------------------------------------------------------------

TEST(NnKernelsPool, MaxPoolKnownValuesAndIndices) {
  std::vector<float> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[i] = static_cast<float>(i);
  const Tensor x = f32({1, 1, 4, 4}, ramp);
  auto node =
      make_node("MaxPool", 1, {ints_attr("kernel_shape", {2, 2}), ints_attr("strides", {2, 2})}, 2);
  auto y = run(node, {&x}, true);
  expect_values(y[0], {5, 7, 13, 15});
  EXPECT_EQ(y[1].to_int64_vector(), (std::vector<int64_t>{5, 7, 13, 15}));
  node.attributes["storage_order"] = int_attr("storage_order", 1);
  y = run(node, {&x}, true);
  EXPECT_EQ(y[1].to_int64_vector(), (std::vector<int64_t>{5, 13, 7, 15}));
  // 3x3 stride 2 pad 1, ceil_mode, dilation.
  y = run(make_node("MaxPool", 1,
                    {ints_attr("kernel_shape", {3, 3}), ints_attr("strides", {2, 2}),
                     ints_attr("pads", {1, 1, 1, 1})}),
          {&x}, true);
  expect_values(y[0], {5, 7, 13, 15});
  y = run(
      make_node("MaxPool", 1, {ints_attr("kernel_shape", {2, 2}), ints_attr("dilations", {2, 2})}),
      {&x}, true);
  expect_values(y[0], {10, 11, 14, 15});
  y = run(make_node("MaxPool", 1,
                    {ints_attr("kernel_shape", {3, 3}), ints_attr("strides", {2, 2}),
                     int_attr("ceil_mode", 1)}),
          {&x}, true);
  expect_values(y[0], {10, 11, 14, 15});
  // uint8
  const Tensor xu =
      Tensor::from_vector(DataType::kUInt8, {1, 1, 1, 4}, std::vector<uint8_t>{1, 200, 3, 4});
  y = run(
      make_node("MaxPool", 1, {ints_attr("kernel_shape", {1, 2}), ints_attr("strides", {1, 2})}),
      {&xu}, true);
  EXPECT_EQ(y[0].dtype(), DataType::kUInt8);
  EXPECT_EQ(y[0].data<uint8_t>()[0], 200);
  EXPECT_EQ(y[0].data<uint8_t>()[1], 4);
}

TEST(NnKernelsPool, MaxPoolWithAndWithoutIndicesAgree) {
  // The no-indices path folds taps row-wise; the indices path walks windows. Both must agree.
  struct Case {
    Shape x;
    std::vector<int64_t> k, s, d, pads;
    int64_t ceil;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0},
      {{1, 13, 7, 7}, {2, 3}, {1, 2}, {2, 1}, {0, 1, 1, 0}, 1},
      {{1, 2, 8, 9}, {3, 2}, {3, 3}, {1, 2}, {1, 0, 2, 1}, 1},
      {{3, 4, 1, 9}, {1, 4}, {1, 1}, {1, 1}, {0, 2, 0, 1}, 0},
  };
  uint32_t seed = 700;
  for (const auto& c : cases) {
    const Tensor x = random_tensor(c.x, seed++);
    auto node = make_node(
        "MaxPool", 1,
        {ints_attr("kernel_shape", c.k), ints_attr("strides", c.s), ints_attr("dilations", c.d),
         ints_attr("pads", c.pads), int_attr("ceil_mode", c.ceil)},
        2);
    const auto with = run(node, {&x}, false);
    node.outputs.resize(1);
    const auto without = run(node, {&x}, false);
    EXPECT_EQ(rel_error(without[0], with[0]), 0.0) << shape_str(c.x);
    // The indices point at the maxima.
    for (int64_t i = 0; i < with[1].numel(); ++i)
      EXPECT_EQ(x.data<float>()[with[1].data<int64_t>()[i]], with[0].data<float>()[i]);
  }
}

TEST(NnKernelsPool, AveragePoolPadding) {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  auto node = make_node("AveragePool", 1,
                        {ints_attr("kernel_shape", {2, 2}), ints_attr("pads", {1, 1, 1, 1}),
                         ints_attr("strides", {2, 2})});
  auto y = run(node, {&x}, true);
  expect_values(y[0], {1, 2, 3, 4});  // each window holds one real value
  node.attributes["count_include_pad"] = int_attr("count_include_pad", 1);
  y = run(node, {&x}, true);
  expect_values(y[0], {0.25, 0.5, 0.75, 1.0});
  const Tensor x3 = random_tensor({2, 3, 5, 6, 7}, 500);
  y = run(make_node("AveragePool", 1,
                    {ints_attr("kernel_shape", {2, 3, 2}), str_attr("auto_pad", "SAME_UPPER")}),
          {&x3}, true);
  EXPECT_EQ(y[0].shape(), (Shape{2, 3, 5, 6, 7}));
}

TEST(NnKernelsPool, GlobalPools) {
  const Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -4});
  auto y = run(make_node("GlobalAveragePool", 1), {&x}, true);
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 1, 1}));
  expect_values(y[0], {2.5, -2.5});
  y = run(make_node("GlobalMaxPool", 1), {&x}, true);
  expect_values(y[0], {4, -1});
}

// ---- Normalisation ---------------------------------------------------------------------------

TEST(NnKernelsNorm, BatchNormalization) {
  const Tensor x = f32({1, 2, 1, 2}, {1, 2, 3, 4});
  const Tensor s = f32({2}, {1, 2}), b = f32({2}, {0, 1}), mean = f32({2}, {1, 3}),
               var = f32({2}, {4, 1});
  auto node = make_node("BatchNormalization", 5, {float_attr("epsilon", 0.0f)});
  auto y = run(node, {&x, &s, &b, &mean, &var}, false);
  expect_values(y[0], {0, 0.5, 1, 3});
  node.attributes["training_mode"] = int_attr("training_mode", 1);
  try {
    run(node, {&x, &s, &b, &mean, &var}, false);
    FAIL() << "training mode accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
  }
}

TEST(NnKernelsNorm, InstanceNormalization) {
  const Tensor x = f32({1, 2, 3}, {1, 2, 3, 10, 10, 10});
  const Tensor s = f32({2}, {2, 1}), b = f32({2}, {1, 5});
  auto y = run(make_node("InstanceNormalization", 3, {float_attr("epsilon", 1e-12f)}), {&x, &s, &b},
               false);
  const double r = std::sqrt(1.5);
  expect_values(y[0], {1 - 2 * r, 1, 1 + 2 * r, 5, 5, 5});
}

TEST(NnKernelsNorm, LayerNormalizationWithStatistics) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 2, 2, 2});
  const Tensor s = f32({3}, {1, 1, 2}), b = f32({3}, {0, 0, 1});
  auto y = run(make_node("LayerNormalization", 3, {float_attr("epsilon", 1e-12f)}, 3), {&x, &s, &b},
               false);
  const double inv = 1 / std::sqrt(2.0 / 3.0);
  expect_values(y[0], {-inv, 0, 2 * inv + 1, 0, 0, 1});
  EXPECT_EQ(y[1].shape(), (Shape{2, 1}));
  expect_values(y[1], {2, 2});
  EXPECT_NEAR(y[2].at_double(0), inv, 1e-5);
  // axis 0 over a 3-D input with a broadcast scale; fp16 input.
  const Tensor xh = random_tensor({2, 3, 4}, 600, DataType::kFloat16);
  const Tensor sh = random_tensor({4}, 601, DataType::kFloat16);
  y = run(make_node("LayerNormalization", 2, {int_attr("axis", 0)}), {&xh, &sh}, false);
  EXPECT_EQ(y[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(y[0].shape(), (Shape{2, 3, 4}));
}

// The oneDNN fast path (float32, Y only) against the reference: with and without B, over the
// last axis and the last two.
TEST(NnKernelsNorm, LayerNormalizationFastPathMatchesTheReference) {
  const Tensor x = random_tensor({5, 37, 64}, 610);
  for (int64_t axis : {-1, -2})
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "axis " << axis << " bias " << with_bias);
      const Shape ps = axis == -1 ? Shape{64} : Shape{37, 64};
      const Tensor s = random_tensor(ps, 611), b = random_tensor(ps, 612);
      std::vector<const Tensor*> in{&x, &s};
      if (with_bias) in.push_back(&b);
      const ir::Node node = make_node("LayerNormalization", in.size(),
                                      {int_attr("axis", axis), float_attr("epsilon", 1e-5f)});
      EXPECT_LT(rel_error(run(node, in, false)[0], run(node, in, true)[0]), 1e-5);
    }
}

}  // namespace
}  // namespace trtutils::cpu
