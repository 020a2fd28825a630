// DLA: can_run_on_dla on torchvision exports (chunking), build_dla_engine's device placement,
// targets and strongly-typed rejections (by text, nothing left behind), and calib_to_qdq against
// the weakly-typed INT8 build from the same cache.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "cli_runner.h"
#include "engine/session.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "precision/calib_to_qdq.h"
#include "precision/calibration_cache.h"
#include "trtutils/builder.h"
#include "trtutils/dla.h"
#include "trtutils/engine.h"
#include "trtutils/npy.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;
using builder::BuildConfig;
using builder::DlaConfig;

fs::path model_path(const std::string& name) {
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/root") / ".cache" / "trtutils" / "models" / name;
}

Tensor random_tensor(Shape shape, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Tensor t(DataType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// input [1, 3, 8, 8] -> `depth` x (Conv 3x3 to 16 channels + Relu) [-> Exp] -> `tail` x (Conv +
// Relu) -> GlobalAveragePool -> Flatten -> Gemm. Exp (unary: only Abs runs on DLA) splits the
// chunks.
ir::Model cnn(int depth, bool exp_in_middle, int tail) {
  ir::GraphBuilder b("cnn");
  auto x = b.input("input", DataType::kFloat32, {1, 3, 8, 8});
  auto pads = ir::attr_ints("pads", {1, 1, 1, 1});
  int64_t c = 3;
  uint32_t seed = 1;
  auto block = [&](const std::string& name) {
    auto w = b.initializer(name + "_w", random_tensor({16, c, 3, 3}, seed++, 0.3f));
    auto bias = b.initializer(name + "_b", random_tensor({16}, seed++, 0.1f));
    x = b.node("Conv", {x, w, bias}, {pads}, 1, "", name)[0];
    x = b.node("Relu", {x}, {}, 1, "", name + "_relu")[0];
    c = 16;
  };
  for (int i = 0; i < depth; ++i) block("conv" + std::to_string(i));
  if (exp_in_middle) {
    Tensor tiny(DataType::kFloat32, {1});
    tiny.data<float>()[0] = 0.01f;
    auto s = b.initializer("tiny", tiny);
    x = b.node("Mul", {x, s}, {}, 1, "", "scale_down")[0];  // keeps Exp's output small
    x = b.node("Exp", {x}, {}, 1, "", "exp")[0];
  }
  for (int i = 0; i < tail; ++i) block("tail" + std::to_string(i));
  x = b.node("GlobalAveragePool", {x}, {}, 1, "", "pool")[0];
  x = b.node("Flatten", {x}, {}, 1, "", "flatten")[0];
  auto w = b.initializer("fc_w", random_tensor({10, c}, 77, 0.2f));
  auto bias = b.initializer("fc_b", random_tensor({10}, 78, 0.1f));
  x = b.node("Gemm", {x, w, bias}, {ir::attr_int("transB", 1)}, 1, "", "fc")[0];
  b.output(x, DataType::kFloat32);
  return b.build(17);
}

class DlaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_dla_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path path(const std::string& n) const { return dir_ / n; }
  fs::path save(const ir::Model& m, const std::string& name) {
    onnx_io::save_model(m, path(name));
    return path(name);
  }
  fs::path write_calibration(int64_t n) {
    Tensor t(DataType::kFloat32, {n, 3, 8, 8});
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    npy_save(path("calib.npy"), t);
    return path("calib.npy");
  }
  // Only the inputs the test wrote are left: no engine, no temporary.
  void expect_no_engine() {
    for (const auto& e : fs::directory_iterator(dir_))
      EXPECT_EQ(e.path().filename().string().find(".engine"), std::string::npos) << e.path();
  }
  void expect_dla_error(const fs::path& onnx, const DlaConfig& c, ErrorCode code,
                        const std::string& text) {
    try {
      builder::build_dla_engine(onnx, path("dla.engine"), c);
      ADD_FAILURE() << "no error; expected: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
    expect_no_engine();
  }
  fs::path dir_;
};

// ---- can_run_on_dla on torchvision exports ----

TEST(CanRunOnDla, ResNet50IsOneChunk) {
  const fs::path m = model_path("resnet50.onnx");
  if (!fs::exists(m)) GTEST_SKIP() << m << " is absent (tests/e2e/export_models.py writes it)";
  const auto r = builder::can_run_on_dla(m);
  // Conv (BN folded by the export), Relu, MaxPool 3x3/2, Add, GlobalAveragePool 7x7, Flatten,
  // Gemm 2048 -> 1000: every layer is within DLA 2.0's limits.
  ASSERT_EQ(r.layers.size(), 122u);
  EXPECT_EQ(r.dla_layers, 122);
  for (const auto& l : r.layers) EXPECT_TRUE(l.dla) << l.name << ": " << l.rule << " " << l.detail;
  ASSERT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.chunks[0].begin, 0);
  EXPECT_EQ(r.chunks[0].end, 122);
  ASSERT_EQ(r.selected.size(), 1u);
  EXPECT_EQ(r.selected[0].layers(), 122);
}

TEST(CanRunOnDla, MobileNetV2IsOneChunk) {
  const fs::path m = model_path("mobilenet_v2.onnx");
  if (!fs::exists(m)) GTEST_SKIP() << m << " is absent (tests/e2e/export_models.py writes it)";
  const auto r = builder::can_run_on_dla(m);
  // ReLU6 is Clip(0, 6): a clipped ReLU; the 7x7 global pool fits the 8x8 window limit.
  ASSERT_FALSE(r.layers.empty());
  for (const auto& l : r.layers) EXPECT_TRUE(l.dla) << l.name << ": " << l.rule << " " << l.detail;
  int clips = 0;
  for (const auto& l : r.layers) clips += l.op == "Clip";
  EXPECT_EQ(clips, 35);
  ASSERT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.chunks[0].layers(), static_cast<int64_t>(r.layers.size()));
}

TEST(CanRunOnDla, DynamicBatchNeedsAShape) {
  const fs::path m = model_path("mobilenet_v2_dynbatch.onnx");
  if (!fs::exists(m)) GTEST_SKIP() << m << " is absent (tests/e2e/export_models.py writes it)";
  const auto dynamic = builder::can_run_on_dla(m);
  EXPECT_EQ(dynamic.dla_layers, 0);
  EXPECT_TRUE(dynamic.chunks.empty());
  EXPECT_TRUE(dynamic.selected.empty());
  for (const auto& l : dynamic.layers) EXPECT_EQ(l.rule, "general.static") << l.name;
  const std::string input = onnx_io::load_model(m).graph.inputs[0].name;
  builder::DlaCheckOptions o;
  o.shapes[input] = {1, 3, 224, 224};
  const auto fixed = builder::can_run_on_dla(m, o);
  EXPECT_EQ(fixed.dla_layers, static_cast<int64_t>(fixed.layers.size()));
  EXPECT_EQ(fixed.chunks.size(), 1u);
}

TEST(CanRunOnDla, MobileNetV3SplitsAtHardSwish) {
  const fs::path m = model_path("mobilenet_v3_large.onnx");
  if (!fs::exists(m)) GTEST_SKIP() << m << " is absent (tests/e2e/export_models.py writes it)";
  builder::DlaCheckOptions o;
  o.max_chunks = 3;
  o.min_layers = 5;
  const auto r = builder::can_run_on_dla(m, o);
  // HardSwish and HardSigmoid are not DLA activations, and the squeeze-excitation blocks'
  // global pools over 28x28 / 14x14 exceed the 8x8 window; everything else fits.
  int64_t act = 0, pool = 0;
  for (const auto& l : r.layers) {
    if (l.dla) continue;
    if (l.rule == "act.type") {
      ++act;
      EXPECT_TRUE(l.op == "HardSwish" || l.op == "HardSigmoid") << l.op;
    } else {
      ++pool;
      EXPECT_EQ(l.rule, "pool.window") << l.name << " " << l.op << ": " << l.detail;
      EXPECT_EQ(l.op, "GlobalAveragePool");
    }
  }
  EXPECT_EQ(act, 29);  // 21 HardSwish + 8 HardSigmoid
  EXPECT_EQ(pool, 5);
  // Chunks are the maximal runs between the failures, in node order.
  ASSERT_GT(r.chunks.size(), 3u);
  int64_t in_chunks = 0;
  for (size_t i = 0; i < r.chunks.size(); ++i) {
    const auto& c = r.chunks[i];
    in_chunks += c.layers();
    for (int64_t k = c.begin; k < c.end; ++k) EXPECT_TRUE(r.layers[k].dla);
    if (c.begin > 0) {
      EXPECT_FALSE(r.layers[c.begin - 1].dla);
    }
    if (c.end < static_cast<int64_t>(r.layers.size())) {
      EXPECT_FALSE(r.layers[c.end].dla);
    }
    if (i > 0) {
      EXPECT_GT(c.begin, r.chunks[i - 1].end - 1);
    }
  }
  EXPECT_EQ(in_chunks, r.dla_layers);
  // Selection: the 3 largest chunks of >= 5 layers, in node order.
  std::vector<int64_t> sizes;
  for (const auto& c : r.chunks) sizes.push_back(c.layers());
  std::sort(sizes.rbegin(), sizes.rend());
  ASSERT_EQ(r.selected.size(), 3u);
  for (size_t i = 1; i < r.selected.size(); ++i)
    EXPECT_LT(r.selected[i - 1].begin, r.selected[i].begin);
  int64_t sel = 0, top = 0;
  for (const auto& c : r.selected) sel += c.layers();
  for (size_t i = 0; i < 3; ++i) top += sizes[i];
  EXPECT_EQ(sel, top);
  for (const auto& c : r.selected) EXPECT_GE(c.layers(), 5);
}

TEST_F(DlaTest, CanRunOnDlaCli) {
  const fs::path m = save(cnn(2, true, 3), "m.onnx");
  auto r = test_util::run_command(std::string(TRTUTILS_CLI) + " can_run_on_dla --onnx " +
                                  m.string() + " --min_layers 2");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("unary.op: Exp"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("DLA-able chunks: 2"), std::string::npos) << r.output;
  r = test_util::run_command(std::string(TRTUTILS_CLI) + " can_run_on_dla --json --onnx " +
                             m.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["chunks"].size(), 2u);
  bool found = false;
  for (const auto& l : j["layers"])
    if (l["name"] == "exp") {
      found = true;
      EXPECT_EQ(l["dla"], false);
      EXPECT_EQ(l["rule"], "unary.op");
      EXPECT_NE(l["source"].get<std::string>().find("IUnaryLayer"), std::string::npos);
    }
  EXPECT_TRUE(found);
}

// ---- build_dla_engine ----

TEST_F(DlaTest, AllLayersOnDla) {
  const fs::path m = save(cnn(2, false, 0), "m.onnx");
  const auto r =
      builder::build_dla_engine(m, path("dla.engine"), {.dla_core = 1, .build = {.target_sm = 87}});
  ASSERT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.other_layers, 0);
  EXPECT_GT(r.dla_layers, 0);
  auto e = Engine::load(path("dla.engine"));
  for (const auto& l : e->layers()) EXPECT_EQ(l.device, "dla (emulated)") << l.name;
  const auto info = nlohmann::json::parse(e->info_json());
  ASSERT_TRUE(info.contains("dla"));
  EXPECT_EQ(info["dla"]["core"], 1);
  EXPECT_EQ(info["dla"]["emulated"], true);
  EXPECT_EQ(info["dla"]["chunks"].size(), 1u);
  // FP16 on the DLA: the compute layers run fp16.
  int fp16 = 0;
  for (const auto& l : e->layers()) fp16 += l.precision == "fp16";
  EXPECT_GT(fp16, 0);
  // Numerics: close to the float model (FP16 rounding).
  const Tensor x = random_tensor({1, 3, 8, 8}, 5);
  auto ctx = e->create_execution_context();
  const Tensor y = ctx->execute({{"input", x}}).begin()->second;
  Session s = Session::from_file(m);
  const Tensor ref = s.run({{"input", x}}).begin()->second;
  ASSERT_EQ(y.numel(), ref.numel());
  for (int64_t i = 0; i < y.numel(); ++i)
    EXPECT_NEAR(y.data<float>()[i], ref.data<float>()[i],
                2e-2 + 1e-2 * std::fabs(ref.data<float>()[i]));
}

TEST_F(DlaTest, LargestChunkOnDlaRestGpuSide) {
  // conv x2 | mul, exp | conv x4 + head: with max_chunks 1 the tail chunk (larger) goes to DLA.
  const fs::path m = save(cnn(2, true, 4), "m.onnx");
  const auto r = builder::build_dla_engine(
      m, path("dla.engine"), {.max_chunks = 1, .min_layers = 2, .build = {.target_sm = 87}});
  ASSERT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.chunks[0].first, "tail0");
  EXPECT_EQ(r.chunks[0].last, "fc");
  auto e = Engine::load(path("dla.engine"));
  for (const auto& l : e->layers()) {
    if (l.name == "exp" || l.name == "conv0" || l.name == "conv1_relu") {
      EXPECT_EQ(l.device, "cpu") << l.name;
    }
    if (l.name == "tail0" || l.name == "tail3_relu" || l.name == "fc") {
      EXPECT_EQ(l.device, "dla (emulated)") << l.name;
    }
  }
  // inspect shows the device.
  const auto out = test_util::run_command(std::string(TRTUTILS_CLI) + " inspect --engine " +
                                          path("dla.engine").string());
  EXPECT_EQ(out.code, 0) << out.output;
  EXPECT_NE(out.output.find("dla (emulated)"), std::string::npos) << out.output;
  // Two chunks allowed: both go to the DLA.
  const auto r2 = builder::build_dla_engine(
      m, path("dla2.engine"), {.max_chunks = 2, .min_layers = 2, .build = {.target_sm = 87}});
  EXPECT_EQ(r2.chunks.size(), 2u);
}

TEST_F(DlaTest, NoChunkLargeEnoughStaysGpuSide) {
  const fs::path m = save(cnn(2, true, 2), "m.onnx");
  const auto r = builder::build_dla_engine(m, path("dla.engine"),
                                           {.min_layers = 50, .build = {.target_sm = 87}});
  EXPECT_TRUE(r.chunks.empty());
  EXPECT_EQ(r.dla_layers, 0);
  bool warned = false;
  for (const auto& w : r.build.warnings)
    warned |= w.find("every layer stays GPU-side") != std::string::npos;
  EXPECT_TRUE(warned);
  const auto engine_1 = Engine::load(path("dla.engine"));
  for (const auto& l : engine_1->layers()) EXPECT_NE(l.device, "dla (emulated)");
}

TEST_F(DlaTest, Int8WithCalibration) {
  const fs::path m = save(cnn(3, false, 0), "m.onnx");
  DlaConfig c{.build = {.int8 = true, .calibration_data = write_calibration(16), .target_sm = 87}};
  c.build.calibration_cache = path("c.cache");
  const auto r = builder::build_dla_engine(m, path("dla.engine"), c);
  EXPECT_TRUE(fs::exists(path("c.cache")));
  EXPECT_GT(r.build.layers_per_precision.count("int8"), 0u);
  const auto engine_2 = Engine::load(path("dla.engine"));
  for (const auto& l : engine_2->layers())
    if (l.precision == "int8") {
      EXPECT_EQ(l.device, "dla (emulated)") << l.name;
    }
}

TEST_F(DlaTest, Targets) {
  const fs::path m = save(cnn(1, false, 0), "m.onnx");
  expect_dla_error(m, {.build = {.target_sm = 110}}, ErrorCode::kConfig,
                   "Jetson Thor (Blackwell, JetPack 7), which has no DLA cores");
  expect_dla_error(m, {.build = {.target_sm = 90}}, ErrorCode::kConfig,
                   "only Jetson Orin (SM 87) has DLA cores");
  expect_dla_error(m, {.build = {.target_sm = 72}}, ErrorCode::kConfig, "Xavier");
  // This machine: no GPU (or not an Orin) and no target.
  expect_dla_error(m, {}, ErrorCode::kConfig, "target_sm=87");
  expect_dla_error(m, {.dla_core = 2, .build = {.target_sm = 87}}, ErrorCode::kInvalidArgument,
                   "Jetson Orin has DLA cores 0 and 1");
  expect_dla_error(m, {.max_chunks = 17, .build = {.target_sm = 87}}, ErrorCode::kInvalidArgument,
                   "at most 16 DLA loadables per core");
}

TEST_F(DlaTest, StronglyTypedRejectsWeaklyTypedArtefacts) {
  const fs::path m = save(cnn(1, false, 0), "m.onnx");
  auto st = [](BuildConfig b) {
    b.strongly_typed = true;
    b.target_sm = 87;
    return DlaConfig{.build = b};
  };
  ImageBatcherOptions images;
  images.image_dir = dir_;
  expect_dla_error(m, st({.data_batcher = images}), ErrorCode::kConfig,
                   "data_batcher is a weakly-typed artefact");
  expect_dla_error(m, st({.calibration_cache = path("x.cache")}), ErrorCode::kConfig,
                   "calibration_cache is a weakly-typed artefact");
  expect_dla_error(m, st({.calibration_data = path("calib.npy")}), ErrorCode::kConfig,
                   "calibration_data is a weakly-typed artefact");
  expect_dla_error(m, st({.fp8 = true}), ErrorCode::kConfig, "fp8 is a weakly-typed artefact");
  // The builder's own strongly-typed rule still applies.
  expect_dla_error(m, st({.fp16 = true}), ErrorCode::kConfig,
                   "strongly_typed=True derives precision from the ONNX graph");
  // Weakly typed fp8: the DLA has no FP8.
  expect_dla_error(m, {.build = {.fp8 = true, .target_sm = 87}}, ErrorCode::kConfig,
                   "the DLA computes INT8 and FP16 only");
  // The CLI exits 2 and leaves nothing.
  const auto r = test_util::run_command(std::string(TRTUTILS_CLI) + " build_dla --onnx " +
                                        m.string() + " --output " + path("cli.engine").string() +
                                        " --target_sm 87 --strongly_typed --calibration_cache " +
                                        path("x.cache").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("weakly-typed artefact"), std::string::npos) << r.output;
  expect_no_engine();
}

TEST_F(DlaTest, StronglyTypedWarnsWithoutQdq) {
  const fs::path m = save(cnn(2, false, 0), "m.onnx");
  const auto r = builder::build_dla_engine(m, path("dla.engine"),
                                           {.build = {.strongly_typed = true, .target_sm = 87}});
  int warnings = 0;
  for (const auto& w : r.build.warnings)
    if (w.find("has no Q/DQ on its inputs") != std::string::npos) {
      ++warnings;
      EXPECT_NE(w.find("runs FP16 on the DLA, not INT8"), std::string::npos) << w;
    }
  EXPECT_EQ(warnings, 4);  // conv0, conv1, pool, fc
  // A Q/DQ model: conv1 (16 -> 16 channels) reads Q/DQ, no warning for it; conv0 (3 input
  // channels) is left float by the quantizer's small-layer rule, so it is warned about.
  const fs::path calib = write_calibration(16);
  builder::build_engine(
      m, path("w.engine"),
      {.int8 = true, .calibration_cache = path("c.cache"), .calibration_data = calib});
  precision::calib_to_qdq_file(m, path("c.cache"), path("qdq.onnx"));
  const auto q = builder::build_dla_engine(path("qdq.onnx"), path("q.engine"),
                                           {.build = {.strongly_typed = true, .target_sm = 87}});
  bool conv0 = false;
  std::string all;
  for (const auto& w : q.build.warnings) {
    all += w + "\n";
    EXPECT_EQ(w.find("layer 'conv1'"), std::string::npos) << w;
    conv0 |= w.find("layer 'conv0'") != std::string::npos;
  }
  EXPECT_TRUE(conv0) << all;
}

// ---- calib_to_qdq ----

TEST_F(DlaTest, CalibToQdqMatchesTheWeaklyTypedBuild) {
  const fs::path m = save(cnn(3, false, 1), "m.onnx");
  const fs::path calib = write_calibration(16);
  builder::build_engine(
      m, path("weak.engine"),
      {.int8 = true, .calibration_cache = path("c.cache"), .calibration_data = calib});
  ASSERT_TRUE(fs::exists(path("c.cache")));
  const auto cr = test_util::run_command(
      std::string(TRTUTILS_CLI) + " calib_to_qdq --onnx " + m.string() + " --calibration_cache " +
      path("c.cache").string() + " --output " + path("qdq.onnx").string());
  ASSERT_EQ(cr.code, 0) << cr.output;
  builder::build_engine(path("qdq.onnx"), path("strong.engine"), {.strongly_typed = true});

  auto weak = Engine::load(path("weak.engine"));
  auto strong = Engine::load(path("strong.engine"));
  ASSERT_EQ(weak->layers().size(), strong->layers().size());
  for (size_t i = 0; i < weak->layers().size(); ++i) {
    EXPECT_EQ(weak->layers()[i].op, strong->layers()[i].op) << i;
    EXPECT_EQ(weak->layers()[i].precision, strong->layers()[i].precision) << weak->layers()[i].name;
  }
  int int8 = 0;
  for (const auto& l : strong->layers()) int8 += l.precision == "int8";
  EXPECT_GE(int8, 3);  // conv1, conv2, tail0 (conv0 has 3 input channels: left float)

  // The Q/DQ model runs in our CPU session; its output, the strongly-typed engine's and the
  // weakly-typed engine's agree within a quantization step of the output.
  const Tensor x = random_tensor({1, 3, 8, 8}, 11, 0.5f);
  Session s = Session::from_file(path("qdq.onnx"));
  const Tensor ys = s.run({{"input", x}}).begin()->second;
  const Tensor yw = weak->create_execution_context()->execute({{"input", x}}).begin()->second;
  const Tensor yt = strong->create_execution_context()->execute({{"input", x}}).begin()->second;
  ASSERT_EQ(ys.numel(), yw.numel());
  float amax = 0;
  for (int64_t i = 0; i < yw.numel(); ++i) amax = std::max(amax, std::fabs(yw.data<float>()[i]));
  const float step = amax / 127.0f;
  for (int64_t i = 0; i < yw.numel(); ++i) {
    EXPECT_NEAR(yt.data<float>()[i], yw.data<float>()[i], 1e-5f + 1e-4f * amax) << i;
    EXPECT_NEAR(ys.data<float>()[i], yw.data<float>()[i], step) << i;
  }
}

TEST_F(DlaTest, CalibToQdqErrors) {
  const fs::path m = save(cnn(2, false, 0), "m.onnx");
  precision::CalibrationCache other;
  other.scales = {{"not_in_this_model", 0.01f}};
  precision::write_calibration_cache(path("other.cache"), other);
  try {
    precision::calib_to_qdq_file(m, path("other.cache"), path("q.onnx"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("was it made for this model"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(path("q.onnx")));
  const auto r = test_util::run_command(
      std::string(TRTUTILS_CLI) + " calib_to_qdq --onnx " + m.string() + " --calibration_cache " +
      path("missing.cache").string() + " --output " + path("q.onnx").string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("not found"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("q.onnx")));
}

}  // namespace
}  // namespace trtutils
