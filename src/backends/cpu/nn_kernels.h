// Internal to the CPU nn kernels (Conv, ConvTranspose, Gemm, MatMul, pools, normalisations):
// dtype helpers, the per-file kernel entry points that register_nn_kernels() registers, and the
// oneDNN fast paths. Each fast path returns false when it cannot run a configuration, and the
// caller then runs the plain reference kernel.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cpu/kernel_registry.h"
#include "ops/nn_geometry.h"

namespace trtutils::cpu::nn {

// ---- dtypes -----------------------------------------------------------------------------------
// The nn kernels compute float32 and float64 natively; float16 and bfloat16 are widened to
// float32, computed, and rounded back (round to nearest even).
bool is_compute_float(DataType t);  // fp32 or fp64
bool is_narrow_float(DataType t);   // fp16 or bf16
// t itself when fp32/fp64, else a float32 copy (throws kNotSupported for non-float dtypes,
// naming the node and `what`).
Tensor to_compute(const Tensor& t, const ir::Node& node, const char* what);
// Output i of dtype `dt` from `computed` (fp32/fp64): assigned directly when the dtype
// matches, else converted.
void set_output_from(KernelContext& ctx, size_t i, DataType dt, const Tensor& computed);
// All elements as double (small parameter tensors: bias, scale, mean, ...).
std::vector<double> to_doubles(const Tensor& t);
// Throws Error(kNotSupported) naming the node unless dt is fp32/fp64/fp16/bf16.
void require_float(const ir::Node& node, DataType dt, const char* what);

// ---- convolution ------------------------------------------------------------------------------
// One Conv / ConvTranspose problem with the spatial axes padded to 3 (leading axes of size 1).
struct ConvProblem {
  bool transpose = false;
  size_t nspatial = 0;  // 1, 2 or 3: the real spatial rank
  int64_t batch = 0;
  int64_t in_channels = 0;   // C (X dim 1)
  int64_t out_channels = 0;  // M (Y dim 1)
  int64_t group = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1},
      dilation{1, 1, 1}, pad_begin{0, 0, 0}, pad_end{0, 0, 0};
  // The builder's choice of variant (the node's "tactic" attribute): "" = the environment's
  // policy; "direct"; "winograd" (3x3 stride-1 only); "matmul" (pointwise only).
  std::string tactic;
};

// What a com.trtutils::FusedConv adds after the convolution (and its bias), in this order:
// Y = act(conv + B + residual). See passes.h (fuse_convolutions) for the node's contract.
using ConvActivation = ops::FusedActivation;
struct ConvPostOps {
  const Tensor* residual = nullptr;  // Y's shape and dtype; read only (may be shared)
  ConvActivation act = ConvActivation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max (may be infinite); LeakyRelu: alpha
};

// Y for a fast path whose input 3 is a residual added in place (FusedConv, FusedMatMul): the
// residual's own buffer when the caller donated it (the sum post-op then adds to it, saving a
// copy of Y), else a new uninitialized tensor.
Tensor residual_output_buffer(const KernelContext& ctx, const Tensor* residual, DataType dt,
                              const Shape& shape);

// ---- kernel entry points (registered by register_nn_kernels) --------------------------------
void conv_kernel(KernelContext& ctx);
void fused_conv_kernel(KernelContext& ctx);           // com.trtutils::FusedConv
void squeeze_excite_kernel(KernelContext& ctx);       // com.trtutils::SqueezeExcite
void pointwise_depthwise_kernel(KernelContext& ctx);  // com.trtutils::PointwiseDepthwise
void conv_transpose_kernel(KernelContext& ctx);
void gemm_kernel(KernelContext& ctx);
void matmul_kernel(KernelContext& ctx);
void fused_matmul_kernel(KernelContext& ctx);  // com.trtutils::FusedMatMul
void max_pool_kernel(KernelContext& ctx);
void average_pool_kernel(KernelContext& ctx);
void global_average_pool_kernel(KernelContext& ctx);
void global_max_pool_kernel(KernelContext& ctx);
void batch_norm_kernel(KernelContext& ctx);
void instance_norm_kernel(KernelContext& ctx);
void group_norm_kernel(KernelContext& ctx);
void layer_norm_kernel(KernelContext& ctx);

// ---- oneDNN fast paths (float32 only; false = not handled, use the reference) --------------
// Convolutions: pointwise ones run as a batched matmul on nchw, 3x3 stride-1 ones through
// Winograd where oneDNN has it, the rest as direct convolutions in the primitive's preferred
// layout. Environment knobs (read once; see onednn_nn.cpp): TRTUTILS_CONV_ALGO=direct,
// TRTUTILS_CONV_1X1=conv, TRTUTILS_CONV_LAYOUT=nchw|nhwc|blocked.
// Y (already allocated with the output shape; its contents are overwritten) =
// act(conv(X, W) + B + residual) with `post` (default: none). Reordered weights and
// primitives are cached per (weights buffer, shapes, attributes); the cache keeps the weights
// buffer alive and re-checks a sample of its values on every hit.
// cache_weights: w is a constant whose buffer outlives the call, so its packed form is cached
// (keyed by the buffer); otherwise it is packed for this call only.
// layouts: how X and Y (with the residual) lie in memory. kChannelsLast: [N, spatial..., C]
// (FusedConv's "channels_last", made by the conv_layout pass); kBlocked16: [N, C / 16,
// spatial..., 16] (FusedConv's "blocked", conv_blocked_layout; X may stay plain for a first
// convolution). The primitive reads and writes such tensors in place, with no reorder;
// channels-last pointwise convolutions run as oneDNN 1x1 convolutions (as one matmul over all
// pixels only with the "matmul" tactic). Not for ConvTranspose.
enum class ActLayout : uint8_t { kPlain, kChannelsLast, kBlocked16 };
struct ConvLayouts {
  ActLayout src = ActLayout::kPlain, dst = ActLayout::kPlain;
  bool plain() const { return src == ActLayout::kPlain && dst == ActLayout::kPlain; }
  bool channels_last() const { return dst == ActLayout::kChannelsLast; }
  bool blocked() const { return dst == ActLayout::kBlocked16; }
};
// The fast-path variants that may serve a problem on tensors of `layout` (the builder times each
// one).
std::vector<std::string> conv_tactics(const ConvProblem& p, ActLayout layout);
bool onednn_conv(const ConvProblem& p, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                 const ConvPostOps& post = {}, bool cache_weights = true, ConvLayouts layouts = {});
// com.trtutils::PointwiseDepthwise (ops/pointwise_depthwise.h) on blocked float32 tensors: X
// [N, C, H, W] -> 1x1 convolution to M channels -> act -> depthwise convolution -> act_dw, Y
// [N, M, out_height, out_width] (both stored blocked). Only activations, no residual.
struct PointwiseDepthwiseProblem {
  int64_t batch = 0, in_channels = 0, channels = 0, height = 0, width = 0;
  int64_t kernel[2]{}, stride[2]{}, pad_begin[2]{}, pad_end[2]{}, dilation[2]{};  // depthwise
  int64_t out_height = 0, out_width = 0;
  ConvPostOps pointwise, depthwise;
};
// oneDNN's 1x1 convolution with its depthwise post-op, one pass that keeps the expanded rows in
// cache (onednn_pointwise_depthwise.cpp). false when oneDNN has no native kernel for the problem
// (2.6: 3x3, top-left pad 1, stride 1 or 2); the caller then runs the two convolutions.
bool onednn_pointwise_depthwise(const PointwiseDepthwiseProblem& p, const Tensor& x,
                                const Tensor& w, const Tensor* b, const Tensor& w_dw,
                                const Tensor* b_dw, Tensor& y, bool cache_weights);
// Whether oneDNN has its native fused kernel for the problem (the builder's question, so that
// only pairs it fuses become one node).
bool onednn_pointwise_depthwise_native(const PointwiseDepthwiseProblem& p, bool bias, bool dw_bias);
// The same for a PointwiseDepthwise node of graph g (static shapes in value_info): the CPU
// plan's fuse_pointwise_depthwise asks it (passes::CpuPlanHooks).
bool pointwise_depthwise_native(const ir::Graph& g, const ir::Node& fused);
int64_t onednn_pointwise_depthwise_runs();  // process-wide count, for tests
// Drops the fused entries whose weights are gone (all of them with `all`).
void onednn_pointwise_depthwise_release(bool all);

// Y[M,N] = alpha * op(A) * op(B) + beta * C (C broadcast to [M,N], or absent).
bool onednn_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool trans_a, bool trans_b,
                 float alpha, float beta, Tensor& y);
// Batched Y = A x B where a_shape / b_shape / y_shape have the same rank >= 2 and the batch dims
// of A and B broadcast (size 1 or equal to Y's).
bool onednn_matmul(const Tensor& a, const Shape& a_shape, const Tensor& b, const Shape& b_shape,
                   Tensor& y, const Shape& y_shape);
// Y = alpha * A x B over strided views of A, B and Y (com.trtutils::PermutedMatMul): dims and
// strides (in elements) of one rank >= 2, batch dims of A and B equal to Y's or 1.
struct StridedMatmul {
  std::vector<int64_t> a_dims, a_strides, b_dims, b_strides, y_dims, y_strides;
  float alpha = 1.0f;
};
// The views of PermutedMatMul(A, B) for its source shapes and perms (empty: identity), or
// nullopt when they do not multiply (rank < 2, inner or batch dims that differ).
std::optional<StridedMatmul> permuted_matmul_views(const Shape& a, const std::vector<int64_t>& pa,
                                                   const Shape& b, const std::vector<int64_t>& pb,
                                                   const std::vector<int64_t>& py, float alpha);
// Float32 A, B, Y buffers; false when oneDNN has no optimized kernel for the views.
bool onednn_strided_matmul(const StridedMatmul& p, const float* a, const float* b, float* y);
// Whether oneDNN has an optimized kernel for the views (the builder's question).
bool onednn_strided_matmul_native(const StridedMatmul& p);
// The same for a PermutedMatMul node of graph g (static shapes in value_info): the CPU plan's
// fold_matmul_permutes asks it (passes::CpuPlanHooks).
bool permuted_matmul_native(const ir::Graph& g, const ir::Node& fused);
void permuted_matmul_kernel(KernelContext& ctx);  // com.trtutils::PermutedMatMul

// com.trtutils::FusedMatMul's fast path, float32: Y [..., N] = A [..., K] x W [K, N] + bias (N
// values) [-> exact GELU] [+ residual (Y's shape)], one primitive (bias and post-ops).
bool onednn_matmul_bias(const Tensor& a, const Tensor& w, const Tensor& bias,
                        const Tensor* residual, bool gelu, Tensor& y);

// Drops every cached primitive and reordered weights copy. Otherwise the caches are bounded
// (LRU; conv entries by count and 2 GiB of reordered weights).
void onednn_clear_caches();
// Drops the entries whose weights buffer is gone (stale: never used again), with the int8 and
// dequantized-weight caches of qlinear; Session's destructor calls it.
void onednn_release_stale();

// Process-wide counts of oneDNN fast-path runs and of calls that fell back to the reference
// (configuration not supported by oneDNN); tests use them to check that a fast path really ran.
struct FastPathStats {
  int64_t conv_runs = 0, conv_fallbacks = 0;
  int64_t matmul_runs = 0, matmul_fallbacks = 0;  // Gemm and MatMul
  int64_t conv_cache_entries = 0;                 // packed-weight entries held now
  int64_t depthwise_runs = 0;                     // blocked_depthwise.h (not oneDNN)
};
FastPathStats onednn_stats();

}  // namespace trtutils::cpu::nn
