// The CPU plan's fold_matmul_permutes (passes.h): the Transposes and scalar scalings around a
// float32 MatMul of two activations become attributes of one com.trtutils::PermutedMatMul
// (ops/permuted_matmul.h), which the backend runs over strided views. An exporter's attention
// block (torch.nn.MultiheadAttention, Swin's window attention) transposes q, k and v into heads,
// divides q by sqrt(d) and transposes the product back: ViT-B/16 spent 6.7 ms of 210 at batch 1
// in those Transposes and Divs, ONNX Runtime 2.0 (bench/RESULTS.md, issue 36).
#include <cmath>
#include <string>
#include <vector>

#include "ir/graph_builder.h"
#include "passes/fusion_graph.h"
#include "passes/graph_facts.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {
namespace {

// A view being peeled: the value the product reads or writes, its permutation relative to the
// product (empty: none yet), the scale met on the way and the nodes it passed.
struct Side {
  std::string value;
  std::vector<int64_t> perm;
  float alpha = 1.0f;
  std::vector<size_t> nodes;
};

bool one_output(const ir::Node& n) {
  return is_default_domain(n) && n.outputs.size() == 1 && !n.outputs[0].empty();
}

// Node n scales `v` by a float scalar constant (Mul either order, Div with v first) into a value
// of v's shape: the factor, else NaN.
float scale_of(const FusionGraph& fg, const ir::Node& n, const std::string& v) {
  if (!one_output(n) || n.inputs.size() != 2 || (n.op_type != "Mul" && n.op_type != "Div"))
    return NAN;
  if (n.op_type == "Div" && n.inputs[0] != v) return NAN;
  const std::string* c = other(n, v);
  if (!c || *c == v) return NAN;
  const Tensor* t = fg.graph.initializer(*c);
  const float s = fg.scalar(*c);
  if (!t || t->dtype() != DataType::kFloat32 || !std::isfinite(s) || s == 0.0f ||
      static_cast<int64_t>(t->rank()) > std::max<int64_t>(fg.rank_of(v), 0))
    return NAN;
  return n.op_type == "Div" ? 1.0f / s : s;
}

// compose(outer, inner): Transpose(Transpose(x, inner), outer) = Transpose(x, result).
std::vector<int64_t> compose(const std::vector<int64_t>& outer, const std::vector<int64_t>& inner) {
  if (outer.empty()) return inner;
  if (inner.empty()) return outer;
  std::vector<int64_t> r(outer.size());
  for (size_t i = 0; i < outer.size(); ++i) r[i] = inner.at(static_cast<size_t>(outer[i]));
  return r;
}

// Walks up from operand `v` of node `reader` through single-reader Transposes and scalings.
Side peel_operand(const FusionGraph& fg, std::string v, size_t reader) {
  Side s;
  s.value = v;
  for (;;) {
    const auto it = fg.producer.find(s.value);
    if (it == fg.producer.end() || fg.removed[it->second] || fg.only_reader(s.value) != reader)
      return s;
    const ir::Node& p = fg.graph.nodes[it->second];
    const std::vector<int64_t> perm = transpose_perm_of(fg.graph, p);
    float k = NAN;
    if (perm.empty()) {
      if (p.inputs.empty()) return s;
      k = scale_of(fg, p, p.inputs[0]);
      if (std::isnan(k)) return s;
      s.alpha *= k;
    } else {
      if (!s.perm.empty() && s.perm.size() != perm.size()) return s;
      s.perm = compose(s.perm, perm);
    }
    s.nodes.push_back(it->second);
    reader = it->second;
    s.value = p.inputs[0];
  }
}

// Walks down from the product `v` through single-reader Transposes and scalings.
Side peel_result(const FusionGraph& fg, const std::string& v) {
  Side s;
  s.value = v;
  for (;;) {
    const size_t r = fg.only_reader(s.value);
    if (r == SIZE_MAX) return s;
    const ir::Node& n = fg.graph.nodes[r];
    const std::vector<int64_t> perm = transpose_perm_of(fg.graph, n);
    if (perm.empty()) {
      const float k = scale_of(fg, n, s.value);
      if (std::isnan(k)) return s;
      s.alpha *= k;
    } else {
      if (!s.perm.empty() && s.perm.size() != perm.size()) return s;
      s.perm = compose(perm, s.perm);
    }
    s.nodes.push_back(r);
    s.value = n.outputs[0];
  }
}

size_t fold(FusionGraph& fg, size_t i,
            const std::function<bool(const ir::Graph&, const ir::Node&)>& keep) {
  ir::Graph& g = fg.graph;
  const ir::Node& mm = g.nodes[i];
  if (fg.removed[i] || mm.op_type != "MatMul" || !one_output(mm) || mm.inputs.size() != 2 ||
      float_dtype(g, mm.inputs[0]) != DataType::kFloat32 ||
      float_dtype(g, mm.inputs[1]) != DataType::kFloat32 || g.is_initializer(mm.inputs[1]) ||
      fg.rank_of(mm.inputs[0]) < 2 || fg.rank_of(mm.inputs[1]) < 2)
    return 0;
  const Side a = peel_operand(fg, mm.inputs[0], i), b = peel_operand(fg, mm.inputs[1], i);
  Side y = peel_result(fg, mm.outputs[0]);
  auto fused = [&]() {
    ir::Node f;
    f.name = mm.name.empty() ? g.unique_name("PermutedMatMul") : mm.name;
    f.op_type = "PermutedMatMul";
    f.domain = "com.trtutils";
    f.inputs = {a.value, b.value};
    f.outputs = {y.value};
    if (!a.perm.empty()) f.attributes["perm_a"] = ir::attr_ints("perm_a", a.perm);
    if (!b.perm.empty()) f.attributes["perm_b"] = ir::attr_ints("perm_b", b.perm);
    if (!y.perm.empty()) f.attributes["perm_y"] = ir::attr_ints("perm_y", y.perm);
    const float alpha = a.alpha * b.alpha * y.alpha;
    if (alpha != 1.0f) f.attributes["alpha"] = ir::attr_float("alpha", alpha);
    return f;
  };
  if (a.nodes.empty() && b.nodes.empty() && y.nodes.empty()) return 0;
  ir::Node f = fused();
  // A product the backend cannot write through its views (a transposed last axis) may still
  // read its operands through theirs.
  if (keep && !keep(g, f) && !y.nodes.empty() && !(a.nodes.empty() && b.nodes.empty())) {
    y = Side{mm.outputs[0], {}, 1.0f, {}};
    f = fused();
  }
  if (keep && !keep(g, f)) return 0;
  std::vector<size_t> chain = a.nodes;
  chain.insert(chain.end(), b.nodes.begin(), b.nodes.end());
  chain.push_back(i);
  chain.insert(chain.end(), y.nodes.begin(), y.nodes.end());
  for (size_t c : chain)
    if (g.nodes[c].outputs[0] != y.value) g.value_info.erase(g.nodes[c].outputs[0]);
  return fg.place(std::move(f), chain);
}

}  // namespace

size_t fold_matmul_permutes(ir::Graph& graph,
                            const std::function<bool(const ir::Graph&, const ir::Node&)>& keep) {
  FusionGraph fg(graph, 0);
  size_t folded = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) folded += fold(fg, i, keep);
  if (!folded) return 0;
  fg.erase_removed();
  TRT_LOG_VERBOSE("matmul permutes: {} MatMul node(s) read or write through their Transposes",
                  folded);
  return folded;
}

}  // namespace trtutils::passes
