// Per-layer fallback in GPU engines: a layer no GPU kernel runs (here Cosh, and TopK on an
// int64 input, which its GPU kernel refuses) runs on the CPU backend inside the engine. The builder
// says so at build time (a warning naming the layers, `device: cpu (fallback)` in the layer table;
// no device needed: it targets SM 90), or refuses the model with --no_fallback; on a GPU the
// engine's outputs equal the CPU engine's, in float32 and float16.
#include <unistd.h>

#include <filesystem>

#include "backends/cuda/cuda_test_util.h"
#include "engine/engine_file.h"
#include "engine/session.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "trtutils/builder.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;
using namespace cuda_testing;  // NOLINT

// x [1,3,8,8] -> Conv -> Relu -> Flatten -> TopK(5) (GPU) -> values * 2, indices; the indices
// -> TopK(3) (int64: CPU) -> output; Flatten -> Cosh (no CUDA kernel) -> output.
ir::Model topk_model() {
  ir::GraphBuilder b("fallback");
  const std::string x = b.input("x", DataType::kFloat32, {1, 3, 8, 8});
  const std::string w = b.initializer("w", random_tensor(DataType::kFloat32, {4, 3, 3, 3}, 3));
  const std::string y =
      b.node("Conv", {x, w}, {ir::attr_ints("pads", {1, 1, 1, 1})}, 1, "", "conv")[0];
  const std::string r = b.node("Relu", {y}, {}, 1, "", "relu")[0];
  const std::string f = b.node("Flatten", {r}, {ir::attr_int("axis", 1)}, 1, "", "flatten")[0];
  const std::string k =
      b.initializer("k", Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {5}));
  const auto topk = b.node("TopK", {f, k}, {ir::attr_int("axis", 1)}, 2, "", "topk");
  Tensor two(DataType::kFloat32, {});
  two.data<float>()[0] = 2.0f;
  b.output(b.node("Mul", {topk[0], b.initializer("two", two)}, {}, 1, "", "scale")[0]);
  b.output(topk[1]);
  const std::string k3 =
      b.initializer("k3", Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {3}));
  b.output(b.node("TopK", {topk[1], k3}, {ir::attr_int("axis", 1)}, 2, "", "topk_int")[0]);
  b.output(b.node("Cosh", {f}, {}, 1, "", "cosh")[0]);
  return b.build(17);
}

class GpuFallbackBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_fallback_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    onnx_io::save_model(topk_model(), dir_ / "m.onnx");
  }
  void TearDown() override { fs::remove_all(dir_); }
  builder::BuildResult build(bool fp16, bool no_fallback, const std::string& name) {
    builder::BuildConfig c;
    c.backend = "cuda";
    c.target_sm = 90;
    c.fp16 = fp16;
    c.no_fallback = no_fallback;
    return builder::build_engine(dir_ / "m.onnx", dir_ / name, c);
  }
  fs::path dir_;
};

TEST_F(GpuFallbackBuild, NamesTheFallbackLayersAtBuildTime) {
  const builder::BuildResult r = build(false, false, "m.engine");
  ASSERT_EQ(r.fallback_layers.size(), 2u);
  EXPECT_EQ(r.fallback_layers[0].rfind("topk_int (TopK): ", 0), 0u) << r.fallback_layers[0];
  EXPECT_EQ(r.fallback_layers[1], "cosh (Cosh): no CUDA kernel");
  bool warned = false;
  for (const auto& w : r.warnings)
    warned = warned || w.find("2 layer(s) have no GPU kernel") != std::string::npos;
  EXPECT_TRUE(warned);
  const engine::EngineData e = engine::read_engine_file(dir_ / "m.engine");
  for (size_t i = 0; i < e.layers.size(); ++i) {
    const std::string& n = e.model.graph.nodes[i].name;
    const bool fb = n == "topk_int" || n == "cosh";
    EXPECT_EQ(e.layers[i].device, fb ? "cpu (fallback)" : "gpu") << n;
    if (fb) {
      EXPECT_EQ(e.layers[i].kernel.rfind("cpu.", 0), 0u) << e.layers[i].kernel;
    }
  }
  EXPECT_EQ(e.info.value("fallback_layers", nlohmann::json::array()).size(), 2u);
}

TEST_F(GpuFallbackBuild, NoFallbackRefusesTheModelNamingTheLayers) {
  try {
    build(false, true, "strict.engine");
    FAIL() << "expected Error(kNotSupported)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
    const std::string m = e.what();
    EXPECT_NE(m.find("--no_fallback: 2 layer(s) have no GPU kernel"), std::string::npos) << m;
    EXPECT_NE(m.find("topk_int (TopK)"), std::string::npos) << m;
    EXPECT_NE(m.find("cosh (Cosh)"), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(dir_ / "strict.engine"));
}

// On the GPU: the fallback layers' outputs (host) feed a GPU layer and leave as graph outputs.
// float32: every output equals the CPU engine's, run twice (the second run reuses the plans);
// float16 (the float TopK on the GPU in float16): the top-5 values
// against the float32 CPU engine (indices may differ where fp16 rounding reorders
// near-equal values).
class CudaFallback : public GpuFallbackBuild {};

TEST_F(CudaFallback, EngineMatchesTheCpuEngine) {
  TRT_REQUIRE_CUDA();
  build(false, false, "fp32.engine");
  build(true, false, "fp16.engine");
  const ir::Model m32 = engine::read_engine_file(dir_ / "fp32.engine").model;
  const ir::Model m16 = engine::read_engine_file(dir_ / "fp16.engine").model;
  SessionOptions so;
  so.run_passes = false;
  Session cpu(m32, so);
  cuda::Executor gpu32(m32, {}), gpu16(m16, {});
  for (uint32_t seed : {5u, 6u}) {
    const Tensor x = random_tensor(DataType::kFloat32, {1, 3, 8, 8}, seed);
    const auto want = cpu.run({{"x", x}});
    const auto got = gpu32.run({{"x", x}});
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [out, t] : want) {
      ASSERT_TRUE(got.count(out)) << out;
      expect_close(got.at(out), t, {1e-4, 1e-4}, "fp32 " + out);
    }
    const auto half = gpu16.run({{"x", x}});
    const std::string values = m32.graph.outputs[0].name;
    ASSERT_TRUE(half.count(values));
    const Tensor& h = half.at(values);  // float16: the graph's outputs have no declared dtype
    const Tensor widened =
        Tensor::from_vector<float>(DataType::kFloat32, h.shape(), h.to_float_vector());
    expect_close(widened, want.at(values), {2e-2, 2e-2}, "fp16 " + values);
  }
  for (const cuda::Executor* ex : {&gpu32, &gpu16}) {
    int fallback = 0;
    for (const auto& p : ex->node_placement()) fallback += p == "cpu (fallback)";
    EXPECT_EQ(fallback, 2);
  }
}

}  // namespace
}  // namespace trtutils
