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

// The fused node's tails (erf GELU, residual) after `out`, then f in place of the chain.
size_t finish(FusionGraph& fg, size_t first, ir::Node f, std::string out,
              std::vector<size_t> chain) {
  ir::Graph& g = fg.graph;
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
  for (const std::string& v : g.nodes[first].outputs)
    if (v != out) g.value_info.erase(v);
  for (size_t c : chain)
    if (g.nodes[c].outputs[0] != out) g.value_info.erase(g.nodes[c].outputs[0]);
  fg.removed[first] = true;
  if (chain.empty()) chain.push_back(first);
  return fg.place(std::move(f), chain);
}

ir::Node fused_node(ir::Graph& g, const ir::Node& from, std::vector<std::string> inputs) {
  ir::Node f;
  f.name = from.name.empty() ? g.unique_name("FusedMatMul") : from.name;
  f.op_type = "FusedMatMul";
  f.domain = "com.trtutils";
  f.inputs = std::move(inputs);
  return f;
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
  ir::Node f = fused_node(g, mm, {mm.inputs[0], mm.inputs[1], *bias});
  return finish(fg, i, std::move(f), g.nodes[add].outputs[0], {add});
}

// alpha * op(B) as a [K, N] weight, and beta * C (absent: zeros) as N bias values, new
// initializers next to the originals (which stay while others read them).
std::string gemm_weight(ir::Graph& g, const Tensor& b, bool trans_b, float alpha) {
  const int64_t k = trans_b ? b.dim(1) : b.dim(0), n = trans_b ? b.dim(0) : b.dim(1);
  Tensor w(DataType::kFloat32, {k, n});
  const float* src = b.data<float>();
  float* dst = w.data<float>();
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c)
      dst[r * n + c] = alpha * (trans_b ? src[c * k + r] : src[r * n + c]);
  const std::string name = g.unique_name("gemm_weight_kn");
  g.initializers[name] = std::move(w);
  return name;
}

std::string gemm_bias(ir::Graph& g, const Tensor* c, int64_t n, float beta) {
  Tensor bias(DataType::kFloat32, {n});
  float* dst = bias.data<float>();
  for (int64_t j = 0; j < n; ++j)
    dst[j] = c ? beta * c->data<float>()[c->numel() == 1 ? 0 : j] : 0.0f;
  const std::string name = g.unique_name("gemm_bias");
  g.initializers[name] = std::move(bias);
  return name;
}

// Gemm(A float32 [M, K], B float32 initializer, C: absent, one value or N values) with
// transA = 0: a fully connected layer (classifier heads). oneDNN then runs it on a weight packed
// once instead of reading B transposed on every call (MobileNetV2's 1280 x 1000 head at batch 1:
// about twice as fast).
size_t fuse_gemm(FusionGraph& fg, size_t i) {
  ir::Graph& g = fg.graph;
  const ir::Node& gemm = g.nodes[i];
  if (fg.removed[i] || gemm.op_type != "Gemm" || !is_default_domain(gemm) ||
      gemm.inputs.size() < 2 || gemm.outputs.size() != 1 || gemm.outputs[0].empty() ||
      gemm.attr_int("transA", 0) != 0)
    return 0;
  const Tensor* b = g.initializer(gemm.inputs[1]);
  if (!b || b->rank() != 2 || b->dtype() != DataType::kFloat32 ||
      float_dtype(g, gemm.inputs[0]) != DataType::kFloat32 || fg.rank_of(gemm.inputs[0]) != 2)
    return 0;
  const bool trans_b = gemm.attr_int("transB", 0) != 0;
  const int64_t n = trans_b ? b->dim(0) : b->dim(1);
  const bool has_c = gemm.inputs.size() > 2 && !gemm.inputs[2].empty();
  const Tensor* c = has_c ? g.initializer(gemm.inputs[2]) : nullptr;
  if (has_c && (!c || c->dtype() != DataType::kFloat32 ||
                !(c->numel() == 1 || (c->numel() == n && c->dim(c->rank() - 1) == n))))
    return 0;
  const float alpha = gemm.attr_float("alpha", 1.0f), beta = gemm.attr_float("beta", 1.0f);
  const std::string a = gemm.inputs[0], out = gemm.outputs[0];
  const std::string w = gemm_weight(g, *b, trans_b, alpha);
  const std::string bias = gemm_bias(g, c, n, beta);
  ir::Node f = fused_node(g, g.nodes[i], {a, w, bias});
  return finish(fg, i, std::move(f), out, {});
}

}  // namespace

size_t fuse_matmuls(ir::Graph& graph) {
  FusionGraph fg(graph, 0);
  size_t fused = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) fused += fuse_matmul(fg, i) + fuse_gemm(fg, i);
  if (!fused) return 0;
  fg.erase_removed();
  graph.remove_dead_nodes();  // a Gemm's original weight and bias, when nobody else reads them
  TRT_LOG_VERBOSE("matmul fusion: {} MatMul / Gemm node(s) fused", fused);
  return fused;
}

}  // namespace trtutils::passes
