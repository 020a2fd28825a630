// se_fusion pass (fuse_squeeze_excite) and the SqueezeExcite CPU kernel: squeeze-excitation blocks
// between convolutions become one node that stays in the channels-last chain, and compute what
// the plain graph computes, on both layouts, with either gate and operand order.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "backends/cpu/kernel_registry.h"
#include "engine/session.h"
#include "ir/graph_builder.h"
#include "passes/pass_test_util.h"
#include "passes/passes.h"

namespace trtutils {
namespace {

using namespace pass_testing;  // NOLINT

std::string conv(ir::GraphBuilder& b, const std::string& x, int64_t c, int64_t m, int64_t k,
                 uint32_t seed, bool bias = true) {
  const int64_t p = k / 2;
  const auto w = b.initializer("w" + std::to_string(seed), random_tensor({m, c, k, k}, seed, 0.3f));
  std::vector<std::string> in{x, w};
  if (bias) in.push_back(b.initializer("b" + std::to_string(seed), random_tensor({m}, seed + 99)));
  return b.node("Conv", in, {ir::attr_ints("pads", {p, p, p, p})})[0];
}

struct SeCase {
  bool hard_gate = false;      // HardSigmoid node (MobileNetV3) instead of Sigmoid
  bool gate_first = false;     // Mul(gate, X) instead of Mul(X, gate)
  bool silu = true;            // fc1's activation: SiLU (EfficientNet) or Relu
  bool pooled_output = false;  // the pooled value is also a graph output: no fusion
};

// conv 3x3 (C=13) -> Relu -> SE (13 -> 4 -> 13) -> conv 1x1 (13 -> 24): X of the SE block has
// a channels-last twin, so the fused node joins the chain.
ir::Model se_model(const SeCase& c, int64_t batch) {
  ir::GraphBuilder b("se");
  const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({batch, 5, 11, 9}));
  const std::string v = b.node("Relu", {conv(b, x, 5, 13, 3, 1)})[0];
  const std::string g = b.node("GlobalAveragePool", {v})[0];
  std::string h = conv(b, g, 13, 4, 1, 2);
  h = c.silu ? b.node("Mul", {h, b.node("Sigmoid", {h})[0]})[0] : b.node("Relu", {h})[0];
  std::string s = conv(b, h, 4, 13, 1, 3, /*bias=*/!c.hard_gate);
  s = c.hard_gate ? b.node("HardSigmoid", {s}, {ir::attr_float("alpha", 1.0f / 6)})[0]
                  : b.node("Sigmoid", {s})[0];
  const std::string m = c.gate_first ? b.node("Mul", {s, v})[0] : b.node("Mul", {v, s})[0];
  const std::string y = conv(b, m, 13, 24, 1, 4);
  b.output(y, DataType::kFloat32);
  if (c.pooled_output) b.output(g, DataType::kFloat32);
  return b.build(kOpset);
}

TEST(SeFusion, FusedBlockStaysBlockedAndMatches) {
  for (const SeCase c : {SeCase{}, SeCase{.hard_gate = true, .silu = false},
                         SeCase{.gate_first = true}, SeCase{.pooled_output = true}}) {
    SCOPED_TRACE(::testing::Message() << "hard " << c.hard_gate << " first " << c.gate_first
                                      << " silu " << c.silu << " pooled " << c.pooled_output);
    const ir::Model model = se_model(c, 2);
    const std::map<std::string, Tensor> feeds{{"x", random_tensor({2, 5, 11, 9}, 7)}};
    ir::Graph plain = model.graph, fused = model.graph;
    passes::run_pipeline(plain, kOpset);
    passes::run_pipeline(fused, kOpset);
    passes::run_cpu_layout_pipeline(fused);
    const size_t want_se = c.pooled_output ? 0 : 1;
    EXPECT_EQ(count_op(fused, "SqueezeExcite"), want_se);
    EXPECT_EQ(count_op(fused, "GlobalAveragePool"), 1 - want_se);
    if (want_se) {
      EXPECT_EQ(count_op(fused, "ToBlocked"), 1u);    // x in (5 channels: not read plain)
      EXPECT_EQ(count_op(fused, "FromBlocked"), 1u);  // y out
      EXPECT_EQ(count_op(fused, "Mul"), 0u);
      size_t blocked = 0;
      for (const auto& n : fused.nodes) blocked += n.attr_int("blocked", 0) == 1;
      EXPECT_EQ(blocked, 3u) << "both convolutions and the block";
    }
    const auto want = execute(plain, feeds, /*reference=*/true);
    const auto fast = execute(fused, feeds);
    const auto ref = execute(fused, feeds, /*reference=*/true);
    for (const auto& [name, t] : want) {
      expect_close(fast.at(name), t);
      expect_close(ref.at(name), t);
    }
  }
}

// Channels-first (no convolution around it: X is the graph input), batch 3, and through a
// Session twice (X donated: the block scales it in place).
TEST(SeFusion, ChannelsFirstAndSessionMatchReference) {
  ir::GraphBuilder b("se_first");
  const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({3, 13, 6, 7}));
  const std::string v = b.node("Relu", {x})[0];
  const std::string g = b.node("GlobalAveragePool", {v})[0];
  const std::string h = b.node("Relu", {conv(b, g, 13, 4, 1, 2)})[0];
  const std::string s = b.node("Sigmoid", {conv(b, h, 4, 13, 1, 3)})[0];
  const std::string y = b.node("Mul", {v, s})[0];
  b.output(y, DataType::kFloat32);
  const ir::Model model = b.build(kOpset);
  const std::map<std::string, Tensor> feeds{{"x", random_tensor({3, 13, 6, 7}, 5)}};
  const auto [plain, fused] = plain_and_cpu_plan(model);
  ASSERT_EQ(count_op(fused, "SqueezeExcite"), 1u);
  EXPECT_EQ(count_op(fused, "Transpose"), 0u);
  const auto want = execute(plain, feeds, /*reference=*/true);
  expect_close(execute(fused, feeds).at(y), want.at(y));
  Session session(model);
  for (int run = 0; run < 2; ++run) expect_close(session.run(feeds).at(y), want.at(y));
  // Switched off by name: the block stays as five nodes.
  ir::Graph off = model.graph;
  passes::run_pipeline(off, kOpset);
  passes::run_cpu_layout_pipeline(off, {"se_fusion"});
  EXPECT_EQ(count_op(off, "SqueezeExcite"), 0u);
}

// Large enough for the two-thread path (40 x 114 x 62 > 256 Ki floats: per-thread partial sums),
// channels-last, batch 1 and 2.
TEST(SeFusion, LargeBlockMatchesReference) {
  for (int64_t batch : {1, 2}) {
    ir::GraphBuilder b("se_large");
    const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({batch, 3, 114, 62}));
    const std::string v = conv(b, x, 3, 40, 3, 1);
    const std::string g = b.node("GlobalAveragePool", {v})[0];
    const std::string h = b.node("Relu", {conv(b, g, 40, 10, 1, 2)})[0];
    const std::string s = b.node("Sigmoid", {conv(b, h, 10, 40, 1, 3)})[0];
    const std::string y = conv(b, b.node("Mul", {s, v})[0], 40, 16, 1, 4);
    b.output(y, DataType::kFloat32);
    const ir::Model model = b.build(kOpset);
    const std::map<std::string, Tensor> feeds{{"x", random_tensor({batch, 3, 114, 62}, 3)}};
    Session fast(model), ref(model, {.use_reference = true});
    expect_close(fast.run(feeds).at(y), ref.run(feeds).at(y));
  }
}

}  // namespace
}  // namespace trtutils
