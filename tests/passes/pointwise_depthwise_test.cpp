// fuse_pointwise_depthwise and com.trtutils::PointwiseDepthwise: inverted residual blocks
// (1x1 expansion -> 3x3 depthwise) become one node that computes what the plain graph computes,
// through oneDNN's fused kernel where it has one and the two convolutions elsewhere, with the
// blocked layout's padding lanes zero.
#include "ops/pointwise_depthwise.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "backends/cpu/blocked_layout.h"
#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/nn_kernels.h"
#include "ir/graph_builder.h"
#include "passes/pass_test_util.h"
#include "passes/passes.h"

namespace trtutils {
namespace {

using namespace pass_testing;  // NOLINT

ir::Attribute clip6(const char* name) {
  return ir::attr_floats(name, {0.0f, 6.0f});
}

struct Block {
  Shape x;  // [N, C, H, W]
  int64_t m, stride;
  bool native;  // oneDNN 2.6 runs it with its fused kernel (AVX-512)
};

// X blocked -> node(W 1x1, [B], act) -> node(W_dw 3x3, [B_dw], act_dw); the fast run and the
// reference run of the fused node against the two FusedConv nodes on the reference kernels.
void check_block(const Block& blk, const std::string& act, const std::string& act_dw, bool bias,
                 uint32_t seed) {
  const int64_t c = blk.x[1], m = blk.m, s = blk.stride;
  const int64_t oh = (blk.x[2] + 2 - 3) / s + 1, ow = (blk.x[3] + 2 - 3) / s + 1;
  const Tensor x = cpu::to_blocked(random_tensor(blk.x, seed));
  const Tensor w = random_tensor({m, c, 1, 1}, seed + 1, 0.3f);
  const Tensor b = random_tensor({m}, seed + 2);
  const Tensor w_dw = random_tensor({m, 1, 3, 3}, seed + 3, 0.3f);
  const Tensor b_dw = random_tensor({m}, seed + 4);
  ir::Node node;
  node.name = "pair";
  node.op_type = "PointwiseDepthwise";
  node.domain = "com.trtutils";
  node.inputs = {"x", "w", bias ? "b" : "", "w_dw", bias ? "b_dw" : ""};
  node.outputs = {"y"};
  node.attributes["dw_group"] = ir::attr_int("dw_group", m);
  node.attributes["dw_strides"] = ir::attr_ints("dw_strides", {s, s});
  node.attributes["dw_pads"] = ir::attr_ints("dw_pads", {1, 1, 1, 1});
  if (!act.empty()) node.attributes["activation"] = ir::attr_string("activation", act);
  if (act == "Clip") node.attributes["activation_params"] = clip6("activation_params");
  if (!act_dw.empty()) node.attributes["dw_activation"] = ir::attr_string("dw_activation", act_dw);
  if (act_dw == "Clip") node.attributes["dw_activation_params"] = clip6("dw_activation_params");
  const std::vector<const Tensor*> in{&x, &w, bias ? &b : nullptr, &w_dw, bias ? &b_dw : nullptr};
  ir::Graph g;  // what the builder asks before it fuses: the same answer as the kernel's
  g.value_info["x"] =
      ir::ValueInfo{"x", DataType::kFloat32, ir::sym_shape_from_static(x.shape()), {}};
  for (const auto& [name, t] : {std::pair<std::string, const Tensor*>{"w", &w},
                                {"b", &b},
                                {"w_dw", &w_dw},
                                {"b_dw", &b_dw}})
    g.initializers[name] = *t;
  EXPECT_EQ(cpu::nn::pointwise_depthwise_native(g, node), blk.native);
  const int64_t runs = cpu::nn::onednn_pointwise_depthwise_runs();
  const Tensor fast = cpu::run_node(node, kOpset, in, false).at(0);
  if (blk.native) {
    EXPECT_EQ(cpu::nn::onednn_pointwise_depthwise_runs(), runs + 1)
        << "the fused kernel did not run";
  }
  const Tensor ref = cpu::run_node(node, kOpset, in, true).at(0);
  const auto [pw, dw] = ops::split_pointwise_depthwise(node, "mid");
  const Tensor mid = cpu::run_node(pw, kOpset, {&x, &w, in[2]}, true).at(0);
  const Tensor want = cpu::run_node(dw, kOpset, {&mid, &w_dw, in[4]}, true).at(0);
  ASSERT_EQ(fast.shape(), (Shape{blk.x[0], (m + 15) / 16, oh, ow, 16}));
  expect_close(cpu::from_blocked(fast, m), cpu::from_blocked(want, m));
  expect_close(cpu::from_blocked(ref, m), cpu::from_blocked(want, m));
  const float* yp = fast.data<float>();
  for (int64_t i = 0; i < fast.numel(); ++i) {
    const int64_t channel = (i % 16) + 16 * ((i / (16 * oh * ow)) % ((m + 15) / 16));
    if (channel >= m) {
      ASSERT_EQ(yp[i], 0.0f) << "padding lane " << i;
    }
  }
}

TEST(PointwiseDepthwise, KernelMatchesTheTwoConvolutions) {
  // Native: oneDNN 2.6 fuses when the expanded tensor is large and its channels fill the 16
  // lanes (the first two); the others (small maps, odd sizes, M off the lanes) run as two
  // convolutions.
  const Block blocks[] = {{{1, 16, 112, 112}, 96, 2, true}, {{2, 24, 56, 56}, 144, 1, true},
                          {{4, 24, 56, 56}, 120, 2, false}, {{8, 24, 15, 15}, 144, 1, false},
                          {{1, 24, 17, 13}, 144, 2, false}, {{2, 8, 9, 9}, 20, 1, false},
                          {{3, 32, 7, 7}, 40, 2, false}};
  uint32_t seed = 10;
  for (const Block& blk : blocks)
    for (const auto& [act, act_dw] : {std::pair<std::string, std::string>{"Clip", "Clip"},
                                      {"", "Relu"},
                                      {"HardSwish", "Sigmoid"},
                                      {"Relu", ""}})
      for (bool bias : {true, false}) {
        SCOPED_TRACE(::testing::Message()
                     << "x " << shape_str(blk.x) << " m " << blk.m << " s " << blk.stride << " act "
                     << act << "/" << act_dw << " bias " << bias);
        check_block(blk, act, act_dw, bias, seed += 10);
      }
}

std::string conv(ir::GraphBuilder& b, const std::string& x, int64_t c, int64_t m, int64_t k,
                 int64_t stride, int64_t group, uint32_t seed) {
  const int64_t p = k / 2;
  const auto w =
      b.initializer("w" + std::to_string(seed), random_tensor({m, c / group, k, k}, seed, 0.3f));
  const auto bias = b.initializer("b" + std::to_string(seed), random_tensor({m}, seed + 1000));
  return b.node("Conv", {x, w, bias},
                {ir::attr_ints("pads", {p, p, p, p}), ir::attr_ints("strides", {stride, stride}),
                 ir::attr_int("group", group)})[0];
}

std::string relu6(ir::GraphBuilder& b, const std::string& x) {
  const std::string lo = "lo", hi = "hi";
  if (!b.graph().is_initializer(lo)) {
    b.initializer(lo, Tensor::from_vector<float>(DataType::kFloat32, {}, {0.0f}));
    b.initializer(hi, Tensor::from_vector<float>(DataType::kFloat32, {}, {6.0f}));
  }
  return b.node("Clip", {x, lo, hi})[0];
}

// MobileNetV2-like: stem, an inverted residual block with stride 2 and one with a residual, a
// block whose 5x5 depthwise stays unfused, an expansion read twice (unfused), the pools.
TEST(PointwiseDepthwise, PassFusesInvertedResidualBlocks) {
  ir::GraphBuilder b("blocks");
  const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({2, 3, 32, 30}));
  std::string v = relu6(b, conv(b, x, 3, 16, 3, 2, 1, 1));  // 16 x 16 x 15
  std::string t = relu6(b, conv(b, v, 16, 96, 1, 1, 1, 2));
  t = relu6(b, conv(b, t, 96, 96, 3, 2, 96, 3));
  v = conv(b, t, 96, 24, 1, 1, 1, 4);  // 24 x 8 x 8
  t = relu6(b, conv(b, v, 24, 144, 1, 1, 1, 5));
  t = relu6(b, conv(b, t, 144, 144, 3, 1, 144, 6));
  v = b.node("Add", {v, conv(b, t, 144, 24, 1, 1, 1, 7)})[0];
  t = relu6(b, conv(b, v, 24, 72, 1, 1, 1, 8));
  t = relu6(b, conv(b, t, 72, 72, 5, 1, 72, 9));  // 5x5: not fused
  v = conv(b, t, 72, 32, 1, 1, 1, 10);
  const std::string e = relu6(b, conv(b, v, 32, 64, 1, 1, 1, 11));  // read twice
  t = relu6(b, conv(b, e, 64, 64, 3, 1, 64, 12));
  v = b.node("Add", {conv(b, t, 64, 32, 1, 1, 1, 13), conv(b, e, 64, 32, 1, 1, 1, 14)})[0];
  const auto y = b.node("GlobalAveragePool", {v})[0];
  b.output(y, DataType::kFloat32);
  const ir::Model model = b.build(kOpset);
  const std::map<std::string, Tensor> feeds{{"x", random_tensor({2, 3, 32, 30}, 7)}};
  const auto [plain, plan] = plain_and_cpu_plan(model);
  EXPECT_EQ(count_op(plan, "PointwiseDepthwise"), 2u);
  const auto [plain2, unfused] = plain_and_cpu_plan(model, {"pointwise_depthwise"});
  EXPECT_EQ(count_op(unfused, "PointwiseDepthwise"), 0u);
  // The CPU backend's answer: oneDNN has no fused kernel for maps this small, so the pairs stay
  // two convolutions (the sessions and the builder ask it).
  ir::Graph asked = plain2;
  passes::run_cpu_layout_pipeline(asked, {}, {cpu::nn::pointwise_depthwise_native, nullptr});
  EXPECT_EQ(count_op(asked, "PointwiseDepthwise"), 0u);
  EXPECT_EQ(count_op(asked, "FusedConv"), count_op(unfused, "FusedConv"));
  expect_plan_matches_plain(plain, plan, feeds, y, "[2, 32, 1, 1]");
}

}  // namespace
}  // namespace trtutils
