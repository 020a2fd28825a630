// The CUDA executor's own fusions, on its private copy of the engine graph (the engine file and
// the CPU backend keep the plain ops; see cuda_ops.h, fuse_for_gpu):
//   MatMul(A, B 2-D) -> Add(bias of B's N columns)         => com.trtutils.cuda::MatMulBias
//   ... -> x * 0.5 * (1 + Erf(x / sqrt(2)))  (exact GELU)  => the same node with gelu = 1, or
//                                                             com.trtutils.cuda::Gelu alone
// The MatMul's bias rides in cuBLASLt's epilogue and the GELU runs as one exact (erf) pass, where
// the exporters' graphs run seven memory passes. Intermediate values must have one reader (the
// GELU input two: Div and Mul) and must not be graph outputs.
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "backends/cuda/cuda_ops.h"
#include "trtutils/logging.h"

namespace trtutils::cuda {

namespace {

bool default_domain(const ir::Node& n) {
  return n.domain.empty() || n.domain == "ai.onnx";
}

class Fuser {
 public:
  explicit Fuser(ir::Graph& g) : g_(g) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (const auto& in : g_.nodes[i].inputs)
        if (!in.empty()) readers_[in].push_back(i);
    }
    for (const auto& o : g_.outputs) graph_outputs_.insert(o.name);
    removed_.assign(g_.nodes.size(), false);
  }

  size_t run() {
    size_t fused = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (removed_[i]) continue;
      const ir::Node& n = g_.nodes[i];
      if (!default_domain(n)) continue;
      if (n.op_type == "MatMul") {
        fused += fuse_matmul(i);
      } else if (n.op_type == "Div" || n.op_type == "Mul") {
        fused += fuse_gelu_alone(i);
      }
    }
    if (fused) {
      std::vector<ir::Node> kept;
      kept.reserve(g_.nodes.size());
      for (size_t i = 0; i < g_.nodes.size(); ++i)
        if (!removed_[i]) kept.push_back(std::move(g_.nodes[i]));
      g_.nodes = std::move(kept);
    }
    return fused;
  }

 private:
  // The single reader of value v (not a graph output), or SIZE_MAX.
  size_t only_reader(const std::string& v) const {
    if (graph_outputs_.count(v)) return SIZE_MAX;
    auto it = readers_.find(v);
    if (it == readers_.end() || it->second.size() != 1) return SIZE_MAX;
    return removed_[it->second[0]] ? SIZE_MAX : it->second[0];
  }
  // The one float value of an initializer, or NaN.
  float scalar(const std::string& v) const {
    const Tensor* t = g_.initializer(v);
    if (!t || t->numel() != 1) return NAN;
    if (t->dtype() != DataType::kFloat32 && t->dtype() != DataType::kFloat16 &&
        t->dtype() != DataType::kBFloat16)
      return NAN;
    return static_cast<float>(t->at_double(0));
  }
  static bool near(float v, double want) { return std::fabs(v - want) <= 1e-3 * std::fabs(want); }
  // The other input of a two-input node, given one of them.
  static const std::string* other(const ir::Node& n, const std::string& v) {
    if (n.inputs.size() != 2) return nullptr;
    if (n.inputs[0] == v) return &n.inputs[1];
    if (n.inputs[1] == v) return &n.inputs[0];
    return nullptr;
  }

  // x -> Div(x, sqrt 2) | Mul(x, 1/sqrt 2) -> Erf -> Add(1) -> Mul(x, .) -> Mul(0.5), starting at
  // the Div/Mul node `d` that reads x; fills the chain's nodes and returns the output, or "".
  std::string match_gelu(const std::string& x, std::vector<size_t>& chain) const {
    auto it = readers_.find(x);
    if (it == readers_.end() || it->second.size() != 2 || graph_outputs_.count(x)) return "";
    size_t d = SIZE_MAX, m = SIZE_MAX;
    for (size_t r : it->second) {
      const ir::Node& n = g_.nodes[r];
      if (removed_[r] || !default_domain(n)) return "";
      const std::string* o = other(n, x);
      if (!o) return "";
      if (n.op_type == "Div" && n.inputs[0] == x && near(scalar(*o), std::sqrt(2.0))) {
        d = r;
      } else if (n.op_type == "Mul" && near(scalar(*o), std::sqrt(0.5))) {
        d = r;
      } else if (n.op_type == "Mul") {
        m = r;
      }
    }
    if (d == SIZE_MAX || m == SIZE_MAX) return "";
    const size_t e = only_reader(g_.nodes[d].outputs[0]);
    if (e == SIZE_MAX || g_.nodes[e].op_type != "Erf" || !default_domain(g_.nodes[e])) return "";
    const size_t a = only_reader(g_.nodes[e].outputs[0]);
    if (a == SIZE_MAX || g_.nodes[a].op_type != "Add" || !default_domain(g_.nodes[a])) return "";
    const std::string* one = other(g_.nodes[a], g_.nodes[e].outputs[0]);
    if (!one || !near(scalar(*one), 1.0)) return "";
    const size_t m1 = only_reader(g_.nodes[a].outputs[0]);
    if (m1 != m) return "";
    const std::string* xm = other(g_.nodes[m], g_.nodes[a].outputs[0]);
    if (!xm || *xm != x) return "";
    const size_t h = only_reader(g_.nodes[m].outputs[0]);
    if (h == SIZE_MAX || g_.nodes[h].op_type != "Mul" || !default_domain(g_.nodes[h])) return "";
    const std::string* half = other(g_.nodes[h], g_.nodes[m].outputs[0]);
    if (!half || !near(scalar(*half), 0.5)) return "";
    chain = {d, e, a, m, h};
    return g_.nodes[h].outputs[0];
  }

  size_t fuse_matmul(size_t i) {
    const ir::Node& mm = g_.nodes[i];
    if (mm.inputs.size() != 2 || mm.outputs.size() != 1) return 0;
    // B 2-D with N columns (a constant weight in practice; any 2-D value works).
    auto bi = g_.value_info.find(mm.inputs[1]);
    const Tensor* bt = g_.initializer(mm.inputs[1]);
    int64_t n = -1;
    if (bt && bt->rank() == 2) {
      n = bt->dim(1);
    } else if (bi != g_.value_info.end() && bi->second.shape && bi->second.shape->size() == 2 &&
               (*bi->second.shape)[1].is_static()) {
      n = (*bi->second.shape)[1].value;
    }
    if (n <= 0) return 0;
    const size_t add = only_reader(mm.outputs[0]);
    if (add == SIZE_MAX || g_.nodes[add].op_type != "Add" || !default_domain(g_.nodes[add]))
      return 0;
    const std::string* bias = other(g_.nodes[add], mm.outputs[0]);
    const Tensor* b = bias ? g_.initializer(*bias) : nullptr;
    if (!b || b->numel() != n || b->rank() < 1 || b->dim(b->rank() - 1) != n) return 0;
    if (bt && bt->dtype() != b->dtype()) return 0;
    ir::Node f;
    f.name = mm.name;
    f.op_type = "MatMulBias";
    f.domain = kGpuDomain;
    f.inputs = {mm.inputs[0], mm.inputs[1], *bias};
    std::string out = g_.nodes[add].outputs[0];
    std::vector<size_t> chain;
    const std::string gelu = match_gelu(out, chain);
    ir::Attribute a;
    a.name = "gelu";
    a.kind = ir::Attribute::Kind::kInt;
    a.i = gelu.empty() ? 0 : 1;
    f.attributes[a.name] = a;
    if (!gelu.empty()) {
      for (size_t c : chain) removed_[c] = true;
      out = gelu;
    }
    f.outputs = {out};
    removed_[add] = true;
    const size_t last = chain.empty() ? add : chain.back();
    // The fused node takes the place of the chain's last node (its inputs exist by then).
    g_.nodes[last] = std::move(f);
    removed_[last] = false;
    removed_[i] = true;
    return 1;
  }

  size_t fuse_gelu_alone(size_t i) {
    const ir::Node& d = g_.nodes[i];
    if (d.inputs.size() != 2 || d.outputs.size() != 1) return 0;
    std::vector<size_t> chain;
    // x: the input that is not the constant (Div(x, c), Mul(x, c) or Mul(c, x)).
    const std::string x = g_.initializer(d.inputs[0]) ? d.inputs[1] : d.inputs[0];
    const std::string y = match_gelu(x, chain);
    if (y.empty() || chain.front() != i) return 0;
    ir::Node f;
    f.name = g_.nodes[chain.back()].name.empty() ? d.name : g_.nodes[chain.back()].name;
    f.op_type = "Gelu";
    f.domain = kGpuDomain;
    f.inputs = {x};
    f.outputs = {y};
    for (size_t c : chain) removed_[c] = true;
    g_.nodes[chain.back()] = std::move(f);
    removed_[chain.back()] = false;
    return 1;
  }

  ir::Graph& g_;
  std::unordered_map<std::string, std::vector<size_t>> readers_;
  std::unordered_set<std::string> graph_outputs_;
  std::vector<bool> removed_;
};

}  // namespace

size_t fuse_for_gpu(ir::Graph& graph) {
  const size_t n = Fuser(graph).run();
  if (n) TRT_LOG_VERBOSE("cuda fusion: {} MatMul bias / GELU chain(s) fused", n);
  return n;
}

}  // namespace trtutils::cuda
