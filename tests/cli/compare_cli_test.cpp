// trtutils compare and debug_precision on tiny models built here: equal sides pass (exit 0), a
// side with one perturbed Conv fails (exit 1) and --layerwise names that layer first; --json;
// per-output tolerances; usage errors (exit 2); debug_precision finds the one fragile layer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "cli_runner.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "trtutils/file_util.h"
#include "trtutils/npy.h"

namespace fs = std::filesystem;

namespace trtutils {
namespace {

using Result = test_util::CommandResult;
using test_util::run_cli;

Tensor random_weights(Shape shape, uint32_t seed, float scale = 0.3f) {
  Tensor t(DataType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// x [1, 3, 8, 8] -> conv1 -> relu1 -> conv2 -> relu2 -> conv3 -> y; `perturb` changes conv2's
// weights. Tensors are named after their layers ("conv2_out").
ir::Model three_convs(bool perturb) {
  ir::GraphBuilder b("three_convs");
  auto x = b.input("x", DataType::kFloat32, {1, 3, 8, 8});
  const auto pads = ir::attr_ints("pads", {1, 1, 1, 1});
  std::string v = x;
  int64_t cin = 3;
  for (int i = 1; i <= 3; ++i) {
    const std::string n = "conv" + std::to_string(i);
    Tensor w = random_weights({4, cin, 3, 3}, static_cast<uint32_t>(i));
    if (perturb && i == 2) w.data<float>()[5] += 0.5f;
    auto wn = b.initializer(n + "_w", w);
    v = b.node_with_outputs("Conv", {v, wn}, {n + "_out"}, {pads})[0];
    b.graph().nodes.back().name = n;
    if (i < 3) {
      v = b.node_with_outputs("Relu", {v}, {"relu" + std::to_string(i) + "_out"})[0];
      b.graph().nodes.back().name = "relu" + std::to_string(i);
    }
    cin = 4;
  }
  b.output(v, DataType::kFloat32);
  return b.build(17);
}

// x [1, 16, 4, 4] -> conv1 (output channels 0..7 about 1000x the others) -> conv2 (reads only
// channels 8..15) -> conv3 -> y (16 channels: the builder's INT8 minimum). Per-tensor INT8 of
// conv2's input keeps the huge channels and rounds the ones conv2 reads to a few levels: conv2
// is the one layer that must stay in fp32.
ir::Model fragile_model() {
  constexpr int64_t kC = 16;
  ir::GraphBuilder b("fragile");
  auto x = b.input("x", DataType::kFloat32, {1, kC, 4, 4});
  Tensor w1 = random_weights({kC, kC, 1, 1}, 1, 1.0f);
  for (int64_t i = 0; i < kC * kC / 2; ++i) w1.data<float>()[i] = 1000.0f + static_cast<float>(i);
  Tensor w2 = random_weights({kC, kC, 1, 1}, 2, 1.0f);
  for (int64_t o = 0; o < kC; ++o)
    for (int64_t i = 0; i < kC / 2; ++i) w2.data<float>()[o * kC + i] = 0;
  Tensor w3 = random_weights({kC, kC, 1, 1}, 3, 1.0f);
  std::string v = x;
  const Tensor* ws[] = {&w1, &w2, &w3};
  for (int i = 1; i <= 3; ++i) {
    const std::string n = "conv" + std::to_string(i);
    v = b.node_with_outputs("Conv", {v, b.initializer(n + "_w", *ws[i - 1])}, {n + "_out"})[0];
    b.graph().nodes.back().name = n;
  }
  b.output(v, DataType::kFloat32);
  return b.build(17);
}

class CompareCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_compare_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    good_ = (dir_ / "good.onnx").string();
    bad_ = (dir_ / "bad.onnx").string();
    onnx_io::save_model(three_convs(false), good_);
    onnx_io::save_model(three_convs(true), bad_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string engine_of(const std::string& onnx, const std::string& name) {
    const std::string e = (dir_ / name).string();
    const Result r = run_cli("build --onnx " + onnx + " --output " + e);
    EXPECT_EQ(r.code, 0) << r.output;
    return e;
  }

  fs::path dir_;
  std::string good_, bad_;
};

TEST_F(CompareCliTest, EqualSidesPass) {
  Result r = run_cli("compare " + good_ + " " + good_ + " --seed 3");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("output 'conv3_out' [1, 4, 8, 8]: PASS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("SQNR inf dB"), std::string::npos) << r.output;
  const std::string engine = engine_of(good_, "good.engine");
  r = run_cli("compare " + engine + " " + good_ + " --seed 3 --layerwise");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("every compared layer is within the tolerance"), std::string::npos)
      << r.output;
}

TEST_F(CompareCliTest, PerturbedSideFailsAndLayerwiseNamesTheFirstBadLayer) {
  const fs::path plot = dir_ / "layers.png", json = dir_ / "cmp.json";
  Result r = run_cli("compare " + good_ + " " + bad_ + " --layerwise --plot " + plot.string() +
                     " --json " + json.string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("output 'conv3_out' [1, 4, 8, 8]: FAIL"), std::string::npos) << r.output;
  // conv1's output (fused with relu1 or not) matches; the first bad one is conv2's.
  EXPECT_NE(r.output.find("first layer outside the tolerance: relu2_out"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("FAIL    relu1_out"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(plot));
  const std::string j = read_file(json);
  EXPECT_NE(j.find("\"first_failing\": \"relu2_out\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"pass\": false"), std::string::npos) << j;
  EXPECT_NE(j.find("\"sqnr_db\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"median\""), std::string::npos) << j;

  const std::string ge = engine_of(good_, "good.engine"), be = engine_of(bad_, "bad.engine");
  r = run_cli("compare " + ge + " " + be + " --layerwise");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("first layer outside the tolerance: relu2_out"), std::string::npos)
      << r.output;
}

TEST_F(CompareCliTest, JsonOfAPassingComparison) {
  const fs::path json = dir_ / "cmp.json";
  const Result r = run_cli("compare " + good_ + " " + good_ + " --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string j = read_file(json);
  for (const char* key :
       {"\"name\": \"conv3_out\"", "\"pass\": true", "\"sqnr_db\": \"inf\"", "\"cosine\": 1.0",
        "\"check_error_stat\": \"elemwise\"", "\"mismatched\": 0", "\"atol\": 1e-05"})
    EXPECT_NE(j.find(key), std::string::npos) << key << " in " << j;
}

TEST_F(CompareCliTest, ToleranceByOutputName) {
  EXPECT_EQ(run_cli("compare " + good_ + " " + bad_ + " --atol 100").code, 0);
  EXPECT_EQ(run_cli("compare " + good_ + " " + bad_ + " --atol conv3_out:100").code, 0);
  EXPECT_EQ(run_cli("compare " + good_ + " " + bad_ + " --atol other:100").code, 1);
  EXPECT_EQ(run_cli("compare " + good_ + " " + bad_ + " --check_error_stat median --atol 1e9").code,
            0);
  const Result r = run_cli("compare " + good_ + " " + bad_ + " --atol conv3_out:x");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("--atol 'conv3_out:x': expected a number"), std::string::npos)
      << r.output;
}

TEST_F(CompareCliTest, SavedOutputsAsASide) {
  const fs::path out = dir_ / "out";
  Result r = run_cli("run --onnx " + good_ + " --seed 5 --output_dir " + out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_cli("compare " + out.string() + " " + good_ + " --seed 5");
  EXPECT_EQ(r.code, 0) << r.output;
  r = run_cli("compare " + out.string() + " " + bad_ + " --seed 5");
  EXPECT_EQ(r.code, 1) << r.output;
}

TEST_F(CompareCliTest, UsageErrorsExitWith2) {
  EXPECT_EQ(run_cli("compare " + good_).code, 2);
  EXPECT_EQ(run_cli("compare " + good_ + " " + good_ + " --plot p.png").code, 2);
  EXPECT_EQ(run_cli("compare " + good_ + " " + good_ + " --check_error_stat p99").code, 2);
  EXPECT_EQ(run_cli("debug_precision --onnx " + good_).code, 2);
}

TEST_F(CompareCliTest, DebugPrecisionFindsTheFragileLayer) {
  const std::string model = (dir_ / "fragile.onnx").string();
  onnx_io::save_model(fragile_model(), model);
  Tensor calib(DataType::kFloat32, {8, 16, 4, 4});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0, 1);
  for (int64_t i = 0; i < calib.numel(); ++i) calib.data<float>()[i] = u(rng);
  const fs::path calib_file = dir_ / "calib.npy";
  npy_save(calib_file, calib);
  const Result r = run_cli("debug_precision --onnx " + model + " --int8 --calibration_data " +
                           calib_file.string() + " --calibration_batch_size 1 --min_sqnr 25");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("step 1: 0 of 3 layers in fp32 (none): FAIL"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("result: 1 of 3 reduced-precision layers must stay in fp32"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(" --layer_precision conv2:fp32 --precision_constraints obey"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--nodes_to_exclude '^conv2$'"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace trtutils
