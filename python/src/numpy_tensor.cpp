// numpy <-> Tensor (numpy_tensor.h).
#include "numpy_tensor.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>

#include "trtutils/status.h"

namespace py = pybind11;

namespace trtutils::python {

namespace {

// numpy's type character -> DataType, for the dtypes both have.
std::optional<DataType> shared_dtype(const py::dtype& dt) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'b' && size == 1) return DataType::kBool;
  if (kind == 'f') {
    if (size == 2) return DataType::kFloat16;
    if (size == 4) return DataType::kFloat32;
    if (size == 8) return DataType::kFloat64;
  }
  if (kind == 'i') {
    if (size == 1) return DataType::kInt8;
    if (size == 2) return DataType::kInt16;
    if (size == 4) return DataType::kInt32;
    if (size == 8) return DataType::kInt64;
  }
  if (kind == 'u') {
    if (size == 1) return DataType::kUInt8;
    if (size == 2) return DataType::kUInt16;
    if (size == 4) return DataType::kUInt32;
    if (size == 8) return DataType::kUInt64;
  }
  return std::nullopt;
}

// Holds a reference to the array for as long as a Tensor shares its memory; the last Tensor
// may go away on a thread that does not hold the GIL.
std::shared_ptr<uint8_t> keep_alive(const py::array& array) {
  PyObject* owner = array.ptr();
  Py_INCREF(owner);
  auto* data = static_cast<uint8_t*>(const_cast<void*>(array.data()));
  return std::shared_ptr<uint8_t>(data, [owner](uint8_t*) {
    py::gil_scoped_acquire gil;
    Py_DECREF(owner);
  });
}

bool numpy_has(DataType t) {
  constexpr DataType kShared[] = {DataType::kBool,    DataType::kFloat16, DataType::kFloat32,
                                  DataType::kFloat64, DataType::kInt8,    DataType::kInt16,
                                  DataType::kInt32,   DataType::kInt64,   DataType::kUInt8,
                                  DataType::kUInt16,  DataType::kUInt32,  DataType::kUInt64};
  return std::find(std::begin(kShared), std::end(kShared), t) != std::end(kShared);
}

}  // namespace

py::dtype numpy_dtype(DataType t) {
  switch (t) {
    case DataType::kBool:
      return py::dtype("?");
    case DataType::kFloat16:
      return py::dtype("f2");
    case DataType::kFloat32:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      return py::dtype("f4");
    case DataType::kFloat64:
      return py::dtype("f8");
    case DataType::kInt8:
    case DataType::kInt4:
      return py::dtype("i1");
    case DataType::kInt16:
      return py::dtype("i2");
    case DataType::kInt32:
      return py::dtype("i4");
    case DataType::kInt64:
      return py::dtype("i8");
    case DataType::kUInt8:
    case DataType::kUInt4:
      return py::dtype("u1");
    case DataType::kUInt16:
      return py::dtype("u2");
    case DataType::kUInt32:
      return py::dtype("u4");
    case DataType::kUInt64:
      return py::dtype("u8");
    case DataType::kUndefined:
    case DataType::kString:
      break;
  }
  throw py::type_error(std::string("numpy has no dtype for trtutils ") +
                       std::string(dtype_name(t)));
}

Tensor array_to_tensor(const py::array& array) {
  const std::optional<DataType> dtype = shared_dtype(array.dtype());
  if (!dtype)
    throw py::type_error("numpy dtype " + py::str(array.dtype()).cast<std::string>() +
                         " has no trtutils equivalent");
  Shape shape(array.shape(), array.shape() + array.ndim());
  constexpr int kWrappable = static_cast<int>(py::array::c_style) |
                             static_cast<int>(py::detail::npy_api::NPY_ARRAY_ALIGNED_);
  if ((array.flags() & kWrappable) == kWrappable)
    return Tensor::wrap(*dtype, std::move(shape), keep_alive(array));
  // Strided, Fortran-order or misaligned: numpy makes the C-order copy.
  const py::array c_order = py::array::ensure(array, py::array::c_style | py::array::forcecast);
  if (!c_order) throw py::error_already_set();
  Tensor t(*dtype, std::move(shape));
  if (t.nbytes()) std::memcpy(t.raw(), c_order.data(), t.nbytes());
  return t;
}

py::array tensor_to_array(const Tensor& tensor) {
  const std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  const DataType t = tensor.dtype();
  if (numpy_has(t)) {
    auto* holder = new Tensor(tensor);
    py::capsule owner(holder, [](void* p) { delete static_cast<Tensor*>(p); });
    return py::array(numpy_dtype(t), shape, {}, tensor.numel() ? holder->raw() : nullptr, owner);
  }
  py::array out(numpy_dtype(t), shape);
  auto* bytes = static_cast<uint8_t*>(out.mutable_data());
  const auto item = out.itemsize();
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    const double v = tensor.at_double(i);
    if (item == 4) {
      const float f = static_cast<float>(v);
      std::memcpy(bytes + i * 4, &f, 4);
    } else {
      bytes[i] = static_cast<uint8_t>(static_cast<int8_t>(v));
    }
  }
  return out;
}

}  // namespace trtutils::python
