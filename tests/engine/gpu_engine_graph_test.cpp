// The graph a GPU engine stores (no device needed: the builder targets SM 90 here): BatchNorm
// folded, and Conv -> [Add] -> Relu chains fused into com.trtutils::FusedConv in float32 and,
// with --fp16, in float16 (the fp16 conversion runs before the passes, fusion after it).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <tuple>

#include "backends/cuda/resnet_block.h"
#include "engine/attention_model.h"
#include "engine/engine_file.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "trtutils/builder.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

class GpuEngineGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_gpu_graph_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    onnx_ = dir_ / "model.onnx";
    onnx_io::save_model(testing_models::resnet_block(ir::Dim("N")), onnx_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  ir::Model build(bool fp16) {
    builder::BuildConfig c;
    c.backend = "cuda";
    c.target_sm = 90;
    c.fp16 = fp16;
    const fs::path out = dir_ / (fp16 ? "fp16.engine" : "fp32.engine");
    builder::build_engine(onnx_, out, c);
    return engine::read_engine_file(out).model;
  }
  fs::path dir_, onnx_;
};

void expect_fused(const ir::Model& m, DataType dt) {
  const ir::Graph& g = m.graph;
  int fused = 0, relu = 0, residual = 0, conv = 0;
  for (const ir::Node& n : g.nodes) {
    EXPECT_NE(n.op_type, "BatchNormalization") << "BatchNorm not folded: " << n.describe();
    if (n.op_type == "Conv") ++conv;
    if (n.op_type != "FusedConv") continue;
    ++fused;
    EXPECT_EQ(n.domain, "com.trtutils");
    const Tensor* w = g.initializer(n.inputs.at(1));
    ASSERT_NE(w, nullptr) << n.describe();
    EXPECT_EQ(w->dtype(), dt) << n.describe();
    if (n.attr_string("activation", "") == "Relu") ++relu;
    if (n.inputs.size() > 3 && !n.inputs[3].empty()) ++residual;
  }
  // conv1 (+bn, relu), conv2 (+bn, add, relu), conv3 (relu), and one of conv4 / proj (add, relu,
  // the other one as the residual) stays a Conv (bias only: the executor fuses the bias itself).
  EXPECT_EQ(fused, 4);
  EXPECT_EQ(relu, 4);
  EXPECT_EQ(residual, 2);
  EXPECT_EQ(conv, 1);
}

TEST_F(GpuEngineGraphTest, Float32ResNetBlockIsFused) {
  expect_fused(build(false), DataType::kFloat32);
}

TEST_F(GpuEngineGraphTest, Float16ResNetBlockIsFused) {
  expect_fused(build(true), DataType::kFloat16);
}

// The pass alone: float16 / bfloat16 / float32 Conv -> Add -> Clip (bounds as scalars of the
// graph's dtype) fuse into one FusedConv.
Tensor of_dtype(const Tensor& t, DataType dt) {
  if (dt == DataType::kFloat32) return t;
  Tensor r(dt, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = t.data<float>()[i];
    if (dt == DataType::kFloat16)
      r.data<half>()[i] = float_to_half(v);
    else
      r.data<bfloat16>()[i] = float_to_bfloat16(v);
  }
  return r;
}

TEST(ConvFusionHalfTest, FusesSixteenBitChains) {
  for (DataType dt : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32}) {
    ir::GraphBuilder b("half");
    auto scalar = [&](const std::string& name, float v) {
      return b.initializer(name,
                           of_dtype(Tensor::from_vector<float>(DataType::kFloat32, {}, {v}), dt));
    };
    const auto x = b.input("x", dt, {1, 5, 6, 6});
    const auto r = b.input("r", dt, {1, 7, 6, 6});
    const auto wn = b.initializer("w", of_dtype(Tensor(DataType::kFloat32, {7, 5, 3, 3}), dt));
    const auto c = b.node("Conv", {x, wn}, {ir::attr_ints("pads", {1, 1, 1, 1})})[0];
    const auto sum = b.node("Add", {c, r})[0];
    const auto y = b.node("Clip", {sum, scalar("lo", 0.0f), scalar("hi", 6.0f)})[0];
    b.output(y, dt);
    ir::Model m = b.build(19);
    passes::infer_shapes(m.graph, 19);
    const std::string what(dtype_name(dt));
    EXPECT_EQ(passes::fuse_convolutions(m.graph, 19), 1u) << what;
    const ir::Node* f = nullptr;
    for (const auto& n : m.graph.nodes)
      if (n.op_type == "FusedConv") f = &n;
    ASSERT_NE(f, nullptr) << what;
    EXPECT_EQ(f->attr_string("activation", ""), "Clip") << what;
    EXPECT_EQ(f->attr_floats("activation_params"), (std::vector<float>{0.0f, 6.0f})) << what;
    EXPECT_EQ(f->inputs.size(), 4u) << what;  // X, W, (no B), residual
  }
}

}  // namespace
}  // namespace trtutils

namespace trtutils {
namespace {

// The layer records of a GPU engine name the CUDA executor's own fusions: a scaled dot-product
// attention block (MatMul -> Mul -> Softmax -> MatMul) shows as fused into one Attention node,
// a MatMul + bias Add as MatMulBias.
TEST(GpuEngineLayers, KernelColumnNamesTheExecutorsFusions) {
  const fs::path dir =
      fs::temp_directory_path() / ("trtutils_gpu_layers_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  testing_models::save_attention_model(dir / "attention.onnx");
  builder::BuildConfig cfg;
  cfg.backend = "cuda";
  cfg.target_sm = 90;
  builder::build_engine(dir / "attention.onnx", dir / "attention.engine", cfg);
  const engine::EngineData e = engine::read_engine_file(dir / "attention.engine");
  std::map<std::string, std::string> kernel;
  for (size_t i = 0; i < e.layers.size(); ++i)
    kernel[e.model.graph.nodes[i].name] = e.layers[i].kernel;
  for (const char* n : {"scores", "scale", "softmax", "context"})
    EXPECT_EQ(kernel[n], "fused: cuda.Attention (context)") << n;
  EXPECT_EQ(kernel["proj"], "fused: cuda.MatMulBias (proj)");
  EXPECT_EQ(kernel["proj_bias"], "fused: cuda.MatMulBias (proj)");
  fs::remove_all(dir);
}

// GPU engines record their kernel switches (backends/cuda/kernel_switches.h): given with
// BuildConfig::gpu_switches or set as TRTUTILS_CUDA_* while building; the builder's fusion plan
// follows them; unknown names are an error (config) or a warning (environment).
TEST(GpuEngineSwitches, RecordedFromTheConfigAndTheEnvironment) {
  const fs::path dir =
      fs::temp_directory_path() / ("trtutils_gpu_switches_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  testing_models::save_attention_model(dir / "attention.onnx");
  const auto build = [&](builder::BuildConfig cfg, const std::string& name) {
    cfg.backend = "cuda";
    cfg.target_sm = 90;
    const builder::BuildResult r = builder::build_engine(dir / "attention.onnx", dir / name, cfg);
    const engine::EngineData e = engine::read_engine_file(dir / name);
    std::string scores_kernel;
    for (size_t i = 0; i < e.layers.size(); ++i)
      if (e.model.graph.nodes[i].name == "scores") scores_kernel = e.layers[i].kernel;
    return std::tuple{r, e.info.at("gpu_switches"), scores_kernel};
  };
  ::unsetenv("TRTUTILS_CUDA_ATTENTION");
  auto [r0, sw0, k0] = build({}, "default.engine");
  EXPECT_TRUE(sw0.empty()) << sw0.dump();
  EXPECT_EQ(k0, "fused: cuda.Attention (context)");

  builder::BuildConfig off;
  off.gpu_switches = {{"ATTENTION", "0"}};
  auto [r1, sw1, k1] = build(off, "flag.engine");
  EXPECT_EQ(sw1.at("TRTUTILS_CUDA_ATTENTION"), "0") << sw1.dump();
  EXPECT_EQ(k1.find("Attention"), std::string::npos) << k1;

  ::setenv("TRTUTILS_CUDA_ATTENTION", "0", 1);
  ::setenv("TRTUTILS_CUDA_NOT_A_SWITCH", "1", 1);
  auto [r2, sw2, k2] = build({}, "env.engine");
  ::unsetenv("TRTUTILS_CUDA_ATTENTION");
  ::unsetenv("TRTUTILS_CUDA_NOT_A_SWITCH");
  EXPECT_EQ(sw2.at("TRTUTILS_CUDA_ATTENTION"), "0") << sw2.dump();
  EXPECT_FALSE(sw2.contains("TRTUTILS_CUDA_NOT_A_SWITCH"));
  EXPECT_EQ(k2.find("Attention"), std::string::npos) << k2;
  bool warned = false;
  for (const auto& w : r2.warnings) warned = warned || w.find("NOT_A_SWITCH") != std::string::npos;
  EXPECT_TRUE(warned);

  builder::BuildConfig bad;
  bad.gpu_switches = {{"FUSIONN", "0"}};
  try {
    build(bad, "bad.engine");
    ADD_FAILURE() << "an unknown switch was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("FUSION"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trtutils
