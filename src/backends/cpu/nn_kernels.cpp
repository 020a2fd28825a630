// CPU kernels for the nn op family: registration and the shared dtype helpers. The kernels
// live in conv_kernels.cpp, gemm_kernels.cpp, pool_kernels.cpp, norm_kernels.cpp,
// squeeze_excite_kernel.cpp, blocked_layout.cpp and the oneDNN fast paths in onednn_nn.cpp.
#include "backends/cpu/nn_kernels.h"

#include "backends/cpu/blocked_layout.h"
#include "core/check.h"

namespace trtutils::cpu {

namespace nn {

bool is_compute_float(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64;
}
bool is_narrow_float(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16;
}

void require_float(const ir::Node& node, DataType dt, const char* what) {
  TRT_CHECK(is_compute_float(dt) || is_narrow_float(dt), ErrorCode::kNotSupported,
            "{}: {} has dtype {}; only float32, float64, float16 and bfloat16 are supported",
            node.describe(), what, dtype_name(dt));
}

Tensor to_compute(const Tensor& t, const ir::Node& node, const char* what) {
  require_float(node, t.dtype(), what);
  if (is_compute_float(t.dtype())) return t;
  Tensor r(DataType::kFloat32, t.shape());
  float* dst = r.data<float>();
  const int64_t n = t.numel();
  if (t.dtype() == DataType::kFloat16) {
    const half* src = t.data<half>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
  } else {
    const bfloat16* src = t.data<bfloat16>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16_to_float(src[i]);
  }
  return r;
}

void set_output_from(KernelContext& ctx, size_t i, DataType dt, const Tensor& computed) {
  if (computed.dtype() == dt) {
    ctx.outputs.at(i) = computed;
    return;
  }
  Tensor& out = ctx.make_output(i, dt, computed.shape());
  const int64_t n = computed.numel();
  TRT_INTERNAL_CHECK(computed.dtype() == DataType::kFloat32);
  const float* src = computed.data<float>();
  if (dt == DataType::kFloat16) {
    half* dst = out.data<half>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t k = 0; k < n; ++k) dst[k] = float_to_half(src[k]);
  } else {
    TRT_INTERNAL_CHECK(dt == DataType::kBFloat16);
    bfloat16* dst = out.data<bfloat16>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t k = 0; k < n; ++k) dst[k] = float_to_bfloat16(src[k]);
  }
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.at_double(i);
  return v;
}

}  // namespace nn

void register_nn_kernels(KernelRegistry& r) {
  r.add({"Conv", "", nn::conv_kernel});
  r.add({"ConvTranspose", "", nn::conv_transpose_kernel});
  r.add({"FusedConv", "com.trtutils", nn::fused_conv_kernel});
  r.add({"SqueezeExcite", "com.trtutils", nn::squeeze_excite_kernel});
  r.add({"PointwiseDepthwise", "com.trtutils", nn::pointwise_depthwise_kernel});
  r.add({"ToBlocked", "com.trtutils", to_blocked_kernel});
  r.add({"FromBlocked", "com.trtutils", from_blocked_kernel});
  r.add({"Gemm", "", nn::gemm_kernel});
  r.add({"MatMul", "", nn::matmul_kernel});
  r.add({"FusedMatMul", "com.trtutils", nn::fused_matmul_kernel});
  r.add({"PermutedMatMul", "com.trtutils", nn::permuted_matmul_kernel});
  r.add({"MaxPool", "", nn::max_pool_kernel});
  r.add({"AveragePool", "", nn::average_pool_kernel});
  r.add({"GlobalAveragePool", "", nn::global_average_pool_kernel});
  r.add({"GlobalMaxPool", "", nn::global_max_pool_kernel});
  r.add({"BatchNormalization", "", nn::batch_norm_kernel});
  r.add({"InstanceNormalization", "", nn::instance_norm_kernel});
  r.add({"GroupNormalization", "", nn::group_norm_kernel});
  r.add({"LayerNormalization", "", nn::layer_norm_kernel});
}

}  // namespace trtutils::cpu
