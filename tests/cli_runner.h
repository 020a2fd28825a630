// Runs a shell command (the CLI under test) with a time limit and captures stdout + stderr.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace trtutils::test_util {

struct CommandResult {
  int code = -1;       // exit status, or 128 + signal
  std::string output;  // stdout + stderr
};

inline CommandResult run_command(const std::string& command, int timeout_s = 120) {
  const std::string cmd = "timeout " + std::to_string(timeout_s) + " " + command + " 2>&1";
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

#ifdef TRTUTILS_CLI
// The CLI under test with `args`: TRTUTILS_CLI (its build path, set by tests/CMakeLists.txt), or
// $TRTUTILS_TEST_CLI where the test binary runs away from its build tree (the GPU machine runs
// the packed binaries of scripts/make_dist.sh: bench/cuda/zoo_device.sh sets it).
inline std::string cli_path() {
  const char* moved = std::getenv("TRTUTILS_TEST_CLI");
  return moved && *moved ? moved : TRTUTILS_CLI;
}
inline CommandResult run_cli(const std::string& args) {
  return run_command(cli_path() + " " + args);
}
#endif

}  // namespace trtutils::test_util
