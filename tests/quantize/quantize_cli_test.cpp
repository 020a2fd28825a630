// `trtutils quantize` as a user runs it: flags, the printed table, the exit status.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "trtutils/npy.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int status;
  std::string out;
};

CliRun run_cli(const std::string& args) {
  const std::string cmd = std::string(TRTUTILS_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  CliRun r{-1, ""};
  if (!p) return r;
  std::array<char, 4096> buf;
  while (fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  r.status = pclose(p);
  return r;
}

class QuantizeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trtutils_qcli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_ = fs::path(TRTUTILS_TEST_DATA_DIR) / ".." / ".." / "examples" / "tiny_cnn.onnx";
    Tensor t(DataType::kFloat32, {24, 3, 32, 32});
    std::mt19937 rng(1);
    std::normal_distribution<float> d;
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
    npy_save(dir_ / "calib.npy", t);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string base() const {
    return "quantize --onnx " + model_.string() + " --output " + (dir_ / "q.onnx").string() +
           " --calibration_data " + (dir_ / "calib.npy").string() + " --batch_size 8";
  }
  fs::path dir_, model_;
};

TEST_F(QuantizeCliTest, WritesModelTableAndReport) {
  CliRun r =
      run_cli(base() + " --calibration_method percentile --percentile 99.9 --report per_tensor");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("SQNR dB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("probabilities"), std::string::npos);
  EXPECT_NE(r.out.find("quantized tensor"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "q.onnx"));
  EXPECT_TRUE(fs::exists(dir_ / "q.onnx.report.json"));
}

TEST_F(QuantizeCliTest, BadValuesFailWithTheOptions) {
  CliRun r = run_cli(base() + " --quantize_mode int2");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("int8, fp8, int4"), std::string::npos) << r.out;
  r = run_cli(base() + " --calibration_method kl");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("max, entropy, percentile, mse"), std::string::npos) << r.out;
  r = run_cli("quantize --onnx " + (dir_ / "none.onnx").string() + " --output " +
              (dir_ / "q.onnx").string() + " --calibration_data " + (dir_ / "calib.npy").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("not found"), std::string::npos) << r.out;
  r = run_cli(base() + " --report everything");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("outputs, per_tensor"), std::string::npos) << r.out;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

TEST_F(QuantizeCliTest, CalibratePerNodeWritesTheSameModel) {
  CliRun r = run_cli(base() + " --calibration_method entropy --no_report_file");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string plain = slurp(dir_ / "q.onnx");
  r = run_cli(base() + " --calibration_method entropy --no_report_file --calibrate_per_node");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(plain.empty());
  EXPECT_EQ(slurp(dir_ / "q.onnx"), plain);
}

TEST_F(QuantizeCliTest, Int4MethodsAndTheActivationMethodNotice) {
  // tiny_cnn's one Gemm (16 -> 10, forced): awq_clip with calibration data; entropy does not
  // apply to int4 and says so.
  CliRun r = run_cli("-v " + base() +
                     " --quantize_mode int4 --calibration_method awq_clip --block_size 16"
                     " --op_types_to_quantize Gemm");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("awq_clip: activation statistics for 1 of 1 weight"), std::string::npos)
      << r.out;
  r = run_cli(base() +
              " --quantize_mode int4 --calibration_method entropy --block_size 16"
              " --op_types_to_quantize Gemm");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("does not apply to int4"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trtutils
