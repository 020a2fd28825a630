// MatMul fusion for the CPU plan: MatMul(A, W) -> Add(bias) [-> erf GELU] [-> Add(residual)]
// becomes one com.trtutils::FusedMatMul (passes.h), which the CPU backend runs as one oneDNN
// matmul with a bias and post-ops instead of up to eight passes over memory (a transformer's
// projections and MLP: ViT-B/16 spent 45 of 285 ms at batch 1 in the Add / Div / Erf / Mul nodes
// around its products). The GELU and residual tails are the ones the CUDA executor's MatMulBias
// takes (fusion_graph.h).
#include <algorithm>
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

// Node n only relabels its input's bytes (Reshape, Squeeze, Unsqueeze, a Transpose that moves
// axes of size 1 only), with static shapes: its output's shape, else empty.
std::vector<int64_t> order_keeping_view(const FusionGraph& fg, const ir::Node& n) {
  if (!is_default_domain(n) || n.inputs.empty() || n.outputs.size() != 1) return {};
  const std::vector<int64_t> out = fg.static_shape(n.outputs[0]);
  if (n.op_type == "Reshape" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze") return out;
  const std::vector<int64_t> in = fg.static_shape(n.inputs[0]);
  const std::vector<int64_t> perm = transpose_perm_of(fg.graph, n);
  if (in.empty() || perm.empty()) return {};
  int64_t last = -1;
  for (int64_t p : perm) {
    if (in[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return {};
    last = p;
  }
  return out;
}

// out -> views that keep the bytes' order -> Add(residual) (ViT's attention output: the
// out-projection's [S, D] product reshaped to [S, 1, D] and transposed to [1, S, D]): the
// product is made in the Add's shape instead, from A reshaped to it (in the first view's slot),
// and takes the residual. Returns the Add's output, else out.
std::string residual_through_views(FusionGraph& fg, const std::string& out, ir::Node& f,
                                   std::vector<size_t>& chain) {
  ir::Graph& g = fg.graph;
  std::vector<size_t> views;
  std::string v = out;
  std::vector<int64_t> shape;
  for (size_t r = fg.only_reader(v); r != SIZE_MAX; r = fg.only_reader(v)) {
    const std::vector<int64_t> s = order_keeping_view(fg, g.nodes[r]);
    if (s.empty()) break;
    views.push_back(r);
    shape = s;
    v = g.nodes[r].outputs[0];
  }
  const Tensor* w = g.initializer(f.inputs[1]);
  if (views.empty() || !w || shape.back() != w->dim(1)) return out;
  std::vector<size_t> tail;
  ir::Node probe = f;
  const std::string y = match_residual(fg, v, probe, tail);
  if (y == v) return out;
  std::vector<int64_t> a_shape = shape;
  a_shape.back() = w->dim(0);
  const std::string dims = g.unique_name("matmul_a_shape");
  g.initializers[dims] = Tensor::from_vector<int64_t>(
      DataType::kInt64, {static_cast<int64_t>(a_shape.size())}, a_shape);
  ir::Node reshape;
  reshape.name = g.unique_name(f.name + "/a_reshape");
  reshape.op_type = "Reshape";
  reshape.inputs = {f.inputs[0], dims};
  reshape.outputs = {g.unique_name(f.name + "/a")};
  g.value_info[reshape.outputs[0]] =
      ir::ValueInfo{reshape.outputs[0], DataType::kFloat32, ir::sym_shape_from_static(a_shape), {}};
  for (size_t c : views) g.value_info.erase(g.nodes[c].outputs[0]);
  g.nodes[views[0]] = std::move(reshape);
  probe.inputs[0] = g.nodes[views[0]].outputs[0];
  f = std::move(probe);
  chain.insert(chain.end(), views.begin() + 1, views.end());
  chain.insert(chain.end(), tail.begin(), tail.end());
  return y;
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
  const std::string direct = match_residual(fg, out, f, chain);
  out = direct != out ? direct : residual_through_views(fg, out, f, chain);
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

// The column range [begin, end) of W that Slice node `n` takes from the last axis of a value of
// rank `rank` with `cols` columns (constant starts / ends, [axes], [steps] of 1); false else.
bool last_axis_columns(const ir::Graph& g, const ir::Node& n, int64_t rank, int64_t cols,
                       int64_t& begin, int64_t& end) {
  if (n.op_type != "Slice" || !is_default_domain(n) || n.inputs.size() < 3 ||
      n.outputs.size() != 1 || rank < 1)
    return false;
  auto ints = [&](size_t i, std::vector<int64_t>& v) {
    if (i >= n.inputs.size() || n.inputs[i].empty()) return true;
    const Tensor* t = g.initializer(n.inputs[i]);
    if (!t || (t->dtype() != DataType::kInt64 && t->dtype() != DataType::kInt32)) return false;
    v = t->to_int64_vector();
    return true;
  };
  std::vector<int64_t> starts, ends, axes{0}, steps{1};  // ONNX: axes default to 0, 1, ...
  if (!ints(1, starts) || !ints(2, ends) || !ints(3, axes) || !ints(4, steps) ||
      starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1 ||
      steps[0] != 1 || (axes[0] != rank - 1 && axes[0] != -1))
    return false;
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + cols : v, 0, cols); };
  begin = clamp(starts[0]);
  end = clamp(ends[0]);
  return end > begin;
}

// Columns [begin, end) of a [K, N] initializer or of N bias values, as a new initializer.
std::string column_slice(ir::Graph& g, const Tensor& t, int64_t begin, int64_t end) {
  const int64_t n = t.dim(t.rank() - 1), rows = t.numel() / n, width = end - begin;
  Tensor out(DataType::kFloat32, t.rank() == 2 ? Shape{rows, width} : Shape{width});
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(t.data<float>() + r * n + begin, width, out.data<float>() + r * width);
  const std::string name = g.unique_name(t.rank() == 2 ? "matmul_weight_cols" : "matmul_bias_cols");
  g.initializers[name] = std::move(out);
  return name;
}

// A FusedMatMul (no residual) whose product only last-axis Slices read (an attention block's
// in-projection, sliced into q, k and v) becomes one FusedMatMul per Slice, on its columns of W
// and bias: each writes its own tensor, and no Slice copies.
size_t split_sliced_product(FusionGraph& fg, size_t i) {
  ir::Graph& g = fg.graph;
  const ir::Node& mm = g.nodes[i];
  if (fg.removed[i] || mm.op_type != "FusedMatMul" || mm.inputs.size() != 3 ||
      mm.outputs.size() != 1 || fg.graph_outputs.count(mm.outputs[0]))
    return 0;
  const Tensor* w = g.initializer(mm.inputs[1]);
  const Tensor* bias = g.initializer(mm.inputs[2]);
  const auto it = fg.readers.find(mm.outputs[0]);
  if (!w || !bias || w->rank() != 2 || it == fg.readers.end() || it->second.empty()) return 0;
  const int64_t rank = fg.rank_of(mm.outputs[0]), cols = w->dim(1);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t r : it->second) {
    int64_t begin = 0, end = 0;
    if (fg.removed[r] || !last_axis_columns(g, g.nodes[r], rank, cols, begin, end)) return 0;
    ranges.emplace_back(begin, end);
  }
  const std::vector<size_t> slices = it->second;
  const ir::Node product = mm;
  for (size_t k = 0; k < slices.size(); ++k) {
    ir::Node f = product;
    f.name =
        g.nodes[slices[k]].name.empty() ? g.unique_name("FusedMatMul") : g.nodes[slices[k]].name;
    f.inputs = {product.inputs[0], column_slice(g, *w, ranges[k].first, ranges[k].second),
                column_slice(g, *bias, ranges[k].first, ranges[k].second)};
    f.outputs = g.nodes[slices[k]].outputs;
    g.nodes[slices[k]] = std::move(f);
  }
  g.value_info.erase(product.outputs[0]);
  fg.removed[i] = true;
  // The whole weight goes now, not at dead-code elimination: its copies and it would otherwise
  // all be alive at once (ViT-B/16: 85 MB more peak memory).
  for (size_t k : {size_t{1}, size_t{2}}) {
    const auto r = fg.readers.find(product.inputs[k]);
    if (r != fg.readers.end() && r->second.size() == 1 &&
        !fg.graph_outputs.count(product.inputs[k]))
      g.initializers.erase(product.inputs[k]);
  }
  return slices.size();
}

}  // namespace

size_t fuse_matmuls(ir::Graph& graph) {
  FusionGraph fg(graph, 0);
  size_t fused = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) fused += fuse_matmul(fg, i) + fuse_gemm(fg, i);
  if (!fused) return 0;
  fg.erase_removed();
  FusionGraph split(graph, 0);
  size_t sliced = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) sliced += split_sliced_product(split, i);
  if (sliced) split.erase_removed();
  graph.remove_dead_nodes();  // a Gemm's original weight and bias, when nobody else reads them
  TRT_LOG_VERBOSE("matmul fusion: {} MatMul / Gemm node(s) fused, {} sliced products split", fused,
                  sliced);
  return fused;
}

}  // namespace trtutils::passes
