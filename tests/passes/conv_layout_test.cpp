// The CPU plan's layout passes (conv_blocked_layout, conv_channels_last) and the channels-last
// FusedConv kernel: a ResNet-like graph computes what the plain graph computes in either layout
// with only the chain's boundaries converted, and the kernel's oneDNN channels-last path matches
// the reference at awkward channel counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>

#include "backends/cpu/blocked_layout.h"
#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/nn_kernels.h"
#include "engine/session.h"
#include "ir/graph_builder.h"
#include "passes/pass_test_util.h"
#include "passes/passes.h"

namespace trtutils {
namespace {

using namespace pass_testing;  // NOLINT

std::string conv(ir::GraphBuilder& b, const std::string& x, int64_t c, int64_t m, int64_t k,
                 int64_t stride, uint32_t seed) {
  const int64_t p = k / 2;
  const auto w = b.initializer("w" + std::to_string(seed), random_tensor({m, c, k, k}, seed, 0.3f));
  const auto bias = b.initializer("b" + std::to_string(seed), random_tensor({m}, seed + 1000));
  return b.node(
      "Conv", {x, w, bias},
      {ir::attr_ints("pads", {p, p, p, p}), ir::attr_ints("strides", {stride, stride})})[0];
}

// stem conv (3 channels) -> MaxPool (channels-last too) -> bottleneck with a projection shortcut
// (1x1 stride 2)
// -> bottleneck with an identity shortcut -> GlobalAveragePool and GlobalMaxPool; channel counts
// off the 16-wide blocks (13, 24).
TEST(ConvLayout, ResidualChainStaysInOneLayoutAndMatches) {
  ir::GraphBuilder b("chain");
  const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({2, 3, 19, 21}));
  std::string v = b.node("Relu", {conv(b, x, 3, 13, 3, 1, 1)})[0];
  v = b.node("MaxPool", {v},
             {ir::attr_ints("kernel_shape", {3, 3}), ir::attr_ints("strides", {2, 2}),
              ir::attr_ints("pads", {1, 1, 1, 1})})[0];
  // bottleneck 1: 1x1 -> 3x3 stride 2 -> 1x1, shortcut 1x1 stride 2
  std::string t = b.node("Relu", {conv(b, v, 13, 24, 1, 1, 2)})[0];
  t = b.node("Relu", {conv(b, t, 24, 24, 3, 2, 3)})[0];
  t = conv(b, t, 24, 13, 1, 1, 4);
  const std::string s = conv(b, v, 13, 13, 1, 2, 5);
  v = b.node("Relu", {b.node("Add", {t, s})[0]})[0];
  // bottleneck 2: identity shortcut
  t = b.node("Relu", {conv(b, v, 13, 24, 1, 1, 6)})[0];
  t = b.node("Relu", {conv(b, t, 24, 24, 3, 1, 7)})[0];
  t = conv(b, t, 24, 13, 1, 1, 8);
  v = b.node("Relu", {b.node("Add", {v, t})[0]})[0];
  const auto y = b.node("GlobalAveragePool", {v})[0];
  const auto y_max = b.node("GlobalMaxPool", {v})[0];
  b.output(y, DataType::kFloat32);
  b.output(y_max, DataType::kFloat32);
  const ir::Model model = b.build(kOpset);
  const std::map<std::string, Tensor> feeds{{"x", random_tensor({2, 3, 19, 21}, 99)}};

  ir::Graph plain = model.graph;
  passes::run_pipeline(plain, kOpset);
  const auto want = execute(plain, feeds, /*reference=*/true);
  // The blocked layout (the default), then channels-last (blocked_layout off).
  for (const char* layout : {"blocked", "channels_last"}) {
    SCOPED_TRACE(layout);
    const bool blocked = std::string(layout) == "blocked";
    ir::Graph last = model.graph;
    passes::run_pipeline(last, kOpset);
    passes::run_cpu_layout_pipeline(
        last, blocked ? std::set<std::string>{} : std::set<std::string>{"blocked_layout"});
    size_t converted = 0;
    for (const auto& n : last.nodes) converted += n.attr_int(layout, 0) == 1;
    EXPECT_EQ(converted, 11u);  // 8 convolutions, the MaxPool and the two global pools
    EXPECT_EQ(count_op(last, "Conv"), 0u);
    // Channels-last: one Transpose, x in (the global pools read the channels-last twin and
    // write [N, C, 1, 1]). Blocked: none (the 3-channel stem reads x plain).
    EXPECT_EQ(count_op(last, "Transpose"), blocked ? 0u : 1u);
    EXPECT_EQ(count_op(last, "ToBlocked") + count_op(last, "FromBlocked"), 0u);

    const auto fast = execute(last, feeds);
    const auto ref = execute(last, feeds, /*reference=*/true);  // the converted reference path
    for (const std::string& out : {y, y_max}) {
      SCOPED_TRACE(out);
      expect_close(fast.at(out), want.at(out));
      expect_close(ref.at(out), want.at(out));
    }
  }

  // Switched off by name: nothing converted.
  ir::Graph off = model.graph;
  passes::run_pipeline(off, kOpset);
  passes::run_cpu_layout_pipeline(off, {"conv_layout"});
  EXPECT_EQ(count_op(off, "Transpose"), 0u);
}

// Channel concatenations in the blocked layout: two convolution branches of 16 and 32 channels
// concatenated and read by a convolution, or by BatchNormalization + Relu (DenseNet's
// pre-activation), stay blocked (no conversion between); with a reader that runs only plain
// (Sigmoid) or a channel count off the 16 lanes, the Concat stays plain. All match the plain graph.
TEST(ConvLayout, BlockedConcatOfBranches) {
  // 0 conv reader, 1 BatchNormalization + Relu reader, 2 Sigmoid reader, 3 13 + 32 channels
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE(variant);
    ir::GraphBuilder b("branches");
    const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({2, 3, 10, 12}));
    const std::string stem = b.node("Relu", {conv(b, x, 3, 16, 3, 1, 1)})[0];
    const std::string a = conv(b, stem, 16, variant == 3 ? 13 : 16, 1, 1, 2);
    const std::string c = b.node("Relu", {conv(b, stem, 16, 32, 3, 1, 3)})[0];
    std::string cat = b.node("Concat", {a, c}, {ir::attr_int("axis", 1)})[0];
    const int64_t cc = variant == 3 ? 45 : 48;
    if (variant == 1) {
      std::vector<std::string> in{cat};
      for (uint32_t k = 0; k < 4; ++k) {
        Tensor t = random_tensor({cc}, 40 + k, 0.3f);
        for (int64_t i = 0; i < cc; ++i) t.data<float>()[i] += k == 3 || k == 0 ? 1.0f : 0.0f;
        in.push_back(b.initializer("bn" + std::to_string(k), t));
      }
      cat = b.node("Relu", {b.node("BatchNormalization", in)[0]})[0];
    }
    if (variant == 2) cat = b.node("Sigmoid", {cat})[0];
    const auto y = b.node("GlobalAveragePool", {conv(b, cat, cc, 24, 3, 1, 4)})[0];
    b.output(y, DataType::kFloat32);
    const ir::Model model = b.build(kOpset);
    const std::map<std::string, Tensor> feeds{{"x", random_tensor({2, 3, 10, 12}, 5)}};
    const auto [plain, blocked] = plain_and_cpu_plan(model);
    size_t blocked_concats = 0;
    for (const auto& n : blocked.nodes)
      blocked_concats += n.op_type == "Concat" && n.attr_int("blocked", 0) == 1;
    EXPECT_EQ(blocked_concats, variant <= 1 ? 1u : 0u);
    EXPECT_EQ(count_op(blocked, "FromBlocked"), variant <= 1 ? 0u : 2u);
    const auto want = execute(plain, feeds, /*reference=*/true);
    expect_close(execute(blocked, feeds).at(y), want.at(y));
    expect_close(execute(blocked, feeds, /*reference=*/true).at(y), want.at(y));
  }
}

// Through a Session (layout pass, donated residual buffers, pooled tensors): two runs match the
// reference session, and a residual that is read again later (here: also a graph output, and
// read by a second conv) is not overwritten by the in-place sum.
TEST(ConvLayout, SessionInPlaceResidualMatchesReference) {
  for (bool residual_read_later : {false, true}) {
    SCOPED_TRACE(residual_read_later ? "residual read later" : "residual dies at the add");
    ir::GraphBuilder b("blocks");
    const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({2, 24, 9, 11}));
    const std::string a = b.node("Relu", {conv(b, x, 24, 24, 3, 1, 1)})[0];
    const std::string t1 = b.node("Relu", {conv(b, a, 24, 24, 3, 1, 5)})[0];
    const std::string t = conv(b, t1, 24, 24, 1, 1, 2);
    const std::string v = b.node("Relu", {b.node("Add", {t, a})[0]})[0];  // a: the residual
    std::string y = conv(b, v, 24, 16, 3, 1, 3);
    if (residual_read_later) {
      y = b.node("Add", {y, conv(b, a, 24, 16, 1, 1, 4)})[0];
      b.output(a, DataType::kFloat32);
    }
    b.output(y, DataType::kFloat32);
    const ir::Model model = b.build(kOpset);
    const std::map<std::string, Tensor> feeds{{"x", random_tensor({2, 24, 9, 11}, 7)}};
    Session fast(model), ref(model, {.use_reference = true});
    const auto want = ref.run(feeds);
    for (int run = 0; run < 2; ++run) {
      const auto got = fast.run(feeds);
      for (const auto& [name, t] : want) {
        SCOPED_TRACE(name);
        expect_close(got.at(name), t);
      }
    }
  }
}

// A kernel test's convolution: X (channels-first shape), M outputs, k x k, stride, group.
struct Geo {
  Shape x;
  int64_t m, k, stride, group;
};

// The first six geometries of both kernel tests: channel counts off the 16 lanes, pointwise,
// strided, 3x3 (a 3-channel input), depthwise, grouped; the stride of the 3-channel one given.
std::vector<Geo> two_d_geometries(int64_t stem_stride) {
  return {{{2, 13, 7, 9}, 24, 1, 1, 1},
          {{3, 17, 9, 9}, 31, 1, 2, 1},
          {{1, 3, 11, 13}, 16, 3, stem_stride, 1},
          {{2, 32, 6, 6}, 32, 3, 2, 1},
          {{1, 24, 7, 7}, 24, 3, 1, 24},
          {{1, 16, 5, 6}, 32, 3, 1, 4}};
}

// The channels-last FusedConv kernel against the reference (channels-first on permuted copies),
// for pointwise (the matmul path, and strided: the convolution path), 3x3, grouped and depthwise,
// 1-D and 3-D, with and without a residual and an activation.
TEST(ConvLayout, ChannelsLastKernelMatchesReference) {
  std::vector<Geo> geos = two_d_geometries(1);
  geos.push_back({{2, 13, 17}, 15, 3, 1, 1});      // 1-D
  geos.push_back({{1, 8, 4, 5, 6}, 12, 3, 1, 1});  // 3-D
  uint32_t seed = 20;
  for (const Geo& g : geos) {
    const size_t nsp = g.x.size() - 2;
    for (bool residual : {false, true}) {
      for (const std::string act : {"", "Relu"}) {
        SCOPED_TRACE(::testing::Message()
                     << "x " << shape_str(g.x) << " m" << g.m << " k" << g.k << " s" << g.stride
                     << " g" << g.group << " residual " << residual << " act " << act);
        const int64_t p = g.k / 2;
        Shape xl{g.x[0]}, yl{g.x[0]}, ws{g.m, g.x[1] / g.group};
        for (size_t i = 0; i < nsp; ++i) {
          xl.push_back(g.x[2 + i]);
          yl.push_back((g.x[2 + i] + 2 * p - g.k) / g.stride + 1);
          ws.push_back(g.k);
        }
        xl.push_back(g.x[1]);
        yl.push_back(g.m);
        const Tensor x = random_tensor(xl, seed++);
        const Tensor w = random_tensor(ws, seed++, 0.3f);
        const Tensor bias = random_tensor({g.m}, seed++);
        const Tensor r = random_tensor(yl, seed++);
        const Tensor r_copy = r.clone();
        const ir::Node node =
            fused_conv_node(residual,
                            {ir::attr_ints("pads", std::vector<int64_t>(2 * nsp, p)),
                             ir::attr_ints("strides", std::vector<int64_t>(nsp, g.stride)),
                             ir::attr_int("group", g.group), ir::attr_int("channels_last", 1)},
                            act);
        std::vector<const Tensor*> in{&x, &w, &bias};
        if (residual) in.push_back(&r);
        const auto [fast, ref] = fast_and_reference(node, in);
        EXPECT_EQ(fast.shape(), yl);
        expect_close(fast, ref);
        ASSERT_EQ(std::memcmp(r.raw(), r_copy.raw(), r.nbytes()), 0) << "residual was written";
      }
    }
  }
}

// The blocked FusedConv kernel (conv_blocked_layout) against the reference: channel counts off
// the 16 lanes (padded blocks), a plain 3-channel input, pointwise / strided / 3x3 / depthwise /
// grouped, with a residual and Relu or SiLU (the separate SiLU pass after oneDNN).
TEST(ConvLayout, BlockedKernelMatchesReference) {
  const std::vector<Geo> geos = two_d_geometries(2);
  uint32_t seed = 60;
  for (const Geo& g : geos) {
    const bool plain_input = g.x[1] <= 4;
    for (bool residual : {false, true}) {
      for (const std::string act : {"", "Relu", "Silu"}) {
        SCOPED_TRACE(::testing::Message()
                     << "x " << shape_str(g.x) << " m" << g.m << " k" << g.k << " s" << g.stride
                     << " g" << g.group << " residual " << residual << " act " << act);
        const int64_t p = g.k / 2, oh = (g.x[2] + 2 * p - g.k) / g.stride + 1,
                      ow = (g.x[3] + 2 * p - g.k) / g.stride + 1;
        const Tensor x_plain = random_tensor(g.x, seed++);
        const Tensor x = plain_input ? x_plain : cpu::to_blocked(x_plain);
        const Tensor w = random_tensor({g.m, g.x[1] / g.group, g.k, g.k}, seed++, 0.3f);
        const Tensor bias = random_tensor({g.m}, seed++);
        const Tensor r = cpu::to_blocked(random_tensor({g.x[0], g.m, oh, ow}, seed++));
        const Tensor r_copy = r.clone();
        const ir::Node node = fused_conv_node(
            residual,
            {ir::attr_ints("pads", {p, p, p, p}), ir::attr_ints("strides", {g.stride, g.stride}),
             ir::attr_int("group", g.group), ir::attr_int("blocked", 1),
             ir::attr_int("plain_input", plain_input ? 1 : 0)},
            act);
        std::vector<const Tensor*> in{&x, &w, &bias};
        if (residual) in.push_back(&r);
        const auto [fast, ref] = fast_and_reference(node, in);
        EXPECT_EQ(fast.shape(), (Shape{g.x[0], (g.m + 15) / 16, oh, ow, 16}));
        expect_close(cpu::from_blocked(fast, g.m), cpu::from_blocked(ref, g.m));
        // The lanes past M hold zeros (the next blocked layer reads them).
        const float* yp = fast.data<float>();
        for (int64_t i = 0; i < fast.numel(); ++i) {
          const int64_t channel = (i % 16) + 16 * ((i / (16 * oh * ow)) % ((g.m + 15) / 16));
          if (channel >= g.m) {
            ASSERT_EQ(yp[i], 0.0f) << "padding lane " << i;
          }
        }
        ASSERT_EQ(std::memcmp(r.raw(), r_copy.raw(), r.nbytes()), 0) << "residual was written";
      }
    }
  }
}

}  // namespace
}  // namespace trtutils
