// backends/cuda/kernel_switches.h: which value a kernel switch has on a thread: the scope's
// fixed value, the environment only when the scope reads it (or outside any scope), nested
// scopes restored; the known names sorted (the builder searches them).
#include "backends/cuda/kernel_switches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

namespace trtutils::cuda {
namespace {

std::string value(const char* name) {
  const char* v = switch_value(name);
  return v ? v : "(default)";
}

TEST(KernelSwitches, ScopesDecideAndTheEnvironmentOnlyWhenAllowed) {
  ::setenv("TRTUTILS_CUDA_FUSION", "0", 1);
  EXPECT_EQ(value("TRTUTILS_CUDA_FUSION"), "0");  // no scope: an Executor made directly
  const KernelSwitches engine{{{"TRTUTILS_CUDA_IGEMM", "force"}}, false};
  {
    const SwitchScope s(&engine);
    EXPECT_EQ(value("TRTUTILS_CUDA_FUSION"), "(default)");  // an engine ignores the environment
    EXPECT_EQ(value("TRTUTILS_CUDA_IGEMM"), "force");
    const KernelSwitches dev{{{"TRTUTILS_CUDA_IGEMM", "0"}}, true};
    {
      const SwitchScope inner(&dev);
      EXPECT_EQ(value("TRTUTILS_CUDA_IGEMM"), "0");
      EXPECT_EQ(value("TRTUTILS_CUDA_FUSION"), "0");
    }
    EXPECT_EQ(value("TRTUTILS_CUDA_IGEMM"), "force");
    // Another thread has its own (none).
    std::string other;
    std::thread([&] { other = value("TRTUTILS_CUDA_IGEMM"); }).join();
    EXPECT_EQ(other, "(default)");
  }
  EXPECT_EQ(value("TRTUTILS_CUDA_IGEMM"), "(default)");
  const KernelSwitches env = switches_from_environment();
  EXPECT_EQ(env.values.at("TRTUTILS_CUDA_FUSION"), "0");
  ::unsetenv("TRTUTILS_CUDA_FUSION");
}

TEST(KernelSwitches, KnownNamesAreSortedAndSkipTheNonSwitches) {
  const auto& k = known_switches();
  EXPECT_TRUE(std::is_sorted(k.begin(), k.end()));
  EXPECT_TRUE(std::binary_search(k.begin(), k.end(), "TRTUTILS_CUDA_WGMMA"));
  ::setenv("TRTUTILS_CUDA_SYNC", "1", 1);
  EXPECT_FALSE(switches_from_environment().values.count("TRTUTILS_CUDA_SYNC"));
  ::unsetenv("TRTUTILS_CUDA_SYNC");
}

}  // namespace
}  // namespace trtutils::cuda
