// What this machine offers: the library version, the CPU, the first CUDA GPU if any (found at
// run time through the driver library, so a binary built with CUDA still runs without a GPU),
// and the seed's platform flags.
#pragma once

#include <string>

namespace trtutils {

struct GpuInfo {
  std::string name;
  int sm_major = 0;
  int sm_minor = 0;
  size_t total_memory_bytes = 0;
};

struct PlatformInfo {
  std::string version;                 // trtutils version
  std::string cpu_model;               // from /proc/cpuinfo
  int cpu_cores = 0;                   // online logical cores
  int gpu_count = 0;                   // CUDA devices seen by the driver (0 without a driver)
  GpuInfo gpu;                         // device 0 when gpu_count > 0
  std::string gpu_status;              // why no GPU was found, when gpu_count == 0
  bool cuda_toolkit_at_build = false;  // the CUDA toolkit was found when this binary was built
  bool is_jetson = false;              // /etc/nv_tegra_release, or a Jetson device-tree model
  std::string board_model;             // /proc/device-tree/model where present
  // IS_BLACKWELL: true on SM 10.0+ GPUs (compute capability >= 100).
  bool is_blackwell = false;
  // STRONGLY_TYPED_SUPPORTED: our builder always supports strongly typed networks.
  bool strongly_typed_supported = true;
};

// Queries once and caches the answer.
const PlatformInfo& platform_info();

}  // namespace trtutils
