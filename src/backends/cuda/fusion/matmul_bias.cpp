// MatMul / Gemm + bias into com.trtutils.cuda::MatMulBias (patterns.h), with the tails that follow
// a product (the exact GELU, the batch-first grid, the residual as the product's C) absorbed too.
// The MatMul's bias rides in cuBLASLt's epilogue and the GELU runs as one exact (erf) pass, where
// the exporters' graphs run seven memory passes.
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/patterns.h"
#include "ir/graph_builder.h"

namespace trtutils::cuda::fusion {

size_t fuse_matmul_bias(FusionGraph& fg, size_t i) {
  const ir::Node& mm = fg.graph.nodes[i];
  if (mm.inputs.size() != 2 || mm.outputs.size() != 1) return 0;
  // B 2-D with N columns (a constant weight in practice; any 2-D value works).
  auto bi = fg.graph.value_info.find(mm.inputs[1]);
  const Tensor* bt = fg.graph.initializer(mm.inputs[1]);
  int64_t n = -1;
  if (bt && bt->rank() == 2) {
    n = bt->dim(1);
  } else if (bi != fg.graph.value_info.end() && bi->second.shape && bi->second.shape->size() == 2 &&
             (*bi->second.shape)[1].is_static()) {
    n = (*bi->second.shape)[1].value;
  }
  if (n <= 0) return 0;
  const size_t add = fg.only_reader(mm.outputs[0]);
  if (add == SIZE_MAX || fg.graph.nodes[add].op_type != "Add" ||
      !default_domain(fg.graph.nodes[add]))
    return 0;
  const std::string* bias = other(fg.graph.nodes[add], mm.outputs[0]);
  const Tensor* b = bias ? fg.graph.initializer(*bias) : nullptr;
  if (!b || b->numel() != n || b->rank() < 1 || b->dim(b->rank() - 1) != n) return 0;
  if (bt && bt->dtype() != b->dtype()) return 0;
  ir::Node f;
  f.name = mm.name;
  f.op_type = "MatMulBias";
  f.domain = kGpuDomain;
  f.inputs = {mm.inputs[0], mm.inputs[1], *bias};
  // A = Transpose(X, [1, 0, 2]) read only here: the product reads X in place.
  auto pa = fg.producer.find(mm.inputs[0]);
  size_t swap = SIZE_MAX;
  if (pa != fg.producer.end() && !fg.removed[pa->second] && fg.only_reader(mm.inputs[0]) == i &&
      swaps_leading(fg.graph.nodes[pa->second])) {
    swap = pa->second;
    f.inputs[0] = fg.graph.nodes[swap].inputs[0];
    set_int(f, "a_swap01", 1);
  }
  std::string out = fg.graph.nodes[add].outputs[0];
  std::vector<size_t> chain;
  const std::string gelu = match_gelu(fg, out, chain);
  set_int(f, "gelu", gelu.empty() ? 0 : 1);
  if (!gelu.empty()) {
    for (size_t c : chain) fg.removed[c] = true;
    out = gelu;
  }
  if (swap == SIZE_MAX) out = match_grid(fg, out, n, f, chain);
  if (gelu.empty()) out = match_residual(fg, out, f, chain);
  f.outputs = {out};
  fg.removed[add] = true;
  if (swap != SIZE_MAX) fg.removed[swap] = true;
  const size_t last = chain.empty() ? add : chain.back();
  // The fused node takes the place of the chain's last node (its inputs exist by then).
  fg.graph.nodes[last] = std::move(f);
  fg.removed[last] = false;
  fg.removed[i] = true;
  fg.last_fused = last;
  return 1;
}

// Gemm(A, B, C = bias of N, alpha = beta = 1, transA = 0) -> Reshape [R0, R1, N] -> Transpose
// [1, 0, 2]  => MatMulBias with trans_b and y_grid (the attention's output projection).
size_t fuse_gemm_grid(FusionGraph& fg, size_t i) {
  const ir::Node& gm = fg.graph.nodes[i];
  if (gm.inputs.size() != 3 || gm.outputs.size() != 1 || gm.attr_int("transA", 0) != 0 ||
      gm.attr_float("alpha", 1.0f) != 1.0f || gm.attr_float("beta", 1.0f) != 1.0f)
    return 0;
  const Tensor* w = fg.graph.initializer(gm.inputs[1]);
  const Tensor* c = fg.graph.initializer(gm.inputs[2]);
  if (!w || w->rank() != 2 || !c || c->rank() != 1 || c->dtype() != w->dtype()) return 0;
  const bool tb = gm.attr_int("transB", 0) != 0;
  const int64_t n = tb ? w->dim(0) : w->dim(1);
  if (c->numel() != n) return 0;
  ir::Node f;
  f.name = gm.name;
  f.op_type = "MatMulBias";
  f.domain = kGpuDomain;
  f.inputs = gm.inputs;
  set_int(f, "gelu", 0);
  set_int(f, "trans_b", tb ? 1 : 0);
  std::vector<size_t> chain;
  std::string out = match_grid(fg, gm.outputs[0], n, f, chain);
  if (chain.empty()) return 0;
  out = match_residual(fg, out, f, chain);
  f.outputs = {out};
  for (size_t x : chain) fg.removed[x] = true;
  fg.graph.nodes[chain.back()] = std::move(f);
  fg.removed[chain.back()] = false;
  fg.removed[i] = true;
  fg.last_fused = chain.back();
  return 1;
}

}  // namespace trtutils::cuda::fusion
