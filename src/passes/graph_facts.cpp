// The fusion passes' questions about a graph (see graph_facts.h).
#include "passes/graph_facts.h"

#include "core/check.h"
#include "ops/tensor_shapes.h"
#include "passes/passes.h"

namespace trtutils::passes {

void count_uses(const ir::Graph& g, std::unordered_map<std::string, int>& uses) {
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs)
      if (!in.empty()) ++uses[in];
    for (const auto& [name, a] : n.attributes)
      if (a.kind == ir::Attribute::Kind::kGraph && a.g) {
        count_uses(*a.g, uses);
        for (const auto& o : a.g->outputs) ++uses[o.name];
      }
  }
}

DataType dtype_of(const ir::Graph& g, const std::string& v) {
  if (const Tensor* t = g.initializer(v)) return t->dtype();
  const auto info = g.find_value_info(v);
  return info ? info->dtype : DataType::kUndefined;
}

std::optional<ir::SymShape> known_shape(const ir::Graph& g, const std::string& v) {
  if (const Tensor* t = g.initializer(v)) return ir::sym_shape_from_static(t->shape());
  const auto info = g.find_value_info(v);
  if (!info || !info->shape) return std::nullopt;
  for (const auto& d : *info->shape)
    if (!d.is_static() && d.param.empty()) return std::nullopt;
  return info->shape;
}

DataType float_dtype(const ir::Graph& g, const std::string& v) {
  const DataType t = dtype_of(g, v);
  const bool ok = t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
  return ok ? t : DataType::kUndefined;
}

std::vector<int64_t> transpose_perm_of(const ir::Graph& g, const ir::Node& n) {
  if (n.op_type != "Transpose" || !is_default_domain(n) || n.inputs.size() != 1 ||
      n.outputs.size() != 1 || n.outputs[0].empty())
    return {};
  const auto shape = known_shape(g, n.inputs[0]);
  if (!shape) return {};
  try {
    return ops::transpose_perm(n, shape->size());
  } catch (const Error&) {  // not a permutation of the input's axes: the kernel reports it
    return {};
  }
}

}  // namespace trtutils::passes
