// The global flags -v, -q and --max_memory before or after the subcommand (tools/cli/app.cpp):
// each position gives the same effect.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"

namespace fs = std::filesystem;

namespace trtutils {
namespace {

class GlobalFlags : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = fs::temp_directory_path() / ("trtutils_global_flags_" + std::to_string(::getpid()));
    model_ = (fs::path(TRTUTILS_TEST_DATA_DIR) / "../../examples/tiny_cnn.onnx").string();
  }
  void TearDown() override { fs::remove_all(out_); }
  // `trtutils [before] run --onnx tiny_cnn.onnx --output_dir OUT [after]`
  test_util::CommandResult run(const std::string& before, const std::string& after) {
    return test_util::run_command(std::string(TRTUTILS_CLI) + " " + before + " run --onnx " +
                                  model_ + " --output_dir " + out_.string() + " " + after);
  }
  static bool has(const test_util::CommandResult& r, const std::string& s) {
    return r.output.find(s) != std::string::npos;
  }
  fs::path out_;
  std::string model_;
};

TEST_F(GlobalFlags, VerboseBeforeOrAfterTheSubcommand) {
  EXPECT_FALSE(has(run("", ""), "[info]"));
  for (const auto& [before, after] : {std::pair{"-v", ""}, {"", "-v"}, {"", "--verbose"}}) {
    const auto r = run(before, after);
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(has(r, "[trtutils] [info] model loaded")) << before << after << r.output;
  }
  EXPECT_TRUE(has(run("", "-vv"), "[trtutils] [verbose]"));
}

TEST_F(GlobalFlags, QuietBeforeOrAfterTheSubcommand) {
  for (const auto& [before, after] : {std::pair{"-q", "-v"}, {"-v", "-q"}, {"", "-v --quiet"}}) {
    const auto r = run(before, after);
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_FALSE(has(r, "[info]")) << before << " / " << after << ": " << r.output;
  }
}

TEST_F(GlobalFlags, MaxMemoryBeforeOrAfterTheSubcommand) {
  for (const auto& [before, after] :
       {std::pair{"--max_memory 1K", ""}, {"", "--max_memory 1K"}, {"", "--max_memory=1K"}}) {
    const auto r = run(before, after);
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_TRUE(has(r, "over the limit of 1024 bytes")) << before << after << r.output;
  }
  const auto bad = run("", "--max_memory lots");
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_TRUE(has(bad, "--max_memory")) << bad.output;
}

TEST_F(GlobalFlags, SubcommandHelpSaysSo) {
  const auto r = test_util::run_command(std::string(TRTUTILS_CLI) + " benchmark --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(has(r, "-v, -q and --max_memory go before or after the subcommand")) << r.output;
}

}  // namespace
}  // namespace trtutils
