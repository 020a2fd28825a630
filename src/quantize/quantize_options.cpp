// quantize_onnx's first stages (quantize_stages.h): the options checked, a Q/DQ model passed
// through, the float model prepared for placement and calibration.
#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "core/check.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "quantize/quantize_stages.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

namespace {

int64_t required_opset(QuantMode m) {
  switch (m) {
    case QuantMode::kInt8:
      return 13;
    case QuantMode::kFp8:
      return 19;
    case QuantMode::kInt4:
      return 21;
  }
  return 13;
}

}  // namespace

void validate_options(QuantizeRun& run) {
  namespace fs = std::filesystem;
  const QuantizeOptions& o = run.o;
  check_output_is_not_input("--output", o.output_path,
                            {{"--onnx", o.onnx_path}, {"--calibration_data", o.calibration_data}});
  if (o.write_report)
    check_output_is_not_input(
        "the report", fs::path(o.output_path.string() + ".report.json"),
        {{"--onnx", o.onnx_path}, {"--calibration_data", o.calibration_data}});
  check_output_is_not_input("--plot", o.plot,
                            {{"--onnx", o.onnx_path},
                             {"--calibration_data", o.calibration_data},
                             {"--output", o.output_path}});
  run.mode = quant_mode_from_name(o.quantize_mode);
  if (run.mode == QuantMode::kInt4) {
    if (o.calibration_method == "awq_clip") {
      run.awq = true;
    } else if (o.calibration_method != "rtn") {
      TRT_CHECK_ARG(o.calibration_method == "max" || o.calibration_method == "entropy" ||
                        o.calibration_method == "percentile" || o.calibration_method == "mse" ||
                        o.calibration_method == "auto",
                    "invalid calibration_method '{}' for int4: choose one of rtn, awq_clip",
                    o.calibration_method);
      TRT_LOG_WARN(
          "calibration_method '{}' does not apply to int4 (weight-only, activations stay "
          "float): using rtn; choose rtn or awq_clip",
          o.calibration_method);
    }
  } else {
    run.method = calibration_method_from_name(o.calibration_method);
  }
  TRT_CHECK_ARG(o.batch_size >= 1, "batch_size must be >= 1, got {}", o.batch_size);
  TRT_CHECK_ARG(o.percentile > 0 && o.percentile <= 100, "percentile must be in (0, 100], got {}",
                o.percentile);
  TRT_CHECK_ARG(o.num_bins >= 256 && o.num_bins <= kMaxHistogramBins,
                "num_bins must be in 256..{}, got {}", kMaxHistogramBins, o.num_bins);
  check_thread_count(o.num_threads);
  TRT_CHECK_ARG(o.block_size >= 2, "block_size must be >= 2, got {}", o.block_size);
  TRT_CHECK_ARG(!o.eval_batches || *o.eval_batches >= 0, "eval_batches must be >= 0, got {}",
                o.eval_batches.value_or(0));
  TRT_CHECK_ARG(
      o.bias_correction == "auto" || o.bias_correction == "on" || o.bias_correction == "off",
      "invalid bias_correction '{}': choose one of auto, on, off", o.bias_correction);
  TRT_CHECK_ARG(
      o.weight_rounding == "auto" || o.weight_rounding == "rtn" || o.weight_rounding == "gptq",
      "invalid weight_rounding '{}': choose one of auto, rtn, gptq", o.weight_rounding);
  TRT_CHECK_ARG(o.high_precision_dtype == "fp32" || o.high_precision_dtype == "fp16",
                "invalid high_precision_dtype '{}': choose one of fp32, fp16",
                o.high_precision_dtype);
  std::error_code ec;
  require_regular_file(o.onnx_path, "ONNX model");
  TRT_CHECK_ARG(!o.output_path.empty(), "output_path is empty");
  run.have_data = !o.calibration_data.empty();
  TRT_CHECK_ARG(run.have_data || run.mode == QuantMode::kInt4,
                "calibration_data is required for {} (a .npy file or an image directory)",
                o.quantize_mode);
  TRT_CHECK_ARG(!run.have_data || fs::exists(o.calibration_data, ec),
                "calibration data not found: {}", o.calibration_data.string());
  run.po.mode = run.mode;
  run.po.op_types_to_quantize = {o.op_types_to_quantize.begin(), o.op_types_to_quantize.end()};
  run.po.op_types_to_exclude = {o.op_types_to_exclude.begin(), o.op_types_to_exclude.end()};
  run.po.block_size = o.block_size;
  run.po.skip_single_row = true;
  for (const auto& r : o.nodes_to_exclude) {
    try {
      run.po.nodes_to_exclude.emplace_back(r, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      TRT_THROW(ErrorCode::kInvalidArgument, "nodes_to_exclude: invalid regex '{}': {}", r,
                e.what());
    }
  }
}

QuantizeResult pass_through_quantized(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  TRT_LOG_WARN("{} already contains Q/DQ nodes: written unchanged to {}", o.onnx_path.string(),
               o.output_path.string());
  const std::vector<std::string> ext = onnx_io::external_data_locations(o.onnx_path);
  if (ext.empty()) {
    write_file_atomic(o.output_path, read_file(o.onnx_path));
  } else {
    // The bytes alone would point at data files next to the input. The loaded model (its
    // external data resolved inside the input's folder) is written again with its weights
    // in "<output file name>.data" beside the output: never a file outside that folder.
    onnx_io::save_model(run.model, o.output_path, {.external_data_threshold = kExternalMinBytes});
    TRT_LOG_INFO("{} keeps its weights in {} external file(s) ({}...): rewritten to {}.data",
                 o.onnx_path.string(), ext.size(), ext.front(), o.output_path.filename().string());
  }
  run.result.already_quantized = true;
  return run.result;
}

void prepare_model(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  name_nodes(run.model.graph);
  run.model.graph.topological_sort();
  passes::run_pipeline(run.model.graph, run.model.opset(),
                       {"conv_fusion", "qdq_fusion"});  // CPU-only ops
  if (size_t n = fold_batch_norm(run.model.graph))
    TRT_LOG_INFO("folded {} BatchNormalization node(s)", n);
  run.fp16 = o.high_precision_dtype == "fp16";
  const int64_t opset_needed = std::max<int64_t>(required_opset(run.mode), run.fp16 ? 19 : 0);
  if (run.model.opset() < opset_needed) upgrade_opset(run.model, opset_needed);
  run.model.graph.value_info.clear();
  passes::infer_shapes(run.model.graph, run.model.opset());
  run.float_model = run.model;  // tensors are shared handles: no weight copy
  TRT_LOG_INFO("model prepared (peak RSS {:.0f} MiB)", peak_rss_mib());
}

}  // namespace trtutils::quantize
