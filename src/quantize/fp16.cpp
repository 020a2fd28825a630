// high_precision_dtype fp16: the un-quantized rest of a Q/DQ graph in fp16, graph IO kept fp32.
// Needs opset >= 19 so that Q/DQ scales (and so DequantizeLinear outputs) can be fp16.
#include <set>
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

// Conv / ConvTranspose / Gemm with dequantized X and W and a constant bias: the bias moves to an
// Add after the layer (Conv: the values as [M, 1, ..., 1]; Gemm: C times beta). ONNX Runtime's
// WeightBiasQuantization (graph optimization level basic and above) quantizes such a bias to
// int32 with round(bias / (x_scale * w_scale)) computed in the bias's type: with float16 scales
// and bias that overflows float16 for small scales (18 of MobileNetV2's 51 quantized Convs) and
// the layer's output is garbage (the model at 5.9 dB against the float one). It leaves a layer
// without a bias alone. TensorRT and the engine builder (qdq_fusion) fuse the Add back into the
// layer's bias. Runs before the float32 constants become float16.
void move_quantized_biases(ir::Graph& g) {
  std::unordered_map<std::string, std::string> dq_input;  // DequantizeLinear output -> its x
  for (const auto& n : g.nodes)
    if (n.op_type == "DequantizeLinear" && n.outputs.size() == 1 && n.has_input(0))
      dq_input[n.outputs[0]] = n.inputs[0];
  std::vector<ir::Node> out;
  out.reserve(g.nodes.size());
  for (auto& n : g.nodes) {
    const bool conv = n.op_type == "Conv" || n.op_type == "ConvTranspose";
    const Tensor* b = n.has_input(2) ? g.initializer(n.inputs[2]) : nullptr;
    const bool dequantized =
        b && n.outputs.size() == 1 && dq_input.count(n.inputs[0]) && dq_input.count(n.inputs[1]);
    const Tensor* wq = dequantized ? g.initializer(dq_input.at(n.inputs[1])) : nullptr;
    const bool fits = dequantized && b->dtype() == DataType::kFloat32 &&
                      (conv ? wq && wq->rank() >= 3 && b->rank() == 1 : n.op_type == "Gemm");
    if (!fits) {
      out.push_back(std::move(n));
      continue;
    }
    std::vector<float> v = b->to_float_vector();
    Shape shape = b->shape();
    if (conv) {  // [M] -> [M, 1, ..., 1] over the output's spatial axes
      shape.assign(wq->rank() - 1, 1);
      shape[0] = b->numel();
    } else {
      const float beta = n.attr_float("beta", 1.0f);
      for (float& x : v) x *= beta;
      n.attributes.erase("beta");
    }
    const std::string bname = g.unique_name(n.inputs[2] + "_bias");
    g.initializers[bname] = Tensor::from_vector<float>(DataType::kFloat32, shape, v);
    const std::string y = n.outputs[0];
    const std::string raw = g.unique_name(y + "_nobias");
    n.inputs.resize(2);
    n.outputs = {raw};
    ir::Node add;
    add.name = g.unique_name(n.name + "_bias_add");
    add.op_type = "Add";
    add.inputs = {raw, bname};
    add.outputs = {y};
    out.push_back(std::move(n));
    out.push_back(std::move(add));
  }
  g.nodes = std::move(out);
  g.remove_dead_nodes();
}

// Renames `from` to `to` wherever g and its nested subgraphs read it.
void rename_reads(ir::Graph& g, const std::string& from, const std::string& to) {
  for (auto& n : g.nodes) {
    for (auto& x : n.inputs)
      if (x == from) x = to;
    for (auto& [name, a] : n.attributes)
      if (a.kind == ir::Attribute::Kind::kGraph && a.g) rename_reads(*a.g, from, to);
  }
  for (auto& o : g.outputs)
    if (o.name == from) o.name = to;
}

bool is_control_flow(const ir::Node& n) {
  return (n.domain.empty() || n.domain == "ai.onnx") && (n.op_type == "If" || n.op_type == "Loop");
}

// The dtype of a control-flow node's output k, as its subgraph declares it.
DataType control_flow_output_dtype(const ir::Node& n, size_t k) {
  const ir::Attribute* a = n.attr(n.op_type == "If" ? "then_branch" : "body");
  if (!a || !a->g) return DataType::kUndefined;
  const size_t at = n.op_type == "If" ? k : k + 1;  // a Loop body's output 0 is its condition
  return at < a->g->outputs.size() ? a->g->outputs[at].dtype : DataType::kUndefined;
}

// If and Loop keep their subgraphs in float32 (as TensorRT keeps its conditional and loop layers
// in FP32; the subgraphs' own constants and Casts stay as they are): the values they read that
// became float16 are cast back to float32 before them, and their float32 outputs to float16
// after them. `was_fp32`: the values that were float32 before the conversion.
void keep_control_flow_fp32(ir::Graph& g, const std::set<std::string>& was_fp32) {
  std::vector<ir::Node> out;
  out.reserve(g.nodes.size());
  for (auto& n : g.nodes) {
    if (!is_control_flow(n)) {
      out.push_back(std::move(n));
      continue;
    }
    std::vector<std::string> reads = n.implicit_inputs();
    for (const auto& in : n.inputs)
      if (!in.empty()) reads.push_back(in);
    std::set<std::string> done;
    for (const auto& r : reads) {
      if (!was_fp32.count(r) || !done.insert(r).second) continue;
      const std::string f = g.unique_name(r + "_fp32");
      ir::Node c;
      c.name = g.unique_name(r + "_cast_fp32");
      c.op_type = "Cast";
      c.inputs = {r};
      c.outputs = {f};
      c.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat32));
      out.push_back(std::move(c));
      for (auto& x : n.inputs)
        if (x == r) x = f;
      for (auto& [name, a] : n.attributes)
        if (a.kind == ir::Attribute::Kind::kGraph && a.g) rename_reads(*a.g, r, f);
    }
    std::vector<ir::Node> after;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty() || control_flow_output_dtype(n, k) != DataType::kFloat32) continue;
      const std::string f = g.unique_name(n.outputs[k] + "_fp32");
      ir::Node c;
      c.name = g.unique_name(n.outputs[k] + "_cast_fp16");
      c.op_type = "Cast";
      c.inputs = {f};
      c.outputs = {n.outputs[k]};
      c.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat16));
      n.outputs[k] = f;
      after.push_back(std::move(c));
    }
    out.push_back(std::move(n));
    for (auto& c : after) out.push_back(std::move(c));
  }
  g.nodes = std::move(out);
}

}  // namespace

void convert_to_fp16(ir::Model& model) {
  TRT_CHECK(model.opset() >= 19, ErrorCode::kInternal, "convert_to_fp16 needs opset >= 19");
  ir::Graph& g = model.graph;
  move_quantized_biases(g);
  // Inputs that must stay fp32 whatever the data type: Resize's roi and scales.
  std::set<std::string> keep;
  for (const auto& n : g.nodes)
    if (n.op_type == "Resize")
      for (size_t i = 1; i < 3 && i < n.inputs.size(); ++i) keep.insert(n.inputs[i]);
  // The float32 values before the conversion (for the control-flow nodes, below).
  std::set<std::string> was_fp32;
  for (const auto& v : g.inputs)
    if (v.dtype == DataType::kFloat32) was_fp32.insert(v.name);
  for (const auto& [name, vi] : g.value_info)
    if (vi.dtype == DataType::kFloat32) was_fp32.insert(name);
  for (auto& [name, t] : g.initializers)
    if (t.dtype() == DataType::kFloat32 && !keep.count(name)) t = to_fp16(t), was_fp32.insert(name);
  for (auto& n : g.nodes) {
    if (n.op_type == "Cast" && n.attr_int("to", 0) == static_cast<int64_t>(DataType::kFloat32))
      n.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat16));
    if (n.op_type == "ConstantOfShape" && n.has_attr("value") &&
        n.attributes["value"].t.dtype() == DataType::kFloat32)
      n.attributes["value"].t = to_fp16(n.attributes["value"].t);
  }
  keep_control_flow_fp32(g, was_fp32);
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
