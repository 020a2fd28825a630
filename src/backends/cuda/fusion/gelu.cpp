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
