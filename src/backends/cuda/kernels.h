// The CUDA kernels' launchers: plain C++ declarations shared by the host code (g++) and the
// .cu files (nvcc), which include nothing else of trtutils. Pointers are device pointers; every
// launcher enqueues on `stream` and returns cudaGetLastError() (the caller checks it with
// file:line). Element counts fit int64; kernels that decompose indices into coordinates
// (broadcast, strided copy, pools) need fewer than 2^31 elements, which the host checks.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "trtutils/dtype.h"

namespace trtutils::cuda::k {

constexpr int kMaxRank = 8;

// ---- elementwise ------------------------------------------------------------------------------
enum class Unary : int {
  kIdentity,
  kRelu,
  kSigmoid,
  kTanh,
  kErf,
  kSqrt,
  kExp,
  kLog,
  kAbs,
  kNeg,
  kReciprocal,
  kFloor,
  kCeil,
  kRound,  // half to even
  kSin,
  kCos,
  kSign,
  kHardSwish,
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kClip,         // min(max(x, alpha), beta)
  kLeakyRelu,    // alpha
  kElu,          // alpha
  kSelu,         // alpha, beta = gamma
  kSoftplus,
  kSoftsign,
  kMish,
  kGelu,      // erf form
  kGeluTanh,  // tanh approximation
  kScale,     // alpha * x
};
// y = op(x) elementwise; dtype float32/float16/bfloat16 (computed in float), or for kIdentity,
// kRelu, kAbs, kNeg, kSign, kClip, kScale also int8/int32/int64.
cudaError_t unary(Unary op, DataType dt, const void* x, void* y, int64_t n, float alpha, float beta,
                  cudaStream_t stream);

enum class Binary : int {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMax,
  kMin,
  kPRelu,  // a < 0 ? a * b : a
  kMod,    // fmod for floats; Python-style (sign of divisor) for ints unless fmod flag
  kFMod,
  // bool outputs
  kEqual,
  kLess,
  kGreater,
  kLessOrEqual,
  kGreaterOrEqual,
  kAnd,
  kOr,
  kXor,
};
bool binary_is_comparison(Binary op);  // output bool

// Broadcast description: `rank` output dims (merged and simplified by the host) and per-input
// element strides (0 where the input is broadcast).
struct Broadcast {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};
};
// y = op(a, b). dt: the inputs' dtype (float32/float16/bfloat16/int8/uint8/int32/int64, bool for
// logic ops); y has dt, or bool for comparisons and logic ops. `numel` = product of dims.
cudaError_t binary(Binary op, DataType dt, const void* a, const void* b, void* y,
                   const Broadcast& bc, int64_t numel, cudaStream_t stream);
// The same binary op (float dtypes, arithmetic ops) with its result (rounded to dt) quantized per
// tensor as QuantizeLinear does (v / scale, round half to even, + zp, saturating) into y of dtype
// yt (int8, uint8, float8e4m3fn, float8e5m2; zp 0 for float8): one pass instead of two.
cudaError_t binary_quantize(Binary op, DataType dt, const void* a, const void* b, void* y,
                            const Broadcast& bc, int64_t numel, DataType yt, float scale, float zp,
                            cudaStream_t stream);
// y = cond ? x : z (bool cond; x/z/y of element size esz = 1, 2, 4 or 8).
cudaError_t where(size_t esz, const void* cond, const void* x, const void* z, void* y,
                  const Broadcast& bc, int64_t numel, cudaStream_t stream);

// ONNX Cast between float32/float16/bfloat16/float64/int8/uint8/int16/uint16/int32/uint32/
// int64/uint64/bool/float8e4m3fn/float8e5m2 (saturate: float8 targets).
cudaError_t cast(DataType from, DataType to, const void* x, void* y, int64_t n, bool saturate,
                 cudaStream_t stream);
bool cast_supported(DataType t);

// ---- convolution epilogue / channel affine ------------------------------------------------
// kGelu: the erf form, 0.5 x (1 + erf(x / sqrt 2)) (the quantized products' epilogue only).
enum class Act : int { kNone, kRelu, kClip, kLeakyRelu, kSigmoid, kHardSwish, kGelu, kSilu };
// y[i] = act(y[i] + bias[c] + residual[i]) with c = (i / inner) % channels; bias (dt, may be
// null), residual (dt, may be null). dt float32/float16/bfloat16.
cudaError_t bias_act(DataType dt, void* y, const void* bias, const void* residual, int64_t n,
                     int64_t channels, int64_t inner, Act act, float alpha, float beta,
                     cudaStream_t stream);
// What follows the affine in channel_affine_act: an activation (rounded to x's dtype), then
// optionally a per-tensor quantization to y_dtype (int8, uint8, float8: byte_of's rounding).
struct AffineAct {
  Act act = Act::kNone;
  float alpha = 0.0f, beta = 0.0f;
  bool quantize = false;
  DataType q_dtype = DataType::kInt8;
  float q_scale = 1.0f, q_zero = 0.0f;
};
// y[i] = post(x[i] * scale[c] + shift[c]) (float32 scale/shift; c = (i / inner) % channels):
// BatchNormalization, and its fused activation / QuantizeLinear (affine_kernels.cu). y has x's
// dtype, or p.q_dtype when p.quantize.
cudaError_t channel_affine_act(DataType dt, const void* x, void* y, const float* scale,
                               const float* shift, int64_t n, int64_t channels, int64_t inner,
                               const AffineAct& p, cudaStream_t stream);

// The inputs of a Concat on the channel axis: input k (data of the affine's dtype, laid out
// [outer, begin[k + 1] - begin[k], inner]) holds channels begin[k] .. begin[k + 1] - 1.
struct ConcatSources {
  static constexpr int kMax = 64;
  const void* ptr[kMax] = {};
  int32_t begin[kMax + 1] = {};
  int32_t count = 0;
};
// channel_affine_act over the concatenation of s's inputs ([outer, begin[count], inner]) without
// writing it: y [outer, channels, inner] (DenseNet's Concat -> BN -> ReLU [-> Q]).
cudaError_t concat_channel_affine_act(DataType dt, const ConcatSources& s, void* y,
                                      const float* scale, const float* shift, int64_t outer,
                                      int64_t inner, const AffineAct& p, cudaStream_t stream);

// ---- data movement ----------------------------------------------------------------------------
// rows x width bytes from src (row pitch spitch) to dst (row pitch dpitch): Concat and Split
// (cudaMemcpy2DAsync reached ~1.6 TB/s on ViT-B/16's token Concat on the H200).
cudaError_t copy_rows(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                      size_t rows, cudaStream_t stream);
// y[i] = x[offset + sum_d coord_d(i) * strides[0][d]] over the output dims (Transpose, Slice,
// Expand): one source only (strides[0]); offset may be anything the strides keep in range.
cudaError_t strided_copy(size_t esz, const void* x, void* y, const Broadcast& bc, int64_t offset,
                         int64_t numel, cudaStream_t stream);
// y[o, j, i] = x[o, idx[j], i] with negative indices wrapped (x: [outer, axis_len, inner]).
cudaError_t gather(size_t esz, const void* x, const void* indices, bool indices_int64, void* y,
                   int64_t outer, int64_t axis_len, int64_t num_indices, int64_t inner,
                   cudaStream_t stream);
// Pad: out coordinate c reads in coordinate c - pad_begin; outside the input: mode 0 constant
// (value's esz bytes), 1 edge, 2 reflect, 3 wrap.
struct PadDesc {
  int rank = 0;
  int64_t in[kMaxRank] = {};
  int64_t out[kMaxRank] = {};
  int64_t pad_begin[kMaxRank] = {};
  int mode = 0;
  uint64_t value = 0;  // bit pattern of the constant
};
cudaError_t pad(size_t esz, const void* x, void* y, const PadDesc& p, int64_t numel,
                cudaStream_t stream);

// ---- Resize ------------------------------------------------------------------------------------
// Nearest (any element size): y[o] = x[sum_d table_d[o_d]], or `fill` (raw bits) when some
// table entry is -1 (tf_crop_and_resize outside the input). Tables hold element offsets.
struct ResizeNearestDesc {
  int rank = 0;
  int64_t out[kMaxRank] = {};
  const int64_t* table[kMaxRank] = {};
};
cudaError_t resize_nearest(size_t esz, const void* x, void* y, const ResizeNearestDesc& d,
                           int64_t numel, uint64_t fill, cudaStream_t stream);
// Linear (float32/float16/bfloat16): the corners of the resized axes with ONNX Runtime's taps
// and summation order (the CPU kernel's), at most 3 resized axes before the last. Per resized
// axis d: i1/i2 (input indices), w1/w2, outside (1: extrapolation_value).
struct ResizeLinearDesc {
  int rank = 0;
  int64_t out[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  bool resized[kMaxRank] = {};
  const int64_t* i1[kMaxRank] = {};
  const int64_t* i2[kMaxRank] = {};
  const float* w1[kMaxRank] = {};
  const float* w2[kMaxRank] = {};
  const uint8_t* outside[kMaxRank] = {};
  float extrapolation = 0.0f;
};
cudaError_t resize_linear(DataType dt, const void* x, void* y, const ResizeLinearDesc& d,
                          int64_t numel, cudaStream_t stream);

// ---- pooling / normalisation / reductions --------------------------------------------------
struct PoolDesc {        // spatial axes padded to 3 (leading axes of size 1)
  int64_t planes = 0;    // N * C (channels-first), or N (channels-last)
  int64_t channels = 0;  // > 0: channels-last, x and y [N, spatial..., C] with C = channels
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1},
          dilation[3] = {1, 1, 1}, pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0};
};
// dt float32/float16/bfloat16 (and int8/uint8 for max).
cudaError_t max_pool(DataType dt, const void* x, void* y, const PoolDesc& p, cudaStream_t stream);
cudaError_t avg_pool(DataType dt, const void* x, void* y, const PoolDesc& p, bool count_include_pad,
                     cudaStream_t stream);
// y[p] = mean or max of x[p * size .. (p + 1) * size).
cudaError_t global_pool(DataType dt, const void* x, void* y, int64_t planes, int64_t size,
                        bool is_max, cudaStream_t stream);

enum class Soft : int { kSoftmax, kLogSoftmax };
// Over the middle axis of x viewed as [outer, n, inner].
cudaError_t softmax(DataType dt, Soft kind, const void* x, void* y, int64_t outer, int64_t n,
                    int64_t inner, cudaStream_t stream);
// Per row of d elements: y = (x - mean) / sqrt(var + eps) * scale + bias (scale/bias of dtype dt
// with d elements; bias may be null). mean/inv_std (float32, may be null) per row.
cudaError_t layer_norm(DataType dt, const void* x, const void* scale, const void* bias, void* y,
                       int64_t rows, int64_t d, float eps, float* mean, float* inv_std,
                       cudaStream_t stream);
// The same with Y quantized per tensor: byte(LN(x) rounded to dt, / y_scale, + y_zp) of dtype
// y_t (int8, uint8, float8; saturating), and, when grid0 > 0, the rows viewed [grid0, grid1]
// written transposed ([grid1, grid0]: a following Transpose(1, 0, 2)).
struct LnQuant {
  DataType y_t = DataType::kInt8;
  float y_scale = 1, y_zp = 0;
  int64_t grid0 = 0, grid1 = 0;
};
cudaError_t layer_norm_quantize(DataType dt, const void* x, const void* scale, const void* bias,
                                void* y, int64_t rows, int64_t d, float eps, const LnQuant& q,
                                cudaStream_t stream);

// Fused attention O[b, i, :] = sum_j softmax_j(scale * Q[b, i, :] . K[b, j, :]) V[b, j, :] for
// float16 / bfloat16 (tensor cores, float accumulation and softmax). Every operand is read or
// written through element strides {batch, row, column}: Q [batch, sq, d], K [batch, sk, d] (a
// K^T tensor [.., d, sk] is K with its strides swapped), V [batch, sk, dv], O [batch, sq, dv].
constexpr int64_t kAttentionMaxHead = 128;
struct AttentionDesc {
  int64_t batch = 0, sq = 0, sk = 0, d = 0, dv = 0;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  int64_t q_st[3] = {}, k_st[3] = {}, v_st[3] = {}, o_st[3] = {};
  float scale = 1.0f;
};
// dt float16 / bfloat16 with head sizes d, dv in [1, kAttentionMaxHead].
bool attention_supported(DataType dt, int64_t d, int64_t dv);
// cudaErrorNotSupported when !attention_supported, sk < 1, or the device lacks the shared memory.
cudaError_t attention(DataType dt, const AttentionDesc& a, cudaStream_t stream);
// The float8 / int8 Q/DQ attention of a quantized graph, with the graph's numerics: Q, K, V (a's
// pointers, dtype in_t: float32 / float16 / bfloat16) quantized on load (x / scale, saturating;
// E4M3, E5M2 or int8 with zero point 0), scores scale * qk_dq * (q8 . k8), softmax in float32,
// the probabilities quantized (p / p_scale), O = pv_dq * (p8 . v8) written as float32 (or
// quantized, out_t) through o's strides. in_t may also be the quantized type itself (operands
// quantized by their producer; then scales 1 and no pre-scaling).
struct AttentionQDesc {
  AttentionDesc a;
  bool e4m3 = true;
  bool int8 = false;  // int8 operands (zero points 0) instead of float8
  float q_scale = 1, k_scale = 1, v_scale = 1, p_scale = 1;
  float qk_dq = 1, pv_dq = 1;
  // K and V quantized once per batch entry into shared memory when they fit (else streamed).
  bool resident = true;
  // Resident, up to 208 keys and head size 64: each score computed once (kept in registers)
  // instead of once per pass.
  bool one_pass = true;
  // Q and K as the graph has them before their quantizers: x * pre (op 1), x / pre (op 2) or
  // x (op 0), rounded to the input dtype.
  float q_pre = 1, k_pre = 1;
  int q_pre_op = 0, k_pre_op = 0;
  // O quantized (the QuantizeLinear after the attention, zero point 0): out_t int8 / float8 with
  // its scale; float32 = O as it is.
  DataType out_t = DataType::kFloat32;
  float out_scale = 1;
};
cudaError_t attention_fp8(DataType in_t, const AttentionQDesc& aq, cudaStream_t stream);

enum class Reduce : int { kSum, kMean, kMax, kMin, kSumSquare, kL1, kL2, kProd, kLogSumExp };
// y[o, i] = reduce_r x[o, r, i] for x viewed as [outer, r, inner]; float types accumulate in
// float (int32/int64 supported for sum/max/min/prod).
cudaError_t reduce(DataType dt, Reduce kind, const void* x, void* y, int64_t outer, int64_t r,
                   int64_t inner, cudaStream_t stream);
// GlobalAveragePool / GlobalMaxPool of a quantized tensor dequantized on load, as
// DequantizeLinear and then the pool compute it: y[o, i] = mean (max) over r of
// (x[o, r, i] - zp) * scale, x int8 / uint8 / float8 viewed as [outer, r, inner], y float32.
cudaError_t global_pool_dequant(DataType xt, const void* x, float* y, int64_t outer, int64_t r,
                                int64_t inner, float scale, float zp, bool is_max,
                                cudaStream_t stream);

// ---- quantization ------------------------------------------------------------------------------
// Element e of x viewed as [outer, axis_len, inner] uses scale[a] / zero_point[a] when
// per_axis, else index 0. zero_point (float32 values) may be null (= 0).
struct QuantDesc {
  int64_t n = 0;
  int64_t axis_len = 1, inner = 1;
  bool per_axis = false;
  const float* scale = nullptr;
  const float* zero_point = nullptr;
};
// QuantizeLinear: x (float32/float16/bfloat16) -> y (int8/uint8/int16/uint16 with
// round-half-even + saturation; float8e4m3fn/float8e5m2 with `saturate`).
cudaError_t quantize(DataType xt, DataType yt, const void* x, void* y, const QuantDesc& q,
                     bool saturate, cudaStream_t stream);
// DequantizeLinear: x (int8/uint8/int16/uint16/int32/float8) -> y (float32/float16/bfloat16).
cudaError_t dequantize(DataType xt, DataType yt, const void* x, void* y, const QuantDesc& q,
                       cudaStream_t stream);

// The quantized islands' int path: col [rows, kp] bytes from x (NCHW, or NHWC when
// channels_last; byte elements, 1-3 spatial axes padded to 3 as in PoolDesc): row
// b * positions + p, column ((c * k0 + a) * k1 + b) * k2 + e (W's [M, C, k...] order);
// padding reads `pad_value`; every byte is XORed with xor_mask (0x80 turns uint8 into int8
// shifted by -128). Columns [C * k0 * k1 * k2, kp) are 0.
struct Im2ColDesc {
  int64_t batch = 0, channels = 0;
  PoolDesc geo;  // geo.planes unused
  int64_t kp = 0;
  bool channels_last = false;
  uint8_t pad_value = 0;
  uint8_t xor_mask = 0;
};
cudaError_t im2col(const void* x, void* col, const Im2ColDesc& d, cudaStream_t stream);
// The channels-last 2-D im2col: col [rows, kp] bytes from x [N, H, W, C] bytes, row
// (n * OH + oh) * OW + ow, column (a * KW + b) * C + c (W's [M, KH, KW, C] order) reading
// x[n, oh * SH - PH + a * DH, ow * SW - PW + b * DW, c] (pad_value outside), XORed with xor_mask;
// columns [KH * KW * C, kp) are 0. Moves 16, 8, 4 or 1 bytes per thread (the largest dividing C
// and kp). rows must be below 2^31.
struct Im2ColNhwcDesc {
  int32_t batch = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0;
  int32_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t kp = 0;
  uint8_t pad_value = 0;
  uint8_t xor_mask = 0;
};
cudaError_t im2col_nhwc(const void* x, void* col, const Im2ColNhwcDesc& d, cudaStream_t stream);
// y[i] = x[i] ^ mask over n bytes (uint8 -> int8 activations).
cudaError_t xor_bytes(const void* x, void* y, int64_t n, uint8_t mask, cudaStream_t stream);

// After an integer (or float, unscaled) product acc with rows = batch * P positions and
// cols = output channels:
//   T = (acc - x_zp * colsum[c]) * colscale[c] + bias[c] + R;  T = act(T)
//   Y = T (float32) or quantize(T, y_scale, y_zp) (int8/uint8/float8e4m3fn/float8e5m2).
// Layouts of acc and of Y (and R): channels-first (b * cols + c) * P + p, or [rows, cols]
// row * cols + c with row = b * P + p (the same when P = 1). colsum may be null (x_zp
// ignored); bias and residual may be null.
struct QEpilogue {
  const void* acc = nullptr;
  bool acc_int32 = true;  // else float32 (or float16 with acc_half)
  bool acc_half = false;
  bool acc_channels_first = false;
  int64_t rows = 0, cols = 0, positions = 1;
  bool channels_first = false;  // Y's (and R's) layout
  const int32_t* colsum = nullptr;
  int32_t x_zp = 0;
  const float* colscale = nullptr;  // cols values
  const float* bias = nullptr;
  const void* residual = nullptr;
  DataType residual_t = DataType::kFloat32;  // float32, or int8/uint8/float8 with r_scale/r_zp
  float r_scale = 1.0f, r_zp = 0.0f;
  Act act = Act::kNone;
  float alpha = 0.0f, beta = 0.0f;
  void* y = nullptr;
  DataType y_t = DataType::kFloat32;
  float y_scale = 1.0f, y_zp = 0.0f;
  // grid0 > 0 (row-major products only): rows viewed [grid0, grid1] go to Y (and come from R)
  // transposed, [grid1, grid0] (a following Reshape + Transpose(1, 0, 2)).
  int64_t grid0 = 0, grid1 = 0;
  // parts > 0 (row-major products only, not with grid0): the columns split into `parts` equal
  // blocks, Y [parts, rows, cols / parts] (the packed QKV projection's split into Q, K, V).
  int64_t parts = 0;
  // part_quant (with parts <= kMaxParts and a quantized Y): block p quantized by its own scale,
  // after the graph's scalar Mul (op 1) / Div (op 2) by part_pre[p] (the attention's quantizers
  // of Q, K and V moved here).
  static constexpr int kMaxParts = 4;
  bool part_quant = false;
  float part_scale[kMaxParts] = {1, 1, 1, 1}, part_pre[kMaxParts] = {1, 1, 1, 1};
  int part_pre_op[kMaxParts] = {0, 0, 0, 0};
};
cudaError_t q_epilogue(const QEpilogue& e, cudaStream_t stream);
// A product whose float32 Y (a transformer's residual stream) feeds a LayerNormalization over
// its cols and a per-tensor QuantizeLinear: Y as q_epilogue writes it (row-major, no activation,
// no parts; grid0 allowed) and ln.y = the quantized normalised rows of Y, row r of Y at row
// ln.q's grid row of r. cols % 8 == 0, cols <= 2,048, 16-byte aligned operands (ln.y 8), else
// cudaErrorNotSupported (nothing launched: run q_epilogue and layer_norm_quantize).
struct LnEpilogue {
  const float* scale = nullptr;
  const float* bias = nullptr;  // may be null
  float eps = 1e-5f;
  void* y = nullptr;
  LnQuant q;
};
cudaError_t q_epilogue_layer_norm(const QEpilogue& e, const LnEpilogue& ln, cudaStream_t stream);
// Depthwise int8 / uint8 convolution, channels-last X [n, h, w, c] and Y [n, oh, ow, c], W int8
// packed [kh * kw, c], with e's epilogue (row-major, cols = c) fused; c % 4 == 0 and 4-byte
// aligned pointers, else cudaErrorNotSupported (nothing launched).
// kRows: the row-tiled kernel where it has an instance (kernel width 3 / 5 / 7, stride 1 or 2,
// no column dilation), else the per-pixel one; kPixel: always the per-pixel kernel (the tests'
// and the micro benchmark's second candidate).
enum class DepthwiseVariant : int32_t { kRows, kPixel };
struct DepthwiseDesc {
  int32_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 0, kw = 0, sh = 1, sw = 1, ph = 0,
          pw = 0, dh = 1, dw = 1;
  int32_t x_zp = 0;
  DepthwiseVariant variant = DepthwiseVariant::kRows;
};
// w_taps4 (optional): the same weights packed [ceil(taps / 4)][C][4] (four consecutive taps of
// a channel per word, zero past the last tap): int8 X without zero point, C % 16 == 0 then sum
// four taps per dp4a (TRTUTILS_CUDA_INT8_DEPTHWISE_DP4A=0: never).
cudaError_t qconv_depthwise(const void* x, bool x_unsigned, const void* w, const DepthwiseDesc& d,
                            const QEpilogue& e, cudaStream_t stream, const void* w_taps4 = nullptr);
// Depthwise float32 / float16 / bfloat16 convolution, channels-last X [n, h, w, c] and Y, W of
// dtype dt packed [kh * kw, c]; Y = act(conv + bias[c] + residual) with bias (c values) and
// residual (Y's shape) of dt, each may be null. c a multiple of 16 bytes and 16-byte aligned
// pointers, else cudaErrorNotSupported (nothing launched).
cudaError_t conv_depthwise(DataType dt, const void* x, const void* w, const void* bias,
                           const void* residual, void* y, const DepthwiseDesc& d, Act act,
                           float alpha, float beta, cudaStream_t stream);

// Implicit-GEMM 2-D convolution (qconv_igemm.cu), channels-last: X [n, h, w, c] int8 (zero point
// 0) or float8 E4M3 (fp8), W of the same kind packed [k][kh][kw][c], Y [n, oh, ow, k] = e's
// epilogue (row-major, cols = k; e.colscale = x_scale * w_scale, no colsum) of the int32
// (float32) sums. c % 16 == 0, k % 16 == 0, 16-byte aligned pointers, fewer than 2^31 elements
// per tensor, else cudaErrorNotSupported (nothing launched). fp8 needs SM >= 89.
struct IgemmDesc {
  int32_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, k = 0, kh = 0, kw = 0, sh = 1, sw = 1, ph = 0,
          pw = 0, dh = 1, dw = 1;
};
cudaError_t qconv_igemm(const void* x, const void* w, const IgemmDesc& d, bool fp8,
                        const QEpilogue& e, cudaStream_t stream);
// Its persistent streaming variant for pointwise convolutions (qconv_pointwise.cu: 1x1, no
// padding, C % 16 == 0, K % 16 == 0, the short epilogue, and C * stride^2 <= 1024; where
// wgmma_available(), C * stride^2 <= 256, or <= 512 for int8 Y with K <= 128), which qconv_igemm
// takes when it fits; TRTUTILS_CUDA_QPOINTWISE=0 (read at each call): never.
bool qconv_pointwise_fits(const IgemmDesc& d, const QEpilogue& e);
cudaError_t qconv_pointwise(const void* x, const void* w, const IgemmDesc& d, bool fp8,
                            const QEpilogue& e, cudaStream_t stream);
// Whether qconv_igemm runs its TMA matrix-product kernel (Hopper, wgmma_available()): 1x1, stride
// 1, no padding, C and K multiples of 128 with C >= 256; float8, and int8 only with
// TRTUTILS_CUDA_TMA_GEMM=2 (0: never; read at each call). It comes before the pointwise kernel.
bool qconv_tma_fits(const IgemmDesc& d, bool fp8);
// Whether qconv_igemm runs its Hopper warpgroup-MMA kernel: the build has sm_90a code
// (TRTUTILS_CUDA_ARCHS with 90a), the current device is compute capability 9.0, and
// TRTUTILS_CUDA_WGMMA is not 0 (read at each call).
bool wgmma_available();

// Float32 2-D convolution with few input channels (conv_small_c.cu: the stem of image models)
// on the TF32 tensor cores (warpgroup MMA where wgmma_available(), else mma.sync): X NCHW or
// NHWC float32, one group, Y = act(conv + bias) as float32 or quantized per tensor
// (round(y / y_scale) + y_zp, saturating: int8, uint8, float8), NCHW or NHWC. W is packed by
// small_c_pack_weights (mma fragment order, TF32-rounded). Problems small_c_supported refuses
// (C > kSmallCMaxChannels, R * S * C > kSmallCMaxReduction, a patch larger than kSmallCMaxPatch
// floats, 2^31 elements) are cudaErrorNotSupported (nothing launched).
constexpr int kSmallCMaxChannels = 4;
constexpr int kSmallCMaxReduction = 256;
constexpr int kSmallCMaxPatch = 8192;
struct SmallCDesc {
  int32_t n = 0, c = 0, h = 0, w = 0, k = 0, kh = 0, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1,
          dw = 1, oh = 0, ow = 0;
  int32_t kred = 0, kred_pad = 0;  // kh * kw * c, and rounded up to a multiple of 8
  bool x_nhwc = false, y_nhwc = false;
  Act act = Act::kNone;
  float alpha = 0.0f, beta = 0.0f;
  DataType y_t = DataType::kFloat32;
  float y_scale = 1.0f, y_zp = 0.0f;
};
bool small_c_supported(const SmallCDesc& d);
// W [k, c, kh, kw] (host) in the kernel's order.
std::vector<float> small_c_pack_weights(const float* w_kcrs, const SmallCDesc& d);
cudaError_t conv_small_c(const SmallCDesc& d, const float* x, const float* w_packed,
                         const float* bias, void* y, cudaStream_t stream);

// True when this process' device can run the kernels compiled into this build (the error of
// a trivial launch otherwise).
cudaError_t probe_kernels();

// ---- detection -----------------------------------------------------------------------------
// com.trtutils::EfficientNMS (ops/detection_ops.h), all images at once; boxes / scores float32
// or float16 (half), outputs as the op defines them. batch * anchors * classes < 2^31.
struct NmsArgs {
  int64_t batch = 0, anchors = 0, classes = 0, max_out = 0, background_class = -1;
  float score_threshold = 0, iou_threshold = 0;
  bool center_size = false, class_agnostic = false, half = false;
  const void* boxes = nullptr;   // [batch, anchors, 4]
  const void* scores = nullptr;  // [batch, anchors, classes]
  int* num_dets = nullptr;       // [batch]
  float* det_boxes = nullptr;    // [batch, max_out, 4]
  float* det_scores = nullptr;   // [batch, max_out]
  int* det_classes = nullptr;    // [batch, max_out]
};
// Byte offsets of the parts of the scratch buffer efficient_nms needs (total bytes in all).
struct NmsScratch {
  size_t keys = 0, sorted = 0, offsets = 0, kept_boxes = 0, kept_classes = 0, cub_temp = 0,
         cub_bytes = 0, total = 0;
};
NmsScratch nms_scratch_layout(const NmsArgs& a);
cudaError_t efficient_nms(const NmsArgs& a, void* scratch, cudaStream_t stream);

}  // namespace trtutils::cuda::k
