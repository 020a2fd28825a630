// The CUDA executor's own fusions (graph_fusion.cpp): MatMul + bias Add (+ the exporters' erf
// GELU chain) into com.trtutils.cuda::MatMulBias, lone GELU chains into Gelu. GpuFusion.* check
// the rewrite itself (no device needed); CudaFusion.* run a transformer MLP block on the GPU
// against the CPU session (float32 with TF32 off, float16).
#include <cmath>
#include <iostream>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"
#include "passes/passes.h"

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
