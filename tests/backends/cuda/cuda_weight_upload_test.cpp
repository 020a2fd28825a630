// Weights a GPU op uploads on its first use (a plain MatMul's constant B is uploaded by the
// first run, not at construction) are complete on the device before a kernel reads them. A
// synchronous cudaMemcpy from pageable memory returns before its DMA has finished, and the
// executor's stream does not wait for the legacy stream that copy runs on: MaxViT-T's to_qkv
// MatMuls read half-written weights (12 dB against ONNX Runtime, varying from run to run, until
// copy_weight_bytes waited for the copy). Here: a chain of MatMuls with fresh 16 MiB weights,
// each read right after its upload, against the CPU kernels in float32.
#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"
#include "ir/graph_builder.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

TEST(CudaWeightUpload, WeightsUploadedOnFirstUseAreCompleteBeforeTheyAreRead) {
  TRT_REQUIRE_CUDA();
  constexpr int64_t kDim = 2048;
  ir::GraphBuilder b("lazy_weights");
  std::string h = b.input("x", DataType::kFloat32, {8, kDim});
  for (uint32_t i = 0; i < 6; ++i) {
    const std::string w =
        b.initializer("w" + std::to_string(i),
                      random_tensor(DataType::kFloat32, {kDim, kDim}, 30 + i, -0.03f, 0.03f));
    h = b.node("MatMul", {h, w})[0];
  }
  b.output(h);
  const ir::Model m = b.build(17);
  SessionOptions so;
  so.run_passes = false;
  Session cpu(m, so);
  const Tensor x = random_tensor(DataType::kFloat32, {8, kDim}, 5);
  const auto want = cpu.run({{"x", x}});
  for (int trial = 0; trial < 3; ++trial) {
    cuda::Executor gpu(m, {});  // fresh: every weight is uploaded during this first run
    const auto got = gpu.run({{"x", x}});
    for (const auto& [name, t] : want)
      expect_close(got.at(name), t, {1e-4, 1e-3}, "trial " + std::to_string(trial) + " " + name);
  }
}

}  // namespace
}  // namespace trtutils
