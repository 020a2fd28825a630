// quantize_onnx as stages a reader can follow (quantize_stages.h says which file holds each):
// options -> prepare -> data -> placement -> calibration (the scale table) -> Q/DQ model ->
// report -> save.
#include "trtutils/quantize.h"

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "onnx/onnx_io.h"
#include "quantize/quantize_stages.h"

namespace trtutils {

const std::vector<std::string>& quantize_mode_names() {
  static const std::vector<std::string> v = {"int8", "fp8", "int4"};
  return v;
}

const std::vector<std::string>& calibration_method_names(const std::string& mode) {
  static const std::vector<std::string> act = {"max", "entropy", "percentile", "mse", "auto"};
  static const std::vector<std::string> w4 = {"rtn", "awq_clip"};
  return mode == "int4" ? w4 : act;
}

namespace quantize {

double peak_rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

}  // namespace quantize

QuantizeResult quantize_onnx(const QuantizeOptions& o) {
  using namespace quantize;
  QuantizeRun run(o);
  validate_options(run);
  run.model = onnx_io::load_model(o.onnx_path);
  if (has_qdq(run.model.graph)) return pass_through_quantized(run);
  prepare_model(run);  // constant folding, BN folding, opset, names, types
  load_data(run);      // the calibration batches and the report's (eval_split.h)

  // Placement and calibration (the scale table).
  place_activations(run);
  calibration_statistics(run);
  weight_statistics(run);
  select_calibration(run);  // calibration_method auto
  run.qmodel = build_qdq_model(run, run.placement, &run.ast);

  // Report (and the sensitivity fallback, which needs it).
  evaluate_outputs(run);
  min_sqnr_fallback(run);
  report_results(run);
  save_qdq_model(run);
  if (o.write_report) write_report_file(run);
  return std::move(run.result);
}

}  // namespace trtutils
