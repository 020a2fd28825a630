// qdq_fusion pass: Q/DQ islands fuse into QConv / QGemm / QMatMul (and DQ -> MaxPool -> Q into
// an int8 MaxPool), the fused graph computes what the Q/DQ graph computes (within one
// quantization step for quantized outputs, kFloatTol for float ones) on the fast paths and on
// the reference, and nothing fuses when a fused-away value is read elsewhere or a variant is
// unsupported.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/qlinear_kernels.h"
#include "ir/graph_builder.h"
#include "ops/qlinear_ops.h"
#include "passes/passes.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

constexpr int64_t kOpset = 19;
// Float outputs: |fused - unfused| <= kFloatTol * max(1, max |unfused|). The int8 path
// accumulates exactly and scales once; the Q/DQ graph rounds the dequantized operands first.
constexpr double kFloatTol = 2e-5;

Tensor random_floats(Shape shape, uint32_t seed, float scale = 1.0f) {
  Tensor t(DataType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

Tensor scalar(float v) {
  return Tensor::from_vector<float>(DataType::kFloat32, {}, {v});
}

// Random quantized values: int8 in [-128, 127] ([0, 127] when nonneg), uint8 in [0, 255],
// float8 from N(0, 64).
Tensor random_quantized(DataType dt, Shape shape, uint32_t seed, bool nonneg = false) {
  Tensor t(dt, std::move(shape));
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DataType::kInt8) {
      const int v = static_cast<int>(rng() % 256) - 128;
      t.data<int8_t>()[i] = static_cast<int8_t>(nonneg ? std::abs(v) % 128 : v);
    } else if (dt == DataType::kUInt8) {
      t.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 256);
    } else {
      std::normal_distribution<float> d(0.0f, 64.0f);
      t.data<float8_e4m3fn>()[i] = float_to_e4m3fn(d(rng), true);
    }
  }
  return t;
}

Tensor zero_point(DataType dt, Shape shape, int value = 0) {
  Tensor t(dt, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DataType::kUInt8) t.data<uint8_t>()[i] = static_cast<uint8_t>(value);
    if (dt == DataType::kInt8) t.data<int8_t>()[i] = static_cast<int8_t>(value);
  }
  return t;
}

// Weights quantized symmetrically (per channel along `axis` or per tensor).
struct QWeights {
  Tensor q, scale;
};
QWeights quantize_weights(const Tensor& w, DataType dt, int64_t axis, bool per_channel) {
  const Shape& s = w.shape();
  int64_t outer = 1, len = s[axis], inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const double qmax = dt == DataType::kInt8 ? 127.0 : 448.0;
  std::vector<float> amax(per_channel ? len : 1, 0.0f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < len; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        float& m = amax[per_channel ? a : 0];
        m = std::max(m, std::abs(w.data<float>()[(o * len + a) * inner + i]));
      }
  QWeights r;
  r.scale = per_channel ? Tensor(DataType::kFloat32, {len}) : Tensor(DataType::kFloat32, {});
  for (size_t c = 0; c < amax.size(); ++c)
    r.scale.data<float>()[c] = amax[c] > 0 ? static_cast<float>(amax[c] / qmax) : 1.0f;
  r.q = Tensor(dt, s);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < len; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t e = (o * len + a) * inner + i;
        const float v = w.data<float>()[e] / r.scale.data<float>()[per_channel ? a : 0];
        if (dt == DataType::kInt8)
          r.q.data<int8_t>()[e] = static_cast<int8_t>(std::clamp(std::nearbyint(v), -127.f, 127.f));
        else
          r.q.data<float8_e4m3fn>()[e] = float_to_e4m3fn(v, true);
      }
  return r;
}

// One island: the quantized graph input xq -> DQ -> op(DQ(W)) [-> Add(bias)] [-> Add(residual)]
// [-> act] [-> Q].
struct Island {
  std::string op = "Conv";        // Conv, Gemm, MatMul (constant W), MatMulAct (two activations)
  DataType xt = DataType::kInt8;  // X (and R, Y) dtype: int8, uint8 (zero point 7), float8
  DataType wt = DataType::kInt8;
  bool per_channel = true;
  bool nonneg = false;  // X values in [0, 127] (the fast path on every ISA)
  // Conv
  int64_t n = 2, c = 5, h = 9, w = 7, m = 7, k = 3, stride = 1, group = 1, pad = 1;
  // Gemm / MatMul: X [batch..., rows, kk] x W [kk, cols]
  Shape batch{};
  int64_t rows = 5, kk = 19, cols = 13;
  bool trans_b = false;
  bool bias = true;
  // Conv: the bias as an Add after it, of shape [M, 1, 1] (rank 3) or [1, M, 1, 1] (rank 4);
  // 0: the Conv's own input.
  int bias_add_rank = 0;
  std::string residual;  // "", "quantized", "float"
  std::string act;       // "", Relu, Clip, LeakyRelu, Sigmoid, HardSwish, Silu (Mul(t, Sigmoid(t)))
  bool quantize_out = true;
  float y_scale = 0;  // 0: derived from a float run
};

struct Built {
  ir::Model model;
  std::map<std::string, Tensor> feeds;
  std::string out;
};

int zp_value(DataType dt) {
  return dt == DataType::kUInt8 ? 7 : 0;
}

Built build(const Island& s) {
  Built r;
  ir::GraphBuilder b("island");
  const bool conv = s.op == "Conv";
  Shape xs = conv ? Shape{s.n, s.c, s.h, s.w} : s.batch;
  if (!conv) {
    xs.push_back(s.rows);
    xs.push_back(s.kk);
  }
  const auto xq = b.input("xq", s.xt, ir::sym_shape_from_static(xs));
  r.feeds["xq"] = random_quantized(s.xt, xs, 11, s.nonneg);
  auto dq = [&](const std::string& v, const std::string& scale, const std::string& zp,
                std::vector<ir::Attribute> attrs = {}) {
    std::vector<std::string> in{v, scale};
    if (!zp.empty()) in.push_back(zp);
    return b.node("DequantizeLinear", in, std::move(attrs))[0];
  };
  const float x_scale = s.xt == DataType::kFloat8E4M3FN ? 0.01f : 0.05f;
  const std::string xzp = b.initializer("xzp", zero_point(s.xt, {}, zp_value(s.xt)));
  const auto xf = dq(xq, b.initializer("xs", scalar(x_scale)), xzp);

  // Weights (and the op).
  std::string t;
  int64_t channels = 0;
  Shape ts;
  if (conv) {
    const Tensor wf = random_floats({s.m, s.c / s.group, s.k, s.k}, 12, 0.3f);
    const QWeights qw = quantize_weights(wf, s.wt, 0, s.per_channel);
    const auto w =
        dq(b.initializer("wq", qw.q), b.initializer("ws", qw.scale),
           b.initializer("wzp", Tensor(s.wt, qw.scale.shape())), {ir::attr_int("axis", 0)});
    std::vector<std::string> in{xf, w};
    if (s.bias && !s.bias_add_rank) in.push_back(b.initializer("bias", random_floats({s.m}, 13)));
    t = b.node("Conv", in,
               {ir::attr_ints("pads", {s.pad, s.pad, s.pad, s.pad}),
                ir::attr_ints("strides", {s.stride, s.stride}), ir::attr_int("group", s.group)})[0];
    if (s.bias && s.bias_add_rank) {
      const Shape bs = s.bias_add_rank == 3 ? Shape{s.m, 1, 1} : Shape{1, s.m, 1, 1};
      t = b.node("Add", {t, b.initializer("bias", random_floats(bs, 13))})[0];
    }
    channels = s.m;
    ts = {s.n, s.m, (s.h + 2 * s.pad - s.k) / s.stride + 1, (s.w + 2 * s.pad - s.k) / s.stride + 1};
  } else if (s.op == "MatMulAct") {
    Shape bs = s.batch;
    bs.push_back(s.kk);
    bs.push_back(s.cols);
    const auto wq = b.input("wq", s.wt, ir::sym_shape_from_static(bs));
    r.feeds["wq"] = random_quantized(s.wt, bs, 14);
    const auto w = dq(wq, b.initializer("ws", scalar(0.02f)), "");
    t = b.node("MatMul", {xf, w})[0];
    channels = s.cols;
  } else {
    const bool tb = s.op == "Gemm" && s.trans_b;
    const Tensor wf = random_floats(tb ? Shape{s.cols, s.kk} : Shape{s.kk, s.cols}, 12, 0.3f);
    const QWeights qw = quantize_weights(wf, s.wt, tb ? 0 : 1, s.per_channel);
    const auto w = dq(b.initializer("wq", qw.q), b.initializer("ws", qw.scale), "",
                      {ir::attr_int("axis", tb ? 0 : 1)});
    if (s.op == "Gemm") {
      std::vector<std::string> in{xf, w};
      if (s.bias) in.push_back(b.initializer("bias", random_floats({s.cols}, 13)));
      t = b.node("Gemm", in, {ir::attr_int("transB", tb)})[0];
    } else {
      t = b.node("MatMul", {xf, w})[0];
    }
    channels = s.cols;
  }
  if (!conv) {
    ts = s.batch;
    ts.push_back(s.rows);
    ts.push_back(s.cols);
  }
  if (s.bias && s.op != "Conv" && s.op != "Gemm")
    t = b.node("Add", {t, b.initializer("bias", random_floats({channels}, 13))})[0];
  if (!s.residual.empty()) {
    std::string rv;
    if (s.residual == "quantized") {
      const auto rq = b.input("rq", s.xt, ir::sym_shape_from_static(ts));
      r.feeds["rq"] = random_quantized(s.xt, ts, 15);
      rv = dq(rq, b.initializer("rs", scalar(0.03f)),
              b.initializer("rzp", zero_point(s.xt, {}, zp_value(s.xt))));
    } else {
      rv = b.input("r", DataType::kFloat32, ir::sym_shape_from_static(ts));
      r.feeds["r"] = random_floats(ts, 15);
    }
    t = b.node("Add", {rv, t})[0];
  }
  if (s.act == "Clip") {
    t = b.node("Clip",
               {t, b.initializer("lo", scalar(-0.5f)), b.initializer("hi", scalar(2.0f))})[0];
  } else if (s.act == "LeakyRelu") {
    t = b.node("LeakyRelu", {t}, {ir::attr_float("alpha", 0.1f)})[0];
  } else if (s.act == "Silu") {
    t = b.node("Mul", {b.node("Sigmoid", {t})[0], t})[0];
  } else if (!s.act.empty()) {
    t = b.node(s.act, {t})[0];
  }
  if (s.quantize_out) {
    const DataType yt = s.xt;
    t = b.node("QuantizeLinear", {t, b.initializer("ys", scalar(s.y_scale)),
                                  b.initializer("yzp", zero_point(yt, {}, zp_value(yt)))})[0];
    b.output(t, yt);
  } else {
    b.output(t, DataType::kFloat32);
  }
  r.out = t;
  r.model = b.build(kOpset);
  return r;
}

// Runs the graph's nodes in order on the CPU backend (constant inputs flagged as such).
std::map<std::string, Tensor> execute(const ir::Graph& g,
                                      const std::map<std::string, Tensor>& feeds, bool reference) {
  std::map<std::string, Tensor> env = feeds;
  for (const auto& n : g.nodes) {
    std::vector<const Tensor*> in;
    std::vector<bool> constant;
    for (const auto& v : n.inputs) {
      const Tensor* t = v.empty() ? nullptr : g.initializer(v);
      constant.push_back(t != nullptr);
      in.push_back(v.empty() ? nullptr : (t ? t : &env.at(v)));
    }
    auto outs = cpu::run_node(n, kOpset, in, reference, constant);
    for (size_t k = 0; k < outs.size(); ++k) env[n.outputs[k]] = outs[k];
  }
  std::map<std::string, Tensor> r;
  for (const auto& o : g.outputs) r[o.name] = env.at(o.name);
  return r;
}

size_t count_op(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const auto& node : g.nodes) n += node.op_type == op;
  return n;
}

// Position of a quantized value on its number line (float8 by magnitude order).
int64_t ordinal(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kInt8:
      return t.data<int8_t>()[i];
    case DataType::kUInt8:
      return t.data<uint8_t>()[i];
    default: {
      const uint8_t b = t.data<uint8_t>()[i];
      const int64_t mag = b & 0x7f;
      return (b & 0x80) ? -mag : mag;
    }
  }
}

// Fused vs unfused: quantized outputs within one step, float outputs within kFloatTol.
void expect_match(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  int bad = 0;
  if (want.dtype() == DataType::kFloat32) {
    double amax = 1.0;
    for (int64_t i = 0; i < want.numel(); ++i)
      amax = std::max(amax, std::abs(static_cast<double>(want.data<float>()[i])));
    for (int64_t i = 0; i < want.numel() && bad < 5; ++i) {
      const double a = got.data<float>()[i], b = want.data<float>()[i];
      if (!(std::abs(a - b) <= kFloatTol * amax)) {
        ADD_FAILURE() << "element " << i << ": " << a << " vs " << b;
        ++bad;
      }
    }
    return;
  }
  int64_t off = 0;
  for (int64_t i = 0; i < want.numel() && bad < 5; ++i) {
    const int64_t d = std::abs(ordinal(got, i) - ordinal(want, i));
    off += d != 0;
    if (d > 1) {
      ADD_FAILURE() << "element " << i << ": " << ordinal(got, i) << " vs " << ordinal(want, i);
      ++bad;
    }
  }
  // Off-by-one only where T / y_scale sits at a rounding boundary: rare.
  EXPECT_LE(off, std::max<int64_t>(2, want.numel() / 50)) << off << " of " << want.numel();
}

// Builds the island (deriving y_scale from a float run), checks that it fuses into one
// `fused_op`, and compares fused (fast and reference kernels) with the unfused Q/DQ graph.
ir::Graph check_island(Island s, const std::string& fused_op) {
  if (s.quantize_out && s.y_scale == 0) {
    Island f = s;
    f.quantize_out = false;
    f.y_scale = 1;
    const Built fb = build(f);
    ir::Graph g = fb.model.graph;
    passes::run_pipeline(g, kOpset, {"qdq_fusion", "conv_fusion"});
    const Tensor t = execute(g, fb.feeds, true).at(fb.out);
    float amax = 0;
    for (int64_t i = 0; i < t.numel(); ++i) amax = std::max(amax, std::abs(t.data<float>()[i]));
    // A little clipping on purpose (saturation), float8's range otherwise.
    s.y_scale = s.xt == DataType::kFloat8E4M3FN ? amax / 400.0f : amax / 110.0f;
  }
  const Built bl = build(s);
  ir::Graph plain = bl.model.graph;
  passes::run_pipeline(plain, kOpset, {"qdq_fusion", "conv_fusion"});
  const Tensor want = execute(plain, bl.feeds, true).at(bl.out);
  ir::Graph result;
  // With and without the channels-last layout of int8 QConv chains.
  for (bool layout : {true, false}) {
    SCOPED_TRACE(layout ? "channels-last layout" : "no layout pass");
    ir::Graph fused = bl.model.graph;
    passes::run_pipeline(fused, kOpset,
                         layout ? std::set<std::string>{} : std::set<std::string>{"qdq_layout"});
    EXPECT_EQ(count_op(fused, fused_op), 1u);
    EXPECT_EQ(count_op(fused, "DequantizeLinear"), 0u);
    EXPECT_EQ(count_op(fused, "QuantizeLinear"), 0u);
    EXPECT_EQ(fused.nodes.size() - count_op(fused, "Transpose"), 1u);
    if (!layout) {
      EXPECT_EQ(count_op(fused, "Transpose"), 0u);
    }
    {
      SCOPED_TRACE("fast path");
      expect_match(execute(fused, bl.feeds, false).at(bl.out), want);
    }
    {
      SCOPED_TRACE("reference");
      expect_match(execute(fused, bl.feeds, true).at(bl.out), want);
    }
    if (!layout) result = fused;
  }
  return result;
}

std::string describe(const Island& s) {
  return fmt::format(
      "{} x {} w {} per_channel {} nonneg {} c{} m{} k{} s{} g{} hw {}x{} rows {} kk {} cols {} "
      "tb {} bias {} residual '{}' act '{}' q {}",
      s.op, dtype_name(s.xt), dtype_name(s.wt), s.per_channel, s.nonneg, s.c, s.m, s.k, s.stride,
      s.group, s.h, s.w, s.rows, s.kk, s.cols, s.trans_b, s.bias, s.residual, s.act,
      s.quantize_out);
}

TEST(QdqFusion, ConvGeometriesInt8) {
  struct Geo {
    int64_t c, m, k, stride, group, pad, h, w;
  };
  const std::vector<Geo> geos = {
      {5, 7, 3, 1, 1, 1, 9, 7},      // odd channels, 3x3
      {19, 33, 1, 1, 1, 0, 6, 5},    // 1x1
      {16, 24, 1, 2, 1, 0, 9, 9},    // strided 1x1
      {8, 17, 3, 2, 1, 1, 11, 10},   // strided 3x3
      {12, 18, 3, 1, 3, 1, 7, 8},    // grouped
      {24, 24, 3, 1, 24, 1, 9, 9},   // depthwise
      {32, 64, 3, 1, 1, 1, 14, 14},  // a real layer's tile sizes
  };
  for (const auto& g : geos)
    for (bool per_channel : {true, false})
      for (bool nonneg : {true, false})
        for (bool q : {true, false}) {
          Island s;
          s.c = g.c, s.m = g.m, s.k = g.k, s.stride = g.stride, s.group = g.group, s.pad = g.pad;
          s.h = g.h, s.w = g.w, s.per_channel = per_channel, s.nonneg = nonneg, s.quantize_out = q;
          SCOPED_TRACE(describe(s));
          check_island(s, "QConv");
        }
}

TEST(QdqFusion, ConvEpiloguesInt8) {
  for (const std::string res : {"", "quantized", "float"})
    for (const std::string act : {"", "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSwish", "Silu"})
      for (bool q : {true, false})
        for (bool nonneg : {true, false}) {
          Island s;
          s.c = 16;
          s.m = 20;
          s.residual = res;
          s.act = act;
          s.quantize_out = q;
          s.nonneg = nonneg;
          SCOPED_TRACE(describe(s));
          check_island(s, "QConv");
        }
}

// A Conv's bias as an Add of [M, 1, 1] / [1, M, 1, 1] after it (as `quantize
// --high_precision_dtype fp16` writes it, for ONNX Runtime's sake) fuses as the QConv's bias.
TEST(QdqFusion, ConvBiasAddAfterTheLayer) {
  for (int rank : {3, 4})
    for (const std::string res : {"", "quantized"}) {
      Island s;
      s.c = 8;
      s.m = 12;
      s.bias_add_rank = rank;
      s.residual = res;
      s.act = "Relu";
      SCOPED_TRACE(describe(s) + " bias_add_rank " + std::to_string(rank));
      const ir::Graph g = check_island(s, "QConv");
      const ir::Node* f = nullptr;
      for (const auto& n : g.nodes)
        if (n.op_type == "QConv") f = &n;
      ASSERT_TRUE(f);
      ASSERT_TRUE(f->has_input(ops::qlinear::kBias));
      const Tensor* b = g.initializer(f->inputs[ops::qlinear::kBias]);
      ASSERT_TRUE(b);
      EXPECT_EQ(b->shape(), (Shape{12}));
    }
}

TEST(QdqFusion, ConvUint8WithZeroPoints) {
  for (const std::string res : {"", "quantized"})
    for (bool q : {true, false}) {
      Island s;
      s.xt = DataType::kUInt8;
      s.c = 9;
      s.m = 11;
      s.residual = res;
      s.act = "Relu";
      s.quantize_out = q;
      SCOPED_TRACE(describe(s));
      check_island(s, "QConv");
    }
}

TEST(QdqFusion, ConvFp8) {
  for (const std::string res : {"", "quantized"})
    for (bool per_channel : {true, false})
      for (bool q : {true, false}) {
        Island s;
        s.xt = s.wt = DataType::kFloat8E4M3FN;
        s.c = 6;
        s.m = 10;
        s.residual = res;
        s.act = "Relu";
        s.per_channel = per_channel;
        s.quantize_out = q;
        SCOPED_TRACE(describe(s));
        check_island(s, "QConv");
      }
}

TEST(QdqFusion, GemmAndMatMulWithConstantWeights) {
  for (const std::string op : {"Gemm", "MatMul"})
    for (bool tb : {false, true})
      for (bool per_channel : {true, false})
        for (bool q : {true, false})
          for (bool nonneg : {true, false}) {
            if (op == "MatMul" && tb) continue;
            Island s;
            s.op = op;
            s.trans_b = tb;
            s.per_channel = per_channel;
            s.quantize_out = q;
            s.nonneg = nonneg;
            s.act = "Relu";
            s.residual = "quantized";
            if (op == "MatMul") s.batch = {2, 3};
            SCOPED_TRACE(describe(s));
            const ir::Graph g = check_island(s, "QGemm");
            EXPECT_EQ(g.nodes[0].attr_int("transB", 0), tb);
          }
}

TEST(QdqFusion, GemmSizesAndFp8) {
  for (int64_t rows : {1, 8, 33})
    for (int64_t kk : {1, 16, 67})
      for (int64_t cols : {3, 64}) {
        Island s;
        s.op = "Gemm";
        s.rows = rows, s.kk = kk, s.cols = cols;
        SCOPED_TRACE(describe(s));
        check_island(s, "QGemm");
      }
  for (const std::string op : {"Gemm", "MatMul"})
    for (bool q : {true, false}) {
      Island s;
      s.op = op;
      s.xt = s.wt = DataType::kFloat8E4M3FN;
      s.quantize_out = q;
      s.residual = "float";
      SCOPED_TRACE(describe(s));
      check_island(s, "QGemm");
    }
}

TEST(QdqFusion, MatMulOfTwoActivations) {
  for (const Shape& batch : {Shape{}, Shape{3}, Shape{2, 3}})
    for (bool q : {true, false})
      for (bool nonneg : {true, false})
        for (DataType dt : {DataType::kInt8, DataType::kFloat8E4M3FN}) {
          Island s;
          s.op = "MatMulAct";
          s.batch = batch;
          s.rows = 7, s.kk = 24, s.cols = 9;
          s.xt = s.wt = dt;
          s.quantize_out = q;
          s.nonneg = nonneg;
          s.bias = batch.size() != 1;
          SCOPED_TRACE(describe(s));
          check_island(s, "QMatMul");
        }
}

TEST(QdqFusion, FastPathRunsForNonNegativeInt8) {
  // [0, 127] inputs run the int8 oneDNN path on every ISA.
  Island s;
  s.nonneg = true;
  s.residual = "quantized";
  s.act = "Relu";
  const auto before = cpu::qlinear::onednn_int8_stats();
  check_island(s, "QConv");
  s.op = "Gemm";
  check_island(s, "QGemm");
  const auto after = cpu::qlinear::onednn_int8_stats();
  EXPECT_GE(after.runs - before.runs, 2);
}

// A chain of two quantized convs (the first one's Q output read by the second's DQ and by the
// residual DQ of a third node), as a quantized ResNet block is.
TEST(QdqFusion, ChainedIslandsKeepInt8BetweenLayers) {
  ir::GraphBuilder b("chain");
  const auto xq = b.input("xq", DataType::kInt8, {2, 8, 6, 6});
  std::map<std::string, Tensor> feeds{{"xq", random_quantized(DataType::kInt8, {2, 8, 6, 6}, 3)}};
  const auto zp = b.initializer("zp", zero_point(DataType::kInt8, {}));
  int layer = 0;
  auto qconv = [&](const std::string& in_q, float in_s, const std::string& res_q, float out_s) {
    const auto x = b.node("DequantizeLinear",
                          {in_q, b.initializer(fmt::format("s{}", layer), scalar(in_s)), zp})[0];
    const QWeights qw =
        quantize_weights(random_floats({8, 8, 3, 3}, 20 + layer, 0.2f), DataType::kInt8, 0, true);
    const auto w = b.node("DequantizeLinear",
                          {b.initializer(fmt::format("w{}", layer), qw.q),
                           b.initializer(fmt::format("ws{}", layer), qw.scale)},
                          {ir::attr_int("axis", 0)})[0];
    auto t = b.node("Conv", {x, w}, {ir::attr_ints("pads", {1, 1, 1, 1})})[0];
    if (!res_q.empty()) {
      const auto r =
          b.node("DequantizeLinear",
                 {res_q, b.initializer(fmt::format("rs{}", layer), scalar(in_s)), zp})[0];
      t = b.node("Add", {t, r})[0];
    }
    t = b.node("Relu", {t})[0];
    const auto q = b.node("QuantizeLinear",
                          {t, b.initializer(fmt::format("ys{}", layer), scalar(out_s)), zp})[0];
    ++layer;
    return q;
  };
  const auto a = qconv(xq, 0.05f, "", 0.1f);
  const auto c = qconv(a, 0.1f, a, 0.1f);  // a read by two DQ nodes
  b.output(c, DataType::kInt8);
  ir::Graph plain = b.build(kOpset).graph, fused = plain, last = plain;
  passes::run_pipeline(plain, kOpset, {"qdq_fusion"});
  passes::run_pipeline(fused, kOpset, {"qdq_layout"});
  passes::run_pipeline(last, kOpset);
  EXPECT_EQ(count_op(fused, "QConv"), 2u);
  EXPECT_EQ(fused.nodes.size(), 2u);
  EXPECT_EQ(fused.nodes[1].inputs[9], a);  // the residual is the int8 tensor
  // Channels-last: one Transpose in, one out; the second QConv reads the first's NHWC output
  // (as X and as residual).
  EXPECT_EQ(count_op(last, "QConv"), 2u);
  EXPECT_EQ(count_op(last, "Transpose"), 2u);
  ASSERT_EQ(last.nodes.size(), 4u);
  EXPECT_EQ(last.nodes[2].inputs[0], last.nodes[1].outputs[0]);
  EXPECT_EQ(last.nodes[2].inputs[9], last.nodes[1].outputs[0]);
  EXPECT_EQ(last.nodes[3].outputs[0], c);
  const Tensor want = execute(plain, feeds, true).at(c);
  expect_match(execute(fused, feeds, false).at(c), want);
  expect_match(execute(last, feeds, false).at(c), want);
  expect_match(execute(last, feeds, true).at(c), want);
}

// EfficientNet's quantized squeeze-excitation: a convolution's float output read by its
// QuantizeLinear (-> GlobalAveragePool -> int8 1x1 convolution -> Sigmoid) and by the gating Mul,
// then QuantizeLinear -> the next int8 convolution. In the CPU plan the Q/DQ nodes and the Mul
// run on the channels-last tensors: only the input, the pooled vector and the output transpose.
TEST(QdqFusion, QuantizedSqueezeExciteStaysChannelsLast) {
  ir::GraphBuilder b("se");
  const auto xq = b.input("xq", DataType::kInt8, {2, 8, 6, 6});
  std::map<std::string, Tensor> feeds{{"xq", random_quantized(DataType::kInt8, {2, 8, 6, 6}, 4)}};
  const auto zp = b.initializer("zp", zero_point(DataType::kInt8, {}));
  auto dq = [&](const std::string& v, float s, const std::string& name) {
    return b.node("DequantizeLinear", {v, b.initializer(name, scalar(s)), zp})[0];
  };
  auto q = [&](const std::string& v, float s, const std::string& name) {
    return b.node("QuantizeLinear", {v, b.initializer(name, scalar(s)), zp})[0];
  };
  auto conv = [&](const std::string& x, int64_t k, uint32_t seed) {
    const QWeights qw =
        quantize_weights(random_floats({8, 8, k, k}, seed, 0.2f), DataType::kInt8, 0, true);
    const auto w = b.node("DequantizeLinear",
                          {b.initializer(fmt::format("w{}", seed), qw.q),
                           b.initializer(fmt::format("ws{}", seed), qw.scale)},
                          {ir::attr_int("axis", 0)})[0];
    const int64_t p = k / 2;
    return b.node("Conv", {x, w}, {ir::attr_ints("pads", {p, p, p, p})})[0];
  };
  const auto a = b.node("Relu", {conv(dq(xq, 0.05f, "s0"), 3, 1)})[0];
  const auto pooled = b.node("GlobalAveragePool", {dq(q(a, 0.1f, "s1"), 0.1f, "s1d")})[0];
  const auto gate = b.node("Sigmoid", {conv(dq(q(pooled, 0.05f, "s2"), 0.05f, "s2d"), 1, 2)})[0];
  const auto m = b.node("Mul", {a, gate})[0];
  const auto y = q(conv(dq(q(m, 0.1f, "s3"), 0.1f, "s3d"), 1, 3), 0.2f, "s4");
  b.output(y, DataType::kInt8);
  ir::Graph plain = b.build(kOpset).graph, last = plain;
  passes::run_pipeline(plain, kOpset, {"qdq_fusion"});
  passes::run_pipeline(last, kOpset);
  passes::run_cpu_layout_pipeline(last);
  EXPECT_EQ(count_op(last, "QConv"), 3u);
  EXPECT_EQ(count_op(last, "Transpose"), 3u);
  for (const auto& n : last.nodes)
    if (n.op_type == "Mul" || (n.op_type == "QuantizeLinear" && n.inputs[0] != pooled)) {
      EXPECT_EQ(n.inputs[0].substr(n.inputs[0].size() - 5), "_nhwc") << n.name;
    }
  const Tensor want = execute(plain, feeds, true).at(y);
  expect_match(execute(last, feeds, false).at(y), want);
}

// int8 and float8 (the stem pool of an fp8 ResNet): the fused MaxPool on the quantized values is
// bit-exact against dequantize -> float MaxPool -> quantize.
TEST(QdqFusion, MaxPoolBetweenEqualScalesRunsOnQuantizedValues) {
  for (DataType dt : {DataType::kInt8, DataType::kFloat8E4M3FN}) {
    ir::GraphBuilder b("pool");
    const auto xq = b.input("xq", dt, {2, 3, 7, 7});
    std::map<std::string, Tensor> feeds{{"xq", random_quantized(dt, {2, 3, 7, 7}, 4)}};
    const auto s = b.initializer("s", scalar(0.1f));
    const auto zp = b.initializer("zp", zero_point(dt, {}));
    const auto x = b.node("DequantizeLinear", {xq, s, zp})[0];
    const auto p = b.node("MaxPool", {x},
                          {ir::attr_ints("kernel_shape", {3, 3}), ir::attr_ints("strides", {2, 2}),
                           ir::attr_ints("pads", {1, 1, 1, 1})})[0];
    const auto q = b.node("QuantizeLinear", {p, s, zp})[0];
    b.output(q, dt);
    ir::Graph plain = b.build(kOpset).graph, fused = plain;
    passes::run_pipeline(plain, kOpset, {"qdq_fusion"});
    passes::run_pipeline(fused, kOpset);
    const std::string what(dtype_name(dt));
    ASSERT_EQ(fused.nodes.size(), 1u) << what;
    EXPECT_EQ(fused.nodes[0].op_type, "MaxPool") << what;
    EXPECT_EQ(fused.nodes[0].inputs[0], xq) << what;
    const Tensor got = execute(fused, feeds, false).at(q), want = execute(plain, feeds, true).at(q);
    ASSERT_EQ(got.shape(), want.shape()) << what;
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0) << what;  // exact
  }
}

TEST(QdqFusion, MaxPoolWithDifferentScalesStays) {
  ir::GraphBuilder b("pool");
  const auto xq = b.input("xq", DataType::kInt8, {1, 2, 4, 4});
  const auto zp = b.initializer("zp", zero_point(DataType::kInt8, {}));
  const auto x = b.node("DequantizeLinear", {xq, b.initializer("s", scalar(0.1f)), zp})[0];
  const auto p = b.node("MaxPool", {x}, {ir::attr_ints("kernel_shape", {2, 2})})[0];
  const auto q = b.node("QuantizeLinear", {p, b.initializer("s2", scalar(0.2f)), zp})[0];
  b.output(q, DataType::kInt8);
  ir::Graph g = b.build(kOpset).graph;
  passes::run_pipeline(g, kOpset);
  EXPECT_EQ(g.nodes.size(), 3u);
}

TEST(QdqFusion, IntermediateReadElsewhereOrGraphOutputStopsTheTail) {
  // Conv output also a graph output: the QConv has a float output and the Relu/Q stay.
  Island s;
  s.act = "Relu";
  Built bl = build(s);
  ir::Graph g = bl.model.graph;
  const std::string conv_out = [&] {
    for (const auto& n : g.nodes)
      if (n.op_type == "Conv") return n.outputs[0];
    return std::string();
  }();
  g.outputs.push_back(ir::ValueInfo{conv_out, DataType::kFloat32, std::nullopt, {}});
  ir::Graph plain = g;
  passes::run_pipeline(plain, kOpset, {"qdq_fusion"});
  passes::run_pipeline(g, kOpset, {"qdq_layout"});
  EXPECT_EQ(count_op(g, "QConv"), 1u);
  EXPECT_EQ(count_op(g, "Relu"), 1u);
  EXPECT_EQ(count_op(g, "QuantizeLinear"), 1u);
  const auto a = execute(plain, bl.feeds, true);
  const auto c = execute(g, bl.feeds, false);
  expect_match(c.at(conv_out), a.at(conv_out));
  expect_match(c.at(bl.out), a.at(bl.out));
}

TEST(QdqFusion, UnsupportedVariantsStayUnfused) {
  auto fused_count = [](ir::Model m) {
    passes::run_pipeline(m.graph, kOpset);
    return count_op(m.graph, "QConv") + count_op(m.graph, "QGemm") + count_op(m.graph, "QMatMul");
  };
  {
    // Asymmetric weight zero point.
    Built bl = build(Island{});
    Tensor& z = bl.model.graph.initializers.at("wzp");
    z = Tensor(DataType::kInt8, z.shape());
    z.data<int8_t>()[0] = 3;
    EXPECT_EQ(fused_count(bl.model), 0u);
  }
  {
    // Non-constant x scale.
    Built bl = build(Island{});
    auto& g = bl.model.graph;
    g.initializers.erase("xs");
    g.inputs.push_back(ir::ValueInfo{"xs", DataType::kFloat32, ir::SymShape{}, {}});
    EXPECT_EQ(fused_count(bl.model), 0u);
  }
  {
    // Per-channel activation scale.
    Island s;
    Built bl = build(s);
    auto& g = bl.model.graph;
    g.initializers["xs"] = Tensor(DataType::kFloat32, {s.c});
    for (auto& n : g.nodes)
      if (n.op_type == "DequantizeLinear" && n.inputs[0] == "xq") {
        g.initializers["xzp"] = Tensor(DataType::kInt8, {s.c});
      }
    EXPECT_EQ(fused_count(bl.model), 0u);
  }
  {
    // Gemm with alpha != 1.
    Island s;
    s.op = "Gemm";
    Built bl = build(s);
    for (auto& n : bl.model.graph.nodes)
      if (n.op_type == "Gemm") n.attributes["alpha"] = ir::attr_float("alpha", 2.0f);
    EXPECT_EQ(fused_count(bl.model), 0u);
  }
}

TEST(QdqFusion, QuantizerStylePassesKeepSavedGraphsStandard) {
  Built bl = build(Island{});
  ir::Graph g = bl.model.graph;
  passes::run_pipeline(g, kOpset, {"conv_fusion", "qdq_fusion"});
  for (const auto& n : g.nodes) EXPECT_TRUE(n.domain.empty()) << n.describe();
}

}  // namespace
}  // namespace trtutils
