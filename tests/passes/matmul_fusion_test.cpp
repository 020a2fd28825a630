// matmul_fusion pass (passes.h fuse_matmuls): MatMul -> Add(bias) [-> erf GELU] [-> Add(residual)]
// becomes one FusedMatMul that computes what the graph computed (oneDNN path and reference), the
// bias in either operand order, the GELU written with Div or Mul; nothing fuses when a value
// fused away has another reader or the weight is not a constant. Then a transformer block's MLP
// as torch exports it, and Gemm with a constant weight (a classifier head); one-row products.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/graph_builder.h"
#include "passes/pass_test_util.h"
#include "passes/passes.h"

namespace trtutils {
namespace {

using namespace pass_testing;  // NOLINT

Tensor scalar(float v) {
  return Tensor::from_vector<float>(DataType::kFloat32, {}, {v});
}

struct Net {
  ir::GraphBuilder b{"mlp"};
  std::string x;
  std::map<std::string, Tensor> feeds;
  int constants = 0;
  std::string constant(float v) {
    return b.initializer("c" + std::to_string(constants++), scalar(v));
  }
};

constexpr int64_t kRows = 5, kK = 24, kN = 40;

// x [2, kRows, kK] -> MatMul(W [kK, kN]) -> Add(bias) (bias first when bias_first).
std::string matmul_bias(Net& net, bool bias_first, uint32_t seed) {
  net.x = net.b.input("x", DataType::kFloat32, {2, kRows, kK});
  net.feeds["x"] = random_tensor({2, kRows, kK}, seed);
  const auto w = net.b.initializer("w", random_tensor({kK, kN}, seed + 1, 0.3f));
  const auto bias = net.b.initializer("bias", random_tensor({kN}, seed + 2));
  const auto y = net.b.node("MatMul", {net.x, w})[0];
  return net.b.node(
      "Add", bias_first ? std::vector<std::string>{bias, y} : std::vector<std::string>{y, bias})[0];
}

// x * 0.5 * (1 + erf(x / sqrt 2)) as torch writes it (Div, or Mul by 1 / sqrt 2).
std::string gelu(Net& net, const std::string& x, bool div) {
  const auto scaled = div ? net.b.node("Div", {x, net.constant(std::sqrt(2.0f))})[0]
                          : net.b.node("Mul", {x, net.constant(1.0f / std::sqrt(2.0f))})[0];
  const auto e = net.b.node("Erf", {scaled})[0];
  const auto one = net.b.node("Add", {e, net.constant(1.0f)})[0];
  const auto m = net.b.node("Mul", {x, one})[0];
  return net.b.node("Mul", {m, net.constant(0.5f)})[0];
}

// Runs the model with and without matmul fusion (the CPU plan's passes), compares the outputs of
// the fused graph (oneDNN and reference kernels) with the plain one's; returns the fused graph.
ir::Graph check_fusion(const ir::Model& model, const std::map<std::string, Tensor>& feeds,
                       size_t expect_fused) {
  ir::Graph plain = model.graph, fused = model.graph;
  passes::run_pipeline(plain, kOpset);
  passes::run_pipeline(fused, kOpset);
  passes::run_cpu_layout_pipeline(plain, {"matmul_fusion"});
  passes::run_cpu_layout_pipeline(fused);
  EXPECT_EQ(count_op(fused, "FusedMatMul"), expect_fused);
  const auto a = execute(plain, feeds, /*reference=*/true);
  const auto b = execute(fused, feeds);
  const auto c = execute(fused, feeds, /*reference=*/true);
  for (const auto& [name, t] : a) {
    SCOPED_TRACE(name);
    expect_close(b.at(name), t, 1e-5);
    expect_close(c.at(name), t, 1e-6);
  }
  return fused;
}

TEST(MatmulFusion, BiasGeluAndResidualFuse) {
  for (bool bias_first : {false, true})
    for (int tail = 0; tail < 4; ++tail) {  // 0 bias, 1 GELU (Div), 2 GELU (Mul), 3 residual
      SCOPED_TRACE(::testing::Message() << "bias_first " << bias_first << " tail " << tail);
      Net net;
      std::string y = matmul_bias(net, bias_first, 10);
      if (tail == 1 || tail == 2) y = gelu(net, y, tail == 1);
      if (tail == 3) {
        const auto r = net.b.input("r", DataType::kFloat32, {2, kRows, kN});
        net.feeds["r"] = random_tensor({2, kRows, kN}, 20);
        y = net.b.node("Add", {r, y})[0];
      }
      net.b.output(y, DataType::kFloat32);
      const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 1);
      ASSERT_EQ(g.nodes.size(), 1u);
      EXPECT_EQ(g.nodes[0].domain, "com.trtutils");
      EXPECT_EQ(g.nodes[0].attr_int("gelu", -1), tail == 1 || tail == 2 ? 1 : 0);
      EXPECT_EQ(g.nodes[0].inputs.size(), tail == 3 ? 4u : 3u);
      EXPECT_EQ(g.nodes[0].outputs[0], y);
    }
}

// One row (a batch-1 head: the single-row path) with the GELU and with a residual.
TEST(MatmulFusion, OneRowWithGeluAndResidual) {
  for (bool residual : {false, true}) {
    SCOPED_TRACE(residual);
    Net net;
    net.x = net.b.input("x", DataType::kFloat32, {1, kK});
    net.feeds["x"] = random_tensor({1, kK}, 80);
    const auto w = net.b.initializer("w", random_tensor({kK, kN}, 81, 0.3f));
    const auto bias = net.b.initializer("bias", random_tensor({kN}, 82));
    std::string y =
        gelu(net, net.b.node("Add", {net.b.node("MatMul", {net.x, w})[0], bias})[0], true);
    if (residual) {
      const auto r = net.b.input("r", DataType::kFloat32, {1, kN});
      net.feeds["r"] = random_tensor({1, kN}, 83);
      y = net.b.node("Add", {y, r})[0];
    }
    net.b.output(y, DataType::kFloat32);
    check_fusion(net.b.build(kOpset), net.feeds, 1);
  }
}

// A value fused away that is also read elsewhere (or is a graph output) stops the fusion there.
TEST(MatmulFusion, SharedValuesStayUnfused) {
  {  // the product read twice: nothing fuses
    Net net;
    const auto y = matmul_bias(net, false, 30);
    const auto mm = net.b.graph().nodes[0].outputs[0];
    net.b.output(y, DataType::kFloat32);
    net.b.output(net.b.node("Relu", {mm})[0], DataType::kFloat32);
    check_fusion(net.b.build(kOpset), net.feeds, 0);
  }
  {  // the GELU's input is also a graph output: the bias fuses, the GELU stays
    Net net;
    const auto y = matmul_bias(net, false, 40);
    net.b.output(y, DataType::kFloat32);
    net.b.output(gelu(net, y, true), DataType::kFloat32);
    const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 1);
    EXPECT_EQ(count_op(g, "Erf"), 1u);
  }
  {  // a weight computed at run time: no fusion
    Net net;
    net.x = net.b.input("x", DataType::kFloat32, {kRows, kK});
    const auto w = net.b.input("w", DataType::kFloat32, {kK, kN});
    net.feeds["x"] = random_tensor({kRows, kK}, 50);
    net.feeds["w"] = random_tensor({kK, kN}, 51);
    const auto bias = net.b.initializer("bias", random_tensor({kN}, 52));
    net.b.output(net.b.node("Add", {net.b.node("MatMul", {net.x, w})[0], bias})[0],
                 DataType::kFloat32);
    check_fusion(net.b.build(kOpset), net.feeds, 0);
  }
}

// A ViT MLP block: fc1 + bias + GELU, fc2 + bias + the residual: two FusedMatMuls, nothing else.
TEST(MatmulFusion, TransformerMlpIsTwoNodes) {
  Net net;
  std::string h = gelu(net, matmul_bias(net, true, 60), true);
  const auto w2 = net.b.initializer("w2", random_tensor({kN, kK}, 61, 0.3f));
  const auto b2 = net.b.initializer("b2", random_tensor({kK}, 62));
  h = net.b.node("Add", {b2, net.b.node("MatMul", {h, w2})[0]})[0];
  const auto y = net.b.node("Add", {net.x, h})[0];
  net.b.output(y, DataType::kFloat32);
  const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 2);
  EXPECT_EQ(g.nodes.size(), 2u);
}

// Gemm with a constant B (a classifier head): one FusedMatMul on alpha * op(B) and beta * C for
// transB 0 / 1, C absent, one value, N values or [1, N]; a C of [M, N], transA or a B computed
// at run time stay Gemm.
TEST(MatmulFusion, GemmWithConstantWeightFuses) {
  struct Case {
    int64_t trans_b;
    float alpha, beta;
    std::vector<int64_t> c_shape;  // {-1}: no C
    size_t fused;
  };
  const std::vector<Case> cases = {{1, 1.0f, 1.0f, {kN}, 1},    {0, 1.0f, 1.0f, {kN}, 1},
                                   {1, 0.5f, 2.0f, {1, kN}, 1}, {0, 1.5f, 1.0f, {-1}, 1},
                                   {1, 1.0f, 0.5f, {1}, 1},     {1, 1.0f, 1.0f, {kRows, kN}, 0}};
  for (const int64_t rows : {kRows, int64_t{1}})  // 1: the single-row path (gemv_row)
    for (const Case& c : cases) {
      if (rows == 1 && c.c_shape[0] == kRows) continue;
      SCOPED_TRACE(::testing::Message()
                   << "rows " << rows << " transB " << c.trans_b << " C rank " << c.c_shape.size());
      Net net;
      net.x = net.b.input("x", DataType::kFloat32, {rows, kK});
      net.feeds["x"] = random_tensor({rows, kK}, 70);
      const std::vector<int64_t> bs =
          c.trans_b ? std::vector<int64_t>{kN, kK} : std::vector<int64_t>{kK, kN};
      std::vector<std::string> in = {net.x, net.b.initializer("w", random_tensor(bs, 71, 0.3f))};
      if (c.c_shape[0] != -1) in.push_back(net.b.initializer("c", random_tensor(c.c_shape, 72)));
      const auto y =
          net.b.node("Gemm", in,
                     {ir::attr_int("transB", c.trans_b), ir::attr_float("alpha", c.alpha),
                      ir::attr_float("beta", c.beta)})[0];
      net.b.output(net.b.node("Relu", {y})[0], DataType::kFloat32);
      const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, c.fused);
      if (c.fused) {
        EXPECT_EQ(g.initializers.count("w"), 0u);  // the original weight is gone
      }
    }
  Net net;  // transA: stays
  net.x = net.b.input("x", DataType::kFloat32, {kK, kRows});
  net.feeds["x"] = random_tensor({kK, kRows}, 73);
  const auto w = net.b.initializer("w", random_tensor({kK, kN}, 74, 0.3f));
  net.b.output(net.b.node("Gemm", {net.x, w}, {ir::attr_int("transA", 1)})[0], DataType::kFloat32);
  check_fusion(net.b.build(kOpset), net.feeds, 0);
}

// An in-projection sliced into q, k and v along the last axis (ends past the end, negative
// starts, axis -1 or 2): one FusedMatMul per Slice on its columns, no Slice left; a product that
// another node also reads stays one FusedMatMul with its Slices.
TEST(MatmulFusion, SlicedProductSplitsIntoColumnProducts) {
  for (const bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "shared" : "sliced only");
    Net net;
    const auto p = matmul_bias(net, false, 80);
    auto ints = [&](const std::string& name, int64_t v) {
      return net.b.initializer(name, Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {v}));
    };
    const std::vector<std::vector<std::string>> slices = {
        {ints("s0", 0), ints("e0", 16), ints("a0", -1)},
        {ints("s1", 16), ints("e1", INT64_MAX), ints("a1", 2)},
        {ints("s2", -12), ints("e2", -4), ints("a2", -1)}};
    for (const auto& s : slices) {
      std::vector<std::string> in = {p};
      in.insert(in.end(), s.begin(), s.end());
      net.b.output(net.b.node("Relu", {net.b.node("Slice", in)[0]})[0], DataType::kFloat32);
    }
    if (shared) net.b.output(net.b.node("Relu", {p})[0], DataType::kFloat32);
    const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, shared ? 1 : 3);
    EXPECT_EQ(count_op(g, "Slice"), shared ? 3u : 0u);
  }
}

// ViT's attention output: the out-projection's [S, D] product reshaped to [S, 1, D], moved to
// [1, S, D] by a Transpose of a size-1 axis, then the residual Add: one FusedMatMul with the
// residual, its A reshaped; a Transpose that really moves data stops it.
TEST(MatmulFusion, ResidualThroughOrderKeepingViews) {
  for (const bool moves : {false, true}) {
    SCOPED_TRACE(moves ? "a real transpose" : "views only");
    Net net;
    net.x = net.b.input("x", DataType::kFloat32, {kRows, kK});
    net.feeds["x"] = random_tensor({kRows, kK}, 90);
    const auto w = net.b.initializer("w", random_tensor({kK, kN}, 91, 0.3f));
    const auto bias = net.b.initializer("bias", random_tensor({kN}, 92));
    const auto p = net.b.node("Add", {net.b.node("MatMul", {net.x, w})[0], bias})[0];
    const auto dims = net.b.initializer(
        "dims", Tensor::from_vector<int64_t>(DataType::kInt64, {3}, {kRows, 1, kN}));
    const auto r = net.b.node("Reshape", {p, dims})[0];
    const std::vector<int64_t> perm =
        moves ? std::vector<int64_t>{2, 1, 0} : std::vector<int64_t>{1, 0, 2};
    const auto t = net.b.node("Transpose", {r}, {ir::attr_ints("perm", perm)})[0];
    const Shape rs = moves ? Shape{kN, 1, kRows} : Shape{1, kRows, kN};
    const auto res = net.b.input("res", DataType::kFloat32, ir::sym_shape_from_static(rs));
    net.feeds["res"] = random_tensor(rs, 93);
    net.b.output(net.b.node("Add", {t, res})[0], DataType::kFloat32);
    const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 1);
    EXPECT_EQ(count_op(g, "Add"), moves ? 1u : 0u);
    EXPECT_EQ(count_op(g, "Transpose"), moves ? 1u : 0u);
  }
}

}  // namespace
}  // namespace trtutils
