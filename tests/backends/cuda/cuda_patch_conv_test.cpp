// Patch-embedding convolutions (kernel = stride, no padding): the CUDA executor runs them as one
// im2col copy and one cuBLASLt GEMM per batch (ops_nn.cpp, patch_conv). Checked against the CPU
// session in float32 (TF32 off), float16 and bfloat16, with a bias, a fused ReLU, input sizes
// that leave a remainder, 1-D and 2-D; a stride-2 3x3 convolution stays on cuDNN. A vision
// transformer's patch embedding (the convolution, then Reshape [N, K, P] and Transpose(0, 2, 1))
// becomes one com.trtutils.cuda::PatchEmbed node.
#include <iostream>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"
#include "passes/passes.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

struct PatchCase {
  const char* what;
  Shape x, w;
  std::vector<int64_t> kernel, strides;
  bool relu;
  bool patch;  // expected on the patch GEMM
};

// Runs m on the CPU session and the CUDA executor with a random x of shape xs, compares the
// outputs (tolerance by dtype) and returns the first node's kernel description.
std::string run_against_cpu(const ir::Model& m, const Shape& xs, DataType dt,
                            const std::string& what) {
  const std::map<std::string, Tensor> feeds{{"x", random_tensor(dt, xs, 1)}};
  Session cpu(m);
  const auto want = cpu.run(feeds);
  cuda::Executor gpu(m, {});
  const auto got = gpu.run(feeds);
  const Tolerance tol = dt == DataType::kFloat32   ? Tolerance{2e-4, 2e-4}
                        : dt == DataType::kFloat16 ? kFp16
                                                   : Tolerance{6e-2, 4e-2};
  for (const auto& [n, t] : want) expect_close(got.at(n), t, tol, what);
  const auto kernels = gpu.node_kernels();
  const std::string k = kernels.empty() ? std::string() : kernels[0];
  std::cout << "[ kernel   ] " << what << ": " << k << std::endl;
  return k;
}

void run_patch_case(const PatchCase& c, DataType dt) {
  ir::GraphBuilder b("patch");
  const std::string x = b.input("x", dt, ir::sym_shape_from_static(c.x));
  const std::string w = b.initializer("w", random_tensor(dt, c.w, 2, -0.5f, 0.5f));
  const std::string bias = b.initializer("b", random_tensor(dt, {c.w[0]}, 3));
  std::string y =
      b.node("Conv", {x, w, bias},
             {ir::attr_ints("kernel_shape", c.kernel), ir::attr_ints("strides", c.strides)})[0];
  if (c.relu) y = b.node("Relu", {y})[0];
  b.output(y);
  const ir::Model m = b.build(17);
  const std::string what = std::string(c.what) + " " + std::string(dtype_name(dt));
  const std::string kernel = run_against_cpu(m, c.x, dt, what);
  EXPECT_EQ(kernel.find("patch GEMM") != std::string::npos, c.patch) << what << ": " << kernel;
}

TEST(CudaPatchConv, MatchesCpu) {
  TRT_REQUIRE_CUDA();
  const std::vector<PatchCase> cases = {
      {"ViT-like 16x16/16", {2, 3, 64, 48}, {24, 3, 16, 16}, {16, 16}, {16, 16}, false, true},
      {"4x4/4 remainder + relu", {3, 5, 18, 21}, {7, 5, 4, 4}, {4, 4}, {4, 4}, true, true},
      {"2x3/2x3", {1, 8, 10, 9}, {16, 8, 2, 3}, {2, 3}, {2, 3}, false, true},
      {"1-D 8/8", {2, 4, 70}, {6, 4, 8}, {8}, {8}, false, true},
      {"3x3/2 (cuDNN)", {2, 4, 9, 9}, {8, 4, 3, 3}, {3, 3}, {2, 2}, false, false},
  };
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})
    for (const auto& c : cases) run_patch_case(c, dt);
}

// x [n, c, h, w] -> Conv (kernel = stride) -> Reshape [0, K, -1] (or `shape`) -> Transpose
// (`perm`) -> Add 1 (a reader after the chain, as the class token's Concat in ViT).
ir::Model patch_embed(DataType dt, const Shape& x, const Shape& w, std::vector<int64_t> shape,
                      std::vector<int64_t> perm = {0, 2, 1}) {
  ir::GraphBuilder b("patch_embed");
  const std::string xi = b.input("x", dt, ir::sym_shape_from_static(x));
  const std::string wi = b.initializer("w", random_tensor(dt, w, 2, -0.5f, 0.5f));
  const std::string bi = b.initializer("b", random_tensor(dt, {w[0]}, 3));
  const std::vector<int64_t> k{w[2], w[3]};
  const std::string y = b.node("Conv", {xi, wi, bi},
                               {ir::attr_ints("kernel_shape", k), ir::attr_ints("strides", k)})[0];
  const std::string s = b.initializer(
      "shape",
      Tensor::from_vector<int64_t>(DataType::kInt64, {static_cast<int64_t>(shape.size())}, shape));
  const std::string r = b.node("Reshape", {y, s})[0];
  const std::string t = b.node("Transpose", {r}, {ir::attr_ints("perm", perm)})[0];
  b.output(b.node("Add", {t, b.initializer("one", scalar_tensor(dt, 1.0f))})[0]);
  ir::Model m = b.build(17);
  passes::infer_shapes(m.graph, 17);
  return m;
}

TEST(GpuFusion, PatchEmbeddingBecomesOneNode) {
  ir::Model m = patch_embed(DataType::kFloat32, {2, 3, 64, 48}, {24, 3, 16, 16}, {0, 24, -1});
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 17), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[0].op_type, "PatchEmbed");
  EXPECT_EQ(m.graph.nodes[0].inputs, (std::vector<std::string>{"x", "w", "b"}));
  // Not a patch embedding: another Transpose, a Reshape that splits the channels.
  ir::Model other =
      patch_embed(DataType::kFloat32, {2, 3, 64, 48}, {24, 3, 16, 16}, {0, 24, -1}, {2, 0, 1});
  EXPECT_EQ(cuda::fuse_for_gpu(other.graph, 17), 0u);
  ir::Model split = patch_embed(DataType::kFloat32, {2, 3, 64, 48}, {24, 3, 16, 16}, {0, 12, -1});
  EXPECT_EQ(cuda::fuse_for_gpu(split.graph, 17), 0u);
  ::setenv("TRTUTILS_CUDA_PATCH_EMBED", "0", 1);
  ir::Model off = patch_embed(DataType::kFloat32, {2, 3, 64, 48}, {24, 3, 16, 16}, {0, 24, -1});
  EXPECT_EQ(cuda::fuse_for_gpu(off.graph, 17), 0u);
  ::unsetenv("TRTUTILS_CUDA_PATCH_EMBED");
}

// Against the CPU session running the unfused chain: ViT-B/16's geometry at a small width, an
// image size that leaves a remainder, float32 (TF32 off) and float16.
TEST(CudaPatchConv, PatchEmbeddingMatchesCpu) {
  TRT_REQUIRE_CUDA();
  struct Case {
    const char* what;
    Shape x, w;
  };
  const std::vector<Case> cases = {{"16x16/16 224", {3, 3, 224, 224}, {40, 3, 16, 16}},
                                   {"4x4/4 remainder", {2, 5, 18, 21}, {8, 5, 4, 4}}};
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16})
    for (const auto& c : cases) {
      const ir::Model m = patch_embed(dt, c.x, c.w, {0, c.w[0], -1});
      const std::string what = std::string(c.what) + " " + std::string(dtype_name(dt));
      const std::string kernel = run_against_cpu(m, c.x, dt, what);
      EXPECT_NE(kernel.find("patch embedding"), std::string::npos) << what << ": " << kernel;
    }
}

}  // namespace
}  // namespace trtutils
