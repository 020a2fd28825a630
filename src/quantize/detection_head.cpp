#include "quantize/detection_head.h"

#include <unordered_map>

namespace trtutils::quantize {

namespace {

bool is_feature_layer(const ir::Graph& g, const ir::Node& n) {
  const std::string& op = n.op_type;
  if (op != "Conv" && op != "ConvTranspose" && op != "Gemm" && op != "MatMul") return false;
  if (!n.has_input(1)) return false;
  const Tensor* w = g.initializer(n.inputs[1]);
  if (w == nullptr) return true;  // a product of two activations (attention)
  if (w->rank() < 1 || w->numel() < 256) return false;
  int64_t out = w->dim(0);
  if (op == "ConvTranspose" && w->rank() >= 2) out = w->dim(1) * n.attr_int("group", 1);
  if (op == "MatMul") out = w->dim(w->rank() - 1);
  if (op == "Gemm" && w->rank() == 2 && n.attr_int("transB", 0) == 0) out = w->dim(1);
  return out >= 2;
}

bool is_flattening_point(const ir::Graph& g, const ir::Node& n) {
  if (n.op_type != "Reshape" && n.op_type != "Flatten") return false;
  if (n.inputs.empty() || n.outputs.empty()) return false;
  const auto in = g.find_value_info(n.inputs[0]);
  const auto out = g.find_value_info(n.outputs[0]);
  if (!in || !in->shape || in->shape->size() != 4) return false;
  if (!out || !out->shape || out->shape->size() == 4) return false;
  const ir::Dim& h = (*in->shape)[2];
  const ir::Dim& w = (*in->shape)[3];
  // A symbolic spatial size counts as more than one position.
  return !(h.is_static() && w.is_static() && h.value * w.value <= 1);
}

}  // namespace

std::vector<std::string> detection_head_decode_nodes(const ir::Graph& g) {
  const size_t count = g.nodes.size();
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < count; ++i) {
    for (const auto& in : g.nodes[i].inputs)
      if (!in.empty()) consumers[in].push_back(i);
    for (const auto& in : g.nodes[i].implicit_inputs()) consumers[in].push_back(i);
  }
  // Nodes are in topological order: a node reaches a feature layer when one of its consumers is
  // one or reaches one (computed last to first).
  std::vector<char> reaches_feature(count, 0);
  for (size_t i = count; i-- > 0;) {
    for (const auto& o : g.nodes[i].outputs) {
      auto it = consumers.find(o);
      if (it == consumers.end()) continue;
      for (size_t c : it->second)
        if (reaches_feature[c] || is_feature_layer(g, g.nodes[c])) reaches_feature[i] = 1;
    }
  }
  // Forward from the flattening points.
  std::vector<char> decode(count, 0);
  for (size_t i = 0; i < count; ++i) {
    const ir::Node& n = g.nodes[i];
    if (!decode[i] && !is_flattening_point(g, n)) continue;
    if (reaches_feature[i] || is_feature_layer(g, n)) {
      decode[i] = 0;
      continue;
    }
    decode[i] = 1;
    for (const auto& o : n.outputs) {
      auto it = consumers.find(o);
      if (it == consumers.end()) continue;
      for (size_t c : it->second) decode[c] = 1;
    }
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i)
    if (decode[i]) names.push_back(g.nodes[i].name);
  return names;
}

}  // namespace trtutils::quantize
