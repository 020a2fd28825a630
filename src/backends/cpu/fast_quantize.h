// Per-tensor QuantizeLinear (float32 -> int8 / uint8) and DequantizeLinear (int8 / uint8 ->
// float32) in AVX-512 lanes, parallel over chunks, with exactly the arithmetic of the reference
// kernels (quant_kernels.cpp): q = clamp(round_half_even(x / scale) + zero_point), NaN -> the
// zero point; y = float(q - zero_point) * scale. Q/DQ models keep such nodes between the fused
// quantized layers (a float squeeze-excitation block reading a quantized SiLU output), where the
// scalar loops cost more than the convolutions around them.
#pragma once

#include <cstdint>

namespace trtutils::cpu {

// `is_signed`: int8 (else uint8) values in q.
void quantize_per_tensor(const float* x, int64_t n, float scale, float zero_point, bool is_signed,
                         void* q);
void dequantize_per_tensor(const void* q, int64_t n, float scale, int32_t zero_point,
                           bool is_signed, float* y);

}  // namespace trtutils::cpu
