// com.trtutils::FusedMatMul on the CPU (made by the matmul_fusion pass, passes.h): float32
// Y = A x W + bias [-> exact GELU] [+ residual] as one oneDNN matmul (bias and post-ops), or for
// a single row by gemv_row; the
// reference runs the unfused graph's steps in its order (MatMul, Add, x * 0.5 * (1 + erf(x /
// sqrt 2)), Add) in float32.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/nn_kernels.h"
#include "core/check.h"

namespace trtutils::cpu::nn {
namespace {

// The unfused steps after the product, on y in place.
void reference_epilogue(Tensor& y, const Tensor& bias, const Tensor* residual, bool gelu) {
  float* p = y.data<float>();
  const float* b = bias.data<float>();
  const int64_t n = bias.numel(), total = y.numel();
  const float* r = residual ? residual->data<float>() : nullptr;
  const float sqrt2 = static_cast<float>(std::sqrt(2.0));
  for (int64_t i = 0; i < total; ++i) {
    float v = p[i] + b[i % n];
    if (gelu) v = v * (std::erf(v / sqrt2) + 1.0f) * 0.5f;
    if (r) v = v + r[i];
    p[i] = v;
  }
}

// One row (a classifier head at batch 1): y = a W + bias [GELU] [+ residual] with each thread
// streaming its own contiguous band of W's rows, then the bands' partial rows summed. W is read
// once, in order, per thread (a hardware prefetcher's best case); oneDNN's matmul split the
// columns, and read the 5 MB head of MobileNetV2 at 20 GB/s where ORT reached ~30.
void gemv_row(const float* a, const Tensor& w, const Tensor& bias, const Tensor* residual,
              bool gelu, float* y) {
  const int64_t k = w.dim(0), n = w.dim(1);
  const float* pw = w.data<float>();
  const int nt = std::max(1, std::min<int>(omp_get_max_threads(), static_cast<int>(k / 64)));
  std::vector<float> partial(static_cast<size_t>(nt * n), 0.0f);
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num();
    float* acc = partial.data() + t * n;
    for (int64_t q = k * t / nt; q < k * (t + 1) / nt; ++q) {
      const float av = a[q];
      const float* row = pw + q * n;
      for (int64_t j = 0; j < n; ++j) acc[j] += av * row[j];
    }
  }
  const float* b = bias.data<float>();
  const float* r = residual ? residual->data<float>() : nullptr;
  const float sqrt2 = static_cast<float>(std::sqrt(2.0));
  for (int64_t j = 0; j < n; ++j) {
    float v = b[j];
    for (int t = 0; t < nt; ++t) v += partial[t * n + j];
    if (gelu) v = v * (std::erf(v / sqrt2) + 1.0f) * 0.5f;
    y[j] = r ? v + r[j] : v;
  }
}

}  // namespace

void fused_matmul_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& a = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  const Tensor* residual = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const bool gelu = node.attr_int("gelu", 0) != 0;
  TRT_CHECK_ARG(a.dtype() == DataType::kFloat32 && w.dtype() == DataType::kFloat32 &&
                    bias.dtype() == DataType::kFloat32,
                "{}: FusedMatMul takes float32 operands", node.describe());
  TRT_CHECK_ARG(w.rank() == 2 && a.rank() >= 1 && a.shape().back() == w.dim(0),
                "{}: A {} and W {} do not multiply", node.describe(), shape_str(a.shape()),
                shape_str(w.shape()));
  TRT_CHECK_ARG(bias.numel() == w.dim(1), "{}: bias has {} values for {} columns", node.describe(),
                bias.numel(), w.dim(1));
  Shape ys = a.shape();
  ys.back() = w.dim(1);
  if (residual)
    TRT_CHECK_ARG(residual->dtype() == DataType::kFloat32 && residual->shape() == ys,
                  "{}: residual {} must have the output's shape {}", node.describe(),
                  shape_str(residual->shape()), shape_str(ys));
  if (shape_numel(ys) == 0) {
    ctx.make_output(0, DataType::kFloat32, ys);
    return;
  }
  Tensor& y = ctx.outputs.at(0);
  y = residual_output_buffer(ctx, residual, DataType::kFloat32, ys);
  if (!ctx.use_reference && a.numel() == w.dim(0)) {
    gemv_row(a.data<float>(), w, bias, residual, gelu, y.data<float>());
    return;
  }
  if (!ctx.use_reference && onednn_matmul_bias(a, w, bias, residual, gelu, y)) return;
  ir::Node mm = node;
  mm.op_type = "MatMul";
  mm.domain = "";
  mm.inputs.resize(2);
  mm.attributes.clear();
  y = run_node(mm, ctx.opset, {&a, &w}, true).at(0);
  reference_epilogue(y, bias, residual, gelu);
}

}  // namespace trtutils::cpu::nn
