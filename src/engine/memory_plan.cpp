#include "engine/memory_plan.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "passes/passes.h"

namespace trtutils::engine {

MemoryPlan plan_memory(const ir::Model& model, const std::map<std::string, Shape>& input_shapes) {
  MemoryPlan plan;
  ir::Model m = model;  // tensors are shared handles: no weight copy
  ir::Graph& g = m.graph;
  for (const auto& [name, t] : g.initializers) plan.weight_bytes += t.nbytes();
  for (auto& v : g.inputs) {
    auto it = input_shapes.find(v.name);
    if (it != input_shapes.end()) v.shape = ir::sym_shape_from_static(it->second);
  }
  g.value_info.clear();
  passes::infer_shapes(g, m.opset());

  struct Value {
    std::string name;
    uint64_t bytes = 0;
    int64_t first = 0, last = 0;
  };
  std::vector<Value> values;
  std::unordered_map<std::string, size_t> index;
  const int64_t end = static_cast<int64_t>(g.nodes.size());
  auto add = [&](const std::string& name, int64_t first) {
    if (name.empty() || index.count(name) || g.is_initializer(name)) return;
    auto vi = g.find_value_info(name);
    if (!vi || !vi->shape || !ir::sym_shape_is_static(*vi->shape) || dtype_bits(vi->dtype) <= 0) {
      ++plan.unplanned_values;
      return;
    }
    const int64_t n = shape_numel(ir::sym_shape_to_static(*vi->shape));
    index[name] = values.size();
    values.push_back({name, dtype_storage_bytes(vi->dtype, n), first, first});
  };
  for (const auto& v : g.inputs) add(v.name, -1);
  for (int64_t i = 0; i < end; ++i)
    for (const auto& o : g.nodes[static_cast<size_t>(i)].outputs) add(o, i);
  for (int64_t i = 0; i < end; ++i)
    for (const auto& in : g.nodes[static_cast<size_t>(i)].inputs) {
      auto it = index.find(in);
      if (it != index.end()) values[it->second].last = std::max(values[it->second].last, i);
    }
  for (const auto& o : g.outputs) {
    auto it = index.find(o.name);
    if (it != index.end()) values[it->second].last = end;
  }
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a].bytes > values[b].bytes; });
  constexpr uint64_t kAlign = 256;
  struct Placed {
    uint64_t offset, size;
    int64_t first, last;
  };
  std::vector<Placed> placed;
  for (size_t k : order) {
    const Value& v = values[k];
    const uint64_t size = (v.bytes + kAlign - 1) / kAlign * kAlign;
    plan.sum_bytes += v.bytes;
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (const auto& p : placed)
      if (!(p.last < v.first || v.last < p.first)) busy.emplace_back(p.offset, p.offset + p.size);
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (offset + size <= b) break;
      offset = std::max(offset, e);
    }
    placed.push_back({offset, size, v.first, v.last});
    plan.offsets[v.name] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
  }
  plan.planned_values = static_cast<int64_t>(values.size());
  return plan;
}

}  // namespace trtutils::engine
