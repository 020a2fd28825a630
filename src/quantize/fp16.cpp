// high_precision_dtype fp16: the un-quantized rest of a Q/DQ graph in fp16, graph IO kept fp32.
// Needs opset >= 19 so that Q/DQ scales (and so DequantizeLinear outputs) can be fp16.
#include <unordered_map>

#include "core/check.h"
#include "ir/graph_builder.h"
#include "quantize/qdq.h"

namespace trtutils::quantize {

namespace {
Tensor to_fp16(const Tensor& t) {
  Tensor r(DataType::kFloat16, t.shape());
  const float* s = t.data<float>();
  half* d = r.data<half>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = float_to_half(s[i]);
  return r;
}
}  // namespace

void convert_to_fp16(ir::Model& model) {
  TRT_CHECK(model.opset() >= 19, ErrorCode::kInternal, "convert_to_fp16 needs opset >= 19");
  ir::Graph& g = model.graph;
  // Inputs that must stay fp32 whatever the data type: Resize's roi and scales.
  std::set<std::string> keep;
  for (const auto& n : g.nodes)
    if (n.op_type == "Resize")
      for (size_t i = 1; i < 3 && i < n.inputs.size(); ++i) keep.insert(n.inputs[i]);
  for (auto& [name, t] : g.initializers)
    if (t.dtype() == DataType::kFloat32 && !keep.count(name)) t = to_fp16(t);
  for (auto& n : g.nodes) {
    if (n.op_type == "Cast" && n.attr_int("to", 0) == static_cast<int64_t>(DataType::kFloat32))
      n.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat16));
    if (n.op_type == "ConstantOfShape" && n.has_attr("value") &&
        n.attributes["value"].t.dtype() == DataType::kFloat32)
      n.attributes["value"].t = to_fp16(n.attributes["value"].t);
  }
  std::vector<ir::Node> casts;
  // Graph inputs: fp32 outside, cast to fp16 for their readers.
  for (const auto& in : g.inputs) {
    if (in.dtype != DataType::kFloat32) continue;
    const std::string h = g.unique_name(in.name + "_fp16");
    for (auto& n : g.nodes)
      for (auto& x : n.inputs)
        if (x == in.name) x = h;
    for (auto& o : g.outputs)
      if (o.name == in.name)
        TRT_THROW(ErrorCode::kNotSupported, "fp16: input '{}' is also an output", in.name);
    ir::Node c;
    c.name = g.unique_name(in.name + "_cast_fp16");
    c.op_type = "Cast";
    c.inputs = {in.name};
    c.outputs = {h};
    c.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat16));
    casts.push_back(std::move(c));
  }
  // Graph outputs: computed in fp16 under a new name, cast back to fp32 under the old one.
  for (const auto& out : g.outputs) {
    if (out.dtype != DataType::kFloat32) continue;
    const std::string h = g.unique_name(out.name + "_fp16");
    for (auto& n : g.nodes) {
      for (auto& x : n.outputs)
        if (x == out.name) x = h;
      for (auto& x : n.inputs)
        if (x == out.name) x = h;
    }
    ir::Node c;
    c.name = g.unique_name(out.name + "_cast_fp32");
    c.op_type = "Cast";
    c.inputs = {h};
    c.outputs = {out.name};
    c.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat32));
    casts.push_back(std::move(c));
  }
  for (auto& c : casts) g.nodes.push_back(std::move(c));
  g.value_info.clear();
  g.topological_sort();
}

}  // namespace trtutils::quantize
