// conv_fusion pass: the fused graph computes what the original graph computes, the patterns
// fuse into the expected nodes, nothing fuses when a fused-away value is read elsewhere, and the
// FusedConv kernel's oneDNN path matches its reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/nn_kernels.h"
#include "ir/graph_builder.h"
#include "passes/pass_test_util.h"
#include "passes/passes.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

using namespace pass_testing;  // NOLINT

void expect_close(const Tensor& a, const Tensor& b, double rel = 1e-5) {
  pass_testing::expect_close(a, b, rel);
}

Tensor scalar(float v) {
  return Tensor::from_vector<float>(DataType::kFloat32, {}, {v});
}

struct ConvSpec {
  int64_t n = 2, c = 5, h = 9, w = 11, m = 7, k = 3, stride = 1;
  bool bias = true;
};

// x -> Conv -> (tail) -> y; returns the Conv's output name through `conv_out`.
struct Net {
  ir::GraphBuilder b{"net"};
  std::string x, conv_out;
  std::map<std::string, Tensor> feeds;
};
Net conv_net(const ConvSpec& s) {
  Net net;
  net.x = net.b.input("x", DataType::kFloat32, {s.n, s.c, s.h, s.w});
  net.feeds["x"] = random_tensor({s.n, s.c, s.h, s.w}, 1);
  std::vector<std::string> in{net.x,
                              net.b.initializer("w", random_tensor({s.m, s.c, s.k, s.k}, 2, 0.3f))};
  if (s.bias) in.push_back(net.b.initializer("bias", random_tensor({s.m}, 3)));
  const int64_t p = s.k / 2;
  net.conv_out = net.b.node(
      "Conv", in,
      {ir::attr_ints("pads", {p, p, p, p}), ir::attr_ints("strides", {s.stride, s.stride})})[0];
  return net;
}
Shape conv_out_shape(const ConvSpec& s) {
  const int64_t p = s.k / 2;
  return {s.n, s.m, (s.h + 2 * p - s.k) / s.stride + 1, (s.w + 2 * p - s.k) / s.stride + 1};
}

// Runs the model unfused and fused, compares outputs, returns the fused graph.
ir::Graph check_fusion(const ir::Model& model, const std::map<std::string, Tensor>& feeds,
                       size_t expect_fused) {
  ir::Graph plain = model.graph, fused = model.graph;
  passes::run_pipeline(plain, kOpset, {"conv_fusion"});
  passes::run_pipeline(fused, kOpset);
  EXPECT_EQ(count_op(fused, "FusedConv"), expect_fused);
  const auto a = execute(plain, feeds);
  const auto b = execute(fused, feeds);
  const auto c = execute(fused, feeds, /*reference=*/true);
  for (const auto& [name, t] : a) {
    SCOPED_TRACE(name);
    expect_close(b.at(name), t);
    expect_close(c.at(name), t);
  }
  return fused;
}

struct ActCase {
  std::string op;
  std::vector<ir::Attribute> attrs;
  std::vector<float> clip;  // Clip min/max inputs
};

TEST(ConvFusion, ActivationsFuseAndMatch) {
  const std::vector<ActCase> cases = {
      {"Relu", {}, {}},
      {"Clip", {}, {0.0f, 6.0f}},
      {"Clip", {}, {-0.5f, 0.25f}},
      {"LeakyRelu", {ir::attr_float("alpha", 0.1f)}, {}},
      {"LeakyRelu", {}, {}},
      {"Sigmoid", {}, {}},
      {"HardSwish", {}, {}},
  };
  for (const auto& c : cases) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(c.op + (bias ? " with bias" : " without bias"));
      ConvSpec s;
      s.bias = bias;
      Net net = conv_net(s);
      std::vector<std::string> in{net.conv_out};
      if (!c.clip.empty()) {
        in.push_back(net.b.initializer("lo", scalar(c.clip[0])));
        in.push_back(net.b.initializer("hi", scalar(c.clip[1])));
      }
      const auto y = net.b.node(c.op, in, c.attrs)[0];
      net.b.output(y, DataType::kFloat32);
      const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 1);
      EXPECT_EQ(g.nodes.size(), 1u);
      EXPECT_EQ(g.nodes[0].domain, "com.trtutils");
      EXPECT_EQ(g.nodes[0].attr_string("activation", ""), c.op);
      EXPECT_EQ(g.nodes[0].outputs[0], y);
    }
  }
}

// SiLU as torch exports it: Mul(y, Sigmoid(y)), either operand order, after a plain Conv and after
// a residual Add; not fused when the Conv output has a third reader.
TEST(ConvFusion, SiluFusesAndMatches) {
  for (bool residual : {false, true}) {
    for (bool sigmoid_first : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "residual " << residual << " sigmoid_first " << sigmoid_first);
      ConvSpec s;
      Net net = conv_net(s);
      std::string v = net.conv_out;
      if (residual) {
        const Shape ys = conv_out_shape(s);
        const auto r = net.b.input("r", DataType::kFloat32, ir::sym_shape_from_static(ys));
        net.feeds["r"] = random_tensor(ys, 4);
        v = net.b.node("Add", {v, r})[0];
      }
      const auto sig = net.b.node("Sigmoid", {v})[0];
      const auto y = net.b.node("Mul", sigmoid_first ? std::vector<std::string>{sig, v}
                                                     : std::vector<std::string>{v, sig})[0];
      net.b.output(y, DataType::kFloat32);
      const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 1);
      ASSERT_EQ(g.nodes.size(), 1u);
      EXPECT_EQ(g.nodes[0].attr_string("activation", ""), "Silu");
      EXPECT_EQ(g.nodes[0].outputs[0], y);
      EXPECT_EQ(g.nodes[0].inputs.size(), residual ? 4u : 3u);
    }
  }
  {  // y also read by a third node: the Sigmoid and Mul stay
    ConvSpec s;
    Net net = conv_net(s);
    const auto sig = net.b.node("Sigmoid", {net.conv_out})[0];
    const auto y = net.b.node("Mul", {net.conv_out, sig})[0];
    const auto z = net.b.node("Relu", {net.conv_out})[0];
    net.b.output(y, DataType::kFloat32);
    net.b.output(z, DataType::kFloat32);
    const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 0);
    EXPECT_EQ(count_op(g, "Sigmoid"), 1u);
    EXPECT_EQ(count_op(g, "Mul"), 1u);
  }
  {  // Mul(y, Sigmoid(other)): not a SiLU
    ConvSpec s;
    Net net = conv_net(s);
    const Shape ys = conv_out_shape(s);
    const auto u = net.b.input("u", DataType::kFloat32, ir::sym_shape_from_static(ys));
    net.feeds["u"] = random_tensor(ys, 5);
    const auto y = net.b.node("Mul", {net.conv_out, net.b.node("Sigmoid", {u})[0]})[0];
    net.b.output(y, DataType::kFloat32);
    check_fusion(net.b.build(kOpset), net.feeds, 0);
  }
}

TEST(ConvFusion, ClipWithOneBoundAndOldOpsetAttributes) {
  ConvSpec s;
  Net net = conv_net(s);
  const auto y = net.b.node("Clip", {net.conv_out, "", net.b.initializer("hi", scalar(0.5f))})[0];
  net.b.output(y, DataType::kFloat32);
  const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 1);
  EXPECT_EQ(g.nodes.size(), 1u);
  EXPECT_TRUE(std::isinf(g.nodes[0].attr_floats("activation_params")[0]));
}

TEST(ConvFusion, NonConstantClipBoundDoesNotFuse) {
  ConvSpec s;
  Net net = conv_net(s);
  const auto lo = net.b.input("lo", DataType::kFloat32, ir::SymShape{});
  net.feeds["lo"] = scalar(-0.1f);
  const auto y = net.b.node("Clip", {net.conv_out, lo})[0];
  net.b.output(y, DataType::kFloat32);
  check_fusion(net.b.build(kOpset), net.feeds, 0);
}

// Conv -> Add(residual) [-> Relu], the residual on either side of the Add, for a 3x3 conv
// (direct, reordered dst), 1x1 (matmul path) and strided 1x1 (subsampled matmul path).
TEST(ConvFusion, ResidualAddFusesAndMatches) {
  for (int64_t k : {3, 1}) {
    for (int64_t stride : {1, 2}) {
      for (bool relu : {true, false}) {
        for (bool residual_first : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "k " << k << " stride " << stride << " relu " << relu
                                            << " residual_first " << residual_first);
          ConvSpec s;
          s.k = k;
          s.stride = stride;
          s.m = 16;
          Net net = conv_net(s);
          const Shape ys = conv_out_shape(s);
          const auto r = net.b.input("r", DataType::kFloat32, ir::sym_shape_from_static(ys));
          net.feeds["r"] = random_tensor(ys, 4);
          auto add =
              net.b.node("Add", residual_first ? std::vector<std::string>{r, net.conv_out}
                                               : std::vector<std::string>{net.conv_out, r})[0];
          if (relu) add = net.b.node("Relu", {add})[0];
          net.b.output(add, DataType::kFloat32);
          const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 1);
          ASSERT_EQ(g.nodes.size(), 1u);
          EXPECT_EQ(g.nodes[0].inputs.size(), 4u);
          EXPECT_EQ(g.nodes[0].inputs[3], r);
          EXPECT_EQ(g.nodes[0].has_attr("activation"), relu);
        }
      }
    }
  }
}

// ResNet's block: the residual is computed by another Conv (the downsample branch) that may
// come after the fused one in node order.
TEST(ConvFusion, ResidualFromAnotherConvKeepsOrderValid) {
  ConvSpec s;
  s.m = 8;
  Net net = conv_net(s);
  const auto w2 = net.b.initializer("w2", random_tensor({8, s.c, 3, 3}, 7, 0.3f));
  const auto other = net.b.node("Conv", {net.x, w2}, {ir::attr_ints("pads", {1, 1, 1, 1})})[0];
  const auto add = net.b.node("Add", {net.conv_out, other})[0];
  const auto y = net.b.node("Relu", {add})[0];
  net.b.output(y, DataType::kFloat32);
  const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 1);
  EXPECT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(count_op(g, "Conv"), 1u);
}

// A symbolic batch ("N" on both the input and the residual) still fuses; an unknown dim not.
TEST(ConvFusion, ResidualWithSymbolicBatch) {
  for (bool named : {true, false}) {
    SCOPED_TRACE(named ? "named batch" : "unknown batch");
    ir::GraphBuilder b("net");
    const ir::Dim batch = named ? ir::Dim(std::string("N")) : ir::Dim();
    const auto x = b.input("x", DataType::kFloat32, {batch, 4, 6, 6});
    const auto r = b.input("r", DataType::kFloat32, {batch, 8, 6, 6});
    const auto w = b.initializer("w", random_tensor({8, 4, 3, 3}, 2, 0.3f));
    const auto c = b.node("Conv", {x, w}, {ir::attr_ints("pads", {1, 1, 1, 1})})[0];
    const auto y = b.node("Relu", {b.node("Add", {c, r})[0]})[0];
    b.output(y, DataType::kFloat32);
    const std::map<std::string, Tensor> feeds{{"x", random_tensor({3, 4, 6, 6}, 5)},
                                              {"r", random_tensor({3, 8, 6, 6}, 6)}};
    const ir::Graph g = check_fusion(b.build(kOpset), feeds, named ? 1 : 0);
    EXPECT_EQ(g.nodes.size(), named ? 1u : 3u);
  }
}

TEST(ConvFusion, NoFusionWhenIntermediateHasTwoReaders) {
  ConvSpec s;
  Net net = conv_net(s);
  const auto y = net.b.node("Relu", {net.conv_out})[0];
  const auto z = net.b.node("Add", {y, net.conv_out})[0];
  net.b.output(z, DataType::kFloat32);
  const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 0);
  EXPECT_EQ(g.nodes.size(), 3u);
}

TEST(ConvFusion, NoFusionWhenIntermediateIsGraphOutput) {
  ConvSpec s;
  Net net = conv_net(s);
  const auto y = net.b.node("Relu", {net.conv_out})[0];
  net.b.output(y, DataType::kFloat32);
  net.b.output(net.conv_out, DataType::kFloat32);
  check_fusion(net.b.build(kOpset), net.feeds, 0);
}

TEST(ConvFusion, AddOutputWithTwoReadersKeepsTheRelu) {
  ConvSpec s;
  s.m = 16;
  Net net = conv_net(s);
  const Shape ys = conv_out_shape(s);
  const auto r = net.b.input("r", DataType::kFloat32, ir::sym_shape_from_static(ys));
  net.feeds["r"] = random_tensor(ys, 4);
  const auto add = net.b.node("Add", {net.conv_out, r})[0];
  const auto y = net.b.node("Relu", {add})[0];
  net.b.output(y, DataType::kFloat32);
  net.b.output(add, DataType::kFloat32);
  const ir::Graph g = check_fusion(net.b.build(kOpset), net.feeds, 1);
  EXPECT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(count_op(g, "Relu"), 1u);
}

TEST(ConvFusion, BroadcastingAddDoesNotFuse) {
  ConvSpec s;
  Net net = conv_net(s);
  const auto r = net.b.initializer("r", random_tensor({s.m, 1, 1}, 4));
  const auto add = net.b.node("Add", {net.conv_out, r})[0];
  net.b.output(add, DataType::kFloat32);
  check_fusion(net.b.build(kOpset), net.feeds, 0);
}

TEST(ConvFusion, SwitchedOffByName) {
  ConvSpec s;
  Net net = conv_net(s);
  const auto y = net.b.node("Relu", {net.conv_out})[0];
  net.b.output(y, DataType::kFloat32);
  ir::Graph g = net.b.build(kOpset).graph;
  passes::run_pipeline(g, kOpset, {"conv_fusion"});
  EXPECT_EQ(count_op(g, "FusedConv"), 0u);
  EXPECT_EQ(g.nodes.size(), 2u);
}

// The pipeline runs inference Dropouts as Identity (every backend has it), unless their mask is
// read or they are random (training mode with a non-zero ratio: left for the kernels to refuse).
TEST(Pipeline, InferenceDropoutBecomesIdentity) {
  ir::GraphBuilder b;
  const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({2, 3}));
  Tensor on(DataType::kBool, {});
  on.data<uint8_t>()[0] = 1;
  const auto ratio0 = b.initializer("ratio0", scalar(0.0f));
  const auto ratio5 = b.initializer("ratio5", scalar(0.5f));
  const auto training = b.initializer("training", on);
  const auto y1 = b.node("Dropout", {x, ratio0, training})[0];      // ratio 0: identity
  const auto y2 = b.node("Dropout", {y1, ratio5})[0];               // inference: identity
  const auto y3 = b.node("Dropout", {y2, ratio5}, {}, 2);           // mask read: kept
  const auto y4 = b.node("Dropout", {y3[0], ratio5, training})[0];  // random: kept
  b.output(y4, DataType::kFloat32);
  b.output(y3[1], DataType::kBool);
  ir::Graph g = b.build(kOpset).graph;
  passes::run_pipeline(g, kOpset);
  EXPECT_EQ(count_op(g, "Identity"), 2u);
  EXPECT_EQ(count_op(g, "Dropout"), 2u);
}

// The FusedConv kernel alone: the oneDNN path against the reference at sizes around the
// 16-channel blocks and SIMD widths, for each post-op, with a grouped conv too.
TEST(FusedConvKernel, FastPathMatchesReferenceAtTileEdges) {
  struct Geo {
    int64_t n, c, h, w, m, k, stride, group;
  };
  const std::vector<Geo> geos = {{1, 3, 7, 13, 17, 3, 1, 1},  {2, 16, 8, 8, 16, 3, 1, 1},
                                 {1, 33, 5, 17, 15, 1, 1, 1}, {3, 17, 9, 9, 31, 1, 2, 1},
                                 {2, 32, 6, 6, 32, 3, 2, 1},  {1, 32, 7, 7, 32, 3, 1, 32},
                                 {1, 48, 10, 3, 64, 3, 1, 1}};
  const std::vector<std::pair<std::string, std::vector<float>>> acts = {{"", {}},
                                                                        {"Relu", {}},
                                                                        {"Clip", {0.0f, 6.0f}},
                                                                        {"LeakyRelu", {0.2f}},
                                                                        {"Sigmoid", {}},
                                                                        {"HardSwish", {}},
                                                                        {"Silu", {}}};
  int seed = 10;
  for (const Geo& g : geos) {
    for (bool residual : {false, true}) {
      for (const auto& [act, params] : acts) {
        SCOPED_TRACE(::testing::Message()
                     << "geo c" << g.c << " m" << g.m << " k" << g.k << " s" << g.stride << " g"
                     << g.group << " residual " << residual << " act " << act);
        const int64_t p = g.k / 2;
        const Shape ys{g.n, g.m, (g.h + 2 * p - g.k) / g.stride + 1,
                       (g.w + 2 * p - g.k) / g.stride + 1};
        const Tensor x = random_tensor({g.n, g.c, g.h, g.w}, seed++);
        const Tensor w = random_tensor({g.m, g.c / g.group, g.k, g.k}, seed++, 0.3f);
        const Tensor b = random_tensor({g.m}, seed++);
        const Tensor r = random_tensor(ys, seed++);
        const Tensor r_copy = r.clone();
        ir::Node node = fused_conv_node(
            residual,
            {ir::attr_ints("pads", {p, p, p, p}), ir::attr_ints("strides", {g.stride, g.stride}),
             ir::attr_int("group", g.group)},
            act);
        if (!act.empty())
          node.attributes["activation_params"] = ir::attr_floats("activation_params", params);
        std::vector<const Tensor*> in{&x, &w, &b};
        if (residual) in.push_back(&r);
        const auto [fast, ref] = fast_and_reference(node, in);
        // 3x3 stride-1 ungrouped convolutions run through oneDNN's Winograd kernels (the CPU
        // default): their transforms round at about 1e-5 relative.
        const bool winograd = g.k == 3 && g.stride == 1 && g.group == 1;
        expect_close(fast, ref, winograd ? 5e-5 : 1e-5);
        ASSERT_EQ(std::memcmp(r.raw(), r_copy.raw(), r.nbytes()), 0) << "residual was written";
      }
    }
  }
}

TEST(FusedConvKernel, RejectsBadActivationAndResidualShape) {
  const Tensor x = random_tensor({1, 2, 4, 4}, 1), w = random_tensor({3, 2, 1, 1}, 2);
  const Tensor r = random_tensor({1, 3, 4, 5}, 3);
  ir::Node node;
  node.name = "fused";
  node.op_type = "FusedConv";
  node.domain = "com.trtutils";
  node.inputs = {"x", "w", "", "r"};
  node.outputs = {"y"};
  EXPECT_THROW(cpu::run_node(node, kOpset, {&x, &w, nullptr, &r}, false), Error);
  node.inputs = {"x", "w"};
  node.attributes["activation"] = ir::attr_string("activation", "Tanh");
  EXPECT_THROW(cpu::run_node(node, kOpset, {&x, &w}, false), Error);
}

}  // namespace
}  // namespace trtutils
