// com.trtutils::PermutedMatMul on the CPU (ops/permuted_matmul.h): float32 operands through one
// oneDNN matmul over strided views of A, B and Y (the Transposes become strides, alpha the
// primitive's output scale); otherwise, and as the reference, the plain nodes in turn.
#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "backends/cpu/nn_kernels.h"
#include "core/check.h"
#include "ops/permuted_matmul.h"

namespace trtutils::cpu::nn {
namespace {

std::vector<int64_t> c_order_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

bool is_permutation(const std::vector<int64_t>& p, size_t rank) {
  if (p.size() != rank) return false;
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < rank; ++i)
    if (sorted[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// Transpose(src, perm) as dims and strides over src's C-order buffer, with leading dims of 1
// up to `rank`; false for a perm that is not one of src's axes.
bool view(const Shape& src, const std::vector<int64_t>& perm, size_t rank,
          std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  if (!perm.empty() && !is_permutation(perm, src.size())) return false;
  const std::vector<int64_t> st = c_order_strides(src);
  const int64_t numel = shape_numel(src);
  dims.assign(rank - src.size(), 1);
  strides.assign(rank - src.size(), std::max<int64_t>(numel, 1));
  for (size_t i = 0; i < src.size(); ++i) {
    const size_t from = perm.empty() ? i : static_cast<size_t>(perm[i]);
    dims.push_back(src[from]);
    strides.push_back(st[from]);
  }
  return true;
}

// The plain nodes in turn: the reference, and the path for what oneDNN does not take.
void run_split(KernelContext& ctx, float alpha) {
  std::unordered_map<std::string, Tensor> values;
  const ir::Node& node = ctx.node;
  auto value = [&](const std::string& name) -> const Tensor* {
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] == name) return &ctx.input(i);
    return &values.at(name);
  };
  for (const ir::Node& step : ops::split_permuted_matmul(node)) {
    std::vector<const Tensor*> in;
    for (const std::string& v : step.inputs) in.push_back(value(v));
    Tensor out = run_node(step, ctx.opset, in, ctx.use_reference).at(0);
    if (step.op_type == "MatMul" && alpha != 1.0f) {
      TRT_CHECK_ARG(out.dtype() == DataType::kFloat32, "{}: alpha needs float32 operands",
                    node.describe());
      float* p = out.data<float>();
      for (int64_t i = 0; i < out.numel(); ++i) p[i] *= alpha;
    }
    values[step.outputs[0]] = std::move(out);
  }
  set_output_from(ctx, 0, values.at(node.outputs.at(0)).dtype(), values.at(node.outputs[0]));
}

}  // namespace

std::optional<StridedMatmul> permuted_matmul_views(const Shape& a, const std::vector<int64_t>& pa,
                                                   const Shape& b, const std::vector<int64_t>& pb,
                                                   const std::vector<int64_t>& py, float alpha) {
  const size_t r = std::max(a.size(), b.size());
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  StridedMatmul p;
  p.alpha = alpha;
  if (!view(a, pa, r, p.a_dims, p.a_strides) || !view(b, pb, r, p.b_dims, p.b_strides))
    return std::nullopt;
  if (p.a_dims[r - 1] != p.b_dims[r - 2]) return std::nullopt;
  Shape z(r);
  for (size_t i = 0; i + 2 < r; ++i) {
    const int64_t da = p.a_dims[i], db = p.b_dims[i];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    z[i] = da == 1 ? db : da;
  }
  z[r - 2] = p.a_dims[r - 2];
  z[r - 1] = p.b_dims[r - 1];
  p.y_dims = z;
  if (py.empty()) {
    p.y_strides = c_order_strides(z);
    return p;
  }
  if (!is_permutation(py, r)) return std::nullopt;
  Shape y(r);
  for (size_t i = 0; i < r; ++i) y[i] = z[static_cast<size_t>(py[i])];
  const std::vector<int64_t> ys = c_order_strides(y);
  p.y_strides.assign(r, 0);
  for (size_t i = 0; i < r; ++i) p.y_strides[static_cast<size_t>(py[i])] = ys[i];
  return p;
}

bool permuted_matmul_native(const ir::Graph& g, const ir::Node& fused) {
  if (fused.inputs.size() != 2) return false;
  const auto a = g.static_shape(fused.inputs[0]), b = g.static_shape(fused.inputs[1]);
  if (!a || !b) return false;
  const auto p = permuted_matmul_views(*a, fused.attr_ints("perm_a"), *b, fused.attr_ints("perm_b"),
                                       fused.attr_ints("perm_y"), fused.attr_float("alpha", 1.0f));
  return p && shape_numel(p->y_dims) > 0 && onednn_strided_matmul_native(*p);
}

void permuted_matmul_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const float alpha = node.attr_float("alpha", 1.0f);
  if (!ctx.use_reference && a.dtype() == DataType::kFloat32 && b.dtype() == DataType::kFloat32) {
    const std::vector<int64_t> py = node.attr_ints("perm_y");
    const auto p = permuted_matmul_views(a.shape(), node.attr_ints("perm_a"), b.shape(),
                                         node.attr_ints("perm_b"), py, alpha);
    if (p) {
      Shape ys = p->y_dims;
      for (size_t i = 0; i < py.size(); ++i) ys[i] = p->y_dims[static_cast<size_t>(py[i])];
      Tensor& y = ctx.make_output(0, DataType::kFloat32, ys);
      if (y.numel() == 0 ||
          onednn_strided_matmul(*p, a.data<float>(), b.data<float>(), y.data<float>()))
        return;
    }
  }
  run_split(ctx, alpha);
}

}  // namespace trtutils::cpu::nn
