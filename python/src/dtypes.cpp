// DataType as a Python enum whose member names are numpy/ONNX's ("float32", "int8",
// "float8e4m3fn", ...), and the name parser the CLI uses ("fp16", "half", "fp8", ...).
#include <pybind11/stl.h>

#include "bindings.h"
#include "numpy_tensor.h"
#include "trtutils/dtype.h"

namespace py = pybind11;

namespace trtutils::python {

void bind_dtypes(py::module_& m) {
  py::enum_<DataType> e(m, "DataType", "Element types (values are ONNX's TensorProto codes).");
  constexpr DataType kAll[] = {
      DataType::kUndefined,      DataType::kFloat32,        DataType::kUInt8,
      DataType::kInt8,           DataType::kUInt16,         DataType::kInt16,
      DataType::kInt32,          DataType::kInt64,          DataType::kString,
      DataType::kBool,           DataType::kFloat16,        DataType::kFloat64,
      DataType::kUInt32,         DataType::kUInt64,         DataType::kBFloat16,
      DataType::kFloat8E4M3FN,   DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
      DataType::kFloat8E5M2FNUZ, DataType::kUInt4,          DataType::kInt4};
  for (DataType t : kAll) e.value(std::string(dtype_name(t)).c_str(), t);
  m.def(
      "dtype_from_name",
      [](const std::string& name) {
        const auto t = dtype_from_name(name);
        if (!t) throw py::value_error("unknown dtype '" + name + "'");
        return *t;
      },
      py::arg("name"), "'float32', 'fp16', 'half', 'int8', 'fp8', ... -> DataType (ValueError).");
  m.def(
      "dtype_name", [](DataType t) { return std::string(dtype_name(t)); }, py::arg("dtype"));
  m.def("numpy_dtype", &numpy_dtype, py::arg("dtype"),
        "The numpy dtype arrays of this DataType come back as (float32 for bfloat16 / float8).");
}

}  // namespace trtutils::python
