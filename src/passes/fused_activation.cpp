// Helpers of the conv and Q/DQ fusions (passes.h): is_default_domain, set_fused_activation, and
// match_silu, the Sigmoid + Mul pair that exporters write for SiLU, absorbed as one "Silu".
#include "passes/passes.h"

namespace trtutils::passes {

bool is_default_domain(const ir::Node& node) {
  return node.domain.empty() || node.domain == "ai.onnx";
}

void set_fused_activation(ir::Node& node, const std::string& name,
                          const std::vector<float>& params) {
  ir::Attribute a;
  a.name = "activation";
  a.kind = ir::Attribute::Kind::kString;
  a.s = name;
  node.attributes[a.name] = a;
  ir::Attribute p;
  p.name = "activation_params";
  p.kind = ir::Attribute::Kind::kFloats;
  p.floats = params;
  node.attributes[p.name] = p;
}

std::optional<std::pair<size_t, size_t>> match_silu(
    const ir::Graph& graph, const std::string& v, const std::unordered_map<std::string, int>& uses,
    const std::unordered_map<std::string, size_t>& last_reader) {
  const auto u = uses.find(v);
  const auto r = last_reader.find(v);
  if (u == uses.end() || u->second != 2 || r == last_reader.end()) return std::nullopt;
  const size_t mi = r->second;
  const ir::Node& mul = graph.nodes[mi];
  if (mul.op_type != "Mul" || !is_default_domain(mul) || mul.num_inputs() != 2 ||
      mul.outputs.size() != 1 || mul.outputs[0].empty() || mul.inputs[0] == mul.inputs[1])
    return std::nullopt;
  const std::string& s = mul.inputs[0] == v ? mul.inputs[1] : mul.inputs[0];
  if ((mul.inputs[0] != v && mul.inputs[1] != v) || s.empty()) return std::nullopt;
  const auto su = uses.find(s);
  if (su == uses.end() || su->second != 1) return std::nullopt;
  // The Sigmoid making s comes before the Mul (topological order).
  for (size_t i = mi; i-- > 0;) {
    const ir::Node& n = graph.nodes[i];
    if (n.outputs.empty() || n.outputs[0] != s) continue;
    if (n.op_type != "Sigmoid" || !is_default_domain(n) || n.outputs.size() != 1 ||
        n.num_inputs() != 1 || n.inputs[0] != v)
      return std::nullopt;
    return std::make_pair(i, mi);
  }
  return std::nullopt;
}

}  // namespace trtutils::passes
