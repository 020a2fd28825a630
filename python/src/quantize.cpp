// QuantizeOptions (every field of quantize.h), QuantizeResult and quantize_onnx, which runs
// without the GIL (calibration runs the float model batch by batch).
#include "trtutils/quantize.h"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"

namespace py = pybind11;

namespace trtutils::python {

namespace {

void bind_options(py::module_& m) {
  using O = QuantizeOptions;
  py::class_<O>(m, "QuantizeOptions")
      .def(py::init<>())
      .def_readwrite("onnx_path", &O::onnx_path)
      .def_readwrite("output_path", &O::output_path)
      .def_readwrite("calibration_data", &O::calibration_data)
      .def_readwrite("image_preprocess", &O::image_preprocess)
      .def_readwrite("quantize_mode", &O::quantize_mode)
      .def_readwrite("calibration_method", &O::calibration_method)
      .def_readwrite("batch_size", &O::batch_size)
      .def_readwrite("percentile", &O::percentile)
      .def_readwrite("num_bins", &O::num_bins)
      .def_readwrite("op_types_to_quantize", &O::op_types_to_quantize)
      .def_readwrite("op_types_to_exclude", &O::op_types_to_exclude)
      .def_readwrite("nodes_to_exclude", &O::nodes_to_exclude)
      .def_readwrite("high_precision_dtype", &O::high_precision_dtype)
      .def_readwrite("keep_detection_head_float", &O::keep_detection_head_float)
      .def_readwrite("block_size", &O::block_size)
      .def_readwrite("eval_batches", &O::eval_batches)
      .def_readwrite("report_per_tensor", &O::report_per_tensor)
      .def_readwrite("min_sqnr", &O::min_sqnr)
      .def_readwrite("max_calibration_batches", &O::max_calibration_batches)
      .def_readwrite("calibrate_per_node", &O::calibrate_per_node)
      .def_readwrite("bias_correction", &O::bias_correction)
      .def_readwrite("weight_rounding", &O::weight_rounding)
      .def_readwrite("num_threads", &O::num_threads)
      .def_readwrite("write_report", &O::write_report)
      .def_readwrite("progress", &O::progress)
      .def_readwrite("plot", &O::plot);
}

void bind_result(py::module_& m) {
  py::class_<QuantizeOutputMetrics>(m, "QuantizeOutputMetrics")
      .def_readonly("name", &QuantizeOutputMetrics::name)
      .def_readonly("sqnr_db", &QuantizeOutputMetrics::sqnr_db)
      .def_readonly("cosine", &QuantizeOutputMetrics::cosine)
      .def_readonly("max_abs_error", &QuantizeOutputMetrics::max_abs_error);
  py::class_<QuantizeTensorMetrics>(m, "QuantizeTensorMetrics")
      .def_readonly("name", &QuantizeTensorMetrics::name)
      .def_readonly("node", &QuantizeTensorMetrics::node)
      .def_readonly("sqnr_db", &QuantizeTensorMetrics::sqnr_db)
      .def_readonly("amax", &QuantizeTensorMetrics::amax)
      .def_readonly("scale", &QuantizeTensorMetrics::scale);
  using G = QuantizeRangeMetrics;
  py::class_<G>(m, "QuantizeRangeMetrics")
      .def_readonly("name", &G::name)
      .def_readonly("amax", &G::amax)
      .def_readonly("below_normal", &G::below_normal)
      .def_readonly("flushed", &G::flushed)
      .def_readonly("clipped", &G::clipped)
      .def_readonly("outside", &G::outside);
  using R = QuantizeResult;
  py::class_<R>(m, "QuantizeResult")
      .def_readonly("already_quantized", &R::already_quantized)
      .def_readonly("num_quantized_nodes", &R::num_quantized_nodes)
      .def_readonly("num_qdq_pairs", &R::num_qdq_pairs)
      .def_readonly("num_weights_quantized", &R::num_weights_quantized)
      .def_readonly("num_bias_corrected", &R::num_bias_corrected)
      .def_readonly("num_gptq_rounded", &R::num_gptq_rounded)
      .def_readonly("calibration_samples", &R::calibration_samples)
      .def_readonly("eval_samples", &R::eval_samples)
      .def_readonly("eval_held_out", &R::eval_held_out)
      .def_readonly("preprocessing", &R::preprocessing)
      .def_readonly("outputs", &R::outputs)
      .def_readonly("tensors", &R::tensors)
      .def_readonly("excluded_by_fallback", &R::excluded_by_fallback)
      .def_readonly("excluded_detection_head", &R::excluded_detection_head)
      .def_readonly("skipped", &R::skipped)
      .def_readonly("calibration_rejected", &R::calibration_rejected)
      .def_readonly("calibration_methods_used", &R::calibration_methods_used)
      .def_readonly("calibration_method_chosen", &R::calibration_method_chosen)
      .def_readonly("calibration_method_scores", &R::calibration_method_scores)
      // [(name, mean_db, se_db, batches)]: each candidate's gain over max per selection batch.
      .def_property_readonly("calibration_method_gains",
                             [](const R& r) {
                               std::vector<std::tuple<std::string, double, double, int64_t>> v;
                               for (const auto& g : r.calibration_method_gains)
                                 v.emplace_back(g.name, g.mean_db, g.se_db, g.batches);
                               return v;
                             })
      .def_readonly("auto_selection_samples", &R::auto_selection_samples)
      .def_readonly("auto_selection_held_out", &R::auto_selection_held_out)
      .def_readonly("auto_selection_folds", &R::auto_selection_folds)
      .def_readonly("auto_selection_on_gpu", &R::auto_selection_on_gpu)
      .def_readonly("fp8_range", &R::fp8_range)
      .def_readonly("report_path", &R::report_path);
}

}  // namespace

void bind_quantize(py::module_& m) {
  bind_options(m);
  bind_result(m);
  m.def("quantize_onnx", &quantize_onnx, py::arg("options"),
        py::call_guard<py::gil_scoped_release>(),
        "Float ONNX + calibration data -> Q/DQ ONNX (written atomically) and its report.");
  m.def("quantize_mode_names", &quantize_mode_names);
  m.def("calibration_method_names", &calibration_method_names, py::arg("quantize_mode"));
}

}  // namespace trtutils::python
