// MatMul fusion for the CPU plan: MatMul(A, W) -> Add(bias) [-> erf GELU] [-> Add(residual)]
// becomes one com.trtutils::FusedMatMul (passes.h), which the CPU backend runs as one oneDNN
// matmul with a bias and post-ops instead of up to eight passes over memory (a transformer's
// projections and MLP: ViT-B/16 spent 45 of 285 ms at batch 1 in the Add / Div / Erf / Mul nodes
// around its products). The GELU and residual tails are the ones the CUDA executor's MatMulBias
// takes (fusion_graph.h).
#include <string>
#include <vector>

#include "passes/fusion_graph.h"
#include "passes/graph_facts.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {
namespace {

// Node i when it is a default-domain `op` with two inputs and one output.
bool binary(const FusionGraph& fg, size_t i, const char* op) {
  if (i == SIZE_MAX) return false;
  const ir::Node& n = fg.graph.nodes[i];
  return n.op_type == op && is_default_domain(n) && n.inputs.size() == 2 && n.outputs.size() == 1 &&
         !n.outputs[0].empty();
}

// MatMul(A float32, W float32 2-D initializer [K, N]) -> Add(bias: N float32 values) at node i.
size_t fuse_matmul(FusionGraph& fg, size_t i) {
  ir::Graph& g = fg.graph;
  const ir::Node& mm = g.nodes[i];
  if (fg.removed[i] || !binary(fg, i, "MatMul")) return 0;
  const Tensor* w = g.initializer(mm.inputs[1]);
  if (!w || w->rank() != 2 || w->dtype() != DataType::kFloat32 ||
      float_dtype(g, mm.inputs[0]) != DataType::kFloat32)
    return 0;
  const int64_t n = w->dim(1);
  const size_t add = fg.only_reader(mm.outputs[0]);
  if (!binary(fg, add, "Add")) return 0;
  const std::string* bias = other(g.nodes[add], mm.outputs[0]);
  const Tensor* b = bias ? g.initializer(*bias) : nullptr;
  if (!b || b->dtype() != DataType::kFloat32 || b->numel() != n || b->rank() < 1 ||
      b->dim(b->rank() - 1) != n)
    return 0;
  ir::Node f;
  f.name = mm.name.empty() ? g.unique_name("FusedMatMul") : mm.name;
  f.op_type = "FusedMatMul";
  f.domain = "com.trtutils";
  f.inputs = {mm.inputs[0], mm.inputs[1], *bias};
  std::vector<size_t> chain = {add};
  std::string out = g.nodes[add].outputs[0];
  std::vector<size_t> gelu_chain;
  const std::string gelu = match_gelu(fg, out, gelu_chain);
  if (!gelu.empty()) {
    chain.insert(chain.end(), gelu_chain.begin(), gelu_chain.end());
    out = gelu;
  }
  out = match_residual(fg, out, f, chain);
  ir::Attribute a;
  a.name = "gelu";
  a.kind = ir::Attribute::Kind::kInt;
  a.i = gelu.empty() ? 0 : 1;
  f.attributes[a.name] = a;
  f.outputs = {out};
  g.value_info.erase(mm.outputs[0]);
  for (size_t c : chain)
    if (g.nodes[c].outputs[0] != out) g.value_info.erase(g.nodes[c].outputs[0]);
  fg.removed[i] = true;
  return fg.place(std::move(f), chain);
}

}  // namespace

size_t fuse_matmuls(ir::Graph& graph) {
  FusionGraph fg(graph, 0);
  size_t fused = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) fused += fuse_matmul(fg, i);
  if (!fused) return 0;
  fg.erase_removed();
  TRT_LOG_VERBOSE("matmul fusion: {} MatMul node(s) fused", fused);
  return fused;
}

}  // namespace trtutils::passes
