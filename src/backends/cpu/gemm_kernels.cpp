// Gemm and MatMul on the CPU: plain reference kernels (double accumulation for floats) and
// dispatch to the oneDNN matmul fast path for float32.
#include <algorithm>
#include <vector>

#include "backends/cpu/nn_kernels.h"
#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::cpu::nn {

namespace {

template <typename T>
struct Accum {
  using type = double;
};
template <>
struct Accum<int32_t> {
  using type = int64_t;
};
template <>
struct Accum<int64_t> {
  using type = int64_t;
};
template <>
struct Accum<uint32_t> {
  using type = uint64_t;
};
template <>
struct Accum<uint64_t> {
  using type = uint64_t;
};

// Y[i, j] = alpha * sum_k op(A)[i, k] * op(B)[k, j] + beta * C[i mod cm, j mod cn].
template <typename T>
void gemm_reference(int64_t m, int64_t n, int64_t k, const T* a, bool ta, const T* b, bool tb,
                    double alpha, double beta, const T* c, int64_t cm, int64_t cn, T* y) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < k; ++q) {
        const double av = static_cast<double>(ta ? a[q * m + i] : a[i * k + q]);
        const double bv = static_cast<double>(tb ? b[j * k + q] : b[q * n + j]);
        acc += av * bv;
      }
      double v = alpha * acc;
      if (c) v += beta * static_cast<double>(c[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)]);
      y[i * n + j] = static_cast<T>(v);
    }
  }
}

// Strides (in elements) of a C-order shape, with 0 for broadcast (size-1) dims.
std::vector<int64_t> broadcast_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 0);
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = s[i] == 1 ? 0 : acc;
    acc *= s[i];
  }
  return st;
}

// Batched Y = A x B over shapes of equal rank >= 2 (batch dims already broadcast-compatible).
template <typename T>
void matmul_reference(const T* a, const Shape& as, const T* b, const Shape& bs, T* y,
                      const Shape& ys) {
  using Acc = typename Accum<T>::type;
  const size_t r = ys.size();
  const int64_t m = ys[r - 2], n = ys[r - 1], k = as[r - 1];
  const std::vector<int64_t> ast = broadcast_strides(as), bst = broadcast_strides(bs);
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < r; ++i) batches *= ys[i];
#pragma omp parallel
  {
    std::vector<Acc> acc(static_cast<size_t>(n));
#pragma omp for schedule(static)
    for (int64_t job = 0; job < batches * m; ++job) {
      const int64_t bi = job / m, i = job % m;
      int64_t aoff = 0, boff = 0, rem = bi;
      for (size_t d = r - 2; d-- > 0;) {
        const int64_t idx = rem % ys[d];
        rem /= ys[d];
        aoff += idx * ast[d];
        boff += idx * bst[d];
      }
      std::fill(acc.begin(), acc.end(), Acc(0));
      const T* arow = a + aoff + i * k;
      for (int64_t q = 0; q < k; ++q) {
        const Acc av = static_cast<Acc>(arow[q]);
        const T* brow = b + boff + q * n;
        for (int64_t j = 0; j < n; ++j) acc[j] += av * static_cast<Acc>(brow[j]);
      }
      T* yrow = y + job * n;
      for (int64_t j = 0; j < n; ++j) yrow[j] = static_cast<T>(acc[j]);
    }
  }
}

}  // namespace

void gemm_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& a_in = ctx.input(0);
  const Tensor& b_in = ctx.input(1);
  const Tensor* c_in = ctx.has_input(2) ? ctx.inputs[2] : nullptr;
  const DataType dt = a_in.dtype();
  require_float(node, dt, "input A");
  TRT_CHECK_ARG(b_in.dtype() == dt && (!c_in || c_in->dtype() == dt),
                "{}: A, B and C must have the same dtype", node.describe());
  TRT_CHECK_ARG(a_in.rank() == 2 && b_in.rank() == 2, "{}: A {} and B {} must be 2-D",
                node.describe(), shape_str(a_in.shape()), shape_str(b_in.shape()));
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const int64_t m = ta ? a_in.dim(1) : a_in.dim(0), k = ta ? a_in.dim(0) : a_in.dim(1);
  const int64_t n = tb ? b_in.dim(0) : b_in.dim(1);
  TRT_CHECK_ARG((tb ? b_in.dim(1) : b_in.dim(0)) == k,
                "{}: inner dimensions differ: op(A) is {}x{}, op(B) is {}x{}", node.describe(), m,
                k, tb ? b_in.dim(1) : b_in.dim(0), n);
  int64_t cm = 1, cn = 1;
  if (c_in) {
    const Shape& cs = c_in->shape();
    TRT_CHECK_ARG(cs.size() <= 2, "{}: C {} must have rank <= 2", node.describe(), shape_str(cs));
    cn = cs.empty() ? 1 : cs.back();
    cm = cs.size() == 2 ? cs[0] : 1;
    TRT_CHECK_ARG((cm == 1 || cm == m) && (cn == 1 || cn == n),
                  "{}: C {} cannot be broadcast to the output [{}, {}]", node.describe(),
                  shape_str(cs), m, n);
  }
  if (dt == DataType::kFloat32 && !ctx.use_reference && m * n > 0) {
    Tensor& y = ctx.make_output(0, dt, {m, n});
    if (onednn_gemm(a_in, b_in, c_in, ta, tb, alpha, beta, y)) return;
  }
  const Tensor a = to_compute(a_in, node, "input A");
  const Tensor b = to_compute(b_in, node, "input B");
  const Tensor c = c_in ? to_compute(*c_in, node, "input C") : Tensor();
  Tensor y(a.dtype(), {m, n});
  if (a.dtype() == DataType::kFloat64) {
    gemm_reference<double>(m, n, k, a.data<double>(), ta, b.data<double>(), tb, alpha, beta,
                           c_in ? c.data<double>() : nullptr, cm, cn, y.data<double>());
  } else {
    gemm_reference<float>(m, n, k, a.data<float>(), ta, b.data<float>(), tb, alpha, beta,
                          c_in ? c.data<float>() : nullptr, cm, cn, y.data<float>());
  }
  set_output_from(ctx, 0, dt, y);
}

void matmul_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& a_in = ctx.input(0);
  const Tensor& b_in = ctx.input(1);
  const DataType dt = a_in.dtype();
  TRT_CHECK_ARG(b_in.dtype() == dt, "{}: A ({}) and B ({}) must have the same dtype",
                node.describe(), dtype_name(dt), dtype_name(b_in.dtype()));
  TRT_CHECK_ARG(a_in.rank() >= 1 && b_in.rank() >= 1, "{}: operands must have rank >= 1",
                node.describe());
  // numpy semantics: a 1-D A gets a leading 1, a 1-D B a trailing 1, both removed afterwards.
  Shape as = a_in.shape(), bs = b_in.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  TRT_CHECK_ARG(as.back() == bs[bs.size() - 2], "{}: inner dimensions differ: A {} and B {}",
                node.describe(), shape_str(a_in.shape()), shape_str(b_in.shape()));
  const Shape batch =
      ops::broadcast_shapes(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2), node);
  const size_t r = batch.size() + 2;
  as.insert(as.begin(), r - as.size(), 1);
  bs.insert(bs.begin(), r - bs.size(), 1);
  Shape ys = batch;
  ys.push_back(as[r - 2]);
  ys.push_back(bs[r - 1]);
  Shape out_shape = batch;
  if (a_in.rank() > 1) out_shape.push_back(as[r - 2]);
  if (b_in.rank() > 1) out_shape.push_back(bs[r - 1]);

  if (dt == DataType::kFloat32 && !ctx.use_reference && shape_numel(ys) > 0) {
    Tensor& y = ctx.make_output(0, dt, out_shape);
    if (onednn_matmul(a_in, as, b_in, bs, y, ys)) return;
  }
  if (dt == DataType::kInt32 || dt == DataType::kInt64 || dt == DataType::kUInt32 ||
      dt == DataType::kUInt64) {
    Tensor& y = ctx.make_output(0, dt, out_shape);
    if (dt == DataType::kInt32)
      matmul_reference(a_in.data<int32_t>(), as, b_in.data<int32_t>(), bs, y.data<int32_t>(), ys);
    else if (dt == DataType::kInt64)
      matmul_reference(a_in.data<int64_t>(), as, b_in.data<int64_t>(), bs, y.data<int64_t>(), ys);
    else if (dt == DataType::kUInt32)
      matmul_reference(a_in.data<uint32_t>(), as, b_in.data<uint32_t>(), bs, y.data<uint32_t>(),
                       ys);
    else
      matmul_reference(a_in.data<uint64_t>(), as, b_in.data<uint64_t>(), bs, y.data<uint64_t>(),
                       ys);
    return;
  }
  const Tensor a = to_compute(a_in, node, "input A");
  const Tensor b = to_compute(b_in, node, "input B");
  Tensor y(a.dtype(), out_shape);
  if (a.dtype() == DataType::kFloat64)
    matmul_reference(a.data<double>(), as, b.data<double>(), bs, y.data<double>(), ys);
  else
    matmul_reference(a.data<float>(), as, b.data<float>(), bs, y.data<float>(), ys);
  set_output_from(ctx, 0, dt, y);
}

}  // namespace trtutils::cpu::nn
