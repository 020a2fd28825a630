// PYBIND11_MODULE: registers every part (bindings.h). Errors first: the translator must exist
// before any other part can throw at import.
#include "bindings.h"

PYBIND11_MODULE(_trtutils, m) {
  m.doc() = "trtutils (C++) bindings: ONNX -> quantize -> engine -> run, without TensorRT";
  m.attr("__version__") = TRTUTILS_VERSION;
  trtutils::python::bind_errors(m);
  trtutils::python::bind_dtypes(m);
  trtutils::python::bind_platform(m);
  trtutils::python::bind_image_batcher(m);
  trtutils::python::bind_quantize(m);
  trtutils::python::bind_builder(m);
  trtutils::python::bind_dla(m);
  trtutils::python::bind_engine(m);
  trtutils::python::bind_cli(m);
  trtutils::python::bind_console(m);
}
