// Depthwise 3x3 and 5x5 convolutions on the blocked layout (ops/blocked_layout.h: [N, C / 16, H, W,
// 16]) in AVX-512 lanes, 16 channels per vector: each task computes one output row of one channel
// block, eight pixels at a time from the input vectors of the rows it reads, with the bias
// and a Relu / Clip in registers (Silu as silu.h's pass after). oneDNN 2.6's blocked depthwise
// kernel ran MobileNetV2's 56 px layer at batch 1 in 0.18 ms where ONNX Runtime's takes 0.11
// (bench/RESULTS.md, issue 36).
#pragma once

#include <cstdint>

#include "backends/cpu/nn_kernels.h"

namespace trtutils::cpu::nn {

struct BlockedDepthwise {
  int64_t batch = 0, channels = 0, height = 0, width = 0, out_height = 0, out_width = 0;
  int64_t kernel = 3;  // k x k, no dilation
  int64_t stride = 1, pad_top = 0, pad_left = 0;
  ConvActivation act = ConvActivation::kNone;
  float alpha = 0, beta = 0;  // Clip's bounds
};

// Whether blocked_depthwise runs `p` (3x3 or 5x5, stride 1, top / left padding up to k / 2, an
// activation it applies, AVX-512 on this CPU).
bool blocked_depthwise_supported(const BlockedDepthwise& p);
// y = act(depthwise(x, w) + bias): x, y blocked; w [C, 1, k, k] float32; bias C values or
// nullptr. The lanes past C of y are zero. cache_weights: w (and bias) are constants whose
// buffers outlive the call, so their packed form is kept.
void blocked_depthwise(const BlockedDepthwise& p, const float* x, const Tensor& w,
                       const Tensor* bias, bool cache_weights, float* y);
int64_t blocked_depthwise_runs();  // process-wide count (FastPathStats::depthwise_runs)

}  // namespace trtutils::cpu::nn
