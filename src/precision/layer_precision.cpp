#include "precision/layer_precision.h"

#include <algorithm>
#include <charconv>

#include "core/check.h"
#include "trtutils/logging.h"

namespace trtutils::precision {

namespace {

std::string precision_name(DataType d) {
  switch (d) {
    case DataType::kFloat32:
      return "fp32";
    case DataType::kFloat16:
      return "fp16";
    case DataType::kBFloat16:
      return "bf16";
    case DataType::kInt8:
    case DataType::kUInt8:
      return "int8";
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
      return "fp8";
    case DataType::kInt4:
    case DataType::kUInt4:
      return "int4";
    default:
      return std::string(dtype_name(d));
  }
}

DataType value_dtype(const ir::Graph& g, const std::string& name) {
  if (name.empty()) return DataType::kUndefined;
  if (const Tensor* t = g.initializer(name)) return t->dtype();
  auto vi = g.find_value_info(name);
  return vi ? vi->dtype : DataType::kUndefined;
}

}  // namespace

LayerPrecisionPlan resolve_layer_constraints(const builder::BuildConfig& c, const ir::Graph& g,
                                             const std::vector<std::string>& original_nodes,
                                             std::vector<std::string>& warnings) {
  LayerPrecisionPlan plan;
  if (c.layer_precision.empty() || c.precision_constraints == "none" || c.strongly_typed)
    return plan;
  for (const auto& [layer, dt] : c.layer_precision) {
    std::string name;
    int64_t index = -1;
    const auto [ptr, ec] = std::from_chars(layer.data(), layer.data() + layer.size(), index);
    if (ec == std::errc() && ptr == layer.data() + layer.size()) {
      TRT_CHECK_ARG(index >= 0 && index < static_cast<int64_t>(original_nodes.size()),
                    "layer_precision: layer index {} is out of range (the model has {} layers, "
                    "0..{})",
                    index, original_nodes.size(), original_nodes.size() - 1);
      name = original_nodes[static_cast<size_t>(index)];
    } else {
      TRT_CHECK_ARG(
          std::find(original_nodes.begin(), original_nodes.end(), layer) != original_nodes.end(),
          "layer_precision: the model has no layer named '{}' (give a node name or "
          "an index; `trtutils info --onnx` lists them)",
          layer);
      name = layer;
    }
    switch (dt) {
      case DataType::kFloat32:
        plan.forced_fp32.insert(name);
        plan.excluded_from_quantization.insert(name);
        break;
      case DataType::kFloat16:
        plan.forced_fp16.insert(name);
        plan.excluded_from_quantization.insert(name);
        if (!c.fp16) {
          warnings.push_back("layer '" + name +
                             "' is forced to fp16 while --fp16 is off: the constraint is applied");
          TRT_LOG_WARN("{}", warnings.back());
        }
        break;
      case DataType::kInt8:
      case DataType::kFloat8E4M3FN:
        plan.forced_int8.insert(name);
        break;
      default:
        TRT_THROW(ErrorCode::kInvalidArgument, "layer_precision '{}': {} is not a precision", layer,
                  dtype_name(dt));
    }
  }
  (void)g;
  return plan;
}

engine::LayerRecord describe_layer(const ir::Graph& g, const ir::Node& n) {
  engine::LayerRecord r;
  const bool ours = n.domain == "com.trtutils";
  const bool quantized_island = ours && !n.op_type.empty() && n.op_type[0] == 'Q';
  DataType dt = DataType::kUndefined;
  if (quantized_island && !n.inputs.empty()) {
    dt = value_dtype(g, n.inputs[0]);
  } else if (n.op_type == "QuantizeLinear" && !n.outputs.empty()) {
    dt = value_dtype(g, n.outputs[0]);
    if (dt == DataType::kUndefined && n.inputs.size() > 2) dt = value_dtype(g, n.inputs[2]);
    if (dt == DataType::kUndefined) dt = DataType::kUInt8;
  } else if (n.op_type == "DequantizeLinear" && !n.inputs.empty()) {
    dt = value_dtype(g, n.inputs[0]);
  } else if (!n.outputs.empty()) {
    dt = value_dtype(g, n.outputs[0]);
  }
  r.precision = dt == DataType::kUndefined ? "?" : precision_name(dt);
  static const std::set<std::string> kOneDnn = {"Conv",   "FusedConv", "ConvTranspose", "Gemm",
                                                "MatMul", "QConv",     "QGemm",         "QMatMul"};
  const std::string base = kOneDnn.count(n.op_type) ? "onednn" : "cpu";
  r.kernel = base + "." + (ours ? "trtutils." : "") + n.op_type;
  return r;
}

}  // namespace trtutils::precision
