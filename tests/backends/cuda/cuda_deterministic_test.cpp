// ExecutorOptions::deterministic (calibration and the scoring of quantized candidates): the
// kernels are chosen by fixed rules, so executors made at different times (different load,
// different timings) compute the same bits and name the same kernels. Without it, quantize's
// GPU calibration gave different scales from one run to the next.
#include "backends/cuda/cuda_test_util.h"
#include "backends/cuda/resnet_block.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

TEST(CudaDeterministic, ExecutorsComputeTheSameBits) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = testing_models::resnet_block(ir::Dim(int64_t{8}));
  const std::map<std::string, Tensor> in{
      {"x", random_tensor(DataType::kFloat32, {8, 3, 15, 15}, 11)}};
  cuda::ExecutorOptions o;
  o.deterministic = true;
  std::map<std::string, Tensor> first;
  std::vector<std::string> kernels;
  for (int round = 0; round < 4; ++round) {
    cuda::Executor ex(m, o);
    const auto out = ex.run(in);
    if (round == 0) {
      first = out;
      kernels = ex.node_kernels();
      continue;
    }
    EXPECT_EQ(ex.node_kernels(), kernels) << "round " << round;
    for (const auto& [name, t] : first)
      expect_close(out.at(name), t, kExact, name + ", round " + std::to_string(round));
  }
}

}  // namespace
}  // namespace trtutils
