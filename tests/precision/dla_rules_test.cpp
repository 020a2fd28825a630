// One test per DLA rule (src/precision/dla_rules.cpp): a layer just inside the limit passes, one
// just outside fails naming the rule; then chunking and chunk selection.
#include "precision/dla_rules.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <set>

#include "ir/graph_builder.h"
#include "passes/passes.h"

namespace trtutils::precision {
namespace {

using B = ir::GraphBuilder;

Tensor f32(Shape s, float v = 0.5f) {
  Tensor t(DataType::kFloat32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}
Tensor i64(std::vector<int64_t> v) {
  Tensor t(DataType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}
Tensor scalar_f32(float v) {
  Tensor t(DataType::kFloat32, {});
  t.data<float>()[0] = v;
  return t;
}
Tensor scalar_i8(int8_t v) {
  Tensor t(DataType::kInt8, {});
  t.data<int8_t>()[0] = v;
  return t;
}

// Builds a graph with `make` (which names the checked node "target"), infers shapes and returns
// the node's verdict.
DlaVerdict verdict(const std::function<void(B&)>& make, int64_t opset = 17) {
  B b("t");
  make(b);
  ir::Model m = b.build(opset, {{"com.trtutils", 1}});
  passes::infer_shapes(m.graph, m.opset());
  // A declared output shape stands where inference could not tell (run-time parameters).
  for (const auto& o : m.graph.outputs) {
    auto it = m.graph.value_info.find(o.name);
    if (o.shape && it != m.graph.value_info.end() &&
        !(it->second.shape && ir::sym_shape_is_static(*it->second.shape)))
      it->second = o;
  }
  for (const auto& n : m.graph.nodes)
    if (n.name == "target") return dla_verdict(m.graph, n);
  ADD_FAILURE() << "no node named target";
  return {};
}

// Inside passes; outside fails with `rule`.
void expect_limit(const std::string& rule, const DlaVerdict& inside, const DlaVerdict& outside) {
  EXPECT_TRUE(inside.ok) << rule << ": inside failed with " << inside.rule << ": " << inside.detail;
  EXPECT_FALSE(outside.ok) << rule << ": outside passed";
  EXPECT_EQ(outside.rule, rule) << outside.detail;
  EXPECT_FALSE(outside.detail.empty());
  EXPECT_NE(find_dla_rule(rule), nullptr) << rule << " is not in the table";
}

// x [shape] -> op(attrs) "target" -> output.
// `out`: the output's declared shape, for ops our shape inference does not cover.
std::function<void(B&)> unary(const std::string& op, ir::SymShape shape,
                              std::vector<ir::Attribute> attrs = {},
                              DataType dt = DataType::kFloat32,
                              std::optional<ir::SymShape> out = std::nullopt) {
  return [=](B& b) {
    auto x = b.input("x", dt, shape);
    auto y = b.node(op, {x}, attrs, 1, "", "target")[0];
    b.output(y, dt, out);
  };
}

// Conv on x [1, cin, h, w] with weights [m, cin / group, kh, kw].
std::function<void(B&)> conv(ir::SymShape x_shape, Shape w_shape, std::vector<ir::Attribute> attrs,
                             bool constant_weights = true, const std::string& domain = "",
                             const std::string& op = "Conv") {
  return [=](B& b) {
    auto x = b.input("x", DataType::kFloat32, x_shape);
    auto w = constant_weights
                 ? b.initializer("w", f32(w_shape))
                 : b.input("w", DataType::kFloat32, ir::sym_shape_from_static(w_shape));
    auto y = b.node(op, {x, w}, attrs, 1, domain, "target")[0];
    b.output(y);
  };
}

ir::Attribute ints(const std::string& n, std::vector<int64_t> v) {
  return ir::attr_ints(n, v);
}

// ---- general ----

TEST(DlaRules, GeneralOp) {
  expect_limit("general.op", verdict(unary("Identity", {1, 8, 4, 4})),
               verdict(unary("LogSoftmax", {1, 8, 4, 4})));
  // NonZero: no DLA layer at all.
  EXPECT_EQ(verdict(unary("NonZero", {1, 8, 4, 4})).rule, "general.op");
}

TEST(DlaRules, GeneralStatic) {
  expect_limit("general.static", verdict(unary("Relu", {1, 8, 4, 4})),
               verdict(unary("Relu", {ir::Dim("batch"), 8, 4, 4})));
}

TEST(DlaRules, GeneralPrecision) {
  expect_limit("general.precision", verdict(unary("Relu", {1, 8, 4, 4}, {}, DataType::kFloat16)),
               verdict(unary("Relu", {1, 8, 4, 4}, {}, DataType::kInt32)));
}

TEST(DlaRules, GeneralBatch) {
  expect_limit("general.batch", verdict(unary("Relu", {4096, 1, 1, 1})),
               verdict(unary("Relu", {4097, 1, 1, 1})));
  // Batch is the product of the dimensions before C, H, W.
  EXPECT_EQ(verdict(unary("Abs", {2, 2049, 1, 1, 1})).rule, "general.batch");
}

TEST(DlaRules, GeneralDims) {
  expect_limit("general.dims", verdict(unary("Relu", {1, 1, 1, 8192})),
               verdict(unary("Relu", {1, 1, 1, 8193})));
}

// ---- convolution ----

TEST(DlaRules, ConvSpatial) {
  expect_limit("conv.spatial", verdict(conv({1, 1, 8, 8}, {1, 1, 3, 3}, {})),
               verdict(conv({1, 1, 8}, {1, 1, 3}, {})));
}

TEST(DlaRules, ConvWeights) {
  expect_limit("conv.weights", verdict(conv({1, 1, 8, 8}, {1, 1, 3, 3}, {})),
               verdict(conv({1, 1, 8, 8}, {1, 1, 3, 3}, {}, /*constant_weights=*/false)));
}

TEST(DlaRules, ConvKernel) {
  expect_limit("conv.kernel", verdict(conv({1, 1, 40, 40}, {1, 1, 32, 32}, {})),
               verdict(conv({1, 1, 40, 40}, {1, 1, 33, 33}, {})));
}

TEST(DlaRules, ConvStride) {
  expect_limit("conv.stride",
               verdict(conv({1, 1, 40, 40}, {1, 1, 3, 3}, {ints("strides", {8, 8})})),
               verdict(conv({1, 1, 40, 40}, {1, 1, 3, 3}, {ints("strides", {9, 9})})));
}

TEST(DlaRules, ConvPadding) {
  expect_limit("conv.padding",
               verdict(conv({1, 1, 40, 40}, {1, 1, 32, 32}, {ints("pads", {31, 31, 31, 31})})),
               verdict(conv({1, 1, 40, 40}, {1, 1, 32, 32}, {ints("pads", {32, 32, 32, 32})})));
  // Padding must also be less than the kernel.
  expect_limit("conv.padding",
               verdict(conv({1, 1, 8, 8}, {1, 1, 3, 3}, {ints("pads", {2, 2, 2, 2})})),
               verdict(conv({1, 1, 8, 8}, {1, 1, 3, 3}, {ints("pads", {3, 3, 3, 3})})));
}

TEST(DlaRules, ConvDilation) {
  expect_limit("conv.dilation",
               verdict(conv({1, 1, 40, 40}, {1, 1, 2, 2}, {ints("dilations", {32, 32})})),
               verdict(conv({1, 1, 40, 40}, {1, 1, 2, 2}, {ints("dilations", {33, 33})})));
}

TEST(DlaRules, ConvOutputMaps) {
  expect_limit("conv.output_maps", verdict(conv({1, 1, 2, 2}, {8192, 1, 1, 1}, {})),
               verdict(conv({1, 1, 2, 2}, {8193, 1, 1, 1}, {})));
}

TEST(DlaRules, ConvGroups) {
  expect_limit("conv.groups",
               verdict(conv({1, 8192, 1, 1}, {8192, 1, 1, 1}, {ir::attr_int("group", 8192)})),
               verdict(conv({1, 8193, 1, 1}, {8193, 1, 1, 1}, {ir::attr_int("group", 8193)})));
}

TEST(DlaRules, ConvFusedActivation) {
  expect_limit(
      "conv.activation",
      verdict(conv({1, 1, 8, 8}, {1, 1, 3, 3}, {ir::attr_string("activation", "Relu")}, true,
                   "com.trtutils", "FusedConv")),
      verdict(conv({1, 1, 8, 8}, {1, 1, 3, 3}, {ir::attr_string("activation", "HardSwish")}, true,
                   "com.trtutils", "FusedConv")));
}

// ---- deconvolution (weights [C, M / group, kh, kw]) ----

TEST(DlaRules, DeconvSpatial) {
  expect_limit("deconv.spatial",
               verdict(conv({1, 1, 4, 4}, {1, 1, 2, 2}, {}, true, "", "ConvTranspose")),
               verdict(conv({1, 1, 4}, {1, 1, 2}, {}, true, "", "ConvTranspose")));
}

TEST(DlaRules, DeconvKernel) {
  expect_limit("deconv.kernel",
               verdict(conv({1, 1, 4, 4}, {1, 1, 32, 32}, {}, true, "", "ConvTranspose")),
               verdict(conv({1, 1, 4, 4}, {1, 1, 33, 33}, {}, true, "", "ConvTranspose")));
  // 1x64 is one of the tall/wide exceptions; 64x64 is not.
  EXPECT_TRUE(verdict(conv({1, 1, 4, 4}, {1, 1, 1, 64}, {}, true, "", "ConvTranspose")).ok);
  EXPECT_EQ(verdict(conv({1, 1, 4, 4}, {1, 1, 64, 64}, {}, true, "", "ConvTranspose")).rule,
            "deconv.kernel");
}

TEST(DlaRules, DeconvStride) {
  expect_limit("deconv.stride",
               verdict(conv({1, 1, 4, 4}, {1, 1, 2, 2}, {ints("strides", {32, 32})}, true, "",
                            "ConvTranspose")),
               verdict(conv({1, 1, 4, 4}, {1, 1, 2, 2}, {ints("strides", {33, 33})}, true, "",
                            "ConvTranspose")));
}

TEST(DlaRules, DeconvPadding) {
  expect_limit("deconv.padding",
               verdict(conv({1, 1, 4, 4}, {1, 1, 3, 3}, {ints("pads", {0, 0, 0, 0})}, true, "",
                            "ConvTranspose")),
               verdict(conv({1, 1, 4, 4}, {1, 1, 3, 3}, {ints("pads", {1, 1, 1, 1})}, true, "",
                            "ConvTranspose")));
}

TEST(DlaRules, DeconvGroups) {
  expect_limit("deconv.groups",
               verdict(conv({1, 2, 4, 4}, {2, 1, 2, 2}, {ir::attr_int("group", 1)}, true, "",
                            "ConvTranspose")),
               verdict(conv({1, 2, 4, 4}, {2, 1, 2, 2}, {ir::attr_int("group", 2)}, true, "",
                            "ConvTranspose")));
}

TEST(DlaRules, DeconvDilation) {
  expect_limit("deconv.dilation",
               verdict(conv({1, 1, 4, 4}, {1, 1, 2, 2}, {ints("dilations", {1, 1})}, true, "",
                            "ConvTranspose")),
               verdict(conv({1, 1, 4, 4}, {1, 1, 2, 2}, {ints("dilations", {2, 2})}, true, "",
                            "ConvTranspose")));
}

TEST(DlaRules, DeconvOutputMaps) {
  expect_limit("deconv.output_maps",
               verdict(conv({1, 1, 1, 1}, {1, 8192, 1, 1}, {}, true, "", "ConvTranspose")),
               verdict(conv({1, 1, 1, 1}, {1, 8193, 1, 1}, {}, true, "", "ConvTranspose")));
}

// ---- pooling ----

TEST(DlaRules, PoolType) {
  expect_limit("pool.type",
               verdict(unary("AveragePool", {1, 1, 8, 8}, {ints("kernel_shape", {2, 2})})),
               verdict(unary("LpPool", {1, 1, 8, 8}, {ints("kernel_shape", {2, 2})},
                             DataType::kFloat32, ir::SymShape{1, 1, 7, 7})));
}

TEST(DlaRules, PoolSpatial) {
  expect_limit("pool.spatial",
               verdict(unary("MaxPool", {1, 1, 8, 8}, {ints("kernel_shape", {2, 2})})),
               verdict(unary("MaxPool", {1, 1, 8}, {ints("kernel_shape", {2})})));
}

TEST(DlaRules, PoolWindow) {
  expect_limit("pool.window",
               verdict(unary("MaxPool", {1, 1, 32, 32}, {ints("kernel_shape", {8, 8})})),
               verdict(unary("MaxPool", {1, 1, 32, 32}, {ints("kernel_shape", {9, 9})})));
  // Global pooling's window is the input's H x W.
  expect_limit("pool.window", verdict(unary("GlobalAveragePool", {1, 4, 8, 8})),
               verdict(unary("GlobalAveragePool", {1, 4, 9, 9})));
}

TEST(DlaRules, PoolStride) {
  expect_limit("pool.stride",
               verdict(unary("MaxPool", {1, 1, 40, 40},
                             {ints("kernel_shape", {2, 2}), ints("strides", {16, 16})})),
               verdict(unary("MaxPool", {1, 1, 40, 40},
                             {ints("kernel_shape", {2, 2}), ints("strides", {17, 17})})));
}

TEST(DlaRules, PoolPadding) {
  expect_limit("pool.padding",
               verdict(unary("AveragePool", {1, 1, 32, 32},
                             {ints("kernel_shape", {8, 8}), ints("pads", {7, 7, 7, 7})})),
               verdict(unary("AveragePool", {1, 1, 32, 32},
                             {ints("kernel_shape", {8, 8}), ints("pads", {8, 8, 8, 8})})));
}

// ---- activations ----

TEST(DlaRules, ActivationType) {
  expect_limit("act.type", verdict(unary("LeakyRelu", {1, 8, 4, 4})),
               verdict(unary("HardSwish", {1, 8, 4, 4})));
}

TEST(DlaRules, ActivationRank) {
  expect_limit("act.rank", verdict(unary("Sigmoid", {1, 16, 1, 1})),
               verdict(unary("Sigmoid", {1, 16})));
}

std::function<void(B&)> clip(float lo, float hi) {
  return [=](B& b) {
    auto x = b.input("x", DataType::kFloat32, {1, 8, 4, 4});
    auto l = b.initializer("lo", scalar_f32(lo));
    auto h = b.initializer("hi", scalar_f32(hi));
    b.output(b.node("Clip", {x, l, h}, {}, 1, "", "target")[0]);
  };
}

TEST(DlaRules, ActivationClip) {
  expect_limit("act.clip", verdict(clip(0, 127)), verdict(clip(0, 128)));
  EXPECT_TRUE(verdict(clip(0, 6)).ok);  // ReLU6
  EXPECT_EQ(verdict(clip(-1, 6)).rule, "act.clip");
}

TEST(DlaRules, PReluSlope) {
  auto prelu = [](bool constant) {
    return [=](B& b) {
      auto x = b.input("x", DataType::kFloat32, {1, 8, 4, 4});
      auto s = constant ? b.initializer("s", f32({8, 1, 1}, 0.1f))
                        : b.input("s", DataType::kFloat32, {8, 1, 1});
      b.output(b.node("PRelu", {x, s}, {}, 1, "", "target")[0]);
    };
  };
  expect_limit("prelu.slope", verdict(prelu(true)), verdict(prelu(false)));
}

// ---- element-wise ----

std::function<void(B&)> binary(const std::string& op, ir::SymShape a, ir::SymShape b_shape,
                               bool b_constant = false) {
  return [=](B& b) {
    auto x = b.input("a", DataType::kFloat32, a);
    auto y = b_constant ? b.initializer("b", f32(ir::sym_shape_to_static(b_shape)))
                        : b.input("b", DataType::kFloat32, b_shape);
    b.output(b.node(op, {x, y}, {}, 1, "", "target")[0]);
  };
}

TEST(DlaRules, ElementwiseOp) {
  expect_limit("ew.op", verdict(binary("Sub", {1, 8, 4, 4}, {1, 8, 4, 4})),
               verdict(binary("Mod", {1, 8, 4, 4}, {1, 8, 4, 4})));
  EXPECT_TRUE(verdict(binary("Div", {1, 8, 4, 4}, {1, 8, 4, 4})).ok);
  EXPECT_TRUE(verdict(binary("Pow", {1, 8, 4, 4}, {1, 8, 4, 4})).ok);
}

TEST(DlaRules, ElementwiseRank) {
  expect_limit("ew.rank", verdict(binary("Add", {1, 16, 1, 1}, {1, 16, 1, 1})),
               verdict(binary("Add", {1, 16}, {1, 16})));
}

TEST(DlaRules, ElementwiseBroadcast) {
  // NC11 and N111 operands broadcast; N1HW does not.
  expect_limit("ew.broadcast", verdict(binary("Mul", {1, 8, 4, 4}, {1, 8, 1, 1})),
               verdict(binary("Mul", {1, 8, 4, 4}, {1, 1, 4, 4})));
  EXPECT_TRUE(verdict(binary("Mul", {1, 8, 4, 4}, {1, 1, 1, 1})).ok);
  // A constant per-channel operand is a scale layer.
  EXPECT_TRUE(verdict(binary("Add", {1, 8, 4, 4}, {8, 1, 1}, true)).ok);
  EXPECT_EQ(verdict(binary("Add", {1, 8, 4, 4}, {1, 4, 1}, true)).rule, "ew.broadcast");
}

TEST(DlaRules, ScaleRank) {
  auto bn = [](ir::SymShape shape) {
    return [=](B& b) {
      auto x = b.input("x", DataType::kFloat32, shape);
      std::vector<std::string> in = {x};
      for (const char* p : {"s", "bias", "mean", "var"})
        in.push_back(b.initializer(p, f32({8}, 1)));
      b.output(b.node("BatchNormalization", in, {}, 1, "", "target")[0]);
    };
  };
  expect_limit("scale.rank", verdict(bn({1, 8, 4, 4})), verdict(bn({1, 8, 4})));
}

TEST(DlaRules, ConcatAxis) {
  auto concat = [](int64_t axis) {
    return [=](B& b) {
      auto x = b.input("x", DataType::kFloat32, {1, 8, 4, 4});
      auto y = b.input("y", DataType::kFloat32, {1, 8, 4, 4});
      b.output(b.node("Concat", {x, y}, {ir::attr_int("axis", axis)}, 1, "", "target")[0]);
    };
  };
  expect_limit("concat.axis", verdict(concat(1)), verdict(concat(2)));
  EXPECT_TRUE(verdict(concat(-3)).ok);
}

// ---- resize ----

std::function<void(B&)> resize(std::vector<float> scales, std::string mode = "nearest",
                               std::string ctm = "asymmetric", std::string nearest = "floor",
                               bool sizes = false) {
  return [=](B& b) {
    auto x = b.input("x", DataType::kFloat32, {1, 1, 4, 4});
    std::vector<ir::Attribute> attrs = {ir::attr_string("mode", mode),
                                        ir::attr_string("coordinate_transformation_mode", ctm),
                                        ir::attr_string("nearest_mode", nearest)};
    if (sizes) {
      auto sz = b.initializer("sizes", i64({1, 1, 8, 8}));
      b.output(b.node("Resize", {x, "", "", sz}, attrs, 1, "", "target")[0]);
      return;
    }
    Tensor s(DataType::kFloat32, {static_cast<int64_t>(scales.size())});
    for (size_t i = 0; i < scales.size(); ++i) s.data<float>()[i] = scales[i];
    auto sc = b.initializer("scales", s);
    b.output(b.node("Resize", {x, "", sc}, attrs, 1, "", "target")[0]);
  };
}

TEST(DlaRules, ResizeMode) {
  expect_limit("resize.mode", verdict(resize({1, 1, 2, 2}, "nearest")),
               verdict(resize({1, 1, 2, 2}, "cubic", "half_pixel")));
}

TEST(DlaRules, ResizeSizes) {
  expect_limit("resize.sizes", verdict(resize({1, 1, 2, 2})),
               verdict(resize({}, "nearest", "asymmetric", "floor", /*sizes=*/true)));
}

TEST(DlaRules, ResizeScales) {
  expect_limit("resize.scales", verdict(resize({1, 1, 32, 32})), verdict(resize({1, 1, 33, 33})));
  expect_limit("resize.scales", verdict(resize({1, 1, 4, 4}, "linear", "half_pixel")),
               verdict(resize({1, 1, 5, 5}, "linear", "half_pixel")));
  EXPECT_EQ(verdict(resize({1, 1, 1.5f, 1.5f})).rule, "resize.scales");  // not an integer
  EXPECT_EQ(verdict(resize({1, 2, 2, 2})).rule, "resize.scales");        // channels scaled
}

TEST(DlaRules, ResizeCoordinates) {
  expect_limit("resize.coord",
               verdict(resize({1, 1, 2, 2}, "nearest", "half_pixel", "round_prefer_floor")),
               verdict(resize({1, 1, 2, 2}, "nearest", "align_corners", "round_prefer_floor")));
  EXPECT_TRUE(verdict(resize({1, 1, 2, 2}, "linear", "pytorch_half_pixel")).ok);
  EXPECT_EQ(verdict(resize({1, 1, 2, 2}, "linear", "asymmetric")).rule, "resize.coord");
}

// ---- shuffle ----

std::function<void(B&)> reshape(ir::SymShape in, std::vector<int64_t> shape) {
  return [=](B& b) {
    auto x = b.input("x", DataType::kFloat32, in);
    auto s = b.initializer("shape", i64(shape));
    b.output(b.node("Reshape", {x, s}, {}, 1, "", "target")[0]);
  };
}

TEST(DlaRules, ShuffleRank) {
  expect_limit("shuffle.rank", verdict(reshape({1, 8, 4, 4}, {1, 8, 16, 1})),
               verdict(reshape({1, 8, 16}, {1, 8, 4, 4})));
}

TEST(DlaRules, ShuffleBatch) {
  expect_limit("shuffle.batch",
               verdict(unary("Transpose", {2, 8, 4, 4}, {ints("perm", {0, 2, 3, 1})})),
               verdict(unary("Transpose", {2, 8, 4, 4}, {ints("perm", {1, 0, 2, 3})})));
  expect_limit("shuffle.batch", verdict(reshape({2, 8, 4, 4}, {2, 128})),
               verdict(reshape({2, 8, 4, 4}, {1, 256})));
}

// ---- softmax, reduce, slice, unary, LRN ----

TEST(DlaRules, SoftmaxAxis) {
  expect_limit("softmax.axis", verdict(unary("Softmax", {2, 8, 1, 1}, {ir::attr_int("axis", 1)})),
               verdict(unary("Softmax", {2, 8, 1, 1}, {ir::attr_int("axis", 0)})));
}

TEST(DlaRules, SoftmaxSize) {
  // Every other non-batch dimension 1: up to 8192; otherwise up to 1024.
  expect_limit("softmax.size", verdict(unary("Softmax", {1, 1, 1, 8192})),
               verdict(unary("Softmax", {1, 1, 1, 8193})));
  expect_limit("softmax.size", verdict(unary("Softmax", {1, 2, 1, 1024})),
               verdict(unary("Softmax", {1, 2, 1, 1025})));
}

TEST(DlaRules, ReduceOp) {
  expect_limit("reduce.op", verdict(unary("ReduceMax", {1, 8, 4, 4}, {ints("axes", {1})})),
               verdict(unary("ReduceMean", {1, 8, 4, 4}, {ints("axes", {1})})));
}

TEST(DlaRules, ReduceRank) {
  expect_limit("reduce.rank", verdict(unary("ReduceMax", {1, 8, 4, 4}, {ints("axes", {2, 3})})),
               verdict(unary("ReduceMax", {1, 8, 4}, {ints("axes", {2})})));
}

TEST(DlaRules, ReduceAxes) {
  expect_limit("reduce.axes", verdict(unary("ReduceMax", {2, 8, 4, 4}, {ints("axes", {1, 2, 3})})),
               verdict(unary("ReduceMax", {2, 8, 4, 4}, {ints("axes", {0})})));
}

std::function<void(B&)> slice(ir::SymShape in, std::vector<int64_t> starts,
                              std::vector<int64_t> ends, std::vector<int64_t> axes,
                              std::vector<int64_t> steps, bool constant = true) {
  return [=](B& b) {
    auto x = b.input("x", DataType::kFloat32, in);
    auto s = constant ? b.initializer("starts", i64(starts))
                      : b.input("starts", DataType::kInt64, {static_cast<int64_t>(starts.size())});
    auto e = b.initializer("ends", i64(ends));
    auto a = b.initializer("axes", i64(axes));
    auto st = b.initializer("steps", i64(steps));
    // With run-time starts the output shape is declared (no inference can give it).
    std::optional<ir::SymShape> out;
    if (!constant) out = ir::SymShape{in[0], ends[0] - starts[0], in[2], in[3]};
    b.output(b.node("Slice", {x, s, e, a, st}, {}, 1, "", "target")[0], DataType::kFloat32, out);
  };
}

TEST(DlaRules, SliceRank) {
  expect_limit("slice.rank", verdict(slice({1, 8, 4, 4}, {0}, {4}, {1}, {1})),
               verdict(slice({1, 8, 4}, {0}, {4}, {1}, {1})));
}

TEST(DlaRules, SliceStatic) {
  expect_limit("slice.static", verdict(slice({1, 8, 4, 4}, {0}, {4}, {1}, {1})),
               verdict(slice({1, 8, 4, 4}, {0}, {4}, {1}, {1}, /*constant=*/false)));
}

TEST(DlaRules, SliceStride) {
  expect_limit("slice.stride", verdict(slice({1, 8, 4, 4}, {0}, {8}, {1}, {1})),
               verdict(slice({1, 8, 4, 4}, {0}, {8}, {1}, {2})));
}

TEST(DlaRules, SliceBatch) {
  expect_limit("slice.batch", verdict(slice({2, 8, 4, 4}, {0}, {4}, {1}, {1})),
               verdict(slice({2, 8, 4, 4}, {0}, {1}, {0}, {1})));
}

TEST(DlaRules, UnaryOp) {
  expect_limit("unary.op", verdict(unary("Abs", {1, 8, 4, 4})),
               verdict(unary("Exp", {1, 8, 4, 4})));
}

TEST(DlaRules, LrnWindow) {
  const ir::SymShape s = {1, 16, 4, 4};
  expect_limit("lrn.window",
               verdict(unary("LRN", s, {ir::attr_int("size", 9)}, DataType::kFloat32, s)),
               verdict(unary("LRN", s, {ir::attr_int("size", 11)}, DataType::kFloat32, s)));
}

// ---- fully connected ----

std::function<void(B&)> gemm(int64_t n_out, bool constant = true) {
  return [=](B& b) {
    auto x = b.input("x", DataType::kFloat32, {1, 16});
    auto w = constant ? b.initializer("w", f32({16, n_out}))
                      : b.input("w", DataType::kFloat32, {16, n_out});
    b.output(b.node("Gemm", {x, w}, {}, 1, "", "target")[0]);
  };
}

TEST(DlaRules, FcWeights) {
  expect_limit("fc.weights", verdict(gemm(10)), verdict(gemm(10, false)));
}

TEST(DlaRules, FcOutputChannels) {
  expect_limit("fc.output_channels", verdict(gemm(8192)), verdict(gemm(8193)));
}

// ---- Q/DQ and casts ----

std::function<void(B&)> quantize(bool zero_point, int8_t zp = 0, int64_t scales = 1) {
  return [=](B& b) {
    auto x = b.input("x", DataType::kFloat32, {1, 8, 4, 4});
    auto s = scales == 1 ? b.initializer("s", scalar_f32(0.1f))
                         : b.initializer("s", f32({scales}, 0.1f));
    std::vector<std::string> in = {x, s};
    if (zero_point) {
      if (scales == 1) {
        in.push_back(b.initializer("zp", scalar_i8(zp)));
      } else {
        Tensor z(DataType::kInt8, {scales});
        in.push_back(b.initializer("zp", z));
      }
    }
    std::vector<ir::Attribute> attrs;
    if (scales > 1) attrs.push_back(ir::attr_int("axis", 1));
    b.output(b.node("QuantizeLinear", in, attrs, 1, "", "target")[0]);
  };
}

TEST(DlaRules, QdqType) {
  // No zero point: uint8.
  expect_limit("qdq.type", verdict(quantize(true)), verdict(quantize(false)));
}

TEST(DlaRules, QdqZeroPoint) {
  expect_limit("qdq.zero_point", verdict(quantize(true, 0)), verdict(quantize(true, 1)));
}

TEST(DlaRules, QdqScale) {
  // Per channel on an activation fails; per output channel (axis 0) on constant weights passes.
  expect_limit("qdq.scale", verdict(quantize(true, 0, 1)), verdict(quantize(true, 0, 8)));
  EXPECT_TRUE(verdict([](B& b) {
                auto w = b.initializer("w", Tensor(DataType::kInt8, {8, 4, 3, 3}));
                auto s = b.initializer("s", f32({8}, 0.1f));
                auto z = b.initializer("z", Tensor(DataType::kInt8, {8}));
                b.output(b.node("DequantizeLinear", {w, s, z}, {ir::attr_int("axis", 0)}, 1, "",
                                "target")[0]);
              }).ok);
}

TEST(DlaRules, CastFloat) {
  expect_limit("cast.float",
               verdict(unary("Cast", {1, 8, 4, 4},
                             {ir::attr_int("to", static_cast<int64_t>(DataType::kFloat16))})),
               verdict(unary("Cast", {1, 8, 4, 4},
                             {ir::attr_int("to", static_cast<int64_t>(DataType::kInt8))})));
}

// Every rule in the table has its test above.
TEST(DlaRules, TableIsCovered) {
  const std::set<std::string> tested = {"general.op",    "general.static",  "general.precision",
                                        "general.batch", "general.dims",    "conv.spatial",
                                        "conv.weights",  "conv.kernel",     "conv.stride",
                                        "conv.padding",  "conv.dilation",   "conv.output_maps",
                                        "conv.groups",   "conv.activation", "deconv.spatial",
                                        "deconv.kernel", "deconv.stride",   "deconv.padding",
                                        "deconv.groups", "deconv.dilation", "deconv.output_maps",
                                        "pool.type",     "pool.spatial",    "pool.window",
                                        "pool.stride",   "pool.padding",    "act.type",
                                        "act.rank",      "act.clip",        "prelu.slope",
                                        "ew.op",         "ew.rank",         "ew.broadcast",
                                        "scale.rank",    "concat.axis",     "resize.mode",
                                        "resize.sizes",  "resize.scales",   "resize.coord",
                                        "shuffle.rank",  "shuffle.batch",   "softmax.axis",
                                        "softmax.size",  "reduce.op",       "reduce.rank",
                                        "reduce.axes",   "slice.rank",      "slice.static",
                                        "slice.stride",  "slice.batch",     "unary.op",
                                        "lrn.window",    "fc.weights",      "fc.output_channels",
                                        "qdq.type",      "qdq.zero_point",  "qdq.scale",
                                        "cast.float"};
  std::set<std::string> table;
  for (const auto& r : dla_rule_table()) {
    table.insert(std::string(r.id));
    EXPECT_FALSE(r.source.empty()) << r.id << " has no source";
    EXPECT_FALSE(r.limit.empty()) << r.id;
  }
  EXPECT_EQ(table, tested);
}

// ---- chunks ----

// Relu x2, Exp, Relu x3, Exp, Relu on one chain.
ir::Model chain(const std::vector<std::string>& ops) {
  B b("chain");
  auto x = b.input("x", DataType::kFloat32, {1, 8, 4, 4});
  for (size_t i = 0; i < ops.size(); ++i)
    x = b.node(ops[i], {x}, {}, 1, "", fmt::format("n{}", i))[0];
  b.output(x);
  ir::Model m = b.build(17);
  passes::infer_shapes(m.graph, m.opset());
  return m;
}

TEST(DlaChunks, ContiguousRunsInNodeOrder) {
  const ir::Model m = chain({"Relu", "Relu", "Exp", "Relu", "Relu", "Relu", "Exp", "Relu"});
  const auto v = dla_verdicts(m.graph);
  const auto c = dla_chunks(m.graph, v);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].begin, 0u);
  EXPECT_EQ(c[0].end, 2u);
  EXPECT_EQ(c[1].begin, 3u);
  EXPECT_EQ(c[1].end, 6u);
  EXPECT_EQ(c[1].nodes, (std::vector<std::string>{"n3", "n4", "n5"}));
  EXPECT_EQ(c[2].begin, 7u);
  EXPECT_EQ(c[2].size(), 1u);

  // The largest chunk, then the two largest (in node order); min_layers drops small ones.
  auto s = select_dla_chunks(c, 8, 1, 2);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].begin, 3u);
  s = select_dla_chunks(c, 8, 2, 1);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].begin, 0u);
  EXPECT_EQ(s[1].begin, 3u);
  EXPECT_TRUE(select_dla_chunks(c, 8, 16, 4).empty());
}

TEST(DlaChunks, AllOrNothing) {
  // Everything fits: all on DLA whatever min_layers says.
  const ir::Model all = chain({"Relu", "Relu", "Relu"});
  const auto c = dla_chunks(all.graph, dla_verdicts(all.graph));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(select_dla_chunks(c, 3, 1, 20).size(), 1u);
  // Nothing fits: no chunk.
  const ir::Model none = chain({"Exp", "Exp"});
  EXPECT_TRUE(dla_chunks(none.graph, dla_verdicts(none.graph)).empty());
}

}  // namespace
}  // namespace trtutils::precision
