// Squeeze-excitation fusion (CPU plan): GlobalAveragePool(X) -> 1x1 conv [-> act] -> 1x1 conv ->
// Sigmoid | HardSigmoid -> Mul(X, gate) becomes one com.trtutils::SqueezeExcite node. Unfused,
// the block is five layers: two passes over X (the pool, the broadcast Mul) with two tiny
// convolutions between them, each a parallel region of its own, and in a channels-last plan two
// Transposes of X around it. Fused, the convolutions are a few dot products inside the node.
#include <unordered_map>

#include "ir/graph_builder.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

namespace {

struct SeMatch {
  std::vector<size_t> nodes;  // GAP, conv1, conv2, [gate], Mul
  ir::Node fused;
};

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

bool is_float32(const ir::Graph& g, const std::string& v) {
  const auto info = g.find_value_info(v);
  return info && info->dtype == DataType::kFloat32;
}

// A float32 1x1 Conv / FusedConv (no residual) from `in_c` to `out_c` channels on a 1x1 input,
// with constant weights (and bias).
bool pointwise(const ir::Graph& g, const ir::Node& n, int64_t in_c, int64_t out_c) {
  const bool conv = is_default_domain(n) && n.op_type == "Conv";
  const bool fused = n.domain == "com.trtutils" && n.op_type == "FusedConv";
  if (!(conv || fused) || n.outputs.size() != 1 || n.inputs.size() > 3 || !n.has_input(1) ||
      n.attr_int("channels_last", 0) != 0 || n.attr_int("group", 1) != 1)
    return false;
  const Tensor* w = g.initializer(n.inputs[1]);
  if (!w || w->dtype() != DataType::kFloat32 || w->shape() != Shape{out_c, in_c, 1, 1})
    return false;
  if (n.has_input(2)) {
    const Tensor* b = g.initializer(n.inputs[2]);
    if (!b || b->dtype() != DataType::kFloat32 || b->numel() != out_c) return false;
  }
  return all_equal(n.attr_ints("strides", {}), 1) && all_equal(n.attr_ints("dilations", {}), 1) &&
         all_equal(n.attr_ints("pads", {}), 0) && all_equal(n.attr_ints("kernel_shape", {}), 1);
}

class SeMatcher {
 public:
  explicit SeMatcher(const ir::Graph& g) : g_(g) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const auto& o : g.nodes[i].outputs) producer_[o] = i;
      for (const auto& in : g.nodes[i].inputs)
        if (!in.empty()) ++uses_[in];
    }
    for (const auto& o : g.outputs) uses_[o.name] += 1000;
  }

  std::optional<SeMatch> match(size_t mul_index) const {
    const ir::Node& mul = g_.nodes[mul_index];
    if (mul.op_type != "Mul" || !is_default_domain(mul) || mul.num_inputs() != 2 ||
        mul.outputs.size() != 1 || mul.inputs[0] == mul.inputs[1])
      return std::nullopt;
    for (int k = 0; k < 2; ++k)
      if (auto m = match_operands(mul_index, mul.inputs[k], mul.inputs[1 - k])) return m;
    return std::nullopt;
  }

 private:
  // The node making v when v has exactly one reader, else nullptr.
  std::optional<size_t> single_use_producer(const std::string& v) const {
    const auto u = uses_.find(v);
    const auto p = producer_.find(v);
    if (u == uses_.end() || u->second != 1 || p == producer_.end()) return std::nullopt;
    return p->second;
  }

  // The gate making s: a Sigmoid / HardSigmoid node after conv2, or conv2's own fused Sigmoid.
  // Sets the gate attributes on `f`; returns conv2's index and the gate node's (if any).
  std::optional<std::vector<size_t>> match_gate(const std::string& s, ir::Node& f) const {
    const auto gi = single_use_producer(s);
    if (!gi) return std::nullopt;
    const ir::Node& n = g_.nodes[*gi];
    if (!is_default_domain(n) || (n.op_type != "Sigmoid" && n.op_type != "HardSigmoid")) {
      if (n.attr_string("activation", "") != "Sigmoid") return std::nullopt;
      f.attributes["gate"] = ir::attr_string("gate", "Sigmoid");
      return std::vector<size_t>{*gi};
    }
    f.attributes["gate"] = ir::attr_string("gate", n.op_type);
    if (n.op_type == "HardSigmoid")
      f.attributes["gate_params"] =
          ir::attr_floats("gate_params", {n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)});
    const auto ci = single_use_producer(n.inputs.at(0));
    if (!ci || !g_.nodes[*ci].attr_string("activation", "").empty()) return std::nullopt;
    return std::vector<size_t>{*ci, *gi};
  }

  std::optional<SeMatch> match_operands(size_t mul_index, const std::string& x,
                                        const std::string& s) const {
    const auto xs = g_.find_value_info(x);
    const auto ys = g_.find_value_info(g_.nodes[mul_index].outputs[0]);
    if (!xs || !xs->shape || xs->shape->size() != 4 || !(*xs->shape)[1].is_static() || !ys ||
        ys->shape != xs->shape || !is_float32(g_, x) || !is_float32(g_, s))
      return std::nullopt;
    const int64_t c = (*xs->shape)[1].value;
    SeMatch m;
    ir::Node& f = m.fused;
    const auto chain = match_gate(s, f);
    if (!chain) return std::nullopt;
    const ir::Node* conv2 = &g_.nodes[chain->front()];
    const Tensor* w2 = conv2->has_input(1) ? g_.initializer(conv2->inputs[1]) : nullptr;
    if (!w2 || w2->rank() != 4) return std::nullopt;
    const int64_t r = w2->dim(1);
    if (!pointwise(g_, *conv2, r, c)) return std::nullopt;
    const auto c1 = single_use_producer(conv2->inputs[0]);
    if (!c1 || !pointwise(g_, g_.nodes[*c1], c, r)) return std::nullopt;
    const ir::Node& conv1 = g_.nodes[*c1];
    const auto pi = single_use_producer(conv1.inputs[0]);
    if (!pi) return std::nullopt;
    const ir::Node& gap = g_.nodes[*pi];
    if (gap.op_type != "GlobalAveragePool" || !is_default_domain(gap) || gap.inputs.size() != 1 ||
        gap.inputs[0] != x)
      return std::nullopt;
    m.nodes = {*pi, *c1};
    m.nodes.insert(m.nodes.end(), chain->begin(), chain->end());
    m.nodes.push_back(mul_index);
    f.name = g_.nodes[mul_index].name;
    f.op_type = "SqueezeExcite";
    f.domain = "com.trtutils";
    auto opt = [](const ir::Node& n, size_t i) { return n.has_input(i) ? n.inputs[i] : ""; };
    f.inputs = {x, conv1.inputs[1], opt(conv1, 2), conv2->inputs[1], opt(*conv2, 2)};
    f.outputs = g_.nodes[mul_index].outputs;
    for (const char* a : {"activation", "activation_params"})
      if (auto it = conv1.attributes.find(a); it != conv1.attributes.end())
        f.attributes[a] = it->second;
    return m;
  }

  const ir::Graph& g_;
  std::unordered_map<std::string, size_t> producer_;
  std::unordered_map<std::string, int> uses_;
};

}  // namespace

size_t fuse_squeeze_excite(ir::Graph& graph) {
  const SeMatcher matcher(graph);
  std::vector<bool> removed(graph.nodes.size(), false);
  std::unordered_map<size_t, ir::Node> replacement;  // the Mul's index -> the fused node
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    auto m = matcher.match(i);
    if (!m) continue;
    bool free = true;
    for (size_t k : m->nodes) free = free && !removed[k];
    if (!free) continue;
    for (size_t k : m->nodes) {
      removed[k] = true;
      if (k != i) graph.value_info.erase(graph.nodes[k].outputs[0]);
    }
    replacement.emplace(i, std::move(m->fused));
  }
  if (replacement.empty()) return 0;
  const size_t fused = replacement.size();
  splice_nodes(graph, replacement, removed);
  TRT_LOG_VERBOSE("squeeze-excitation fusion: {} block(s) fused", fused);
  return fused;
}

}  // namespace trtutils::passes
