// Placement rules, rewriting, BN folding and opset upgrade on graphs built in code.
#include "quantize/qdq.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "engine/session.h"
#include "ir/graph_builder.h"
#include "passes/passes.h"
#include "trtutils/status.h"

namespace trtutils::quantize {
namespace {

Tensor randn(Shape s, uint32_t seed, float sigma = 0.1f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  Tensor t(DataType::kFloat32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Shape inference, as quantize_onnx runs it before placement.
ir::Model finish(ir::GraphBuilder& b, int64_t opset = 17) {
  ir::Model m = b.build(opset);
  passes::infer_shapes(m.graph, opset);
  return m;
}

int count_op(const ir::Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(),
                                        [&](const ir::Node& n) { return n.op_type == op; }));
}

const ir::Node& node_named(const ir::Graph& g, const std::string& name) {
  for (const auto& n : g.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

std::string conv(ir::GraphBuilder& b, const std::string& x, int64_t cin, int64_t cout,
                 uint32_t seed, const std::string& name) {
  auto w = b.initializer(name + ".w", randn({cout, cin, 3, 3}, seed));
  auto bias = b.initializer(name + ".b", randn({cout}, seed + 100));
  return b.node("Conv", {x, w, bias}, {ir::attr_ints("pads", {1, 1, 1, 1})}, 1, "", name)[0];
}

// stem (3 -> 16, too few input channels), c1 (16 -> 32), c2 (32 -> 32), residual Add with
// c1's ReLU, then a Gemm head.
ir::Model residual_net() {
  ir::GraphBuilder b("res");
  auto x = b.input("x", DataType::kFloat32, {ir::Dim("N"), 3, 8, 8});
  auto s = conv(b, x, 3, 16, 1, "stem");
  auto r0 = b.node("Relu", {s}, {}, 1, "", "relu0")[0];
  auto c1 = conv(b, r0, 16, 32, 2, "c1");
  auto r1 = b.node("Relu", {c1}, {}, 1, "", "relu1")[0];
  auto c2 = conv(b, r1, 32, 32, 3, "c2");
  auto add = b.node("Add", {c2, r1}, {}, 1, "", "add")[0];
  auto r2 = b.node("Relu", {add}, {}, 1, "", "relu2")[0];
  auto gp = b.node("GlobalAveragePool", {r2}, {}, 1, "", "gap")[0];
  auto fl = b.node("Flatten", {gp}, {}, 1, "", "flat")[0];
  auto w = b.initializer("fc.w", randn({10, 32}, 4));
  auto y = b.node("Gemm", {fl, w}, {ir::attr_int("transB", 1)}, 1, "", "fc")[0];
  b.output(y, DataType::kFloat32);
  return finish(b);
}

TEST(QdqPlacementTest, DefaultRulesOnResidualNet) {
  ir::Model m = residual_net();
  Placement p = place_qdq(m.graph, {});
  // c1, c2, fc, add (residual) quantized; the stem is skipped for its 3 input channels.
  EXPECT_EQ(p.quantized_nodes, (std::vector<std::string>{"c1", "c2", "add", "fc"}));
  ASSERT_EQ(p.skipped.size(), 1u);
  EXPECT_NE(p.skipped[0].find("stem"), std::string::npos);
  EXPECT_NE(p.skipped[0].find("< 16"), std::string::npos);
  // Activations: relu0 out (c1), relu1 out (c2 and the Add's residual input), flatten (fc).
  // c2's output fuses into c2 and stays float.
  EXPECT_EQ(p.activations.size(), 3u);
  const std::string r1 = node_named(m.graph, "relu1").outputs[0];
  ASSERT_TRUE(p.activations.count(r1));
  EXPECT_EQ(p.activations[r1].size(), 2u);
  EXPECT_EQ(p.activations[r1][1], (std::pair<std::string, size_t>{"add", 1}));
  EXPECT_FALSE(p.activations.count(node_named(m.graph, "c2").outputs[0]));
  // Weights: per output channel, Conv axis 0, Gemm with transB axis 0.
  ASSERT_EQ(p.weights.size(), 3u);
  for (const auto& w : p.weights) EXPECT_EQ(w.axis, 0) << w.tensor;
}

TEST(QdqPlacementTest, ForcedAndExcluded) {
  ir::Model m = residual_net();
  PlacementOptions o;
  o.op_types_to_quantize = {"Conv"};
  Placement p = place_qdq(m.graph, o);
  EXPECT_EQ(p.quantized_nodes, (std::vector<std::string>{"stem", "c1", "c2"}));  // forced: stem too
  PlacementOptions e;
  e.nodes_to_exclude.emplace_back("c[0-9]");
  e.op_types_to_exclude = {"Gemm"};
  Placement q = place_qdq(m.graph, e);
  EXPECT_TRUE(q.quantized_nodes.empty());  // the Add has no quantized Conv left to fuse with
  PlacementOptions anchored;
  anchored.nodes_to_exclude.emplace_back("2");  // re.match: anchored at the start, no match
  EXPECT_EQ(place_qdq(m.graph, anchored).quantized_nodes.size(), 4u);
}

TEST(QdqPlacementTest, MatMulGemvSkippedAndWeightAxis) {
  ir::GraphBuilder b("mm");
  auto x = b.input("x", DataType::kFloat32, {4, 64});
  auto w1 = b.initializer("w1", randn({64, 32}, 1));
  auto h = b.node("MatMul", {x, w1}, {}, 1, "", "mm1")[0];
  auto w2 = b.initializer("w2", randn({32, 1}, 2));
  auto y = b.node("MatMul", {h, w2}, {}, 1, "", "gemv")[0];
  b.output(y, DataType::kFloat32);
  ir::Model m = finish(b);
  Placement p = place_qdq(m.graph, {});
  EXPECT_EQ(p.quantized_nodes, (std::vector<std::string>{"mm1"}));
  ASSERT_EQ(p.weights.size(), 1u);
  EXPECT_EQ(p.weights[0].axis, 1);  // [K, N]: N is the output channel
  PlacementOptions i4;
  i4.mode = QuantMode::kInt4;
  i4.block_size = 16;
  Placement q = place_qdq(m.graph, i4);
  ASSERT_EQ(q.weights.size(), 1u);
  EXPECT_EQ(q.weights[0].axis, 0);  // blocked along K
  EXPECT_EQ(q.weights[0].block, 16);
  EXPECT_TRUE(q.activations.empty());
}

TEST(QdqPlacementTest, ConcatInputsShareOneScale) {
  ir::GraphBuilder b("cat");
  auto x = b.input("x", DataType::kFloat32, {1, 16, 8, 8});
  auto a = conv(b, x, 16, 16, 1, "a");
  auto c = conv(b, x, 16, 16, 2, "c");
  auto ra = b.node("Relu", {a}, {}, 1, "", "ra")[0];
  auto rc = b.node("Relu", {c}, {}, 1, "", "rc")[0];
  auto cat = b.node("Concat", {ra, rc}, {ir::attr_int("axis", 1)}, 1, "", "cat")[0];
  auto y = conv(b, cat, 32, 16, 3, "d");
  b.output(y, DataType::kFloat32);
  ir::Model m = finish(b);
  Placement p = place_qdq(m.graph, {});
  EXPECT_TRUE(p.activations.count(ra));
  EXPECT_TRUE(p.activations.count(rc));
  EXPECT_TRUE(p.activations.count(cat));
  ScaleTable t;
  t.amax = {{x, 1.0}, {ra, 2.0}, {rc, 5.0}, {cat, 4.0}};
  share_scales(m.graph, t);
  EXPECT_EQ(t.amax[ra], 5.0);
  EXPECT_EQ(t.amax[rc], 5.0);
  EXPECT_EQ(t.amax[cat], 5.0);
  EXPECT_EQ(t.amax[x], 1.0);
}

TEST(QdqPlacementTest, GraphOutputStaysFloat) {
  ir::GraphBuilder b("out");
  auto x = b.input("x", DataType::kFloat32, {1, 16, 4, 4});
  auto a = conv(b, x, 16, 16, 1, "a");
  auto y = conv(b, a, 16, 16, 2, "b");
  b.output(a, DataType::kFloat32);
  b.output(y, DataType::kFloat32);
  ir::Model m = finish(b);
  Placement p = place_qdq(m.graph, {});
  ScaleTable t;
  t.amax = {{x, 1.0}, {a, 1.0}};
  apply_qdq(m.graph, p, t, {});
  // 'a' is still produced by the Conv and is still the graph output; 'b' reads its DQ.
  EXPECT_EQ(m.graph.outputs[0].name, a);
  EXPECT_EQ(node_named(m.graph, "a").outputs[0], a);
  EXPECT_NE(node_named(m.graph, "b").inputs[0], a);
  EXPECT_EQ(count_op(m.graph, "QuantizeLinear"), 2);
  EXPECT_EQ(count_op(m.graph, "DequantizeLinear"), 4);  // 2 activations + 2 weights
}

TEST(QdqRewriteTest, PerChannelWeightScalesExact) {
  for (QuantMode mode : {QuantMode::kInt8, QuantMode::kFp8}) {
    ir::Model m = residual_net();
    const Tensor w = *m.graph.initializer("c1.w");
    PlacementOptions po;
    po.mode = mode;
    Placement p = place_qdq(m.graph, po);
    ScaleTable t;
    for (const auto& [a, uses] : p.activations) t.amax[a] = 3.0;
    ApplyStats st = apply_qdq(m.graph, p, t, {.mode = mode});
    EXPECT_EQ(st.weights, 3);
    EXPECT_EQ(st.qdq_pairs, 3);
    const ir::Node& c1 = node_named(m.graph, "c1");
    const ir::Node* dq = nullptr;
    for (const auto& n : m.graph.nodes)
      if (n.outputs[0] == c1.inputs[1]) dq = &n;
    ASSERT_NE(dq, nullptr);
    ASSERT_EQ(dq->op_type, "DequantizeLinear");
    EXPECT_EQ(dq->attr_int("axis", -1), 0);
    const Tensor& q = *m.graph.initializer(dq->inputs[0]);
    const Tensor& s = *m.graph.initializer(dq->inputs[1]);
    EXPECT_EQ(q.dtype(), quant_mode_dtype(mode));
    ASSERT_EQ(s.shape(), Shape{32});
    const int64_t per = w.numel() / 32;
    for (int64_t c = 0; c < 32; ++c) {
      float amax = 0;
      for (int64_t k = 0; k < per; ++k)
        amax = std::max(amax, std::fabs(w.data<float>()[c * per + k]));
      EXPECT_FLOAT_EQ(s.data<float>()[c], amax / static_cast<float>(quant_mode_qmax(mode)));
      for (int64_t k = 0; k < per; ++k) {
        const double deq = q.at_double(c * per + k) * s.data<float>()[c];
        const double tol = mode == QuantMode::kInt8 ? 0.5 * s.data<float>()[c] + 1e-7
                                                    : std::fabs(w.data<float>()[c * per + k]) / 16 +
                                                          s.data<float>()[c] / 1024;  // subnormals
        EXPECT_NEAR(deq, w.data<float>()[c * per + k], tol);
      }
    }
    // Activation scale = amax / qmax, zero point of the mode's type.
    const ir::Node& qn =
        *std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(),
                      [](const ir::Node& n) { return n.op_type == "QuantizeLinear"; });
    EXPECT_FLOAT_EQ(m.graph.initializer(qn.inputs[1])->data<float>()[0],
                    static_cast<float>(3.0 / quant_mode_qmax(mode)));
    EXPECT_EQ(m.graph.initializer(qn.inputs[2])->dtype(), quant_mode_dtype(mode));
  }
}

TEST(QdqRewriteTest, Int4BlockedScales) {
  ir::GraphBuilder b("mm");
  auto x = b.input("x", DataType::kFloat32, {2, 64});
  auto w = b.initializer("w", randn({64, 8}, 5));
  auto y = b.node("MatMul", {x, w}, {}, 1, "", "mm")[0];
  b.output(y, DataType::kFloat32);
  ir::Model m = finish(b, 21);
  const Tensor wf = *m.graph.initializer("w");
  PlacementOptions po;
  po.mode = QuantMode::kInt4;
  po.block_size = 16;
  Placement p = place_qdq(m.graph, po);
  apply_qdq(m.graph, p, {}, {.mode = QuantMode::kInt4});
  const ir::Node& dq =
      *std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(),
                    [](const ir::Node& n) { return n.op_type == "DequantizeLinear"; });
  EXPECT_EQ(dq.attr_int("block_size", 0), 16);
  const Tensor& s = *m.graph.initializer(dq.inputs[1]);
  ASSERT_EQ(s.shape(), (Shape{4, 8}));
  for (int64_t blk = 0; blk < 4; ++blk)
    for (int64_t n = 0; n < 8; ++n) {
      float amax = 0;
      for (int64_t k = blk * 16; k < blk * 16 + 16; ++k)
        amax = std::max(amax, std::fabs(wf.data<float>()[k * 8 + n]));
      EXPECT_FLOAT_EQ(s.data<float>()[blk * 8 + n], amax / 7.0f);
    }
  // The Q/DQ model runs and stays close to the float one.
  Session qs(m);
  Tensor xin = randn({2, 64}, 9, 1.0f);
  auto out = qs.run({{"x", xin}});
  ir::GraphBuilder fb("f");
  auto fx = fb.input("x", DataType::kFloat32, {2, 64});
  auto fw = fb.initializer("w", wf);
  fb.output(fb.node("MatMul", {fx, fw})[0], DataType::kFloat32);
  auto ref = Session(fb.build(21)).run({{"x", xin}});
  const Tensor& a = ref.begin()->second;
  const Tensor& q = out.begin()->second;
  double sig = 0, err = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    sig += a.data<float>()[i] * a.data<float>()[i];
    err += std::pow(a.data<float>()[i] - q.data<float>()[i], 2);
  }
  EXPECT_GT(10 * std::log10(sig / err), 15.0);  // 4-bit weights: ~ 20 dB on Gaussian weights
}

TEST(QdqPassesTest, BatchNormFoldingKeepsOutputs) {
  ir::GraphBuilder b("bn");
  auto x = b.input("x", DataType::kFloat32, {2, 16, 6, 6});
  auto c = conv(b, x, 16, 24, 1, "c");
  Tensor var = randn({24}, 7);
  for (int64_t i = 0; i < 24; ++i) var.data<float>()[i] = 0.5f + std::fabs(var.data<float>()[i]);
  auto y = b.node("BatchNormalization",
                  {c, b.initializer("g", randn({24}, 3, 1.0f)), b.initializer("be", randn({24}, 4)),
                   b.initializer("mu", randn({24}, 5)), b.initializer("var", var)},
                  {ir::attr_float("epsilon", 1e-3f)}, 1, "", "bn")[0];
  b.output(y, DataType::kFloat32);
  ir::Model m = b.build(17);
  Tensor xin = randn({2, 16, 6, 6}, 11, 1.0f);
  auto ref = Session(m).run({{"x", xin}});
  ir::Model f = m;
  EXPECT_EQ(fold_batch_norm(f.graph), 1u);
  EXPECT_EQ(count_op(f.graph, "BatchNormalization"), 0);
  auto got = Session(f).run({{"x", xin}});
  const Tensor& a = ref.at(y);
  const Tensor& g = got.at(y);
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], g.data<float>()[i], 1e-4);
}

TEST(QdqPassesTest, OpsetUpgradeRewritesChangedOps) {
  ir::GraphBuilder b("old");
  auto x = b.input("x", DataType::kFloat32, {2, 1, 5});
  auto s = b.node("Squeeze", {x}, {ir::attr_ints("axes", {1})})[0];
  auto r = b.node("ReduceMean", {s}, {ir::attr_ints("axes", {1}), ir::attr_int("keepdims", 1)})[0];
  auto d = b.node("Sub", {s, r})[0];
  auto y = b.node("Softmax", {d}, {ir::attr_int("axis", 1)})[0];
  b.output(y, DataType::kFloat32);
  ir::Model m = b.build(11);
  passes::infer_shapes(m.graph, 11);
  Tensor xin = randn({2, 1, 5}, 1, 1.0f);
  auto ref = Session(m).run({{"x", xin}});
  ir::Model u = m;
  upgrade_opset(u, 19);
  EXPECT_EQ(u.opset(), 19);
  EXPECT_GE(u.ir_version, 9);
  auto got = Session(u).run({{"x", xin}});
  for (int64_t i = 0; i < 10; ++i)
    EXPECT_NEAR(ref.at(y).data<float>()[i], got.at(y).data<float>()[i], 1e-6);
  // Softmax over two trailing axes (opset < 13 semantics) cannot be expressed: refused.
  ir::GraphBuilder c("old2");
  auto x2 = c.input("x", DataType::kFloat32, {2, 3, 4});
  c.output(c.node("Softmax", {x2}, {ir::attr_int("axis", 1)})[0], DataType::kFloat32);
  ir::Model m2 = c.build(11);
  passes::infer_shapes(m2.graph, 11);
  EXPECT_THROW(upgrade_opset(m2, 13), Error);
}

// Per channel (axis 1) mean of a - b.
std::vector<double> channel_mean_diff(const Tensor& a, const Tensor& b) {
  const int64_t c = a.dim(1), inner = a.numel() / (a.dim(0) * c);
  std::vector<double> m(static_cast<size_t>(c), 0.0);
  for (int64_t i = 0; i < a.numel(); ++i)
    m[static_cast<size_t>((i / inner) % c)] +=
        static_cast<double>(a.data<float>()[i]) - b.data<float>()[i];
  for (double& v : m) v /= static_cast<double>(a.numel() / c);
  return m;
}

TEST(QdqRewriteTest, BiasCorrectionRemovesTheWeightErrorMean) {
  // Conv (with bias, no padding: the input mean is exact at every tap), Gemm without C, MatMul
  // + Add bias (corrected through the Add), MatMul read by no Add (left as is).
  ir::GraphBuilder b("bc");
  auto x = b.input("x", DataType::kFloat32, {4, 16, 6, 6});
  auto a = b.input("a", DataType::kFloat32, {8, 32});
  auto cb = b.initializer("c.b", randn({24}, 11));
  auto y1 =
      b.node("Conv", {x, b.initializer("c.w", randn({24, 16, 3, 3}, 12)), cb}, {}, 1, "", "c")[0];
  auto y2 = b.node("Gemm", {a, b.initializer("g.w", randn({10, 32}, 13))},
                   {ir::attr_int("transB", 1)}, 1, "", "g")[0];
  auto mm = b.node("MatMul", {a, b.initializer("mm.w", randn({32, 12}, 14))}, {}, 1, "", "mm")[0];
  auto y3 = b.node("Add", {mm, b.initializer("mm.b", randn({12}, 15))}, {}, 1, "", "mm_add")[0];
  auto y4 = b.node("MatMul", {a, b.initializer("mm2.w", randn({32, 12}, 16))}, {}, 1, "", "mm2")[0];
  for (const auto& y : {y1, y2, y3, y4}) b.output(y, DataType::kFloat32);
  const ir::Model m = finish(b, 19);
  // Inputs with a large per-channel mean (as after a ReLU), and their exact channel means. x is
  // constant over H, W (random over N, C) so that every tap of the Conv sees the channel mean.
  const Tensor xnc = randn({4, 16}, 17, 0.5f);
  Tensor xin(DataType::kFloat32, {4, 16, 6, 6}), ain = randn({8, 32}, 18, 0.5f);
  std::vector<double> xm(16, 0.0), am(32, 0.0);
  for (int64_t i = 0; i < xin.numel(); ++i) {
    float& v = xin.data<float>()[i];
    v = xnc.data<float>()[i / 36] + 1.0f + 0.1f * static_cast<float>((i / 36) % 16);
    xm[static_cast<size_t>((i / 36) % 16)] += v / (4.0 * 36);
  }
  for (int64_t i = 0; i < ain.numel(); ++i) {
    float& v = ain.data<float>()[i];
    v += 0.5f + 0.05f * static_cast<float>(i % 32);
    am[static_cast<size_t>(i % 32)] += v / 8.0;
  }
  Placement p;
  p.weights = {
      {"c", 1, "c.w", 0}, {"g", 1, "g.w", 0}, {"mm", 1, "mm.w", 1}, {"mm2", 1, "mm2.w", 1}};
  const std::map<std::string, Tensor> feeds = {{"x", xin}, {"a", ain}};
  const auto ref = Session(m).run(feeds);
  for (QuantMode mode : {QuantMode::kInt8, QuantMode::kFp8}) {
    ir::Model plain = m, corrected = m;
    EXPECT_EQ(apply_qdq(plain.graph, p, {}, {.mode = mode}).bias_corrected, 0);
    ApplyOptions ao{.mode = mode};
    ao.input_mean = {{"c", xm}, {"g", am}, {"mm", am}, {"mm2", am}};
    const ApplyStats st = apply_qdq(corrected.graph, p, {}, ao);
    EXPECT_EQ(st.weights, 4);
    EXPECT_EQ(st.bias_corrected, 3);  // not mm2: no bias to absorb the shift
    const auto before = Session(plain).run(feeds);
    const auto after = Session(corrected).run(feeds);
    for (const auto& y : {y1, y2, y3, y4}) {
      SCOPED_TRACE(quant_mode_name(mode) + " " + y);
      const std::vector<double> mb = channel_mean_diff(before.at(y), ref.at(y));
      const std::vector<double> ma = channel_mean_diff(after.at(y), ref.at(y));
      double sb = 0, sa = 0, eb = 0, ea = 0;
      for (size_t k = 0; k < mb.size(); ++k) {
        sb += mb[k] * mb[k];
        sa += ma[k] * ma[k];
      }
      for (int64_t i = 0; i < ref.at(y).numel(); ++i) {
        eb += std::pow(before.at(y).data<float>()[i] - ref.at(y).data<float>()[i], 2);
        ea += std::pow(after.at(y).data<float>()[i] - ref.at(y).data<float>()[i], 2);
      }
      if (y == y4) {  // untouched
        EXPECT_EQ(sa, sb);
        continue;
      }
      EXPECT_GT(sb, 0.0);
      EXPECT_LT(sa, 1e-4 * sb);  // the mean error is gone (float rounding remains)
      EXPECT_LT(ea, eb);         // and with it part of the squared error
    }
  }
  // The float model's biases are untouched (the corrected ones are new initializers).
  EXPECT_EQ(m.graph.initializer("c.b")->data<float>()[0], randn({24}, 11).data<float>()[0]);
  EXPECT_EQ(m.graph.initializer("mm.b")->data<float>()[0], randn({12}, 15).data<float>()[0]);
}

}  // namespace
}  // namespace trtutils::quantize
