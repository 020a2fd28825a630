// The parser's messages (tools/cli/parse_messages.h): "did you mean ...?" for an unknown
// subcommand or flag, and unexpected arguments listed in the order given. Each is one error line
// with exit code 2.
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.h"

namespace trtutils {
namespace {

// The error line of `trtutils ARGS`, which must fail with exit code 2.
std::string usage_error(const std::string& args) {
  const auto r = test_util::run_command(std::string(TRTUTILS_CLI) + " " + args);
  EXPECT_EQ(r.code, 2) << args << ": " << r.output;
  return r.output;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(ParseMessages, UnknownSubcommandSuggestsTheClosest) {
  EXPECT_TRUE(has(usage_error("biuld --onnx m.onnx"),
                  "error: unknown subcommand 'biuld' (did you mean 'build'?)"));
  EXPECT_TRUE(has(usage_error("benchmrak"), "(did you mean 'benchmark'?)"));
  EXPECT_TRUE(has(usage_error("bench"), "(did you mean 'benchmark'?)"));  // a unique prefix
  EXPECT_TRUE(has(usage_error("build_d"), "(did you mean 'build_dla'?)"));
  EXPECT_TRUE(has(usage_error("-v infp"), "unknown subcommand 'infp' (did you mean 'info'?)"));
  const std::string far = usage_error("frobnicate");
  EXPECT_TRUE(has(far, "error: unknown subcommand 'frobnicate' (see `trtutils --help`)")) << far;
}

TEST(ParseMessages, UnknownFlagSuggestsTheClosest) {
  // The typo is the error, not the --onnx it left missing.
  const std::string typo = usage_error("build --onxx m.onnx --output m.engine");
  EXPECT_TRUE(has(typo, "unexpected arguments: --onxx (did you mean --onnx?) m.onnx")) << typo;
  EXPECT_FALSE(has(typo, "is required")) << typo;
  EXPECT_TRUE(has(usage_error("benchmark --onnx m.onnx --thread 2"),
                  "--thread (did you mean --threads?) 2"));
  EXPECT_TRUE(has(usage_error("run --onnx m.onnx --outptu_dir=o"),
                  "--outptu_dir=o (did you mean --output_dir?)"));
  // The global flags are candidates too, after the subcommand as before it.
  EXPECT_TRUE(has(usage_error("run --onnx m.onnx --max_memroy 1G"),
                  "--max_memroy (did you mean --max_memory?) 1G"));
  EXPECT_TRUE(has(usage_error("--verbos run --onnx m.onnx"), "(did you mean --verbose?)"));
  // Nothing close: no suggestion; a one-letter flag is never compared.
  const std::string none = usage_error("run --onnx m.onnx --frobnicate -x");
  EXPECT_TRUE(has(none, "unexpected arguments: --frobnicate -x (see `trtutils run --help`)"))
      << none;
}

TEST(ParseMessages, UnexpectedArgumentsInTheUsersOrder) {
  EXPECT_TRUE(has(usage_error("run --onnx a b c d"), "error: unexpected arguments: b c d ("));
  EXPECT_TRUE(
      has(usage_error("run --zzz --onnx a --bogus"), "unexpected arguments: --zzz --bogus ("));
  EXPECT_TRUE(has(usage_error("run --onnx a b"), "error: unexpected argument: b ("));
  EXPECT_TRUE(has(usage_error("run --onnx a x x y x"), "unexpected arguments: x x y x ("));
  // Shown so that they read as given: an empty one, one with a blank; a known flag after `--`
  // gets no suggestion.
  EXPECT_TRUE(has(usage_error("run --onnx a '' 'b c'"), "unexpected arguments: '' 'b c' ("));
  EXPECT_TRUE(has(usage_error("run -- --onnx a"), "unexpected arguments: --onnx a ("));
}

TEST(ParseMessages, OtherErrorsKeepTheirMessage) {
  EXPECT_TRUE(has(usage_error(""), "error: A subcommand is required"));
  EXPECT_TRUE(has(usage_error("build --output m.engine"), "--onnx is required"));
  EXPECT_TRUE(has(usage_error("run --onnx m.onnx --threads 5000"), "--threads"));
}

}  // namespace
}  // namespace trtutils
