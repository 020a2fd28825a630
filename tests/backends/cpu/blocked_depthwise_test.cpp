// blocked_depthwise.h through the blocked FusedConv kernel: 3x3 and 5x5 depthwise convolutions at
// the shapes the register blocks do not divide (1-3 columns, odd widths, stride 2, padding 0 or 1
// and asymmetric SAME padding, channel counts off the 16 lanes, batches), and maps up to 16 px
// wide (the windowed rows, SiLU in registers), match the reference, with each activation the
// kernel applies, and leave the padding lanes zero.
#include <gtest/gtest.h>

#include <string>

#include "backends/cpu/blocked_layout.h"
#include "backends/cpu/nn_kernels.h"
#include "passes/pass_test_util.h"

namespace trtutils {
namespace {

using namespace pass_testing;  // NOLINT

struct Case {
  Shape x;  // [N, C, H, W]
  int64_t k, stride;
  std::vector<int64_t> pads;  // top, left, bottom, right
};

TEST(BlockedDepthwise, MatchesReferenceAtAwkwardShapes) {
  const Case cases[] = {
      {{1, 16, 1, 1}, 3, 1, {1, 1, 1, 1}},    {{2, 5, 3, 2}, 3, 1, {1, 1, 1, 1}},
      {{1, 40, 9, 23}, 3, 1, {1, 1, 1, 1}},   {{2, 24, 11, 17}, 3, 2, {1, 1, 1, 1}},
      {{1, 33, 8, 8}, 3, 2, {0, 0, 1, 1}},    {{1, 16, 7, 30}, 3, 1, {0, 0, 0, 0}},
      {{1, 144, 14, 14}, 3, 2, {1, 1, 1, 1}}, {{3, 20, 2, 9}, 3, 2, {1, 0, 1, 0}},
      {{1, 24, 14, 14}, 5, 1, {2, 2, 2, 2}},  {{2, 40, 15, 13}, 5, 2, {2, 2, 2, 2}},
      {{1, 17, 3, 4}, 5, 1, {2, 2, 2, 2}},    {{1, 32, 28, 28}, 5, 2, {1, 1, 2, 2}},
      {{1, 16, 9, 31}, 5, 1, {0, 1, 0, 1}},   {{1, 20, 7, 7}, 5, 1, {1, 2, 3, 1}},
      {{2, 48, 7, 7}, 3, 1, {1, 1, 1, 1}},    {{1, 32, 16, 16}, 3, 1, {1, 1, 1, 1}}};
  uint32_t seed = 300;
  for (const Case& c : cases) {
    const int64_t ch = c.x[1];
    const int64_t oh = (c.x[2] + c.pads[0] + c.pads[2] - c.k) / c.stride + 1;
    const int64_t ow = (c.x[3] + c.pads[1] + c.pads[3] - c.k) / c.stride + 1;
    for (const std::string act : {"", "Relu", "Clip", "Silu"}) {
      SCOPED_TRACE(::testing::Message()
                   << "x " << shape_str(c.x) << " k" << c.k << " s" << c.stride << " pads "
                   << c.pads[0] << c.pads[1] << c.pads[2] << c.pads[3] << " act " << act);
      const Tensor x = cpu::to_blocked(random_tensor(c.x, seed++));
      const Tensor w = random_tensor({ch, 1, c.k, c.k}, seed++, 0.3f);
      const Tensor bias = random_tensor({ch}, seed++);
      ir::Node node = fused_conv_node(
          false,
          {ir::attr_ints("pads", c.pads), ir::attr_ints("strides", {c.stride, c.stride}),
           ir::attr_int("group", ch), ir::attr_int("blocked", 1)},
          act);
      if (act == "Clip")
        node.attributes["activation_params"] = ir::attr_floats("activation_params", {0.5f, 2.0f});
      const int64_t before = cpu::nn::onednn_stats().depthwise_runs;
      const auto [fast, ref] = fast_and_reference(node, {&x, &w, &bias});
      // Stride 2 runs on oneDNN (as fast there); the comparison holds either way.
      EXPECT_EQ(cpu::nn::onednn_stats().depthwise_runs, before + (c.stride == 1 ? 1 : 0));
      ASSERT_EQ(fast.shape(), (Shape{c.x[0], (ch + 15) / 16, oh, ow, 16}));
      expect_close(cpu::from_blocked(fast, ch), cpu::from_blocked(ref, ch), 1e-5);
      const float* yp = fast.data<float>();
      for (int64_t i = 0; i < fast.numel(); ++i) {
        const int64_t channel = (i % 16) + 16 * ((i / (16 * oh * ow)) % ((ch + 15) / 16));
        if (channel >= ch) {
          ASSERT_EQ(yp[i], 0.0f) << "padding lane " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace trtutils
