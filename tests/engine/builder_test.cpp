// The builder's rules (the seed's error texts, nothing left behind), engine round trips, the
// weakly-typed INT8 calibration cache, layer precision, profiles, and concurrent contexts.
#include "trtutils/builder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "cli_runner.h"
#include "engine/engine_file.h"
#include "engine/session.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "precision/calibration_cache.h"
#include "trtutils/engine.h"
#include "trtutils/file_util.h"
#include "trtutils/npy.h"
#include "trtutils/quantize.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;
using builder::build_engine;
using builder::BuildConfig;

Tensor random_tensor(Shape shape, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Tensor t(DataType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// input [N, 3, 16, 16] -> Conv 3->16 + Relu -> Conv 16->32 + Relu -> residual-free head:
// GlobalAveragePool -> Flatten -> Gemm 32->10.
ir::Model small_cnn() {
  ir::GraphBuilder b("small_cnn");
  auto x = b.input("input", DataType::kFloat32, {ir::Dim("batch"), 3, 16, 16});
  auto w1 = b.initializer("w1", random_tensor({16, 3, 3, 3}, 1, 0.3f));
  auto b1 = b.initializer("b1", random_tensor({16}, 2, 0.1f));
  auto w2 = b.initializer("w2", random_tensor({32, 16, 3, 3}, 3, 0.1f));
  auto b2 = b.initializer("b2", random_tensor({32}, 4, 0.1f));
  auto w3 = b.initializer("w3", random_tensor({10, 32}, 5, 0.2f));
  auto b3 = b.initializer("b3", random_tensor({10}, 6, 0.1f));
  auto pads = ir::attr_ints("pads", {1, 1, 1, 1});
  auto c1 = b.node("Conv", {x, w1, b1}, {pads}, 1, "", "conv1")[0];
  auto r1 = b.node("Relu", {c1}, {}, 1, "", "relu1")[0];
  auto c2 = b.node("Conv", {r1, w2, b2}, {pads}, 1, "", "conv2")[0];
  auto r2 = b.node("Relu", {c2}, {}, 1, "", "relu2")[0];
  auto p = b.node("GlobalAveragePool", {r2}, {}, 1, "", "pool")[0];
  auto f = b.node("Flatten", {p}, {}, 1, "", "flatten")[0];
  auto y = b.node("Gemm", {f, w3, b3}, {ir::attr_int("transB", 1)}, 1, "", "fc")[0];
  b.output(y, DataType::kFloat32);
  return b.build(17);
}

class BuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_builder_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    onnx_ = dir_ / "model.onnx";
    onnx_io::save_model(small_cnn(), onnx_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path path(const std::string& n) const { return dir_ / n; }
  // Calibration samples: smooth random images in [0, 1).
  fs::path write_calibration(int64_t n) {
    Tensor t(DataType::kFloat32, {n, 3, 16, 16});
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    const fs::path p = path("calib.npy");
    npy_save(p, t);
    return p;
  }
  // Expects build_engine to throw Error(kConfig) whose message starts with `prefix`, and no
  // engine file (nor temporary) to be left in the folder.
  void expect_config_error(const BuildConfig& c, const std::string& prefix) {
    const fs::path out = path("rule.engine");
    try {
      build_engine(onnx_, out, c);
      FAIL() << "no error; expected: " << prefix;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConfig) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
    }
    EXPECT_FALSE(fs::exists(out));
    for (const auto& entry : fs::directory_iterator(dir_))
      EXPECT_EQ(entry.path().extension() == ".engine" ||
                    entry.path().filename().string().find("rule.engine") != std::string::npos,
                false)
          << entry.path();
  }
  fs::path dir_, onnx_;
};

constexpr const char* kFlagsRule =
    "strongly_typed=True derives precision from the ONNX graph; remove fp16/int8/fp8 builder "
    "flags.";
constexpr const char* kCalibRule = "strongly_typed=True does not support runtime calibration";
constexpr const char* kBlackwellRule =
    "INT8+FP8 mixed precision on Blackwell requires strongly_typed=True";

TEST_F(BuilderTest, StronglyTypedRejectsPrecisionFlags) {
  expect_config_error({.strongly_typed = true, .fp16 = true}, kFlagsRule);
  expect_config_error({.strongly_typed = true, .int8 = true}, kFlagsRule);
  expect_config_error({.strongly_typed = true, .fp8 = true}, kFlagsRule);
}

TEST_F(BuilderTest, StronglyTypedRejectsCalibration) {
  expect_config_error({.strongly_typed = true, .calibration_cache = path("c.cache")}, kCalibRule);
  expect_config_error({.strongly_typed = true, .calibration_data = path("calib.npy")}, kCalibRule);
  BuildConfig c{.strongly_typed = true};
  c.data_batcher = ImageBatcherOptions{};
  expect_config_error(c, kCalibRule);
}

TEST_F(BuilderTest, StronglyTypedRejectsLayerPrecision) {
  BuildConfig c{.strongly_typed = true};
  c.layer_precision = {{"conv1", DataType::kFloat16}};
  c.precision_constraints = "obey";
  expect_config_error(c, "strongly_typed=True and layer_precision are mutually exclusive");
}

TEST_F(BuilderTest, BlackwellMixedInt8Fp8NeedsStrongTyping) {
  expect_config_error({.int8 = true, .fp8 = true, .target_sm = 100}, kBlackwellRule);
  expect_config_error({.int8 = true, .fp8 = true, .target_sm = 120}, kBlackwellRule);
  // Hopper: allowed (int8 without calibration, with allow_float_fallback, only warns).
  const auto r =
      build_engine(onnx_, path("hopper.engine"),
                   {.int8 = true, .fp8 = true, .target_sm = 90, .allow_float_fallback = true});
  EXPECT_TRUE(fs::exists(path("hopper.engine")));
  EXPECT_FALSE(r.warnings.empty());
}

// --int8 on a float model with no calibration source would build an engine without one INT8
// layer: refused (naming the ways out) unless allow_float_fallback; a model with Q/DQ nodes has
// its scales and builds.
constexpr const char* kNoScalesRule =
    "int8 is enabled but neither calibration_cache nor calibration data was given, and the model "
    "has no Q/DQ nodes";

TEST_F(BuilderTest, Int8WithoutCalibrationNeedsAllowFloatFallback) {
  expect_config_error({.int8 = true}, kNoScalesRule);
  const auto r =
      build_engine(onnx_, path("float.engine"), {.int8 = true, .allow_float_fallback = true});
  EXPECT_TRUE(fs::exists(path("float.engine")));
  EXPECT_FALSE(r.warnings.empty());
  QuantizeOptions q;
  q.onnx_path = onnx_;
  q.output_path = path("qdq.onnx");
  q.calibration_data = write_calibration(4);
  q.num_threads = 1;
  q.write_report = false;
  (void)quantize_onnx(q);
  (void)build_engine(path("qdq.onnx"), path("qdq.engine"), {.int8 = true});
  EXPECT_TRUE(fs::exists(path("qdq.engine")));
  const std::string base = std::string(TRTUTILS_CLI) + " build --onnx " + onnx_.string() +
                           " --output " + path("cli.engine").string() + " --int8";
  auto cli = test_util::run_command(base);
  EXPECT_EQ(cli.code, 2) << cli.output;
  EXPECT_NE(cli.output.find("--allow_float_fallback"), std::string::npos) << cli.output;
  EXPECT_FALSE(fs::exists(path("cli.engine")));
  cli = test_util::run_command(base + " --allow_float_fallback");
  EXPECT_EQ(cli.code, 0) << cli.output;
}

TEST_F(BuilderTest, StronglyTypedFormatsWarnAndApplyOnlyTheFormat) {
  BuildConfig c{.strongly_typed = true};
  c.input_tensor_formats = {builder::parse_tensor_format("fp16:HWC")};
  const auto r = build_engine(onnx_, path("hwc.engine"), c);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("dtype part"), std::string::npos) << r.warnings[0];
  auto e = Engine::load(path("hwc.engine"));
  ASSERT_EQ(e->inputs().size(), 1u);
  EXPECT_EQ(e->inputs()[0].dtype, DataType::kFloat32);  // dtype ignored
  EXPECT_EQ(e->inputs()[0].format, "HWC");
  EXPECT_EQ(e->inputs()[0].shape, (std::vector<int64_t>{-1, 16, 16, 3}));
  // NHWC input gives the same result as the NCHW model.
  Tensor x = random_tensor({2, 3, 16, 16}, 11);
  Tensor xh(DataType::kFloat32, {2, 16, 16, 3});
  for (int n = 0; n < 2; ++n)
    for (int ch = 0; ch < 3; ++ch)
      for (int h = 0; h < 16; ++h)
        for (int w = 0; w < 16; ++w)
          xh.data<float>()[((n * 16 + h) * 16 + w) * 3 + ch] =
              x.data<float>()[((n * 3 + ch) * 16 + h) * 16 + w];
  auto ref = Session::from_file(onnx_).run({{"input", x}});
  auto got = e->create_execution_context()->execute({{"input", xh}});
  const Tensor& a = ref.begin()->second;
  const Tensor& b = got.begin()->second;
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5);
}

TEST_F(BuilderTest, InvalidOptionsName) {
  auto expect_arg = [&](const BuildConfig& c, const std::string& needle) {
    try {
      build_engine(onnx_, path("x.engine"), c);
      FAIL() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(path("x.engine")));
  };
  expect_arg({.precision_constraints = "sometimes"}, "choose one of none, prefer, obey");
  expect_arg({.optimization_level = 7}, "optimization_level");
  expect_arg({.backend = "tpu"}, "choose one of auto, cpu, cuda");
  BuildConfig c;
  c.shapes = {{"nope", {1, 3, 16, 16}}};
  expect_arg(c, "the model has no input 'nope'");
  c.shapes = {{"input", {1, 3, 17, 16}}};
  expect_arg(c, "fixed dimension");
  c = {};
  c.layer_precision = {{"no_such_layer", DataType::kFloat16}};
  c.precision_constraints = "obey";
  expect_arg(c, "no layer named 'no_such_layer'");
  c.layer_precision = {{"99", DataType::kFloat16}};
  expect_arg(c, "layer index 99 is out of range");
  try {
    build_engine(path("missing.onnx"), path("x.engine"), {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos);
  }
}

TEST_F(BuilderTest, Fp32EngineMatchesTheModel) {
  const auto r = build_engine(onnx_, path("fp32.engine"), {});
  EXPECT_EQ(r.layers_per_precision.at("fp32"), r.num_layers);
  auto e = Engine::load(path("fp32.engine"));
  EXPECT_EQ(e->backend(), "cpu");
  EXPECT_FALSE(e->strongly_typed());
  EXPECT_GT(e->weight_bytes(), 0u);
  EXPECT_GT(e->activation_arena_bytes(), 0u);
  Tensor x = random_tensor({3, 3, 16, 16}, 12);
  auto ref = Session::from_file(onnx_).run({{"input", x}});
  auto got = e->create_execution_context()->execute({{"input", x}});
  const Tensor& a = ref.begin()->second;
  const Tensor& b = got.begin()->second;
  ASSERT_EQ(a.shape(), b.shape());
  // Tactics may pick another convolution algorithm (Winograd): float rounding differs slightly.
  for (int64_t i = 0; i < a.numel(); ++i)
    EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-4 * (1 + std::abs(a.data<float>()[i])));
  // Binding errors name the input and what is expected.
  auto ctx = e->create_execution_context();
  try {
    ctx->execute({{"input", random_tensor({1, 3, 8, 8}, 1)}});
    FAIL();
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("input 'input' must have shape"), std::string::npos)
        << err.what();
  }
}

// Engines hold control flow: an If (torchvision's detectors guard their NMS with one) whose
// branches have their own nodes, constants and initializers, one with an If inside, survive the
// engine file and run the branch the condition picks, as the model does.
TEST_F(BuilderTest, EnginesHoldIfSubgraphs) {
  auto node = [](const std::string& op, std::vector<std::string> in, std::string out) {
    ir::Node n;
    n.name = out + "_node";
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {std::move(out)};
    return n;
  };
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = m.graph;
  g.name = "with_if";
  g.inputs.push_back({"x", DataType::kFloat32, ir::SymShape{3}, {}});
  g.inputs.push_back({"c", DataType::kBool, ir::SymShape{}, {}});
  g.nodes.push_back(node("Relu", {"x"}, "r"));
  ir::Graph then_g;
  then_g.name = "then";
  then_g.initializers["k"] = Tensor::from_vector<float>(DataType::kFloat32, {3}, {1, 2, 3});
  then_g.nodes.push_back(node("Mul", {"r", "k"}, "t_out"));
  then_g.outputs.push_back({"t_out", DataType::kFloat32, std::nullopt, {}});
  ir::Graph inner_then, inner_else;
  inner_then.nodes.push_back(node("Neg", {"x"}, "it_out"));
  inner_then.outputs.push_back({"it_out", DataType::kFloat32, std::nullopt, {}});
  inner_else.nodes.push_back(node("Identity", {"r"}, "ie_out"));
  inner_else.outputs.push_back({"ie_out", DataType::kFloat32, std::nullopt, {}});
  ir::Graph else_g;
  else_g.name = "else";
  else_g.nodes.push_back(node("Not", {"c"}, "not_c"));
  ir::Node inner = node("If", {"not_c"}, "e_out");
  inner.attributes["then_branch"] = ir::attr_graph("then_branch", inner_then);
  inner.attributes["else_branch"] = ir::attr_graph("else_branch", inner_else);
  else_g.nodes.push_back(inner);
  else_g.outputs.push_back({"e_out", DataType::kFloat32, std::nullopt, {}});
  ir::Node outer = node("If", {"c"}, "y");
  outer.attributes["then_branch"] = ir::attr_graph("then_branch", then_g);
  outer.attributes["else_branch"] = ir::attr_graph("else_branch", else_g);
  g.nodes.push_back(outer);
  g.outputs.push_back({"y", DataType::kFloat32, std::nullopt, {}});
  const fs::path onnx = path("if.onnx");
  onnx_io::save_model(m, onnx);
  build_engine(onnx, path("if.engine"), {});
  auto e = Engine::load(path("if.engine"));
  const Tensor x = Tensor::from_vector<float>(DataType::kFloat32, {3}, {-1, 2, -3});
  Tensor yes(DataType::kBool, {}), no(DataType::kBool, {});
  yes.data<uint8_t>()[0] = 1;
  for (const Tensor& c : {yes, no}) {
    const Tensor want = Session::from_file(onnx).run({{"x", x}, {"c", c}}).at("y");
    const Tensor got = e->create_execution_context()->execute({{"x", x}, {"c", c}}).at("y");
    EXPECT_EQ(got.to_float_vector(), want.to_float_vector());
  }
  EXPECT_EQ(
      e->create_execution_context()->execute({{"x", x}, {"c", yes}}).at("y").to_float_vector(),
      (std::vector<float>{0, 4, 0}));  // relu(x) * k
  EXPECT_EQ(e->create_execution_context()->execute({{"x", x}, {"c", no}}).at("y").to_float_vector(),
            (std::vector<float>{1, -2, 3}));  // not c: the inner then branch, -x
}

// enqueue (device buffers on a CUDA stream) is for engines running on the GPU; a CPU context
// says so and points at execute().
TEST_F(BuilderTest, EnqueueOnCpuEngineSaysUseExecute) {
  build_engine(onnx_, path("cpu_enqueue.engine"), {});
  auto ctx = Engine::load(path("cpu_enqueue.engine"))->create_execution_context();
  std::map<std::string, DeviceBuffer> in{{"input", {nullptr, DataType::kFloat32, {3, 3, 16, 16}}}};
  std::map<std::string, DeviceBuffer> out;
  try {
    ctx->enqueue(in, out, nullptr);
    FAIL() << "enqueue ran on a CPU engine";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kNotSupported);
    EXPECT_NE(std::string(err.what()).find("use execute()"), std::string::npos) << err.what();
  }
}

TEST_F(BuilderTest, ProfileBoundsInputs) {
  BuildConfig c;
  c.min_shapes = {{"input", {1, 3, 16, 16}}};
  c.opt_shapes = {{"input", {4, 3, 16, 16}}};
  c.max_shapes = {{"input", {8, 3, 16, 16}}};
  build_engine(onnx_, path("prof.engine"), c);
  auto e = Engine::load(path("prof.engine"));
  EXPECT_EQ(e->inputs()[0].max_shape, (Shape{8, 3, 16, 16}));
  auto ctx = e->create_execution_context();
  EXPECT_NO_THROW(ctx->execute({{"input", random_tensor({8, 3, 16, 16}, 1)}}));
  try {
    ctx->execute({{"input", random_tensor({9, 3, 16, 16}, 1)}});
    FAIL();
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("outside the engine's optimization profile"),
              std::string::npos)
        << err.what();
  }
  c.max_shapes = {{"input", {2, 3, 16, 16}}};
  EXPECT_THROW(build_engine(onnx_, path("bad.engine"), c), Error);  // opt > max
  EXPECT_FALSE(fs::exists(path("bad.engine")));
}

// Attention probabilities in a weakly typed INT8 build: the cache holds their maximum / 127
// (softmax_probability_tensors). With these weights the entropy calibrator alone gives 0.00257
// against 0.00284 (checked with the rule switched off).
TEST_F(BuilderTest, WeakInt8CalibratesSoftmaxOutputsByTheirMaximum) {
  ir::GraphBuilder b("attn");
  auto x = b.input("input", DataType::kFloat32, {ir::Dim("batch"), 16, 32});
  auto s = b.node("MatMul", {x, b.initializer("wk", random_tensor({32, 16}, 8, 0.1f))}, {}, 1, "",
                  "scores")[0];
  b.node_with_outputs("Softmax", {s}, {"p"}, {ir::attr_int("axis", -1)});
  auto y = b.node("MatMul", {"p", x}, {}, 1, "", "pv")[0];
  b.output(y, DataType::kFloat32);
  b.output("p", DataType::kFloat32);
  const fs::path onnx = path("attn.onnx");
  onnx_io::save_model(b.build(17), onnx);
  Tensor calib = random_tensor({32, 16, 32}, 9, 1.0f);
  npy_save(path("attn.npy"), calib);
  BuildConfig c{
      .int8 = true, .calibration_cache = path("attn.cache"), .calibration_data = path("attn.npy")};
  ASSERT_EQ(c.calibration_algorithm, "entropy");
  build_engine(onnx, path("attn.engine"), c);
  const auto cache = precision::read_calibration_cache(path("attn.cache"));
  const Tensor p = Session::from_file(onnx).run({{"input", calib}}).at("p");
  float pmax = 0.0f;
  for (int64_t i = 0; i < p.numel(); ++i) pmax = std::max(pmax, std::abs(p.data<float>()[i]));
  bool found = false;
  for (const auto& [name, scale] : cache.scales)
    if (name == "p") {
      found = true;
      EXPECT_NEAR(scale, pmax / 127.0f, 1e-6f * pmax);
    }
  EXPECT_TRUE(found) << "no scale for the Softmax output in the cache";
}

// A classifier at batch 1 (a Gemm with one output row) stays in float in a weakly typed INT8
// build, as `quantize` leaves it (nvidia-modelopt's rule); at batch 2, or asked for by
// layer_precision, it runs in int8.
TEST_F(BuilderTest, WeakInt8LeavesASingleRowClassifierInFloat) {
  auto build_fc = [&](int64_t batch, bool force) {
    ir::GraphBuilder b("head");
    auto x = b.input("input", DataType::kFloat32, {batch, 16, 6, 6});
    x = b.node("Conv",
               {x, b.initializer("w", random_tensor({16, 16, 3, 3}, 3, 0.2f)),
                b.initializer("b", random_tensor({16}, 4, 0.1f))},
               {ir::attr_ints("pads", {1, 1, 1, 1})}, 1, "", "conv")[0];
    x = b.node("Relu", {x})[0];
    x = b.node("Flatten", {b.node("GlobalAveragePool", {x})[0]})[0];
    x = b.node("Gemm", {x, b.initializer("fw", random_tensor({10, 16}, 5, 0.3f))},
               {ir::attr_int("transB", 1)}, 1, "", "fc")[0];
    b.output(x, DataType::kFloat32);
    const std::string tag = "fc" + std::to_string(batch) + (force ? "f" : "");
    onnx_io::save_model(b.build(17), path(tag + ".onnx"));
    npy_save(path(tag + ".npy"), random_tensor({4 * batch, 16, 6, 6}, 6, 1.0f));
    BuildConfig c{.int8 = true, .calibration_data = path(tag + ".npy")};
    if (force) {
      c.layer_precision = {{"fc", DataType::kInt8}};
      c.precision_constraints = "obey";
    }
    build_engine(path(tag + ".onnx"), path(tag + ".engine"), c);
    std::map<std::string, std::string> prec;
    const auto engine = Engine::load(path(tag + ".engine"));
    for (const auto& l : engine->layers()) prec[l.name] = l.precision;
    return prec;
  };
  const auto b1 = build_fc(1, false);
  EXPECT_EQ(b1.at("conv"), "int8");
  EXPECT_EQ(b1.at("fc"), "fp32");
  EXPECT_EQ(build_fc(2, false).at("fc"), "int8");
  EXPECT_EQ(build_fc(1, true).at("fc"), "int8");
}

TEST_F(BuilderTest, WeakInt8CalibratesWritesCacheAndReproducesFromIt) {
  const fs::path calib = write_calibration(32);
  BuildConfig c{.int8 = true, .calibration_cache = path("model.cache"), .calibration_data = calib};
  const auto r1 = build_engine(onnx_, path("int8_a.engine"), c);
  ASSERT_TRUE(fs::exists(path("model.cache")));
  EXPECT_EQ(r1.calibration_cache_written, path("model.cache"));
  // TensorRT's text format.
  const std::string text = read_file(path("model.cache"));
  EXPECT_EQ(text.rfind("TRT-", 0), 0u);
  EXPECT_NE(text.find("EntropyCalibration2\n"), std::string::npos);
  const auto cache = precision::read_calibration_cache(path("model.cache"));
  EXPECT_GE(cache.scales.size(), 2u);
  ASSERT_TRUE(r1.layers_per_precision.count("int8")) << "no int8 layers";

  // The cache alone reproduces the same layers and precisions.
  BuildConfig c2{.int8 = true, .calibration_cache = path("model.cache")};
  build_engine(onnx_, path("int8_b.engine"), c2);
  auto a = Engine::load(path("int8_a.engine"));
  auto b = Engine::load(path("int8_b.engine"));
  ASSERT_EQ(a->layers().size(), b->layers().size());
  for (size_t i = 0; i < a->layers().size(); ++i) {
    EXPECT_EQ(a->layers()[i].name, b->layers()[i].name);
    EXPECT_EQ(a->layers()[i].precision, b->layers()[i].precision);
  }
  // Output close to the float model: SQNR >= 20 dB.
  Tensor x = npy_load(calib);
  auto ref = Session::from_file(onnx_).run({{"input", x}}).begin()->second;
  auto got = b->create_execution_context()->execute({{"input", x}}).begin()->second;
  double sig = 0, err = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double d = ref.data<float>()[i] - got.data<float>()[i];
    sig += ref.data<float>()[i] * ref.data<float>()[i];
    err += d * d;
  }
  EXPECT_GE(10 * std::log10(sig / std::max(err, 1e-30)), 20.0);
}

TEST_F(BuilderTest, WeakInt8WithABatchLargerThanTheDataRepeatsTheSamples) {
  // Batch 32 fixed by --shape, 12 calibration samples: one batch of the samples repeated, and
  // the ranges (max) equal those of the 12 samples alone at a dynamic batch.
  const fs::path calib = write_calibration(12);
  BuildConfig big{.int8 = true,
                  .calibration_cache = path("b32.cache"),
                  .calibration_data = calib,
                  .calibration_algorithm = "minmax",
                  .shapes = {{"input", {32, 3, 16, 16}}}};
  const auto r = build_engine(onnx_, path("b32.engine"), big);
  ASSERT_TRUE(r.layers_per_precision.count("int8")) << "no int8 layers";
  BuildConfig dyn{.int8 = true,
                  .calibration_cache = path("dyn.cache"),
                  .calibration_data = calib,
                  .calibration_batch_size = 12,
                  .calibration_algorithm = "minmax"};
  build_engine(onnx_, path("dyn.engine"), dyn);
  const auto a = precision::read_calibration_cache(path("b32.cache"));
  const auto b = precision::read_calibration_cache(path("dyn.cache"));
  ASSERT_EQ(a.scales.size(), b.scales.size());
  for (size_t i = 0; i < a.scales.size(); ++i) {
    EXPECT_EQ(a.scales[i].first, b.scales[i].first);
    EXPECT_EQ(a.scales[i].second, b.scales[i].second) << a.scales[i].first;
  }
}

TEST_F(BuilderTest, MissingCalibrationCacheWithoutDataIsAnError) {
  try {
    build_engine(onnx_, path("x.engine"), {.int8 = true, .calibration_cache = path("none.cache")});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("calibration cache not found"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(path("x.engine")));
}

TEST_F(BuilderTest, LayerPrecisionFp16ObeyedByIndexAndName) {
  BuildConfig c{.fp16 = true};
  c.layer_precision = {{"0", DataType::kFloat16}, {"fc", DataType::kFloat16}};
  c.precision_constraints = "obey";
  build_engine(onnx_, path("fp16.engine"), c);
  auto e = Engine::load(path("fp16.engine"));
  std::map<std::string, std::string> prec;
  for (const auto& l : e->layers()) prec[l.name] = l.precision;
  EXPECT_EQ(prec["conv1"], "fp16");
  EXPECT_EQ(prec["fc"], "fp16");
  EXPECT_EQ(prec["conv2"].substr(0, 4), "fp32");
  // The output stays fp32 and close to the float model (fp16 rounding only).
  Tensor x = random_tensor({2, 3, 16, 16}, 13);
  auto ref = Session::from_file(onnx_).run({{"input", x}}).begin()->second;
  auto got = e->create_execution_context()->execute({{"input", x}}).begin()->second;
  ASSERT_EQ(got.dtype(), DataType::kFloat32);
  double maxref = 0, maxerr = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    maxref = std::max(maxref, std::abs(double(ref.data<float>()[i])));
    maxerr = std::max(maxerr, std::abs(double(ref.data<float>()[i] - got.data<float>()[i])));
  }
  EXPECT_LT(maxerr, 1e-2 * maxref);
  EXPECT_GT(maxerr, 0.0);  // really computed in fp16
}

TEST_F(BuilderTest, EngineCacheReusesAnIdenticalBuild) {
  setenv("TRTUTILS_CACHE_DIR", path("cache").c_str(), 1);
  const auto r1 = build_engine(onnx_, path("c1.engine"), {.cache = true});
  const auto r2 = build_engine(onnx_, path("c2.engine"), {.cache = true});
  unsetenv("TRTUTILS_CACHE_DIR");
  EXPECT_FALSE(r1.from_cache);
  EXPECT_TRUE(r2.from_cache);
  EXPECT_EQ(read_file(path("c1.engine")), read_file(path("c2.engine")));
}

TEST_F(BuilderTest, ContextsRunConcurrently) {
  build_engine(onnx_, path("mt.engine"), {});
  auto e = Engine::load(path("mt.engine"));
  Tensor x = random_tensor({2, 3, 16, 16}, 14);
  const Tensor ref = e->create_execution_context()->execute({{"input", x}}).begin()->second;
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      auto ctx = e->create_execution_context({.num_threads = 1});
      for (int i = 0; i < 5; ++i) {
        Tensor y = ctx->execute({{"input", x}}).begin()->second;
        if (std::memcmp(y.raw(), ref.raw(), ref.nbytes()) != 0) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// ---- the engine file refuses damage, never crashes ----

class EngineFileTest : public BuilderTest {
 protected:
  std::string built() {
    build_engine(onnx_, path("good.engine"), {});
    return read_file(path("good.engine"));
  }
  std::string load_error(const std::string& bytes) {
    const fs::path p = path("bad.engine");
    std::ofstream(p, std::ios::binary) << bytes;
    try {
      Engine::load(p);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(EngineFileTest, FlippedBytesAreRejected) {
  const std::string good = built();
  for (size_t pos : {size_t{9}, size_t{20}, size_t{70}, good.size() / 2, good.size() - 1}) {
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x10);
    const std::string msg = load_error(bad);
    EXPECT_FALSE(msg.empty()) << "flip at " << pos;
  }
  std::string bad = good;
  bad[good.size() / 2] ^= 1;
  EXPECT_NE(load_error(bad).find("checksum mismatch"), std::string::npos);
}

TEST_F(EngineFileTest, TruncatedAndForeignFilesAreRejected) {
  const std::string good = built();
  EXPECT_NE(load_error(good.substr(0, good.size() - 100)).find("truncated"), std::string::npos);
  EXPECT_NE(load_error(good.substr(0, 30)).find("not a trtutils engine"), std::string::npos);
  EXPECT_NE(load_error("").find("not a trtutils engine"), std::string::npos);
  EXPECT_NE(load_error(std::string(4096, 'x')).find("not a trtutils engine"), std::string::npos);
}

TEST_F(EngineFileTest, OtherFormatVersionsAreRejected) {
  std::string bad = built();
  const uint32_t future = engine::kFormatVersion + 1;
  bad[8] = static_cast<char>(future);  // checksum recomputed: a well-formed future file
  const uint64_t h = engine::checksum64(reinterpret_cast<const uint8_t*>(bad.data()), 56);
  const uint64_t sum =
      engine::checksum64(reinterpret_cast<const uint8_t*>(bad.data()) + 64, bad.size() - 64, h);
  for (int k = 0; k < 8; ++k) bad[56 + k] = static_cast<char>((sum >> (8 * k)) & 0xff);
  const std::string msg = load_error(bad);
  EXPECT_NE(msg.find("engine format version " + std::to_string(future)), std::string::npos) << msg;
  EXPECT_NE(msg.find("rebuild"), std::string::npos) << msg;
}

TEST_F(EngineFileTest, CudaEngineIsNotRunOnTheCudaRuntimeForAnotherBackend) {
  built();
  try {
    Engine::load(path("good.engine"), {.backend = "cuda"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("built for the cpu backend"), std::string::npos)
        << e.what();
  }
}

// ---- the CLI: exit code 2 and the seed's text for rule violations ----

TEST_F(BuilderTest, CliRuleViolationsExitWithCode2) {
  const std::string base = std::string(TRTUTILS_CLI) + " build --onnx " + onnx_.string() +
                           " --output " + path("cli.engine").string();
  auto r = test_util::run_command(base + " --strongly_typed --int8");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(std::string("error: ") + kFlagsRule), std::string::npos) << r.output;
  r = test_util::run_command(base + " --strongly_typed --calibration_cache x.cache");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(kCalibRule), std::string::npos) << r.output;
  r = test_util::run_command(base + " --int8 --fp8 --target_sm 100");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(kBlackwellRule), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("cli.engine")));
  r = test_util::run_command(base);
  ASSERT_EQ(r.code, 0) << r.output;
  r = test_util::run_command(std::string(TRTUTILS_CLI) + " inspect --engine " +
                             path("cli.engine").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\"layers\""), std::string::npos);
  r = test_util::run_command(std::string(TRTUTILS_CLI) + " benchmark --engine " +
                             path("cli.engine").string() + " --iterations 3 --warmup_iterations 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("p99"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace trtutils
