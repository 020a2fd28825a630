// Internal to the CPU kernels of com.trtutils::QConv / QGemm / QMatMul (contract:
// ops/qlinear_ops.h): the int8 oneDNN fast paths (onednn_int8.cpp) and what the kernels
// (qlinear_kernels.cpp) hand them.
//
// Fast path (int8/uint8 X, int8 W with zero zero point, int8/uint8/float32 Y): oneDNN computes
// the integer accumulator acc = sum (X - x_zp) * W exactly in int32 and then, in float,
//   T = out_scale[c] * (acc + B[c] / (x_scale * w_scale[c])) [+ sum_scale * (R - r_zp)]
// followed by the activation and, for a quantized Y, the division by y_scale (folded into
// out_scale when the activation commutes with it), + y_zp, round half to even and saturation.
// Without AVX-512 VNNI / AVX-VNNI, oneDNN multiplies u8 x s8 pairs with 16-bit saturation (and
// halves s8 weights when X is s8), so there the fast path runs only when every X value lies in
// [0, 127] (checked per call; typical after ReLU); otherwise the caller computes in float.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/lru_cache.h"
#include "backends/cpu/nn_kernels.h"

namespace trtutils::cpu::qlinear {

// Everything after the integer product (see above). Scales are per tensor except w_scale.
struct Epilogue {
  const Tensor* bias = nullptr;      // float32, one per output channel
  const Tensor* residual = nullptr;  // T's shape (and layout): float32, or quantized
  bool residual_quantized = false;
  float r_scale = 1.0f;
  int32_t r_zp = 0;
  nn::ConvActivation act = nn::ConvActivation::kNone;
  float alpha = 0, beta = 0;   // Clip min/max, LeakyRelu alpha (as nn::ConvPostOps)
  bool quantized_out = false;  // y's dtype is int8/uint8 (the fast paths never write float8)
  float y_scale = 1.0f;
  int32_t y_zp = 0;
};

// The quantized operand X: int8 or uint8 values with a per-tensor zero point.
struct Operand {
  const Tensor* t = nullptr;
  float scale = 1.0f;
  int32_t zp = 0;
};

// Y (allocated with T's shape, dtype float32 / int8 / uint8) = the fused island, for a 1-D..3-D
// convolution. channels_last: X, R and Y are [N, spatial..., C] instead of [N, C, spatial...].
// w: int8 weights [M, C/group, k...]; w_scale: 1 or M values. cache_weights: W is a constant
// whose buffer outlives the call (its packed form is cached, keyed by the buffer). False = not
// handled (configuration or ISA): nothing was written that the caller relies on.
bool onednn_qconv(const nn::ConvProblem& p, bool channels_last, const Operand& x, const Tensor& w,
                  const std::vector<float>& w_scale, bool cache_weights, const Epilogue& ep,
                  Tensor& y);
// Y [M, N] = X [M, K] x W ([K, N], or [N, K] when trans_b) for QGemm.
bool onednn_qgemm(const Operand& x, int64_t m, int64_t k, int64_t n, const Tensor& w, bool trans_b,
                  const std::vector<float>& w_scale, bool cache_weights, const Epilogue& ep,
                  Tensor& y);
// Batched Y = A x B for QMatMul: shapes of equal rank >= 2 whose batch dims broadcast; B is an
// int8 activation with zero point 0 and a per-tensor scale.
bool onednn_qmatmul(const Operand& a, const Shape& a_shape, const Tensor& b, float b_scale,
                    const Shape& b_shape, const Epilogue& ep, Tensor& y, const Shape& y_shape);

// Process-wide counts (tests use them to check which path ran) and the cache size.
struct Int8Stats {
  int64_t runs = 0;       // islands computed by the int8 oneDNN paths
  int64_t fallbacks = 0;  // calls the int8 paths declined (the float path ran instead)
  int64_t cache_entries = 0;
};
Int8Stats onednn_int8_stats();
// Drops the cached primitives and packed weights (and the handles on the weights they hold),
// and the dequantized weights of the float path.
void clear_caches();
void onednn_int8_clear_caches();
// Drops only the entries whose weights buffer is gone (their models and sessions destroyed).
void release_stale();
void onednn_int8_release_stale();

// Up to 32 evenly spaced bytes of t's buffer: a cheap check that a cached constant's buffer
// still holds the values it was cached with.
std::vector<uint8_t> buffer_sample(const Tensor& t);

}  // namespace trtutils::cpu::qlinear
