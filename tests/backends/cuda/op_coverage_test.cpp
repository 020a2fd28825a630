// The op list's rooms (issue 29): every op the CUDA table lists is named in a GPU test (a
// test file under tests/backends/cuda mentions it as "Op"), and has a CPU kernel (the
// reference the GPU tests compare with, and the per-layer fallback). Needs no device.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/cpu/kernel_registry.h"
#include "backends/cuda/cuda_executor.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

std::string gpu_test_sources() {
  std::string all;
  const fs::path dir = fs::path(TRTUTILS_TEST_DATA_DIR).parent_path() / "backends" / "cuda";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".cpp" && e.path().extension() != ".h") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    all += ss.str();
  }
  return all;
}

TEST(CudaOpCoverage, EveryGpuOpIsNamedInAGpuTest) {
  const std::vector<std::string> ops = cuda::supported_ops();
  if (ops.empty()) GTEST_SKIP() << "built without the CUDA backend";
  const std::string sources = gpu_test_sources();
  std::vector<std::string> missing;
  for (const std::string& op : ops) {
    const size_t sep = op.rfind("::");
    const std::string name = sep == std::string::npos ? op : op.substr(sep + 2);
    if (sources.find('"' + name + '"') == std::string::npos) missing.push_back(op);
  }
  EXPECT_TRUE(missing.empty()) << "CUDA ops no test under tests/backends/cuda names: "
                               << ::testing::PrintToString(missing);
}

TEST(CudaOpCoverage, EveryGpuOpButTheFusionsHasACpuKernel) {
  const std::vector<std::string> ops = cuda::supported_ops();
  if (ops.empty()) GTEST_SKIP() << "built without the CUDA backend";
  std::vector<std::string> missing;
  for (const std::string& op : ops) {
    const size_t sep = op.rfind("::");
    const std::string domain = sep == std::string::npos ? "" : op.substr(0, sep);
    if (domain == "com.trtutils.cuda") continue;  // the GPU's own fusions (fusion/)
    const std::string name = sep == std::string::npos ? op : op.substr(sep + 2);
    if (!cpu::KernelRegistry::instance().find(domain, name)) missing.push_back(op);
  }
  EXPECT_TRUE(missing.empty()) << "CUDA ops without a CPU kernel: "
                               << ::testing::PrintToString(missing);
}

}  // namespace
}  // namespace trtutils
