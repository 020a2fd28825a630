// The Q/DQ attention (float8 or int8 QMatMuls around a Softmax) into
// com.trtutils.cuda::AttentionQ (patterns.h), with its operand quantizers moved into a packed QKV
// projection and its output quantizer into the attention itself where the graph allows.
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/patterns.h"
#include "ir/graph_builder.h"
#include "ops/qlinear_ops.h"

namespace trtutils::cuda::fusion {

namespace {

// The type a QuantizeLinear writes when its zero point is a constant 0 of int8, float8 E4M3 or
// E5M2; else kUndefined.
DataType zero_point_0_type(const FusionGraph& fg, const ir::Node& q) {
  const Tensor* zp = q.inputs.size() == 3 ? fg.graph.initializer(q.inputs[2]) : nullptr;
  if (!zp || zp->numel() != 1 || zp->at_double(0) != 0.0) return DataType::kUndefined;
  const DataType t = zp->dtype();
  return t == DataType::kInt8 || t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E5M2
             ? t
             : DataType::kUndefined;
}

// A per-tensor QuantizeLinear to float8 or int8 (saturating, zero point 0) producing v for one
// reader: its node index, scale and kind (0 E4M3, 1 E5M2, 2 int8), else SIZE_MAX.
size_t attention_quantizer(const FusionGraph& fg, const std::string& v, float& scale, int& kind) {
  auto it = fg.producer.find(v);
  if (it == fg.producer.end() || fg.removed[it->second] || fg.only_reader(v) == SIZE_MAX)
    return SIZE_MAX;
  const ir::Node& q = fg.graph.nodes[it->second];
  if (q.op_type != "QuantizeLinear" || !default_domain(q) || q.inputs.size() != 3 ||
      q.outputs.size() != 1 || q.attr_int("saturate", 1) != 1)
    return SIZE_MAX;
  scale = fg.scalar(q.inputs[1]);
  const DataType t = zero_point_0_type(fg, q);
  if (std::isnan(scale) || scale <= 0.0f || t == DataType::kUndefined) return SIZE_MAX;
  kind = t == DataType::kFloat8E4M3FN ? 0 : (t == DataType::kFloat8E5M2 ? 1 : 2);
  return it->second;
}

// A QMatMul without bias, residual or quantized output, per-tensor scales and zero points 0:
// the product of its scales, else NaN.
float qmatmul_scales(const FusionGraph& fg, const ir::Node& m) {
  if (m.domain != "com.trtutils" || m.op_type != "QMatMul" || m.inputs.size() < 5 ||
      m.inputs.size() > 6 || m.outputs.size() != 1)
    return NAN;
  for (size_t z : {size_t{2}, size_t{5}}) {
    if (z >= m.inputs.size() || m.inputs[z].empty()) continue;
    const Tensor* t = fg.graph.initializer(m.inputs[z]);
    if (!t || t->numel() != 1 || t->at_double(0) != 0.0) return NAN;
  }
  return fg.scalar(m.inputs[1]) * fg.scalar(m.inputs[4]);
}

// v = Mul(x, c) | Mul(c, x) | Div(x, c) by a finite non-zero scalar constant, v read only by
// its quantizer: op 1 (Mul) or 2 (Div) and c, the node joins chain, returns x; else v (op 0).
// The fused kernel repeats the operation before quantizing (exact, where folding c into the
// quantizer's scale would not be).
std::string pre_scaling(const FusionGraph& fg, const std::string& v, float& c, int64_t& op,
                        std::vector<size_t>& chain) {
  auto it = fg.producer.find(v);
  if (it == fg.producer.end() || fg.removed[it->second] || fg.only_reader(v) == SIZE_MAX) return v;
  const ir::Node& n = fg.graph.nodes[it->second];
  if (!default_domain(n) || n.inputs.size() != 2 || n.outputs.size() != 1) return v;
  std::string x;
  if (n.op_type == "Div") {
    c = fg.scalar(n.inputs[1]);
    x = n.inputs[0];
    op = 2;
  } else if (n.op_type == "Mul") {
    const bool first_const = fg.graph.initializer(n.inputs[0]) != nullptr;
    c = fg.scalar(n.inputs[first_const ? 0 : 1]);
    x = n.inputs[first_const ? 1 : 0];
    op = 1;
  } else {
    return v;
  }
  if (std::isnan(c) || std::isinf(c) || c == 0.0f || fg.graph.initializer(x)) {
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
void fold_quantizers_into_split(FusionGraph& fg, ir::Node& f, const std::array<std::string, 3>& src,
                                const std::array<float, 3>& scale, const std::array<float, 3>& pre,
                                const std::array<int64_t, 3>& pre_op, const ir::Node& ql) {
  std::string x;
  std::array<int64_t, 3> part{};
  for (size_t o = 0; o < 3; ++o) {
    auto it = fg.producer.find(src[o]);
    if (it == fg.producer.end() || fg.removed[it->second]) return;
    const ir::Node& gth = fg.graph.nodes[it->second];
    if (gth.op_type != "Gather" || !default_domain(gth) || gth.inputs.size() != 2 ||
        gth.attr_int("axis", 0) != 0 || fg.only_reader(src[o]) == SIZE_MAX)
      return;
    const Tensor* idx = fg.graph.initializer(gth.inputs[1]);
    if (!idx || idx->numel() != 1 || idx->rank() != 0) return;
    part[o] = static_cast<int64_t>(idx->at_double(0));
    if (part[o] < 0) part[o] += 3;
    if (part[o] < 0 || part[o] >= 3 || (o > 0 && gth.inputs[0] != x)) return;
    x = gth.inputs[0];
  }
  if (part[0] == part[1] || part[1] == part[2] || part[0] == part[2]) return;
  auto pr = fg.producer.find(x);
  auto rd = fg.readers.find(x);
  if (pr == fg.producer.end() || fg.removed[pr->second] || rd == fg.readers.end() ||
      rd->second.size() != 3 || fg.graph_outputs.count(x))
    return;
  ir::Node& g = fg.graph.nodes[pr->second];
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
void fold_output_quantizer(FusionGraph& fg, ir::Node& f) {
  if (!switch_on("TRTUTILS_CUDA_ATTENTION_QOUT")) return;
  std::string v = f.outputs[0];
  size_t reshape = fg.only_reader(v);
  if (reshape == SIZE_MAX) return;
  const ir::Node& rs = fg.graph.nodes[reshape];
  if (rs.op_type == "Reshape" && default_domain(rs) && !rs.inputs.empty() && rs.inputs[0] == v &&
      rs.outputs.size() == 1)
    v = rs.outputs[0];
  else
    reshape = SIZE_MAX;
  const size_t qi = per_tensor_quantizer_of(fg, v);
  if (qi == SIZE_MAX) return;
  const ir::Node& q = fg.graph.nodes[qi];
  const DataType t = zero_point_0_type(fg, q);
  if (t == DataType::kUndefined) return;
  set_float(f, "y_scale", fg.scalar(q.inputs[1]));
  set_int(f, "y_type", static_cast<int64_t>(t));
  if (reshape != SIZE_MAX) {
    fg.graph.nodes[reshape].outputs[0] = q.outputs[0];
    fg.producer[q.outputs[0]] = reshape;
  } else {
    f.outputs = {q.outputs[0]};
  }
  fg.removed[qi] = true;
}

}  // namespace

// QuantizeLinear(Q), QuantizeLinear(KT) -> QMatMul -> Mul / Div by scalars -> Softmax(last
// axis) -> QuantizeLinear -> QMatMul with QuantizeLinear(V) [-> Transpose], all float8 (or all
// int8) per tensor with zero points 0, each value read only by the next  =>
// com.trtutils.cuda::AttentionQ over the float Q, KT, V (their Transposes / Reshapes absorbed
// as views, a scalar Mul / Div before the Q or K quantizer repeated by the kernel). Head sizes
// must be known and at most kAttentionMaxHead (the kernel's limit).
size_t fuse_attention_q(FusionGraph& fg, size_t i) {
  const ir::Node& m1 = fg.graph.nodes[i];
  const float qk_dq = qmatmul_scales(fg, m1);
  if (std::isnan(qk_dq)) return 0;
  float q_scale = 0, k_scale = 0, v_scale = 0, p_scale = 0;
  int kind = 0, other_kind = 0;
  const size_t ql_q = attention_quantizer(fg, m1.inputs[0], q_scale, kind);
  const size_t ql_k = attention_quantizer(fg, m1.inputs[3], k_scale, other_kind);
  if (ql_q == SIZE_MAX || ql_k == SIZE_MAX || other_kind != kind) return 0;
  std::vector<size_t> chain{ql_q, ql_k, i};
  float scale = 1.0f;
  const size_t r = scores_softmax(fg, m1.outputs[0], scale, chain);
  if (r == SIZE_MAX) return 0;
  const ir::Node& sm = fg.graph.nodes[r];
  const size_t ql_p = fg.only_reader(sm.outputs[0]);
  if (ql_p == SIZE_MAX || fg.graph.nodes[ql_p].outputs.size() != 1) return 0;
  const std::string p8 = fg.graph.nodes[ql_p].outputs[0];
  if (attention_quantizer(fg, p8, p_scale, other_kind) != ql_p || other_kind != kind) return 0;
  chain.push_back(ql_p);
  const size_t m2 = fg.only_reader(p8);
  if (m2 == SIZE_MAX || fg.graph.nodes[m2].inputs.empty() || fg.graph.nodes[m2].inputs[0] != p8)
    return 0;
  const float pv_dq = qmatmul_scales(fg, fg.graph.nodes[m2]);
  if (std::isnan(pv_dq)) return 0;
  const size_t ql_v = attention_quantizer(fg, fg.graph.nodes[m2].inputs[3], v_scale, other_kind);
  if (ql_v == SIZE_MAX || other_kind != kind) return 0;
  // Head sizes: the quantized Q's and V's last axes.
  for (const std::string& t : {m1.inputs[0], fg.graph.nodes[m2].inputs[3]}) {
    const auto sh = fg.shape_of(t);
    if (!sh || sh->empty() || !sh->back().is_static() || sh->back().value < 1 ||
        sh->back().value > k::kAttentionMaxHead)
      return 0;
  }
  chain.push_back(ql_v);
  chain.push_back(m2);
  std::vector<int64_t> vq, vk, vv;
  float unused = 1.0f, q_pre = 1.0f, k_pre = 1.0f;
  int64_t q_pre_op = 0, k_pre_op = 0;
  const std::string q =
      operand_source(fg, pre_scaling(fg, fg.graph.nodes[ql_q].inputs[0], q_pre, q_pre_op, chain),
                     unused, vq, chain, false);
  const std::string kt =
      operand_source(fg, pre_scaling(fg, fg.graph.nodes[ql_k].inputs[0], k_pre, k_pre_op, chain),
                     unused, vk, chain, false);
  const std::string v =
      operand_source(fg, fg.graph.nodes[ql_v].inputs[0], unused, vv, chain, false);
  ir::Node f =
      attention_node(fg, "AttentionQ", m1, fg.graph.nodes[m2], {q, kt, v}, {vq, vk, vv}, chain);
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
  fold_quantizers_into_split(fg, f, {q, kt, v}, {q_scale, k_scale, v_scale}, {q_pre, k_pre, 1.0f},
                             {q_pre_op, k_pre_op, 0}, fg.graph.nodes[ql_q]);
  fold_output_quantizer(fg, f);
  return fg.place(std::move(f), chain);
}

}  // namespace trtutils::cuda::fusion
