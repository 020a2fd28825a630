// What this machine offers: the library version, the CPU, the first CUDA GPU if any (found at
// run time through the driver library, so a binary built with CUDA still runs without a GPU),
// and the seed's platform flags.
#pragma once

#include <string>
#include <vector>

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

// One way this build can run or build engines here (`trtutils info` lists them).
struct BackendInfo {
  std::string name{};                     // "cpu", "cuda" or "tensorrt"
  bool usable = false;                    // it can run (cuda: a device) or build (tensorrt) here
  bool strongly_typed_supported = false;  // STRONGLY_TYPED_SUPPORTED for that backend
  // What was found ("NVIDIA H100 (SM 90), CUDA runtime 13.0, ...", "/usr/bin/trtexec (TensorRT
  // 10.3)"), or why it is not usable; empty for cpu.
  std::string detail{};
};
// cpu, cuda, tensorrt, in that order. Not cached: the tensorrt entry looks for trtexec
// (trtutils/tensorrt.h) and runs `trtexec --help` for its version, which throws
// Error(kNotSupported) when a trtexec is found whose version cannot be read.
std::vector<BackendInfo> backend_info();

}  // namespace trtutils
