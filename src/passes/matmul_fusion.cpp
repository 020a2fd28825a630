// MatMul fusion for the CPU plan: MatMul(A, W) -> Add(bias) [-> erf GELU] [-> Add(residual)]
// becomes one com.trtutils::FusedMatMul (passes.h), which the CPU backend runs as one oneDNN
// matmul with a bias and post-ops instead of up to eight passes over memory (a transformer's
// projections and MLP: ViT-B/16 spent 45 of 285 ms at batch 1 in the Add / Div / Erf / Mul nodes
// around its products).
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "passes/graph_facts.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {
namespace {

// The graph with its readers: values read once, scalar constants, the other input of a pair.
class MatmulFuser {
 public:
  explicit MatmulFuser(ir::Graph& g) : g_(g), removed_(g.nodes.size(), false) {
    count_uses(g_, uses_);
    for (const auto& o : g_.outputs) uses_[o.name] += 1000;  // never fuse away a graph output
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      for (const auto& in : g_.nodes[i].inputs)
        if (!in.empty()) readers_[in].push_back(i);
  }

  size_t run() {
    size_t fused = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) fused += try_fuse(i);
    if (fused) splice_nodes(g_, replacement_, removed_);
    return fused;
  }

 private:
  // The one node reading v (read once, not a graph output, not yet fused), else SIZE_MAX.
  size_t only_reader(const std::string& v) const {
    auto u = uses_.find(v);
    auto r = readers_.find(v);
    if (u == uses_.end() || u->second != 1 || r == readers_.end() || r->second.size() != 1)
      return SIZE_MAX;
    return removed_[r->second[0]] ? SIZE_MAX : r->second[0];
  }
  // Node i when it is a default-domain `op` with two inputs and one output.
  bool binary(size_t i, const char* op) const {
    if (i == SIZE_MAX) return false;
    const ir::Node& n = g_.nodes[i];
    return n.op_type == op && is_default_domain(n) && n.inputs.size() == 2 &&
           n.outputs.size() == 1 && !n.outputs[0].empty();
  }
  const std::string* other(const ir::Node& n, const std::string& v) const {
    if (n.inputs[0] == v) return &n.inputs[1];
    if (n.inputs[1] == v) return &n.inputs[0];
    return nullptr;
  }
  // The value of a one-element float initializer near `want`.
  bool scalar_near(const std::string* v, double want) const {
    const Tensor* t = v ? g_.initializer(*v) : nullptr;
    if (!t || t->numel() != 1 || float_dtype(g_, *v) == DataType::kUndefined) return false;
    return std::fabs(t->at_double(0) - want) <= 1e-4 * std::fabs(want);
  }

  // x -> Div(x, sqrt 2) | Mul(x, 1/sqrt 2) -> Erf -> Add(1) -> Mul(x, .) -> Mul(0.5), as torch
  // exports nn.GELU(); x read by the Div and the Mul only. Appends the five nodes to chain and
  // returns the output, else "".
  std::string match_gelu(const std::string& x, std::vector<size_t>& chain) const {
    auto u = uses_.find(x);
    auto r = readers_.find(x);
    if (u == uses_.end() || u->second != 2 || r == readers_.end() || r->second.size() != 2)
      return "";
    size_t d = SIZE_MAX, m = SIZE_MAX;
    for (size_t k : r->second) {
      if (removed_[k]) return "";
      const ir::Node& n = g_.nodes[k];
      if (binary(k, "Div") && n.inputs[0] == x && scalar_near(&n.inputs[1], std::sqrt(2.0)))
        d = k;
      else if (binary(k, "Mul") && scalar_near(other(n, x), std::sqrt(0.5)))
        d = k;
      else if (binary(k, "Mul"))
        m = k;
    }
    if (d == SIZE_MAX || m == SIZE_MAX) return "";
    const size_t e = only_reader(g_.nodes[d].outputs[0]);
    if (e == SIZE_MAX || g_.nodes[e].op_type != "Erf" || !is_default_domain(g_.nodes[e]) ||
        g_.nodes[e].outputs.size() != 1)
      return "";
    const size_t a = only_reader(g_.nodes[e].outputs[0]);
    if (!binary(a, "Add") || !scalar_near(other(g_.nodes[a], g_.nodes[e].outputs[0]), 1.0))
      return "";
    if (only_reader(g_.nodes[a].outputs[0]) != m) return "";
    const std::string* xm = other(g_.nodes[m], g_.nodes[a].outputs[0]);
    if (!xm || *xm != x) return "";
    const size_t h = only_reader(g_.nodes[m].outputs[0]);
    if (!binary(h, "Mul") || !scalar_near(other(g_.nodes[h], g_.nodes[m].outputs[0]), 0.5))
      return "";
    chain.insert(chain.end(), {d, e, a, m, h});
    return g_.nodes[h].outputs[0];
  }

  // y -> Add(y, r) with r of y's shape and dtype: r becomes f's residual; else y.
  std::string match_residual(const std::string& y, ir::Node& f, std::vector<size_t>& chain) const {
    const size_t k = only_reader(y);
    if (!binary(k, "Add")) return y;
    const std::string* r = other(g_.nodes[k], y);
    if (!r || *r == y || float_dtype(g_, *r) != DataType::kFloat32) return y;
    const auto ys = known_shape(g_, y), rs = known_shape(g_, *r);
    if (!ys || !rs || *ys != *rs) return y;
    f.inputs.push_back(*r);
    chain.push_back(k);
    return g_.nodes[k].outputs[0];
  }

  // MatMul(A float32, W float32 2-D initializer [K, N]) -> Add(bias: N float32 values).
  size_t try_fuse(size_t i) {
    const ir::Node& mm = g_.nodes[i];
    if (removed_[i] || !binary(i, "MatMul")) return 0;
    const Tensor* w = g_.initializer(mm.inputs[1]);
    if (!w || w->rank() != 2 || w->dtype() != DataType::kFloat32 ||
        float_dtype(g_, mm.inputs[0]) != DataType::kFloat32)
      return 0;
    const int64_t n = w->dim(1);
    const size_t add = only_reader(mm.outputs[0]);
    if (!binary(add, "Add")) return 0;
    const std::string* bias = other(g_.nodes[add], mm.outputs[0]);
    const Tensor* b = bias ? g_.initializer(*bias) : nullptr;
    if (!b || b->dtype() != DataType::kFloat32 || b->numel() != n || b->rank() < 1 ||
        b->dim(b->rank() - 1) != n)
      return 0;
    ir::Node f;
    f.name = mm.name.empty() ? g_.unique_name("FusedMatMul") : mm.name;
    f.op_type = "FusedMatMul";
    f.domain = "com.trtutils";
    f.inputs = {mm.inputs[0], mm.inputs[1], *bias};
    std::vector<size_t> chain = {add};
    std::string out = g_.nodes[add].outputs[0];
    const std::string gelu = match_gelu(out, chain);
    if (!gelu.empty()) out = gelu;
    out = match_residual(out, f, chain);
    ir::Attribute a;
    a.name = "gelu";
    a.kind = ir::Attribute::Kind::kInt;
    a.i = gelu.empty() ? 0 : 1;
    f.attributes[a.name] = a;
    f.outputs = {out};
    // The fused node takes the place of the chain's last node: every input exists by then.
    removed_[i] = true;
    g_.value_info.erase(mm.outputs[0]);
    for (size_t c : chain) {
      removed_[c] = true;
      if (g_.nodes[c].outputs[0] != out) g_.value_info.erase(g_.nodes[c].outputs[0]);
    }
    replacement_.emplace(chain.back(), std::move(f));
    return 1;
  }

  ir::Graph& g_;
  std::unordered_map<std::string, int> uses_;
  std::unordered_map<std::string, std::vector<size_t>> readers_;
  std::vector<bool> removed_;
  std::unordered_map<size_t, ir::Node> replacement_;
};

}  // namespace

size_t fuse_matmuls(ir::Graph& graph) {
  const size_t fused = MatmulFuser(graph).run();
  if (fused) TRT_LOG_VERBOSE("matmul fusion: {} MatMul node(s) fused", fused);
  return fused;
}

}  // namespace trtutils::passes
