// Engine (load, IO bindings, layer table, recorded build info) and ExecutionContext.execute:
// numpy arrays in and out, zero-copy where the layout allows (numpy_tensor.h), the GIL released
// while the engine runs.
#include "trtutils/engine.h"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "bindings.h"
#include "numpy_tensor.h"
#include "trtutils/engine_inspect.h"

namespace py = pybind11;

namespace trtutils::python {

namespace {

void bind_infos(py::module_& m) {
  using T = EngineTensorInfo;
  py::class_<T>(m, "EngineTensorInfo")
      .def_readonly("name", &T::name)
      .def_readonly("dtype", &T::dtype)
      .def_readonly("shape", &T::shape)
      .def_readonly("dim_names", &T::dim_names)
      .def_readonly("min_shape", &T::min_shape)
      .def_readonly("opt_shape", &T::opt_shape)
      .def_readonly("max_shape", &T::max_shape)
      .def_readonly("format", &T::format);
  using L = EngineLayerInfo;
  py::class_<L>(m, "EngineLayerInfo")
      .def_readonly("index", &L::index)
      .def_readonly("name", &L::name)
      .def_readonly("op", &L::op)
      .def_readonly("precision", &L::precision)
      .def_readonly("device", &L::device)
      .def_readonly("kernel", &L::kernel)
      .def_readonly("tactic", &L::tactic)
      .def_readonly("layout", &L::layout)
      .def_readonly("inputs", &L::inputs)
      .def_readonly("outputs", &L::outputs)
      .def_readonly("input_shapes", &L::input_shapes)
      .def_readonly("output_shapes", &L::output_shapes);
  py::class_<LayerTiming>(m, "LayerTiming")
      .def_readonly("name", &LayerTiming::name)
      .def_readonly("op", &LayerTiming::op)
      .def_readonly("total_ms", &LayerTiming::total_ms)
      .def_readonly("calls", &LayerTiming::calls)
      .def_readonly("kernel", &LayerTiming::kernel);
  py::class_<IoTimes>(m, "IoTimes")
      .def_readonly("h2d_ms", &IoTimes::h2d_ms)
      .def_readonly("compute_ms", &IoTimes::compute_ms)
      .def_readonly("d2h_ms", &IoTimes::d2h_ms);
}

// name -> array: the feeds are made with the GIL, the run without it, the outputs with it.
py::dict execute(ExecutionContext& ctx, const py::dict& inputs) {
  std::map<std::string, Tensor> feeds;
  for (const auto& [name, value] : inputs) {
    const py::array array = py::array::ensure(value);
    if (!array) throw py::type_error("input '" + py::cast<std::string>(name) + "' is not an array");
    feeds.emplace(py::cast<std::string>(name), array_to_tensor(array));
  }
  std::map<std::string, Tensor> outputs;
  {
    py::gil_scoped_release release;
    outputs = ctx.execute(feeds);
  }
  py::dict result;
  for (const auto& [name, t] : outputs) result[py::str(name)] = tensor_to_array(t);
  return result;
}

void bind_context(py::module_& m) {
  py::class_<ExecutionContext>(m, "ExecutionContext")
      .def("execute", &execute, py::arg("inputs"),
           "{input name: array} -> {output name: array}; InvalidArgumentError naming an input "
           "of the wrong dtype or shape.")
      .def_property_readonly("profile", &ExecutionContext::profile)
      .def_property_readonly("peak_activation_bytes", &ExecutionContext::peak_activation_bytes)
      .def_property_readonly("weight_bytes", &ExecutionContext::weight_bytes)
      .def_property_readonly("last_io_times", &ExecutionContext::last_io_times);
}

void bind_engine_class(py::module_& m) {
  py::class_<Engine, std::shared_ptr<Engine>>(m, "Engine")
      .def_static(
          "load",
          [](const std::filesystem::path& path, const std::string& backend) {
            py::gil_scoped_release release;
            return Engine::load(path, {.backend = backend});
          },
          py::arg("path"), py::arg("backend") = "auto",
          "Loads (and checks) an engine file; backend 'cpu', 'cuda' or 'auto'.")
      .def_property_readonly("inputs", &Engine::inputs)
      .def_property_readonly("outputs", &Engine::outputs)
      .def_property_readonly("layers", &Engine::layers)
      .def_property_readonly("backend", &Engine::backend)
      .def_property_readonly("runtime_backend", &Engine::runtime_backend)
      .def_property_readonly("has_gpu_plan", &Engine::has_gpu_plan)
      .def_property_readonly("target_sm", &Engine::target_sm)
      .def_property_readonly("strongly_typed", &Engine::strongly_typed)
      .def_property_readonly("weight_bytes", &Engine::weight_bytes)
      .def_property_readonly("device_weight_bytes", &Engine::device_weight_bytes)
      .def_property_readonly("activation_arena_bytes", &Engine::activation_arena_bytes)
      .def_property_readonly("info_json", &Engine::info_json)
      .def_property_readonly("format_version", &Engine::format_version)
      .def_property_readonly("producer", &Engine::producer)
      .def_property_readonly("inspect_json", &engine_inspect_json,
                             "engine_inspect_json(): what `trtutils inspect --json` prints")
      .def_property_readonly("path", &Engine::path)
      .def(
          "create_execution_context",
          [](const Engine& e, int num_threads, bool profile, bool cuda_graph,
             const std::string& timing_cache) {
            py::gil_scoped_release release;
            return e.create_execution_context({.num_threads = num_threads,
                                               .profile = profile,
                                               .cuda_graph = cuda_graph,
                                               .timing_cache = timing_cache});
          },
          py::arg("num_threads") = 0, py::arg("profile") = false, py::arg("cuda_graph") = true,
          py::arg("timing_cache") = "", py::keep_alive<0, 1>());
}

}  // namespace

void bind_engine(py::module_& m) {
  bind_infos(m);
  bind_context(m);
  bind_engine_class(m);
}

}  // namespace trtutils::python
