// BatchNormalization -> activation -> QuantizeLinear as one GPU pass (fusion/batchnorm_act.cpp,
// com.trtutils.cuda::BatchNormAct), with the Concat feeding it absorbed (DenseNet's dense block).
// GpuFusion.BatchNormAct* check the rewrite (no device); CudaBatchNormAct.* run the graphs on the
// GPU against the CPU session: float results to float rounding, quantized bytes within one step.
#include <fmt/format.h>

#include <cstring>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

struct Tail {
  std::string act;  // "" | Relu | Clip | LeakyRelu | Sigmoid | HardSwish
  DataType q;       // kUndefined: no QuantizeLinear
  bool conv_first;  // two convolutions -> Concat feed the BatchNormalization
  int64_t cb = 4;   // the second convolution's channels (the first has 8)
};

Tensor positive(const Shape& s, uint32_t seed) {
  return random_tensor(DataType::kFloat32, s, seed, 0.5f, 1.5f);
}

// x [n, c, h, w] (or two convolutions of x concatenated) -> BatchNormalization -> tail ->
// DequantizeLinear (when quantized) -> y.
ir::Model bn_graph(DataType dt, const Shape& xs, const Tail& t) {
  ir::GraphBuilder b("bn_act");
  std::string v = b.input("x", dt, ir::SymShape(xs.begin(), xs.end()));
  int64_t c = xs[1];
  auto cast = [&](const Tensor& f) {
    if (dt == DataType::kFloat32) return f;
    Tensor h(DataType::kFloat16, f.shape());
    for (int64_t i = 0; i < f.numel(); ++i) h.data<half>()[i] = float_to_half(f.data<float>()[i]);
    return h;
  };
  if (t.conv_first) {
    const std::string a = b.node(
        "Conv", {v, b.initializer("wa", cast(random_tensor(DataType::kFloat32, {8, c, 3, 3}, 1)))},
        {ir::attr_ints("pads", {1, 1, 1, 1})})[0];
    const std::string d = b.node(
        "Conv",
        {v, b.initializer("wb", cast(random_tensor(DataType::kFloat32, {t.cb, c, 1, 1}, 2)))})[0];
    v = b.node("Concat", {a, d}, {ir::attr_int("axis", 1)})[0];
    c = 8 + t.cb;
  }
  const std::string bn = b.node(
      "BatchNormalization", {v, b.initializer("s", cast(positive({c}, 3))),
                             b.initializer("b", cast(random_tensor(DataType::kFloat32, {c}, 4))),
                             b.initializer("m", cast(random_tensor(DataType::kFloat32, {c}, 5))),
                             b.initializer("var", cast(positive({c}, 6)))})[0];
  v = bn;
  if (t.act == "Clip")
    v = b.node("Clip", {v, b.initializer("lo", scalar_tensor(dt, -0.5f)),
                        b.initializer("hi", scalar_tensor(dt, 1.25f))})[0];
  else if (t.act == "LeakyRelu")
    v = b.node("LeakyRelu", {v}, {ir::attr_float("alpha", 0.1f)})[0];
  else if (!t.act.empty())
    v = b.node(t.act, {v})[0];
  if (t.q != DataType::kUndefined) {
    Tensor zp(t.q, {});
    std::memset(zp.raw(), t.q == DataType::kUInt8 ? 100 : 0, 1);
    const std::string s = b.initializer("ys", scalar_tensor(dt, 0.02f));
    const std::string z = b.initializer("yz", zp);
    v = b.node("QuantizeLinear", {v, s, z})[0];
    v = b.node("DequantizeLinear", {v, s, z})[0];
  }
  b.output(v);
  return b.build(19);
}

int count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op_type == op ? 1 : 0;
  return n;
}

TEST(GpuFusion, BatchNormActAbsorbsTheActivationAndTheQuantizer) {
  ir::Model m = bn_graph(DataType::kFloat32, {2, 3, 4, 4}, {"Relu", DataType::kInt8, false});
  EXPECT_EQ(cuda::fuse_batchnorm_act(m.graph, 19, nullptr), 1u);
  ASSERT_EQ(count(m.graph, "BatchNormAct"), 1);
  EXPECT_EQ(m.graph.nodes.size(), 2u);  // BatchNormAct, DequantizeLinear
  EXPECT_EQ(m.graph.nodes[0].inputs.size(), 7u);
  EXPECT_EQ(m.graph.nodes[0].attr_string("activation", ""), "Relu");

  ir::Model clip =
      bn_graph(DataType::kFloat32, {2, 3, 4, 4}, {"Clip", DataType::kUndefined, false});
  EXPECT_EQ(cuda::fuse_batchnorm_act(clip.graph, 19, nullptr), 1u);
  EXPECT_EQ(clip.graph.nodes[0].inputs.size(), 5u);
  EXPECT_EQ(clip.graph.nodes[0].attr_floats("activation_params"),
            (std::vector<float>{-0.5f, 1.25f}));

  ir::Model alone = bn_graph(DataType::kFloat32, {2, 3, 4, 4}, {"", DataType::kUndefined, false});
  EXPECT_EQ(cuda::fuse_batchnorm_act(alone.graph, 19, nullptr), 0u);  // nothing to fuse into

  ir::Model shared =
      bn_graph(DataType::kFloat32, {2, 3, 4, 4}, {"Relu", DataType::kUndefined, false});
  shared.graph.outputs.push_back(shared.graph.outputs[0]);
  shared.graph.outputs[1].name = shared.graph.nodes[0].outputs[0];  // the BN output is read
  EXPECT_EQ(cuda::fuse_batchnorm_act(shared.graph, 19, nullptr), 0u);
}

// DenseNet's Concat -> BN -> ReLU -> Q: the Concat's inputs lead the fused node's.
TEST(GpuFusion, BatchNormActAbsorbsTheConcatFeedingIt) {
  ir::Model m = bn_graph(DataType::kFloat32, {2, 3, 4, 4}, {"Relu", DataType::kInt8, true});
  EXPECT_EQ(cuda::fuse_batchnorm_act(m.graph, 19, nullptr), 1u);
  EXPECT_EQ(count(m.graph, "Concat"), 0);
  ASSERT_EQ(count(m.graph, "BatchNormAct"), 1);
  const ir::Node* f = nullptr;
  for (const auto& n : m.graph.nodes)
    if (n.op_type == "BatchNormAct") f = &n;
  EXPECT_EQ(f->attr_int("concat_inputs", 1), 2);
  EXPECT_EQ(f->inputs.size(), 8u);  // 2 parts, 4 BN parameters, y_scale, y_zero_point

  // A Concat alone before a BN: still one pass (the concatenation is not written).
  ir::Model plain = bn_graph(DataType::kFloat32, {2, 3, 4, 4}, {"", DataType::kUndefined, true});
  EXPECT_EQ(cuda::fuse_batchnorm_act(plain.graph, 19, nullptr), 1u);
  EXPECT_EQ(count(plain.graph, "Concat"), 0);

  // The concatenation read elsewhere too (a graph output): the Concat stays.
  ir::Model shared = bn_graph(DataType::kFloat32, {2, 3, 4, 4}, {"Relu", DataType::kInt8, true});
  for (const auto& n : shared.graph.nodes)
    if (n.op_type == "Concat") {
      shared.graph.outputs.push_back(shared.graph.outputs[0]);
      shared.graph.outputs.back().name = n.outputs[0];
    }
  EXPECT_EQ(cuda::fuse_batchnorm_act(shared.graph, 19, nullptr), 1u);
  EXPECT_EQ(count(shared.graph, "Concat"), 1);
}

void check_on_gpu(DataType dt, const Shape& xs, const Tail& t) {
  const ir::Model m = bn_graph(dt, xs, t);
  const Tensor x = random_tensor(dt, xs, 11, -2.0f, 2.0f);
  Session cpu(m);
  const auto want = cpu.run({{"x", x}});
  cuda::Executor gpu(m, {});
  const auto got = gpu.run({{"x", x}});
  const std::string what =
      fmt::format("{} {} {} q={}{}", dtype_name(dt), shape_str(xs), t.act.empty() ? "-" : t.act,
                  dtype_name(t.q), t.conv_first ? " after Conv/Concat" : "");
  const Tensor& w = want.begin()->second;
  const Tensor& g = got.at(want.begin()->first);
  if (t.q != DataType::kUndefined)
    // One quantization step of the dequantized value: 0.02, float8's widest at these values 0.08.
    expect_within_steps(g, w, t.q == DataType::kFloat8E4M3FN ? 0.081 : 0.0201, what);
  else
    expect_close(g, w, dt == DataType::kFloat32 ? (t.conv_first ? kFp32 : kFp32Math) : kFp16, what);
  bool fused = false, concat = false;
  for (const auto& k : gpu.node_kernels()) {
    fused = fused || k.find("BatchNormalization") != std::string::npos;
    concat = concat || k.find("Concat + BatchNormalization") != std::string::npos;
  }
  EXPECT_TRUE(fused || (t.act.empty() && t.q == DataType::kUndefined)) << what;
  EXPECT_EQ(concat, t.conv_first) << what;
}

TEST(CudaBatchNormAct, MatchesTheCpuNodes) {
  TRT_REQUIRE_CUDA();
  int cases = 0;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16})
    for (const Shape& xs : {Shape{2, 8, 4, 4}, Shape{1, 3, 5, 5}, Shape{2, 12, 1, 1}})
      for (const Tail& t :
           {Tail{"Relu", DataType::kInt8, false}, Tail{"Clip", DataType::kUndefined, false},
            Tail{"LeakyRelu", DataType::kUInt8, false},
            Tail{"Sigmoid", DataType::kFloat8E4M3FN, false},
            Tail{"HardSwish", DataType::kUndefined, false}, Tail{"", DataType::kInt8, false},
            Tail{"", DataType::kUndefined, false}}) {
        check_on_gpu(dt, xs, t);
        ++cases;
      }
  EXPECT_EQ(cases, 42);
}

// The Concat read where its inputs lie (Concat + BatchNormAct): batch 32 runs the convolutions
// channels-last (rows of channels), batch 2 NCHW (planes); 8 + 4 channels take four elements
// per step, 8 + 3 one.
TEST(CudaBatchNormAct, ConcatFeedsIt) {
  TRT_REQUIRE_CUDA();
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16})
    for (const Shape& xs : {Shape{32, 5, 6, 6}, Shape{2, 5, 6, 6}, Shape{2, 5, 5, 7}})
      for (int64_t cb : {4, 3})
        for (const Tail& t :
             {Tail{"Relu", DataType::kInt8, true, cb}, Tail{"Relu", DataType::kUndefined, true, cb},
              Tail{"", DataType::kUndefined, true, cb}})
          check_on_gpu(dt, xs, t);
}

}  // namespace
}  // namespace trtutils
