// The GPU plan a cuda engine stores (issue 29), checked without a device: `build --backend
// cuda` for an SM other than this machine's GPU (if any) writes the executor's fused graph as
// "gpu_graph" next to the plain one, untimed; it reads back unchanged; a damaged gpu_graph is
// refused; inspect shows the fused layers; an engine of format 1 (no plan) still loads, and the
// CPU backend runs the plain graph of either.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

#include "backends/cuda/cuda_executor.h"
#include "cli_runner.h"
#include "engine/gpu_plan_model.h"
#include "trtutils/builder.h"
#include "trtutils/engine.h"
#include "trtutils/engine_inspect.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int count_op(const ir::Graph& g, const std::string& op) {
  int c = 0;
  for (const auto& n : g.nodes) c += n.op_type == op;
  return c;
}

// An SM that is not this machine's GPU: the build cannot time, whatever machine runs the test.
int other_sm() {
  const cuda::DeviceStatus dev = cuda::device_status();
  return dev.usable && dev.sm == 90 ? 80 : 90;
}

class GpuPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_gpu_plan_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    testing_models::save_mlp_model(dir_ / "mlp.onnx");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path build(std::map<std::string, std::string> switches = {}) {
    builder::BuildConfig c;
    c.backend = "cuda";
    c.target_sm = other_sm();
    c.shapes = {{"x", {2, 8, 64}}};
    c.gpu_switches = std::move(switches);
    const fs::path out = dir_ / "mlp.engine";
    builder::build_engine(dir_ / "mlp.onnx", out, c);
    return out;
  }

  std::string load_error(const std::string& bytes) {
    const fs::path p = dir_ / "edited.engine";
    write_file_atomic(p, bytes);
    try {
      (void)engine::read_engine_file(p);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(GpuPlanTest, BuildStoresTheFusedGraphUntimed) {
  const engine::EngineData e = engine::read_engine_file(build());
  EXPECT_EQ(e.format_version, engine::kFormatVersion);
  // The plain graph (the CPU backend's) keeps its ops.
  EXPECT_EQ(count_op(e.model.graph, "MatMul"), 2);
  EXPECT_EQ(count_op(e.model.graph, "Erf"), 1);
  ASSERT_TRUE(e.gpu.has_value());
  const ir::Graph& g = e.gpu->graph;
  ASSERT_EQ(e.gpu->layers.size(), g.nodes.size());
  EXPECT_EQ(g.nodes.size(), 2u) << "MatMul + bias + GELU and MatMul + bias: two layers";
  int with_gelu = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    EXPECT_EQ(n.op_type, "MatMulBias") << n.describe();
    EXPECT_EQ(n.domain, "com.trtutils.cuda") << n.describe();
    with_gelu += static_cast<int>(n.attr_int("gelu", 0));
    const engine::LayerRecord& l = e.gpu->layers[i];
    EXPECT_EQ(l.device, "gpu");
    EXPECT_EQ(l.precision, "fp32");
    EXPECT_EQ(l.kernel, "cublasLt.MatMulBias");
    EXPECT_EQ(l.tactic, "untimed (timed on first load)");
  }
  EXPECT_EQ(with_gelu, 1);
  const json& t = e.info.at("gpu_tactics");
  EXPECT_EQ(t.at("state"), "untimed");
  EXPECT_FALSE(t.contains("choices"));
  EXPECT_NE(t.at("why").get<std::string>().find("SM " + std::to_string(other_sm())),
            std::string::npos)
      << t.dump();
}

// A strongly typed int8 convolution builds for another SM: the builder's coverage walk makes the
// quantized ops without touching a GPU (ConvQuantize uploaded its scale in its factory, so
// `build --strongly_typed --backend cuda --target_sm 90` of any `quantize` output failed on a
// machine without one: "CUDA driver version is insufficient").
TEST_F(GpuPlanTest, Int8BuildForAnotherSmMakesNoCudaCalls) {
  testing_models::save_qdq_conv_model(dir_ / "qdq.onnx");
  builder::BuildConfig c;
  c.backend = "cuda";
  c.target_sm = other_sm();
  c.strongly_typed = true;
  builder::build_engine(dir_ / "qdq.onnx", dir_ / "qdq.engine", c);
  const engine::EngineData e = engine::read_engine_file(dir_ / "qdq.engine");
  ASSERT_TRUE(e.gpu.has_value());
  for (const engine::LayerRecord& l : e.gpu->layers) EXPECT_EQ(l.device, "gpu") << l.kernel;
  EXPECT_EQ(count_op(e.gpu->graph, "ConvQuantize"), 1);
  EXPECT_EQ(count_op(e.gpu->graph, "QConv"), 1);
}

TEST_F(GpuPlanTest, FusionSwitchOffStoresThePlainLayers) {
  const engine::EngineData e = engine::read_engine_file(build({{"FUSION", "0"}}));
  ASSERT_TRUE(e.gpu.has_value());
  EXPECT_EQ(count_op(e.gpu->graph, "MatMulBias"), 0);
  EXPECT_EQ(e.gpu->graph.nodes.size(), e.model.graph.nodes.size());
}

TEST_F(GpuPlanTest, ReadBackWritesTheSameBytes) {
  const fs::path path = build();
  const std::string bytes = read_file(path);
  const engine::EngineData e = engine::read_engine_file(path);
  EXPECT_EQ(engine::serialize_engine(e), bytes);
  // The GPU graph shares the plain graph's weights (one copy in the file and in memory).
  for (const auto& [name, t] : e.gpu->graph.initializers) {
    const Tensor* plain = e.model.graph.initializer(name);
    ASSERT_NE(plain, nullptr) << name;
    EXPECT_EQ(plain->raw(), t.raw()) << name;
  }
  for (const auto& [name, t] : e.model.graph.initializers)
    EXPECT_FALSE(name.starts_with("@gpu/")) << name;
}

TEST_F(GpuPlanTest, DamagedGpuGraphIsRefused) {
  const testing_models::EngineFileParts parts = testing_models::engine_file_parts(build());
  auto refused = [&](const std::function<void(json&)>& edit, const std::string& what) {
    json meta = parts.meta;
    edit(meta);
    const std::string msg =
        load_error(testing_models::engine_file_with(parts, meta, engine::kFormatVersion));
    EXPECT_NE(msg.find("invalid engine file"), std::string::npos) << what << ": " << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  refused([](json& m) { m["gpu_graph"]["nodes"][1]["inputs"][0] = "nope"; }, "gpu_graph: ");
  refused([](json& m) { m["gpu_graph"]["outputs"][0]["dtype"] = 10; },
          "gpu_graph: its inputs or outputs differ from the graph's");
  refused([](json& m) { m["gpu_graph"]["initializers"][0]["weight"] = 99999; },
          "gpu_graph weight index out of range");
  refused([](json& m) { m["gpu_graph"]["nodes"][0].erase("kernel"); }, "missing field 'kernel'");
  refused([](json& m) { m["gpu_graph"]["nodes"][0]["layout"] = 4; }, "'layout' is not a string");
  refused(
      [](json& m) {
        m["info"]["gpu_tactics"]["choices"] = {{"Conv|x", 1}};
      },
      "info 'gpu_tactics': the choice for 'Conv|x' is not a string");
  refused([](json& m) { m["info"]["gpu_tactics"]["device"] = 90; },
          "info 'gpu_tactics': 'device' is not a string");
  refused([](json& m) { m["info"]["backend"] = "cpu"; }, "gpu_graph in an engine not for cuda");
}

TEST_F(GpuPlanTest, InspectJsonShowsTheFusedLayers) {
  const fs::path path = build();
  const auto r =
      test_util::run_command("sh -c '" + test_util::cli_path() + " inspect --json --engine " +
                             path.string() + " 2>/dev/null'");
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(r.output);
  EXPECT_EQ(j.at("engine_format_version"), engine::kFormatVersion);
  ASSERT_EQ(j.at("layers").size(), 2u) << j.at("layers").dump(1);
  for (const auto& l : j.at("layers")) {
    EXPECT_EQ(l.at("op"), "com.trtutils.cuda::MatMulBias");
    EXPECT_EQ(l.at("device"), "gpu");
    EXPECT_EQ(l.at("kernel"), "cublasLt.MatMulBias");
    EXPECT_EQ(l.at("tactic"), "untimed (timed on first load)");
    EXPECT_TRUE(l.contains("layout"));
  }
  EXPECT_EQ(j.at("gpu_plan").at("stored"), true);
  EXPECT_EQ(j.at("gpu_plan").at("tactics"), "untimed (timed on first load)");
  const auto text = test_util::run_cli("inspect --engine " + path.string());
  ASSERT_EQ(text.code, 0) << text.output;
  EXPECT_NE(text.output.find("GPU plan: stored; tactics untimed (timed on first load)"),
            std::string::npos)
      << text.output;
}

TEST_F(GpuPlanTest, Format1EngineStillLoadsAndTheCpuRunsThePlainGraph) {
  const fs::path path = build();
  const fs::path old = dir_ / "format1.engine";
  write_file_atomic(old, testing_models::as_format_1(path));
  auto v1 = Engine::load(old, {.backend = "cpu"});
  auto v2 = Engine::load(path, {.backend = "cpu"});
  EXPECT_EQ(v1->format_version(), 1u);
  EXPECT_FALSE(v1->has_gpu_plan());
  EXPECT_TRUE(v2->has_gpu_plan());
  // Without a stored plan the layer table is the plain graph's (the executor fuses at load).
  EXPECT_EQ(v1->layers().size(), engine::read_engine_file(path).model.graph.nodes.size());
  EXPECT_EQ(v2->layers().size(), 2u);
  const Tensor x = testing_models::mlp_weight({2, 8, 64}, 7);
  const Tensor a = v1->create_execution_context()->execute({{"x", x}}).at(v1->outputs().at(0).name);
  const Tensor b = v2->create_execution_context()->execute({{"x", x}}).at(v2->outputs().at(0).name);
  ASSERT_EQ(a.shape(), (Shape{2, 8, 64}));
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << "both run the same plain graph";
}

}  // namespace
}  // namespace trtutils
