#include "trtutils/platform.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace trtutils {

namespace {

std::string read_cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(line.find_first_not_of(' ', p + 1));
    }
  }
  return "unknown";
}

// The CUDA driver API has a stable C ABI; it is loaded lazily so that no CUDA library is needed
// to run the CPU backend.
void query_gpu(PlatformInfo& info) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    info.gpu_status = "no CUDA driver (libcuda.so.1 not found)";
    return;
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using NameFn = int (*)(char*, int, int);
  using AttrFn = int (*)(int*, int, int);
  using MemFn = int (*)(size_t*, int);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  auto get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
  auto name = reinterpret_cast<NameFn>(dlsym(lib, "cuDeviceGetName"));
  auto attr = reinterpret_cast<AttrFn>(dlsym(lib, "cuDeviceGetAttribute"));
  auto mem = reinterpret_cast<MemFn>(dlsym(lib, "cuDeviceTotalMem_v2"));
  if (!init || !count || !get || !name || !attr) {
    info.gpu_status = "CUDA driver library lacks expected entry points";
    return;
  }
  if (init(0) != 0) {
    info.gpu_status = "CUDA driver failed to initialise (no device?)";
    return;
  }
  int n = 0;
  if (count(&n) != 0 || n == 0) {
    info.gpu_status = "no CUDA device";
    return;
  }
  info.gpu_count = n;
  int dev = 0;
  get(&dev, 0);
  char buf[256] = {};
  name(buf, sizeof(buf) - 1, dev);
  info.gpu.name = buf;
  constexpr int kCcMajor = 75, kCcMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*
  attr(&info.gpu.sm_major, kCcMajor, dev);
  attr(&info.gpu.sm_minor, kCcMinor, dev);
  if (mem) mem(&info.gpu.total_memory_bytes, dev);
  info.is_blackwell = info.gpu.sm_major >= 10;
}

}  // namespace

const PlatformInfo& platform_info() {
  static const PlatformInfo info = [] {
    PlatformInfo p;
    p.version = TRTUTILS_VERSION;
    p.cpu_model = read_cpu_model();
    p.cpu_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
#ifdef TRTUTILS_HAVE_CUDA
    p.cuda_toolkit_at_build = true;
#endif
    std::error_code ec;
    p.is_jetson = std::filesystem::exists("/etc/nv_tegra_release", ec);
    // The device-tree model names the board ("NVIDIA Jetson AGX Orin Developer Kit").
    if (std::ifstream dt("/proc/device-tree/model"); dt) {
      std::string model;
      std::getline(dt, model, '\0');
      if (model.find("Jetson") != std::string::npos ||
          model.find("NVIDIA Orin") != std::string::npos)
        p.is_jetson = true;
      p.board_model = model;
    }
    query_gpu(p);
    return p;
  }();
  return info;
}

}  // namespace trtutils
