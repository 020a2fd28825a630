// The exporters' exact GELU chain, x * 0.5 * (1 + Erf(x / sqrt(2))): its matcher (the products'
// epilogues take it too) and com.trtutils.cuda::Gelu for a chain no product absorbs (patterns.h).
// The GELU runs as one exact (erf) pass; the GELU input has two readers (Div and Mul), every
// other value of the chain one.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/patterns.h"

namespace trtutils::cuda::fusion {

std::string match_gelu(const FusionGraph& fg, const std::string& x, std::vector<size_t>& chain) {
  auto it = fg.readers.find(x);
  if (it == fg.readers.end() || it->second.size() != 2 || fg.graph_outputs.count(x)) return "";
  size_t d = SIZE_MAX, m = SIZE_MAX;
  for (size_t r : it->second) {
    const ir::Node& n = fg.graph.nodes[r];
    if (fg.removed[r] || !default_domain(n)) return "";
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
  if (e == SIZE_MAX || fg.graph.nodes[e].op_type != "Erf" || !default_domain(fg.graph.nodes[e]))
    return "";
  const size_t a = fg.only_reader(fg.graph.nodes[e].outputs[0]);
  if (a == SIZE_MAX || fg.graph.nodes[a].op_type != "Add" || !default_domain(fg.graph.nodes[a]))
    return "";
  const std::string* one = other(fg.graph.nodes[a], fg.graph.nodes[e].outputs[0]);
  if (!one || !near(fg.scalar(*one), 1.0)) return "";
  const size_t m1 = fg.only_reader(fg.graph.nodes[a].outputs[0]);
  if (m1 != m) return "";
  const std::string* xm = other(fg.graph.nodes[m], fg.graph.nodes[a].outputs[0]);
  if (!xm || *xm != x) return "";
  const size_t h = fg.only_reader(fg.graph.nodes[m].outputs[0]);
  if (h == SIZE_MAX || fg.graph.nodes[h].op_type != "Mul" || !default_domain(fg.graph.nodes[h]))
    return "";
  const std::string* half = other(fg.graph.nodes[h], fg.graph.nodes[m].outputs[0]);
  if (!half || !near(fg.scalar(*half), 0.5)) return "";
  chain = {d, e, a, m, h};
  return fg.graph.nodes[h].outputs[0];
}

size_t fuse_gelu_alone(FusionGraph& fg, size_t i) {
  const ir::Node& d = fg.graph.nodes[i];
  if (d.inputs.size() != 2 || d.outputs.size() != 1) return 0;
  std::vector<size_t> chain;
  // x: the input that is not the constant (Div(x, c), Mul(x, c) or Mul(c, x)).
  const std::string x = fg.graph.initializer(d.inputs[0]) ? d.inputs[1] : d.inputs[0];
  const std::string y = match_gelu(fg, x, chain);
  if (y.empty() || chain.front() != i) return 0;
  ir::Node f;
  f.name = fg.graph.nodes[chain.back()].name.empty() ? d.name : fg.graph.nodes[chain.back()].name;
  f.op_type = "Gelu";
  f.domain = kGpuDomain;
  f.inputs = {x};
  f.outputs = {y};
  for (size_t c : chain) fg.removed[c] = true;
  fg.graph.nodes[chain.back()] = std::move(f);
  fg.removed[chain.back()] = false;
  fg.last_fused = chain.back();
  return 1;
}

}  // namespace trtutils::cuda::fusion
