// benchmark's warning for unsteady timings (tools/cli/stats.h): p99 over twice the median (and
// at least half a millisecond over it) names the likely causes and suggests --threads.
#include <gtest/gtest.h>

#include "../../tools/cli/stats.h"

namespace trtutils::cli {
namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(BenchmarkWarning, SteadyTimingsGiveNone) {
  EXPECT_EQ(unsteady_latency_warning(9.0, 17.9, 0), "");  // under 2x
  EXPECT_EQ(unsteady_latency_warning(9.0, 18.0, 0), "");  // exactly 2x
  EXPECT_EQ(unsteady_latency_warning(0.09, 0.3, 0), "");  // 3x, but 0.21 ms of jitter
}

TEST(BenchmarkWarning, UnsteadyTimingsNameTheCauses) {
  const std::string w = unsteady_latency_warning(9.0, 216.0, 0);
  EXPECT_TRUE(has(w, "p99 latency 216.000 ms is 24.0x the median 9.000 ms")) << w;
  EXPECT_TRUE(has(w, "other load on this machine")) << w;
  EXPECT_TRUE(has(w, "more threads than free cores (--threads 0 takes every core)")) << w;
  EXPECT_TRUE(has(w, "try --threads 1")) << w;
  const std::string four = unsteady_latency_warning(9.0, 19.0, 4);
  EXPECT_TRUE(has(four, "more threads than free cores;")) << four;
}

TEST(BenchmarkWarning, OneThreadIsNotToldToUseOneThread) {
  const std::string w = unsteady_latency_warning(9.0, 30.0, 1);
  EXPECT_TRUE(has(w, "other load on this machine")) << w;
  EXPECT_FALSE(has(w, "--threads")) << w;
}

}  // namespace
}  // namespace trtutils::cli
