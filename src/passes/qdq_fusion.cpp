// Q/DQ fusion: the quantized islands of a Q/DQ model become com.trtutils::QConv / QGemm /
// QMatMul nodes (contract: ops/qlinear_ops.h), as TensorRT fuses them, so that the layer runs
// as one quantized kernel instead of dequantize -> float op -> quantize passes over memory.
//
// Pattern, for a Conv / Gemm / MatMul in the default domain:
//   X   <- DequantizeLinear(x_q, x_scale, x_zp)     per tensor
//   W   <- DequantizeLinear(w_q, w_scale, w_zp)     Conv/Gemm (and MatMul with a 2-D constant
//          w_q): w_q an initializer, per tensor or per output channel, zero zero points;
//          MatMul otherwise: per tensor (QMatMul)
//   [-> Add(constant bias of N values)]             MatMul, Gemm without C, Conv without B
//   [-> Add(residual of the same shape, float or DequantizeLinear(r_q) per tensor)]
//   [-> Relu | Clip | LeakyRelu | Sigmoid | HardSwish | SiLU as Mul(x, Sigmoid(x))]
//   [-> QuantizeLinear(y_scale, y_zp)]              per tensor, saturating
// In a float16 graph (--high_precision_dtype fp16, nvidia-modelopt's default) the same islands
// fuse: float16 scales and bias become float32 copies, and a float Y is cast back to float16
// (a float residual is fused only in float32 graphs).
// Scales and zero points must be initializers; the DequantizeLinear nodes are left in place
// (others may read them) and disappear in dead-code elimination when unused. Every value fused
// away (the op's output, the Add and activation outputs) must have one reader and not be a graph
// output. Also: DequantizeLinear -> MaxPool -> QuantizeLinear with the same scale and zero
// point becomes a MaxPool on the int8/uint8 (or float8) values (max commutes with the monotonic
// dequantization, and the requantization of a dequantized value is exact).
#include <limits>
#include <unordered_map>

#include "core/check.h"
#include "ir/graph_builder.h"
#include "ops/qlinear_ops.h"
#include "ops/quant_params.h"
#include "passes/graph_facts.h"
#include "passes/layout_perms.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

namespace {

using namespace ops::qlinear;

bool quantized_type(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8 || t == DataType::kFloat8E4M3FN ||
         t == DataType::kFloat8E5M2;
}

// The float types of a Q/DQ graph's un-quantized part: float32, or float16
// (--high_precision_dtype fp16, nvidia-modelopt's default).
bool float_hp(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16;
}

// One-element float32 / float16 initializer.
const Tensor* scalar_float(const ir::Graph& g, const std::string& v) {
  const Tensor* t = g.initializer(v);
  return t && float_hp(t->dtype()) && t->numel() == 1 ? t : nullptr;
}

bool all_zero(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.at_double(i) != 0.0) return false;
  return true;
}

// A DequantizeLinear producing `v`, as the fused node reads it.
struct Dq {
  std::string x, scale, zp;  // zp "" when omitted
  DataType dtype = DataType::kUndefined;
  const Tensor* scale_t = nullptr;
  const Tensor* zp_t = nullptr;
  int64_t axis = -1;  // -1: per tensor
};

class Fuser {
 public:
  Fuser(ir::Graph& g, int64_t opset) : g_(g), opset_(opset), removed_(g.nodes.size(), false) {
    count_uses(g_, uses_);
    for (const auto& o : g_.outputs) uses_[o.name] += 1000;  // never fuse away a graph output
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (const auto& in : g_.nodes[i].inputs)
        if (!in.empty()) consumer_[in] = i;
      for (const auto& o : g_.nodes[i].outputs)
        if (!o.empty()) producer_[o] = i;
    }
  }

  size_t run() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (removed_[i] || !is_default_domain(g_.nodes[i])) continue;
      const std::string& op = g_.nodes[i].op_type;
      if (op == "Conv" || op == "Gemm" || op == "MatMul")
        fuse_compute(i);
      else if (op == "MaxPool")
        fuse_max_pool(i);
    }
    if (fused_ == 0) return 0;
    std::vector<ir::Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (auto it = replacement_.find(i); it != replacement_.end())
        for (ir::Node& r : it->second) kept.push_back(std::move(r));
      else if (!removed_[i])
        kept.push_back(std::move(g_.nodes[i]));
    }
    g_.nodes = std::move(kept);
    return fused_;
  }

 private:
  // The node that reads `v` when it is its only reader (and v is no graph output).
  std::optional<size_t> single_reader(const std::string& v) const {
    auto u = uses_.find(v);
    if (u == uses_.end() || u->second != 1) return std::nullopt;
    const size_t i = consumer_.at(v);
    if (removed_[i]) return std::nullopt;
    return i;
  }

  std::optional<Dq> as_dq(const std::string& v) const {
    auto p = producer_.find(v);
    if (p == producer_.end() || removed_[p->second]) return std::nullopt;
    const ir::Node& n = g_.nodes[p->second];
    if (n.op_type != "DequantizeLinear" || !is_default_domain(n) || n.outputs.size() != 1 ||
        !n.has_input(0) || !n.has_input(1))
      return std::nullopt;
    if (opset_ >= 21 && n.attr_int("block_size", 0) != 0) return std::nullopt;
    Dq d;
    d.x = n.inputs[0];
    d.scale = n.inputs[1];
    d.dtype = dtype_of(g_, d.x);
    if (!quantized_type(d.dtype)) return std::nullopt;
    d.scale_t = g_.initializer(d.scale);
    if (!d.scale_t || !float_hp(d.scale_t->dtype())) return std::nullopt;
    if (n.has_input(2)) {
      d.zp = n.inputs[2];
      d.zp_t = g_.initializer(d.zp);
      if (!d.zp_t || d.zp_t->dtype() != d.dtype || d.zp_t->numel() != d.scale_t->numel())
        return std::nullopt;
    }
    if (d.scale_t->numel() == 1 && d.scale_t->rank() <= 1) return d;
    // Per axis: needs the input's rank for the axis.
    if (d.scale_t->rank() != 1) return std::nullopt;
    const auto xs = known_shape(g_, d.x);
    if (!xs) return std::nullopt;
    const int64_t r = static_cast<int64_t>(xs->size());
    int64_t axis = n.attr_int("axis", 1);
    if (axis < -r || axis >= r) return std::nullopt;
    d.axis = axis < 0 ? axis + r : axis;
    return d;
  }

  // A per-tensor DQ of an activation (or constant), its output read by the fused node.
  std::optional<Dq> per_tensor_dq(const std::string& v) const {
    auto d = as_dq(v);
    if (!d || d->axis != -1) return std::nullopt;
    return d;
  }

  // A DQ of constant weights, per tensor or along `axis` with `channels` values, symmetric.
  std::optional<Dq> weights_dq(const std::string& v, int64_t axis, int64_t channels) const {
    auto d = as_dq(v);
    if (!d || !g_.initializer(d->x)) return std::nullopt;
    if (d->axis != -1 && (d->axis != axis || d->scale_t->numel() != channels)) return std::nullopt;
    if (d->zp_t && !all_zero(*d->zp_t)) return std::nullopt;  // asymmetric weights stay unfused
    return d;
  }

  std::optional<Activation> as_activation(const ir::Node& n) const {
    return passes::as_activation(g_, n, opset_);
  }

  // The island's tail after the compute node: fills `f`'s inputs/attributes, `chain` and `out`.
  // bias_channels > 0: an Add of a constant with that many values may be the bias, along the
  // last axis (channel_axis1: along axis 1, a convolution's NCHW output; such a bias is kept as a
  // 1-D float32 copy).
  void match_tail(ir::Node& f, std::vector<size_t>& chain, std::string& out, int64_t bias_channels,
                  bool channel_axis1 = false) {
    const auto out_shape = known_shape(g_, out);
    auto next = single_reader(out);
    auto is_add = [&](size_t i) {
      const ir::Node& n = g_.nodes[i];
      return n.op_type == "Add" && is_default_domain(n) && n.num_inputs() == 2 &&
             n.outputs.size() == 1 && n.inputs[0] != n.inputs[1];
    };
    auto other_input = [&](size_t i) -> const std::string& {
      const ir::Node& n = g_.nodes[i];
      return n.inputs[0] == out ? n.inputs[1] : n.inputs[0];
    };
    // Bias: Add(out, constant [N] / [1, ..., N]) that does not broadcast out (channel_axis1:
    // [M, 1, ..., 1] / [1, M, 1, ..., 1]).
    if (next && bias_channels > 0 && is_add(*next) && out_shape) {
      const Tensor* c = g_.initializer(other_input(*next));
      const int64_t out_rank = static_cast<int64_t>(out_shape->size());
      const int64_t c_rank = c ? static_cast<int64_t>(c->rank()) : 0;
      bool ok = c && float_hp(c->dtype()) && c->numel() == bias_channels && c_rank >= 1 &&
                c_rank <= out_rank;
      if (ok && channel_axis1) {
        const int64_t at = 1 - (out_rank - c_rank);  // out's axis 1, right-aligned in c
        ok = at >= 0 && c->dim(static_cast<size_t>(at)) == bias_channels;
      } else if (ok) {
        ok = c->shape().back() == bias_channels;
      }
      if (ok && !f.has_input(kBias)) {
        f.inputs[kBias] =
            channel_axis1 ? flat_float32_copy(other_input(*next)) : other_input(*next);
        chain.push_back(*next);
        out = g_.nodes[*next].outputs[0];
        next = single_reader(out);
      }
    }
    // Residual: Add(out, R) with R of out's shape.
    if (next && is_add(*next) && out_shape) {
      const std::string& other = other_input(*next);
      const auto rs = known_shape(g_, other);
      const auto os = known_shape(g_, g_.nodes[*next].outputs[0]);
      const auto rdq = per_tensor_dq(other);
      // A float residual only in float32 (the fused ops' R is float32 or quantized).
      if (rs && os && *rs == *out_shape && *os == *out_shape &&
          (rdq || dtype_of(g_, other) == DataType::kFloat32) && !g_.initializer(other)) {
        if (const auto& d = rdq) {
          f.inputs[kResidual] = d->x;
          f.inputs[kRScale] = d->scale;
          f.inputs[kRZeroPoint] = d->zp;
        } else {
          f.inputs[kResidual] = other;
        }
        chain.push_back(*next);
        out = g_.nodes[*next].outputs[0];
        next = single_reader(out);
      }
    }
    if (next) {
      if (auto a = as_activation(g_.nodes[*next]); a && g_.nodes[*next].inputs[0] == out) {
        set_fused_activation(f, a->name, a->params);
        chain.push_back(*next);
        out = g_.nodes[*next].outputs[0];
        next = single_reader(out);
      }
    } else if (auto s = match_silu(g_, out, uses_, consumer_);
               s && !removed_[s->first] && !removed_[s->second]) {
      set_fused_activation(f, "Silu", {});
      chain.push_back(s->first);
      chain.push_back(s->second);
      out = g_.nodes[s->second].outputs[0];
      next = single_reader(out);
    }
    if (next) {
      const ir::Node& q = g_.nodes[*next];
      if (auto qi = as_quantize(q); qi && q.inputs[0] == out) {
        f.inputs[kYScale] = q.inputs[1];
        f.inputs[kYZeroPoint] = qi->zp;
        chain.push_back(*next);
        out = q.outputs[0];
      }
    }
  }

  struct Q {
    std::string zp;  // a zero point initializer (created when the node has none)
    DataType dtype;
  };
  // A per-tensor, saturating QuantizeLinear to int8/uint8/float8 with constant scale/zp.
  std::optional<Q> as_quantize(const ir::Node& q) {
    if (q.op_type != "QuantizeLinear" || !is_default_domain(q) || q.outputs.size() != 1 ||
        !q.has_input(0) || !q.has_input(1) || !scalar_float(g_, q.inputs[1]))
      return std::nullopt;
    if (opset_ >= 21 && q.attr_int("block_size", 0) != 0) return std::nullopt;
    if (q.attr_int("saturate", 1) == 0) return std::nullopt;
    Q r;
    if (q.has_input(2)) {
      const Tensor* z = g_.initializer(q.inputs[2]);
      if (!z || z->numel() != 1 || z->rank() > 1) return std::nullopt;
      r.zp = q.inputs[2];
      r.dtype = z->dtype();
    } else {
      try {
        r.dtype = ops::quantize_output_dtype(q, opset_, DataType::kUndefined);
      } catch (const Error&) {
        return std::nullopt;
      }
    }
    if (!quantized_type(r.dtype)) return std::nullopt;
    // The fused node's contract needs y_zero_point (its dtype is Y's): a zero of that dtype.
    if (r.zp.empty()) r.zp = zero_point(r.dtype);
    return r;
  }

  std::string zero_point(DataType dt) {
    const std::string name = g_.unique_name(fmt::format("qdq_fusion_zero_{}", dtype_name(dt)));
    g_.initializers[name] = Tensor(dt, {});
    return name;
  }

  void fuse_compute(size_t i) {
    const ir::Node& n = g_.nodes[i];
    if (n.outputs.size() != 1 || !n.has_input(0) || !n.has_input(1)) return;
    const DataType hp = dtype_of(g_, n.outputs[0]);
    if (!float_hp(hp)) return;
    const auto dx = per_tensor_dq(n.inputs[0]);
    if (!dx) return;
    ir::Node f;
    f.inputs.assign(kNumInputs, "");
    f.inputs[kX] = dx->x;
    f.inputs[kXScale] = dx->scale;
    f.inputs[kXZeroPoint] = dx->zp;
    int64_t bias_channels = 0;
    std::optional<Dq> dw;
    const Tensor* wq = nullptr;
    if (n.op_type == "Conv") {
      const auto ws = known_shape(g_, n.inputs[1]);
      if (!ws || ws->size() < 3 || !(*ws)[0].is_static()) return;
      dw = weights_dq(n.inputs[1], 0, (*ws)[0].value);
      if (!dw) return;
      if (n.has_input(2) && !float_hp(dtype_of(g_, n.inputs[2]))) return;
      f.op_type = "QConv";
      f.attributes = n.attributes;
      f.inputs[kBias] = n.has_input(2) ? n.inputs[2] : "";
      // A bias Add after it (quantize --high_precision_dtype fp16 writes the bias that way).
      if (!n.has_input(2)) bias_channels = (*ws)[0].value;
    } else if (n.op_type == "Gemm") {
      if (n.attr_int("transA", 0) != 0 || n.attr_float("alpha", 1.0f) != 1.0f) return;
      const bool tb = n.attr_int("transB", 0) != 0;
      const auto d0 = as_dq(n.inputs[1]);
      if (!d0 || !(wq = g_.initializer(d0->x)) || wq->rank() != 2) return;
      const int64_t nn = tb ? wq->dim(0) : wq->dim(1);
      dw = weights_dq(n.inputs[1], tb ? 0 : 1, nn);
      if (!dw) return;
      if (n.has_input(2)) {
        const Tensor* c = g_.initializer(n.inputs[2]);
        if (n.attr_float("beta", 1.0f) != 1.0f || !c || !float_hp(c->dtype()) || c->numel() != nn ||
            c->shape().back() != nn)
          return;
        f.inputs[kBias] = n.inputs[2];
      } else {
        bias_channels = nn;
      }
      f.op_type = "QGemm";
      if (tb) {
        ir::Attribute a;
        a.name = "transB";
        a.kind = ir::Attribute::Kind::kInt;
        a.i = 1;
        f.attributes[a.name] = a;
      }
    } else {  // MatMul
      const auto d0 = as_dq(n.inputs[1]);
      if (!d0) return;
      wq = g_.initializer(d0->x);
      if (wq && wq->rank() == 2) {
        dw = weights_dq(n.inputs[1], 1, wq->dim(1));
        if (!dw) return;
        f.op_type = "QGemm";
        bias_channels = wq->dim(1);
      } else {
        dw = per_tensor_dq(n.inputs[1]);
        if (!dw) return;
        const auto ws = known_shape(g_, n.inputs[1]);
        f.op_type = "QMatMul";
        if (ws && ws->size() >= 2 && ws->back().is_static()) bias_channels = ws->back().value;
      }
    }
    f.inputs[kW] = dw->x;
    f.inputs[kWScale] = dw->scale;
    f.inputs[kWZeroPoint] = dw->zp;

    std::vector<size_t> chain;
    std::string out = n.outputs[0];
    match_tail(f, chain, out, bias_channels, n.op_type == "Conv");

    f.name = n.name.empty() ? g_.unique_name(f.op_type) : n.name;
    f.domain = kDomain;
    f.outputs = {out};
    // The fused ops take float32 scales and bias: float16 ones (a float16 graph) get float32
    // copies; a float Y is float32, cast back to float16 for the rest of such a graph.
    for (size_t k :
         {size_t{kXScale}, size_t{kWScale}, size_t{kBias}, size_t{kYScale}, size_t{kRScale}})
      if (f.has_input(k)) f.inputs[k] = float32_copy(f.inputs[k]);
    std::vector<ir::Node> nodes;
    const bool cast_back = hp == DataType::kFloat16 && !f.has_input(kYScale);
    if (cast_back) {
      const auto shape = known_shape(g_, out);
      const std::string y32 = g_.unique_name(out + "_float32");
      f.outputs = {y32};
      g_.value_info[y32] = ir::ValueInfo{y32, DataType::kFloat32, shape, {}};
      ir::Node c;
      c.name = g_.unique_name(f.name + "_to_float16");
      c.op_type = "Cast";
      c.inputs = {y32};
      c.outputs = {out};
      // (DataType values are ONNX's.)
      c.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat16));
      nodes.push_back(std::move(f));
      nodes.push_back(std::move(c));
    } else {
      nodes.push_back(std::move(f));
    }
    while (!nodes[0].inputs.empty() && nodes[0].inputs.back().empty()) nodes[0].inputs.pop_back();
    // Intermediate values disappear; the fused node sits where the island's last node was (all
    // of its inputs are computed before that point).
    removed_[i] = true;
    for (size_t c : chain) removed_[c] = true;
    if (!chain.empty()) g_.value_info.erase(n.outputs[0]);
    for (size_t k = 0; k + 1 < chain.size(); ++k)
      g_.value_info.erase(g_.nodes[chain[k]].outputs[0]);
    replacement_.emplace(chain.empty() ? i : chain.back(), std::move(nodes));
    ++fused_;
  }

  // A 1-D float32 initializer with v's values (one copy per v).
  std::string flat_float32_copy(const std::string& v) {
    const Tensor* t = g_.initializer(v);
    const std::string name = g_.unique_name(v + "_bias");
    g_.initializers[name] =
        Tensor::from_vector<float>(DataType::kFloat32, {t->numel()}, t->to_float_vector());
    return name;
  }

  // A float32 initializer with v's values (v itself when it is float32; one copy per v).
  std::string float32_copy(const std::string& v) {
    const Tensor* t = g_.initializer(v);
    if (!t || t->dtype() == DataType::kFloat32) return v;
    if (auto it = f32_copies_.find(v); it != f32_copies_.end()) return it->second;
    const std::string name = g_.unique_name(v + "_float32");
    g_.initializers[name] =
        Tensor::from_vector<float>(DataType::kFloat32, t->shape(), t->to_float_vector());
    f32_copies_[v] = name;
    return name;
  }

  void fuse_max_pool(size_t i) {
    const ir::Node& n = g_.nodes[i];
    if (n.outputs.size() != 1 || !n.has_input(0)) return;
    const auto d = per_tensor_dq(n.inputs[0]);
    if (!d || (d->dtype != DataType::kInt8 && d->dtype != DataType::kUInt8 &&
               d->dtype != DataType::kFloat8E4M3FN && d->dtype != DataType::kFloat8E5M2))
      return;
    const auto next = single_reader(n.outputs[0]);
    if (!next) return;
    const ir::Node& q = g_.nodes[*next];
    if (q.op_type != "QuantizeLinear" || !is_default_domain(q) || q.outputs.size() != 1 ||
        q.inputs[0] != n.outputs[0] || !q.has_input(2))
      return;
    const Tensor* qs = scalar_float(g_, q.inputs[1]);
    const Tensor* qz = g_.initializer(q.inputs[2]);
    if (!qs || !qz || qz->numel() != 1 || qz->dtype() != d->dtype) return;
    const double dz = d->zp_t ? d->zp_t->at_double(0) : 0.0;
    if (qs->at_double(0) != d->scale_t->at_double(0) || qz->at_double(0) != dz) return;
    if (opset_ >= 21 && q.attr_int("block_size", 0) != 0) return;
    if (q.attr_int("saturate", 1) != 1) return;  // float8: the requantization saturates
    ir::Node p = n;
    p.inputs = {d->x};
    p.outputs = {q.outputs[0]};
    removed_[i] = true;
    removed_[*next] = true;
    g_.value_info.erase(n.outputs[0]);
    replacement_.emplace(*next, std::vector<ir::Node>{std::move(p)});
    ++fused_;
  }

  ir::Graph& g_;
  int64_t opset_;
  std::unordered_map<std::string, int> uses_;
  std::unordered_map<std::string, size_t> consumer_, producer_;
  std::vector<bool> removed_;
  std::unordered_map<size_t, std::vector<ir::Node>> replacement_;
  std::unordered_map<std::string, std::string> f32_copies_;
  size_t fused_ = 0;
};

bool int8_type(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8;
}
// 8-bit operands of the channels-last QConvs: int8 (the CPU's oneDNN layout and cuBLASLt's)
// and float8 (cuBLASLt; the CPU's float fallback permutes around its float convolution).
bool byte_type(DataType t) {
  return int8_type(t) || t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E5M2;
}

}  // namespace

size_t qdq_channels_last(ir::Graph& g) {
  // value (NCHW) -> the same data as [N, spatial..., C], made by a converted QConv or a Transpose
  std::unordered_map<std::string, std::string> last_of;
  std::vector<ir::Node> nodes;
  nodes.reserve(g.nodes.size());
  size_t converted = 0;
  auto transpose = [&](const std::string& in, const std::string& out,
                       const std::vector<int64_t>& perm) {
    ir::Node t;
    t.name = g.unique_name(out);
    t.op_type = "Transpose";
    t.inputs = {in};
    t.outputs = {out};
    t.attributes["perm"] = ir::attr_ints("perm", perm);
    return t;
  };
  // The channels-last twin of NCHW value `v` (a Transpose appended to `nodes` if needed).
  auto last = [&](const std::string& v, const ir::SymShape& shape, DataType dt) {
    if (auto it = last_of.find(v); it != last_of.end()) return it->second;
    const std::string out = g.unique_name(v + "_nhwc");
    nodes.push_back(transpose(v, out, to_last_perm(shape.size())));
    g.value_info[out] = ir::ValueInfo{out, dt, permuted(shape, to_last_perm(shape.size())), {}};
    last_of[v] = out;
    return out;
  };
  for (ir::Node& n : g.nodes) {
    const bool candidate = n.op_type == "QConv" && n.domain == kDomain && n.outputs.size() == 1 &&
                           n.attr_int("channels_last", 0) == 0 && n.has_input(kX) &&
                           n.has_input(kW);
    std::optional<ir::SymShape> xs, ys, rs;
    DataType xt = DataType::kUndefined, yt = DataType::kUndefined, rt = DataType::kUndefined;
    bool ok = candidate;
    if (ok) {
      xs = known_shape(g, n.inputs[kX]);
      ys = known_shape(g, n.outputs[0]);
      xt = dtype_of(g, n.inputs[kX]);
      yt = dtype_of(g, n.outputs[0]);
      const DataType wt = dtype_of(g, n.inputs[kW]);
      ok = xs && ys && xs->size() >= 3 && xs->size() <= 5 && ys->size() == xs->size() &&
           byte_type(xt) && (int8_type(xt) ? wt == DataType::kInt8 : byte_type(wt)) &&
           (byte_type(yt) || yt == DataType::kFloat32);
      if (ok && n.has_input(kResidual)) {
        rs = known_shape(g, n.inputs[kResidual]);
        rt = dtype_of(g, n.inputs[kResidual]);
        ok = rs && rs->size() == ys->size() && (byte_type(rt) || rt == DataType::kFloat32);
      }
    }
    if (!ok) {
      nodes.push_back(std::move(n));
      continue;
    }
    // X, R from their channels-last twins; Y written channels-last, with a Transpose back to
    // NCHW for readers that need it (dead-code elimination drops it when nobody does).
    n.inputs[kX] = last(n.inputs[kX], *xs, xt);
    if (n.has_input(kResidual)) n.inputs[kResidual] = last(n.inputs[kResidual], *rs, rt);
    const std::string y = n.outputs[0];
    const std::string y_last = g.unique_name(y + "_nhwc");
    n.outputs[0] = y_last;
    ir::Attribute a;
    a.name = "channels_last";
    a.kind = ir::Attribute::Kind::kInt;
    a.i = 1;
    n.attributes[a.name] = a;
    g.value_info[y_last] = ir::ValueInfo{y_last, yt, permuted(*ys, to_last_perm(ys->size())), {}};
    last_of[y] = y_last;
    nodes.push_back(std::move(n));
    nodes.push_back(transpose(y_last, y, to_first_perm(ys->size())));
    ++converted;
  }
  g.nodes = std::move(nodes);
  if (converted) TRT_LOG_VERBOSE("qdq layout: {} QConv node(s) run channels-last", converted);
  return converted;
}

size_t fuse_qdq(ir::Graph& graph, int64_t opset) {
  const size_t n = Fuser(graph, opset).run();
  if (n) TRT_LOG_VERBOSE("qdq fusion: {} island(s) fused", n);
  return n;
}

}  // namespace trtutils::passes
