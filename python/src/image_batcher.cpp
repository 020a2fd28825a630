// ImageBatcherOptions (fields as image_batcher.h; enum fields as their names) and ImageBatcher:
// next_batch() and save_calibration_data() run without the GIL (decoding is on the batcher's
// own thread pool).
#include "trtutils/image_batcher.h"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "bindings.h"
#include "numpy_tensor.h"
#include "trtutils/status.h"

namespace py = pybind11;

namespace trtutils::python {

namespace {

template <typename Enum>
Enum parse_name(std::optional<Enum> (*from_name)(std::string_view), const std::string& name,
                const char* what) {
  const std::optional<Enum> value = from_name(name);
  if (!value)
    throw Error(ErrorCode::kInvalidArgument, std::string("unknown ") + what + " '" + name + "'");
  return *value;
}

void bind_options(py::module_& m) {
  using O = ImageBatcherOptions;
  py::class_<O>(m, "ImageBatcherOptions")
      .def(py::init<>())
      .def_readwrite("image_dir", &O::image_dir)
      .def_readwrite("shape", &O::shape)
      .def_readwrite("dtype", &O::dtype)
      .def_readwrite("batch_size", &O::batch_size)
      .def_property(
          "order", [](const O& o) { return std::string(data_order_name(o.order)); },
          [](O& o, const std::string& s) {
            o.order = parse_name(&data_order_from_name, s, "order");
          })
      .def_readwrite("max_images", &O::max_images)
      .def_property(
          "resize_method",
          [](const O& o) { return std::string(resize_method_name(o.resize_method)); },
          [](O& o, const std::string& s) {
            o.resize_method = parse_name(&resize_method_from_name, s, "resize_method");
          })
      .def_readwrite("input_scale", &O::input_scale)
      .def_readwrite("mean", &O::mean)
      .def_readwrite("std", &O::std)
      .def_property(
          "color_order", [](const O& o) { return std::string(color_order_name(o.color_order)); },
          [](O& o, const std::string& s) {
            o.color_order = parse_name(&color_order_from_name, s, "color_order");
          })
      .def_readwrite("pad_value", &O::pad_value)
      .def_readwrite("keep_partial", &O::keep_partial)
      .def_readwrite("num_threads", &O::num_threads)
      .def_readwrite("prefetch_batches", &O::prefetch_batches)
      .def_readwrite("progress", &O::progress);
}

}  // namespace

void bind_image_batcher(py::module_& m) {
  bind_options(m);
  py::class_<ImageBatcher>(m, "ImageBatcherCore")
      .def(py::init([](ImageBatcherOptions o) {
             py::gil_scoped_release release;
             return std::make_unique<ImageBatcher>(std::move(o));
           }),
           py::arg("options"))
      .def_property_readonly("num_batches", &ImageBatcher::num_batches)
      .def_property_readonly("batch_size", &ImageBatcher::batch_size)
      .def_property_readonly("num_images", &ImageBatcher::num_images)
      .def_property_readonly("image_paths", &ImageBatcher::image_paths)
      .def_property_readonly("batch_shape", &ImageBatcher::batch_shape)
      .def_property_readonly("options", &ImageBatcher::options)
      .def(
          "next_batch",
          [](ImageBatcher& b) -> py::object {
            Tensor t;
            {
              py::gil_scoped_release release;
              t = b.next_batch();
            }
            if (t.empty()) return py::none();
            return tensor_to_array(t);
          },
          "The next batch as a numpy array; None after the last one.")
      .def("reset", &ImageBatcher::reset, py::call_guard<py::gil_scoped_release>())
      .def("save_calibration_data", &ImageBatcher::save_calibration_data, py::arg("path"),
           py::call_guard<py::gil_scoped_release>());
}

}  // namespace trtutils::python
