// Cubic Resize on the GPU (ops_resize.cpp): the CPU kernel's separable passes
// (backends/cpu/resize_kernels.cpp), one resized axis per call, innermost first, on the taps of
// ops::cubic_taps, accumulated in float32 in tap order. Plain C++ declarations.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kernels.h"
#include "trtutils/dtype.h"

namespace trtutils::cuda::k {

// One pass along an axis of length n: dst[o, j, i] = sum_t weight[4j + t] * src[o, index[4j +
// t], i] for o < outer, j < out_len, i < inner (weight / index: device tables of 4 * out_len).
struct CubicPass {
  int64_t outer = 1, n = 1, out_len = 1, inner = 1;
  const int64_t* index = nullptr;
  const float* weight = nullptr;
};
// src_dt / dst_dt: float32, float16 or bfloat16 (else cudaErrorNotSupported).
cudaError_t resize_cubic_pass(DataType src_dt, const void* src, DataType dst_dt, void* dst,
                              const CubicPass& p, cudaStream_t stream);

// tf_crop_and_resize: y[i] = value where a coordinate of point i lies outside the input
// (outside[a]: one byte per output coordinate of axis a, null for an axis with none outside).
struct OutsideMask {
  int rank = 0;
  int64_t out[kMaxRank] = {};
  const uint8_t* outside[kMaxRank] = {};
};
cudaError_t resize_fill_outside(DataType dt, void* y, const OutsideMask& m, float value,
                                int64_t numel, cudaStream_t stream);

}  // namespace trtutils::cuda::k
