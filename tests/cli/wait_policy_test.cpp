// The CLI's OpenMP wait policy (tools/cli/wait_policy.h): idle threads spin briefly where every
// thread has a free core and sleep at once otherwise, and a policy the user set is kept. Observed
// through libgomp itself: OMP_DISPLAY_ENV=verbose prints the spin count it started with (once
// per start, so a re-exec shows twice).
#include "wait_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_runner.h"

namespace trtutils {
namespace {

struct OpenMpStart {
  int starts = 0;         // libgomp initialisations (2: the CLI re-executed itself)
  std::string spincount;  // GOMP_SPINCOUNT of the last one
  int code = -1;
};

OpenMpStart start_cli(const std::string& env) {
  const auto r = test_util::run_command("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " + env +
                                        " OMP_DISPLAY_ENV=verbose " + TRTUTILS_CLI + " --version");
  OpenMpStart s;
  s.code = r.code;
  for (size_t p = r.output.find("DISPLAY ENVIRONMENT BEGIN"); p != std::string::npos;
       p = r.output.find("DISPLAY ENVIRONMENT BEGIN", p + 1))
    ++s.starts;
  const std::string key = "GOMP_SPINCOUNT = '";
  const size_t k = r.output.rfind(key);
  if (k != std::string::npos) {
    const size_t b = k + key.size();
    s.spincount = r.output.substr(b, r.output.find('\'', b) - b);
  }
  return s;
}

TEST(WaitPolicy, SpinsBrieflyOrSleepsByDefault) {
  const OpenMpStart s = start_cli("");
  ASSERT_EQ(s.code, 0);
  if (s.starts == 0) GTEST_SKIP() << "the OpenMP runtime is not libgomp (no GOMP_SPINCOUNT shown)";
  EXPECT_EQ(s.starts, 2);  // one re-exec, no more
  // Which of the two depends on the machine's load at the start (choose_openmp_wait below).
  EXPECT_TRUE(s.spincount == "0" || s.spincount == cli::kBriefSpinCount) << s.spincount;
}

TEST(WaitPolicy, SpinsOnlyWithAFreeCoreForEveryThread) {
  EXPECT_EQ(cli::choose_openmp_wait(2, 0, 0), "spin");     // idle machine, all cores
  EXPECT_EQ(cli::choose_openmp_wait(2, 1, 0), "passive");  // one busy core, all cores wanted
  EXPECT_EQ(cli::choose_openmp_wait(2, 1, 1), "spin");     // ... but one thread fits
  EXPECT_EQ(cli::choose_openmp_wait(16, 3, 8), "spin");
  EXPECT_EQ(cli::choose_openmp_wait(16, 9, 8), "passive");
  EXPECT_EQ(cli::choose_openmp_wait(4, 0, 64), "spin");     // more threads than cores: capped
  EXPECT_EQ(cli::choose_openmp_wait(4, -1, 1), "passive");  // load unknown
}

TEST(WaitPolicy, ReadsTheThreadsArgument) {
  auto threads = [](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    return cli::threads_argument(argv.data());
  };
  EXPECT_EQ(threads({"trtutils", "benchmark", "--threads", "2"}), 2);
  EXPECT_EQ(threads({"trtutils", "run", "--threads=3", "-v"}), 3);
  EXPECT_EQ(threads({"trtutils", "run"}), 0);
  EXPECT_EQ(threads({"trtutils", "run", "--threads"}), 0);
  EXPECT_EQ(threads({"trtutils", "run", "--threads", "x2"}), 0);
  EXPECT_EQ(threads({"trtutils", "run", "--threads", "-1"}), 0);
}

TEST(WaitPolicy, UserSetPolicyIsKept) {
  const OpenMpStart active = start_cli("OMP_WAIT_POLICY=ACTIVE");
  ASSERT_EQ(active.code, 0);
  if (active.starts == 0) GTEST_SKIP() << "the OpenMP runtime is not libgomp";
  EXPECT_EQ(active.starts, 1);  // no re-exec
  EXPECT_EQ(active.spincount, "30000000000");
  const OpenMpStart spin = start_cli("GOMP_SPINCOUNT=1234");
  EXPECT_EQ(spin.starts, 1);
  EXPECT_EQ(spin.spincount, "1234");
}

}  // namespace
}  // namespace trtutils
