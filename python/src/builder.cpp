// BuildConfig (every field of builder.h), TensorFormat, BuildResult, build_engine and the seed's
// rules alone (validate_build_config). build_engine runs without the GIL.
#include "trtutils/builder.h"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "bindings.h"

namespace py = pybind11;

namespace trtutils::python {

namespace {

void bind_tensor_format(py::module_& m) {
  using builder::TensorFormat;
  py::class_<TensorFormat>(m, "TensorFormat")
      .def(py::init([](DataType dtype, std::string format) {
             return TensorFormat{dtype, std::move(format)};
           }),
           py::arg("dtype") = DataType::kUndefined, py::arg("format") = "LINEAR")
      .def_readwrite("dtype", &TensorFormat::dtype)
      .def_readwrite("format", &TensorFormat::format)
      .def("__repr__", [](const TensorFormat& f) {
        return "TensorFormat(" + std::string(dtype_name(f.dtype)) + ", " + f.format + ")";
      });
  m.def("parse_tensor_format", &builder::parse_tensor_format, py::arg("text"),
        "'fp16:chw4', 'int8:LINEAR', 'HWC' -> TensorFormat (InvalidArgumentError otherwise).");
  m.def("tensor_format_names", &builder::tensor_format_names);
}

void bind_config(py::module_& m) {
  using C = builder::BuildConfig;
  py::class_<C>(m, "BuildConfig")
      .def(py::init<>())
      .def_readwrite("strongly_typed", &C::strongly_typed)
      .def_readwrite("fp16", &C::fp16)
      .def_readwrite("int8", &C::int8)
      .def_readwrite("fp8", &C::fp8)
      .def_readwrite("tf32", &C::tf32)
      .def_readwrite("calibration_cache", &C::calibration_cache)
      .def_readwrite("calibration_data", &C::calibration_data)
      .def_readwrite("data_batcher", &C::data_batcher)
      .def_readwrite("calibration_batch_size", &C::calibration_batch_size)
      .def_readwrite("calibration_algorithm", &C::calibration_algorithm)
      .def_readwrite("layer_precision", &C::layer_precision)
      .def_readwrite("precision_constraints", &C::precision_constraints)
      .def_readwrite("input_tensor_formats", &C::input_tensor_formats)
      .def_readwrite("output_tensor_formats", &C::output_tensor_formats)
      .def_readwrite("shapes", &C::shapes)
      .def_readwrite("min_shapes", &C::min_shapes)
      .def_readwrite("opt_shapes", &C::opt_shapes)
      .def_readwrite("max_shapes", &C::max_shapes)
      .def_readwrite("workspace", &C::workspace)
      .def_readwrite("optimization_level", &C::optimization_level)
      .def_readwrite("timing_cache", &C::timing_cache)
      .def_readwrite("cache", &C::cache)
      .def_readwrite("verbose", &C::verbose)
      .def_readwrite("backend", &C::backend)
      .def_readwrite("target_sm", &C::target_sm)
      .def_readwrite("no_fallback", &C::no_fallback)
      .def_readwrite("allow_float_fallback", &C::allow_float_fallback)
      .def_readwrite("gpu_switches", &C::gpu_switches)
      .def_readwrite("num_threads", &C::num_threads)
      .def_readwrite("progress", &C::progress);
}

void bind_result(py::module_& m) {
  using R = builder::BuildResult;
  py::class_<R>(m, "BuildResult")
      .def_readonly("engine_path", &R::engine_path)
      .def_readonly("from_cache", &R::from_cache)
      .def_readonly("calibration_cache_written", &R::calibration_cache_written)
      .def_readonly("calibration_preprocessing", &R::calibration_preprocessing)
      .def_readonly("warnings", &R::warnings)
      .def_readonly("num_layers", &R::num_layers)
      .def_readonly("layers_per_precision", &R::layers_per_precision)
      .def_readonly("fallback_layers", &R::fallback_layers)
      .def_readonly("seconds", &R::seconds);
}

}  // namespace

void bind_builder(py::module_& m) {
  bind_tensor_format(m);
  bind_config(m);
  bind_result(m);
  m.def("build_engine", &builder::build_engine, py::arg("onnx"), py::arg("output"),
        py::arg("config"), py::call_guard<py::gil_scoped_release>(),
        "Validates the config (the seed's rules: ValueError), builds, writes `output` "
        "atomically; nothing is written on any error.");
  m.def("validate_build_config", &builder::validate_build_config, py::arg("config"),
        py::arg("target_sm"), "The seed's rules alone: ValueError, or the warnings.");
}

}  // namespace trtutils::python
