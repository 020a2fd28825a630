// The fused attention of the CUDA executor (fusion/attention.cpp, ops_attention.cpp,
// attention_kernels.cu). GpuAttentionFusion.* check the rewrite of the two shapes torch.onnx
// exports (no device needed):
//   legacy multi-head attention, sequence first: Transpose(q) -> Div(sqrt d) -> MatMul with
//   Transpose(k, [1, 2, 0]) -> Softmax -> MatMul with Transpose(v) -> Transpose;
//   scaled_dot_product_attention: Mul(q, s) -> MatMul with Mul(Transpose(k, last two), s) ->
//   Softmax -> MatMul(v);
// and the values that must stop it. CudaAttention.* run both on the GPU against the CPU session
// at sizes around the kernel's 64-row / 64-key / 16-column tiles, float16 and bfloat16 (fused
// kernel), float32 and a head size over 128 (the unfused fallback).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"
#include "passes/passes.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

// Legacy export: q, k [sq|sk, n, d], v [sk, n, dv] sequence first; y [sq, n, dv].
ir::Model legacy(DataType dt, int64_t n, int64_t sq, int64_t sk, int64_t d, int64_t dv) {
  ir::GraphBuilder b("legacy_mha");
  const std::string q = b.input("q", dt, {sq, n, d});
  const std::string k = b.input("k", dt, {sk, n, d});
  const std::string v = b.input("v", dt, {sk, n, dv});
  const std::string qt = b.node("Transpose", {q}, {ir::attr_ints("perm", {1, 0, 2})})[0];
  const std::string qs = b.node(
      "Div", {qt, b.initializer("c", scalar_tensor(dt, std::sqrt(static_cast<float>(d))))})[0];
  const std::string kt = b.node("Transpose", {k}, {ir::attr_ints("perm", {1, 2, 0})})[0];
  const std::string vt = b.node("Transpose", {v}, {ir::attr_ints("perm", {1, 0, 2})})[0];
  const std::string s = b.node("MatMul", {qs, kt})[0];
  const std::string p = b.node("Softmax", {s}, {ir::attr_int("axis", -1)})[0];
  const std::string o = b.node("MatMul", {p, vt})[0];
  b.output(b.node("Transpose", {o}, {ir::attr_ints("perm", {1, 0, 2})})[0]);
  return b.build(17);
}

// scaled_dot_product_attention export: q [b, h, sq, d], k [b, h, sk, d], v [b, h, sk, dv].
// kt_input: k is given as K^T [b, h, d, sk] (no Transpose; the kernel's element-wise loads).
ir::Model sdpa(DataType dt, int64_t bn, int64_t h, int64_t sq, int64_t sk, int64_t d, int64_t dv,
               bool kt_input = false) {
  ir::GraphBuilder b("sdpa");
  const float s = 1.0f / std::sqrt(std::sqrt(static_cast<float>(d)));
  const std::string q = b.input("q", dt, {bn, h, sq, d});
  const std::string k =
      kt_input ? b.input("k", dt, {bn, h, d, sk}) : b.input("k", dt, {bn, h, sk, d});
  const std::string v = b.input("v", dt, {bn, h, sk, dv});
  const std::string qs = b.node("Mul", {q, b.initializer("sq", scalar_tensor(dt, s))})[0];
  const std::string kt =
      kt_input ? k : b.node("Transpose", {k}, {ir::attr_ints("perm", {0, 1, 3, 2})})[0];
  const std::string ks = b.node("Mul", {b.initializer("sk", scalar_tensor(dt, s)), kt})[0];
  const std::string sc = b.node("MatMul", {qs, ks})[0];
  const std::string p = b.node("Softmax", {sc}, {ir::attr_int("axis", -1)})[0];
  b.output(b.node("MatMul", {p, v})[0]);
  return b.build(17);
}

// torch 2.x nn.MultiheadAttention export: q, k, v [s, b * h, d] (sequence first) ->
// Transpose(1, 0, 2) -> Reshape [b, h, s, d] -> scaled_dot_product_attention -> Transpose
// (2, 0, 1, 3) -> y [s, b, h, d].
ir::Model sdpa_seq_first(DataType dt, int64_t bn, int64_t h, int64_t s, int64_t d) {
  ir::GraphBuilder b("sdpa_seq_first");
  const float c = 1.0f / std::sqrt(std::sqrt(static_cast<float>(d)));
  const Tensor shape4 = [&] {
    Tensor t(DataType::kInt64, {4});
    const int64_t v[4] = {bn, h, s, -1};
    for (int i = 0; i < 4; ++i) t.data<int64_t>()[i] = v[i];
    return t;
  }();
  const std::string sh = b.initializer("shape4", shape4);
  auto heads = [&](const std::string& name) {
    const std::string x = b.input(name, dt, {s, bn * h, d});
    const std::string t = b.node("Transpose", {x}, {ir::attr_ints("perm", {1, 0, 2})})[0];
    return b.node("Reshape", {t, sh})[0];
  };
  const std::string q = heads("q"), k = heads("k"), v = heads("v");
  const std::string qs = b.node("Mul", {q, b.initializer("cq", scalar_tensor(dt, c))})[0];
  const std::string kt = b.node("Transpose", {k}, {ir::attr_ints("perm", {0, 1, 3, 2})})[0];
  const std::string ks = b.node("Mul", {kt, b.initializer("ck", scalar_tensor(dt, c))})[0];
  const std::string sc = b.node("MatMul", {qs, ks})[0];
  const std::string p = b.node("Softmax", {sc}, {ir::attr_int("axis", -1)})[0];
  const std::string o = b.node("MatMul", {p, v})[0];
  b.output(b.node("Transpose", {o}, {ir::attr_ints("perm", {2, 0, 1, 3})})[0]);
  return b.build(17);
}

// Q [b, s, h, d] -> Transpose(0, 2, 1, 3) -> Reshape [b, 1, h * s, d]: merging the h and s axes
// of the transposed view is not a stride pattern (the operand is copied once); K and V plain.
ir::Model merged_heads(DataType dt, int64_t bn, int64_t h, int64_t s, int64_t d,
                       int64_t axis = -1) {
  ir::GraphBuilder b("merged_heads");
  Tensor shape(DataType::kInt64, {4});
  const int64_t v4[4] = {bn, 1, h * s, d};
  for (int i = 0; i < 4; ++i) shape.data<int64_t>()[i] = v4[i];
  const std::string q = b.input("q", dt, {bn, s, h, d});
  const std::string qt = b.node("Transpose", {q}, {ir::attr_ints("perm", {0, 2, 1, 3})})[0];
  const std::string qr = b.node("Reshape", {qt, b.initializer("shape", shape)})[0];
  const std::string kt = b.input("kt", dt, {bn, 1, d, h * s});
  const std::string v = b.input("v", dt, {bn, 1, h * s, d});
  const std::string sc = b.node("MatMul", {qr, kt})[0];
  const std::string p = b.node("Softmax", {sc}, {ir::attr_int("axis", axis)})[0];
  b.output(b.node("MatMul", {p, v})[0]);
  return b.build(17);
}

const ir::Node* find(const ir::Graph& g, const std::string& op) {
  for (const auto& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

TEST(GpuAttentionFusion, LegacyExportBecomesOneNode) {
  ir::Model m = legacy(DataType::kFloat32, 6, 197, 197, 64, 64);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const ir::Node& a = m.graph.nodes[0];
  EXPECT_EQ(a.op_type, "Attention");
  EXPECT_EQ(a.domain, cuda::kGpuDomain);
  EXPECT_EQ(a.inputs, (std::vector<std::string>{"q", "k", "v"}));
  // Views: {0 (Transpose), rank, perm...}.
  EXPECT_EQ(a.attr_ints("view_q"), (std::vector<int64_t>{0, 3, 1, 0, 2}));
  EXPECT_EQ(a.attr_ints("view_k"), (std::vector<int64_t>{0, 3, 1, 2, 0}));
  EXPECT_EQ(a.attr_ints("view_v"), (std::vector<int64_t>{0, 3, 1, 0, 2}));
  EXPECT_EQ(a.attr_ints("perm_o"), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_NEAR(a.attr_float("scale", 0), 0.125, 1e-6);
  ASSERT_EQ(m.graph.outputs.size(), 1u);
  EXPECT_EQ(a.outputs, std::vector<std::string>{m.graph.outputs[0].name});
}

TEST(GpuAttentionFusion, SdpaExportReadsKAsIs) {
  ir::Model m = sdpa(DataType::kFloat32, 2, 3, 10, 12, 16, 16);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 1u);
  const ir::Node* a = find(m.graph, "Attention");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_TRUE(a->attr_ints("view_q").empty());
  EXPECT_EQ(a->attr_ints("view_k"), (std::vector<int64_t>{0, 4, 0, 1, 3, 2}));
  EXPECT_NEAR(a->attr_float("scale", 0), 0.25, 1e-6);  // (16^-1/4)^2
}

TEST(GpuAttentionFusion, AbsorbsTransposeReshapeChains) {
  ir::Model m = sdpa_seq_first(DataType::kFloat32, 2, 3, 10, 8);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const ir::Node& a = m.graph.nodes[0];
  EXPECT_EQ(a.inputs, (std::vector<std::string>{"q", "k", "v"}));
  // Transpose, then Reshape {1 (allowzero 0), rank, shape...}; K's last Transpose too.
  EXPECT_EQ(a.attr_ints("view_q"), (std::vector<int64_t>{0, 3, 1, 0, 2, 1, 4, 2, 3, 10, -1}));
  EXPECT_EQ(a.attr_ints("view_k"),
            (std::vector<int64_t>{0, 3, 1, 0, 2, 1, 4, 2, 3, 10, -1, 0, 4, 0, 1, 3, 2}));
  EXPECT_EQ(a.attr_ints("perm_o"), (std::vector<int64_t>{2, 0, 1, 3}));
  // Softmax(axis = 3) of a rank-4 score tensor is over the last axis too (the rank comes from
  // shape inference, which engine graphs carry).
  ir::Model mh = merged_heads(DataType::kFloat32, 2, 3, 20, 32, 3);
  EXPECT_EQ(cuda::fuse_for_gpu(mh.graph, 17), 0u);
  mh = merged_heads(DataType::kFloat32, 2, 3, 20, 32, 3);
  passes::infer_shapes(mh.graph, 17);
  EXPECT_EQ(cuda::fuse_for_gpu(mh.graph, 17), 1u);
}

TEST(GpuAttentionFusion, StopsAtSharedValuesMasksAndOtherAxes) {
  {  // the probabilities are also a graph output
    ir::Model m = sdpa(DataType::kFloat32, 1, 2, 4, 4, 8, 8);
    for (const auto& n : m.graph.nodes)
      if (n.op_type == "Softmax")
        m.graph.outputs.push_back(ir::ValueInfo{n.outputs[0], {}, {}, {}});
    EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 0u);
  }
  {  // softmax over the queries (axis 2 of 4)
    ir::Model m = sdpa(DataType::kFloat32, 1, 2, 4, 4, 8, 8);
    for (auto& n : m.graph.nodes)
      if (n.op_type == "Softmax") n.attributes["axis"] = ir::attr_int("axis", 2);
    EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 0u);
  }
  {  // an additive mask between the scores and the softmax
    ir::GraphBuilder b("masked");
    const std::string q = b.input("q", DataType::kFloat32, {2, 4, 8});
    const std::string k = b.input("k", DataType::kFloat32, {2, 8, 4});
    const std::string v = b.input("v", DataType::kFloat32, {2, 4, 8});
    const std::string s = b.node("MatMul", {q, k})[0];
    const std::string sm =
        b.node("Add", {s, b.initializer("mask", random_tensor(DataType::kFloat32, {4, 4}, 1))})[0];
    const std::string p = b.node("Softmax", {sm}, {ir::attr_int("axis", -1)})[0];
    b.output(b.node("MatMul", {p, v})[0]);
    ir::Model m = b.build(17);
    EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 0u);
  }
}

struct Case {
  const char* what;
  std::function<ir::Model(DataType)> make;
  std::vector<std::pair<std::string, Shape>> inputs;
  bool fused;
};

Tensor to_float32(const Tensor& t) {
  Tensor f(DataType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = static_cast<float>(t.at_double(i));
  return f;
}

// The GPU's dt model against the CPU session: the same model (float_ref = false), or the float32
// model on the same (dt-rounded) inputs, so that the fused kernel's error is measured against
// the exact result rather than a reference that also rounds its scores to dt.
void run_case(const Case& c, DataType dt, Tolerance tol, bool float_ref) {
  std::map<std::string, Tensor> feeds, ref_feeds;
  uint32_t seed = 11;
  for (const auto& [name, shape] : c.inputs) {
    feeds[name] = random_tensor(dt, shape, seed++, -2.0f, 2.0f);
    ref_feeds[name] = float_ref ? to_float32(feeds[name]) : feeds[name];
  }
  const ir::Model m = c.make(dt);
  Session cpu(float_ref ? c.make(DataType::kFloat32) : m);
  const auto want = cpu.run(ref_feeds);
  cuda::Executor gpu(m, {});
  const auto got = gpu.run(feeds);
  const std::string what = std::string(c.what) + " " + std::string(dtype_name(dt));
  for (const auto& [n, t] : want)
    expect_close(float_ref ? to_float32(got.at(n)) : got.at(n), t, tol, what);
  const auto kernels = gpu.node_kernels();
  ASSERT_EQ(kernels.size(), 1u) << what;
  std::cout << "[ kernel   ] " << what << ": " << kernels[0] << std::endl;
  EXPECT_EQ(kernels[0].find("fused attention") != std::string::npos, c.fused)
      << what << ": " << kernels[0];
}

TEST(CudaAttention, MatchesCpuAroundTileEdges) {
  TRT_REQUIRE_CUDA();
  using D = DataType;
  const std::vector<Case> fused = {
      // ViT-B/16's shape (197 tokens, head 64) with 6 heads; odd sizes around 16 / 64.
      {"legacy 197x197 d64",
       [](D t) { return legacy(t, 6, 197, 197, 64, 64); },
       {{"q", {197, 6, 64}}, {"k", {197, 6, 64}}, {"v", {197, 6, 64}}},
       true},
      {"legacy 65x17 d40 dv24",
       [](D t) { return legacy(t, 3, 65, 17, 40, 24); },
       {{"q", {65, 3, 40}}, {"k", {17, 3, 40}}, {"v", {17, 3, 24}}},
       true},
      {"sdpa 1x130 d128",
       [](D t) { return sdpa(t, 2, 2, 1, 130, 128, 128); },
       {{"q", {2, 2, 1, 128}}, {"k", {2, 2, 130, 128}}, {"v", {2, 2, 130, 128}}},
       true},
      {"sdpa 64x64 d16",
       [](D t) { return sdpa(t, 1, 3, 64, 64, 16, 16); },
       {{"q", {1, 3, 64, 16}}, {"k", {1, 3, 64, 16}}, {"v", {1, 3, 64, 16}}},
       true},
      {"sdpa K^T input 33x47 d7",
       [](D t) { return sdpa(t, 2, 1, 33, 47, 7, 5, true); },
       {{"q", {2, 1, 33, 7}}, {"k", {2, 1, 7, 47}}, {"v", {2, 1, 47, 5}}},
       true},
      {"torch 2 export 197 d64",
       [](D t) { return sdpa_seq_first(t, 2, 3, 197, 64); },
       {{"q", {197, 6, 64}}, {"k", {197, 6, 64}}, {"v", {197, 6, 64}}},
       true},
      {"merged heads (copied view)",
       [](D t) { return merged_heads(t, 2, 3, 20, 32); },
       {{"q", {2, 20, 3, 32}}, {"kt", {2, 1, 32, 60}}, {"v", {2, 1, 60, 32}}},
       true},
  };
  // Against the exact (float32) result: float16 rounds the probabilities and the output to 11
  // significant bits, bfloat16 to 8.
  for (const Case& c : fused) {
    run_case(c, D::kFloat16, Tolerance{6e-3, 6e-3}, true);
    run_case(c, D::kBFloat16, Tolerance{4e-2, 3e-2}, true);
  }
  // The unfused fallback: float32 (TF32 off), and a head size over the kernel's 128 (against
  // the float16 CPU session, which rounds its scores to float16 as the fallback does).
  run_case({"legacy float32 70x70 d32",
            [](D t) { return legacy(t, 2, 70, 70, 32, 32); },
            {{"q", {70, 2, 32}}, {"k", {70, 2, 32}}, {"v", {70, 2, 32}}},
            false},
           D::kFloat32, kFp32, false);
  run_case({"sdpa d160",
            [](D t) { return sdpa(t, 1, 2, 20, 30, 160, 160); },
            {{"q", {1, 2, 20, 160}}, {"k", {1, 2, 30, 160}}, {"v", {1, 2, 30, 160}}},
            false},
           D::kFloat16, kFp16, false);
}

// The float8 Q/DQ attention of a strongly typed engine (QuantizeLinear -> com.trtutils::QMatMul
// -> Mul -> Softmax -> QuantizeLinear -> QMatMul), float32 q, k, v [b, h, s, d] with K^T from a
// Transpose; q_div (when not 0): q divided by it before its quantizer, as torchvision's
// MultiheadAttention export scales the queries.
ir::Model fp8_attention(int64_t bn, int64_t h, int64_t s, int64_t d, DataType f8,
                        float q_div = 0.0f) {
  ir::GraphBuilder b("fp8_attention");
  auto scalar_f32 = [&](const std::string& name, float v) {
    return b.initializer(name, scalar_tensor(DataType::kFloat32, v));
  };
  const std::string zero = b.initializer("zero", Tensor(f8, {}));
  auto quant = [&](const std::string& x, const std::string& sc) {
    return b.node("QuantizeLinear", {x, sc, zero})[0];
  };
  const float top = f8 == DataType::kInt8 ? 127.0f : 448.0f;
  const std::string sx = scalar_f32("sx", 2.0f / top), sp = scalar_f32("sp", 1.0f / top);
  std::string q = b.input("q", DataType::kFloat32, {bn, h, s, d});
  if (q_div != 0.0f) q = b.node("Div", {q, scalar_f32("qdiv", q_div)})[0];
  const std::string k = b.input("k", DataType::kFloat32, {bn, h, s, d});
  const std::string v = b.input("v", DataType::kFloat32, {bn, h, s, d});
  const std::string kt = b.node("Transpose", {k}, {ir::attr_ints("perm", {0, 1, 3, 2})})[0];
  const std::string s1 = b.node("QMatMul", {quant(q, sx), sx, zero, quant(kt, sx), sx, zero}, {}, 1,
                                "com.trtutils")[0];
  const std::string s2 = b.node("Mul", {s1, scalar_f32("c", 0.3f)})[0];
  const std::string p = b.node("Softmax", {s2}, {ir::attr_int("axis", -1)})[0];
  b.output(b.node("QMatMul", {quant(p, sp), sp, zero, quant(v, sx), sx, zero}, {}, 1,
                  "com.trtutils")[0]);
  ir::Model m = b.build(19, {{"com.trtutils", 1}});
  passes::infer_shapes(m.graph, 19);
  return m;
}

// The fused float8 / int8 attention's output against the CPU's: at most 1 element in 1000 off by
// more than 1e-4 (absolute and relative), none by more than 0.25 (a flipped float8 probability),
// in one node whose kernel names `kernel`.
void expect_fused_close(const Tensor& got, const Tensor& want,
                        const std::vector<std::string>& kernels, const char* kernel,
                        const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int64_t off = 0;
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double e = std::fabs(got.at_double(i) - want.at_double(i));
    worst = std::max(worst, e);
    off += e > 1e-4 + 1e-4 * std::fabs(want.at_double(i));
  }
  EXPECT_LE(off, want.numel() / 1000) << what << ": worst |diff| " << worst;
  EXPECT_LE(worst, 0.25) << what;
  ASSERT_EQ(kernels.size(), 1u) << what;
  std::cout << "[ kernel   ] " << what << ": " << kernels[0] << " (" << off
            << " elements off, worst " << worst << ")" << std::endl;
  EXPECT_NE(kernels[0].find(kernel), std::string::npos) << kernels[0];
}

// On by default; TRTUTILS_CUDA_ATTENTION_FP8=0 leaves the layers one by one.
TEST(GpuAttentionFusion, Float8QdqAttentionBecomesOneNode) {
  ::setenv("TRTUTILS_CUDA_ATTENTION_FP8", "0", 1);
  ir::Model off = fp8_attention(1, 2, 10, 16, DataType::kFloat8E4M3FN);
  EXPECT_EQ(cuda::fuse_for_gpu(off.graph, 19), 0u);
  ::unsetenv("TRTUTILS_CUDA_ATTENTION_FP8");
  ir::Model m = fp8_attention(1, 2, 10, 16, DataType::kFloat8E4M3FN);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const ir::Node& a = m.graph.nodes[0];
  EXPECT_EQ(a.op_type, "AttentionQ");
  EXPECT_EQ(a.inputs, (std::vector<std::string>{"q", "k", "v"}));
  EXPECT_EQ(a.attr_ints("view_k"), (std::vector<int64_t>{0, 4, 0, 1, 3, 2}));
  EXPECT_NEAR(a.attr_float("scale", 0), 0.3, 1e-6);
  EXPECT_NEAR(a.attr_float("p_scale", 0), 1.0 / 448, 1e-9);
  EXPECT_NEAR(a.attr_float("qk_dq", 0), (2.0 / 448) * (2.0 / 448), 1e-9);
  EXPECT_EQ(a.attr_int("e4m3", -1), 1);
  EXPECT_EQ(a.attr_int("int8", -1), 0);
  EXPECT_EQ(a.attr_int("q_pre_op", 0), 0);
  // The queries' Div joins the fused node (repeated before quantizing).
  ir::Model scaled = fp8_attention(1, 2, 10, 16, DataType::kFloat8E4M3FN, 3.0f);
  EXPECT_EQ(cuda::fuse_for_gpu(scaled.graph, 19), 1u);
  ASSERT_EQ(scaled.graph.nodes.size(), 1u);
  EXPECT_EQ(scaled.graph.nodes[0].inputs[0], "q");
  EXPECT_EQ(scaled.graph.nodes[0].attr_int("q_pre_op", 0), 2);
  EXPECT_NEAR(scaled.graph.nodes[0].attr_float("q_pre", 0), 3.0, 1e-6);
  // int8 operands (zero points 0) too.
  ir::Model i8 = fp8_attention(1, 2, 10, 16, DataType::kInt8);
  EXPECT_EQ(cuda::fuse_for_gpu(i8.graph, 19), 1u);
  ASSERT_EQ(i8.graph.nodes.size(), 1u);
  EXPECT_EQ(i8.graph.nodes[0].attr_int("int8", 0), 1);
}

// Same numerics as the CPU session running the unfused Q/DQ graph: the products of float8
// values are exact, so outputs agree to float rounding except where a probability's quantization
// lies within rounding of a boundary (one float8 step of p times v; allowed for 0.1% of them).
// Cases: keys resident in shared memory with one block per batch entry (s70) or query strips
// split over two blocks (s197: 13 strips, 6 batch entries), element-by-element loads (d30), and
// keys streamed in 64-key blocks (s400 d128: K and V do not fit in shared memory); the queries
// divided by 3 before their quantizer in the s197 and s400 cases. The resident cases run both
// resident kernels: scores kept in registers (one pass; up to 208 keys, head size 64) and
// recomputed (two passes, TRTUTILS_CUDA_ATTENTION_FP8_ONE_PASS=0).
TEST(CudaAttention, Float8MatchesTheQdqGraph) {
  TRT_REQUIRE_CUDA();
  struct Case {
    int64_t s, d;
    bool one_pass;
  };
  const std::vector<Case> cases = {{70, 32, true},  {197, 64, true},  {33, 30, true},
                                   {70, 32, false}, {197, 64, false}, {33, 30, false},
                                   {400, 128, true}};
  for (DataType f8 : {DataType::kFloat8E4M3FN, DataType::kFloat8E5M2, DataType::kInt8}) {
    for (const auto& [s, d, one_pass] : cases) {
      ::setenv("TRTUTILS_CUDA_ATTENTION_FP8_ONE_PASS", one_pass ? "1" : "0", 1);
      const ir::Model m = fp8_attention(2, 3, s, d, f8, s >= 197 ? 3.0f : 0.0f);
      std::map<std::string, Tensor> feeds;
      uint32_t seed = 40;
      for (const char* n : {"q", "k", "v"})
        feeds[n] = random_tensor(DataType::kFloat32, {2, 3, s, d}, seed++, -2.0f, 2.0f);
      Session cpu(m);
      const Tensor want = cpu.run(feeds).begin()->second;
      cuda::Executor gpu(m, {});
      ::unsetenv("TRTUTILS_CUDA_ATTENTION_FP8_ONE_PASS");
      const Tensor got = gpu.run(feeds).begin()->second;
      const std::string what = std::string(dtype_name(f8)) + " s" + std::to_string(s) + " d" +
                               std::to_string(d) + (one_pass ? "" : " two passes");
      expect_fused_close(got, want, gpu.node_kernels(),
                         f8 == DataType::kInt8 ? "int8 attention" : "float8 attention", what);
    }
  }
}

// float16 / bfloat16 operands (a float16 graph with TRTUTILS_CUDA_HALF_AS_FLOAT=0, bfloat16
// graphs) reach the fused node as they are and take the two-pass resident kernel: the same
// result as the float32 graph on the same values. (No scaling of the queries here: the fused node
// rounds a scaled query to the operand's dtype, as that graph's own Div would.)
TEST(CudaAttention, HalfOperandsMatchTheFloatGraph) {
  TRT_REQUIRE_CUDA();
  for (DataType ht : {DataType::kFloat16, DataType::kBFloat16}) {
    for (int64_t s : {70, 197}) {
      const ir::Model m = fp8_attention(2, 3, s, 64, DataType::kFloat8E4M3FN);
      ir::Model h = m;
      ASSERT_EQ(cuda::fuse_for_gpu(h.graph, 19), 1u);
      for (auto& vi : h.graph.inputs) vi.dtype = ht;
      std::map<std::string, Tensor> feeds, ref_feeds;
      uint32_t seed = 60;
      for (const char* n : {"q", "k", "v"}) {
        feeds[n] = random_tensor(ht, {2, 3, s, 64}, seed++, -2.0f, 2.0f);
        ref_feeds[n] = to_float32(feeds[n]);
      }
      Session cpu(m);
      const Tensor want = cpu.run(ref_feeds).begin()->second;
      cuda::Executor gpu(h, {});
      const Tensor got = to_float32(gpu.run(feeds).begin()->second);
      const std::string what = std::string(dtype_name(ht)) + " s" + std::to_string(s);
      expect_fused_close(got, want, gpu.node_kernels(), "float8 attention", what);
    }
  }
}

// Operands quantized by their producer, as the engine's QKV product writes them (float8 / int8
// bytes, scales 1, Q, K and V of a row interleaved: [batch, s, 3, d]): the resident kernels stage
// them with 16-byte loads. Checked against a reference computed here from the bytes (scores in
// double, softmax, probabilities quantized by the same rounding, then p8 . v8); both resident
// kernels, 197 tokens (the one-pass kernel's 208-key capacity) and 120 (its 128).
TEST(CudaAttention, PrequantizedOperandsMatchAReference) {
  TRT_REQUIRE_CUDA();
  const int64_t bn = 4, d = 64;
  for (const DataType t : {DataType::kFloat8E4M3FN, DataType::kInt8}) {
    for (const int64_t s : {int64_t{197}, int64_t{120}}) {
      std::mt19937 rng(7);
      std::uniform_real_distribution<float> u(-2.0f, 2.0f);
      std::vector<uint8_t> qkv(static_cast<size_t>(bn * s * 3 * d));
      std::vector<float> val(qkv.size());
      for (size_t i = 0; i < qkv.size(); ++i) {
        if (t == DataType::kInt8) {
          const int v = static_cast<int>(std::lround(u(rng) * 30.0f));
          qkv[i] = static_cast<uint8_t>(static_cast<int8_t>(v));
          val[i] = static_cast<float>(v);
        } else {
          qkv[i] = float_to_e4m3fn(u(rng)).bits;
          val[i] = e4m3fn_to_float(float8_e4m3fn{qkv[i]});
        }
      }
      const float top = t == DataType::kInt8 ? 127.0f : 448.0f;
      const float scale = 0.125f, qk_dq = t == DataType::kInt8 ? 1e-3f : 0.5f;
      const float p_scale = 1.0f / top, pv_dq = 0.01f;
      // The reference.
      std::vector<float> want(static_cast<size_t>(bn * s * d));
      auto at = [&](int64_t b, int64_t r, int which, int64_t c) {
        return val[static_cast<size_t>(((b * s + r) * 3 + which) * d + c)];
      };
      auto quantize_p = [&](float x) {
        if (t == DataType::kInt8) return std::nearbyint(std::min(std::max(x, -128.0f), 127.0f));
        return e4m3fn_to_float(float_to_e4m3fn(x));
      };
      for (int64_t b = 0; b < bn; ++b)
        for (int64_t i = 0; i < s; ++i) {
          std::vector<double> sc(static_cast<size_t>(s));
          double mx = -1e300, sum = 0;
          for (int64_t j = 0; j < s; ++j) {
            double acc = 0;
            for (int64_t c = 0; c < d; ++c) acc += double(at(b, i, 0, c)) * at(b, j, 1, c);
            sc[j] = double(scale) * qk_dq * acc;
            mx = std::max(mx, sc[j]);
          }
          for (int64_t j = 0; j < s; ++j) sum += std::exp(sc[j] - mx);
          for (int64_t c = 0; c < d; ++c) {
            double o = 0;
            for (int64_t j = 0; j < s; ++j)
              o += double(quantize_p(static_cast<float>(std::exp(sc[j] - mx) / sum / p_scale))) *
                   at(b, j, 2, c);
            want[static_cast<size_t>((b * s + i) * d + c)] = static_cast<float>(pv_dq * o);
          }
        }
      for (const bool one_pass : {true, false}) {
        void* dqkv = nullptr;
        void* dout = nullptr;
        ASSERT_EQ(cudaMalloc(&dqkv, qkv.size()), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&dout, want.size() * sizeof(float)), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(dqkv, qkv.data(), qkv.size(), cudaMemcpyHostToDevice), cudaSuccess);
        cuda::k::AttentionQDesc aq;
        aq.e4m3 = t != DataType::kInt8;
        aq.int8 = t == DataType::kInt8;
        aq.p_scale = p_scale;
        aq.qk_dq = qk_dq;
        aq.pv_dq = pv_dq;
        aq.one_pass = one_pass;
        cuda::k::AttentionDesc& a = aq.a;
        a.batch = bn;
        a.sq = a.sk = s;
        a.d = a.dv = d;
        a.scale = scale;
        const auto* base = static_cast<const uint8_t*>(dqkv);
        a.q = base;
        a.k = base + d;
        a.v = base + 2 * d;
        a.o = dout;
        for (int64_t* st : {a.q_st, a.k_st, a.v_st}) {
          st[0] = s * 3 * d;
          st[1] = 3 * d;
          st[2] = 1;
        }
        a.o_st[0] = s * d;
        a.o_st[1] = d;
        a.o_st[2] = 1;
        ASSERT_EQ(cuda::k::attention_fp8(t, aq, nullptr), cudaSuccess);
        std::vector<float> got(want.size());
        ASSERT_EQ(cudaMemcpy(got.data(), dout, got.size() * sizeof(float), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        cudaFree(dqkv);
        cudaFree(dout);
        const std::string what = std::string(dtype_name(t)) + " s" + std::to_string(s) +
                                 (one_pass ? " one pass" : " two passes");
        int64_t off = 0;
        double worst = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          const double e = std::fabs(double(got[i]) - want[i]);
          worst = std::max(worst, e);
          off += e > 1e-4 + 1e-4 * std::fabs(want[i]);
        }
        // A probability whose quantization lies within float rounding of a boundary may round
        // the other way: one step of p (int8 1, E4M3 at most 32) times |v| (int8 <= 60, E4M3
        // <= 2), times pv_dq.
        EXPECT_LE(off, static_cast<int64_t>(want.size()) / 1000) << what << ", worst " << worst;
        EXPECT_LE(worst, 1.01 * pv_dq * (t == DataType::kInt8 ? 60.0 : 64.0)) << what;
        std::cout << "[ kernel   ] " << what << ": " << off << " elements off, worst " << worst
                  << std::endl;
      }
    }
  }
}

}  // namespace
}  // namespace trtutils
