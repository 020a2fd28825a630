// can_run_on_dla (the per-layer report against NVIDIA's DLA restrictions) and build_dla_engine,
// which runs without the GIL.
#include "trtutils/dla.h"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "bindings.h"

namespace py = pybind11;

namespace trtutils::python {

namespace {

void bind_report(py::module_& m) {
  using builder::DlaChunkReport;
  using builder::DlaLayerReport;
  using builder::DlaReport;
  py::class_<DlaLayerReport>(m, "DlaLayerReport")
      .def_readonly("index", &DlaLayerReport::index)
      .def_readonly("name", &DlaLayerReport::name)
      .def_readonly("op", &DlaLayerReport::op)
      .def_readonly("dla", &DlaLayerReport::dla)
      .def_readonly("rule", &DlaLayerReport::rule)
      .def_readonly("detail", &DlaLayerReport::detail)
      .def_readonly("limit", &DlaLayerReport::limit)
      .def_readonly("source", &DlaLayerReport::source);
  py::class_<DlaChunkReport>(m, "DlaChunkReport")
      .def_readonly("begin", &DlaChunkReport::begin)
      .def_readonly("end", &DlaChunkReport::end)
      .def_readonly("first", &DlaChunkReport::first)
      .def_readonly("last", &DlaChunkReport::last)
      .def_property_readonly("layers", &DlaChunkReport::layers);
  py::class_<DlaReport>(m, "DlaReport")
      .def_readonly("layers", &DlaReport::layers)
      .def_readonly("chunks", &DlaReport::chunks)
      .def_readonly("selected", &DlaReport::selected)
      .def_readonly("dla_layers", &DlaReport::dla_layers);
}

void bind_config(py::module_& m) {
  using builder::DlaCheckOptions;
  using builder::DlaConfig;
  py::class_<DlaCheckOptions>(m, "DlaCheckOptions")
      .def(py::init<>())
      .def_readwrite("shapes", &DlaCheckOptions::shapes)
      .def_readwrite("max_chunks", &DlaCheckOptions::max_chunks)
      .def_readwrite("min_layers", &DlaCheckOptions::min_layers);
  py::class_<DlaConfig>(m, "DlaConfig")
      .def(py::init<>())
      .def_readwrite("dla_core", &DlaConfig::dla_core)
      .def_readwrite("max_chunks", &DlaConfig::max_chunks)
      .def_readwrite("min_layers", &DlaConfig::min_layers)
      .def_readwrite("dry_run", &DlaConfig::dry_run)
      .def_readwrite("build", &DlaConfig::build);
  using R = builder::DlaBuildResult;
  py::class_<R>(m, "DlaBuildResult")
      .def_readonly("build", &R::build)
      .def_readonly("chunks", &R::chunks)
      .def_readonly("dla_layers", &R::dla_layers)
      .def_readonly("other_layers", &R::other_layers)
      .def_readonly("emulated", &R::emulated)
      .def_readonly("emulation", &R::emulation);
}

}  // namespace

void bind_dla(py::module_& m) {
  bind_report(m);
  bind_config(m);
  m.def("can_run_on_dla", &builder::can_run_on_dla, py::arg("onnx"), py::arg("options"),
        py::call_guard<py::gil_scoped_release>());
  m.def("build_dla_engine", &builder::build_dla_engine, py::arg("onnx"), py::arg("output"),
        py::arg("config"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace trtutils::python
