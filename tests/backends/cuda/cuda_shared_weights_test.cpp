// Two execution contexts of one GPU engine use one device copy of its weights (issue 29), as
// TensorRT's contexts do: the second context adds its activation memory and workspace, not the
// weights again, and both compute the same outputs. The model holds 128 MiB of float weights
// (a 4096 x 8192 MatMul) and a convolution chain in float16, whose packed NHWC weights are
// shared too.
#include <cuda_runtime.h>

#include <filesystem>

#include "backends/cuda/cuda_test_util.h"
#include "backends/cuda/resnet_block.h"
#include "data_pipeline/fixtures.h"
#include "onnx/onnx_io.h"
#include "trtutils/builder.h"
#include "trtutils/engine.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;
using namespace cuda_testing;  // NOLINT

constexpr int64_t kIn = 4096, kOut = 8192;
// Each context times its own kernel choices (no timing cache here), so two contexts may run
// different TF32 / float16 algorithms over the same weights.
constexpr Tolerance kTwoContexts{2e-3, 2e-3};

void save_wide_matmul(const fs::path& path) {
  ir::GraphBuilder b("wide");
  const std::string x = b.input("x", DataType::kFloat32, {2, kIn});
  const std::string w = b.initializer("w", random_tensor(DataType::kFloat32, {kIn, kOut}, 7));
  b.output(b.node("Relu", {b.node("MatMul", {x, w})[0]})[0]);
  onnx_io::save_model(b.build(17), path);
}

size_t free_device_bytes() {
  size_t free = 0, total = 0;
  EXPECT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  return free;
}

TEST(CudaSharedWeights, TwoContextsHoldTheWeightsOnce) {
  TRT_REQUIRE_CUDA();
  testing_data::TempDir dir;
  save_wide_matmul(dir / "wide.onnx");
  builder::BuildConfig cfg;
  cfg.backend = "cuda";
  builder::build_engine(dir / "wide.onnx", dir / "wide.engine", cfg);
  auto engine = Engine::load(dir / "wide.engine");
  EXPECT_EQ(engine->device_weight_bytes(), 0u);
  const std::map<std::string, Tensor> in{{"x", random_tensor(DataType::kFloat32, {2, kIn}, 3)}};

  auto first = engine->create_execution_context();
  const auto a = first->execute(in);
  const uint64_t weights = engine->device_weight_bytes();
  const uint64_t matrix = static_cast<uint64_t>(kIn * kOut) * 4;
  EXPECT_GE(weights, matrix);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const size_t before = free_device_bytes();
  auto second = engine->create_execution_context();
  const auto b = second->execute(in);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const size_t after = free_device_bytes();
  EXPECT_EQ(engine->device_weight_bytes(), weights) << "the second context uploaded weights";
  EXPECT_EQ(second->weight_bytes(), first->weight_bytes());
  // Its own workspace and activations only: far less than the 128 MiB matrix.
  EXPECT_LT(before - std::min(before, after), matrix / 2)
      << "the second context took " << (before - after) / (1 << 20) << " MiB";
  expect_close(b.begin()->second, a.begin()->second, kTwoContexts, "second context");
  first.reset();  // the weights stay with the engine and the other context
  expect_close(second->execute(in).begin()->second, a.begin()->second, kTwoContexts, "after reset");
}

TEST(CudaSharedWeights, PackedFloat16WeightsAreSharedAndOutputsEqual) {
  TRT_REQUIRE_CUDA();
  testing_data::TempDir dir;
  onnx_io::save_model(testing_models::resnet_block(ir::Dim(int64_t{64})), dir / "r.onnx");
  builder::BuildConfig cfg;
  cfg.backend = "cuda";
  cfg.fp16 = true;
  builder::build_engine(dir / "r.onnx", dir / "r.engine", cfg);
  auto engine = Engine::load(dir / "r.engine");
  const std::map<std::string, Tensor> in{
      {"x", random_tensor(DataType::kFloat32, {64, 3, 15, 15}, 5)}};
  auto first = engine->create_execution_context();
  const auto a = first->execute(in);
  const uint64_t weights = engine->device_weight_bytes();
  EXPECT_GT(weights, 0u);
  auto second = engine->create_execution_context();
  const auto b = second->execute(in);
  EXPECT_EQ(engine->device_weight_bytes(), weights);
  for (const auto& [name, t] : a) expect_close(b.at(name), t, kFp16, name);
}

}  // namespace
}  // namespace trtutils
