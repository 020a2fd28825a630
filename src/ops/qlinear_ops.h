// Quantized compute ops made by the qdq_fusion pass (src/passes/qdq_fusion.cpp) from Q/DQ
// islands, as TensorRT fuses them:
//   DequantizeLinear(X), DequantizeLinear(W) -> Conv | Gemm | MatMul [-> Add(bias)]
//     [-> Add(residual)] [-> activation] [-> QuantizeLinear]
// They are for execution on our backends only (never saved into a model for other runtimes).
//
// Ops (domain com.trtutils):
//   QConv    Conv(Xf, Wf) with the Conv attributes (auto_pad, dilations, group, kernel_shape,
//            pads, strides); W is [M, C/group, k...]; channel axis of B/w_scale: Y's axis 1.
//   QGemm    Xf [..., K] x Wf [K, N] (W stored [N, K] when transB = 1) -> [..., N]; X of rank
//            >= 1 (a Gemm has rank 2; a MatMul with a constant 2-D B any rank, as numpy).
//   QMatMul  numpy matmul(Xf, Wf), both operands activations (per-tensor scales only).
//
// Inputs, the same positions for the three ops ("" = omitted; trailing omitted inputs dropped):
//   0 X             quantized input: int8, uint8, float8e4m3fn or float8e5m2
//   1 x_scale       float32, one element
//   2 x_zero_point  X's dtype, one element; omitted = 0
//   3 W             quantized second operand (int8, uint8, float8e4m3fn, float8e5m2); a
//                   constant for QConv / QGemm in practice (kernels cache work derived from it)
//   4 w_scale       float32: one element, or 1-D per output channel (QConv: M values along W's
//                   axis 0; QGemm: N values); QMatMul: one element
//   5 w_zero_point  W's dtype, w_scale's shape; omitted = 0
//   6 B             float32 bias, 1-D with one value per output channel (optional)
//   7 y_scale       float32, one element: present = Y is quantized
//   8 y_zero_point  one element, required with y_scale: its dtype is Y's dtype (int8, uint8,
//                   float8e4m3fn, float8e5m2)
//   9 R             residual with T's shape (below): float32, or quantized when r_scale is given
//   10 r_scale      float32, one element: present = R is quantized
//   11 r_zero_point R's dtype, one element; omitted = 0
// Attributes (besides QConv's Conv attributes and QGemm's transB):
//   channels_last (QConv, int, default 0)  1: X, R and Y are [N, spatial..., C] (the int8
//                                   kernels' native layout) instead of [N, C, spatial...]
//   activation, activation_params   as com.trtutils::FusedConv (passes.h): Relu, Clip [min, max],
//                                   LeakyRelu [alpha], Sigmoid, HardSwish, Silu; absent = none
//
// Semantics: exactly the Q/DQ graph's, in float32 arithmetic:
//   Xf = (X - x_zero_point) * x_scale, Wf = (W - w_zero_point) * w_scale (per channel), and
//   Rf = (R - r_zero_point) * r_scale (or R itself when float32);
//   T  = act(op(Xf, Wf) + B + Rf)       (B along the channel axis; Rf has T's shape)
//   Y  = T (float32) when y_scale is absent, else QuantizeLinear(T, y_scale, y_zero_point):
//        integers saturate(round_half_even(T / y_scale) + y_zero_point), float8 saturating
//        cast(T / y_scale + y_zero_point).
// Kernels may compute op() in integer arithmetic (exact) with the scales applied afterwards, so
// a quantized Y may differ from the unfused graph by one quantization step where T / y_scale
// lies within float rounding of a rounding boundary, and a float Y by float rounding.
#pragma once

#include <cstddef>

namespace trtutils::ops::qlinear {

// Input positions.
enum Input : size_t {
  kX = 0,
  kXScale = 1,
  kXZeroPoint = 2,
  kW = 3,
  kWScale = 4,
  kWZeroPoint = 5,
  kBias = 6,
  kYScale = 7,
  kYZeroPoint = 8,
  kResidual = 9,
  kRScale = 10,
  kRZeroPoint = 11,
  kNumInputs = 12,
};

constexpr const char* kDomain = "com.trtutils";

}  // namespace trtutils::ops::qlinear
