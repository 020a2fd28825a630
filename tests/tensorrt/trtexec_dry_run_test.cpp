// `--backend tensorrt --dry_run` without a trtexec on the machine: --trt_version X.Y prints the
// command for that TensorRT (its flag mapping, no trtexec looked for or run), and with neither a
// trtexec nor --trt_version the command for kDefaultDryRunVersion, with a warning.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "tensorrt/trtexec.h"
#include "trtutils/dla.h"
#include "trtutils/status.h"

namespace trtutils::tensorrt {
namespace {

namespace fs = std::filesystem;

TEST(TrtVersionArg, DigitsOnly) {
  EXPECT_EQ(parse_trt_version_arg("10.3").str(), "10.3.0");
  EXPECT_EQ(parse_trt_version_arg("8.6.1").str(), "8.6.1");
  EXPECT_EQ(parse_trt_version_arg("11.0").str(), "11.0.0");
  for (const char* bad : {"", "10", "ten", "10.", "10.3.", "v10.3", " 10.3", "10.3.1.2", "10.x"})
    EXPECT_FALSE(parse_trt_version_arg(bad).known()) << bad;
}

// A model, an empty folder for PATH (no trtexec on it) and the CLI run with only that PATH.
class DryRunWithoutTrtexec : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_dry_run_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "bin");
    ir::GraphBuilder b("m");
    auto x = b.input("x", DataType::kFloat32, {1, 4});
    b.output(b.node("Relu", {x}, {}, 1, "", "relu")[0], DataType::kFloat32);
    onnx_ = dir_ / "m.onnx";
    onnx_io::save_model(b.build(17), onnx_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // `trtutils build --onnx m.onnx --output m.engine --backend tensorrt ARGS`, PATH = dir_/bin.
  test_util::CommandResult build(const std::string& args, const std::string& command = "build") {
    return test_util::run_command("env -u TENSORRT_ROOT PATH=" + (dir_ / "bin").string() + " " +
                                  TRTUTILS_CLI + " " + command + " --onnx " + onnx_.string() +
                                  " --output " + (dir_ / "m.engine").string() +
                                  " --backend tensorrt " + args);
  }
  static bool has(const test_util::CommandResult& r, const std::string& s) {
    return r.output.find(s) != std::string::npos;
  }
  bool trtexec_elsewhere() const { return fs::exists("/usr/src/tensorrt/bin/trtexec"); }
  fs::path dir_, onnx_;
};

TEST_F(DryRunWithoutTrtexec, PrintsTheCommandForTheGivenVersion) {
  const auto r86 = build("--dry_run --trt_version 8.6 --fp16");
  EXPECT_EQ(r86.code, 0) << r86.output;
  EXPECT_TRUE(has(r86, "trtexec --onnx=" + onnx_.string() + " --saveEngine=")) << r86.output;
  EXPECT_TRUE(has(r86, " --fp16 ")) << r86.output;
  EXPECT_FALSE(has(r86, "trtexec not found")) << r86.output;  // not looked for
  const auto r103 = build("--dry_run --trt_version 10.3 --strongly_typed");
  EXPECT_EQ(r103.code, 0) << r103.output;
  EXPECT_TRUE(has(r103, " --stronglyTyped ")) << r103.output;
  // 11.x: strongly typed without the flag, a timing cache named for the version.
  const auto r11 = build("--dry_run --trt_version 11.0 --strongly_typed --timing_cache global");
  EXPECT_EQ(r11.code, 0) << r11.output;
  EXPECT_FALSE(has(r11, "--stronglyTyped")) << r11.output;
  EXPECT_TRUE(has(r11, "tensorrt-11.0.0.timing.cache")) << r11.output;
  EXPECT_FALSE(fs::exists(dir_ / "m.engine"));
}

TEST_F(DryRunWithoutTrtexec, TheVersionsRulesApply) {
  const auto old = build("--dry_run --trt_version 8.6 --strongly_typed");
  EXPECT_EQ(old.code, 1) << old.output;
  EXPECT_TRUE(has(old, "does not support strongly-typed networks (TensorRT 8.6.0")) << old.output;
  const auto weak = build("--dry_run --trt_version 11.0 --fp16");
  EXPECT_EQ(weak.code, 2) << weak.output;
  EXPECT_TRUE(has(weak, "TensorRT 11.0.0 dropped weak typing")) << weak.output;
  const auto older = build("--dry_run --trt_version 8.5");
  EXPECT_EQ(older.code, 1) << older.output;
  EXPECT_TRUE(has(older, "older than 8.6")) << older.output;
}

TEST_F(DryRunWithoutTrtexec, TheFlagIsChecked) {
  const auto no_dry_run = build("--trt_version 10.3");
  EXPECT_EQ(no_dry_run.code, 2) << no_dry_run.output;
  EXPECT_TRUE(has(no_dry_run, "--trt_version applies to --backend tensorrt --dry_run"));
  const auto bad = build("--dry_run --trt_version ten");
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_TRUE(has(bad, "--trt_version 'ten': expected a TensorRT version X.Y")) << bad.output;
  const auto help = test_util::run_command(std::string(TRTUTILS_CLI) + " build --help");
  EXPECT_TRUE(has(help, "--trt_version")) << help.output;
}

// build_dla takes --trt_version as build does: the DLA flags for that TensorRT, or its refusal
// where that TensorRT has no DLA; the same checks of the flag.
TEST_F(DryRunWithoutTrtexec, BuildDlaPrintsTheCommandForTheGivenVersion) {
  const auto r86 = build("--dry_run --trt_version 8.6 --dla_core 1", "build_dla");
  EXPECT_EQ(r86.code, 0) << r86.output;
  EXPECT_TRUE(has(r86, "trtexec --onnx=" + onnx_.string() + " --saveEngine=")) << r86.output;
  EXPECT_TRUE(has(r86, " --fp16 ")) << r86.output;  // weakly typed DLA builds allow FP16
  EXPECT_TRUE(has(r86, " --useDLACore=1 --allowGPUFallback")) << r86.output;
  EXPECT_FALSE(has(r86, "trtexec not found")) << r86.output;  // not looked for
  const auto r107 = build("--dry_run --trt_version 10.7 --strongly_typed", "build_dla");
  EXPECT_EQ(r107.code, 0) << r107.output;
  EXPECT_TRUE(has(r107, " --stronglyTyped ")) << r107.output;
  EXPECT_TRUE(has(r107, " --useDLACore=0 --allowGPUFallback")) << r107.output;
  const auto r109 = build("--dry_run --trt_version 10.9", "build_dla");
  EXPECT_EQ(r109.code, 1) << r109.output;
  EXPECT_TRUE(has(r109, "TensorRT 10.9.0 has no DLA support on Jetson")) << r109.output;
  EXPECT_FALSE(fs::exists(dir_ / "m.engine"));
}

TEST_F(DryRunWithoutTrtexec, BuildDlaChecksTheFlag) {
  const auto no_dry_run = build("--trt_version 10.3", "build_dla");
  EXPECT_EQ(no_dry_run.code, 2) << no_dry_run.output;
  EXPECT_TRUE(has(no_dry_run, "--trt_version applies to --backend tensorrt --dry_run"))
      << no_dry_run.output;
  const auto bad = build("--dry_run --trt_version ten", "build_dla");
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_TRUE(has(bad, "--trt_version 'ten': expected a TensorRT version X.Y")) << bad.output;
  const auto help = test_util::run_command(std::string(TRTUTILS_CLI) + " build_dla --help");
  EXPECT_TRUE(has(help, "--trt_version")) << help.output;
}

TEST(TrtexecDryRun, ADlaVersionWithoutDryRunIsRefused) {
  try {
    (void)builder::build_dla_engine(
        "m.onnx", "m.engine",
        {.trt_version = TrtVersion{10, 3, 0}, .build = {.backend = "cpu", .target_sm = 87}});
    ADD_FAILURE() << "a DLA build took a TensorRT version";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("trt_version applies to a dry run"), std::string::npos)
        << e.what();
  }
}

TEST_F(DryRunWithoutTrtexec, NoVersionGivesTheDefaultsCommand) {
  if (trtexec_elsewhere()) GTEST_SKIP() << "/usr/src/tensorrt/bin/trtexec exists here";
  const auto r = build("--dry_run --fp16");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r, "trtexec --onnx=")) << r.output;
  EXPECT_TRUE(has(r, "the command printed is for TensorRT " + kDefaultDryRunVersion.str() +
                         "; give --trt_version X.Y for another version"))
      << r.output;
  // A build (not a dry run) still needs the real thing.
  const auto real = build("--fp16");
  EXPECT_EQ(real.code, 1) << real.output;
  EXPECT_TRUE(has(real, "trtexec not found")) << real.output;
}

TEST_F(DryRunWithoutTrtexec, AGivenVersionIsUsedOverAnInstalledTrtexec) {
  // A trtexec that records being run: the dry run must neither query nor run it.
  const fs::path fake = dir_ / "bin" / "trtexec";
  std::ofstream(fake) << "#!/bin/sh\necho \"$@\" >> " << (dir_ / "ran.txt").string()
                      << "\necho '&&&& RUNNING TensorRT.trtexec [TensorRT v100700]'\n";
  fs::permissions(fake, fs::perms::owner_all);
  const auto r = build("--dry_run --trt_version 8.6 --fp16");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r, "\ntrtexec --onnx=") || r.output.rfind("trtexec --onnx=", 0) == 0) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "ran.txt"));
  // Without --trt_version the installed one's version is read.
  const auto installed = build("--dry_run --strongly_typed");
  EXPECT_EQ(installed.code, 0) << installed.output;
  EXPECT_TRUE(has(installed, fake.string() + " --onnx=")) << installed.output;
}

TEST(TrtexecDryRun, AVersionWithoutDryRunIsRefused) {
  try {
    (void)builder::build_with_trtexec("m.onnx", "m.engine", {}, /*dry_run=*/false, -1,
                                      TrtVersion{10, 3, 0});
    ADD_FAILURE() << "a build took a TensorRT version";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("applies to a dry run only"), std::string::npos);
  }
}

}  // namespace
}  // namespace trtutils::tensorrt
