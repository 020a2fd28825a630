// Helpers of the conv, Q/DQ and GPU fusions (passes.h): as_activation, is_default_domain,
// set_fused_activation, and
// match_silu, the Sigmoid + Mul pair that exporters write for SiLU, absorbed as one "Silu".
#include <limits>

#include "passes/passes.h"

namespace trtutils::passes {

// A scalar float32 / float16 / bfloat16 initializer (as float), or nullopt.
static std::optional<float> scalar_constant(const ir::Graph& g, const std::string& v) {
  const Tensor* t = g.initializer(v);
  if (!t || t->numel() != 1) return std::nullopt;
  const DataType dt = t->dtype();
  if (dt != DataType::kFloat32 && dt != DataType::kFloat16 && dt != DataType::kBFloat16)
    return std::nullopt;
  return static_cast<float>(t->at_double(0));
}

// The activation `n` computes when oneDNN has an exact eltwise post-op for it.
std::optional<Activation> as_activation(const ir::Graph& g, const ir::Node& n, int64_t opset) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return std::nullopt;
  if (n.outputs.size() != 1 || n.outputs[0].empty() || !n.has_input(0)) return std::nullopt;
  const std::string& op = n.op_type;
  if (op == "Relu" || op == "Sigmoid" || op == "HardSwish") return Activation{op, {}};
  if (op == "LeakyRelu") return Activation{op, {n.attr_float("alpha", 0.01f)}};
  if (op == "Clip") {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    float lo = -kInf, hi = kInf;
    if (opset < 11) {
      lo = n.attr_float("min", -std::numeric_limits<float>::max());
      hi = n.attr_float("max", std::numeric_limits<float>::max());
    } else {
      if (n.has_input(1)) {
        const auto v = scalar_constant(g, n.inputs[1]);
        if (!v) return std::nullopt;
        lo = *v;
      }
      if (n.has_input(2)) {
        const auto v = scalar_constant(g, n.inputs[2]);
        if (!v) return std::nullopt;
        hi = *v;
      }
    }
    if (!(lo <= hi)) return std::nullopt;  // ONNX's result for min > max is not a clip
    return Activation{op, {lo, hi}};
  }
  return std::nullopt;
}

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
