// Gemm and MatMul through cuBLASLt. MatMul folds a batched A times a shared 2-D B into one
// product (M = batch * m), runs broadcast batches as one strided-batched call when each operand
// is either whole or fully shared, and otherwise loops over the batch. Gemm's C is a bias
// epilogue when it is a row vector with beta = 1, else broadcast into the output first.
#include <algorithm>

#include "backends/cuda/cuda_ops.h"
#include "ops/op_registry.h"

namespace trtutils::cuda {

namespace {

size_t esize(DataType t) {
  return static_cast<size_t>(dtype_bits(t) / 8);
}

void lt_gemm(RunContext& ctx, LtMatmul& lt, const MatmulProblem& p, const void* a, const void* b,
             void* y) {
  TRT_CHECK(lt.run(ctx, p, a, b, y), ErrorCode::kNotSupported,
            "{}: cuBLASLt has no algorithm for this {} product ({}x{}x{}, batch {})",
            ctx.node->describe(), dtype_name(p.a_t), p.m, p.n, p.k, p.batch);
}

class MatMulOp : public GpuOp {
 public:
  std::string kernel() const override { return "cuBLASLt"; }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& a = *in.at(0);
    Value& b = *in.at(1);
    TRT_CHECK_ARG(a.dtype == b.dtype, "{}: A ({}) and B ({}) must have the same dtype",
                  node.describe(), dtype_name(a.dtype), dtype_name(b.dtype));
    require_float(node, a.dtype, "input A");
    const Shape ys = matmul_shape(node, a.shape, b.shape);
    const void* pa = ctx.dev(a);
    const void* pb = ctx.dev(b);
    void* py = ctx.make(*out.at(0), a.dtype, ys);
    matmul(ctx, lt_, a.dtype, a.shape, b.shape, pa, pb, py);
  }

 private:
  LtMatmul lt_;
};

class GemmOp : public GpuOp {
 public:
  std::string kernel() const override { return "cuBLASLt"; }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& a = *in.at(0);
    Value& b = *in.at(1);
    Value* c = in.size() > 2 ? in[2] : nullptr;
    const DataType dt = a.dtype;
    require_float(node, dt, "input A");
    TRT_CHECK_ARG(b.dtype == dt && (!c || c->dtype == dt),
                  "{}: A, B and C must have the same dtype", node.describe());
    TRT_CHECK_ARG(a.shape.size() == 2 && b.shape.size() == 2, "{}: A {} and B {} must be 2-D",
                  node.describe(), shape_str(a.shape), shape_str(b.shape));
    const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
    const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
    const int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
    const int64_t n = tb ? b.shape[0] : b.shape[1];
    TRT_CHECK_ARG((tb ? b.shape[1] : b.shape[0]) == k, "{}: inner dimensions differ",
                  node.describe());
    const void* pa = ctx.dev(a);
    const void* pb = ctx.dev(b);
    Value& y = *out.at(0);
    void* py = ctx.make(y, dt, {m, n});
    if (m * n == 0) return;
    MatmulProblem p;
    p.a_t = p.b_t = p.d_t = dt;
    p.m = m;
    p.n = n;
    p.k = k;
    p.trans_a = ta;
    p.trans_b = tb;
    const void* bias = nullptr;
    float accumulate = 0.0f;
    if (c && beta != 0.0f) {
      const Shape& cs = c->shape;
      TRT_CHECK_ARG(cs.size() <= 2, "{}: C {} must have rank <= 2", node.describe(), shape_str(cs));
      const int64_t cn = cs.empty() ? 1 : cs.back(), cm = cs.size() == 2 ? cs[0] : 1;
      TRT_CHECK_ARG((cm == 1 || cm == m) && (cn == 1 || cn == n),
                    "{}: C {} cannot be broadcast to the output [{}, {}]", node.describe(),
                    shape_str(cs), m, n);
      if (beta == 1.0f && cm == 1 && cn == n && k > 0) {
        bias = ctx.dev(*c);
        p.epilogue = MatmulProblem::Epilogue::kBias;
      } else {
        // D = beta * C (broadcast), then D = alpha * A B + D.
        const void* pc = ctx.dev(*c);
        const Shape ys{m, n};
        const Shape c2{cm, cn};
        const k::Broadcast bc = make_broadcast(node, ys, {&c2});
        ctx.check(k::strided_copy(esize(dt), pc, py, bc, 0, m * n, ctx.stream), "Gemm C");
        if (beta != 1.0f)
          ctx.check(k::unary(k::Unary::kScale, dt, py, py, m * n, beta, 0.0f, ctx.stream),
                    "Gemm beta");
        accumulate = 1.0f;
      }
    }
    if (k == 0) {
      if (accumulate == 0.0f) TRT_CUDA_CHECK(cudaMemsetAsync(py, 0, y.nbytes(), ctx.stream));
      return;
    }
    TRT_CHECK(lt_.run(ctx, p, pa, pb, py, alpha, accumulate, bias), ErrorCode::kNotSupported,
              "{}: cuBLASLt has no algorithm for this {} product ({}x{}x{})", node.describe(),
              dtype_name(dt), m, n, k);
  }

 private:
  LtMatmul lt_;
};

// com.trtutils.cuda::MatMulBias: Y = A x B + bias (cuBLASLt's bias epilogue, one product with
// M = all of A's rows), then the exact GELU in one pass when gelu = 1. trans_b = 1: B is [N, K]
// (a Gemm with transB). Two axis swaps the fusion absorbed (rank-3 Transposes with perm
// [1, 0, 2] around the product, fusion/matmul_bias.cpp):
//   a_swap01 = 1: in 0 is X [R1, R0, K] and A = Transpose(X) [R0, R1, K]; Y is [R0, R1, N];
//   y_grid = [R0, R1] (one may be -1): A is [R0 * R1, K] and Y = Transpose(A x B + bias viewed
//     [R0, R1, N]) = [R1, R0, N].
// Either way the rows form an R0 x R1 grid that A and Y walk in different orders, which one
// strided-batched cuBLASLt call covers (the larger grid axis as the rows of each product).
// Optional input 3: a residual added to Y (gelu = 0): cuBLASLt's C with beta = 1 when it has
// Y's shape, else a broadcast Add after the product.
class MatMulBiasOp : public GpuOp {
 public:
  explicit MatMulBiasOp(const ir::Node& node)
      : gelu_(node.attr_int("gelu", 0) != 0),
        trans_b_(node.attr_int("trans_b", 0) != 0),
        a_swap01_(node.attr_int("a_swap01", 0) != 0),
        y_grid_(node.attr_ints("y_grid")) {}
  std::string kernel() const override {
    std::string k = gelu_ ? "cuBLASLt + bias + GELU (fused MatMul, Add, erf chain)"
                          : "cuBLASLt + bias (fused MatMul, Add)";
    if (a_swap01_ || !y_grid_.empty()) k += " + Transpose (strided batch)";
    if (residual_) k += " + residual Add";
    return k;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& a = *in.at(0);
    Value& b = *in.at(1);
    Value& bias = *in.at(2);
    const DataType dt = a.dtype;
    require_float(node, dt, "input A");
    TRT_CHECK_ARG(b.dtype == dt && bias.dtype == dt,
                  "{}: A, B and the bias must have the same dtype (got {}, {}, {})",
                  node.describe(), dtype_name(dt), dtype_name(b.dtype), dtype_name(bias.dtype));
    TRT_CHECK_ARG(b.shape.size() == 2, "{}: B {} must be 2-D", node.describe(), shape_str(b.shape));
    const int64_t k = trans_b_ ? b.shape[1] : b.shape[0], n = trans_b_ ? b.shape[0] : b.shape[1];
    TRT_CHECK_ARG(bias.numel() == n, "{}: the bias has {} values for {} columns", node.describe(),
                  bias.numel(), n);
    // Logical A rows: an R0 x R1 grid (row r0 * R1 + r1); strides of A's and Y's rows.
    int64_t r0 = 0, r1 = 0, a0 = 0, a1 = 0, d0 = 0, d1 = 0;
    Shape ys;
    if (a_swap01_) {
      TRT_CHECK_ARG(a.shape.size() == 3 && a.shape[2] == k, "{}: X {} must be [R1, R0, {}]",
                    node.describe(), shape_str(a.shape), k);
      r0 = a.shape[1];
      r1 = a.shape[0];
      a0 = k;
      a1 = r0 * k;
      d0 = r1 * n;
      d1 = n;
      ys = {r0, r1, n};
    } else {
      TRT_CHECK_ARG(!a.shape.empty() && a.shape.back() == k,
                    "{}: inner dimensions differ: A {} and B {}", node.describe(),
                    shape_str(a.shape), shape_str(b.shape));
      ys = trans_b_ ? Shape(a.shape.begin(), a.shape.end() - 1)
                    : matmul_shape(node, a.shape, b.shape);
      if (trans_b_) ys.push_back(n);
      const int64_t rows = shape_numel(a.shape) / std::max<int64_t>(1, k);
      r0 = rows;
      r1 = 1;
      if (!y_grid_.empty()) {
        TRT_CHECK_ARG(y_grid_.size() == 2 && (y_grid_[0] > 0 || y_grid_[1] > 0), "{}: bad y_grid",
                      node.describe());
        r0 = y_grid_[0] > 0 ? y_grid_[0] : (y_grid_[1] > 0 ? rows / y_grid_[1] : 0);
        r1 = y_grid_[1] > 0 ? y_grid_[1] : (r0 > 0 ? rows / r0 : 0);
        TRT_CHECK_ARG(r0 * r1 == rows, "{}: {} rows do not make a {} x {} grid", node.describe(),
                      rows, y_grid_[0], y_grid_[1]);
        ys = {r1, r0, n};
      }
      a0 = r1 * k;
      a1 = k;
      d0 = y_grid_.empty() ? r1 * n : n;
      d1 = y_grid_.empty() ? n : r0 * n;
    }
    Value* res = in.size() > 3 ? in[3] : nullptr;
    residual_ = res != nullptr;
    if (res)
      TRT_CHECK_ARG(res->dtype == dt && !gelu_,
                    "{}: the residual must have A's dtype ({}), and no GELU", node.describe(),
                    dtype_name(dt));
    const void* pa = ctx.dev(a);
    const void* pb = ctx.dev(b);
    const void* pbias = ctx.dev(bias);
    if (res)
      TRT_CHECK(ops::broadcast_shapes(ys, res->shape, node) == ys, ErrorCode::kInternal,
                "{}: the residual {} would broadcast the product {}", node.describe(),
                shape_str(res->shape), shape_str(ys));
    const void* pres = res ? ctx.dev(*res) : nullptr;
    const bool res_as_c = res && res->shape == ys && k > 0;
    void* py = ctx.make(*out.at(0), dt, ys);
    const int64_t total = shape_numel(ys);
    if (total == 0) return;
    MatmulProblem p;
    p.a_t = p.b_t = p.d_t = dt;
    p.n = n;
    p.k = k;
    p.trans_b = trans_b_;
    p.epilogue = MatmulProblem::Epilogue::kBias;
    if (!a_swap01_ && y_grid_.empty()) {
      p.m = total / n;      // one product over every row
    } else if (r1 >= r0) {  // rows r1 within a product, one product per r0
      p.m = r1;
      p.batch = r0;
      p.lda = a1;
      p.ldd = d1;
      p.stride_a = a0;
      p.stride_d = d0;
    } else {
      p.m = r0;
      p.batch = r1;
      p.lda = a0;
      p.ldd = d0;
      p.stride_a = a1;
      p.stride_d = d1;
    }
    if (k > 0) {
      TRT_CHECK(lt_.run(ctx, p, pa, pb, py, 1.0f, res_as_c ? 1.0f : 0.0f, pbias, nullptr, nullptr,
                        nullptr, nullptr, res_as_c ? pres : nullptr),
                ErrorCode::kNotSupported,
                "{}: cuBLASLt has no algorithm for this {} product with bias ({}x{}x{}, batch {})",
                node.describe(), dtype_name(dt), p.m, p.n, p.k, p.batch);
    } else {
      const k::Broadcast bc = make_broadcast(node, ys, {&bias.shape});
      ctx.check(k::strided_copy(esize(dt), pbias, py, bc, 0, total, ctx.stream), "bias");
    }
    if (res && !res_as_c) {
      const k::Broadcast bc = make_broadcast(node, ys, {&ys, &res->shape});
      ctx.check(k::binary(k::Binary::kAdd, dt, py, pres, py, bc, total, ctx.stream), "residual");
    }
    if (gelu_)
      ctx.check(k::unary(k::Unary::kGelu, dt, py, py, total, 0.0f, 0.0f, ctx.stream), "GELU");
  }

 private:
  bool gelu_, trans_b_, a_swap01_;
  bool residual_ = false;
  std::vector<int64_t> y_grid_;
  LtMatmul lt_;
};

// com.trtutils.cuda::Gelu: the exporters' x * 0.5 * (1 + erf(x / sqrt 2)) in one pass.
class GeluOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    Value& x = *in.at(0);
    require_float(*ctx.node, x.dtype, "input X");
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, x.shape);
    ctx.check(k::unary(k::Unary::kGelu, x.dtype, px, py, x.numel(), 0.0f, 0.0f, ctx.stream),
              "GELU");
  }
};

}  // namespace

Shape matmul_shape(const ir::Node& node, const Shape& a, const Shape& b) {
  TRT_CHECK_ARG(!a.empty() && !b.empty(), "{}: operands must have rank >= 1", node.describe());
  Shape as = a, bs = b;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  TRT_CHECK_ARG(as.back() == bs[bs.size() - 2], "{}: inner dimensions differ: A {} and B {}",
                node.describe(), shape_str(a), shape_str(b));
  Shape ys =
      ops::broadcast_shapes(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2), node);
  if (a.size() > 1) ys.push_back(as[as.size() - 2]);
  if (b.size() > 1) ys.push_back(bs.back());
  return ys;
}

void matmul(RunContext& ctx, LtMatmul& lt, DataType dt, const Shape& a_shape, const Shape& b_shape,
            const void* pa, const void* pb, void* py) {
  const ir::Node& node = *ctx.node;
  Shape as = a_shape, bs = b_shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const Shape batch = ops::broadcast_shapes(ab, bb, node);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const int64_t nb = shape_numel(batch);
  if (nb * m * n == 0) return;
  const size_t e = esize(dt);
  if (k == 0) {
    TRT_CUDA_CHECK(cudaMemsetAsync(py, 0, static_cast<size_t>(nb * m * n) * e, ctx.stream));
    return;
  }
  MatmulProblem p;
  p.a_t = p.b_t = p.d_t = dt;
  p.n = n;
  p.k = k;
  const int64_t na = shape_numel(ab), nbb = shape_numel(bb);
  if (nbb == 1) {  // B shared by every batch entry: one product with M = batch * m
    TRT_INTERNAL_CHECK(na == nb);
    p.m = nb * m;
    lt_gemm(ctx, lt, p, pa, pb, py);
    return;
  }
  p.m = m;
  p.batch = nb;
  p.stride_d = m * n;
  if ((na == nb || na == 1) && (nbb == nb || nbb == 1)) {
    p.stride_a = na == 1 ? 0 : m * k;
    p.stride_b = nbb == 1 ? 0 : k * n;
    lt_gemm(ctx, lt, p, pa, pb, py);
    return;
  }
  // Partial broadcasts ([B, 1, ...] x [1, H, ...]): one product per batch entry.
  p.batch = 1;
  p.stride_d = 0;
  const size_t r = batch.size();
  Shape ap(r - ab.size(), 1), bp(r - bb.size(), 1);
  ap.insert(ap.end(), ab.begin(), ab.end());
  bp.insert(bp.end(), bb.begin(), bb.end());
  const auto ast = strides_of(ap), bst = strides_of(bp);
  for (int64_t i = 0; i < nb; ++i) {
    int64_t rem = i, ao = 0, bo = 0;
    for (size_t d = r; d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      if (ap[d] != 1) ao += idx * ast[d];
      if (bp[d] != 1) bo += idx * bst[d];
    }
    lt_gemm(ctx, lt, p, static_cast<const uint8_t*>(pa) + ao * m * k * e,
            static_cast<const uint8_t*>(pb) + bo * k * n * e,
            static_cast<uint8_t*>(py) + i * m * n * e);
  }
}

void register_gemm_ops(OpTable& t) {
  t["MatMul"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<MatMulOp>();
  };
  t["Gemm"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> { return std::make_unique<GemmOp>(); };
  t[std::string(kGpuDomain) + "::MatMulBias"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<MatMulBiasOp>(b.node);
  };
  t[std::string(kGpuDomain) + "::Gelu"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<GeluOp>();
  };
}

}  // namespace trtutils::cuda
