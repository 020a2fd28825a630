// Whole graphs through cuda::Executor vs the CPU Session: a small random-weight CNN with
// ResNet-style residual blocks, a squeeze-excite gate (EfficientNet) and a ReLU6 block
// (MobileNet); a ViT-style transformer block; the CNN in float16 (convert_to_fp16) and
// quantized to int8 / float8 (Q/DQ islands fused into QConv / QGemm). The executor gets the
// graph after the pass pipeline, as an engine stores it.
#include <algorithm>

#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"
#include "passes/passes.h"
#include "quantize/qdq.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

class Net {
 public:
  Net(const std::string& name, uint32_t seed) : b_(name), seed_(seed) {}
  ir::GraphBuilder& b() { return b_; }
  std::string w(const Shape& s, float scale) {
    return b_.initializer("w" + std::to_string(n_++),
                          random_tensor(DataType::kFloat32, s, seed_++, -scale, scale));
  }
  std::string conv(const std::string& x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                   int64_t group = 1) {
    const float s = 1.5f / std::sqrt(static_cast<float>(cin / group * k * k));
    const int64_t p = k / 2;
    return b_.node(
        "Conv", {x, w({cout, cin / group, k, k}, s), w({cout}, 0.1f)},
        {ai("group", group), ais("pads", {p, p, p, p}), ais("strides", {stride, stride})})[0];
  }
  std::string op(const std::string& type, const std::vector<std::string>& in,
                 std::vector<ir::Attribute> attrs = {}) {
    return b_.node(type, in, std::move(attrs))[0];
  }

 private:
  ir::GraphBuilder b_;
  uint32_t seed_;
  int n_ = 0;
};

// x [N, 3, 32, 32] -> logits [N, 10].
ir::Model small_cnn(int64_t opset, ir::Dim batch) {
  Net n("small_cnn", 1000);
  const std::string x = n.b().input("x", DataType::kFloat32, {batch, 3, 32, 32});
  std::string h = n.op("Relu", {n.conv(x, 3, 16, 3, 2)});
  h = n.op("MaxPool", {h},
           {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1})});
  // Residual block (ResNet).
  std::string r = n.op("Relu", {n.conv(h, 16, 16, 3, 1)});
  r = n.conv(r, 16, 16, 3, 1);
  h = n.op("Relu", {n.op("Add", {r, h})});
  // Downsampling block with a 1x1 projection.
  std::string d = n.op("Relu", {n.conv(h, 16, 32, 3, 2)});
  d = n.conv(d, 32, 32, 3, 1);
  h = n.op("Relu", {n.op("Add", {d, n.conv(h, 16, 32, 1, 2)})});
  // Depthwise + squeeze-excite (EfficientNet): x * sigmoid(conv(relu(conv(gap(x))))), SiLU.
  std::string dw = n.conv(h, 32, 32, 3, 1, 32);
  dw = n.op("Mul", {dw, n.op("Sigmoid", {dw})});
  std::string se = n.op("GlobalAveragePool", {dw});
  se = n.op("Relu", {n.conv(se, 32, 8, 1, 1)});
  se = n.op("Sigmoid", {n.conv(se, 8, 32, 1, 1)});
  h = n.op("Mul", {dw, se});
  // ReLU6 (MobileNet) and HardSwish.
  h = n.op("Clip", {n.conv(h, 32, 32, 1, 1), n.b().initializer("lo", f32({}, {0.0f})),
                    n.b().initializer("hi", f32({}, {6.0f}))});
  h = n.op("HardSwish", {n.conv(h, 32, 32, 3, 1)});
  h = n.op("Flatten", {n.op("GlobalAveragePool", {h})});
  const std::string logits =
      n.op("Gemm", {h, n.w({10, 32}, 0.3f), n.w({10}, 0.1f)}, {ai("transB", 1)});
  n.b().output(logits, DataType::kFloat32);
  return n.b().build(opset);
}

// x [N, 17, 32]: pre-norm attention (4 heads) + GELU MLP, as torchvision's ViT encoder block.
ir::Model transformer_block(ir::Dim batch) {
  Net n("vit_block", 2000);
  const int64_t t = 17, d = 32, heads = 4, hd = 8;
  const std::string x = n.b().input("x", DataType::kFloat32, {batch, t, d});
  std::string h =
      n.op("LayerNormalization", {x, n.w({d}, 1.0f), n.w({d}, 0.1f)}, {af("epsilon", 1e-6f)});
  const std::string qkv =
      n.op("Add", {n.op("MatMul", {h, n.w({d, 3 * d}, 0.3f)}), n.w({3 * d}, 0.1f)});
  auto head = [&](int64_t i) {
    const std::string s =
        n.op("Slice", {qkv, n.b().initializer("s" + std::to_string(i), i64({1}, {i * d})),
                       n.b().initializer("e" + std::to_string(i), i64({1}, {(i + 1) * d})),
                       n.b().initializer("a" + std::to_string(i), i64({1}, {2}))});
    const std::string r = n.op(
        "Reshape", {s, n.b().initializer("hs" + std::to_string(i), i64({4}, {0, t, heads, hd}))});
    return n.op("Transpose", {r}, {ais("perm", {0, 2, 1, 3})});
  };
  const std::string q = head(0), k = head(1), v = head(2);
  std::string att = n.op("MatMul", {q, n.op("Transpose", {k}, {ais("perm", {0, 1, 3, 2})})});
  att = n.op("Mul", {att, n.b().initializer("scale", f32({}, {1.0f / std::sqrt(8.0f)}))});
  att = n.op("Softmax", {att}, {ai("axis", -1)});
  std::string o = n.op("Transpose", {n.op("MatMul", {att, v})}, {ais("perm", {0, 2, 1, 3})});
  o = n.op("Reshape", {o, n.b().initializer("os", i64({3}, {0, t, d}))});
  o = n.op("Add", {n.op("MatMul", {o, n.w({d, d}, 0.3f)}), n.w({d}, 0.1f)});
  h = n.op("Add", {o, x});
  std::string m =
      n.op("LayerNormalization", {h, n.w({d}, 1.0f), n.w({d}, 0.1f)}, {af("epsilon", 1e-6f)});
  m = n.op("Add", {n.op("MatMul", {m, n.w({d, 4 * d}, 0.3f)}), n.w({4 * d}, 0.1f)});
  // GELU as exported (erf form): 0.5 * x * (1 + erf(x / sqrt(2))).
  const std::string e =
      n.op("Erf", {n.op("Div", {m, n.b().initializer("sqrt2", f32({}, {1.41421356f}))})});
  m = n.op("Mul", {n.op("Mul", {m, n.op("Add", {e, n.b().initializer("one", f32({}, {1.0f}))})}),
                   n.b().initializer("half", f32({}, {0.5f}))});
  m = n.op("Add", {n.op("MatMul", {m, n.w({4 * d, d}, 0.2f)}), n.w({d}, 0.1f)});
  const std::string y = n.op("Add", {m, h});
  n.b().output(y, DataType::kFloat32);
  return n.b().build(17);
}

ir::Model optimized(ir::Model m) {
  passes::run_pipeline(m.graph, m.opset());
  m.graph.value_info.clear();
  passes::infer_shapes(m.graph, m.opset());
  return m;
}

size_t count_ops(const ir::Model& m, const std::string& op) {
  return static_cast<size_t>(std::count_if(m.graph.nodes.begin(), m.graph.nodes.end(),
                                           [&](const ir::Node& n) { return n.op_type == op; }));
}

// |gpu - cpu| <= frac * max|cpu| + atol for every element.
void expect_close_to_range(const Tensor& gpu, const Tensor& cpu, double frac,
                           const std::string& what) {
  double mx = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) mx = std::max(mx, std::fabs(cpu.at_double(i)));
  expect_close(gpu, cpu, {frac * mx + 1e-5, 0.0}, what);
}

void compare(const ir::Model& m, const std::vector<Tensor>& inputs, double frac,
             const std::string& what) {
  Session cpu(m);
  const ir::Model opt = optimized(m);
  cuda::Executor gpu(opt, {});
  const std::string in = m.graph.inputs.at(0).name, out = m.graph.outputs.at(0).name;
  for (const Tensor& x : inputs) {
    const Tensor want = cpu.run({{in, x}}).at(out);
    Tensor got;
    try {
      got = gpu.run({{in, x}}).at(out);
    } catch (const std::exception& e) {
      FAIL() << what << ": " << e.what();
    }
    expect_close_to_range(got, want, frac, what + " batch " + std::to_string(x.dim(0)));
  }
  EXPECT_GT(gpu.device_weight_bytes(), 0u);
  EXPECT_GT(gpu.device_activation_bytes(), 0u);
}

TEST(CudaModel, SmallCnnFloat32) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = small_cnn(17, ir::Dim("N"));
  EXPECT_GT(count_ops(optimized(m), "FusedConv"), 0u);
  compare(m,
          {random_tensor(DataType::kFloat32, {1, 3, 32, 32}, 1),
           random_tensor(DataType::kFloat32, {3, 3, 32, 32}, 2)},
          1e-4, "small CNN float32");
}

TEST(CudaModel, TransformerBlockFloat32) {
  TRT_REQUIRE_CUDA();
  compare(transformer_block(ir::Dim("B")),
          {random_tensor(DataType::kFloat32, {1, 17, 32}, 3),
           random_tensor(DataType::kFloat32, {2, 17, 32}, 4)},
          1e-4, "transformer block float32");
}

TEST(CudaModel, SmallCnnFloat16) {
  TRT_REQUIRE_CUDA();
  ir::Model m = small_cnn(19, ir::Dim(2));
  quantize::convert_to_fp16(m);
  compare(m, {random_tensor(DataType::kFloat32, {2, 3, 32, 32}, 5)}, 2e-2, "small CNN float16");
}

ir::Model quantized(ir::Model m, quantize::QuantMode mode) {
  ir::Graph& g = m.graph;
  quantize::name_nodes(g);
  passes::infer_shapes(g, m.opset());
  quantize::PlacementOptions po;
  po.mode = mode;
  po.min_channels = 1;
  const quantize::Placement p = quantize::place_qdq(g, po);
  quantize::ScaleTable table;
  for (const auto& [t, uses] : p.activations) table.amax[t] = 4.0;
  quantize::share_scales(g, table);
  quantize::apply_qdq(g, p, table, {.mode = mode});
  g.value_info.clear();
  return m;
}

TEST(CudaModel, SmallCnnInt8) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = quantized(small_cnn(13, ir::Dim(2)), quantize::QuantMode::kInt8);
  const ir::Model opt = optimized(m);
  EXPECT_GT(count_ops(opt, "QConv"), 0u);
  // One-step differences inside the network move the logits by a few quantization steps.
  compare(m, {random_tensor(DataType::kFloat32, {2, 3, 32, 32}, 6)}, 0.05, "small CNN int8");
}

TEST(CudaModel, SmallCnnFloat8) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = quantized(small_cnn(19, ir::Dim(2)), quantize::QuantMode::kFp8);
  EXPECT_GT(count_ops(optimized(m), "QConv"), 0u);
  compare(m, {random_tensor(DataType::kFloat32, {2, 3, 32, 32}, 7)}, 0.08, "small CNN float8");
}

// cuda_graph: eager first run, captured second, replayed afterwards; new shapes re-plan.
TEST(CudaModel, CudaGraphReplay) {
  TRT_REQUIRE_CUDA();
  for (const ir::Model& m : {small_cnn(17, ir::Dim("N")), transformer_block(ir::Dim("B"))}) {
    Session cpu(m);
    cuda::ExecutorOptions o;
    o.cuda_graph = true;
    cuda::Executor ex(optimized(m), o);
    const std::string in = m.graph.inputs.at(0).name, out = m.graph.outputs.at(0).name;
    Shape shape;
    for (const auto& d : *m.graph.inputs.at(0).shape) shape.push_back(d.is_static() ? d.value : 2);
    uint32_t seed = 70;
    for (int64_t batch : {2, 2, 2, 2, 1, 1, 1}) {
      shape[0] = batch;
      const Tensor x = random_tensor(DataType::kFloat32, shape, seed++);
      const Tensor want = cpu.run({{in, x}}).at(out);
      expect_close_to_range(ex.run({{in, x}}).at(out), want, 1e-4,
                            m.graph.name + " graph run batch " + std::to_string(batch));
    }
  }
}

TEST(CudaModel, ProfileAndPlacement) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = optimized(small_cnn(17, ir::Dim(1)));
  cuda::ExecutorOptions o;
  o.profile = true;
  cuda::Executor ex(m, o);
  const Tensor x = random_tensor(DataType::kFloat32, {1, 3, 32, 32}, 8);
  ex.run({{"x", x}});
  ex.run({{"x", x}});
  ASSERT_EQ(ex.profile().size(), m.graph.nodes.size());
  for (const auto& p : ex.profile()) {
    EXPECT_EQ(p.calls, 2) << p.name;
    EXPECT_GE(p.total_ms, 0.0) << p.name;
  }
  for (const auto& p : ex.node_placement()) EXPECT_EQ(p, "gpu");
  EXPECT_THROW(ex.run({{"x", random_tensor(DataType::kFloat32, {2, 3, 32, 32}, 9)}}), Error);
  EXPECT_THROW(ex.run({}), Error);
}

}  // namespace
}  // namespace trtutils
