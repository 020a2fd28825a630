// QConv / QGemm / QMatMul CPU kernels run directly: the int8 fast path against the float
// reference path, caching (weights changed in place, concurrent runs), the float8 output's
// saturation, and input validation. Island-level comparisons with the unfused Q/DQ graph live in
// tests/passes/qdq_fusion_test.cpp.
#include "backends/cpu/qlinear_kernels.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "backends/cpu/kernel_registry.h"
#include "ir/graph_builder.h"
#include "ops/qlinear_ops.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

using namespace ops::qlinear;

constexpr int64_t kOpset = 19;

Tensor scalar(float v) {
  return Tensor::from_vector<float>(DataType::kFloat32, {}, {v});
}

Tensor random_int8(Shape shape, uint32_t seed, int lo = -128, int hi = 127) {
  Tensor t(DataType::kInt8, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(d(rng));
  return t;
}

Tensor random_floats(Shape shape, uint32_t seed, float scale = 1.0f) {
  Tensor t(DataType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

Tensor per_channel_scale(int64_t n, uint32_t seed) {
  Tensor t(DataType::kFloat32, {n});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(0.001f, 0.01f);
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = d(rng);
  return t;
}

ir::Node qnode(const std::string& op, std::vector<ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = "q";
  n.op_type = op;
  n.domain = kDomain;
  n.outputs = {"y"};
  for (auto& a : attrs) n.attributes[a.name] = a;
  return n;
}

// Inputs by position (kNumInputs slots), all flagged constant except X and R.
struct Args {
  std::vector<Tensor> t = std::vector<Tensor>(kNumInputs);
  std::vector<const Tensor*> ptrs() const {
    std::vector<const Tensor*> p;
    for (const auto& v : t) p.push_back(v.defined() ? &v : nullptr);
    while (!p.empty() && !p.back()) p.pop_back();
    return p;
  }
};

Tensor run(const ir::Node& n, const Args& a, bool reference) {
  ir::Node node = n;
  const auto p = a.ptrs();
  node.inputs.assign(p.size(), "");
  std::vector<bool> constant(p.size(), true);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i]) node.inputs[i] = fmt::format("in{}", i);
    if (i == kX || i == kResidual) constant[i] = false;
  }
  return cpu::run_node(node, kOpset, p, reference, constant)[0];
}

void expect_within_one_step(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    const double a = got.at_double(i), b = want.at_double(i);
    const double tol = got.dtype() == DataType::kFloat32 ? 2e-5 * std::max(1.0, std::abs(b)) : 1.0;
    if (!(std::abs(a - b) <= tol)) {
      ADD_FAILURE() << "element " << i << ": " << a << " vs " << b;
      ++bad;
    }
  }
}

Args conv_args(int64_t n, int64_t c, int64_t m, int64_t hw, int64_t k, bool quantized_out) {
  Args a;
  a.t[kX] = random_int8({n, c, hw, hw}, 1, 0, 127);
  a.t[kXScale] = scalar(0.02f);
  a.t[kW] = random_int8({m, c, k, k}, 2);
  a.t[kWScale] = per_channel_scale(m, 3);
  a.t[kBias] = random_floats({m}, 4);
  if (quantized_out) {
    a.t[kYScale] = scalar(0.05f);
    a.t[kYZeroPoint] = Tensor(DataType::kInt8, {});
  }
  return a;
}

std::vector<ir::Attribute> conv_attrs(int64_t pad) {
  return {ir::attr_ints("pads", {pad, pad, pad, pad}), ir::attr_string("activation", "Relu")};
}

TEST(QlinearKernels, ConvReferencePathEqualsTheQdqDefinition) {
  // Reference path = dequantize, float conv, quantize; checked here against a direct double
  // computation of the definition for a few elements.
  Args a = conv_args(1, 3, 4, 5, 3, true);
  const Tensor y = run(qnode("QConv", conv_attrs(1)), a, true);
  ASSERT_EQ(y.shape(), (Shape{1, 4, 5, 5}));
  const float sx = 0.02f, sy = 0.05f;
  for (int64_t m = 0; m < 4; ++m)
    for (int64_t h = 0; h < 5; ++h)
      for (int64_t w = 0; w < 5; ++w) {
        double acc = a.t[kBias].data<float>()[m];
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw) {
              const int64_t ih = h + kh - 1, iw = w + kw - 1;
              if (ih < 0 || iw < 0 || ih >= 5 || iw >= 5) continue;
              const float xf =
                  static_cast<float>(a.t[kX].data<int8_t>()[(c * 5 + ih) * 5 + iw]) * sx;
              const float wf =
                  static_cast<float>(a.t[kW].data<int8_t>()[((m * 3 + c) * 3 + kh) * 3 + kw]) *
                  a.t[kWScale].data<float>()[m];
              acc += static_cast<double>(xf) * wf;
            }
        const float t = std::max(0.0f, static_cast<float>(acc));
        const float q = std::clamp(std::nearbyint(t / sy), -128.0f, 127.0f);
        EXPECT_EQ(y.data<int8_t>()[(m * 5 + h) * 5 + w], static_cast<int8_t>(q));
      }
}

TEST(QlinearKernels, ConvFastPathMatchesReferenceAndRuns) {
  for (int64_t k : {1, 3})
    for (bool q : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "k " << k << " quantized " << q);
      Args a = conv_args(2, 17, 33, 7, k, q);
      const auto before = cpu::qlinear::onednn_int8_stats();
      const Tensor fast = run(qnode("QConv", conv_attrs(k / 2)), a, false);
      EXPECT_EQ(cpu::qlinear::onednn_int8_stats().runs, before.runs + 1);
      expect_within_one_step(fast, run(qnode("QConv", conv_attrs(k / 2)), a, true));
    }
}

// Non-negative int8 X (post-ReLU activations) runs the int8 oneDNN path on every ISA, for
// every conv shape and epilogue the quantizer produces; a silent fallback would be slow.
TEST(QlinearKernels, FastPathCoversTheCommonIslands) {
  struct Case {
    int64_t c, m, k, stride, group;
    bool quantized, residual, last;
    const char* act;
  };
  const std::vector<Case> cases = {
      {16, 32, 3, 1, 1, true, false, false, "Relu"},
      {16, 32, 1, 1, 1, true, true, false, "Relu"},
      {16, 32, 1, 2, 1, true, false, true, "Relu"},
      {16, 32, 3, 2, 1, false, true, true, ""},
      {16, 16, 3, 1, 16, true, false, true, "Clip"},
      {48, 48, 3, 1, 3, true, true, false, ""},
      {16, 32, 3, 1, 1, true, true, true, "Sigmoid"},
      {16, 32, 3, 1, 1, false, false, false, "HardSwish"},
  };
  {
    // uint8 X with a zero point (values <= 127: the fast path on every ISA).
    SCOPED_TRACE("uint8 with zero point");
    Args a = conv_args(2, 16, 32, 7, 3, true);
    Tensor xu(DataType::kUInt8, a.t[kX].shape());
    for (int64_t i = 0; i < xu.numel(); ++i)
      xu.data<uint8_t>()[i] = static_cast<uint8_t>(a.t[kX].data<int8_t>()[i]);
    a.t[kX] = xu;
    a.t[kXZeroPoint] = Tensor::from_vector<uint8_t>(DataType::kUInt8, {}, {60});
    a.t[kYZeroPoint] = Tensor::from_vector<uint8_t>(DataType::kUInt8, {}, {128});
    const auto before = cpu::qlinear::onednn_int8_stats();
    const Tensor fast = run(qnode("QConv", conv_attrs(1)), a, false);
    EXPECT_EQ(cpu::qlinear::onednn_int8_stats().runs, before.runs + 1);
    expect_within_one_step(fast, run(qnode("QConv", conv_attrs(1)), a, true));
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "c " << c.c << " m " << c.m << " k " << c.k << " s " << c.stride << " g "
                 << c.group << " q " << c.quantized << " res " << c.residual << " last " << c.last
                 << " " << c.act);
    Args a;
    const int64_t hw = 9, out = (hw + 2 * (c.k / 2) - c.k) / c.stride + 1;
    a.t[kX] = random_int8(c.last ? Shape{2, hw, hw, c.c} : Shape{2, c.c, hw, hw}, 1, 0, 127);
    a.t[kXScale] = scalar(0.02f);
    a.t[kW] = random_int8({c.m, c.c / c.group, c.k, c.k}, 2);
    a.t[kWScale] = per_channel_scale(c.m, 3);
    a.t[kBias] = random_floats({c.m}, 4);
    if (c.quantized) {
      a.t[kYScale] = scalar(0.05f);
      a.t[kYZeroPoint] = Tensor(DataType::kInt8, {});
    }
    if (c.residual) {
      a.t[kResidual] = random_int8(c.last ? Shape{2, out, out, c.m} : Shape{2, c.m, out, out}, 5);
      a.t[kRScale] = scalar(0.03f);
    }
    std::vector<ir::Attribute> attrs = {ir::attr_ints("pads", std::vector<int64_t>(4, c.k / 2)),
                                        ir::attr_ints("strides", {c.stride, c.stride}),
                                        ir::attr_int("group", c.group),
                                        ir::attr_int("channels_last", c.last)};
    if (std::string(c.act) == "Clip") {
      attrs.push_back(ir::attr_string("activation", "Clip"));
      attrs.push_back(ir::attr_floats("activation_params", {0.0f, 6.0f}));
    } else if (*c.act) {
      attrs.push_back(ir::attr_string("activation", c.act));
    }
    const auto before = cpu::qlinear::onednn_int8_stats();
    const Tensor fast = run(qnode("QConv", attrs), a, false);
    EXPECT_EQ(cpu::qlinear::onednn_int8_stats().runs, before.runs + 1);
    expect_within_one_step(fast, run(qnode("QConv", attrs), a, true));
  }
}

TEST(QlinearKernels, ChannelsLastMatchesChannelsFirst) {
  for (bool q : {true, false}) {
    Args a = conv_args(2, 8, 12, 6, 3, q);
    a.t[kResidual] = random_int8({2, 12, 6, 6}, 9);
    a.t[kRScale] = scalar(0.03f);
    const Tensor want = run(qnode("QConv", conv_attrs(1)), a, true);
    // NCHW -> NHWC copies of X, R and back for Y.
    auto to_last = [](const Tensor& t) {
      const Shape& s = t.shape();
      Tensor r(t.dtype(), {s[0], s[2], s[3], s[1]});
      const size_t e = dtype_storage_bytes(t.dtype(), 1);
      for (int64_t n = 0; n < s[0]; ++n)
        for (int64_t c = 0; c < s[1]; ++c)
          for (int64_t p = 0; p < s[2] * s[3]; ++p)
            std::memcpy(
                static_cast<uint8_t*>(r.raw()) + ((n * s[2] * s[3] + p) * s[1] + c) * e,
                static_cast<const uint8_t*>(t.raw()) + ((n * s[1] + c) * s[2] * s[3] + p) * e, e);
      return r;
    };
    Args b = a;
    b.t[kX] = to_last(a.t[kX]);
    b.t[kResidual] = to_last(a.t[kResidual]);
    auto attrs = conv_attrs(1);
    attrs.push_back(ir::attr_int("channels_last", 1));
    for (bool reference : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "quantized " << q << " reference " << reference);
      expect_within_one_step(run(qnode("QConv", attrs), b, reference), to_last(want));
    }
  }
}

TEST(QlinearKernels, WeightsChangedInPlaceAreNotServedFromTheCache) {
  Args a = conv_args(1, 8, 8, 5, 3, false);
  const ir::Node n = qnode("QConv", conv_attrs(1));
  const Tensor first = run(n, a, false);
  // Same buffer, new values (every byte, so the sampled check sees it).
  for (int64_t i = 0; i < a.t[kW].numel(); ++i)
    a.t[kW].data<int8_t>()[i] = static_cast<int8_t>(-a.t[kW].data<int8_t>()[i] / 2);
  const Tensor second = run(n, a, false);
  expect_within_one_step(second, run(n, a, true));
  EXPECT_NE(std::memcmp(first.raw(), second.raw(), first.nbytes()), 0);
}

TEST(QlinearKernels, ConcurrentRunsAgree) {
  Args a = conv_args(2, 16, 24, 9, 3, true);
  a.t[kResidual] = random_int8({2, 24, 9, 9}, 7);
  a.t[kRScale] = scalar(0.04f);
  const ir::Node n = qnode("QConv", conv_attrs(1));
  cpu::qlinear::clear_caches();
  const Tensor want = run(n, a, false);
  cpu::qlinear::clear_caches();  // the threads race to build the entry
  std::vector<Tensor> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) got[t] = run(n, a, false);
    });
  for (auto& th : threads) th.join();
  for (const auto& g : got) {
    ASSERT_EQ(g.shape(), want.shape());
    EXPECT_EQ(std::memcmp(g.raw(), want.raw(), g.nbytes()), 0);
  }
}

TEST(QlinearKernels, GemmFp8OutputSaturates) {
  Args a;
  a.t[kX] = Tensor(DataType::kFloat8E4M3FN, {2, 4});
  for (int64_t i = 0; i < 8; ++i)
    a.t[kX].data<float8_e4m3fn>()[i] = float_to_e4m3fn(i < 4 ? 96.0f : -96.0f);
  a.t[kXScale] = scalar(1.0f);
  a.t[kW] = Tensor(DataType::kFloat8E4M3FN, {4, 3});
  for (int64_t i = 0; i < 12; ++i) a.t[kW].data<float8_e4m3fn>()[i] = float_to_e4m3fn(10.0f);
  a.t[kWScale] = scalar(1.0f);
  a.t[kYScale] = scalar(1.0f);
  a.t[kYZeroPoint] = Tensor(DataType::kFloat8E4M3FN, {});
  for (bool reference : {false, true}) {
    const Tensor y = run(qnode("QGemm"), a, reference);
    ASSERT_EQ(y.shape(), (Shape{2, 3}));
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_EQ(e4m3fn_to_float(y.data<float8_e4m3fn>()[i]), i < 3 ? 448.0f : -448.0f);  // 3840
  }
}

TEST(QlinearKernels, GemmUint8AboveSevenBitsMatchesReference) {
  // uint8 values up to 255 with a zero point: exact on VNNI, the float path elsewhere.
  for (bool q : {true, false}) {
    Args a;
    a.t[kX] = Tensor(DataType::kUInt8, {9, 70});
    std::mt19937 rng(5);
    for (int64_t i = 0; i < a.t[kX].numel(); ++i)
      a.t[kX].data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 256);
    a.t[kXScale] = scalar(0.01f);
    a.t[kXZeroPoint] = Tensor::from_vector<uint8_t>(DataType::kUInt8, {}, {128});
    a.t[kW] = random_int8({21, 70}, 6, -127, 127);
    a.t[kWScale] = per_channel_scale(21, 7);
    if (q) {
      a.t[kYScale] = scalar(0.01f);
      a.t[kYZeroPoint] = Tensor::from_vector<uint8_t>(DataType::kUInt8, {}, {100});
    }
    const ir::Node n = qnode("QGemm", {ir::attr_int("transB", 1)});
    expect_within_one_step(run(n, a, false), run(n, a, true));
  }
}

TEST(QlinearKernels, MatMulBroadcastBatch) {
  Args a;
  a.t[kX] = random_int8({3, 1, 5, 16}, 1);
  a.t[kXScale] = scalar(0.1f);
  a.t[kW] = random_int8({2, 16, 7}, 2);
  a.t[kWScale] = scalar(0.1f);
  const ir::Node n = qnode("QMatMul");
  const Tensor y = run(n, a, false);
  EXPECT_EQ(y.shape(), (Shape{3, 2, 5, 7}));
  expect_within_one_step(y, run(n, a, true));
}

TEST(QlinearKernels, BadInputsThrowNamingTheNode) {
  Args a = conv_args(1, 4, 4, 5, 3, true);
  const ir::Node n = qnode("QConv", conv_attrs(1));
  auto expect_code = [&](Args bad, ErrorCode code) {
    try {
      run(n, bad, false);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find("QConv 'q'"), std::string::npos) << e.what();
    }
  };
  Args b = a;
  b.t[kXScale] = Tensor(DataType::kFloat32, {2});
  expect_code(b, ErrorCode::kInvalidArgument);
  b = a;
  b.t[kYZeroPoint] = Tensor();
  expect_code(b, ErrorCode::kInvalidArgument);
  b = a;
  b.t[kWScale] = Tensor(DataType::kFloat32, {3});
  expect_code(b, ErrorCode::kInvalidArgument);
  b = a;
  b.t[kResidual] = Tensor(DataType::kFloat32, {1, 4, 4, 4});
  expect_code(b, ErrorCode::kInvalidArgument);
  b = a;
  b.t[kX] = Tensor(DataType::kInt16, {1, 4, 5, 5});
  expect_code(b, ErrorCode::kNotSupported);
  b = a;
  b.t[kBias] = Tensor(DataType::kFloat32, {5});
  expect_code(b, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace trtutils

namespace trtutils {
namespace {

// Issue 29: Debian's oneDNN 2.6 brgconv (avx512_core_vnni) returned wrong values for 3x3 pad-1
// int8 convolutions with 1792-2048 input channels on 15x15 maps and larger (fcn_resnet50's
// head; see skip_faulty_brgconv). The fast path must match the reference there, signed and
// non-negative X.
TEST(QlinearKernels, WideInputChannelConvMatchesReference) {
  for (int64_t hw : {20, 28})
    for (int lo : {-128, 0}) {
      SCOPED_TRACE(::testing::Message() << "hw " << hw << " x from " << lo);
      Args a = conv_args(1, 2048, 64, hw, 3, false);
      a.t[kX] = random_int8({1, 2048, hw, hw}, 1, lo, 127);
      const auto attrs = conv_attrs(1);
      expect_within_one_step(run(qnode("QConv", attrs), a, false),
                             run(qnode("QConv", attrs), a, true));
    }
}

}  // namespace
}  // namespace trtutils
