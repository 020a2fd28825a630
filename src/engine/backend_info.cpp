// backend_info (include/trtutils/platform.h): the CUDA backend's device status and the installed
// trtexec, for `trtutils info`. Here rather than in src/platform: it asks the backends.
#include <string>

#include "backends/cuda/cuda_executor.h"
#include "tensorrt/trtexec.h"
#include "trtutils/platform.h"

namespace trtutils {

std::vector<BackendInfo> backend_info() {
  std::vector<BackendInfo> r;
  r.push_back({.name = "cpu", .usable = true, .strongly_typed_supported = true, .detail = ""});
  const cuda::DeviceStatus d = cuda::device_status();
  r.push_back(
      {.name = "cuda",
       .usable = d.usable,
       .strongly_typed_supported = !cuda::supported_ops().empty(),
       .detail = d.usable ? d.name + " (SM " + std::to_string(d.sm) + "), " + d.libraries : d.why});
  const auto exe = tensorrt::find_trtexec();
  if (exe) {
    const auto v = tensorrt::query_trtexec_version(*exe);
    r.push_back({.name = "tensorrt",
                 .usable = v.known(),
                 .strongly_typed_supported = v.at_least(10, 1),
                 .detail = exe->string() + " (TensorRT " + std::to_string(v.major) + "." +
                           std::to_string(v.minor) + ")"});
  } else {
    r.push_back({.name = "tensorrt",
                 .usable = false,
                 .strongly_typed_supported = false,
                 .detail = "trtexec not found (PATH, /usr/src/tensorrt/bin, $TENSORRT_ROOT/bin)"});
  }
  return r;
}

}  // namespace trtutils
