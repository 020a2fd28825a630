// The GPU plan on the device (issue 29): an engine built on its GPU records the kernel choices
// its planning run timed at the opt shapes and the kernel each layer ran; loading it takes
// those choices (nothing is timed again) and computes what a plan derived afresh computes; a
// profiled run (`benchmark --profile`) names the engine's layers; the environment at load
// changes nothing; an engine of format 1 still runs (its plan derived at load); an untimed
// engine's first load times the choices once, into the timing cache.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/cuda/cuda_test_util.h"
#include "cli_runner.h"
#include "engine/gpu_context.h"
#include "engine/gpu_plan_model.h"
#include "trtutils/builder.h"
#include "trtutils/engine.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;
using namespace cuda_testing;  // NOLINT
using nlohmann::json;

const Shape kOpt = {16, 8, 64};

// Sets TRTUTILS_CUDA_* variables for its lifetime.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : vars_) ::unsetenv(k.c_str());
  }

 private:
  std::map<std::string, std::string> vars_;
};

class CudaGpuPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TRT_REQUIRE_CUDA();
    dir_ = fs::temp_directory_path() /
           ("trtutils_cuda_gpu_plan_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    testing_models::save_mlp_model(dir_ / "mlp.onnx");
    x_ = random_tensor(DataType::kFloat32, kOpt, 11);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Built on this GPU (no --target_sm), float32 without TF32, batch profile 1 / 16 / 32.
  fs::path build(int optimization_level = 3) {
    builder::BuildConfig c;
    c.backend = "cuda";
    c.tf32 = false;
    c.optimization_level = optimization_level;
    c.min_shapes = {{"x", {1, 8, 64}}};
    c.opt_shapes = {{"x", kOpt}};
    c.max_shapes = {{"x", {32, 8, 64}}};
    const fs::path out = dir_ / "mlp.engine";
    builder::build_engine(dir_ / "mlp.onnx", out, c);
    return out;
  }

  Tensor run_engine(const fs::path& path, std::vector<LayerTiming>* profile = nullptr) {
    auto engine = Engine::load(path, {.backend = "cuda"});
    auto ctx = engine->create_execution_context({.profile = profile != nullptr});
    Tensor y = ctx->execute({{"x", x_}}).at(engine->outputs().at(0).name);
    if (profile) *profile = ctx->profile();
    return y;
  }

  fs::path dir_;
  Tensor x_;
};

std::vector<std::string> layer_names(const Engine& e) {
  std::vector<std::string> v;
  for (const auto& l : e.layers()) v.push_back(l.name);
  return v;
}

TEST_F(CudaGpuPlanTest, BuildRecordsTimedChoicesAndTheKernelsThatRan) {
  const engine::EngineData e = engine::read_engine_file(build());
  const json& t = e.info.at("gpu_tactics");
  EXPECT_EQ(t.at("state"), "timed") << t.dump();
  EXPECT_EQ(t.at("device"), cuda::timing_device());
  EXPECT_EQ(t.at("shapes").at("x").get<Shape>(), kOpt);
  ASSERT_FALSE(t.at("choices").empty()) << "cuBLASLt's candidates for the products were timed";
  ASSERT_TRUE(e.gpu.has_value());
  ASSERT_EQ(e.gpu->graph.nodes.size(), 2u);
  for (const auto& l : e.gpu->layers) {
    EXPECT_EQ(l.device, "gpu");
    EXPECT_NE(l.kernel.find("cuBLASLt"), std::string::npos) << l.kernel;
    EXPECT_EQ(l.tactic, "");
  }
}

TEST_F(CudaGpuPlanTest, LoadTakesTheRecordedChoicesAndMatchesAFreshDerive) {
  const engine::EngineData e = engine::read_engine_file(build());
  const std::map<std::string, std::string> recorded = engine::recorded_gpu_tactics(e.info);
  ASSERT_FALSE(recorded.empty());
  const engine::GpuExecutorPlan plan = engine::gpu_executor_plan(e, {});
  EXPECT_TRUE(plan.options.graph_is_fused);
  EXPECT_EQ(plan.options.tactics, recorded);
  cuda::Executor stored(plan.model, plan.options);
  const Tensor y = stored.run({{"x", x_}}).begin()->second;
  EXPECT_EQ(stored.timing_cache_recorded(), 0) << "a recorded choice was timed again";
  EXPECT_GE(stored.timing_cache_hits(), static_cast<int64_t>(recorded.size()));
  EXPECT_EQ(stored.timing_decisions(), recorded);
  // The plan derived at load as before (the plain graph fused by the executor, timed afresh).
  cuda::ExecutorOptions fresh = plan.options;
  fresh.graph_is_fused = false;
  fresh.tactics.clear();
  cuda::Executor derived(e.model, fresh);
  const Tensor y_derived = derived.run({{"x", x_}}).begin()->second;
  EXPECT_GT(derived.timing_cache_recorded(), 0);
  EXPECT_EQ(derived.node_kernels().size(), stored.node_kernels().size());
  expect_close(y, y_derived, kFp32, "stored plan vs derived");
}

TEST_F(CudaGpuPlanTest, ProfiledRunsNameTheEnginesLayers) {
  const fs::path path = build();
  auto engine = Engine::load(path, {.backend = "cuda"});
  std::vector<LayerTiming> profile;
  (void)run_engine(path, &profile);
  std::vector<std::string> profiled;
  for (const auto& p : profile) profiled.push_back(p.name);
  EXPECT_EQ(profiled, layer_names(*engine));
  // The CLI: benchmark --profile's layers are inspect's.
  const fs::path report = dir_ / "bench.json";
  const auto r = test_util::run_cli("benchmark --engine " + path.string() +
                                    " --backend cuda --profile --iterations 3 --shapes x:16x8x64 "
                                    "--json " +
                                    report.string());
  ASSERT_EQ(r.code, 0) << r.output;
  // Named, so that it outlives the loop: a range-for over a member of a temporary (C++20)
  // iterates a destroyed object (here: no layers at all).
  const json bench = json::parse(std::ifstream(report));
  std::vector<std::string> benched;
  for (const auto& l : bench.at("layers")) benched.push_back(l.at("name"));
  EXPECT_EQ(benched, layer_names(*engine)) << bench.dump(1);
}

TEST_F(CudaGpuPlanTest, EnvironmentAtLoadChangesNothing) {
  const fs::path path = build();
  std::vector<LayerTiming> before, after;
  const Tensor a = run_engine(path, &before);
  const engine::EngineData e = engine::read_engine_file(path);
  Tensor b;
  {
    const ScopedEnv env({{"TRTUTILS_CUDA_FUSION", "0"},
                         {"TRTUTILS_CUDA_LT_TIMING", "0"},
                         {"TRTUTILS_CUDA_CHANNELS_LAST", "0"}});
    b = run_engine(path, &after);
    const engine::GpuExecutorPlan plan = engine::gpu_executor_plan(e, {});
    cuda::Executor ex(plan.model, plan.options);
    (void)ex.run({{"x", x_}});
    EXPECT_EQ(ex.timing_cache_recorded(), 0);
    EXPECT_EQ(ex.timing_decisions(), engine::recorded_gpu_tactics(e.info));
  }
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].name, after[i].name);
    EXPECT_EQ(before[i].kernel, after[i].kernel) << before[i].name;
  }
  expect_close(b, a, kExact, "with TRTUTILS_CUDA_* set at load");
}

TEST_F(CudaGpuPlanTest, Format1EngineDerivesItsPlanAtLoad) {
  const fs::path path = build();
  const fs::path old = dir_ / "format1.engine";
  write_file_atomic(old, testing_models::as_format_1(path));
  auto engine = Engine::load(old, {.backend = "cuda"});
  EXPECT_EQ(engine->format_version(), 1u);
  EXPECT_FALSE(engine->has_gpu_plan());
  expect_close(run_engine(old), run_engine(path), kFp32, "format 1 vs stored plan");
}

TEST_F(CudaGpuPlanTest, UntimedEngineTimesOnFirstLoadIntoTheTimingCache) {
  const engine::EngineData e = engine::read_engine_file(build(/*optimization_level=*/0));
  EXPECT_EQ(e.info.at("gpu_tactics").at("state"), "untimed");
  for (const auto& l : e.gpu->layers) EXPECT_EQ(l.tactic, "untimed (timed on first load)");
  const fs::path cache = dir_ / "timing.cache";
  const engine::GpuExecutorPlan plan = engine::gpu_executor_plan(e, {.timing_cache = cache});
  EXPECT_TRUE(plan.options.tactics.empty());
  {
    cuda::Executor first(plan.model, plan.options);
    (void)first.run({{"x", x_}});
    EXPECT_GT(first.timing_cache_recorded(), 0);
  }
  ASSERT_TRUE(fs::exists(cache));
  cuda::Executor second(plan.model, plan.options);
  (void)second.run({{"x", x_}});
  EXPECT_EQ(second.timing_cache_recorded(), 0) << "timed again despite the timing cache";
  EXPECT_GT(second.timing_cache_hits(), 0);
}

}  // namespace
}  // namespace trtutils
