// The CUDA executor's own fusions, on its private copy of the engine graph (the engine file and
// the CPU backend keep the plain ops; see cuda_ops.h, fuse_for_gpu):
//   MatMul(A, B 2-D) -> Add(bias of B's N columns)         => com.trtutils.cuda::MatMulBias
//   ... -> x * 0.5 * (1 + Erf(x / sqrt(2)))  (exact GELU)  => the same node with gelu = 1, or
//                                                             com.trtutils.cuda::Gelu alone
//   Transpose(X, [1, 0, 2]) feeding that MatMul, or Reshape [R0, R1, N] -> Transpose([1, 0, 2])
//   after it (also after a Gemm with a bias)                => the same node reading X / writing
//                                                             the transposed rows (a_swap01,
//                                                             y_grid: strided-batch products)
//   ... -> Add(residual of the same shape)                  => the residual as the product's C
//   MatMul(Q, KT) -> Mul / Div by scalars -> Softmax(last axis) -> MatMul(., V)
//                                                          => com.trtutils.cuda::Attention
//     with the scalar Mul / Div on Q and on KT folded into its scale, and the Transposes /
//     Reshapes feeding Q, KT or V (and a Transpose reading the output) absorbed as views.
//   Conv / FusedConv (float32, <= 4 input channels) -> QuantizeLinear (per tensor)
//                                                          => com.trtutils.cuda::ConvQuantize
//   the Q/DQ attention (float8 or int8 QMatMuls around a Softmax) => com.trtutils.cuda::AttentionQ
//   com.trtutils::QGemm (float output) -> GELU chain [-> QuantizeLinear]
//                                                          => the QGemm with gelu = 1
//   com.trtutils::QGemm (float output) -> Reshape [R0, R1, N] -> Transpose(1, 0, 2)
//     [-> Add(residual)]                                   => the QGemm with y_grid (and R)
//   com.trtutils::QGemm (float output) -> Reshape / Unsqueeze / Transpose / Squeeze splitting
//     its columns into [P, rows..., N / P] (torch's packed QKV) => the QGemm with y_split
//   DequantizeLinear (per tensor) -> GlobalAveragePool | GlobalMaxPool
//                                              => com.trtutils.cuda::DequantizeGlobalPool
//   Add / Sub / Mul / Div of two computed float values -> QuantizeLinear (per tensor)
//                                                          => com.trtutils.cuda::BinaryQuantize
//   LayerNormalization [-> Transpose(1, 0, 2)] -> QuantizeLinear (per tensor)
//                                                          => com.trtutils.cuda::LayerNormQuantize
//     or, when a float-output QGemm computes its input, => that QGemm's second output
//     (QGemmLnInput in cuda_ops.h: the layer norm in the product's epilogue pass)
// The MatMul's bias rides in cuBLASLt's epilogue and the GELU runs as one exact (erf) pass, where
// the exporters' graphs run seven memory passes. Intermediate values must have one reader (the
// GELU input two: Div and Mul) and must not be graph outputs.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/cuda_ops.h"
#include "ir/graph_builder.h"
#include "ops/qlinear_ops.h"
#include "trtutils/logging.h"

namespace trtutils::cuda {

namespace {

bool default_domain(const ir::Node& n) {
  return n.domain.empty() || n.domain == "ai.onnx";
}

// An A/B switch read at every call (the tests set and unset them): on unless the variable is 0,
// off or false.
bool switch_on(const char* name) {
  return kernel_switch(name, true);
}

class Fuser {
 public:
  Fuser(ir::Graph& g, int64_t opset, bool attention, bool attention_fp8)
      : g_(g), opset_(opset), attention_(attention), attention_fp8_(attention_fp8) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (const auto& in : g_.nodes[i].inputs)
        if (!in.empty()) readers_[in].push_back(i);
      for (const auto& in : g_.nodes[i].implicit_inputs())  // an If / Loop body reads it
        readers_[in].push_back(i);
      for (const auto& o : g_.nodes[i].outputs)
        if (!o.empty()) producer_[o] = i;
    }
    for (const auto& o : g_.outputs) graph_outputs_.insert(o.name);
    removed_.assign(g_.nodes.size(), false);
  }

  // absorbed (optional): original node name -> what it became.
  size_t run(std::map<std::string, FusedInto>* absorbed = nullptr) {
    size_t fused = 0;
    std::vector<std::string> names;
    if (absorbed)
      for (const auto& n : g_.nodes) names.push_back(n.name);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (removed_[i]) continue;
      const ir::Node& n = g_.nodes[i];
      const bool qmatmul = n.domain == "com.trtutils" && n.op_type == "QMatMul";
      const bool qgemm = n.domain == "com.trtutils" && n.op_type == "QGemm";
      const bool conv = (default_domain(n) && n.op_type == "Conv") ||
                        (n.domain == "com.trtutils" && n.op_type == "FusedConv");
      if (!default_domain(n) && !qmatmul && !qgemm && !conv) continue;
      const bool candidate = qmatmul || qgemm || conv || n.op_type == "MatMul" ||
                             n.op_type == "Gemm" || n.op_type == "Div" || n.op_type == "Mul" ||
                             n.op_type == "Add" || n.op_type == "Sub" ||
                             n.op_type == "LayerNormalization" ||
                             n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool";
      if (!candidate || (qmatmul && !attention_fp8_)) continue;
      const std::vector<bool> before = absorbed ? removed_ : std::vector<bool>{};
      last_ = SIZE_MAX;
      size_t f = 0;
      if (conv) {
        f = fuse_conv_quantize(i);
        if (!f) f = fuse_patch_embed(i);
      } else if (qgemm) {
        f = fuse_qgemm_gelu(i);
        if (!f) f = fuse_qgemm_grid(i);
        if (!f) f = fuse_qgemm_split(i);
        if (!f) f = fuse_qgemm_residual(i);
      } else if (n.op_type == "LayerNormalization") {
        f = fuse_layer_norm_quantize(i);
      } else if (n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool") {
        f = fuse_dequantize_pool(i);
      } else if (qmatmul) {
        f = fuse_attention_q(i);
      } else if (n.op_type == "MatMul") {
        const size_t a = attention_ ? fuse_attention(i) : 0;
        f = a ? a : fuse_matmul(i);
      } else if (n.op_type == "Gemm") {
        f = fuse_gemm_grid(i);
      } else {
        if (n.op_type == "Mul" || n.op_type == "Div") f = fuse_gelu_alone(i);
        if (!f) f = fuse_binary_quantize(i);
      }
      fused += f;
      if (f && absorbed && last_ != SIZE_MAX) {
        const FusedInto into{g_.nodes[last_].op_type, g_.nodes[last_].name};
        for (size_t j = 0; j < names.size(); ++j)
          if (((removed_[j] && !before[j]) || j == last_) && !names[j].empty())
            (*absorbed)[names[j]] = into;
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
    // A = Transpose(X, [1, 0, 2]) read only here: the product reads X in place.
    auto pa = producer_.find(mm.inputs[0]);
    size_t swap = SIZE_MAX;
    if (pa != producer_.end() && !removed_[pa->second] && only_reader(mm.inputs[0]) == i &&
        swaps_leading(g_.nodes[pa->second])) {
      swap = pa->second;
      f.inputs[0] = g_.nodes[swap].inputs[0];
      set_int(f, "a_swap01", 1);
    }
    std::string out = g_.nodes[add].outputs[0];
    std::vector<size_t> chain;
    const std::string gelu = match_gelu(out, chain);
    set_int(f, "gelu", gelu.empty() ? 0 : 1);
    if (!gelu.empty()) {
      for (size_t c : chain) removed_[c] = true;
      out = gelu;
    }
    if (swap == SIZE_MAX) out = match_grid(out, n, f, chain);
    if (gelu.empty()) out = match_residual(out, f, chain);
    f.outputs = {out};
    removed_[add] = true;
    if (swap != SIZE_MAX) removed_[swap] = true;
    const size_t last = chain.empty() ? add : chain.back();
    // The fused node takes the place of the chain's last node (its inputs exist by then).
    g_.nodes[last] = std::move(f);
    removed_[last] = false;
    removed_[i] = true;
    last_ = last;
    return 1;
  }

  // Attributes of a fused node (ir/graph_builder.h makes them).
  static void set_int(ir::Node& f, const char* name, int64_t v) {
    f.attributes[name] = ir::attr_int(name, v);
  }
  static void set_float(ir::Node& f, const char* name, float v) {
    f.attributes[name] = ir::attr_float(name, v);
  }
  // The fused attention node (op) replacing first .. second: the operands and their views, and
  // a Transpose reading second's output absorbed as perm_o (appended to chain, which then ends
  // with the node the fused one replaces).
  ir::Node attention_node(const char* op, const ir::Node& first, const ir::Node& second,
                          const std::vector<std::string>& operands,
                          const std::vector<std::vector<int64_t>>& views,
                          std::vector<size_t>& chain) const {
    ir::Node f;
    f.name = second.name.empty() ? first.name : second.name;
    f.op_type = op;
    f.domain = kGpuDomain;
    f.inputs = operands;
    std::string out = second.outputs[0];
    std::vector<int64_t> po;
    const size_t t = only_reader(out);
    if (t != SIZE_MAX && g_.nodes[t].op_type == "Transpose" && default_domain(g_.nodes[t]) &&
        g_.nodes[t].outputs.size() == 1 && !perm_of(g_.nodes[t]).empty()) {
      po = perm_of(g_.nodes[t]);
      out = g_.nodes[t].outputs[0];
    }
    f.outputs = {out};
    const char* names[4] = {"view_q", "view_k", "view_v", "perm_o"};
    for (size_t i = 0; i < 4; ++i) {
      const std::vector<int64_t>& p = i < 3 ? views.at(i) : po;
      if (!p.empty()) f.attributes[names[i]] = ir::attr_ints(names[i], p);
    }
    // The chain's last entry is the node the fused one replaces: second, or the Transpose.
    auto pos = std::find(chain.begin(), chain.end(), index_of(second));
    if (pos != chain.end()) chain.erase(pos);
    chain.push_back(index_of(second));
    if (!po.empty()) chain.push_back(t);
    return f;
  }
  size_t index_of(const ir::Node& n) const { return static_cast<size_t>(&n - g_.nodes.data()); }
  // Removes the chain's nodes and puts f in the place of its last one (every operand exists by
  // then); returns 1 (one fusion).
  size_t place(ir::Node f, const std::vector<size_t>& chain) {
    const size_t last = chain.back();
    for (size_t c : chain) removed_[c] = true;
    g_.nodes[last] = std::move(f);
    removed_[last] = false;
    last_ = last;
    return 1;
  }
  // A Transpose swapping the two leading axes of a rank-3 tensor.
  static bool swaps_leading(const ir::Node& t) {
    if (t.op_type != "Transpose" || !default_domain(t) || t.inputs.size() != 1 ||
        t.outputs.size() != 1)
      return false;
    return perm_of(t) == std::vector<int64_t>{1, 0, 2};
  }
  // y (rows x n) -> Reshape [R0, R1, n] -> Transpose([1, 0, 2]), each read only by the next:
  // sets f's y_grid = [R0, R1], appends both nodes to chain and returns the Transpose's output;
  // else returns y.
  std::string match_grid(const std::string& y, int64_t n, ir::Node& f,
                         std::vector<size_t>& chain) const {
    const size_t r = only_reader(y);
    if (r == SIZE_MAX) return y;
    const ir::Node& rs = g_.nodes[r];
    if (rs.op_type != "Reshape" || !default_domain(rs) || rs.inputs.size() != 2 ||
        rs.inputs[0] != y || rs.outputs.size() != 1 || rs.attr_int("allowzero", 0) != 0)
      return y;
    const Tensor* shape = g_.initializer(rs.inputs[1]);
    if (!shape || shape->dtype() != DataType::kInt64 || shape->numel() != 3) return y;
    const int64_t* v = shape->data<int64_t>();
    // Grid sizes positive or one -1; the last axis the product's n columns.
    if (v[2] != n || v[0] == 0 || v[1] == 0 || v[0] < -1 || v[1] < -1 || (v[0] < 0 && v[1] < 0))
      return y;
    const size_t t = only_reader(rs.outputs[0]);
    if (t == SIZE_MAX || !swaps_leading(g_.nodes[t])) return y;
    f.attributes["y_grid"] = ir::attr_ints("y_grid", {v[0], v[1]});
    chain.push_back(r);
    chain.push_back(t);
    return g_.nodes[t].outputs[0];
  }

  // The shape of value v from the value infos, the graph inputs or the initializers.
  std::optional<ir::SymShape> shape_of(const std::string& v) const {
    auto it = g_.value_info.find(v);
    if (it != g_.value_info.end()) return it->second.shape;
    for (const auto& in : g_.inputs)
      if (in.name == v) return in.shape;
    if (const Tensor* t = g_.initializer(v)) return ir::sym_shape_from_static(t->shape());
    return std::nullopt;
  }
  // y -> Add(y, r) (either order) where r has y's shape (both known from shape inference):
  // r becomes f's input 3 (the residual, cuBLASLt's C), the Add joins chain; returns its
  // output, else y.
  std::string match_residual(const std::string& y, ir::Node& f, std::vector<size_t>& chain) const {
    const size_t r = only_reader(y);
    if (r == SIZE_MAX) return y;
    const ir::Node& add = g_.nodes[r];
    if (add.op_type != "Add" || !default_domain(add) || add.outputs.size() != 1) return y;
    const std::string* res = other(add, y);
    if (!res || *res == y) return y;
    const auto ys = shape_of(y), rs = shape_of(*res);
    if (!ys || !rs || *ys != *rs) return y;
    for (const ir::Dim& d : *ys)  // unknown dims could differ at run time
      if (!d.is_static() && d.param.empty()) return y;
    f.inputs.push_back(*res);
    chain.push_back(r);
    return add.outputs[0];
  }

  // Gemm(A, B, C = bias of N, alpha = beta = 1, transA = 0) -> Reshape [R0, R1, N] -> Transpose
  // [1, 0, 2]  => MatMulBias with trans_b and y_grid (the attention's output projection).
  size_t fuse_gemm_grid(size_t i) {
    const ir::Node& gm = g_.nodes[i];
    if (gm.inputs.size() != 3 || gm.outputs.size() != 1 || gm.attr_int("transA", 0) != 0 ||
        gm.attr_float("alpha", 1.0f) != 1.0f || gm.attr_float("beta", 1.0f) != 1.0f)
      return 0;
    const Tensor* w = g_.initializer(gm.inputs[1]);
    const Tensor* c = g_.initializer(gm.inputs[2]);
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
    std::string out = match_grid(gm.outputs[0], n, f, chain);
    if (chain.empty()) return 0;
    out = match_residual(out, f, chain);
    f.outputs = {out};
    for (size_t x : chain) removed_[x] = true;
    g_.nodes[chain.back()] = std::move(f);
    removed_[chain.back()] = false;
    removed_[i] = true;
    last_ = chain.back();
    return 1;
  }

  // A Mul / Div of v by a scalar constant (v * c, c * v, v / c) as the factor, else NaN.
  float scalar_factor(const ir::Node& n, const std::string& v) const {
    if (!default_domain(n) || n.inputs.size() != 2 || n.outputs.size() != 1) return NAN;
    if (n.op_type == "Mul") {
      const std::string* c = other(n, v);
      return c ? scalar(*c) : NAN;
    }
    if (n.op_type == "Div" && n.inputs[0] == v) {
      const float c = scalar(n.inputs[1]);
      return c != 0.0f ? 1.0f / c : NAN;
    }
    return NAN;
  }
  // An explicit perm of a Transpose (none: the reversal needs the rank; left alone).
  static std::vector<int64_t> perm_of(const ir::Node& t) {
    auto it = t.attributes.find("perm");
    if (it == t.attributes.end()) return {};
    return it->second.ints;
  }
  // Walks back from operand v of the attention through scalar Mul / Div (folded into scale)
  // and up to four Transposes / Reshapes (constant shape), each read only by the next; marks
  // them in `chain`. Returns the source; `view` gets the view ops from the source on, encoded
  // as in ops_attention.cpp: {0, rank, perm...} or {1 + allowzero, rank, shape...}.
  std::string operand_source(std::string v, float& scale, std::vector<int64_t>& view,
                             std::vector<size_t>& chain, bool allow_scale) const {
    std::vector<std::vector<int64_t>> ops;  // nearest the MatMul first
    for (int guard = 0; guard < 8; ++guard) {
      auto it = producer_.find(v);
      if (it == producer_.end() || removed_[it->second] || only_reader(v) == SIZE_MAX) break;
      const ir::Node& n = g_.nodes[it->second];
      if (!default_domain(n) || n.outputs.size() != 1) break;
      if (allow_scale && (n.op_type == "Mul" || n.op_type == "Div") && n.inputs.size() == 2) {
        const std::string& x =
            n.op_type == "Div" || !g_.initializer(n.inputs[0]) ? n.inputs[0] : n.inputs[1];
        const float f = scalar_factor(n, x);
        if (std::isnan(f) || g_.initializer(x)) break;
        scale *= f;
        chain.push_back(it->second);
        v = x;
        continue;
      }
      if (ops.size() >= 4) break;
      if (n.op_type == "Transpose" && n.inputs.size() == 1) {
        const auto perm = perm_of(n);
        if (perm.empty()) break;
        std::vector<int64_t> op{0, static_cast<int64_t>(perm.size())};
        op.insert(op.end(), perm.begin(), perm.end());
        ops.push_back(std::move(op));
      } else if (n.op_type == "Reshape" && n.inputs.size() == 2) {
        const Tensor* shape = g_.initializer(n.inputs[1]);
        if (!shape || shape->dtype() != DataType::kInt64 || shape->rank() != 1) break;
        std::vector<int64_t> op{1 + n.attr_int("allowzero", 0), shape->numel()};
        for (int64_t i = 0; i < shape->numel(); ++i) op.push_back(shape->data<int64_t>()[i]);
        ops.push_back(std::move(op));
      } else {
        break;
      }
      chain.push_back(it->second);
      v = n.inputs[0];
    }
    for (size_t i = ops.size(); i-- > 0;) view.insert(view.end(), ops[i].begin(), ops[i].end());
    return v;
  }
  // The rank of value v from the graph's value infos, or -1.
  int64_t rank_of(const std::string& v) const {
    const auto s = shape_of(v);
    return s ? static_cast<int64_t>(s->size()) : -1;
  }

  // scores -> Mul / Div by scalars (their product into scale) -> Softmax over the last axis,
  // each read only by the next: the Softmax's index (the chain extended), else SIZE_MAX.
  size_t scores_softmax(std::string x, float& scale, std::vector<size_t>& chain) const {
    size_t r = only_reader(x);
    for (int guard = 0; guard < 4 && r != SIZE_MAX; ++guard) {
      const float f = scalar_factor(g_.nodes[r], x);
      if (std::isnan(f)) break;
      scale *= f;
      chain.push_back(r);
      x = g_.nodes[r].outputs[0];
      r = only_reader(x);
    }
    if (r == SIZE_MAX || std::isnan(scale) || std::isinf(scale)) return SIZE_MAX;
    const ir::Node& sm = g_.nodes[r];
    if (sm.op_type != "Softmax" || !default_domain(sm) || sm.outputs.size() != 1) return SIZE_MAX;
    const auto ax = sm.attributes.find("axis");
    const int64_t axis = ax != sm.attributes.end() ? ax->second.i : (opset_ >= 13 ? -1 : 1);
    const int64_t rank = rank_of(x);
    // The last axis: -1 or rank - 1 (before opset 13 the softmax coerced to 2-D at that axis
    // is the same).
    if (axis != -1 && !(rank > 0 && axis == rank - 1)) return SIZE_MAX;
    chain.push_back(r);
    return r;
  }

  size_t fuse_attention(size_t i) {
    const ir::Node& mm1 = g_.nodes[i];
    if (mm1.inputs.size() != 2 || mm1.outputs.size() != 1) return 0;
    std::vector<size_t> chain{i};
    float scale = 1.0f;
    const size_t r = scores_softmax(mm1.outputs[0], scale, chain);
    if (r == SIZE_MAX) return 0;
    const ir::Node& sm = g_.nodes[r];
    const size_t mm2 = only_reader(sm.outputs[0]);
    if (mm2 == SIZE_MAX || g_.nodes[mm2].op_type != "MatMul" || !default_domain(g_.nodes[mm2]) ||
        g_.nodes[mm2].inputs.size() != 2 || g_.nodes[mm2].inputs[0] != sm.outputs[0])
      return 0;
    chain.push_back(mm2);
    // Operands, through their scalings and Transposes.
    std::vector<int64_t> vq, vk, vv;
    const std::string q = operand_source(mm1.inputs[0], scale, vq, chain, true);
    const std::string kt = operand_source(mm1.inputs[1], scale, vk, chain, true);
    const std::string v = operand_source(g_.nodes[mm2].inputs[1], scale, vv, chain, false);
    if (std::isnan(scale) || std::isinf(scale)) return 0;
    ir::Node f = attention_node("Attention", mm1, g_.nodes[mm2], {q, kt, v}, {vq, vk, vv}, chain);
    set_float(f, "scale", scale);
    return place(std::move(f), chain);
  }

  // Conv / com.trtutils::FusedConv with float32 W of at most k::kSmallCMaxChannels input
  // channels (one group, 2-D) -> QuantizeLinear (scalar constant scale > 0 and zero point,
  // saturating), the only reader  => com.trtutils.cuda::ConvQuantize: inputs X, W, B, R ("" where
  // absent), y_scale[, y_zero_point]; the convolution's attributes plus the QuantizeLinear's
  // output_dtype. The stem of a Q/DQ image model (left in float by the quantizer) then writes its
  // int8 output directly instead of 4-byte floats that a second kernel reads back.
  size_t fuse_conv_quantize(size_t i) {
    const ir::Node& c = g_.nodes[i];
    if (c.outputs.size() != 1 || c.inputs.size() < 2 || c.inputs.size() > 4) return 0;
    const Tensor* w = g_.initializer(c.inputs[1]);
    if (!w || w->dtype() != DataType::kFloat32 || w->rank() != 4 ||
        w->dim(1) > k::kSmallCMaxChannels || c.attr_int("group", 1) != 1)
      return 0;
    const size_t qi = only_reader(c.outputs[0]);
    if (qi == SIZE_MAX) return 0;
    const ir::Node& q = g_.nodes[qi];
    if (q.op_type != "QuantizeLinear" || !default_domain(q) || q.inputs.size() < 2 ||
        q.inputs[0] != c.outputs[0] || q.outputs.size() != 1 || q.attr_int("saturate", 1) != 1)
      return 0;
    const float scale = scalar(q.inputs[1]);
    if (!(scale > 0.0f) || std::isinf(scale)) return 0;
    if (q.has_input(2)) {
      const Tensor* zp = g_.initializer(q.inputs[2]);
      if (!zp || zp->numel() != 1) return 0;
    }
    ir::Node f;
    f.name = c.name;
    f.op_type = "ConvQuantize";
    f.domain = kGpuDomain;
    f.inputs = c.inputs;
    f.inputs.resize(4);
    f.inputs.push_back(q.inputs[1]);
    if (q.has_input(2)) f.inputs.push_back(q.inputs[2]);
    f.outputs = q.outputs;
    f.attributes = c.attributes;
    auto od = q.attributes.find("output_dtype");
    if (od != q.attributes.end()) f.attributes["output_dtype"] = od->second;
    return place(std::move(f), {i, qi});
  }

  // A per-tensor QuantizeLinear to float8 or int8 (saturating, zero point 0) producing v for one
  // reader: its node index, scale and kind (0 E4M3, 1 E5M2, 2 int8), else SIZE_MAX.
  size_t attention_quantizer(const std::string& v, float& scale, int& kind) const {
    auto it = producer_.find(v);
    if (it == producer_.end() || removed_[it->second] || only_reader(v) == SIZE_MAX)
      return SIZE_MAX;
    const ir::Node& q = g_.nodes[it->second];
    if (q.op_type != "QuantizeLinear" || !default_domain(q) || q.inputs.size() != 3 ||
        q.outputs.size() != 1 || q.attr_int("saturate", 1) != 1)
      return SIZE_MAX;
    scale = scalar(q.inputs[1]);
    const DataType t = zero_point_0_type(q);
    if (std::isnan(scale) || scale <= 0.0f || t == DataType::kUndefined) return SIZE_MAX;
    kind = t == DataType::kFloat8E4M3FN ? 0 : (t == DataType::kFloat8E5M2 ? 1 : 2);
    return it->second;
  }
  // The type a QuantizeLinear writes when its zero point is a constant 0 of int8, float8 E4M3 or
  // E5M2; else kUndefined.
  DataType zero_point_0_type(const ir::Node& q) const {
    const Tensor* zp = q.inputs.size() == 3 ? g_.initializer(q.inputs[2]) : nullptr;
    if (!zp || zp->numel() != 1 || zp->at_double(0) != 0.0) return DataType::kUndefined;
    const DataType t = zp->dtype();
    return t == DataType::kInt8 || t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E5M2
               ? t
               : DataType::kUndefined;
  }
  // A QMatMul without bias, residual or quantized output, per-tensor scales and zero points 0:
  // the product of its scales, else NaN.
  float qmatmul_scales(const ir::Node& m) const {
    if (m.domain != "com.trtutils" || m.op_type != "QMatMul" || m.inputs.size() < 5 ||
        m.inputs.size() > 6 || m.outputs.size() != 1)
      return NAN;
    for (size_t z : {size_t{2}, size_t{5}}) {
      if (z >= m.inputs.size() || m.inputs[z].empty()) continue;
      const Tensor* t = g_.initializer(m.inputs[z]);
      if (!t || t->numel() != 1 || t->at_double(0) != 0.0) return NAN;
    }
    return scalar(m.inputs[1]) * scalar(m.inputs[4]);
  }

  // v = Mul(x, c) | Mul(c, x) | Div(x, c) by a finite non-zero scalar constant, v read only by
  // its quantizer: op 1 (Mul) or 2 (Div) and c, the node joins chain, returns x; else v (op 0).
  // The fused kernel repeats the operation before quantizing (exact, where folding c into the
  // quantizer's scale would not be).
  std::string pre_scaling(const std::string& v, float& c, int64_t& op,
                          std::vector<size_t>& chain) const {
    auto it = producer_.find(v);
    if (it == producer_.end() || removed_[it->second] || only_reader(v) == SIZE_MAX) return v;
    const ir::Node& n = g_.nodes[it->second];
    if (!default_domain(n) || n.inputs.size() != 2 || n.outputs.size() != 1) return v;
    std::string x;
    if (n.op_type == "Div") {
      c = scalar(n.inputs[1]);
      x = n.inputs[0];
      op = 2;
    } else if (n.op_type == "Mul") {
      const bool first_const = g_.initializer(n.inputs[0]) != nullptr;
      c = scalar(n.inputs[first_const ? 0 : 1]);
      x = n.inputs[first_const ? 1 : 0];
      op = 1;
    } else {
      return v;
    }
    if (std::isnan(c) || std::isinf(c) || c == 0.0f || g_.initializer(x)) {
      op = 0;
      c = 1.0f;
      return v;
    }
    chain.push_back(it->second);
    return x;
  }

  // The attention's operands (q, kt, v: sources after their views) as Gathers (scalar constant
  // index on axis 0) of one QGemm's y_split = 3 output that nothing else reads: that QGemm then
  // quantizes each part itself (part_scales, part_pre, part_pre_op; y_scale / y_zero_point from
  // the Q quantizer `ql` for the dtype), and the attention `f` reads the bytes (prequantized):
  // a quarter of the float32 traffic between the two, and no quantizing in the attention's loads.
  // The views between the Gathers and the quantizers only move elements, and the scalings are
  // repeated exactly, so the values are the same.
  void fold_quantizers_into_split(ir::Node& f, const std::array<std::string, 3>& src,
                                  const std::array<float, 3>& scale,
                                  const std::array<float, 3>& pre,
                                  const std::array<int64_t, 3>& pre_op, const ir::Node& ql) {
    std::string x;
    std::array<int64_t, 3> part{};
    for (size_t o = 0; o < 3; ++o) {
      auto it = producer_.find(src[o]);
      if (it == producer_.end() || removed_[it->second]) return;
      const ir::Node& gth = g_.nodes[it->second];
      if (gth.op_type != "Gather" || !default_domain(gth) || gth.inputs.size() != 2 ||
          gth.attr_int("axis", 0) != 0 || only_reader(src[o]) == SIZE_MAX)
        return;
      const Tensor* idx = g_.initializer(gth.inputs[1]);
      if (!idx || idx->numel() != 1 || idx->rank() != 0) return;
      part[o] = static_cast<int64_t>(idx->at_double(0));
      if (part[o] < 0) part[o] += 3;
      if (part[o] < 0 || part[o] >= 3 || (o > 0 && gth.inputs[0] != x)) return;
      x = gth.inputs[0];
    }
    if (part[0] == part[1] || part[1] == part[2] || part[0] == part[2]) return;
    auto pr = producer_.find(x);
    auto rd = readers_.find(x);
    if (pr == producer_.end() || removed_[pr->second] || rd == readers_.end() ||
        rd->second.size() != 3 || graph_outputs_.count(x))
      return;
    ir::Node& g = g_.nodes[pr->second];
    if (g.domain != "com.trtutils" || g.op_type != "QGemm" || g.attr_int("y_split", 0) != 3 ||
        g.inputs.size() > ops::qlinear::kYScale || g.attributes.count("gelu") ||
        g.attributes.count("activation"))
      return;
    std::vector<float> ps(3), pp(3);
    std::vector<int64_t> po(3);
    for (size_t o = 0; o < 3; ++o) {
      const size_t p = static_cast<size_t>(part[o]);
      ps[p] = scale[o];
      pp[p] = pre[o];
      po[p] = pre_op[o];
    }
    g.inputs.resize(ops::qlinear::kYScale);
    g.inputs.push_back(ql.inputs[1]);
    g.inputs.push_back(ql.inputs[2]);
    g.attributes["part_scales"] = ir::attr_floats("part_scales", ps);
    g.attributes["part_pre"] = ir::attr_floats("part_pre", pp);
    g.attributes["part_pre_op"] = ir::attr_ints("part_pre_op", po);
    set_int(f, "prequantized", 1);
  }

  // The attention f's output [-> Reshape] -> QuantizeLinear per tensor (int8 or float8, zero
  // point 0; the input of the output projection): f writes the quantized bytes itself (y_type,
  // y_scale), the Reshape moves bytes, and the quantizer goes: a quarter of the bytes, and no
  // float32 pass between the two. TRTUTILS_CUDA_ATTENTION_QOUT=0 leaves the quantizer.
  void fold_output_quantizer(ir::Node& f) {
    if (!switch_on("TRTUTILS_CUDA_ATTENTION_QOUT")) return;
    std::string v = f.outputs[0];
    size_t reshape = only_reader(v);
    if (reshape == SIZE_MAX) return;
    const ir::Node& rs = g_.nodes[reshape];
    if (rs.op_type == "Reshape" && default_domain(rs) && !rs.inputs.empty() && rs.inputs[0] == v &&
        rs.outputs.size() == 1)
      v = rs.outputs[0];
    else
      reshape = SIZE_MAX;
    const size_t qi = per_tensor_quantizer_of(v);
    if (qi == SIZE_MAX) return;
    const ir::Node& q = g_.nodes[qi];
    const DataType t = zero_point_0_type(q);
    if (t == DataType::kUndefined) return;
    set_float(f, "y_scale", scalar(q.inputs[1]));
    set_int(f, "y_type", static_cast<int64_t>(t));
    if (reshape != SIZE_MAX) {
      g_.nodes[reshape].outputs[0] = q.outputs[0];
      producer_[q.outputs[0]] = reshape;
    } else {
      f.outputs = {q.outputs[0]};
    }
    removed_[qi] = true;
  }

  // QuantizeLinear(Q), QuantizeLinear(KT) -> QMatMul -> Mul / Div by scalars -> Softmax(last
  // axis) -> QuantizeLinear -> QMatMul with QuantizeLinear(V) [-> Transpose], all float8 (or all
  // int8) per tensor with zero points 0, each value read only by the next  =>
  // com.trtutils.cuda::AttentionQ over the float Q, KT, V (their Transposes / Reshapes absorbed
  // as views, a scalar Mul / Div before the Q or K quantizer repeated by the kernel). Head sizes
  // must be known and at most kAttentionMaxHead (the kernel's limit).
  size_t fuse_attention_q(size_t i) {
    const ir::Node& m1 = g_.nodes[i];
    const float qk_dq = qmatmul_scales(m1);
    if (std::isnan(qk_dq)) return 0;
    float q_scale = 0, k_scale = 0, v_scale = 0, p_scale = 0;
    int kind = 0, other_kind = 0;
    const size_t ql_q = attention_quantizer(m1.inputs[0], q_scale, kind);
    const size_t ql_k = attention_quantizer(m1.inputs[3], k_scale, other_kind);
    if (ql_q == SIZE_MAX || ql_k == SIZE_MAX || other_kind != kind) return 0;
    std::vector<size_t> chain{ql_q, ql_k, i};
    float scale = 1.0f;
    const size_t r = scores_softmax(m1.outputs[0], scale, chain);
    if (r == SIZE_MAX) return 0;
    const ir::Node& sm = g_.nodes[r];
    const size_t ql_p = only_reader(sm.outputs[0]);
    if (ql_p == SIZE_MAX || g_.nodes[ql_p].outputs.size() != 1) return 0;
    const std::string p8 = g_.nodes[ql_p].outputs[0];
    if (attention_quantizer(p8, p_scale, other_kind) != ql_p || other_kind != kind) return 0;
    chain.push_back(ql_p);
    const size_t m2 = only_reader(p8);
    if (m2 == SIZE_MAX || g_.nodes[m2].inputs.empty() || g_.nodes[m2].inputs[0] != p8) return 0;
    const float pv_dq = qmatmul_scales(g_.nodes[m2]);
    if (std::isnan(pv_dq)) return 0;
    const size_t ql_v = attention_quantizer(g_.nodes[m2].inputs[3], v_scale, other_kind);
    if (ql_v == SIZE_MAX || other_kind != kind) return 0;
    // Head sizes: the quantized Q's and V's last axes.
    for (const std::string& t : {m1.inputs[0], g_.nodes[m2].inputs[3]}) {
      const auto sh = shape_of(t);
      if (!sh || sh->empty() || !sh->back().is_static() || sh->back().value < 1 ||
          sh->back().value > k::kAttentionMaxHead)
        return 0;
    }
    chain.push_back(ql_v);
    chain.push_back(m2);
    std::vector<int64_t> vq, vk, vv;
    float unused = 1.0f, q_pre = 1.0f, k_pre = 1.0f;
    int64_t q_pre_op = 0, k_pre_op = 0;
    const std::string q = operand_source(
        pre_scaling(g_.nodes[ql_q].inputs[0], q_pre, q_pre_op, chain), unused, vq, chain, false);
    const std::string kt = operand_source(
        pre_scaling(g_.nodes[ql_k].inputs[0], k_pre, k_pre_op, chain), unused, vk, chain, false);
    const std::string v = operand_source(g_.nodes[ql_v].inputs[0], unused, vv, chain, false);
    ir::Node f = attention_node("AttentionQ", m1, g_.nodes[m2], {q, kt, v}, {vq, vk, vv}, chain);
    set_float(f, "scale", scale);
    set_float(f, "q_scale", q_scale);
    set_float(f, "k_scale", k_scale);
    set_float(f, "v_scale", v_scale);
    set_float(f, "p_scale", p_scale);
    set_float(f, "qk_dq", qk_dq);
    set_float(f, "pv_dq", pv_dq);
    set_int(f, "e4m3", kind == 0 ? 1 : 0);
    set_int(f, "int8", kind == 2 ? 1 : 0);
    if (q_pre_op) {
      set_float(f, "q_pre", q_pre);
      set_int(f, "q_pre_op", q_pre_op);
    }
    if (k_pre_op) {
      set_float(f, "k_pre", k_pre);
      set_int(f, "k_pre_op", k_pre_op);
    }
    fold_quantizers_into_split(f, {q, kt, v}, {q_scale, k_scale, v_scale}, {q_pre, k_pre, 1.0f},
                               {q_pre_op, k_pre_op, 0}, g_.nodes[ql_q]);
    fold_output_quantizer(f);
    return place(std::move(f), chain);
  }

  // A per-tensor QuantizeLinear reading v (its only reader): saturating, scalar constant scale
  // (finite, > 0) and zero point: its index, else SIZE_MAX.
  size_t per_tensor_quantizer_of(const std::string& v) const {
    const size_t qi = only_reader(v);
    if (qi == SIZE_MAX) return SIZE_MAX;
    const ir::Node& q = g_.nodes[qi];
    if (q.op_type != "QuantizeLinear" || !default_domain(q) || q.inputs.size() != 3 ||
        q.inputs[0] != v || q.outputs.size() != 1 || q.attr_int("saturate", 1) != 1)
      return SIZE_MAX;
    const float s = scalar(q.inputs[1]);
    const Tensor* zp = g_.initializer(q.inputs[2]);
    if (!(s > 0.0f) || std::isinf(s) || !zp || zp->numel() != 1) return SIZE_MAX;
    return qi;
  }

  // com.trtutils::QGemm with a float output (no y_scale, residual or activation) -> the erf GELU
  // chain [-> QuantizeLinear per tensor]  => the same QGemm with gelu = 1 (and the quantizer's
  // y_scale, y_zero_point): the GELU and the quantization run in the product's epilogue instead
  // of three passes over float32 activations (a transformer's MLP).
  size_t fuse_qgemm_gelu(size_t i) {
    const ir::Node& g = g_.nodes[i];
    if (!float_qgemm(g, {"gelu"})) return 0;
    std::vector<size_t> chain;
    const std::string y = match_gelu(g.outputs[0], chain);
    if (y.empty()) return 0;
    ir::Node f = g;
    set_int(f, "gelu", 1);
    f.outputs = {y};
    const size_t qi = per_tensor_quantizer_of(y);
    if (qi != SIZE_MAX) {
      f.inputs.resize(ops::qlinear::kYScale);
      f.inputs.push_back(g_.nodes[qi].inputs[1]);
      f.inputs.push_back(g_.nodes[qi].inputs[2]);
      f.outputs = g_.nodes[qi].outputs;
      chain.push_back(qi);
    }
    chain.insert(chain.begin(), i);
    return place(std::move(f), chain);
  }

  // A QGemm with one float output (no y_scale, residual or activation) and none of the
  // attributes `also` (epilogue features set by an earlier fusion).
  static bool float_qgemm(const ir::Node& g, std::initializer_list<const char*> also) {
    if (g.outputs.size() != 1 || g.inputs.size() > ops::qlinear::kYScale ||
        g.attributes.count("activation"))
      return false;
    for (const char* a : also)
      if (g.attributes.count(a)) return false;
    return true;
  }
  // N, the output columns of a com.trtutils::QGemm with a 2-D constant W, else -1.
  int64_t qgemm_columns(const ir::Node& g) const {
    const Tensor* w =
        g.inputs.size() > ops::qlinear::kW ? g_.initializer(g.inputs[ops::qlinear::kW]) : nullptr;
    if (!w || w->rank() != 2) return -1;
    return g.attr_int("transB", 0) != 0 ? w->dim(0) : w->dim(1);
  }
  // com.trtutils::QGemm with a float output (no y_scale, residual or activation; W 2-D constant)
  // -> Reshape [R0, R1, N] -> Transpose(1, 0, 2) [-> Add(residual of that shape)]  => the QGemm
  // with y_grid = [R0, R1] (and the residual as its R): the attention's output projection
  // writes the batch-first rows itself and adds the skip connection in its epilogue.
  size_t fuse_qgemm_grid(size_t i) {
    using ops::qlinear::kResidual;
    const ir::Node& g = g_.nodes[i];
    if (!float_qgemm(g, {"y_grid"})) return 0;
    const int64_t n = qgemm_columns(g);
    if (n < 0) return 0;
    ir::Node f = g;
    std::vector<size_t> chain;
    std::string out = match_grid(g.outputs[0], n, f, chain);
    if (chain.empty()) return 0;
    f.inputs.resize(kResidual);
    out = match_residual(out, f, chain);
    if (f.inputs.size() == kResidual) f.inputs = g.inputs;  // no residual
    f.outputs = {out};
    chain.insert(chain.begin(), i);
    return place(std::move(f), chain);
  }

  // com.trtutils::QGemm with a float output (no y_scale, residual, activation or output layout)
  // -> Add(float32 residual of its shape)  => the QGemm with the residual as its R (the skip
  // connection after a transformer's MLP; the builder fuses it itself in float32 graphs, the
  // executor here after promote_half_islands).
  size_t fuse_qgemm_residual(size_t i) {
    using ops::qlinear::kResidual;
    const ir::Node& g = g_.nodes[i];
    if (!float_qgemm(g, {"gelu", "y_grid", "y_split"})) return 0;
    ir::Node f = g;
    f.inputs.resize(kResidual);
    std::vector<size_t> chain{i};
    const std::string out = match_residual(g.outputs[0], f, chain);
    if (f.inputs.size() == kResidual) return 0;
    const auto rt = g_.find_value_info(f.inputs[kResidual]);
    if (!rt || rt->dtype != DataType::kFloat32) return 0;
    f.outputs = {out};
    return place(std::move(f), chain);
  }

  // The static shape of value v (every dim known and positive), else empty.
  std::vector<int64_t> static_shape(const std::string& v) const {
    const auto s = shape_of(v);
    std::vector<int64_t> r;
    if (!s) return r;
    for (const ir::Dim& d : *s) {
      if (!d.is_static() || d.value <= 0) return {};
      r.push_back(d.value);
    }
    return r;
  }
  // com.trtutils::QGemm with a float output Y [lead..., N] (no y_scale, residual, activation)
  // -> Reshape [lead..., P, N / P] -> Unsqueeze (a leading 1) -> Transpose (swapping that 1 and
  // P) -> Squeeze (the 1), each read only by the next: torch's split of a packed QKV projection
  // into [P, lead..., N / P]  => the QGemm with y_split = P, writing that layout itself (the
  // Gathers after it then read contiguous slices).
  size_t fuse_qgemm_split(size_t i) {
    const ir::Node& g = g_.nodes[i];
    if (!float_qgemm(g, {"y_grid"})) return 0;
    const std::vector<int64_t> ys = static_shape(g.outputs[0]);
    if (ys.size() < 2) return 0;
    const int64_t n = ys.back();
    std::vector<size_t> chain{i};
    std::string v = g.outputs[0];
    auto next = [&](const char* op) -> std::vector<int64_t> {
      const size_t r = only_reader(v);
      if (r == SIZE_MAX || g_.nodes[r].op_type != op || !default_domain(g_.nodes[r]) ||
          g_.nodes[r].outputs.size() != 1 || g_.nodes[r].inputs.empty() ||
          g_.nodes[r].inputs[0] != v)
        return {};
      chain.push_back(r);
      v = g_.nodes[r].outputs[0];
      return static_shape(v);
    };
    const std::vector<int64_t> rs = next("Reshape");
    if (rs.size() != ys.size() + 1 || rs.back() <= 0 || n % rs.back() != 0) return 0;
    const int64_t p = n / rs.back(), w = rs.back();
    const size_t r = ys.size() - 1;  // lead rank
    for (size_t a = 0; a < r; ++a)
      if (rs[a] != ys[a]) return 0;
    if (rs[r] != p) return 0;
    std::vector<int64_t> want{1};
    want.insert(want.end(), rs.begin(), rs.end());
    if (next("Unsqueeze") != want) return 0;
    std::swap(want[0], want[r + 1]);
    const size_t t = only_reader(v);
    if (t == SIZE_MAX) return 0;
    std::vector<int64_t> perm(want.size());
    for (size_t a = 0; a < perm.size(); ++a) perm[a] = static_cast<int64_t>(a);
    std::swap(perm[0], perm[r + 1]);
    if (g_.nodes[t].op_type != "Transpose" || perm_of(g_.nodes[t]) != perm) return 0;
    if (next("Transpose") != want) return 0;
    want.erase(want.begin() + static_cast<ptrdiff_t>(r + 1));
    if (next("Squeeze") != want || want.front() != p || want.back() != w) return 0;
    ir::Node f = g;
    set_int(f, "y_split", p);
    f.outputs = {v};
    return place(std::move(f), chain);
  }

  // LayerNormalization over the last axis (Mean / InvStdDev unused) [-> Transpose(1, 0, 2)] ->
  // QuantizeLinear per tensor  => com.trtutils.cuda::LayerNormQuantize (X, Scale, B, y_scale,
  // y_zero_point; epsilon, swap01): the normalised rows go out as quantized bytes, transposed on
  // the way, instead of float32 rows that a Transpose and a quantizer read back (the input of a
  // quantized transformer's QKV and MLP projections).
  size_t fuse_layer_norm_quantize(size_t i) {
    const ir::Node& ln = g_.nodes[i];
    if (ln.inputs.size() < 2 || ln.outputs.empty()) return 0;
    for (size_t o = 1; o < ln.outputs.size(); ++o)
      if (!ln.outputs[o].empty() &&
          (readers_.count(ln.outputs[o]) || graph_outputs_.count(ln.outputs[o])))
        return 0;
    const int64_t rank = rank_of(ln.inputs[0]);
    const int64_t axis = ln.attr_int("axis", -1);
    if (rank < 1 || (axis != -1 && axis != rank - 1)) return 0;
    std::vector<size_t> chain{i};
    std::string y = ln.outputs[0];
    int64_t swap = 0;
    const size_t t = only_reader(y);
    if (t != SIZE_MAX && rank == 3 && swaps_leading(g_.nodes[t])) {
      chain.push_back(t);
      y = g_.nodes[t].outputs[0];
      swap = 1;
    }
    const size_t qi = per_tensor_quantizer_of(y);
    if (qi == SIZE_MAX) return 0;
    chain.push_back(qi);
    if (const size_t p = qgemm_before_layer_norm(ln, qi); p != SIZE_MAX) {
      ir::Node& g = g_.nodes[p];
      g.inputs.resize(kLnNumInputs);
      g.inputs[kLnScale] = ln.inputs[1];
      g.inputs[kLnBias] = ln.has_input(2) ? ln.inputs[2] : "";
      g.inputs[kLnYScale] = g_.nodes[qi].inputs[1];
      g.inputs[kLnYZeroPoint] = g_.nodes[qi].inputs[2];
      set_float(g, "ln_epsilon", ln.attr_float("epsilon", 1e-5f));
      set_int(g, "ln_swap01", swap);
      g.outputs.push_back(g_.nodes[qi].outputs[0]);
      producer_[g_.nodes[qi].outputs[0]] = p;
      for (size_t c : chain) removed_[c] = true;
      last_ = p;
      return 1;
    }
    ir::Node f;
    f.name = ln.name;
    f.op_type = "LayerNormQuantize";
    f.domain = kGpuDomain;
    f.inputs = {ln.inputs[0], ln.inputs[1], ln.has_input(2) ? ln.inputs[2] : "",
                g_.nodes[qi].inputs[1], g_.nodes[qi].inputs[2]};
    f.outputs = g_.nodes[qi].outputs;
    set_float(f, "epsilon", ln.attr_float("epsilon", 1e-5f));
    set_int(f, "swap01", swap);
    return place(std::move(f), chain);
  }

  // The com.trtutils::QGemm that computes the LayerNormalization ln's input as float32 rows
  // (the residual stream: no output quantizer, activation or split; its epilogue may transpose
  // the rows and add the residual) when ln's Scale / B are float32 constants of its N values and
  // quantizer qi's zero point is an int8 / uint8 / float8 constant, else SIZE_MAX. The layer norm
  // and the quantizer then run in the product's epilogue (QGemmLnInput): the normalised rows
  // come from the sums in registers instead of a second pass reading them back.
  // TRTUTILS_CUDA_LN_EPILOGUE=0: never.
  size_t qgemm_before_layer_norm(const ir::Node& ln, size_t qi) const {
    if (!switch_on("TRTUTILS_CUDA_LN_EPILOGUE")) return SIZE_MAX;
    auto it = producer_.find(ln.inputs[0]);
    if (it == producer_.end() || removed_[it->second]) return SIZE_MAX;
    const ir::Node& g = g_.nodes[it->second];
    if (g.domain != "com.trtutils" || g.op_type != "QGemm" || g.outputs.size() != 1 ||
        g.inputs.size() > ops::qlinear::kNumInputs)
      return SIZE_MAX;
    for (const char* a : {"activation", "gelu", "y_split", "part_scales"})
      if (g.attributes.count(a)) return SIZE_MAX;
    if (g.inputs.size() > ops::qlinear::kYScale && !g.inputs[ops::qlinear::kYScale].empty())
      return SIZE_MAX;
    const int64_t n = qgemm_columns(g);
    if (n < 0) return SIZE_MAX;
    for (size_t k = 1; k < 3; ++k) {
      if (k == 2 && !ln.has_input(2)) continue;
      const Tensor* t = g_.initializer(ln.inputs[k]);
      if (!t || t->dtype() != DataType::kFloat32 || t->numel() != n) return SIZE_MAX;
    }
    const Tensor* zp = g_.initializer(g_.nodes[qi].inputs[2]);
    const DataType zt = zp ? zp->dtype() : DataType::kUndefined;
    if (zt != DataType::kInt8 && zt != DataType::kUInt8 && zt != DataType::kFloat8E4M3FN &&
        zt != DataType::kFloat8E5M2)
      return SIZE_MAX;
    return it->second;
  }

  // Conv with kernel = stride (2-D, no padding, dilation 1, one group, constant W: a vision
  // transformer's patch embedding) -> Reshape to [N, K, P] -> Transpose(0, 2, 1), each the only
  // reader of the one before  => com.trtutils.cuda::PatchEmbed (X, W[, B]): Y [N, P, K] =
  // patches(X) W^T + B, one matrix product over all N * P patches written in the Transpose's
  // order (the unfused chain: one product per image into [N, K, P], a bias pass, then a
  // transposing copy of the result).
  // TRTUTILS_CUDA_PATCH_EMBED=0: left as it is.
  size_t fuse_patch_embed(size_t i) {
    if (!switch_on("TRTUTILS_CUDA_PATCH_EMBED")) return 0;
    const ir::Node& c = g_.nodes[i];
    if (!default_domain(c) || c.op_type != "Conv" || c.outputs.size() != 1 || c.inputs.size() < 2 ||
        c.inputs.size() > 3 || c.attr_int("group", 1) != 1)
      return 0;
    auto ap = c.attributes.find("auto_pad");
    if (ap != c.attributes.end() && ap->second.s != "NOTSET") return 0;
    const Tensor* w = g_.initializer(c.inputs[1]);
    if (!w || w->rank() != 4 ||
        (w->dtype() != DataType::kFloat32 && w->dtype() != DataType::kFloat16))
      return 0;
    const std::vector<int64_t> kernel{w->dim(2), w->dim(3)};
    auto ints_or = [&](const char* name, std::vector<int64_t> def) {
      auto it = c.attributes.find(name);
      return it == c.attributes.end() ? def : it->second.ints;
    };
    if (ints_or("kernel_shape", kernel) != kernel || ints_or("strides", {1, 1}) != kernel ||
        ints_or("dilations", {1, 1}) != std::vector<int64_t>{1, 1} ||
        ints_or("pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0})
      return 0;
    const size_t ri = only_reader(c.outputs[0]);
    if (ri == SIZE_MAX) return 0;
    const ir::Node& r = g_.nodes[ri];
    if (r.op_type != "Reshape" || !default_domain(r) || r.inputs.empty() ||
        r.inputs[0] != c.outputs[0] || r.outputs.size() != 1)
      return 0;
    const size_t ti = only_reader(r.outputs[0]);
    if (ti == SIZE_MAX) return 0;
    const ir::Node& t = g_.nodes[ti];
    if (t.op_type != "Transpose" || !default_domain(t) || t.outputs.size() != 1 ||
        perm_of(t) != std::vector<int64_t>{0, 2, 1})
      return 0;
    // The Reshape merges the convolution's spatial axes and keeps the batch and the channels.
    const auto ci = g_.find_value_info(c.outputs[0]);
    const auto rsi = g_.find_value_info(r.outputs[0]);
    if (!ci || !rsi || !ci->shape || !rsi->shape || ci->shape->size() != 4 ||
        rsi->shape->size() != 3)
      return 0;
    const ir::SymShape& cs = *ci->shape;
    const ir::SymShape& rs = *rsi->shape;
    if (!cs[2].is_static() || !cs[3].is_static() || !(rs[0] == cs[0]) || rs[1].value != w->dim(0) ||
        rs[2].value != cs[2].value * cs[3].value)
      return 0;
    ir::Node f;
    f.name = c.name;
    f.op_type = "PatchEmbed";
    f.domain = kGpuDomain;
    f.inputs = c.inputs;
    f.outputs = t.outputs;
    return place(std::move(f), {i, ri, ti});
  }

  // DequantizeLinear per tensor (constant scale and zero point, float32 output) read only by a
  // GlobalAveragePool / GlobalMaxPool  => com.trtutils.cuda::DequantizeGlobalPool (X, x_scale,
  // [x_zero_point]; is_max): the pool reads the quantized bytes and dequantizes them as it sums,
  // instead of a pass that writes the float tensor for the pool to read back (the quantized
  // squeeze-excite inputs of EfficientNet).
  size_t fuse_dequantize_pool(size_t i) {
    const ir::Node& pool = g_.nodes[i];
    if (pool.inputs.size() != 1 || pool.outputs.size() != 1 || pool.inputs[0].empty()) return 0;
    auto it = producer_.find(pool.inputs[0]);
    if (it == producer_.end() || removed_[it->second] || only_reader(pool.inputs[0]) != i) return 0;
    const ir::Node& dq = g_.nodes[it->second];
    if (dq.op_type != "DequantizeLinear" || !default_domain(dq) || dq.inputs.size() < 2 ||
        dq.outputs.size() != 1 || dq.inputs[0].empty())
      return 0;
    const Tensor* scale = g_.initializer(dq.inputs[1]);
    const Tensor* zp = dq.has_input(2) ? g_.initializer(dq.inputs[2]) : nullptr;
    if (!scale || scale->numel() != 1 || scale->dtype() != DataType::kFloat32 ||
        (dq.has_input(2) && (!zp || zp->numel() != 1)))
      return 0;
    const auto xi = g_.find_value_info(dq.inputs[0]);
    const DataType xt = zp ? zp->dtype() : (xi ? xi->dtype : DataType::kUndefined);
    if (!(xt == DataType::kInt8 || xt == DataType::kUInt8 || xt == DataType::kFloat8E4M3FN ||
          xt == DataType::kFloat8E5M2))
      return 0;
    ir::Node f;
    f.name = pool.name;
    f.op_type = "DequantizeGlobalPool";
    f.domain = kGpuDomain;
    f.inputs = {dq.inputs[0], dq.inputs[1]};
    if (zp) f.inputs.push_back(dq.inputs[2]);
    f.outputs = pool.outputs;
    set_int(f, "is_max", pool.op_type == "GlobalMaxPool" ? 1 : 0);
    return place(std::move(f), {it->second, i});
  }

  // Add / Sub / Mul / Div of two computed float values (no constant operand: a scalar Mul before
  // a quantizer belongs to the attention fusions) -> QuantizeLinear per tensor
  //   => com.trtutils.cuda::BinaryQuantize (A, B, y_scale, y_zero_point; op): the result goes
  // out as quantized bytes instead of float values that the quantizer reads back (EfficientNet's
  // squeeze-excite scale before the projection, a residual sum entering a quantized layer).
  size_t fuse_binary_quantize(size_t i) {
    const ir::Node& n = g_.nodes[i];
    if (n.inputs.size() != 2 || n.outputs.size() != 1 || n.inputs[0].empty() ||
        n.inputs[1].empty() || g_.initializer(n.inputs[0]) || g_.initializer(n.inputs[1]))
      return 0;
    const auto vi = g_.find_value_info(n.outputs[0]);
    if (!vi || !(vi->dtype == DataType::kFloat32 || vi->dtype == DataType::kFloat16 ||
                 vi->dtype == DataType::kBFloat16))
      return 0;
    const size_t qi = per_tensor_quantizer_of(n.outputs[0]);
    if (qi == SIZE_MAX) return 0;
    const ir::Node& q = g_.nodes[qi];
    const DataType yt = g_.initializer(q.inputs[2])->dtype();
    const bool fp8 = yt == DataType::kFloat8E4M3FN || yt == DataType::kFloat8E5M2;
    if (!(yt == DataType::kInt8 || yt == DataType::kUInt8 || fp8) ||
        (fp8 && g_.initializer(q.inputs[2])->at_double(0) != 0.0))
      return 0;
    ir::Node f;
    f.name = n.name;
    f.op_type = "BinaryQuantize";
    f.domain = kGpuDomain;
    f.inputs = {n.inputs[0], n.inputs[1], q.inputs[1], q.inputs[2]};
    f.outputs = q.outputs;
    f.attributes["op"] = ir::attr_string("op", n.op_type);
    return place(std::move(f), {i, qi});
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
    last_ = chain.back();
    return 1;
  }

  ir::Graph& g_;
  size_t last_ = SIZE_MAX;  // where the last fusion put its node
  int64_t opset_;
  bool attention_, attention_fp8_;
  std::unordered_map<std::string, std::vector<size_t>> readers_;
  std::unordered_map<std::string, size_t> producer_;
  std::unordered_set<std::string> graph_outputs_;
  std::vector<bool> removed_;
};

}  // namespace

// ---- float16 islands of Q/DQ graphs, computed in float32 -------------------------------------
// A Q/DQ graph whose un-quantized rest is float16 (`quantize --high_precision_dtype fp16`,
// nvidia-modelopt's default) reaches the executor as quantized products with float32 outputs,
// Casts to float16 after each, float16 Softmax / LayerNorm / GELU / residual chains, and float16
// QuantizeLinear inputs. The executor's fusions (attention, GELU / split / projection epilogues,
// LayerNorm + quantize) are written for float32 activations, so on such a graph every Cast and
// every unfused float16 layer ran as its own pass: ViT-B/16 FP8 at batch 256 took 106 ms on the
// H200, against 33.5 ms for the same model quantized with float32 precision. Here the float16
// values become float32 (float16 constants widened, Casts to float16 retargeted to float32,
// Casts between floats removed), so that the graph is the float32-precision one and every fusion
// applies. The result is at least as precise as the graph asks (no float16 rounding between the
// quantized layers), and it is what the GPU runs, not what the engine file says: the file and the
// CPU backend keep the float16 layers. Only graphs with quantized layers and no float16 input or
// output are promoted. TRTUTILS_CUDA_HALF_AS_FLOAT=0 keeps the float16 layers on the GPU too.
namespace {

bool quantized_layer(const ir::Node& n) {
  if (n.domain == "com.trtutils")
    return n.op_type == "QGemm" || n.op_type == "QMatMul" || n.op_type == "QConv";
  return default_domain(n) && (n.op_type == "QuantizeLinear" || n.op_type == "QLinearConv" ||
                               n.op_type == "QLinearMatMul");
}

bool float_dtype(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16;
}

Tensor widened(const Tensor& t) {
  return Tensor::from_vector<float>(DataType::kFloat32, t.shape(), t.to_float_vector());
}

}  // namespace

size_t promote_half_islands(ir::Graph& g, std::map<std::string, FusedInto>* absorbed) {
  if (!switch_on("TRTUTILS_CUDA_HALF_AS_FLOAT")) return 0;
  for (const auto& v : g.inputs)
    if (v.dtype == DataType::kFloat16 && !g.is_initializer(v.name)) return 0;
  for (const auto& v : g.outputs)
    if (v.dtype == DataType::kFloat16) return 0;
  bool quantized = false, half_casts = false;
  for (const auto& n : g.nodes) {
    quantized = quantized || quantized_layer(n);
    half_casts = half_casts || (default_domain(n) && n.op_type == "Cast" &&
                                n.attr_int("to", 0) == static_cast<int64_t>(DataType::kFloat16));
    for (const auto& [name, a] : n.attributes)
      if (a.kind == ir::Attribute::Kind::kGraph) return 0;  // control flow: left as it is
  }
  if (!quantized || !half_casts) return 0;
  // Which values are floats (before the change): their types where known, the Casts' targets,
  // and the quantized layers' float outputs.
  std::unordered_map<std::string, DataType> type;
  for (const auto& v : g.inputs) type[v.name] = v.dtype;
  for (const auto& [name, vi] : g.value_info) type[name] = vi.dtype;
  for (const auto& [name, t] : g.initializers) type[name] = t.dtype();
  for (const auto& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0].empty()) continue;
    if (default_domain(n) && n.op_type == "Cast")
      type[n.outputs[0]] = static_cast<DataType>(n.attr_int("to", 0));
    else if (n.domain == "com.trtutils" && quantized_layer(n) &&
             n.inputs.size() <= ops::qlinear::kYScale && !type.count(n.outputs[0]))
      type[n.outputs[0]] = DataType::kFloat32;
  }
  size_t changed = 0;
  for (auto& [name, t] : g.initializers)
    if (t.dtype() == DataType::kFloat16) t = widened(t), ++changed;
  for (auto& [name, vi] : g.value_info)
    if (vi.dtype == DataType::kFloat16) vi.dtype = DataType::kFloat32;
  std::unordered_set<std::string> graph_outputs;
  for (const auto& v : g.outputs) graph_outputs.insert(v.name);
  std::unordered_map<std::string, std::string> renamed;  // removed Cast's output -> its input
  std::vector<ir::Node> kept;
  kept.reserve(g.nodes.size());
  for (auto& n : g.nodes) {
    for (auto& in : n.inputs) {
      auto r = renamed.find(in);
      if (r != renamed.end()) in = r->second;
    }
    if (default_domain(n) && (n.op_type == "Constant" || n.op_type == "ConstantOfShape")) {
      auto a = n.attributes.find("value");
      if (a != n.attributes.end() && a->second.kind == ir::Attribute::Kind::kTensor &&
          a->second.t.dtype() == DataType::kFloat16)
        a->second.t = widened(a->second.t), ++changed;
    }
    if (default_domain(n) && n.op_type == "Cast" && n.inputs.size() == 1 && n.outputs.size() == 1) {
      const int64_t to = n.attr_int("to", 0);
      if (to == static_cast<int64_t>(DataType::kFloat16)) {
        n.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat32));
        ++changed;
      }
      auto it = type.find(n.inputs[0]);
      const bool float_in = it != type.end() && float_dtype(it->second);
      if (float_dtype(static_cast<DataType>(to)) && float_in &&
          !graph_outputs.count(n.outputs[0])) {
        renamed[n.outputs[0]] = n.inputs[0];
        if (absorbed) (*absorbed)[n.name] = FusedInto{"", "the float16 rest runs in float32"};
        ++changed;
        continue;
      }
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  if (changed)
    TRT_LOG_VERBOSE("cuda fusion: float16 layers of a Q/DQ graph computed in float32 ({} changes)",
                    changed);
  return changed;
}

// The float8 Q/DQ attention fusion: on unless TRTUTILS_CUDA_ATTENTION_FP8 is 0 / off / false
// (the layers one by one, for A/B runs).
static bool attention_fp8_enabled() {
  return switch_on("TRTUTILS_CUDA_ATTENTION_FP8");
}

std::map<std::string, FusedInto> fusion_plan(const ir::Graph& graph, int64_t opset) {
  ir::Graph copy = graph;
  std::map<std::string, FusedInto> absorbed;
  promote_half_islands(copy, &absorbed);
  Fuser(copy, opset, kernel_switch("TRTUTILS_CUDA_ATTENTION", true), attention_fp8_enabled())
      .run(&absorbed);
  fuse_batchnorm_act(copy, opset, &absorbed);
  return absorbed;
}

size_t fuse_for_gpu(ir::Graph& graph, int64_t opset) {
  promote_half_islands(graph, nullptr);
  const size_t n =
      Fuser(graph, opset, kernel_switch("TRTUTILS_CUDA_ATTENTION", true), attention_fp8_enabled())
          .run() +
      fuse_batchnorm_act(graph, opset, nullptr);
  if (n)
    TRT_LOG_VERBOSE(
        "cuda fusion: {} MatMul bias / GELU / attention / conv + quantize chain(s) fused", n);
  return n;
}

}  // namespace trtutils::cuda
