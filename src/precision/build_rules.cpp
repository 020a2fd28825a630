// The seed's rules for builder options (shared/seed: "Common errors"), and tensor formats.
#include <algorithm>
#include <cctype>

#include "core/check.h"
#include "trtutils/builder.h"
#include "trtutils/logging.h"

namespace trtutils::builder {

const std::vector<std::string>& tensor_format_names() {
  static const std::vector<std::string> v = {"LINEAR", "CHW2", "CHW4",  "CHW16", "CHW32",
                                             "HWC",    "HWC8", "HWC16", "DHWC8"};
  return v;
}

TensorFormat parse_tensor_format(const std::string& text) {
  std::string dtype_part, format_part = text;
  if (auto c = text.find(':'); c != std::string::npos) {
    dtype_part = text.substr(0, c);
    format_part = text.substr(c + 1);
  }
  std::string upper = format_part;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  const auto& names = tensor_format_names();
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  TRT_CHECK_ARG(std::find(names.begin(), names.end(), upper) != names.end(),
                "invalid tensor format '{}' in '{}': choose one of {} (optionally prefixed by a "
                "dtype, e.g. fp16:HWC)",
                format_part, text, list);
  TensorFormat f;
  f.format = upper;
  if (!dtype_part.empty()) {
    static const std::vector<std::pair<std::string, DataType>> kDtypes = {
        {"fp32", DataType::kFloat32},    {"float32", DataType::kFloat32},
        {"fp16", DataType::kFloat16},    {"float16", DataType::kFloat16},
        {"int8", DataType::kInt8},       {"uint8", DataType::kUInt8},
        {"int32", DataType::kInt32},     {"bool", DataType::kBool},
        {"fp8", DataType::kFloat8E4M3FN}};
    auto it = std::find_if(kDtypes.begin(), kDtypes.end(),
                           [&](const auto& p) { return p.first == dtype_part; });
    TRT_CHECK_ARG(it != kDtypes.end(),
                  "invalid dtype '{}' in tensor format '{}': choose one of fp32, fp16, int8, "
                  "uint8, int32, bool, fp8",
                  dtype_part, text);
    f.dtype = it->second;
  }
  return f;
}

bool has_calibration(const BuildConfig& c) {
  return !c.calibration_cache.empty() || !c.calibration_data.empty() || c.data_batcher.has_value();
}

std::vector<std::string> validate_build_config(const BuildConfig& c, int target_sm) {
  std::vector<std::string> warnings;
  const bool calibration = has_calibration(c);
  if (c.strongly_typed) {
    if (c.fp16 || c.int8 || c.fp8)
      TRT_THROW(ErrorCode::kConfig,
                "strongly_typed=True derives precision from the ONNX graph; remove fp16/int8/fp8 "
                "builder flags.");
    if (calibration)
      TRT_THROW(ErrorCode::kConfig,
                "strongly_typed=True does not support runtime calibration (calibration_cache, "
                "calibration_data or data_batcher was given): strongly-typed networks have no "
                "calibration step, the scales must already be in the ONNX Q/DQ nodes; remove the "
                "calibration arguments.");
    if (!c.layer_precision.empty())
      TRT_THROW(ErrorCode::kConfig,
                "strongly_typed=True and layer_precision are mutually exclusive: per-layer "
                "precision comes from the ONNX graph (casts, Q/DQ); remove layer_precision.");
    const auto has_dtype = [](const std::vector<TensorFormat>& v) {
      return std::any_of(v.begin(), v.end(),
                         [](const TensorFormat& f) { return f.dtype != DataType::kUndefined; });
    };
    if (!c.input_tensor_formats.empty() || !c.output_tensor_formats.empty()) {
      warnings.push_back(
          has_dtype(c.input_tensor_formats) || has_dtype(c.output_tensor_formats)
              ? "strongly_typed=True: the dtype part of input_tensor_formats / "
                "output_tensor_formats is ignored (IO types come from the ONNX graph); only the "
                "tensor format is applied"
              : "strongly_typed=True: input_tensor_formats / output_tensor_formats set only the "
                "tensor format; IO types come from the ONNX graph");
    }
  } else if (c.int8 && c.fp8 && target_sm >= 100) {
    TRT_THROW(ErrorCode::kConfig,
              "INT8+FP8 mixed precision on Blackwell requires strongly_typed=True (target SM {}): "
              "re-export the ONNX with Q/DQ nodes (trtutils quantize, modelopt or similar), then "
              "pass strongly_typed=True and drop the int8/fp8 flags.",
              target_sm);
  }
  TRT_CHECK_ARG(c.precision_constraints == "none" || c.precision_constraints == "prefer" ||
                    c.precision_constraints == "obey",
                "invalid precision_constraints '{}': choose one of none, prefer, obey",
                c.precision_constraints);
  TRT_CHECK_ARG(c.optimization_level >= 0 && c.optimization_level <= 5,
                "optimization_level must be in 0..5, got {}", c.optimization_level);
  TRT_CHECK_ARG(c.backend == "auto" || c.backend == "cpu" || c.backend == "cuda",
                "invalid backend '{}': choose one of auto, cpu, cuda", c.backend);
  TRT_CHECK_ARG(c.calibration_algorithm == "entropy" || c.calibration_algorithm == "minmax",
                "invalid calibration_algorithm '{}': choose one of entropy, minmax",
                c.calibration_algorithm);
  TRT_CHECK_ARG(c.target_sm >= 0 && c.target_sm < 1000, "invalid target_sm {}", c.target_sm);
  TRT_CHECK_ARG(c.calibration_batch_size >= 1, "calibration_batch_size must be >= 1, got {}",
                c.calibration_batch_size);
  for (const auto& [layer, dt] : c.layer_precision)
    TRT_CHECK_ARG(dt == DataType::kFloat32 || dt == DataType::kFloat16 || dt == DataType::kInt8 ||
                      dt == DataType::kFloat8E4M3FN,
                  "layer_precision for '{}': {} is not a layer precision; choose one of fp32, "
                  "fp16, int8, fp8",
                  layer, dtype_name(dt));
  if (!c.layer_precision.empty() && c.precision_constraints == "none")
    warnings.push_back(
        "layer_precision is ignored with precision_constraints=none; pass prefer or obey");
  for (const auto& w : warnings) TRT_LOG_WARN("{}", w);
  return warnings;
}

}  // namespace trtutils::builder
