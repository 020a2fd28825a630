#include "backends/cuda/kernel_switches.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

extern char** environ;  // NOLINT: POSIX

namespace trtutils::cuda {

namespace {

thread_local const KernelSwitches* t_switches = nullptr;

// Variables with the prefix that are not kernel switches.
const std::set<std::string>& not_switches() {
  static const std::set<std::string> s = {"TRTUTILS_CUDA_ARCHS", "TRTUTILS_CUDA_SYNC",
                                          "TRTUTILS_CUDA_MODELS", "TRTUTILS_CUDA_REPORT"};
  return s;
}

}  // namespace

SwitchScope::SwitchScope(const KernelSwitches* switches) : previous_(t_switches) {
  t_switches = switches;
}

SwitchScope::~SwitchScope() {
  t_switches = previous_;
}

const char* switch_value(const char* name) {
  if (const KernelSwitches* s = t_switches) {
    auto it = s->values.find(name);
    if (it != s->values.end()) return it->second.c_str();
    if (!s->use_environment) return nullptr;
  }
  return std::getenv(name);
}

const std::vector<std::string>& known_switches() {
  static const std::vector<std::string> names = {"TRTUTILS_CUDA_ATTENTION",
                                                 "TRTUTILS_CUDA_ATTENTION_FP8",
                                                 "TRTUTILS_CUDA_ATTENTION_FP8_ONE_PASS",
                                                 "TRTUTILS_CUDA_ATTENTION_FP8_RESIDENT",
                                                 "TRTUTILS_CUDA_ATTENTION_QOUT",
                                                 "TRTUTILS_CUDA_CHANNELS_LAST",
                                                 "TRTUTILS_CUDA_DEPTHWISE",
                                                 "TRTUTILS_CUDA_EPILOGUE_ROWS",
                                                 "TRTUTILS_CUDA_EPILOGUE_X4",
                                                 "TRTUTILS_CUDA_EPILOGUE_X8",
                                                 "TRTUTILS_CUDA_FP8_HALF_ACC",
                                                 "TRTUTILS_CUDA_FP8_OUT",
                                                 "TRTUTILS_CUDA_FUSED_CONV",
                                                 "TRTUTILS_CUDA_FUSION",
                                                 "TRTUTILS_CUDA_HALF_AS_FLOAT",
                                                 "TRTUTILS_CUDA_IGEMM",
                                                 "TRTUTILS_CUDA_INT8_CONV",
                                                 "TRTUTILS_CUDA_INT8_DEPTHWISE",
                                                 "TRTUTILS_CUDA_INT8_DEPTHWISE16",
                                                 "TRTUTILS_CUDA_INT8_DEPTHWISE_DP4A",
                                                 "TRTUTILS_CUDA_INT8_REQUANT",
                                                 "TRTUTILS_CUDA_LN_EPILOGUE",
                                                 "TRTUTILS_CUDA_LT_TIMING",
                                                 "TRTUTILS_CUDA_NHWC_MIN_BATCH",
                                                 "TRTUTILS_CUDA_PATCH_EMBED",
                                                 "TRTUTILS_CUDA_PATCH_GEMM",
                                                 "TRTUTILS_CUDA_POINTWISE_GEMM",
                                                 "TRTUTILS_CUDA_QPOINTWISE",
                                                 "TRTUTILS_CUDA_SMALL_C",
                                                 "TRTUTILS_CUDA_TMA_GEMM",
                                                 "TRTUTILS_CUDA_TRANSPOSE_TILED",
                                                 "TRTUTILS_CUDA_WGMMA"};
  return names;
}

KernelSwitches switches_from_environment() {
  KernelSwitches s;
  static constexpr const char kPrefix[] = "TRTUTILS_CUDA_";
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq || std::strncmp(*e, kPrefix, sizeof(kPrefix) - 1) != 0) continue;
    const std::string name(*e, static_cast<size_t>(eq - *e));
    if (!not_switches().count(name)) s.values[name] = eq + 1;
  }
  return s;
}

}  // namespace trtutils::cuda
