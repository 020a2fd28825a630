// PlatformInfo (the seed's IS_BLACKWELL / STRONGLY_TYPED_SUPPORTED and the rest of `trtutils
// info`), the library's log level, and the process-wide memory limit.
#include "trtutils/platform.h"

#include <pybind11/stl.h>

#include <algorithm>

#include "bindings.h"
#include "trtutils/logging.h"
#include "trtutils/tensor.h"

namespace py = pybind11;

namespace trtutils::python {

void bind_platform(py::module_& m) {
  py::class_<GpuInfo>(m, "GpuInfo")
      .def_readonly("name", &GpuInfo::name)
      .def_readonly("sm_major", &GpuInfo::sm_major)
      .def_readonly("sm_minor", &GpuInfo::sm_minor)
      .def_readonly("total_memory_bytes", &GpuInfo::total_memory_bytes);
  py::class_<PlatformInfo>(m, "PlatformInfo")
      .def_readonly("version", &PlatformInfo::version)
      .def_readonly("cpu_model", &PlatformInfo::cpu_model)
      .def_readonly("cpu_cores", &PlatformInfo::cpu_cores)
      .def_readonly("gpu_count", &PlatformInfo::gpu_count)
      .def_readonly("gpu", &PlatformInfo::gpu)
      .def_readonly("gpu_status", &PlatformInfo::gpu_status)
      .def_readonly("cuda_toolkit_at_build", &PlatformInfo::cuda_toolkit_at_build)
      .def_readonly("is_jetson", &PlatformInfo::is_jetson)
      .def_readonly("board_model", &PlatformInfo::board_model)
      .def_readonly("is_blackwell", &PlatformInfo::is_blackwell)
      .def_readonly("strongly_typed_supported", &PlatformInfo::strongly_typed_supported);
  m.def(
      "platform_info", [] { return platform_info(); },
      "This machine: CPU, the first CUDA GPU, the seed's flags (queried once).");
  m.def(
      "set_log_level",
      [](int level) { set_log_level(static_cast<LogLevel>(std::clamp(level, 0, 3))); },
      py::arg("level"), "0 errors, 1 warnings (the default), 2 info, 3 verbose (clamped).");
  m.def("log_level", [] { return static_cast<int>(log_level()); });
  m.def("set_memory_limit", &set_memory_limit, py::arg("bytes"),
        "The largest allocation the library makes (the CLI's --max_memory).");
  m.def("memory_limit", &memory_limit);
}

}  // namespace trtutils::python
