// What a refused command must look like (tests/cli: the bad-input corpus, the hostile inputs):
// exit code 1 or 2 within its time limit (no crash, no hang), exactly one "error:" line on
// stderr holding the expected text (printable, not an internal error), every other stderr line
// a log line, nothing on stdout that claims an error, and no file changed, added or removed.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace trtutils::test_util {

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Every path under `dir` with its contents (folders and special files: their kind), to compare
// before and after a command: an output left behind, a temporary, a changed input all show.
inline std::map<std::string, std::string> snapshot(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> r;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    r[rel] = e.is_regular_file() ? read_all(e.path()) : e.is_directory() ? "<dir>" : "<special>";
  }
  return r;
}

struct CliRun {
  int code = -1;  // exit status (124: timeout), or 128 + signal
  std::string out, err;
  std::string report;  // the command and what it printed, for failure messages
};

// Runs `trtutils <args>` (args as shell words) with `cwd` as working directory; stdout and
// stderr go to files in `logs`, which must lie outside what the caller snapshots.
inline CliRun run_cli(const std::filesystem::path& cwd, const std::string& args,
                      const std::filesystem::path& logs, int timeout_s = 60) {
  const std::string cmd = "cd '" + cwd.string() + "' && timeout " + std::to_string(timeout_s) +
                          " " + TRTUTILS_CLI + " " + args + " >'" + (logs / "stdout.txt").string() +
                          "' 2>'" + (logs / "stderr.txt").string() + "' </dev/null";
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_all(logs / "stdout.txt");
  r.err = read_all(logs / "stderr.txt");
  r.report = "command: " + args + "\nexit code " + std::to_string(r.code) + "\nstdout:\n" + r.out +
             "stderr:\n" + r.err;
  return r;
}

inline void expect_clean_error(const CliRun& r, const std::string& expected) {
  EXPECT_TRUE(r.code == 1 || r.code == 2)
      << "expected exit code 1 or 2 (124: timeout, >128: signal)\n"
      << r.report;
  std::vector<std::string> errors, other;
  std::stringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("error:", 0) == 0)
      errors.push_back(line);
    else if (line.rfind("[trtutils] ", 0) != 0)
      other.push_back(line);
  }
  ASSERT_EQ(errors.size(), 1u) << r.report;
  const std::string& error = errors[0];
  EXPECT_NE(error.find(expected), std::string::npos)
      << "expected '" << expected << "' in the error line\n"
      << r.report;
  EXPECT_EQ(error.find("internal error"), std::string::npos) << r.report;
  EXPECT_TRUE(
      std::all_of(error.begin(), error.end(),
                  [](char ch) { return static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f; }))
      << "control character in the error line\n"
      << r.report;
  EXPECT_TRUE(other.empty()) << "stderr lines that are neither the error nor a log line (a "
                                "message spanning lines?)\n"
                             << r.report;
  EXPECT_EQ(r.out.find("error:"), std::string::npos) << r.report;
}

}  // namespace trtutils::test_util
