// Command lines the cli_fuzz harness (tests/fuzz) found problems with, kept in tests/data/bad/ as
// '\0'-separated arguments. Each must parse without undefined behaviour (the sanitizer build
// aborts on it) and run.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "engine/session.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> bad_args(const char* name) {
  std::ifstream f(fs::path(TRTUTILS_TEST_DATA_DIR) / "bad" / name, std::ios::binary);
  EXPECT_TRUE(f.good()) << name;
  const std::string bytes(std::istreambuf_iterator<char>(f), {});
  std::vector<std::string> args;
  size_t pos = 0;
  while (pos <= bytes.size()) {
    const size_t end = std::min(bytes.find('\0', pos), bytes.size());
    args.push_back(bytes.substr(pos, end - pos));
    pos = end + 1;
  }
  return args;
}

std::string shell_command(const std::vector<std::string>& args) {
  std::string cmd = TRTUTILS_CLI;
  for (const auto& a : args) {
    cmd += " '";
    for (char c : a) cmd += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += "'";
  }
  return cmd;
}

// `--verbose=2147483647 info`: the log level was computed as 1 + INT_MAX.
TEST(CliFuzzRegression, HugeVerbosityIsClamped) {
  const auto args = bad_args("cli_fuzz_verbose_overflow.args");
  ASSERT_EQ(args, (std::vector<std::string>{"--verbose=2147483647", "info"}));
  for (const auto& cmd : {shell_command(args), shell_command({"--verbose=-5", "info"})}) {
    const auto r = test_util::run_command(cmd);
    EXPECT_EQ(r.code, 0) << cmd << "\n" << r.output;
    EXPECT_EQ(r.output.find("runtime error"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("trtutils"), std::string::npos) << r.output;
  }
}

// build_fuzz: a Split whose input has no declared shape built, then ran on a scalar; the kernel
// read dimension 0 of a rank-0 tensor (a segfault). A scalar has no axis to split.
TEST(BuildFuzzRegression, SplitOfAScalarIsRefused) {
  Session s = Session::from_file(fs::path(TRTUTILS_TEST_DATA_DIR) / "bad" /
                                 "build_fuzz_split_of_scalar.onnx");
  const std::map<std::string, Tensor> feeds = {
      {"input", Tensor(DataType::kFloat32, {})},
      {"split", Tensor::from_vector<int64_t>(DataType::kInt64, {2}, {0, 0})}};
  try {
    (void)s.run(feeds);
    ADD_FAILURE() << "a Split of a scalar ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("axis 0 is out of range for rank 0"), std::string::npos)
        << e.what();
  }
}

// build_fuzz: an Atanh listing two outputs built, then failed at run with "internal error: kernel
// did not produce output 1". The model is at fault and the message says so.
TEST(BuildFuzzRegression, AnOutputTheOpLacksIsTheModelsError) {
  Session s =
      Session::from_file(fs::path(TRTUTILS_TEST_DATA_DIR) / "bad" / "build_fuzz_extra_output.onnx");
  const std::map<std::string, Tensor> feeds = {
      {"input", Tensor(DataType::kFloat32, {6})},
      {"split", Tensor::from_vector<int64_t>(DataType::kInt64, {2}, {2, 4})}};
  try {
    (void)s.run(feeds);
    ADD_FAILURE() << "an Atanh with two outputs ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("output #1 'output_2' is not one that Atanh computes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trtutils
