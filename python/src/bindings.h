// The _trtutils extension module (pybind11): one bind_* per public header, each in its own file.
// The Python package (python/trtutils) wraps these with the original trtutils' names and keyword
// arguments; this layer maps types only: numpy <-> Tensor, trtutils::Error -> Python exceptions,
// and releases the GIL around every call that computes (build, quantize, calibration, execute).
#pragma once

#include <pybind11/pybind11.h>

namespace trtutils::python {

void bind_errors(pybind11::module_& m);         // errors.cpp: exception types + translator
void bind_dtypes(pybind11::module_& m);         // dtypes.cpp: DataType
void bind_platform(pybind11::module_& m);       // platform.cpp: PlatformInfo, log level
void bind_image_batcher(pybind11::module_& m);  // image_batcher.cpp
void bind_quantize(pybind11::module_& m);       // quantize.cpp
void bind_builder(pybind11::module_& m);        // builder.cpp: BuildConfig, build_engine
void bind_dla(pybind11::module_& m);            // dla.cpp: can_run_on_dla, build_dla_engine
void bind_engine(pybind11::module_& m);         // engine.cpp: Engine, ExecutionContext
void bind_cli(pybind11::module_& m);            // cli.cpp: the C++ CLI, in-process
void bind_console(pybind11::module_& m);        // console.cpp: logs and progress to sys.stderr

}  // namespace trtutils::python
