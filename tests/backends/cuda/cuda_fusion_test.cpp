// The CUDA executor's own fusions (graph_fusion.cpp): MatMul + bias Add (+ the exporters' erf
// GELU chain) into com.trtutils.cuda::MatMulBias, lone GELU chains into Gelu. GpuFusion.* check
// the rewrite itself (no device needed); CudaFusion.* run a transformer MLP block on the GPU
// against the CPU session (float32 with TF32 off, float16).
#include <cmath>
#include <iostream>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

Tensor scalar_of(DataType dt, float v) {
  Tensor t(dt, {});
  if (dt == DataType::kFloat16) {
    t.data<half>()[0] = float_to_half(v);
  } else {
    t.data<float>()[0] = v;
  }
  return t;
}

// x -> Div(x, sqrt 2) (or Mul(1/sqrt 2, x)) -> Erf -> Add(1) -> Mul(x, .) -> Mul(., 0.5), as
// torch.onnx exports nn.GELU().
std::string gelu_chain(ir::GraphBuilder& b, const std::string& x, DataType dt, bool mul_form,
                       const std::string& tag) {
  const std::string d =
      mul_form ? b.node("Mul", {b.initializer(tag + "r", scalar_of(dt, std::sqrt(0.5f))), x})[0]
               : b.node("Div", {x, b.initializer(tag + "s", scalar_of(dt, std::sqrt(2.0f)))})[0];
  const std::string e = b.node("Erf", {d})[0];
  const std::string a = b.node("Add", {e, b.initializer(tag + "one", scalar_of(dt, 1.0f))})[0];
  const std::string m = b.node("Mul", {x, a})[0];
  return b.node("Mul", {m, b.initializer(tag + "half", scalar_of(dt, 0.5f))})[0];
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
    const std::string d =
        b.node("Div", {x, b.initializer("s", scalar_of(DataType::kFloat32, std::sqrt(2.0f)))})[0];
    const std::string e = b.node("Erf", {d})[0];
    const std::string a =
        b.node("Add", {e, b.initializer("one", scalar_of(DataType::kFloat32, 1.0f))})[0];
    const std::string mm = b.node("Mul", {x, a})[0];
    b.output(b.node("Mul", {mm, b.initializer("h", scalar_of(DataType::kFloat32, 0.6f))})[0]);
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
