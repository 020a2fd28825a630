// Patch-embedding convolutions (kernel = stride, no padding): the CUDA executor runs them as one
// im2col copy and one cuBLASLt GEMM per batch (ops_nn.cpp, patch_conv). Checked against the CPU
// session in float32 (TF32 off), float16 and bfloat16, with a bias, a fused ReLU, input sizes
// that leave a remainder, 1-D and 2-D; a stride-2 3x3 convolution stays on cuDNN.
#include <iostream>

#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"

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
  const std::map<std::string, Tensor> feeds{{"x", random_tensor(dt, c.x, 1)}};
  Session cpu(m);
  const auto want = cpu.run(feeds);
  cuda::Executor gpu(m, {});
  const auto got = gpu.run(feeds);
  const std::string what = std::string(c.what) + " " + std::string(dtype_name(dt));
  const Tolerance tol = dt == DataType::kFloat32   ? Tolerance{2e-4, 2e-4}
                        : dt == DataType::kFloat16 ? kFp16
                                                   : Tolerance{6e-2, 4e-2};
  for (const auto& [n, t] : want) expect_close(got.at(n), t, tol, what);
  const auto kernels = gpu.node_kernels();
  ASSERT_FALSE(kernels.empty()) << what;
  std::cout << "[ kernel   ] " << what << ": " << kernels[0] << std::endl;
  EXPECT_EQ(kernels[0].find("patch GEMM") != std::string::npos, c.patch)
      << what << ": " << kernels[0];
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

}  // namespace
}  // namespace trtutils
