// com.trtutils.cuda::Attention (made by fuse_for_gpu from MatMul -> scale -> Softmax -> MatMul):
//   Y = perm_o( softmax(scale * Q x KT) x V )  with  Q = view_q(in 0), KT = view_k(in 1),
//   V = view_v(in 2).
// The views are the Transposes and Reshapes the fusion absorbed, applied from the input on
// (ints: {0, rank, perm...} for a Transpose, {1 + allowzero, rank, shape...} for a Reshape;
// empty: none); they become strides, and a Reshape that strides cannot express copies the
// operand once. perm_o is a Transpose of the output (empty: none). float16 /
// bfloat16 operands whose batch axes collapse to one stride (or broadcast from one entry) run the
// fused tensor-core kernel (attention_kernels.cu); anything else (float32, head sizes over
// kAttentionMaxHead, partial batch broadcasts) runs the unfused sequence: the operands copied
// dense, cuBLASLt for both products, the softmax kernel in between.
#include "backends/cuda/cuda_ops.h"
#include "ops/op_registry.h"
#include "ops/tensor_shapes.h"

namespace trtutils::cuda {

namespace {

// A tensor viewed through a permutation of its axes: logical dims and element strides.
struct View {
  Shape dims;
  std::vector<int64_t> strides;
};

View permuted(const ir::Node& node, const Shape& src, const std::vector<int64_t>& perm,
              const char* what) {
  View v;
  const auto st = strides_of(src);
  if (perm.empty()) {
    v.dims = src;
    v.strides = st;
    return v;
  }
  TRT_CHECK_ARG(perm.size() == src.size(), "{}: {} has rank {} but its permutation has {} axes",
                node.describe(), what, src.size(), perm.size());
  for (int64_t p : perm) {
    TRT_CHECK_ARG(p >= 0 && p < static_cast<int64_t>(src.size()), "{}: bad permutation of {}",
                  node.describe(), what);
    v.dims.push_back(src[static_cast<size_t>(p)]);
    v.strides.push_back(st[static_cast<size_t>(p)]);
  }
  return v;
}

// Strides for `to` viewing the same memory as v (a Reshape without a copy), or false.
bool reshape_strides(const View& v, const Shape& to, std::vector<int64_t>& st) {
  st.assign(to.size(), 1);
  if (shape_numel(v.dims) == 0) {
    st = strides_of(to);
    return true;
  }
  // Walk both shapes from the innermost axis, matching runs of source axes that are
  // contiguous with each other (one chunk) against runs of target axes of the same size.
  int64_t vd = static_cast<int64_t>(to.size()) - 1;
  int64_t chunk_stride = v.dims.empty() ? 1 : v.strides.back();
  int64_t src_n = 1, dst_n = 1;
  for (int64_t d = static_cast<int64_t>(v.dims.size()) - 1; d >= 0; --d) {
    src_n *= v.dims[static_cast<size_t>(d)];
    const bool chunk_end =
        d == 0 || (v.dims[static_cast<size_t>(d - 1)] != 1 &&
                   v.strides[static_cast<size_t>(d - 1)] != src_n * chunk_stride);
    if (!chunk_end) continue;
    while (vd >= 0 && (dst_n < src_n || to[static_cast<size_t>(vd)] == 1)) {
      st[static_cast<size_t>(vd)] = dst_n * chunk_stride;
      dst_n *= to[static_cast<size_t>(vd)];
      --vd;
    }
    if (dst_n != src_n) return false;
    if (d > 0) {
      chunk_stride = v.strides[static_cast<size_t>(d - 1)];
      src_n = dst_n = 1;
    }
  }
  return vd == -1;
}

// An operand: its device pointer (a dense copy when a Reshape needed one) and its view.
struct Operand {
  const void* ptr = nullptr;
  std::shared_ptr<void> copy;
  View view;
};

Operand apply_view(RunContext& ctx, const void* src, size_t esz, const Shape& shape,
                   const std::vector<int64_t>& ops, const char* what) {
  const ir::Node& node = *ctx.node;
  Operand o;
  o.ptr = src;
  o.view = View{shape, strides_of(shape)};
  for (size_t i = 0; i < ops.size();) {
    TRT_CHECK_ARG(i + 1 < ops.size() && ops[i + 1] >= 0 &&
                      i + 2 + static_cast<size_t>(ops[i + 1]) <= ops.size(),
                  "{}: malformed view of {}", node.describe(), what);
    const std::vector<int64_t> vals(ops.begin() + static_cast<ptrdiff_t>(i + 2),
                                    ops.begin() + static_cast<ptrdiff_t>(i + 2 + ops[i + 1]));
    const int64_t kind = ops[i];
    i += 2 + static_cast<size_t>(ops[i + 1]);
    if (kind == 0) {
      const View p = permuted(node, o.view.dims, vals, what);
      std::vector<int64_t> st;
      for (int64_t a : vals) st.push_back(o.view.strides[static_cast<size_t>(a)]);
      o.view = View{p.dims, st};
      continue;
    }
    const Shape to = ir::sym_shape_to_static(
        ops::reshape_output(ir::sym_shape_from_static(o.view.dims), vals, kind == 2, node));
    std::vector<int64_t> st;
    if (!reshape_strides(o.view, to, st)) {  // copy the view dense, then reshape that
      std::vector<std::pair<int64_t, int64_t>> dims;
      for (size_t d = 0; d < o.view.dims.size(); ++d)
        dims.push_back({o.view.dims[d], o.view.strides[d]});
      require_indexable(node, shape_numel(to));
      auto buf = ctx.scratch(static_cast<size_t>(shape_numel(to)) * esz);
      copy_strided(ctx, esz, o.ptr, buf.get(), dims, 0);
      o.copy = std::move(buf);
      o.ptr = o.copy.get();
      st = strides_of(to);
    }
    o.view = View{to, st};
  }
  return o;
}

// The batch axes (all but the last two) of v against the broadcast batch `batch`: one stride
// for all of them (0 when v has one batch entry), or -1 when they do not collapse.
int64_t batch_stride(const View& v, const Shape& batch) {
  const size_t r = v.dims.size() - 2;
  int64_t n = 1;
  for (size_t i = 0; i < r; ++i) n *= v.dims[i];
  if (n == 1) return 0;
  // Equal batch axes (after left-padding with 1s), collapsing into one stride.
  if (batch.size() < r) return -1;
  const size_t off = batch.size() - r;
  for (size_t i = 0; i < off; ++i)
    if (batch[i] != 1) return -1;
  int64_t stride = -1;
  for (size_t i = r; i-- > 0;) {
    if (v.dims[i] != batch[off + i]) return -1;
    if (v.dims[i] == 1) continue;
    if (stride < 0) {
      stride = v.strides[i];
      n = v.dims[i];
    } else if (v.strides[i] != stride * n) {
      return -1;
    } else {
      n *= v.dims[i];
    }
  }
  return stride;
}

// Copies the view (batch axes broadcast to `batch`) into fresh dense memory.
std::shared_ptr<void> dense_copy(RunContext& ctx, const void* src, size_t esz, const View& v,
                                 const Shape& batch) {
  const size_t r = v.dims.size() - 2;
  std::vector<std::pair<int64_t, int64_t>> dims;  // (size, source stride), outer first
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t vi = static_cast<int64_t>(i) - static_cast<int64_t>(batch.size() - r);
    const bool has = vi >= 0 && v.dims[static_cast<size_t>(vi)] != 1;
    dims.push_back({batch[i], has ? v.strides[static_cast<size_t>(vi)] : 0});
  }
  dims.push_back({v.dims[r], v.strides[r]});
  dims.push_back({v.dims[r + 1], v.strides[r + 1]});
  int64_t n = 1;
  for (const auto& d : dims) n *= d.first;
  require_indexable(*ctx.node, n);
  auto buf = ctx.scratch(static_cast<size_t>(n) * esz);
  copy_strided(ctx, esz, src, buf.get(), dims, 0);
  return buf;
}

// Q, K and V's common float dtype (Error naming the node otherwise).
DataType operand_dtype(const ir::Node& node, const std::vector<Value*>& in) {
  const DataType dt = in.at(0)->dtype;
  require_float(node, dt, "Q");
  TRT_CHECK_ARG(in.at(1)->dtype == dt && in.at(2)->dtype == dt,
                "{}: Q ({}), K ({}) and V ({}) differ in dtype", node.describe(), dtype_name(dt),
                dtype_name(in[1]->dtype), dtype_name(in[2]->dtype));
  return dt;
}

// The operands of an attention node as views, the broadcast batch and the output's shape and
// strides (O [batch..., sq, dv], written through perm_o when given).
struct AttentionPlan {
  Operand q, kt, v;
  Shape batch, o_shape, y_shape;
  std::vector<int64_t> o_strides;
  int64_t sq = 0, sk = 0, d = 0, dv = 0, nb = 0;
};

AttentionPlan plan_attention(RunContext& ctx, const std::vector<Value*>& in, size_t esz,
                             const std::vector<int64_t>& view_q, const std::vector<int64_t>& view_k,
                             const std::vector<int64_t>& view_v,
                             const std::vector<int64_t>& perm_o) {
  const ir::Node& node = *ctx.node;
  Value& qv = *in.at(0);
  Value& kv = *in.at(1);
  Value& vv = *in.at(2);
  AttentionPlan pl;
  pl.q = apply_view(ctx, ctx.dev(qv), esz, qv.shape, view_q, "Q");
  pl.kt = apply_view(ctx, ctx.dev(kv), esz, kv.shape, view_k, "K^T");
  pl.v = apply_view(ctx, ctx.dev(vv), esz, vv.shape, view_v, "V");
  const View& q = pl.q.view;
  const View& kt = pl.kt.view;
  const View& v = pl.v.view;
  TRT_CHECK_ARG(q.dims.size() >= 2 && kt.dims.size() >= 2 && v.dims.size() >= 2,
                "{}: Q, K^T and V must have rank >= 2", node.describe());
  const size_t rq = q.dims.size(), rk = kt.dims.size(), rv = v.dims.size();
  pl.sq = q.dims[rq - 2];
  pl.d = q.dims[rq - 1];
  pl.sk = kt.dims[rk - 1];
  pl.dv = v.dims[rv - 1];
  TRT_CHECK_ARG(kt.dims[rk - 2] == pl.d, "{}: Q {} and K^T {} differ in the head size",
                node.describe(), shape_str(q.dims), shape_str(kt.dims));
  TRT_CHECK_ARG(v.dims[rv - 2] == pl.sk, "{}: the scores {}x{} and V {} differ in the keys",
                node.describe(), pl.sq, pl.sk, shape_str(v.dims));
  const Shape bq(q.dims.begin(), q.dims.end() - 2), bk(kt.dims.begin(), kt.dims.end() - 2),
      bv(v.dims.begin(), v.dims.end() - 2);
  pl.batch = ops::broadcast_shapes(ops::broadcast_shapes(bq, bk, node), bv, node);
  pl.nb = shape_numel(pl.batch);
  pl.o_shape = pl.batch;
  pl.o_shape.push_back(pl.sq);
  pl.o_shape.push_back(pl.dv);
  pl.y_shape = pl.o_shape;
  pl.o_strides = strides_of(pl.o_shape);
  if (!perm_o.empty()) {
    TRT_CHECK_ARG(perm_o.size() == pl.o_shape.size(),
                  "{}: the output permutation has {} axes, O {}", node.describe(), perm_o.size(),
                  shape_str(pl.o_shape));
    pl.y_shape.clear();
    for (int64_t p : perm_o) pl.y_shape.push_back(pl.o_shape.at(static_cast<size_t>(p)));
    const auto ys = strides_of(pl.y_shape);
    for (size_t i = 0; i < perm_o.size(); ++i) pl.o_strides[static_cast<size_t>(perm_o[i])] = ys[i];
  }
  return pl;
}

// The kernels' descriptor of a plan (output at y), or false when a batch does not collapse to
// one stride (dense_copy the operands first).
bool attention_desc(const AttentionPlan& pl, void* y, k::AttentionDesc& a) {
  const View& q = pl.q.view;
  const View& kt = pl.kt.view;
  const View& v = pl.v.view;
  const View o{pl.o_shape, pl.o_strides};
  const int64_t sbq = batch_stride(q, pl.batch), sbk = batch_stride(kt, pl.batch),
                sbv = batch_stride(v, pl.batch), sbo = batch_stride(o, pl.batch);
  if (sbq < 0 || sbk < 0 || sbv < 0 || sbo < 0 || (pl.nb > 1 && sbo == 0)) return false;
  const size_t rq = q.dims.size(), rk = kt.dims.size(), rv = v.dims.size(), ro = o.dims.size();
  a.batch = pl.nb;
  a.sq = pl.sq;
  a.sk = pl.sk;
  a.d = pl.d;
  a.dv = pl.dv;
  a.q = pl.q.ptr;
  a.k = pl.kt.ptr;
  a.v = pl.v.ptr;
  a.o = y;
  const int64_t qs[3] = {sbq, q.strides[rq - 2], q.strides[rq - 1]};
  // K [sk, d] rows: K^T's column stride is K's row stride.
  const int64_t ks[3] = {sbk, kt.strides[rk - 1], kt.strides[rk - 2]};
  const int64_t vs[3] = {sbv, v.strides[rv - 2], v.strides[rv - 1]};
  const int64_t os[3] = {sbo, o.strides[ro - 2], o.strides[ro - 1]};
  for (int i = 0; i < 3; ++i) {
    a.q_st[i] = qs[i];
    a.k_st[i] = ks[i];
    a.v_st[i] = vs[i];
    a.o_st[i] = os[i];
  }
  return true;
}

class AttentionOp : public GpuOp {
 public:
  explicit AttentionOp(const ir::Node& node)
      : scale_(node.attr_float("scale", 1.0f)),
        view_q_(node.attr_ints("view_q")),
        view_k_(node.attr_ints("view_k")),
        view_v_(node.attr_ints("view_v")),
        perm_o_(node.attr_ints("perm_o")) {}
  std::string kernel() const override {
    return fused_ ? "fused attention (tensor cores, online softmax)"
                  : "attention: cuBLASLt + softmax (unfused)";
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    const DataType dt = operand_dtype(node, in);
    const size_t esz = static_cast<size_t>(dtype_bits(dt) / 8);
    const AttentionPlan pl = plan_attention(ctx, in, esz, view_q_, view_k_, view_v_, perm_o_);
    void* py = ctx.make(*out.at(0), dt, pl.y_shape);
    if (pl.nb * pl.sq * pl.dv == 0) return;
    fused_ = false;
    k::AttentionDesc a;
    if (pl.sk > 0 && k::attention_supported(dt, pl.d, pl.dv) && attention_desc(pl, py, a)) {
      a.scale = scale_;
      const cudaError_t e = k::attention(dt, a, ctx.stream);
      if (e == cudaSuccess) {
        fused_ = true;
        return;
      }
      if (e != cudaErrorNotSupported) ctx.check(e, "attention");
      (void)cudaGetLastError();
    }
    unfused(ctx, dt, pl, py);
  }

 private:
  void unfused(RunContext& ctx, DataType dt, const AttentionPlan& pl, void* py) {
    const size_t esz = static_cast<size_t>(dtype_bits(dt) / 8);
    const int64_t nb = pl.nb, sq = pl.sq, sk = pl.sk, d = pl.d, dv = pl.dv;
    const auto qd = dense_copy(ctx, pl.q.ptr, esz, pl.q.view, pl.batch);
    const auto kd = dense_copy(ctx, pl.kt.ptr, esz, pl.kt.view, pl.batch);
    const auto vd = dense_copy(ctx, pl.v.ptr, esz, pl.v.view, pl.batch);
    require_indexable(*ctx.node, nb * sq * sk);
    const auto s = ctx.scratch(static_cast<size_t>(nb * sq * sk) * esz);
    matmul(ctx, lt1_, dt, {nb, sq, d}, {nb, d, sk}, qd.get(), kd.get(), s.get());
    if (scale_ != 1.0f)
      ctx.check(
          k::unary(k::Unary::kScale, dt, s.get(), s.get(), nb * sq * sk, scale_, 0.0f, ctx.stream),
          "attention scale");
    ctx.check(k::softmax(dt, k::Soft::kSoftmax, s.get(), s.get(), nb * sq, sk, 1, ctx.stream),
              "attention softmax");
    if (perm_o_.empty()) {
      matmul(ctx, lt2_, dt, {nb, sq, sk}, {nb, sk, dv}, s.get(), vd.get(), py);
      return;
    }
    const auto o = ctx.scratch(static_cast<size_t>(nb * sq * dv) * esz);
    matmul(ctx, lt2_, dt, {nb, sq, sk}, {nb, sk, dv}, s.get(), vd.get(), o.get());
    const View ov = permuted(*ctx.node, pl.o_shape, perm_o_, "O");
    std::vector<std::pair<int64_t, int64_t>> dims;
    for (size_t i = 0; i < ov.dims.size(); ++i) dims.push_back({ov.dims[i], ov.strides[i]});
    copy_strided(ctx, esz, o.get(), py, dims, 0);
  }

  float scale_;
  std::vector<int64_t> view_q_, view_k_, view_v_, perm_o_;
  bool fused_ = false;
  LtMatmul lt1_, lt2_;
};

// com.trtutils.cuda::AttentionQ: the float8 / int8 Q/DQ attention of a quantized graph
// (QuantizeLinear of Q, K^T and V -> QMatMul -> scalings -> Softmax -> QuantizeLinear ->
// QMatMul), with the graph's numerics (k::attention_fp8): attributes q_scale, k_scale, v_scale,
// p_scale (the quantizers'), qk_dq, pv_dq (the two QMatMuls' products of scales), scale, e4m3
// (1, or 0 for E5M2), int8 (1: int8 operands), q_pre / q_pre_op and k_pre / k_pre_op (a scalar
// Mul (1) or Div (2) before the quantizer), views and perm_o as Attention. Output float32, or
// quantized with y_type (int8 / float8 DataType code) and y_scale (the QuantizeLinear after it).
// Operands whose batch axes do not collapse to one stride are copied dense first.
class AttentionQOp : public GpuOp {
 public:
  explicit AttentionQOp(const ir::Node& node)
      : view_q_(node.attr_ints("view_q")),
        view_k_(node.attr_ints("view_k")),
        view_v_(node.attr_ints("view_v")),
        perm_o_(node.attr_ints("perm_o")) {
    d_.a.scale = node.attr_float("scale", 1.0f);
    d_.e4m3 = node.attr_int("e4m3", 1) != 0;
    d_.int8 = node.attr_int("int8", 0) != 0;
    d_.q_scale = node.attr_float("q_scale", 1.0f);
    d_.k_scale = node.attr_float("k_scale", 1.0f);
    d_.v_scale = node.attr_float("v_scale", 1.0f);
    d_.p_scale = node.attr_float("p_scale", 1.0f);
    d_.qk_dq = node.attr_float("qk_dq", 1.0f);
    d_.pv_dq = node.attr_float("pv_dq", 1.0f);
    d_.resident = kernel_switch("TRTUTILS_CUDA_ATTENTION_FP8_RESIDENT", true);
    // Read per engine (the tests run both resident kernels).
    d_.one_pass = kernel_switch("TRTUTILS_CUDA_ATTENTION_FP8_ONE_PASS", true);
    d_.q_pre = node.attr_float("q_pre", 1.0f);
    d_.q_pre_op = static_cast<int>(node.attr_int("q_pre_op", 0));
    d_.k_pre = node.attr_float("k_pre", 1.0f);
    d_.k_pre_op = static_cast<int>(node.attr_int("k_pre_op", 0));
    if (node.attributes.count("y_type")) {  // the QuantizeLinear after it (fusion/attention_q.cpp)
      d_.out_t = static_cast<DataType>(node.attr_int("y_type", 0));
      d_.out_scale = node.attr_float("y_scale", 1.0f);
      TRT_CHECK_ARG(d_.out_t == DataType::kInt8 || d_.out_t == DataType::kFloat8E4M3FN ||
                        d_.out_t == DataType::kFloat8E5M2,
                    "{}: y_type {} is not int8 or float8", node.describe(), dtype_name(d_.out_t));
    }
    prequantized_ = node.attr_int("prequantized", 0) != 0;
    if (prequantized_) {  // the quantizers (and their pre-scalings) ran in the producer
      d_.q_scale = d_.k_scale = d_.v_scale = 1.0f;
      d_.q_pre_op = d_.k_pre_op = 0;
    }
  }
  std::string kernel() const override {
    return d_.int8 ? "fused int8 attention (tensor cores, exact int8 products)"
                   : "fused float8 attention (tensor cores, exact float8 products)";
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    DataType dt = in.at(0)->dtype;
    if (prequantized_) {
      const DataType want =
          d_.int8 ? DataType::kInt8 : (d_.e4m3 ? DataType::kFloat8E4M3FN : DataType::kFloat8E5M2);
      for (size_t i = 0; i < 3; ++i)
        TRT_CHECK_ARG(in.at(i)->dtype == want, "{}: quantized operand {} is {}, expected {}",
                      node.describe(), i, dtype_name(in[i]->dtype), dtype_name(want));
    } else {
      dt = operand_dtype(node, in);
    }
    const size_t esz = static_cast<size_t>(dtype_bits(dt) / 8);
    AttentionPlan pl = plan_attention(ctx, in, esz, view_q_, view_k_, view_v_, perm_o_);
    void* py = ctx.make(*out.at(0), d_.out_t, pl.y_shape);
    if (pl.nb * pl.sq * pl.dv == 0) return;
    k::AttentionQDesc d = d_;
    if (!attention_desc(pl, py, d.a)) {  // dense operands, then strides that collapse
      for (Operand* o : {&pl.q, &pl.kt, &pl.v}) {
        o->copy = dense_copy(ctx, o->ptr, esz, o->view, pl.batch);
        o->ptr = o->copy.get();
        Shape dims = pl.batch;
        dims.push_back(o->view.dims[o->view.dims.size() - 2]);
        dims.push_back(o->view.dims.back());
        o->view = View{dims, strides_of(dims)};
      }
      TRT_CHECK(attention_desc(pl, py, d.a), ErrorCode::kInternal,
                "{}: the attention's output strides do not collapse", node.describe());
    }
    d.a.scale = d_.a.scale;
    const cudaError_t e = k::attention_fp8(dt, d, ctx.stream);
    TRT_CHECK(e != cudaErrorNotSupported, ErrorCode::kNotSupported,
              "{}: the fused float8 attention does not run head sizes {} / {} (at most {}) on this "
              "device; TRTUTILS_CUDA_ATTENTION=0 runs the layers one by one",
              node.describe(), pl.d, pl.dv, k::kAttentionMaxHead);
    ctx.check(e, "float8 attention");
  }

 private:
  std::vector<int64_t> view_q_, view_k_, view_v_, perm_o_;
  k::AttentionQDesc d_;
  bool prequantized_ = false;
};

}  // namespace

void register_attention_ops(OpTable& t) {
  t[std::string(kGpuDomain) + "::Attention"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<AttentionOp>(b.node);
  };
  t[std::string(kGpuDomain) + "::AttentionQ"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<AttentionQOp>(b.node);
  };
}

}  // namespace trtutils::cuda
