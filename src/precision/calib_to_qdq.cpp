// calib_to_qdq: the builder's weakly-typed INT8 preparation, written out as a Q/DQ model.
#include "precision/calib_to_qdq.h"

#include <set>

#include "core/check.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "quantize/qdq.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"

namespace trtutils::precision {

CalibToQdqResult calib_to_qdq(ir::Model& model, const CalibrationCache& cache) {
  CalibToQdqResult r;
  ir::Graph& g = model.graph;
  quantize::name_nodes(g);
  g.topological_sort();
  TRT_CHECK_ARG(!quantize::has_qdq(g),
                "the model already has Q/DQ nodes: calib_to_qdq takes the float model the "
                "calibration cache was made for");
  // The same preparation as the builder's weakly-typed INT8 path.
  passes::run_pipeline(g, model.opset(), {"conv_fusion", "qdq_fusion"});
  quantize::fold_batch_norm(g);
  if (model.opset() < 13) quantize::upgrade_opset(model, 13);
  g.value_info.clear();
  passes::infer_shapes(g, model.opset());
  quantize::PlacementOptions po;
  po.mode = quantize::QuantMode::kInt8;
  po.skip_single_row = true;  // as the builder
  quantize::Placement placement = quantize::place_qdq(g, po);

  quantize::ScaleTable table;
  std::set<std::string> missing;
  for (const auto& [t, uses] : placement.activations) {
    if (auto s = cache.scale(t))
      table.amax[t] = static_cast<double>(*s) * 127.0;  // TensorRT: scale = amax / 127
    else
      missing.insert(t);
  }
  TRT_CHECK_ARG(placement.activations.empty() || missing.size() < placement.activations.size(),
                "the calibration cache has a scale for none of the {} tensor(s) to quantize (e.g. "
                "'{}'): was it made for this model?",
                placement.activations.size(),
                placement.activations.empty() ? "" : placement.activations.begin()->first);
  if (!missing.empty()) {
    const size_t dropped = quantize::drop_nodes_reading(placement, missing);
    r.warnings.push_back(fmt::format(
        "{} tensor(s) have no scale in the calibration cache (e.g. '{}'): {} layer(s) stay in "
        "higher precision",
        missing.size(), *missing.begin(), dropped));
    TRT_LOG_WARN("{}", r.warnings.back());
    r.missing.assign(missing.begin(), missing.end());
  }
  quantize::share_scales(g, table);
  const quantize::ApplyStats st =
      quantize::apply_qdq(g, placement, table, {.mode = quantize::QuantMode::kInt8});
  r.qdq_pairs = st.qdq_pairs;
  r.quantized_weights = st.weights;
  r.quantized_layers = static_cast<int64_t>(placement.quantized_nodes.size());
  g.value_info.clear();
  passes::infer_shapes(g, model.opset());
  return r;
}

CalibToQdqResult calib_to_qdq_file(const std::filesystem::path& onnx,
                                   const std::filesystem::path& calibration_cache,
                                   const std::filesystem::path& output) {
  check_output_is_not_input("--output", output,
                            {{"--onnx", onnx}, {"--calibration_cache", calibration_cache}});
  require_regular_file(onnx, "ONNX model");
  const CalibrationCache cache = read_calibration_cache(calibration_cache);
  ir::Model model = onnx_io::load_model(onnx);
  CalibToQdqResult r = calib_to_qdq(model, cache);
  onnx_io::save_model(model, output);
  return r;
}

}  // namespace trtutils::precision

namespace trtutils {

CalibToQdqResult calib_to_qdq(const std::filesystem::path& onnx,
                              const std::filesystem::path& calibration_cache,
                              const std::filesystem::path& output) {
  return precision::calib_to_qdq_file(onnx, calibration_cache, output);
}

}  // namespace trtutils
