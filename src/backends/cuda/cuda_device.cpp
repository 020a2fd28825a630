// device_status(): whether this process can run the CUDA backend. cudart is linked statically
// and loads the driver (libcuda.so.1) on first use, and cuBLAS(Lt) / cuDNN are loaded only once
// a device is found (cuda_libs.cpp), so without a driver, a device or those libraries the calls
// below return errors instead of the program failing to start.
#include <fmt/format.h>

#include <algorithm>

#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/cuda_ops.h"

namespace trtutils::cuda {

namespace {

std::string version_text(size_t v, size_t major_div, size_t minor_div) {
  return fmt::format("{}.{}.{}", v / major_div, (v % major_div) / minor_div, v % minor_div);
}

DeviceStatus probe() {
  DeviceStatus s;
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  s.libraries = fmt::format("CUDA runtime {}.{}", rt / 1000, (rt % 1000) / 10);
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (e == cudaErrorInsufficientDriver) {
      int drv = 0;
      cudaDriverGetVersion(&drv);
      s.why = drv == 0 ? "no CUDA driver"
                       : fmt::format(
                             "the CUDA driver ({}.{}) is older than the "
                             "runtime this build uses ({}.{})",
                             drv / 1000, (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10);
    } else if (e == cudaErrorNoDevice) {
      s.why = "no CUDA device";
    } else {
      s.why =
          fmt::format("CUDA is not usable: {} ({})", cudaGetErrorName(e), cudaGetErrorString(e));
    }
    return s;
  }
  if (count == 0) {
    s.why = "no CUDA device";
    return s;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    s.why = "cannot query CUDA device 0";
    return s;
  }
  s.name = prop.name;
  s.sm = prop.major * 10 + prop.minor;
  const cudaError_t k = k::probe_kernels();
  if (k != cudaSuccess) {
    (void)cudaGetLastError();
    s.why = fmt::format(
        "{} (SM {}) cannot run this build's kernels ({}): rebuild with "
        "-DTRTUTILS_CUDA_ARCHS including {}",
        s.name, s.sm, cudaGetErrorString(k), s.sm);
    return s;
  }
  // cuBLAS(Lt) and cuDNN only now that a device can use them (cuda_libs.cpp).
  if (std::string why = load_libraries(); !why.empty()) {
    s.why = why;
    return s;
  }
  s.libraries +=
      fmt::format(", cuBLASLt {}, cuDNN {}", version_text(cublasLtGetVersion(), 10000, 100),
                  version_text(cudnnGetVersion(), 10000, 100));
  if (cudnnGetVersion() / 10000 != CUDNN_MAJOR) {
    s.why = fmt::format("cuDNN {} is loaded but this build needs cuDNN {}.x",
                        version_text(cudnnGetVersion(), 10000, 100), CUDNN_MAJOR);
    return s;
  }
  s.usable = true;
  return s;
}

}  // namespace

DeviceStatus device_status() {
  static const DeviceStatus s = [] {
    try {
      return probe();
    } catch (const std::exception& e) {
      DeviceStatus d;
      d.why = e.what();
      return d;
    }
  }();
  return s;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> v;
  for (const auto& [name, f] : op_table()) v.push_back(name);
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace trtutils::cuda
