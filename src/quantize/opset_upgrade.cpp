// Opset upgrade for quantization: per-channel Q/DQ needs opset 13, fp8 19, blocked int4 21.
// Only the changes that matter for the ops exporters emit are rewritten; a node whose meaning
// would change and that cannot be rewritten stops the upgrade with a clear error.
#include "core/check.h"
#include "ir/graph_builder.h"
#include "quantize/qdq.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

namespace {

bool crosses(int64_t from, int64_t to, int64_t v) {
  return from < v && to >= v;
}

// Moves int attribute list `attr` to input `index` (an int64 initializer); returns false when
// the attribute is absent (the input stays omitted, which means the same default).
void attr_to_input(ir::Graph& g, ir::Node& n, const std::string& attr, size_t index) {
  if (!n.has_attr(attr)) return;
  const ir::Attribute a = n.attributes.at(attr);
  n.attributes.erase(attr);
  Tensor t;
  if (a.kind == ir::Attribute::Kind::kInts) {
    t = Tensor::from_vector<int64_t>(DataType::kInt64, {static_cast<int64_t>(a.ints.size())},
                                     a.ints);
  } else if (a.kind == ir::Attribute::Kind::kInt) {
    t = Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {a.i});
  } else if (a.kind == ir::Attribute::Kind::kFloat) {
    t = Tensor::from_vector<float>(DataType::kFloat32, {}, {a.f});
  } else {
    TRT_THROW(ErrorCode::kNotSupported, "opset upgrade: {} attribute '{}' has an unexpected kind",
              n.describe(), attr);
  }
  const std::string name = g.unique_name((n.name.empty() ? n.op_type : n.name) + "_" + attr);
  g.initializers[name] = t;
  if (n.inputs.size() <= index) n.inputs.resize(index + 1);
  n.inputs[index] = name;
}

int64_t rank_of(const ir::Graph& g, const std::string& v) {
  auto vi = g.find_value_info(v);
  return vi && vi->shape ? static_cast<int64_t>(vi->shape->size()) : -1;
}

}  // namespace

void upgrade_opset(ir::Model& model, int64_t target) {
  const int64_t from = model.opset();
  if (from >= target) return;
  ir::Graph& g = model.graph;
  const std::set<std::string> reduce18 = {"ReduceMean",   "ReduceMax",       "ReduceMin",
                                          "ReduceProd",   "ReduceL1",        "ReduceL2",
                                          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  for (auto& n : g.nodes) {
    if (!n.domain.empty() && n.domain != "ai.onnx") continue;
    const std::string& op = n.op_type;
    if (op == "Upsample" || op == "Scatter") {
      TRT_THROW(ErrorCode::kNotSupported,
                "cannot raise the opset from {} to {}: {} uses a removed operator; re-export the "
                "model with opset >= {}",
                from, target, n.describe(), target);
    }
    if (op == "Resize" && from < 11) {
      TRT_THROW(ErrorCode::kNotSupported,
                "cannot raise the opset from {} to {}: {} changed meaning in opset 11; re-export "
                "the model with opset >= {}",
                from, target, n.describe(), target);
    }
    if (crosses(from, target, 10) && op == "Slice") {
      attr_to_input(g, n, "starts", 1);
      attr_to_input(g, n, "ends", 2);
      attr_to_input(g, n, "axes", 3);
    }
    if (crosses(from, target, 10) && op == "TopK") attr_to_input(g, n, "k", 1);
    if (crosses(from, target, 11) && op == "Clip") {
      attr_to_input(g, n, "min", 1);
      attr_to_input(g, n, "max", 2);
    }
    if (crosses(from, target, 11) && op == "Pad") {
      attr_to_input(g, n, "pads", 1);
      attr_to_input(g, n, "value", 2);
    }
    if (crosses(from, target, 12) && op == "Dropout")
      n.attributes.erase("ratio");  // inference: identity
    if (crosses(from, target, 9) && op == "BatchNormalization") n.attributes.erase("spatial");
    if (crosses(from, target, 13)) {
      if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") attr_to_input(g, n, "axes", 1);
      if (op == "Split") attr_to_input(g, n, "split", 1);
      if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
        // Before 13: flatten to 2-D at `axis` (default 1). The same as 13's single axis only
        // when that axis is the last one.
        const int64_t r = rank_of(g, n.inputs[0]);
        int64_t axis = n.attr_int("axis", 1);
        if (r > 0 && axis < 0) axis += r;
        TRT_CHECK(r > 0 && axis == r - 1, ErrorCode::kNotSupported,
                  "cannot raise the opset from {} to {}: {} normalises over axes {}.. of a rank-{} "
                  "tensor, which opset 13 cannot express as one node; re-export with opset >= 13",
                  from, target, n.describe(), axis, r);
        n.attributes["axis"] = ir::attr_int("axis", -1);
      }
    }
    if (crosses(from, target, 18) && reduce18.count(op)) attr_to_input(g, n, "axes", 1);
  }
  for (auto& o : model.opset_imports)
    if (o.domain.empty() || o.domain == "ai.onnx") o.version = target;
  // IR versions that introduced these opsets (ONNX 1.8 / 1.14 / 1.16).
  const int64_t ir = target >= 21 ? 10 : target >= 19 ? 9 : 7;
  model.ir_version = std::max(model.ir_version, ir);
  TRT_LOG_INFO("opset raised from {} to {}", from, target);
}

}  // namespace trtutils::quantize
