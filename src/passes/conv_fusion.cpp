// Conv fusion: Conv [-> Add(residual)] [-> activation | SiLU as Mul(x, Sigmoid(x))] becomes one
// com.trtutils::FusedConv node
// (see passes.h for its contract), so that the CPU backend runs the add and the activation as
// oneDNN post-ops inside the convolution instead of three passes over memory.
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "passes/graph_facts.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

size_t fuse_convolutions(ir::Graph& graph, int64_t opset) {
  std::unordered_map<std::string, int> uses;
  count_uses(graph, uses);
  for (const auto& o : graph.outputs) uses[o.name] += 1000;  // never fuse away a graph output
  std::unordered_map<std::string, size_t> consumer;          // value -> index of its (last) reader
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const auto& in : graph.nodes[i].inputs)
      if (!in.empty()) consumer[in] = i;
  // A value read once (by node index consumer[v]) and not a graph output.
  auto single_reader = [&](const std::string& v) -> const ir::Node* {
    auto u = uses.find(v);
    if (u == uses.end() || u->second != 1) return nullptr;
    return &graph.nodes[consumer.at(v)];
  };

  std::vector<bool> removed(graph.nodes.size(), false);
  std::unordered_map<size_t, ir::Node> replacement;  // index of a pattern's last node -> fused
  size_t fused = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& conv = graph.nodes[i];
    if (removed[i] || conv.op_type != "Conv" || !(conv.domain.empty() || conv.domain == "ai.onnx"))
      continue;
    if (conv.outputs.size() != 1 || !conv.has_input(0) || !conv.has_input(1)) continue;
    const std::string& y = conv.outputs[0];
    const DataType dt = float_dtype(graph, y);
    if (dt == DataType::kUndefined || float_dtype(graph, conv.inputs[0]) != dt) continue;

    std::vector<size_t> chain;  // nodes after the Conv that the fused node absorbs
    std::string residual, out = y;
    Activation act;
    const ir::Node* next = single_reader(y);
    if (next && !removed[consumer.at(y)] && next->op_type == "Add" && next->domain.empty() &&
        next->inputs.size() == 2 && next->outputs.size() == 1) {
      const std::string& other = next->inputs[0] == y ? next->inputs[1] : next->inputs[0];
      const auto ys = known_shape(graph, y);
      const auto rs = known_shape(graph, other);
      const auto os = known_shape(graph, next->outputs[0]);
      if (other != y && ys && rs && os && *ys == *rs && *ys == *os &&
          float_dtype(graph, other) == dt) {
        residual = other;
        chain.push_back(consumer.at(y));
        out = next->outputs[0];
        next = single_reader(out);
      } else {
        next = nullptr;
      }
    }
    if (next && !removed[consumer.at(out)]) {
      if (auto a = as_activation(graph, *next, opset); a && next->inputs[0] == out) {
        act = *a;
        chain.push_back(consumer.at(out));
        out = next->outputs[0];
      }
    } else if (auto s = match_silu(graph, out, uses, consumer);
               s && !removed[s->first] && !removed[s->second] &&
               float_dtype(graph, graph.nodes[s->second].outputs[0]) == dt) {
      act = Activation{"Silu", {}};
      chain.push_back(s->first);
      chain.push_back(s->second);
      out = graph.nodes[s->second].outputs[0];
    }
    if (chain.empty()) continue;

    ir::Node f;
    f.name = conv.name.empty() ? graph.unique_name("FusedConv") : conv.name;
    f.op_type = "FusedConv";
    f.domain = "com.trtutils";
    f.inputs = {conv.inputs[0], conv.inputs[1], conv.has_input(2) ? conv.inputs[2] : ""};
    if (!residual.empty()) f.inputs.push_back(residual);
    while (!f.inputs.empty() && f.inputs.back().empty()) f.inputs.pop_back();
    f.outputs = {out};
    f.attributes = conv.attributes;
    if (!act.name.empty()) set_fused_activation(f, act.name, act.params);
    // The fused node takes the place of the pattern's last node: all of its inputs (the Conv's
    // and the residual, which the Add read) are computed before that point.
    removed[i] = true;
    for (size_t c : chain) removed[c] = true;
    replacement.emplace(chain.back(), std::move(f));
    graph.value_info.erase(y);
    for (size_t k = 0; k + 1 < chain.size(); ++k)
      graph.value_info.erase(graph.nodes[chain[k]].outputs[0]);
    ++fused;
  }
  if (!fused) return 0;
  splice_nodes(graph, replacement, removed);
  TRT_LOG_VERBOSE("conv fusion: {} Conv node(s) fused", fused);
  return fused;
}

}  // namespace trtutils::passes
