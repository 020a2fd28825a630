// The CUDA executor's own fusions (src/backends/cuda/fusion/): MatMul + bias Add (+ the exporters'
// erf GELU chain) into com.trtutils.cuda::MatMulBias, lone GELU chains into Gelu. GpuFusion.* check
// the rewrite itself (no device needed); CudaFusion.* run a transformer MLP block on the GPU
// against the CPU session (float32 with TF32 off, float16).
#include <array>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"
#include "passes/passes.h"
#include "quantize/report.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

// x -> Div(x, sqrt 2) (or Mul(1/sqrt 2, x)) -> Erf -> Add(1) -> Mul(x, .) -> Mul(., 0.5), as
// torch.onnx exports nn.GELU().
std::string gelu_chain(ir::GraphBuilder& b, const std::string& x, DataType dt, bool mul_form,
                       const std::string& tag) {
  const std::string d =
      mul_form
          ? b.node("Mul", {b.initializer(tag + "r", scalar_tensor(dt, std::sqrt(0.5f))), x})[0]
          : b.node("Div", {x, b.initializer(tag + "s", scalar_tensor(dt, std::sqrt(2.0f)))})[0];
  const std::string e = b.node("Erf", {d})[0];
  const std::string a = b.node("Add", {e, b.initializer(tag + "one", scalar_tensor(dt, 1.0f))})[0];
  const std::string m = b.node("Mul", {x, a})[0];
  return b.node("Mul", {m, b.initializer(tag + "half", scalar_tensor(dt, 0.5f))})[0];
}

// x [2, 5, 16] -> MatMul [16, 32] + bias -> GELU -> MatMul [32, 16] + bias -> y; and a lone
// GELU on z (Mul form) as a second output.
ir::Model mlp(DataType dt) {
  ir::GraphBuilder b("mlp");
  const std::string x = b.input("x", dt, {2, 5, 16});
  const std::string h =
      b.node("MatMul", {x, b.initializer("w1", random_tensor(dt, {16, 32}, 1))})[0];
  const std::string hb = b.node("Add", {b.initializer("b1", random_tensor(dt, {32}, 2)), h})[0];
  const std::string g = gelu_chain(b, hb, dt, false, "g1");
  const std::string o =
      b.node("MatMul", {g, b.initializer("w2", random_tensor(dt, {32, 16}, 3))})[0];
  const std::string y = b.node("Add", {o, b.initializer("b2", random_tensor(dt, {16}, 4))})[0];
  b.output(y);
  b.output(gelu_chain(b, b.input("z", dt, {3, 8}), dt, true, "g2"));
  return b.build(17);
}

int count(const ir::Graph& g, const std::string& op) {
  int c = 0;
  for (const auto& n : g.nodes) c += n.op_type == op ? 1 : 0;
  return c;
}

TEST(GpuFusion, MatMulBiasGeluAndLoneGelu) {
  ir::Model m = mlp(DataType::kFloat32);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 3u);
  EXPECT_EQ(count(m.graph, "MatMulBias"), 2);
  EXPECT_EQ(count(m.graph, "Gelu"), 1);
  EXPECT_EQ(m.graph.nodes.size(), 3u);  // everything else was fused
  int with_gelu = 0;
  for (const auto& n : m.graph.nodes) {
    EXPECT_EQ(n.domain, cuda::kGpuDomain);
    if (n.op_type == "MatMulBias") with_gelu += static_cast<int>(n.attr_int("gelu", 0));
  }
  EXPECT_EQ(with_gelu, 1);
}

// A value the chain would swallow that something else reads (or that is a graph output) stops
// the fusion; a constant that is not the GELU's (0.6 instead of 0.5) too.
TEST(GpuFusion, LeavesSharedValuesAndOtherConstantsAlone) {
  {
    ir::GraphBuilder b("shared");
    const std::string x = b.input("x", DataType::kFloat32, {4, 8});
    const std::string h =
        b.node("MatMul", {x, b.initializer("w", random_tensor(DataType::kFloat32, {8, 8}, 1))})[0];
    b.output(b.node("Add", {h, b.initializer("b", random_tensor(DataType::kFloat32, {8}, 2))})[0]);
    b.output(h);  // the MatMul's output is a graph output
    ir::Model m = b.build(17);
    EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 0u);
  }
  {
    ir::GraphBuilder b("not_gelu");
    const std::string x = b.input("x", DataType::kFloat32, {4, 8});
    const std::string d = b.node(
        "Div", {x, b.initializer("s", scalar_tensor(DataType::kFloat32, std::sqrt(2.0f)))})[0];
    const std::string e = b.node("Erf", {d})[0];
    const std::string a =
        b.node("Add", {e, b.initializer("one", scalar_tensor(DataType::kFloat32, 1.0f))})[0];
    const std::string mm = b.node("Mul", {x, a})[0];
    b.output(b.node("Mul", {mm, b.initializer("h", scalar_tensor(DataType::kFloat32, 0.6f))})[0]);
    ir::Model m = b.build(17);
    EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 0u);
    EXPECT_EQ(m.graph.nodes.size(), 5u);
  }
}

TEST(CudaFusion, MlpBlockMatchesCpu) {
  TRT_REQUIRE_CUDA();
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    const ir::Model m = mlp(dt);
    const Tensor xv = random_tensor(dt, {2, 5, 16}, 9, -2.0f, 2.0f);
    const Tensor zv = random_tensor(dt, {3, 8}, 10, -3.0f, 3.0f);
    Session cpu(m);
    const auto want = cpu.run({{"x", xv}, {"z", zv}});
    cuda::Executor gpu(m, {});
    const auto got = gpu.run({{"x", xv}, {"z", zv}});
    const Tolerance tol = dt == DataType::kFloat32 ? kFp32 : kFp16;
    for (const auto& [n, t] : want)
      expect_close(got.at(n), t, tol, std::string(dtype_name(dt)) + " " + n);
    const auto kernels = gpu.node_kernels();
    ASSERT_EQ(kernels.size(), 3u);
    for (const auto& k : kernels)
      std::cout << "[ kernel   ] " << dtype_name(dt) << ": " << k << std::endl;
    EXPECT_NE(kernels[0].find("GELU"), std::string::npos) << kernels[0];
  }
}

}  // namespace
}  // namespace trtutils

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

// The attention block's projections as torch.onnx exports nn.MultiheadAttention (sequence
// first inside, batch first outside): x [b, s, k] -> Transpose(1, 0, 2) -> MatMul(W1) + bias;
// and h [s * b, k] -> Gemm(W2^T, c) -> Reshape [s, b, n] -> Transpose(1, 0, 2) -> [b, s, n].
// residual: each projection's output plus a residual input of its shape (fused as cuBLASLt's
// C when shape inference has run).
ir::Model projections(DataType dt, int64_t bn, int64_t s, int64_t k, int64_t n,
                      bool residual = false) {
  ir::GraphBuilder b("projections");
  const std::string x = b.input("x", dt, {bn, s, k});
  const std::string xt = b.node("Transpose", {x}, {ir::attr_ints("perm", {1, 0, 2})})[0];
  const std::string h =
      b.node("MatMul", {xt, b.initializer("w1", random_tensor(dt, {k, n}, 1))})[0];
  std::string y1 = b.node("Add", {h, b.initializer("b1", random_tensor(dt, {n}, 2))})[0];
  if (residual) y1 = b.node("Add", {b.input("r1", dt, {s, bn, n}), y1})[0];
  b.output(y1);
  const std::string a = b.input("a", dt, {s * bn, k});
  const std::string g = b.node("Gemm",
                               {a, b.initializer("w2", random_tensor(dt, {n, k}, 3)),
                                b.initializer("c2", random_tensor(dt, {n}, 4))},
                               {ir::attr_int("transB", 1)})[0];
  Tensor shape(DataType::kInt64, {3});
  shape.data<int64_t>()[0] = s;
  shape.data<int64_t>()[1] = -1;
  shape.data<int64_t>()[2] = n;
  const std::string r = b.node("Reshape", {g, b.initializer("shape", shape)})[0];
  std::string y2 = b.node("Transpose", {r}, {ir::attr_ints("perm", {1, 0, 2})})[0];
  if (residual) y2 = b.node("Add", {y2, b.input("r2", dt, {bn, s, n})})[0];
  b.output(y2);
  ir::Model m = b.build(17);
  if (residual) passes::infer_shapes(m.graph, 17);
  return m;
}

TEST(GpuFusion, ProjectionsAbsorbLeadingTransposes) {
  ir::Model m = projections(DataType::kFloat32, 3, 5, 8, 16);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 2u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[0].attr_int("a_swap01", 0), 1);
  EXPECT_EQ(m.graph.nodes[0].inputs[0], "x");
  EXPECT_EQ(m.graph.nodes[1].attr_int("trans_b", 0), 1);
  EXPECT_EQ(m.graph.nodes[1].attr_ints("y_grid"), (std::vector<int64_t>{5, -1}));
  EXPECT_EQ(m.graph.nodes[1].outputs[0], m.graph.outputs[1].name);
}

TEST(GpuFusion, ResidualAddBecomesTheProductsC) {
  ir::Model m = projections(DataType::kFloat32, 3, 5, 8, 16, true);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 2u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[0].inputs, (std::vector<std::string>{"x", "w1", "b1", "r1"}));
  EXPECT_EQ(m.graph.nodes[1].inputs.size(), 4u);
  EXPECT_EQ(m.graph.nodes[1].inputs[3], "r2");
  // Without shape inference the residual's shape is unknown: the Add stays.
  ir::GraphBuilder b("unknown");
  const std::string x = b.input("x", DataType::kFloat32, {4, 8});
  const std::string h =
      b.node("MatMul", {x, b.initializer("w", random_tensor(DataType::kFloat32, {8, 8}, 1))})[0];
  const std::string y =
      b.node("Add", {h, b.initializer("b", random_tensor(DataType::kFloat32, {8}, 2))})[0];
  b.output(b.node("Add", {y, b.input("r", DataType::kFloat32, {4, 8})})[0]);
  ir::Model u = b.build(17);
  EXPECT_EQ(cuda::fuse_for_gpu(u.graph, 17), 1u);
  EXPECT_EQ(u.graph.nodes.size(), 2u);
}

TEST(CudaFusion, ProjectionsMatchCpu) {
  TRT_REQUIRE_CUDA();
  // batch >= sequence (one product per sequence position) and batch < sequence.
  for (const auto& [bn, s] : std::vector<std::pair<int64_t, int64_t>>{{7, 5}, {3, 9}}) {
    for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
      for (bool residual : {false, true}) {
        const ir::Model m = projections(dt, bn, s, 24, 40, residual);
        std::map<std::string, Tensor> feeds{{"x", random_tensor(dt, {bn, s, 24}, 9)},
                                            {"a", random_tensor(dt, {s * bn, 24}, 10)}};
        if (residual) {
          feeds["r1"] = random_tensor(dt, {s, bn, 40}, 11);
          feeds["r2"] = random_tensor(dt, {bn, s, 40}, 12);
        }
        Session cpu(m);
        const auto want = cpu.run(feeds);
        cuda::Executor gpu(m, {});
        const auto got = gpu.run(feeds);
        const std::string what = std::string(dtype_name(dt)) + " b" + std::to_string(bn) + " s" +
                                 std::to_string(s) + (residual ? " + residual" : "");
        for (const auto& [n, t] : want)
          expect_close(got.at(n), t, dt == DataType::kFloat32 ? kFp32 : kFp16, what + " " + n);
        for (const auto& k : gpu.node_kernels()) {
          std::cout << "[ kernel   ] " << what << ": " << k << std::endl;
          EXPECT_NE(k.find("strided batch"), std::string::npos) << k;
          EXPECT_EQ(k.find("residual") != std::string::npos, residual) << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace trtutils

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

// The model of a quantized test graph (opset 19 with com.trtutils), shapes inferred.
ir::Model built(ir::GraphBuilder& b) {
  ir::Model m = b.build(19, {{"com.trtutils", 1}});
  passes::infer_shapes(m.graph, 19);
  return m;
}

// The MLP of a quantized transformer as the engine holds it after qdq_fusion: x -> QuantizeLinear
// -> com.trtutils::QGemm (per-channel W, bias) -> erf GELU chain -> QuantizeLinear (h8, also a
// graph output) -> QGemm -> y (float32). q: int8 or float8e4m3fn.
// half: the float rest in float16, as `quantize --high_precision_dtype fp16` writes it (each
// product's float32 output cast to float16, the GELU and the second quantizer's input and scale
// in float16, the output cast back to float32).
ir::Model quantized_mlp(DataType q, bool half = false) {
  ir::GraphBuilder b("qmlp");
  const int64_t k = 32, n = 64;
  auto f32 = [&](const std::string& name, float v) {
    return b.initializer(name, scalar_tensor(DataType::kFloat32, v));
  };
  const std::string zero = b.initializer("zero", Tensor(q, {}));
  const bool fp8 = q == DataType::kFloat8E4M3FN;
  const float sx = fp8 ? 3.0f / 448 : 3.0f / 127, sh = fp8 ? 4.0f / 448 : 4.0f / 127;
  const std::string x = b.input("x", DataType::kFloat32, {2, 9, k});
  const std::string x8 = b.node("QuantizeLinear", {x, f32("sx", sx), zero})[0];
  auto qgemm = [&](const std::string& in, const std::string& s_in, int64_t kk, int64_t nn,
                   const char* tag, uint32_t seed) {
    const std::string t = tag;
    const std::string w = b.initializer(t + "w", random_tensor(q, {nn, kk}, seed, -100.0f, 100.0f));
    const std::string ws = b.initializer(
        t + "ws",
        random_tensor(DataType::kFloat32, {nn}, seed + 1, 0.5f / (100 * kk), 2.0f / (100 * kk)));
    const std::string bias =
        b.initializer(t + "b", random_tensor(DataType::kFloat32, {nn}, seed + 2, -0.5f, 0.5f));
    return b.node("QGemm", {in, s_in, zero, w, ws, "", bias}, {ir::attr_int("transB", 1)}, 1,
                  "com.trtutils")[0];
  };
  const DataType ft = half ? DataType::kFloat16 : DataType::kFloat32;
  auto to = [&](const std::string& v, DataType t) {
    return b.node("Cast", {v}, {ir::attr_int("to", static_cast<int64_t>(t))})[0];
  };
  std::string h = qgemm(x8, "sx", k, n, "p1", 10);
  if (half) h = to(h, ft);
  const std::string g = gelu_chain(b, h, ft, false, "g");
  const std::string h8 =
      b.node("QuantizeLinear", {g, b.initializer("sh", scalar_tensor(ft, sh)), zero})[0];
  b.output(h8);
  // The fused product's own scale stays float32 (the builder's qdq_fusion makes that copy).
  std::string y = qgemm(h8, half ? f32("sh32", sh) : std::string("sh"), n, k, "p2", 20);
  if (half) y = to(to(y, ft), DataType::kFloat32);
  b.output(y);
  return built(b);
}

TEST(GpuFusion, QuantizedGeluJoinsTheProduct) {
  for (DataType q : {DataType::kInt8, DataType::kFloat8E4M3FN}) {
    ir::Model m = quantized_mlp(q);
    EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 1u) << dtype_name(q);
    EXPECT_EQ(count(m.graph, "Erf"), 0) << dtype_name(q);
    EXPECT_EQ(count(m.graph, "QGemm"), 2) << dtype_name(q);
    const ir::Node& f = m.graph.nodes.at(1);
    ASSERT_EQ(f.op_type, "QGemm");
    EXPECT_EQ(f.attr_int("gelu", 0), 1);
    ASSERT_EQ(f.inputs.size(), 9u);
    EXPECT_EQ(f.inputs[7], "sh");
    EXPECT_EQ(f.outputs[0], m.graph.outputs[0].name);
  }
}

// x [b, s, d] -> LayerNormalization -> Transpose(1, 0, 2) -> QuantizeLinear (y1), and
// x -> LayerNormalization -> QuantizeLinear (y2), as a quantized transformer feeds its QKV and
// MLP projections; dt the float type of x, q the quantized one.
ir::Model norm_quantize(DataType dt, DataType q, int64_t bn, int64_t s, int64_t d) {
  ir::GraphBuilder b("lnq");
  const std::string x = b.input("x", dt, {bn, s, d});
  const std::string zero = b.initializer("zero", Tensor(q, {}));
  auto ln = [&](const char* tag, uint32_t seed) {
    const std::string t = tag;
    return b.node("LayerNormalization",
                  {x, b.initializer(t + "g", random_tensor(dt, {d}, seed, 0.5f, 1.5f)),
                   b.initializer(t + "b", random_tensor(dt, {d}, seed + 1, -0.3f, 0.3f))},
                  {ir::attr_int("axis", -1), ir::attr_float("epsilon", 1e-6f)})[0];
  };
  const std::string sc = b.initializer(
      "sc",
      scalar_tensor(DataType::kFloat32, q == DataType::kFloat8E4M3FN ? 4.0f / 448 : 4.0f / 127));
  const std::string t = b.node("Transpose", {ln("a", 1)}, {ir::attr_ints("perm", {1, 0, 2})})[0];
  b.output(b.node("QuantizeLinear", {t, sc, zero})[0]);
  b.output(b.node("QuantizeLinear", {ln("c", 3), sc, zero})[0]);
  ir::Model m = b.build(19);
  passes::infer_shapes(m.graph, 19);
  return m;
}

TEST(GpuFusion, LayerNormTransposeQuantizeBecomeOneNode) {
  ir::Model m = norm_quantize(DataType::kFloat32, DataType::kInt8, 2, 5, 16);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 2u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[0].op_type, "LayerNormQuantize");
  EXPECT_EQ(m.graph.nodes[0].attr_int("swap01", -1), 1);
  EXPECT_EQ(m.graph.nodes[1].attr_int("swap01", -1), 0);
}

// Bit-exact against the CPU session except where float rounding puts a value on a rounding
// boundary (one step).
TEST(CudaFusion, LayerNormQuantizeMatchesCpu) {
  TRT_REQUIRE_CUDA();
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    for (DataType q : {DataType::kInt8, DataType::kFloat8E4M3FN}) {
      // d 768 (vector kernel) and 20 (a float32 row is no multiple of 16 bytes: scalar kernel).
      for (int64_t d : {768, 20}) {
        const ir::Model m = norm_quantize(dt, q, 3, 7, d);
        const std::map<std::string, Tensor> feeds{{"x", random_tensor(dt, {3, 7, d}, 8, -2, 2)}};
        Session cpu(m);
        const auto want = cpu.run(feeds);
        cuda::Executor gpu(m, {});
        const auto got = gpu.run(feeds);
        const std::string what = std::string(dtype_name(dt)) + " -> " + std::string(dtype_name(q)) +
                                 " d" + std::to_string(d);
        for (const auto& [n, t] : want) {
          if (q == DataType::kInt8)
            expect_within_steps(got.at(n), t, 1.0, what + " " + n);
          else
            expect_close(got.at(n), t, {4e-3, 0.13}, what + " " + n);
        }
        const auto kernels = gpu.node_kernels();
        ASSERT_EQ(kernels.size(), 2u) << what;
        EXPECT_NE(kernels[0].find("Transpose + QuantizeLinear"), std::string::npos) << kernels[0];
      }
    }
  }
}

// a [2, 8, 5, 6] op b (of shape bs) -> QuantizeLinear (per tensor, zero point 0, or 3 for
// uint8) -> y: EfficientNet's squeeze-excite scale before the projection.
ir::Model binary_quantize_model(const std::string& op, DataType dt, DataType q, const Shape& bs,
                                bool constant_b = false) {
  ir::GraphBuilder b("binq");
  const std::string a = b.input("a", dt, {2, 8, 5, 6});
  const std::string bv = constant_b ? b.initializer("b", random_tensor(dt, bs, 9, 0.5f, 2.0f))
                                    : b.input("b", dt, ir::sym_shape_from_static(bs));
  Tensor zp(q, {});
  if (q == DataType::kUInt8) zp.data<uint8_t>()[0] = 3;
  const float top = q == DataType::kInt8 || q == DataType::kUInt8 ? 127.0f : 448.0f;
  const std::string y =
      b.node("QuantizeLinear", {b.node(op, {a, bv})[0],
                                b.initializer("s", scalar_tensor(DataType::kFloat32, 3.0f / top)),
                                b.initializer("zp", zp)})[0];
  b.output(y, q);
  return built(b);
}

TEST(GpuFusion, BinaryThenQuantizerBecomeOneNode) {
  ir::Model m = binary_quantize_model("Mul", DataType::kFloat32, DataType::kInt8, {2, 8, 1, 1});
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].op_type, "BinaryQuantize");
  EXPECT_EQ(m.graph.nodes[0].attr_string("op", ""), "Mul");
  // A constant operand (the attention's scalar scaling belongs to other fusions): left alone.
  ir::Model c =
      binary_quantize_model("Mul", DataType::kFloat32, DataType::kInt8, {1, 8, 1, 1}, true);
  EXPECT_EQ(cuda::fuse_for_gpu(c.graph, 19), 0u);
}

// Bit-exact against the CPU session except where float rounding puts a value on a rounding
// boundary (one step): every vector kind of the binary kernel (flat, per-image channels,
// trailing period) and the general broadcast.
TEST(CudaFusion, BinaryQuantizeMatchesCpu) {
  TRT_REQUIRE_CUDA();
  const std::vector<Shape> bshapes = {{2, 8, 5, 6}, {2, 8, 1, 1}, {1, 1, 5, 6}, {2, 1, 5, 1}};
  for (const char* op : {"Mul", "Add", "Div"}) {
    for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
      for (DataType q : {DataType::kInt8, DataType::kUInt8, DataType::kFloat8E4M3FN}) {
        for (const Shape& bs : bshapes) {
          const ir::Model m = binary_quantize_model(op, dt, q, bs);
          const std::map<std::string, Tensor> feeds{
              {"a", random_tensor(dt, {2, 8, 5, 6}, 8, -2, 2)},
              {"b", random_tensor(dt, bs, 9, 0.5f, 2.0f)}};
          Session cpu(m);
          const auto want = cpu.run(feeds);
          cuda::Executor gpu(m, {});
          const auto got = gpu.run(feeds);
          const std::string what = std::string(op) + " " + std::string(dtype_name(dt)) + " -> " +
                                   std::string(dtype_name(q)) + " b " + shape_str(bs);
          for (const auto& [n, t] : want) {
            if (q == DataType::kFloat8E4M3FN)
              expect_close(got.at(n), t, {4e-3, 0.13}, what);
            else
              expect_within_steps(got.at(n), t, 1.0, what);
          }
          const auto kernels = gpu.node_kernels();
          ASSERT_EQ(kernels.size(), 1u) << what;
          EXPECT_NE(kernels[0].find("+ QuantizeLinear"), std::string::npos) << kernels[0];
        }
      }
    }
  }
}

// x (quantized, [2, 24, 7, 9]) -> DequantizeLinear (zero point 0, or 5 for uint8) ->
// GlobalAveragePool / GlobalMaxPool -> y: EfficientNet's quantized squeeze-excite input.
ir::Model dequantize_pool_model(DataType q, bool is_max) {
  ir::GraphBuilder b("dqpool");
  const std::string x = b.input("x", q, {2, 24, 7, 9});
  Tensor zp(q, {});
  if (q == DataType::kUInt8) zp.data<uint8_t>()[0] = 5;
  const std::string d =
      b.node("DequantizeLinear", {x, b.initializer("s", scalar_tensor(DataType::kFloat32, 0.03f)),
                                  b.initializer("zp", zp)})[0];
  b.output(b.node(is_max ? "GlobalMaxPool" : "GlobalAveragePool", {d})[0], DataType::kFloat32);
  return built(b);
}

TEST(GpuFusion, DequantizeThenGlobalPoolBecomeOneNode) {
  ir::Model m = dequantize_pool_model(DataType::kInt8, false);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].op_type, "DequantizeGlobalPool");
  EXPECT_EQ(m.graph.nodes[0].attr_int("is_max", -1), 0);
}

TEST(CudaFusion, DequantizeGlobalPoolMatchesCpu) {
  TRT_REQUIRE_CUDA();
  for (DataType q : {DataType::kInt8, DataType::kUInt8, DataType::kFloat8E4M3FN}) {
    for (bool is_max : {false, true}) {
      const ir::Model m = dequantize_pool_model(q, is_max);
      const float lo = q == DataType::kUInt8 ? 0.0f : -100.0f;
      const std::map<std::string, Tensor> feeds{
          {"x", random_tensor(q, {2, 24, 7, 9}, 12, lo, 100.0f)}};
      Session cpu(m);
      const auto want = cpu.run(feeds);
      cuda::Executor gpu(m, {});
      const auto got = gpu.run(feeds);
      const std::string what = std::string(dtype_name(q)) + (is_max ? " max" : " average");
      for (const auto& [n, t] : want) expect_close(got.at(n), t, {1e-5, 1e-5}, what);
      const auto kernels = gpu.node_kernels();
      ASSERT_EQ(kernels.size(), 1u) << what;
      EXPECT_NE(kernels[0].find("DequantizeLinear + Global"), std::string::npos) << kernels[0];
    }
  }
}

// y [.., n] -> LayerNormalization [-> Transpose(1, 0, 2) with ln 1] -> QuantizeLinear (scale
// 4 / the type's top): the residual stream feeding a quantized transformer's next projection.
std::string norm_quantize_of(ir::GraphBuilder& b, const std::string& y, DataType q, int64_t n,
                             int ln) {
  std::string z =
      b.node("LayerNormalization",
             {y, b.initializer("lng", random_tensor(DataType::kFloat32, {n}, 11, 0.5f, 1.5f)),
              b.initializer("lnb", random_tensor(DataType::kFloat32, {n}, 12, -0.3f, 0.3f))},
             {ir::attr_int("axis", -1), ir::attr_float("epsilon", 1e-6f)})[0];
  if (ln == 1) z = b.node("Transpose", {z}, {ir::attr_ints("perm", {1, 0, 2})})[0];
  const float top = q == DataType::kInt8 ? 127.0f : 448.0f;
  const std::string zs = b.initializer("zs", scalar_tensor(DataType::kFloat32, 4.0f / top));
  return b.node("QuantizeLinear", {z, zs, b.initializer("zzero", Tensor(q, {}))})[0];
}

// The attention's output projection as the engine holds it: a [s * b, k] -> QuantizeLinear ->
// QGemm -> Reshape [s, b, n] -> Transpose(1, 0, 2) -> Add(r [b, s, n]) -> y. ln >= 0: also y ->
// norm_quantize_of -> z.
ir::Model quantized_out_proj(DataType q, int64_t bn, int64_t s, int64_t k, int64_t n, int ln = -1) {
  ir::GraphBuilder b("qproj");
  const std::string zero = b.initializer("zero", Tensor(q, {}));
  const float top = q == DataType::kInt8 ? 127.0f : 448.0f;
  const std::string sa = b.initializer("sa", scalar_tensor(DataType::kFloat32, 2.0f / top));
  const std::string a = b.input("a", DataType::kFloat32, {s * bn, k});
  const std::string a8 = b.node("QuantizeLinear", {a, sa, zero})[0];
  const std::string w = b.initializer("w", random_tensor(q, {n, k}, 3, -100.0f, 100.0f));
  const std::string ws = b.initializer(
      "ws", random_tensor(DataType::kFloat32, {n}, 4, 0.5f / (100 * k), 2.0f / (100 * k)));
  const std::string bias = b.initializer("b", random_tensor(DataType::kFloat32, {n}, 5));
  const std::string g = b.node("QGemm", {a8, sa, zero, w, ws, "", bias},
                               {ir::attr_int("transB", 1)}, 1, "com.trtutils")[0];
  Tensor shape(DataType::kInt64, {3});
  shape.data<int64_t>()[0] = s;
  shape.data<int64_t>()[1] = -1;
  shape.data<int64_t>()[2] = n;
  const std::string r = b.node("Reshape", {g, b.initializer("shape", shape)})[0];
  const std::string t = b.node("Transpose", {r}, {ir::attr_ints("perm", {1, 0, 2})})[0];
  const std::string y = b.node("Add", {t, b.input("res", DataType::kFloat32, {bn, s, n})})[0];
  b.output(y);
  if (ln >= 0) b.output(norm_quantize_of(b, y, q, n, ln));
  return built(b);
}

// Inputs of quantized_out_proj: a [s * bn, k] and res [bn, s, n].
std::map<std::string, Tensor> out_proj_feeds(int64_t bn, int64_t s, int64_t k, int64_t n) {
  return {{"a", random_tensor(DataType::kFloat32, {s * bn, k}, 6, -2.0f, 2.0f)},
          {"res", random_tensor(DataType::kFloat32, {bn, s, n}, 7)}};
}

TEST(GpuFusion, QuantizedProjectionWritesTheTransposedRows) {
  ir::Model m = quantized_out_proj(DataType::kFloat8E4M3FN, 3, 5, 32, 24);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  const ir::Node& f = m.graph.nodes[1];
  EXPECT_EQ(f.op_type, "QGemm");
  EXPECT_EQ(f.attr_ints("y_grid"), (std::vector<int64_t>{5, -1}));
  ASSERT_EQ(f.inputs.size(), 10u);
  EXPECT_EQ(f.inputs[9], "res");
  EXPECT_EQ(f.outputs[0], m.graph.outputs[0].name);
}

TEST(CudaFusion, QuantizedProjectionMatchesCpu) {
  TRT_REQUIRE_CUDA();
  for (DataType q : {DataType::kInt8, DataType::kFloat8E4M3FN}) {
    const int64_t bn = 3, s = 7, k = 64, n = 48;
    const ir::Model m = quantized_out_proj(q, bn, s, k, n);
    const auto feeds = out_proj_feeds(bn, s, k, n);
    Session cpu(m);
    const auto want = cpu.run(feeds);
    cuda::Executor gpu(m, {});
    const auto got = gpu.run(feeds);
    const std::string what(dtype_name(q));
    for (const auto& [name, t] : want) expect_close(got.at(name), t, {1e-3, 1e-3}, what);
    const auto kernels = gpu.node_kernels();
    ASSERT_EQ(kernels.size(), 2u);
    std::cout << "[ kernel   ] " << what << ": " << kernels[1] << std::endl;
  }
}

// The layer norm (and its Transpose and quantizer) after the projection's residual Add joins
// the QGemm as a second output; TRTUTILS_CUDA_LN_EPILOGUE=0 leaves it a LayerNormQuantize.
TEST(GpuFusion, ResidualLayerNormJoinsTheProjection) {
  for (int ln : {0, 1}) {
    ir::Model m = quantized_out_proj(DataType::kFloat8E4M3FN, 3, 5, 32, 24, ln);
    EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 2u);
    ASSERT_EQ(m.graph.nodes.size(), 2u);
    const ir::Node& f = m.graph.nodes[1];
    EXPECT_EQ(f.op_type, "QGemm");
    ASSERT_EQ(f.inputs.size(), static_cast<size_t>(cuda::kLnNumInputs));
    EXPECT_EQ(f.inputs[9], "res");
    EXPECT_EQ(f.inputs[cuda::kLnScale], "lng");
    EXPECT_EQ(f.inputs[cuda::kLnYScale], "zs");
    EXPECT_EQ(f.attr_int("ln_swap01", -1), ln);
    ASSERT_EQ(f.outputs.size(), 2u);
    EXPECT_EQ(f.outputs[0], m.graph.outputs[0].name);
    EXPECT_EQ(f.outputs[1], m.graph.outputs[1].name);
  }
  ::setenv("TRTUTILS_CUDA_LN_EPILOGUE", "0", 1);
  ir::Model m = quantized_out_proj(DataType::kInt8, 3, 5, 32, 24, 0);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 2u);
  ::unsetenv("TRTUTILS_CUDA_LN_EPILOGUE");
  EXPECT_EQ(count(m.graph, "LayerNormQuantize"), 1);
}

// The fused epilogue against the CPU session: Y within float rounding (the float8 product's
// float16 products included), and the quantized normalised rows against the CPU's layer norm
// and quantizer of the GPU's Y (within one int8 step; float8 as CudaFusion.LayerNormQuantize:
// a difference of Y in its float16 rounding moves values near 0 by float8 steps). N = 48 and 768
// (one and three chunks of 8 per lane) run the fused kernel, N = 20 (no multiple of 8) the two
// passes.
TEST(CudaFusion, ResidualLayerNormMatchesCpu) {
  TRT_REQUIRE_CUDA();
  for (DataType q : {DataType::kInt8, DataType::kFloat8E4M3FN}) {
    for (int ln : {0, 1}) {
      for (int64_t n : {48, 768, 20}) {
        const int64_t bn = 3, s = 7, k = 64;
        const ir::Model m = quantized_out_proj(q, bn, s, k, n, ln);
        const auto feeds = out_proj_feeds(bn, s, k, n);
        Session cpu(m);
        const auto want = cpu.run(feeds);
        cuda::Executor gpu(m, {});
        const auto got = gpu.run(feeds);
        const std::string what =
            std::string(dtype_name(q)) + " ln" + std::to_string(ln) + " n" + std::to_string(n);
        const std::string& y = m.graph.outputs[0].name;
        const std::string& z = m.graph.outputs[1].name;
        expect_close(got.at(y), want.at(y), {1e-3, 1e-3}, what + " y");
        ir::GraphBuilder lb("lnq");
        lb.output(norm_quantize_of(lb, lb.input("y", DataType::kFloat32, {bn, s, n}), q, n, ln));
        Session norm(built(lb));
        const Tensor ref = norm.run({{"y", got.at(y)}}).begin()->second;
        if (q == DataType::kInt8)
          expect_within_steps(got.at(z), ref, 1.0, what + " z");
        else
          expect_close(got.at(z), ref, {4e-3, 0.13}, what + " z");
        const auto kernels = gpu.node_kernels();
        ASSERT_EQ(kernels.size(), 2u) << what;
        const bool fused = n % 8 == 0;
        EXPECT_NE(kernels[1].find(fused ? "in its epilogue" : "QuantizeLinear kernel"),
                  std::string::npos)
            << what << ": " << kernels[1];
      }
    }
  }
}

// torch's packed QKV projection: x [s, b, k] -> QuantizeLinear -> QGemm (N = 3 w) -> Reshape
// [s, b, 3, w] -> Unsqueeze(0) -> Transpose(3, 1, 2, 0, 4) -> Squeeze(3) -> Gather(0 | 1 | 2) ->
// three outputs [s, b, w].
// An int64 vector initializer.
std::string int64s(ir::GraphBuilder& b, const std::string& name, std::vector<int64_t> v) {
  return b.initializer(
      name, Tensor::from_vector<int64_t>(DataType::kInt64, {static_cast<int64_t>(v.size())}, v));
}

// x [s, b, k] (a graph input) -> QuantizeLinear -> QGemm (N = 3 w, per-channel W, bias) ->
// Reshape [s, b, 3, w] -> Unsqueeze(0) -> Transpose(3, 1, 2, 0, 4) -> Squeeze(3) -> Gather(0, 1,
// 2): the three parts [s, b, w], as torch exports the packed QKV projection. zero: the
// quantized type's zero point.
std::array<std::string, 3> packed_qkv(ir::GraphBuilder& b, DataType q, const std::string& zero,
                                      int64_t s, int64_t bn, int64_t k, int64_t w) {
  const float top = q == DataType::kInt8 ? 127.0f : 448.0f;
  const std::string sa = b.initializer("sa", scalar_tensor(DataType::kFloat32, 2.0f / top));
  const std::string x = b.input("x", DataType::kFloat32, {s, bn, k});
  const int64_t n = 3 * w;
  const std::string g = b.node(
      "QGemm",
      {b.node("QuantizeLinear", {x, sa, zero})[0], sa, zero,
       b.initializer("w", random_tensor(q, {n, k}, 3, -100.0f, 100.0f)),
       b.initializer("ws",
                     random_tensor(DataType::kFloat32, {n}, 4, 0.5f / (100 * k), 2.0f / (100 * k))),
       "", b.initializer("b", random_tensor(DataType::kFloat32, {n}, 5))},
      {ir::attr_int("transB", 1)}, 1, "com.trtutils")[0];
  const std::string r = b.node("Reshape", {g, int64s(b, "shape", {s, bn, 3, w})})[0];
  const std::string u = b.node("Unsqueeze", {r, int64s(b, "ax0", {0})})[0];
  const std::string t = b.node("Transpose", {u}, {ir::attr_ints("perm", {3, 1, 2, 0, 4})})[0];
  const std::string sq = b.node("Squeeze", {t, int64s(b, "ax3", {3})})[0];
  const char* names[3] = {"i0", "i1", "i2"};
  std::array<std::string, 3> parts;
  for (int64_t i = 0; i < 3; ++i) {
    const std::string idx =
        b.initializer(names[i], Tensor::from_vector<int64_t>(DataType::kInt64, {}, {i}));
    parts[i] = b.node("Gather", {sq, idx}, {ir::attr_int("axis", 0)})[0];
  }
  return parts;
}

// The packed QKV projection alone, its three parts the graph's outputs.
ir::Model quantized_qkv(DataType q, int64_t s, int64_t bn, int64_t k, int64_t w) {
  ir::GraphBuilder b("qkv");
  const std::string zero = b.initializer("zero", Tensor(q, {}));
  for (const std::string& part : packed_qkv(b, q, zero, s, bn, k, w)) b.output(part);
  return built(b);
}

TEST(GpuFusion, QuantizedQkvProjectionWritesItsSplit) {
  ir::Model m = quantized_qkv(DataType::kFloat8E4M3FN, 5, 3, 32, 16);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 1u);
  EXPECT_EQ(count(m.graph, "Transpose"), 0);
  int split = 0;
  for (const auto& n : m.graph.nodes)
    if (n.op_type == "QGemm") split = static_cast<int>(n.attr_int("y_split", 0));
  EXPECT_EQ(split, 3);
}

TEST(CudaFusion, QuantizedQkvProjectionMatchesCpu) {
  TRT_REQUIRE_CUDA();
  for (DataType q : {DataType::kInt8, DataType::kFloat8E4M3FN}) {
    const int64_t s = 7, bn = 3, k = 64, w = 16;
    const ir::Model m = quantized_qkv(q, s, bn, k, w);
    const std::map<std::string, Tensor> feeds{
        {"x", random_tensor(DataType::kFloat32, {s, bn, k}, 6, -2.0f, 2.0f)}};
    Session cpu(m);
    const auto want = cpu.run(feeds);
    cuda::Executor gpu(m, {});
    const auto got = gpu.run(feeds);
    const std::string what(dtype_name(q));
    for (const auto& [name, t] : want) expect_close(got.at(name), t, {1e-3, 1e-3}, what + name);
    for (const auto& kn : gpu.node_kernels())
      std::cout << "[ kernel   ] " << what << ": " << kn << std::endl;
  }
}

// The whole quantized self-attention as torch exports nn.MultiheadAttention (sequence first):
// x [s, b, k] -> QuantizeLinear -> QGemm (packed QKV, N = 3 h d) -> split into q, k, v [s, b, h d]
// (Reshape / Unsqueeze / Transpose / Squeeze / Gather) -> heads [b h, s, d] (K as K^T) -> q / 8
// -> QuantizeLinear each -> QMatMul -> Softmax -> QuantizeLinear -> QMatMul -> [b h, s, d].
// out_quant: the attention's output reshaped to [bn * h * s, d] and quantized (the output
// projection's input quantizer).
ir::Model quantized_self_attention(DataType q, int64_t s, int64_t bn, int64_t h, int64_t d,
                                   bool out_quant = false) {
  ir::GraphBuilder b("qsa");
  const std::string zero = b.initializer("zero", Tensor(q, {}));
  const float top = q == DataType::kInt8 ? 127.0f : 448.0f;
  auto f32 = [&](const std::string& name, float v) {
    return b.initializer(name, scalar_tensor(DataType::kFloat32, v));
  };
  const std::array<std::string, 3> qkv = packed_qkv(b, q, zero, s, bn, h * d, h * d);
  const char* shapes[3] = {"hq", "hk", "hv"};
  std::string part[3];
  for (size_t i = 0; i < 3; ++i) {
    const std::string heads = b.node("Reshape", {qkv[i], int64s(b, shapes[i], {s, bn * h, d})})[0];
    part[i] = b.node("Transpose", {heads},
                     {ir::attr_ints("perm", i == 1 ? std::vector<int64_t>{1, 2, 0}
                                                   : std::vector<int64_t>{1, 0, 2})})[0];
  }
  const std::string sx = f32("sx", 2.0f / top), sp = f32("sp", 1.0f / top);
  const std::string qd = b.node("Div", {part[0], f32("eight", 8.0f)})[0];
  auto quant = [&](const std::string& v, const std::string& sc) {
    return b.node("QuantizeLinear", {v, sc, zero})[0];
  };
  const std::string s1 = b.node("QMatMul", {quant(qd, sx), sx, zero, quant(part[1], sx), sx, zero},
                                {}, 1, "com.trtutils")[0];
  const std::string p = b.node("Softmax", {s1}, {ir::attr_int("axis", -1)})[0];
  const std::string o = b.node("QMatMul", {quant(p, sp), sp, zero, quant(part[2], sx), sx, zero},
                               {}, 1, "com.trtutils")[0];
  if (out_quant)
    b.output(quant(b.node("Reshape", {o, int64s(b, "rows", {bn * h * s, d})})[0],
                   f32("so", 0.5f / top)));
  else
    b.output(o);
  return built(b);
}

TEST(GpuFusion, SelfAttentionQuantizersMoveIntoTheQkvProjection) {
  ir::Model m = quantized_self_attention(DataType::kFloat8E4M3FN, 9, 2, 3, 16);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 2u);
  const ir::Node* qgemm = nullptr;
  const ir::Node* attn = nullptr;
  for (const auto& nd : m.graph.nodes) {
    if (nd.op_type == "QGemm") qgemm = &nd;
    if (nd.op_type == "AttentionQ") attn = &nd;
  }
  ASSERT_TRUE(qgemm && attn);
  EXPECT_EQ(qgemm->attr_int("y_split", 0), 3);
  const auto ps = qgemm->attr_floats("part_scales");
  ASSERT_EQ(ps.size(), 3u);
  EXPECT_NEAR(ps[0], 2.0 / 448, 1e-9);
  EXPECT_EQ(qgemm->attr_ints("part_pre_op"), (std::vector<int64_t>{2, 0, 0}));
  EXPECT_EQ(attn->attr_int("prequantized", 0), 1);
}

// The quantizer after the attention (behind a Reshape) becomes the attention's output type.
TEST(GpuFusion, AttentionQuantizesItsOutput) {
  for (DataType q : {DataType::kInt8, DataType::kFloat8E4M3FN}) {
    ir::Model m = quantized_self_attention(q, 9, 2, 3, 16, true);
    EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 2u);
    EXPECT_EQ(count(m.graph, "QuantizeLinear"), 1) << dtype_name(q);  // the input's
    const ir::Node* attn = nullptr;
    for (const auto& nd : m.graph.nodes)
      if (nd.op_type == "AttentionQ") attn = &nd;
    ASSERT_TRUE(attn);
    EXPECT_EQ(attn->attr_int("y_type", 0), static_cast<int64_t>(q));
    EXPECT_NEAR(attn->attr_float("y_scale", 0), 0.5 / (q == DataType::kInt8 ? 127 : 448), 1e-9);
    EXPECT_EQ(m.graph.nodes.back().op_type, "Reshape");
    EXPECT_EQ(m.graph.nodes.back().outputs[0], m.graph.outputs[0].name);
  }
}

TEST(CudaFusion, QuantizedSelfAttentionMatchesCpu) {
  TRT_REQUIRE_CUDA();
  for (int out_quant = 0; out_quant < 2; ++out_quant)
    for (DataType q : {DataType::kInt8, DataType::kFloat8E4M3FN}) {
      const int64_t s = 37, bn = 2, h = 3, d = 64;
      const ir::Model m = quantized_self_attention(q, s, bn, h, d, out_quant != 0);
      const std::map<std::string, Tensor> feeds{
          {"x", random_tensor(DataType::kFloat32, {s, bn, h * d}, 6, -2.0f, 2.0f)}};
      Session cpu(m);
      const Tensor want = cpu.run(feeds).begin()->second;
      cuda::Executor gpu(m, {});
      const Tensor got = gpu.run(feeds).begin()->second;
      ASSERT_EQ(got.shape(), want.shape());
      ASSERT_EQ(got.dtype(), want.dtype());
      quantize::MetricsAccumulator metrics;
      metrics.add(want, got);
      const double sqnr = metrics.result().sqnr_db;
      // The projection's float16 products move a few values across a quantization boundary.
      EXPECT_GE(sqnr, 25.0) << dtype_name(q);
      for (const auto& kn : gpu.node_kernels())
        std::cout << "[ kernel   ] " << dtype_name(q) << (out_quant ? " (quantized output)" : "")
                  << ": " << kn << " (SQNR " << sqnr << " dB)" << std::endl;
    }
}

// The fused product (GELU and quantization in its epilogue) against the CPU session running the
// unfused graph: h8 within one quantization step (float rounding near a boundary), y by SQNR.
// The float16 rest of a Q/DQ graph runs in float32 on the GPU: the Casts between floats go, the
// float16 constants widen, and the GELU joins the product as in the float32 graph.
TEST(GpuFusion, HalfIslandsOfAQdqGraphComputeInFloat) {
  ir::Model m = quantized_mlp(DataType::kFloat8E4M3FN, true);
  ASSERT_EQ(count(m.graph, "Cast"), 3);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 1u);
  EXPECT_EQ(count(m.graph, "Erf"), 0);
  EXPECT_EQ(count(m.graph, "Cast"), 1);  // the one writing the graph's output
  for (const auto& [name, t] : m.graph.initializers)
    EXPECT_NE(t.dtype(), DataType::kFloat16) << name;
  const ir::Node& f = m.graph.nodes.at(1);
  ASSERT_EQ(f.op_type, "QGemm");
  EXPECT_EQ(f.attr_int("gelu", 0), 1);
  // Off by switch; and a graph without quantized layers keeps its float16 layers.
  ::setenv("TRTUTILS_CUDA_HALF_AS_FLOAT", "0", 1);
  ir::Model k = quantized_mlp(DataType::kFloat8E4M3FN, true);
  EXPECT_EQ(cuda::promote_half_islands(k.graph, nullptr), 0u);
  ::unsetenv("TRTUTILS_CUDA_HALF_AS_FLOAT");
  ir::GraphBuilder b("half");
  const std::string x = b.input("x", DataType::kFloat32, {4});
  b.output(b.node("Cast", {b.node("Cast", {x}, {ir::attr_int("to", 10)})[0]},
                  {ir::attr_int("to", 1)})[0]);
  ir::Model plain = built(b);
  EXPECT_EQ(cuda::promote_half_islands(plain.graph, nullptr), 0u);
}

// What else carries float16 in a graph: Constant / ConstantOfShape values and Casts from
// integers; integer Casts and Casts writing graph outputs stay.
TEST(GpuFusion, HalfPromotionWidensConstantsAndDtypes) {
  ir::GraphBuilder b("halfc");
  const DataType q = DataType::kInt8;
  const std::string x = b.input("x", DataType::kFloat32, {2, 4});
  const std::string n = b.input("n", DataType::kInt64, {2, 4});
  auto cast = [&](const std::string& v, DataType t) {
    return b.node("Cast", {v}, {ir::attr_int("to", static_cast<int64_t>(t))})[0];
  };
  const std::string h = cast(x, DataType::kFloat16);
  const std::string c = b.node(
      "Constant", {}, {ir::attr_tensor("value", scalar_tensor(DataType::kFloat16, 0.5f))})[0];
  const std::string e =
      b.node("ConstantOfShape",
             {b.initializer("shape", Tensor::from_vector<int64_t>(DataType::kInt64, {2}, {2, 4}))},
             {ir::attr_tensor("value", Tensor(DataType::kFloat16, {1}))})[0];
  const std::string s = b.node("Add", {b.node("Mul", {h, c})[0], e})[0];
  const std::string si = b.node("Add", {s, cast(n, DataType::kFloat16)})[0];
  const std::string zero = b.initializer("zero", Tensor(q, {}));
  const std::string sc = b.initializer("sc", scalar_tensor(DataType::kFloat16, 0.05f));
  b.output(b.node("QuantizeLinear", {si, sc, zero})[0]);
  b.output(cast(si, DataType::kFloat32));
  b.output(cast(cast(si, DataType::kFloat32), DataType::kInt32));
  ir::Model m = built(b);
  EXPECT_GT(cuda::promote_half_islands(m.graph, nullptr), 0u);
  int casts = 0;
  for (const auto& nd : m.graph.nodes) {
    for (const auto& [name, a] : nd.attributes) {
      if (a.kind == ir::Attribute::Kind::kTensor) {
        EXPECT_EQ(a.t.dtype(), DataType::kFloat32);
      }
      if (name == "to") {
        EXPECT_NE(a.i, 10) << nd.op_type;
      }
    }
    if (nd.op_type == "Cast") {
      ++casts;
      EXPECT_NE(nd.inputs[0], "x");  // float32 -> float16: gone
    }
  }
  // Left: int64 -> float32, the two Casts of the Add (no type inferred for it: kept, as they
  // may be needed), and float -> int32.
  EXPECT_EQ(casts, 4);
  EXPECT_EQ(m.graph.initializers.at("sc").dtype(), DataType::kFloat32);
  EXPECT_EQ(m.graph.nodes.front().op_type, "Constant");
}

// QGemm (float output) -> Add(float32 residual): the residual joins the product's epilogue.
TEST(GpuFusion, QuantizedGemmTakesItsResidual) {
  ir::GraphBuilder b("qres");
  const DataType q = DataType::kFloat8E4M3FN;
  const std::string zero = b.initializer("zero", Tensor(q, {}));
  const std::string x = b.input("x", DataType::kFloat32, {6, 16});
  const std::string res = b.input("res", DataType::kFloat32, {6, 8});
  const std::string sx = b.initializer("sx", scalar_tensor(DataType::kFloat32, 0.01f));
  const std::string x8 = b.node("QuantizeLinear", {x, sx, zero})[0];
  const std::string w = b.initializer("w", random_tensor(q, {8, 16}, 3, -100.0f, 100.0f));
  const std::string ws =
      b.initializer("ws", random_tensor(DataType::kFloat32, {8}, 4, 1e-3f, 2e-3f));
  const std::string y =
      b.node("QGemm", {x8, sx, zero, w, ws, ""}, {ir::attr_int("transB", 1)}, 1, "com.trtutils")[0];
  b.output(b.node("Add", {res, y})[0]);
  ir::Model m = built(b);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 1u);
  EXPECT_EQ(count(m.graph, "Add"), 0);
  const ir::Node& f = m.graph.nodes.at(1);
  ASSERT_EQ(f.op_type, "QGemm");
  ASSERT_EQ(f.inputs.size(), 10u);
  EXPECT_EQ(f.inputs[9], "res");
  EXPECT_EQ(f.outputs[0], m.graph.outputs[0].name);
}

TEST(CudaFusion, QuantizedMlpMatchesCpu) {
  TRT_REQUIRE_CUDA();
  for (int half = 0; half < 2; ++half) {
    for (DataType q : {DataType::kInt8, DataType::kFloat8E4M3FN}) {
      const ir::Model m = quantized_mlp(q, half != 0);
      const std::map<std::string, Tensor> feeds{
          {"x", random_tensor(DataType::kFloat32, {2, 9, 32}, 5, -3.0f, 3.0f)}};
      Session cpu(m);
      const auto want = cpu.run(feeds);
      cuda::Executor gpu(m, {});
      const auto got = gpu.run(feeds);
      const std::string what = std::string(dtype_name(q)) + (half ? " (float16 rest)" : "");
      const std::string h8 = m.graph.outputs[0].name, y = m.graph.outputs[1].name;
      if (q == DataType::kInt8)
        expect_within_steps(got.at(h8), want.at(h8), 1.0, what + " h8");
      else
        expect_close(got.at(h8), want.at(h8), {4e-3, 0.13}, what + " h8");
      quantize::MetricsAccumulator metrics;
      metrics.add(want.at(y), got.at(y));
      const double sqnr = metrics.result().sqnr_db;
      EXPECT_GE(sqnr, 30.0) << what;
      for (const auto& k : gpu.node_kernels())
        std::cout << "[ kernel   ] " << what << ": " << k << " (y SQNR " << sqnr << " dB)"
                  << std::endl;
    }
  }
}

}  // namespace
}  // namespace trtutils
