// A GPU engine runs with the kernel switches recorded at build time, whatever the environment
// says when it is loaded and run (backends/cuda/kernel_switches.h): the attention fusion, on by
// default, stays on with TRTUTILS_CUDA_ATTENTION=0 set at run time, and an engine built with
// --gpu_switch ATTENTION=0 runs unfused without any variable set.
#include <unistd.h>

#include <cstdlib>

#include "backends/cuda/cuda_test_util.h"
#include "engine/attention_model.h"
#include "trtutils/builder.h"
#include "trtutils/engine.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

// Whether a profiled run of `engine` executes an Attention kernel.
bool runs_attention(const fs::path& engine) {
  auto e = Engine::load(engine);
  auto ctx = e->create_execution_context({.profile = true});
  std::map<std::string, Tensor> in;
  in["q"] = cuda_testing::random_tensor(DataType::kFloat32, {2, 4, 10, 8}, 1);
  in["k"] = cuda_testing::random_tensor(DataType::kFloat32, {2, 4, 8, 10}, 2);
  in["v"] = cuda_testing::random_tensor(DataType::kFloat32, {2, 4, 10, 8}, 3);
  ctx->execute(in);
  bool attention = false;
  for (const LayerTiming& l : ctx->profile())
    attention = attention || l.op.find("Attention") != std::string::npos;
  return attention;
}

TEST(CudaSwitches, EnginesIgnoreTheEnvironmentAtRunTime) {
  TRT_REQUIRE_CUDA();
  const fs::path dir =
      fs::temp_directory_path() / ("trtutils_cuda_switches_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  testing_models::save_attention_model(dir / "a.onnx");
  ::unsetenv("TRTUTILS_CUDA_ATTENTION");
  builder::BuildConfig def;
  def.backend = "cuda";
  builder::build_engine(dir / "a.onnx", dir / "default.engine", def);
  builder::BuildConfig off = def;
  off.gpu_switches = {{"ATTENTION", "0"}};
  builder::build_engine(dir / "a.onnx", dir / "off.engine", off);

  EXPECT_TRUE(runs_attention(dir / "default.engine"));
  EXPECT_FALSE(runs_attention(dir / "off.engine"));
  ::setenv("TRTUTILS_CUDA_ATTENTION", "0", 1);
  EXPECT_TRUE(runs_attention(dir / "default.engine"));  // recorded: on
  ::setenv("TRTUTILS_CUDA_ATTENTION", "1", 1);
  EXPECT_FALSE(runs_attention(dir / "off.engine"));  // recorded: off
  ::unsetenv("TRTUTILS_CUDA_ATTENTION");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trtutils
