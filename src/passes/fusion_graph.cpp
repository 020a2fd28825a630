// The fusions' shared graph index and tails (fusion_graph.h).
#include "passes/fusion_graph.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "passes/passes.h"

namespace trtutils::passes {

FusionGraph::FusionGraph(ir::Graph& g, int64_t opset) : graph(g), opset(opset) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const auto& in : graph.nodes[i].inputs)
      if (!in.empty()) readers[in].push_back(i);
    for (const auto& in : graph.nodes[i].implicit_inputs())  // an If / Loop body reads it
      readers[in].push_back(i);
    for (const auto& o : graph.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  }
  for (const auto& o : graph.outputs) graph_outputs.insert(o.name);
  removed.assign(graph.nodes.size(), false);
}

size_t FusionGraph::only_reader(const std::string& v) const {
  if (graph_outputs.count(v)) return SIZE_MAX;
  auto it = readers.find(v);
  if (it == readers.end() || it->second.size() != 1) return SIZE_MAX;
  return removed[it->second[0]] ? SIZE_MAX : it->second[0];
}

float FusionGraph::scalar(const std::string& v) const {
  const Tensor* t = graph.initializer(v);
  if (!t || t->numel() != 1) return NAN;
  if (t->dtype() != DataType::kFloat32 && t->dtype() != DataType::kFloat16 &&
      t->dtype() != DataType::kBFloat16)
    return NAN;
  return static_cast<float>(t->at_double(0));
}

std::optional<ir::SymShape> FusionGraph::shape_of(const std::string& v) const {
  auto it = graph.value_info.find(v);
  if (it != graph.value_info.end()) return it->second.shape;
  for (const auto& in : graph.inputs)
    if (in.name == v) return in.shape;
  if (const Tensor* t = graph.initializer(v)) return ir::sym_shape_from_static(t->shape());
  return std::nullopt;
}

int64_t FusionGraph::rank_of(const std::string& v) const {
  const auto s = shape_of(v);
  return s ? static_cast<int64_t>(s->size()) : -1;
}

std::vector<int64_t> FusionGraph::static_shape(const std::string& v) const {
  const auto s = shape_of(v);
  std::vector<int64_t> r;
  if (!s) return r;
  for (const ir::Dim& d : *s) {
    if (!d.is_static() || d.value <= 0) return {};
    r.push_back(d.value);
  }
  return r;
}

size_t FusionGraph::index_of(const ir::Node& n) const {
  return static_cast<size_t>(&n - graph.nodes.data());
}

size_t FusionGraph::place(ir::Node f, const std::vector<size_t>& chain) {
  const size_t last = chain.back();
  for (size_t c : chain) removed[c] = true;
  graph.nodes[last] = std::move(f);
  removed[last] = false;
  last_fused = last;
  return 1;
}

void FusionGraph::erase_removed() {
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(kept);
  removed.assign(graph.nodes.size(), false);
}

bool near(float v, double want) {
  return std::fabs(v - want) <= 1e-3 * std::fabs(want);
}

const std::string* other(const ir::Node& n, const std::string& v) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == v) return &n.inputs[1];
  if (n.inputs[1] == v) return &n.inputs[0];
  return nullptr;
}

std::string match_gelu(const FusionGraph& fg, const std::string& x, std::vector<size_t>& chain) {
  auto it = fg.readers.find(x);
  if (it == fg.readers.end() || it->second.size() != 2 || fg.graph_outputs.count(x)) return "";
  size_t d = SIZE_MAX, m = SIZE_MAX;
  for (size_t r : it->second) {
    const ir::Node& n = fg.graph.nodes[r];
    if (fg.removed[r] || !is_default_domain(n)) return "";
    const std::string* o = other(n, x);
    if (!o) return "";
    if (n.op_type == "Div" && n.inputs[0] == x && near(fg.scalar(*o), std::sqrt(2.0))) {
      d = r;
    } else if (n.op_type == "Mul" && near(fg.scalar(*o), std::sqrt(0.5))) {
      d = r;
    } else if (n.op_type == "Mul") {
      m = r;
    }
  }
  if (d == SIZE_MAX || m == SIZE_MAX) return "";
  const size_t e = fg.only_reader(fg.graph.nodes[d].outputs[0]);
  if (e == SIZE_MAX || fg.graph.nodes[e].op_type != "Erf" || !is_default_domain(fg.graph.nodes[e]))
    return "";
  const size_t a = fg.only_reader(fg.graph.nodes[e].outputs[0]);
  if (a == SIZE_MAX || fg.graph.nodes[a].op_type != "Add" || !is_default_domain(fg.graph.nodes[a]))
    return "";
  const std::string* one = other(fg.graph.nodes[a], fg.graph.nodes[e].outputs[0]);
  if (!one || !near(fg.scalar(*one), 1.0)) return "";
  const size_t m1 = fg.only_reader(fg.graph.nodes[a].outputs[0]);
  if (m1 != m) return "";
  const std::string* xm = other(fg.graph.nodes[m], fg.graph.nodes[a].outputs[0]);
  if (!xm || *xm != x) return "";
  const size_t h = fg.only_reader(fg.graph.nodes[m].outputs[0]);
  if (h == SIZE_MAX || fg.graph.nodes[h].op_type != "Mul" || !is_default_domain(fg.graph.nodes[h]))
    return "";
  const std::string* half = other(fg.graph.nodes[h], fg.graph.nodes[m].outputs[0]);
  if (!half || !near(fg.scalar(*half), 0.5)) return "";
  chain = {d, e, a, m, h};
  return fg.graph.nodes[h].outputs[0];
}

std::string match_residual(const FusionGraph& fg, const std::string& y, ir::Node& f,
                           std::vector<size_t>& chain) {
  const size_t r = fg.only_reader(y);
  if (r == SIZE_MAX) return y;
  const ir::Node& add = fg.graph.nodes[r];
  if (add.op_type != "Add" || !is_default_domain(add) || add.outputs.size() != 1) return y;
  const std::string* res = other(add, y);
  if (!res || *res == y) return y;
  const auto ys = fg.shape_of(y), rs = fg.shape_of(*res);
  if (!ys || !rs || *ys != *rs) return y;
  for (const ir::Dim& d : *ys)  // unknown dims could differ at run time
    if (!d.is_static() && d.param.empty()) return y;
  f.inputs.push_back(*res);
  chain.push_back(r);
  return add.outputs[0];
}

}  // namespace trtutils::passes
