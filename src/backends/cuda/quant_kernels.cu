// Cast, QuantizeLinear / DequantizeLinear and the epilogue of the quantized islands' integer
// (or float8) products, with the CPU kernels' arithmetic: x / scale in float32 (a division),
// round half to even, saturation; float8 through the CUDA conversions (round to nearest even).
#include <algorithm>
#include <cstdlib>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/kernel_switches.h"

namespace trtutils::cuda::k {

namespace {

// ---- Cast: every element through double (floats), int64 (signed) or uint64 (unsigned, bool).
enum class Inter : int { kDouble, kInt64, kUInt64 };

__host__ __device__ inline bool is_float_t(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16 ||
         t == DataType::kBFloat16 || t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E5M2;
}
__host__ __device__ inline bool is_signed_t(DataType t) {
  return t == DataType::kInt8 || t == DataType::kInt16 || t == DataType::kInt32 ||
         t == DataType::kInt64;
}

struct Value {
  double d;
  int64_t s;
  uint64_t u;
};

__device__ __forceinline__ Value load_value(DataType t, const void* p, int64_t i) {
  Value v{0.0, 0, 0};
  if (t == DataType::kFloat32) {
    v.d = static_cast<const float*>(p)[i];
  } else if (t == DataType::kFloat64) {
    v.d = static_cast<const double*>(p)[i];
  } else if (t == DataType::kFloat16) {
    v.d = __half2float(static_cast<const __half*>(p)[i]);
  } else if (t == DataType::kBFloat16) {
    v.d = __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  } else if (t == DataType::kFloat8E4M3FN) {
    v.d = to_float(E4M3{static_cast<const uint8_t*>(p)[i]});
  } else if (t == DataType::kFloat8E5M2) {
    v.d = to_float(E5M2{static_cast<const uint8_t*>(p)[i]});
  } else if (t == DataType::kInt8) {
    v.s = static_cast<const int8_t*>(p)[i];
  } else if (t == DataType::kInt16) {
    v.s = static_cast<const int16_t*>(p)[i];
  } else if (t == DataType::kInt32) {
    v.s = static_cast<const int32_t*>(p)[i];
  } else if (t == DataType::kInt64) {
    v.s = static_cast<const int64_t*>(p)[i];
  } else if (t == DataType::kUInt8 || t == DataType::kBool) {
    v.u = static_cast<const uint8_t*>(p)[i];
  } else if (t == DataType::kUInt16) {
    v.u = static_cast<const uint16_t*>(p)[i];
  } else if (t == DataType::kUInt32) {
    v.u = static_cast<const uint32_t*>(p)[i];
  } else if (t == DataType::kUInt64) {
    v.u = static_cast<const uint64_t*>(p)[i];
  }
  return v;
}

// Float -> integer as the CPU's float_to_int: NaN -> 0, truncation, clamped to int64 (uint64
// for uint64 targets), then wrapped to the target width.
__device__ __forceinline__ uint64_t float_to_bits(double d, bool to_u64) {
  if (isnan(d)) return 0;
  if (to_u64) {
    if (d >= 18446744073709551616.0) return ~uint64_t{0};
    if (d >= 9223372036854775808.0) return static_cast<uint64_t>(d);
  }
  if (d >= 9223372036854775808.0) return static_cast<uint64_t>(INT64_MAX);
  if (d <= -9223372036854775808.0) return static_cast<uint64_t>(INT64_MIN);
  return static_cast<uint64_t>(static_cast<int64_t>(d));
}

template <typename T>
__device__ __forceinline__ void put(void* p, int64_t i, T v) {
  static_cast<T*>(p)[i] = v;
}

__device__ __forceinline__ void store_value(DataType t, void* p, int64_t i, Inter in,
                                            const Value& v, bool saturate) {
  if (t == DataType::kBool) {
    const bool b = in == Inter::kDouble ? v.d != 0.0 : (in == Inter::kInt64 ? v.s != 0 : v.u != 0);
    put<uint8_t>(p, i, b ? 1 : 0);
    return;
  }
  if (is_float_t(t)) {
    const double d = in == Inter::kDouble ? v.d
                                          : (in == Inter::kInt64 ? static_cast<double>(v.s)
                                                                 : static_cast<double>(v.u));
    const float f = static_cast<float>(d);
    if (t == DataType::kFloat32) {
      put<float>(p, i, f);
    } else if (t == DataType::kFloat64) {
      put<double>(p, i, d);
    } else if (t == DataType::kFloat16) {
      put<__half>(p, i, __double2half(d));
    } else if (t == DataType::kBFloat16) {
      put<__nv_bfloat16>(p, i, __double2bfloat16(d));
    } else {
      const __nv_saturation_t sat = saturate ? __NV_SATFINITE : __NV_NOSAT;
      put<uint8_t>(
          p, i,
          __nv_cvt_double_to_fp8(d, sat, t == DataType::kFloat8E4M3FN ? __NV_E4M3 : __NV_E5M2));
      (void)f;
    }
    return;
  }
  const uint64_t bits = in == Inter::kDouble
                            ? float_to_bits(v.d, t == DataType::kUInt64)
                            : (in == Inter::kInt64 ? static_cast<uint64_t>(v.s) : v.u);
  if (t == DataType::kInt8 || t == DataType::kUInt8) {
    put<uint8_t>(p, i, static_cast<uint8_t>(bits));
  } else if (t == DataType::kInt16 || t == DataType::kUInt16) {
    put<uint16_t>(p, i, static_cast<uint16_t>(bits));
  } else if (t == DataType::kInt32 || t == DataType::kUInt32) {
    put<uint32_t>(p, i, static_cast<uint32_t>(bits));
  } else {
    put<uint64_t>(p, i, bits);
  }
}

__global__ void cast_kernel(DataType from, DataType to, Inter in, const void* x, void* y, int64_t n,
                            bool saturate) {
  TRT_GRID_STRIDE(i, n) {
    store_value(to, y, i, in, load_value(from, x, i), saturate);
  }
}

// ---- Q / DQ ----------------------------------------------------------------------------------
__device__ __forceinline__ int64_t scale_index(const QuantDesc& q, int64_t i) {
  return q.per_axis ? (i / q.inner) % q.axis_len : 0;
}

// Stores v (already divided by the scale) into y[i] of dtype yt.
__device__ __forceinline__ void store_quantized(DataType yt, void* y, int64_t i, float v, float zp,
                                                bool saturate) {
  if (yt == DataType::kFloat8E4M3FN || yt == DataType::kFloat8E5M2) {
    put<uint8_t>(y, i,
                 __nv_cvt_float_to_fp8(v + zp, saturate ? __NV_SATFINITE : __NV_NOSAT,
                                       yt == DataType::kFloat8E4M3FN ? __NV_E4M3 : __NV_E5M2));
    return;
  }
  const IntRange r = range_of(yt);
  float q = rintf(v) + zp;
  if (isnan(q)) q = zp;
  q = q < r.lo ? r.lo : (q > r.hi ? r.hi : q);
  if (yt == DataType::kUInt8) {
    put<uint8_t>(y, i, static_cast<uint8_t>(q));
  } else if (yt == DataType::kInt8) {
    put<int8_t>(y, i, static_cast<int8_t>(q));
  } else if (yt == DataType::kUInt16) {
    put<uint16_t>(y, i, static_cast<uint16_t>(q));
  } else {
    put<int16_t>(y, i, static_cast<int16_t>(q));
  }
}

__device__ __forceinline__ float load_quantized(DataType t, const void* p, int64_t i) {
  if (t == DataType::kInt8) return static_cast<const int8_t*>(p)[i];
  if (t == DataType::kUInt8) return static_cast<const uint8_t*>(p)[i];
  if (t == DataType::kInt16) return static_cast<const int16_t*>(p)[i];
  if (t == DataType::kUInt16) return static_cast<const uint16_t*>(p)[i];
  if (t == DataType::kInt32) return static_cast<float>(static_cast<const int32_t*>(p)[i]);
  if (t == DataType::kFloat8E4M3FN) return to_float(E4M3{static_cast<const uint8_t*>(p)[i]});
  if (t == DataType::kFloat8E5M2) return to_float(E5M2{static_cast<const uint8_t*>(p)[i]});
  if (t == DataType::kFloat16) return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

template <typename T>
__global__ void quantize_kernel(DataType yt, const T* x, void* y, QuantDesc q, bool saturate) {
  TRT_GRID_STRIDE(i, q.n) {
    const int64_t s = scale_index(q, i);
    const float zp = q.zero_point ? q.zero_point[s] : 0.0f;
    store_quantized(yt, y, i, to_float(x[i]) / q.scale[s], zp, saturate);
  }
}

// Per-tensor float32 -> int8 / uint8, four elements per thread (16 bytes in, 4 out): the
// memory-bound case of activations entering a quantized island.
template <bool kSigned>
__global__ void quantize4_kernel(const float4* x, uint32_t* y, int64_t n4, const float* scale,
                                 const float* zero_point) {
  const float s = scale[0];
  const float zp = zero_point ? zero_point[0] : 0.0f;
  const float lo = kSigned ? -128.0f : 0.0f, hi = kSigned ? 127.0f : 255.0f;
  TRT_GRID_STRIDE(i, n4) {
    const float4 v = x[i];
    const float f[4] = {v.x, v.y, v.z, v.w};
    uint32_t out = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float q = rintf(f[k] / s) + zp;
      if (isnan(q)) q = zp;
      q = q < lo ? lo : (q > hi ? hi : q);
      const uint32_t byte =
          kSigned ? static_cast<uint8_t>(static_cast<int8_t>(q)) : static_cast<uint8_t>(q);
      out |= byte << (8 * k);
    }
    y[i] = out;
  }
}

// Per-tensor float32 / float16 -> float8, four elements per thread (one 32-bit store): the
// activations entering every quantized MatMul of a transformer.
template <typename T, bool kE4M3>
__global__ void quantize_fp8_x4_kernel(const T* x, uint32_t* y, int32_t n4, const float* scale,
                                       const float* zero_point, bool saturate) {
  const float s = scale[0];
  const float zp = zero_point ? zero_point[0] : 0.0f;
  for (int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x); i < n4;
       i += static_cast<int32_t>(gridDim.x * blockDim.x)) {
    float f[4];
    if constexpr (std::is_same_v<T, float>) {
      const float4 v = reinterpret_cast<const float4*>(x)[i];
      f[0] = v.x;
      f[1] = v.y;
      f[2] = v.z;
      f[3] = v.w;
    } else {
      const uint2 raw = reinterpret_cast<const uint2*>(x)[i];
      const T* h = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int k = 0; k < 4; ++k) f[k] = to_float(h[k]);
    }
    uint32_t out = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint32_t b = __nv_cvt_float_to_fp8(
          f[k] / s + zp, saturate ? __NV_SATFINITE : __NV_NOSAT, kE4M3 ? __NV_E4M3 : __NV_E5M2);
      out |= (b & 0xffu) << (8 * k);
    }
    y[i] = out;
  }
}

template <typename T>
__global__ void dequantize_kernel(DataType xt, const void* x, T* y, QuantDesc q) {
  TRT_GRID_STRIDE(i, q.n) {
    const int64_t s = scale_index(q, i);
    const float zp = q.zero_point ? q.zero_point[s] : 0.0f;
    y[i] = from_float<T>((load_quantized(xt, x, i) - zp) * q.scale[s]);
  }
}

// Where element (row, col) of a row-major product goes in Y (and comes from in R): e.grid0 > 0
// the transposed grid of rows, e.parts > 0 the column blocks, else row * cols + col.
template <typename I>
__device__ __forceinline__ I out_index(const QEpilogue& e, I row, I col) {
  const I cols = static_cast<I>(e.cols);
  if (e.parts > 0) {
    const I w = cols / static_cast<I>(e.parts);
    return (col / w * static_cast<I>(e.rows) + row) * w + col % w;
  }
  if (e.grid0 > 0) {
    const I g0 = static_cast<I>(e.grid0), g1 = static_cast<I>(e.grid1);
    row = (row % g1) * g0 + row / g1;
  }
  return row * cols + col;
}

// The quantization of part p's values (part_quant): its scalar pre-scaling, then its scale.
__device__ __forceinline__ float part_scaled(const QEpilogue& e, float v, int p) {
  // Selects instead of indexing: the arrays stay in the parameter bank.
  const float pre =
      p == 0 ? e.part_pre[0] : (p == 1 ? e.part_pre[1] : (p == 2 ? e.part_pre[2] : e.part_pre[3]));
  const int op = p == 0
                     ? e.part_pre_op[0]
                     : (p == 1 ? e.part_pre_op[1] : (p == 2 ? e.part_pre_op[2] : e.part_pre_op[3]));
  const float sc = p == 0
                       ? e.part_scale[0]
                       : (p == 1 ? e.part_scale[1] : (p == 2 ? e.part_scale[2] : e.part_scale[3]));
  if (op == 1) v *= pre;
  if (op == 2) v /= pre;
  return v / sc;
}

// v of column col as a quantized Y takes it, already divided by its scale.
__device__ __forceinline__ float scaled_for_y(const QEpilogue& e, float v, int64_t col) {
  if (!e.part_quant) return v / e.y_scale;
  return part_scaled(e, v, static_cast<int>(col / (e.cols / e.parts)));
}

// kRows: acc and Y both [rows, cols] (the channels-last and matrix-product case): element i
// reads acc[i] and channel i % cols, with 32-bit index arithmetic when I is int32_t; Y and R
// element o (i's row moved by e.grid0 / grid1).
template <bool kRows, typename I>
__global__ void q_epilogue_kernel(QEpilogue e, I n) {
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    I a, c, o = i;
    if constexpr (kRows) {
      a = i;
      c = i % static_cast<I>(e.cols);
      o = out_index(e, i / static_cast<I>(e.cols), c);
    } else {
      I b, p;
      const I cols = static_cast<I>(e.cols), positions = static_cast<I>(e.positions);
      if (e.channels_first) {
        p = i % positions;
        const I t = i / positions;
        c = t % cols;
        b = t / cols;
      } else {
        c = i % cols;
        const I row = i / cols;
        p = row % positions;
        b = row / positions;
      }
      a = e.acc_channels_first ? (b * cols + c) * positions + p : (b * positions + p) * cols + c;
    }
    float v;
    if (e.acc_int32) {
      int32_t acc = static_cast<const int32_t*>(e.acc)[a];
      if (e.colsum) acc -= e.x_zp * e.colsum[c];
      v = static_cast<float>(acc);
    } else if (e.acc_half) {
      v = __half2float(static_cast<const __half*>(e.acc)[a]);
    } else {
      v = static_cast<const float*>(e.acc)[a];
    }
    v *= e.colscale[c];
    if (e.bias) v += e.bias[c];
    if (e.residual) {
      if (e.residual_t == DataType::kFloat32) {
        v += static_cast<const float*>(e.residual)[o];
      } else {
        v += (load_quantized(e.residual_t, e.residual, o) - e.r_zp) * e.r_scale;
      }
    }
    v = apply_act(e.act, v, e.alpha, e.beta);
    if (e.y_t == DataType::kFloat32) {
      put<float>(e.y, o, v);
    } else {
      store_quantized(e.y_t, e.y, o, scaled_for_y(e, v, c), e.y_zp, true);
    }
  }
}

// Channels 4*c4 .. 4*c4+3 of vector i of Y and R (row-major [rows, cols], cols % 4 == 0) from
// their accumulations v (as float): scales, bias, residual, activation, the store.
// part: the column block of channels 4*c4 .. 4*c4+3 (e.parts > 0; one block holds all four).
__device__ __forceinline__ void epilogue4(const QEpilogue& e, float v[4], int32_t c4, int32_t i,
                                          int part = 0) {
  const float4 cs = reinterpret_cast<const float4*>(e.colscale)[c4];
  v[0] *= cs.x;
  v[1] *= cs.y;
  v[2] *= cs.z;
  v[3] *= cs.w;
  if (e.bias) {
    const float4 b = reinterpret_cast<const float4*>(e.bias)[c4];
    v[0] += b.x;
    v[1] += b.y;
    v[2] += b.z;
    v[3] += b.w;
  }
  if (e.residual && e.residual_t == DataType::kFloat32) {
    const float4 r = reinterpret_cast<const float4*>(e.residual)[i];
    v[0] += r.x;
    v[1] += r.y;
    v[2] += r.z;
    v[3] += r.w;
  } else if (e.residual) {
    const uint32_t r = reinterpret_cast<const uint32_t*>(e.residual)[i];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      v[k] += (byte_value(e.residual_t, (r >> (8 * k)) & 0xffu) - e.r_zp) * e.r_scale;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) v[k] = apply_act(e.act, v[k], e.alpha, e.beta);
  if (e.y_t != DataType::kFloat32) {
    uint32_t out = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      out |= byte_of(e.y_t, e.part_quant ? part_scaled(e, v[k], part) : v[k] / e.y_scale, e.y_zp)
             << (8 * k);
    reinterpret_cast<uint32_t*>(e.y)[i] = out;
  } else {
    reinterpret_cast<float4*>(e.y)[i] = make_float4(v[0], v[1], v[2], v[3]);
  }
}

// Depthwise int8 / uint8 convolution (one group per channel, multiplier 1), channels-last:
// four channels per thread (4-byte loads of X and of W packed [taps, C]), int32 sums of
// (x - x_zp) * w over the in-bounds taps (padding holds the zero point, contributing nothing),
// then the epilogue in the same thread.
template <bool kUnsigned>
__global__ void qconv_depthwise_kernel(const uint32_t* x, const uint32_t* w, DepthwiseDesc d,
                                       QEpilogue e, int32_t n4) {
  const int32_t c4n = d.c / 4;
  for (int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x); i < n4;
       i += static_cast<int32_t>(gridDim.x * blockDim.x)) {
    const int32_t c4 = i % c4n;
    int32_t acc[4] = {0, 0, 0, 0};
    depthwise_taps(d, i / c4n, [&](int32_t pixel, int32_t tap) {
      const uint32_t xv = x[pixel * c4n + c4];
      const uint32_t wv = w[tap * c4n + c4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int32_t xb = kUnsigned ? static_cast<int32_t>((xv >> (8 * k)) & 0xffu)
                                     : static_cast<int32_t>(static_cast<int8_t>(xv >> (8 * k)));
        const int32_t wb = static_cast<int8_t>(wv >> (8 * k));
        acc[k] += (xb - d.x_zp) * wb;
      }
    });
    float v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = static_cast<float>(acc[k]);
    epilogue4(e, v, c4, i);
  }
}

// Sums over four taps of 16 channels with dp4a: xv[j] holds the 16 channels of tap j (zero for
// a tap outside the image or past the last one), wv[q] channels 4q..4q+3 with their four taps
// per word (W packed [tap / 4][C][tap % 4], zero past the last tap). Each 4 x 4 byte block
// (four taps x four channels) is transposed with eight byte permutations into one word per
// channel: 12 instructions per 16 multiply-adds instead of ~48 (extract, extract, multiply-add).
__device__ __forceinline__ void dp4a_taps(int32_t (&acc)[16], const uint4 (&xv)[4],
                                          const uint4 (&wv)[4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    auto word = [q](const uint4& v) { return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w; };
    const uint32_t a0 = word(xv[0]), a1 = word(xv[1]), a2 = word(xv[2]), a3 = word(xv[3]);
    const uint32_t lo01 = __byte_perm(a0, a1, 0x5140), hi01 = __byte_perm(a0, a1, 0x7362);
    const uint32_t lo23 = __byte_perm(a2, a3, 0x5140), hi23 = __byte_perm(a2, a3, 0x7362);
    const uint4 ww = wv[q];
    acc[4 * q + 0] = __dp4a(static_cast<int>(__byte_perm(lo01, lo23, 0x5410)),
                            static_cast<int>(ww.x), acc[4 * q + 0]);
    acc[4 * q + 1] = __dp4a(static_cast<int>(__byte_perm(lo01, lo23, 0x7632)),
                            static_cast<int>(ww.y), acc[4 * q + 1]);
    acc[4 * q + 2] = __dp4a(static_cast<int>(__byte_perm(hi01, hi23, 0x5410)),
                            static_cast<int>(ww.z), acc[4 * q + 2]);
    acc[4 * q + 3] = __dp4a(static_cast<int>(__byte_perm(hi01, hi23, 0x7632)),
                            static_cast<int>(ww.w), acc[4 * q + 3]);
  }
}

// The same with 16 channels per thread (c % 16 == 0, int8 X and 16-byte aligned operands):
// 16-byte loads of X and W, and the short epilogue (FastEpilogue) when it applies, with one
// 16-byte load of the residual and one 16-byte store; otherwise epilogue4 four times.
// kDp4a (X zero point 0): the taps four at a time through dp4a_taps, W packed by taps (w4).
template <bool kDp4a>
__global__ void qconv_depthwise16_kernel(const uint4* x, const uint4* w, const uint4* w4,
                                         DepthwiseDesc d, QEpilogue e, int32_t n16) {
  const int32_t c16n = d.c / 16;
  const FastEpilogue f = fast_epilogue(e);
  for (int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x); i < n16;
       i += static_cast<int32_t>(gridDim.x * blockDim.x)) {
    const int32_t c16 = i % c16n;
    int32_t acc[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) acc[k] = 0;
    if constexpr (kDp4a) {
      const int32_t row = i / c16n;
      const int32_t ow = row % d.ow, oh = (row / d.ow) % d.oh, n = row / (d.ow * d.oh);
      const int32_t taps = d.kh * d.kw;
      int32_t r = 0, s = 0;  // the next tap's kernel row and column
      for (int32_t t0 = 0; t0 < taps; t0 += 4) {
        uint4 xv[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          xv[j] = make_uint4(0u, 0u, 0u, 0u);
          if (t0 + j < taps) {
            const int32_t ih = oh * d.sh - d.ph + r * d.dh, iw = ow * d.sw - d.pw + s * d.dw;
            if (ih >= 0 && ih < d.h && iw >= 0 && iw < d.w)
              xv[j] = x[((n * d.h + ih) * d.w + iw) * c16n + c16];
            if (++s == d.kw) {
              s = 0;
              ++r;
            }
          }
        }
        const uint4* wg = w4 + (t0 / 4) * (d.c / 4) + c16 * 4;
        const uint4 wv[4] = {wg[0], wg[1], wg[2], wg[3]};
        dp4a_taps(acc, xv, wv);
      }
    } else {
      depthwise_taps(d, i / c16n, [&](int32_t pixel, int32_t tap) {
        const uint4 xv = x[pixel * c16n + c16];
        const uint4 wv = w[tap * c16n + c16];
        const uint32_t xw[4] = {xv.x, xv.y, xv.z, xv.w}, ww[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
        for (int k = 0; k < 16; ++k) {
          const int32_t xb = static_cast<int8_t>(xw[k / 4] >> (8 * (k % 4)));
          const int32_t wb = static_cast<int8_t>(ww[k / 4] >> (8 * (k % 4)));
          acc[k] += (xb - d.x_zp) * wb;
        }
      });
    }
    if (f.on) {
      const int32_t c0 = c16 * 16;
      uint32_t rw[4] = {0, 0, 0, 0};
      if (e.residual) {
        const uint4 rv = reinterpret_cast<const uint4*>(e.residual)[i];
        rw[0] = rv.x;
        rw[1] = rv.y;
        rw[2] = rv.z;
        rw[3] = rv.w;
      }
      uint32_t out[4] = {0, 0, 0, 0};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float4 cs = reinterpret_cast<const float4*>(e.colscale + c0)[q];
        const float4 bs = e.bias ? reinterpret_cast<const float4*>(e.bias + c0)[q]
                                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        const float a4[4] = {cs.x, cs.y, cs.z, cs.w}, b4[4] = {bs.x, bs.y, bs.z, bs.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          float y = (static_cast<float>(acc[4 * q + k]) * a4[k] + b4[k]) * f.inv_y;
          if (e.residual) y += fast_residual<false>((rw[q] >> (8 * k)) & 0xffu) * f.r_mul + f.r_add;
          out[q] |= fast_byte<false>(f.act(y), f.y_zp) << (8 * k);
        }
      }
      reinterpret_cast<uint4*>(e.y)[i] = make_uint4(out[0], out[1], out[2], out[3]);
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) v[k] = static_cast<float>(acc[4 * q + k]);
        epilogue4(e, v, c16 * 4 + q, i * 4 + q);
      }
    }
  }
}

// The row-major epilogue ([rows, cols] accumulator and Y, cols % 4 == 0), four channels per
// thread: vector loads of the accumulator (kAcc 0 int32, 1 float32, 2 float16), the channel
// constants and the residual, one 4-byte (or 16-byte float) store. Same arithmetic as
// q_epilogue_kernel, element for element.
template <int kAcc>
__global__ void q_epilogue_x4_kernel(QEpilogue e, int32_t n4) {
  const int32_t cols4 = static_cast<int32_t>(e.cols / 4);
  const int32_t rows = static_cast<int32_t>(e.rows);
  const int32_t w4 = e.parts > 0 ? cols4 / static_cast<int32_t>(e.parts) : cols4;  // per block
  for (int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x); i < n4;
       i += static_cast<int32_t>(gridDim.x * blockDim.x)) {
    const int32_t c4 = i % cols4;
    int32_t o = i, part = 0;
    if (e.parts > 0) {
      part = c4 / w4;
      o = (part * rows + i / cols4) * w4 + (c4 - part * w4);
    } else if (e.grid0 > 0) {
      o = out_index(e, i / cols4, c4 * 4) / 4;
    }
    float v[4];
    if constexpr (kAcc == 0) {
      const int4 a = reinterpret_cast<const int4*>(e.acc)[i];
      int32_t q[4] = {a.x, a.y, a.z, a.w};
      if (e.colsum) {
        const int4 cs = reinterpret_cast<const int4*>(e.colsum)[c4];
        q[0] -= e.x_zp * cs.x;
        q[1] -= e.x_zp * cs.y;
        q[2] -= e.x_zp * cs.z;
        q[3] -= e.x_zp * cs.w;
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = static_cast<float>(q[k]);
    } else if constexpr (kAcc == 1) {
      const float4 a = reinterpret_cast<const float4*>(e.acc)[i];
      v[0] = a.x;
      v[1] = a.y;
      v[2] = a.z;
      v[3] = a.w;
    } else {
      const uint2 raw = reinterpret_cast<const uint2*>(e.acc)[i];
      const __half* h = reinterpret_cast<const __half*>(&raw);
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = __half2float(h[k]);
    }
    epilogue4(e, v, c4, o, part);
  }
}

bool aligned_to(const void* p, size_t a) {
  return reinterpret_cast<uintptr_t>(p) % a == 0;
}

// The row-major epilogue specialised at compile time, eight channels per thread: kAcc 0 int32,
// 1 float32, 2 float16 accumulators (one 16-byte load of float16); kAct 0 none, 1 ReLU, 2 erf
// GELU, 3 SiLU; kByte: Y int8 / uint8 / float8, else float32. epilogue4's runtime switches cost
// ~110-200 instructions per element, which left the float8 transformer's GEMM epilogues
// compute-bound (ViT-B/16's MLP-up: 0.54 ms where its bytes take 0.12). Y's scale (or a part's
// pre-scaling and scale) is applied as one multiplication, X8Scales::inv: within one
// quantization step of q_epilogue_kernel's division.
struct X8Scales {
  float inv[QEpilogue::kMaxParts];
};

// A thread keeps one 8-column chunk (its scales, bias, column sums and output quantizer in
// registers) and walks rows r0, r0 + rb, ... two at a time, both rows' loads issued before either
// is computed: loading the column constants per element (four 16-byte loads per 16 bytes of
// float16 products) and one row in flight per thread had held ViT-B/16's passes at ~2 TB/s.
template <int kAcc>
struct X8Raw {
  uint4 a, b;  // float16: a only
};
template <int kAcc>
__device__ __forceinline__ X8Raw<kAcc> x8_load(const QEpilogue& e, int64_t i) {
  X8Raw<kAcc> r;
  if constexpr (kAcc == 2) {
    r.a = __ldcs(reinterpret_cast<const uint4*>(e.acc) + i);
    r.b = make_uint4(0, 0, 0, 0);
  } else {
    r.a = __ldcs(reinterpret_cast<const uint4*>(e.acc) + 2 * i);
    r.b = __ldcs(reinterpret_cast<const uint4*>(e.acc) + 2 * i + 1);
  }
  return r;
}
// The residual's 8 values at output chunk o (float32: two 16-byte loads; bytes: one 8-byte).
struct X8Res {
  uint4 a, b;
};
__device__ __forceinline__ X8Res x8_residual(const QEpilogue& e, int64_t o) {
  X8Res r{make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
  if (!e.residual) return r;
  if (e.residual_t == DataType::kFloat32) {
    r.a = reinterpret_cast<const uint4*>(e.residual)[2 * o];
    r.b = reinterpret_cast<const uint4*>(e.residual)[2 * o + 1];
  } else {
    const uint2 v = reinterpret_cast<const uint2*>(e.residual)[o];
    r.a = make_uint4(v.x, v.y, 0, 0);
  }
  return r;
}
// Eight floats at chunk c of p (8-float chunks, 16-byte aligned), or zeros when p is null.
__device__ __forceinline__ void load8(const float* p, int32_t c, float (&v)[8]) {
  if (!p) {
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = 0.0f;
    return;
  }
  const float4 a = reinterpret_cast<const float4*>(p)[2 * c];
  const float4 b = reinterpret_cast<const float4*>(p)[2 * c + 1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
  v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
// Chunk c8's column constants: scales, bias (0 without), zero-point corrections x_zp * colsum.
template <int kAcc>
__device__ __forceinline__ void x8_constants(const QEpilogue& e, int32_t c8, float (&cs)[8],
                                             float (&b)[8], int32_t (&zs)[8]) {
  load8(e.colscale, c8, cs);
  load8(e.bias, c8, b);
#pragma unroll
  for (int k = 0; k < 8; ++k) zs[k] = 0;
  if (kAcc == 0 && e.colsum) {
    const int4 s0i = reinterpret_cast<const int4*>(e.colsum)[2 * c8];
    const int4 s1i = reinterpret_cast<const int4*>(e.colsum)[2 * c8 + 1];
    const int32_t c[8] = {s0i.x, s0i.y, s0i.z, s0i.w, s1i.x, s1i.y, s1i.z, s1i.w};
#pragma unroll
    for (int k = 0; k < 8; ++k) zs[k] = e.x_zp * c[k];
  }
}
// One chunk's values before the activation: the sums, v * cs + b, the residual.
template <int kAcc>
__device__ __forceinline__ void x8_values(const QEpilogue& e, const X8Raw<kAcc>& raw,
                                          const X8Res& res, const float (&cs)[8],
                                          const float (&b)[8], const int32_t (&zs)[8],
                                          float (&v)[8]) {
  if constexpr (kAcc == 2) {
    const uint32_t w[4] = {raw.a.x, raw.a.y, raw.a.z, raw.a.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[k]));
      v[2 * k] = f.x;
      v[2 * k + 1] = f.y;
    }
  } else {
    const uint32_t w[8] = {raw.a.x, raw.a.y, raw.a.z, raw.a.w, raw.b.x, raw.b.y, raw.b.z, raw.b.w};
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      if constexpr (kAcc == 1) {
        v[k] = __uint_as_float(w[k]);
      } else {
        v[k] = static_cast<float>(static_cast<int32_t>(w[k]) - zs[k]);
      }
    }
  }
#pragma unroll
  for (int k = 0; k < 8; ++k) v[k] = v[k] * cs[k] + b[k];
  if (e.residual && e.residual_t == DataType::kFloat32) {
    const uint32_t r[8] = {res.a.x, res.a.y, res.a.z, res.a.w, res.b.x, res.b.y, res.b.z, res.b.w};
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] += __uint_as_float(r[k]);
  } else if (e.residual) {
#pragma unroll
    for (int k = 0; k < 8; ++k)
      v[k] += (byte_value(e.residual_t, ((k < 4 ? res.a.x : res.a.y) >> (8 * (k % 4))) & 0xffu) -
               e.r_zp) *
              e.r_scale;
  }
}

// One chunk: x8_values, the activation, the store at chunk o.
template <int kAcc, int kAct, bool kByte>
__device__ __forceinline__ void x8_chunk(const QEpilogue& e, const X8Raw<kAcc>& raw,
                                         const X8Res& res, const float (&cs)[8],
                                         const float (&b)[8], const int32_t (&zs)[8], float inv,
                                         int64_t o) {
  float v[8];
  x8_values<kAcc>(e, raw, res, cs, b, zs, v);
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    if constexpr (kAct == 1) v[k] = v[k] > 0.0f ? v[k] : 0.0f;
    if constexpr (kAct == 2) v[k] = gelu_erf(v[k]);
    if constexpr (kAct == 3) v[k] = v[k] * (1.0f / (1.0f + expf(-v[k])));
  }
  if constexpr (kByte) {
    uint32_t out[2] = {0, 0};
    if (e.y_t == DataType::kFloat8E4M3FN || e.y_t == DataType::kFloat8E5M2) {
      const __nv_fp8_interpretation_t it = e.y_t == DataType::kFloat8E4M3FN ? __NV_E4M3 : __NV_E5M2;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const uint32_t pair = __nv_cvt_float2_to_fp8x2(
            make_float2(v[2 * k] * inv, v[2 * k + 1] * inv), __NV_SATFINITE, it);
        out[k / 2] |= (pair & 0xffffu) << (16 * (k % 2));
      }
    } else {
      const IntRange r = range_of(e.y_t);
      const int32_t zp = static_cast<int32_t>(e.y_zp), lo = static_cast<int32_t>(r.lo),
                    hi = static_cast<int32_t>(r.hi);
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const int32_t q = min(max(__float2int_rn(v[k] * inv) + zp, lo), hi);
        out[k / 4] |= (static_cast<uint32_t>(q) & 0xffu) << (8 * (k % 4));
      }
    }
    reinterpret_cast<uint2*>(e.y)[o] = make_uint2(out[0], out[1]);
  } else {
    reinterpret_cast<float4*>(e.y)[2 * o] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(e.y)[2 * o + 1] = make_float4(v[4], v[5], v[6], v[7]);
  }
}

template <int kAcc, int kAct, bool kByte>
__global__ void __launch_bounds__(kThreads)
    q_epilogue_x8_kernel(QEpilogue e, X8Scales sc, int32_t rb) {
  const int32_t cols8 = static_cast<int32_t>(e.cols / 8);
  const int32_t rows = static_cast<int32_t>(e.rows);
  const int32_t t = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= cols8 * rb) return;
  const int32_t c8 = t % cols8, r0 = t / cols8;
  // The output chunk of (row, c8): part-major blocks, the transposed grid of rows, or in place.
  int32_t part = 0, w8 = cols8, pc = c8;
  if (e.parts > 0) {
    w8 = cols8 / static_cast<int32_t>(e.parts);
    part = c8 / w8;
    pc = c8 - part * w8;
  }
  auto out_chunk = [&](int32_t row) -> int64_t {
    if (e.parts > 0) return (static_cast<int64_t>(part) * rows + row) * w8 + pc;
    if (e.grid0 > 0) {
      const int32_t g0 = static_cast<int32_t>(e.grid0), g1 = static_cast<int32_t>(e.grid1);
      return (static_cast<int64_t>(row % g1) * g0 + row / g1) * cols8 + c8;
    }
    return static_cast<int64_t>(row) * cols8 + c8;
  };
  float cs[8], b[8];
  int32_t zs[8];
  x8_constants<kAcc>(e, c8, cs, b, zs);
  // Selects instead of indexing: the scales stay in the parameter bank.
  const float inv =
      part == 0 ? sc.inv[0] : (part == 1 ? sc.inv[1] : (part == 2 ? sc.inv[2] : sc.inv[3]));
  int32_t row = r0;
  for (; row + rb < rows; row += 2 * rb) {
    const int64_t i0 = static_cast<int64_t>(row) * cols8 + c8, i1 = i0 + int64_t{rb} * cols8;
    const int64_t o0 = out_chunk(row), o1 = out_chunk(row + rb);
    const X8Raw<kAcc> a0 = x8_load<kAcc>(e, i0), a1 = x8_load<kAcc>(e, i1);
    const X8Res q0 = x8_residual(e, o0), q1 = x8_residual(e, o1);
    x8_chunk<kAcc, kAct, kByte>(e, a0, q0, cs, b, zs, inv, o0);
    x8_chunk<kAcc, kAct, kByte>(e, a1, q1, cs, b, zs, inv, o1);
  }
  if (row < rows) {
    const int64_t o = out_chunk(row);
    x8_chunk<kAcc, kAct, kByte>(e, x8_load<kAcc>(e, static_cast<int64_t>(row) * cols8 + c8),
                                x8_residual(e, o), cs, b, zs, inv, o);
  }
}

// ---- the epilogue of a residual stream's product + LayerNormalization + QuantizeLinear
// One warp per product row: the row's chunks (lane + 32 i) loaded first, all of them in flight,
// then Y = v * cs + b + residual stored as float32 and kept in registers, the row's mean and
// variance (two passes over the registers) and the normalised row quantized at its own row
// (ln.q's transposed grid): the layer norm no longer reads Y back (ViT-B/16: 24 passes of
// 155 MB).
constexpr int kLnWarps = 4;
__device__ __forceinline__ int32_t grid_row(int32_t row, int64_t g0, int64_t g1) {
  return g0 > 0 ? static_cast<int32_t>((row % g1) * g0 + row / g1) : row;
}
template <int kAcc, int kChunks>
__global__ void __launch_bounds__(kLnWarps * 32) q_epilogue_ln_kernel(QEpilogue e, LnEpilogue ln) {
  const int32_t cols8 = static_cast<int32_t>(e.cols / 8);
  const int32_t row =
      static_cast<int32_t>(blockIdx.x) * kLnWarps + static_cast<int32_t>(threadIdx.x / 32);
  const int32_t lane = static_cast<int32_t>(threadIdx.x % 32);
  if (row >= e.rows) return;
  const int32_t orow = grid_row(row, e.grid0, e.grid1);
  X8Raw<kAcc> raw[kChunks];
  X8Res res[kChunks];
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int32_t c = lane + 32 * i;
    if (c >= cols8) continue;
    raw[i] = x8_load<kAcc>(e, static_cast<int64_t>(row) * cols8 + c);
    res[i] = x8_residual(e, static_cast<int64_t>(orow) * cols8 + c);
  }
  float v[kChunks][8];
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int32_t c = lane + 32 * i;
#pragma unroll
    for (int k = 0; k < 8; ++k) v[i][k] = 0.0f;
    if (c >= cols8) continue;
    float cs[8], b[8];
    int32_t zs[8];
    x8_constants<kAcc>(e, c, cs, b, zs);
    x8_values<kAcc>(e, raw[i], res[i], cs, b, zs, v[i]);
    const int64_t o = static_cast<int64_t>(orow) * cols8 + c;
    reinterpret_cast<float4*>(e.y)[2 * o] = make_float4(v[i][0], v[i][1], v[i][2], v[i][3]);
    reinterpret_cast<float4*>(e.y)[2 * o + 1] = make_float4(v[i][4], v[i][5], v[i][6], v[i][7]);
#pragma unroll
    for (int k = 0; k < 8; ++k) sum += v[i][k];
  }
  const float cols = static_cast<float>(e.cols);
  const float mean = warp_sum(sum) / cols;
  float sq = 0.0f;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    if (lane + 32 * i >= cols8) continue;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float d = v[i][k] - mean;
      sq += d * d;
    }
  }
  const float inv = rsqrtf(warp_sum(sq) / cols + ln.eps);
  const int64_t lrow = grid_row(orow, ln.q.grid0, ln.q.grid1);
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int32_t c = lane + 32 * i;
    if (c >= cols8) continue;
    float g[8], bb[8];
    load8(ln.scale, c, g);
    load8(ln.bias, c, bb);
    uint32_t out[2] = {0, 0};
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float o = (v[i][k] - mean) * inv * g[k] + bb[k];
      out[k / 4] |= byte_of(ln.q.y_t, o / ln.q.y_scale, ln.q.y_zp) << (8 * (k % 4));
    }
    reinterpret_cast<uint2*>(ln.y)[lrow * cols8 + c] = make_uint2(out[0], out[1]);
  }
}

template <int kAcc>
void launch_epilogue_ln(const QEpilogue& e, const LnEpilogue& ln, int32_t chunks,
                        cudaStream_t stream) {
  const unsigned g = static_cast<unsigned>((e.rows + kLnWarps - 1) / kLnWarps);
  constexpr int t = kLnWarps * 32;
  if (chunks <= 32)
    q_epilogue_ln_kernel<kAcc, 1><<<g, t, 0, stream>>>(e, ln);
  else if (chunks <= 64)
    q_epilogue_ln_kernel<kAcc, 2><<<g, t, 0, stream>>>(e, ln);
  else if (chunks <= 96)
    q_epilogue_ln_kernel<kAcc, 3><<<g, t, 0, stream>>>(e, ln);
  else if (chunks <= 128)
    q_epilogue_ln_kernel<kAcc, 4><<<g, t, 0, stream>>>(e, ln);
  else if (chunks <= 192)
    q_epilogue_ln_kernel<kAcc, 6><<<g, t, 0, stream>>>(e, ln);
  else
    q_epilogue_ln_kernel<kAcc, 8><<<g, t, 0, stream>>>(e, ln);
}

bool epilogue4_ok(const QEpilogue& e) {
  const bool byte_t = e.y_t == DataType::kInt8 || e.y_t == DataType::kUInt8 ||
                      e.y_t == DataType::kFloat8E4M3FN || e.y_t == DataType::kFloat8E5M2;
  if (e.cols % 4 != 0 || !(byte_t || e.y_t == DataType::kFloat32)) return false;
  if (e.parts > 0 && (e.cols / e.parts) % 4 != 0) return false;  // 4 columns in one block
  if (!aligned_to(e.y, byte_t ? 4 : 16) || !aligned_to(e.colscale, 16)) return false;
  if (e.bias && !aligned_to(e.bias, 16)) return false;
  if (e.residual) {
    const bool r_float = e.residual_t == DataType::kFloat32;
    const bool r_byte = e.residual_t == DataType::kInt8 || e.residual_t == DataType::kUInt8 ||
                        e.residual_t == DataType::kFloat8E4M3FN ||
                        e.residual_t == DataType::kFloat8E5M2;
    if (!(r_float || r_byte) || !aligned_to(e.residual, r_float ? 16 : 4)) return false;
  }
  return true;
}

// Launches q_epilogue_x4_kernel when the layout, dtypes and pointers allow it.
bool launch_epilogue_x4(const QEpilogue& e, int64_t n, cudaStream_t stream) {
  const bool rows = (!e.channels_first && !e.acc_channels_first) || e.positions == 1;
  if (!rows || n / 4 >= (int64_t{1} << 31) || !epilogue4_ok(e)) return false;
  if (e.colsum && (!aligned_to(e.colsum, 16) || !e.acc_int32)) return false;
  const int32_t n4 = static_cast<int32_t>(n / 4);
  const unsigned g = blocks_for(n4);
  if (e.acc_int32) {
    if (!aligned_to(e.acc, 16)) return false;
    q_epilogue_x4_kernel<0><<<g, kThreads, 0, stream>>>(e, n4);
  } else if (e.acc_half) {
    if (!aligned_to(e.acc, 8)) return false;
    q_epilogue_x4_kernel<2><<<g, kThreads, 0, stream>>>(e, n4);
  } else {
    if (!aligned_to(e.acc, 16)) return false;
    q_epilogue_x4_kernel<1><<<g, kThreads, 0, stream>>>(e, n4);
  }
  return true;
}

// rb rows apart: about 2^18 threads in all (a full H200 at 2,048 threads per SM), each walking
// its column down rows / rb rows.
template <int kAcc, int kAct>
void launch_x8(const QEpilogue& e, const X8Scales& sc, bool byte_y, cudaStream_t stream) {
  const int32_t cols8 = static_cast<int32_t>(e.cols / 8);
  const int32_t rows = static_cast<int32_t>(e.rows);
  // TRTUTILS_CUDA_EPILOGUE_ROWS=1: one row per thread (the grid of the first version; A/B).
  const char* one_row_sw = switch_value("TRTUTILS_CUDA_EPILOGUE_ROWS");
  const bool one_row = one_row_sw && one_row_sw[0] == '1';
  const int32_t rb = one_row ? rows : std::max(1, std::min(rows, (1 << 18) / std::max(1, cols8)));
  const unsigned g = blocks_for(static_cast<int64_t>(cols8) * rb);
  if (byte_y)
    q_epilogue_x8_kernel<kAcc, kAct, true><<<g, kThreads, 0, stream>>>(e, sc, rb);
  else
    q_epilogue_x8_kernel<kAcc, kAct, false><<<g, kThreads, 0, stream>>>(e, sc, rb);
}

template <int kAcc>
void launch_x8_act(const QEpilogue& e, const X8Scales& sc, bool byte_y, cudaStream_t stream) {
  if (e.act == Act::kNone)
    launch_x8<kAcc, 0>(e, sc, byte_y, stream);
  else if (e.act == Act::kRelu)
    launch_x8<kAcc, 1>(e, sc, byte_y, stream);
  else if (e.act == Act::kGelu)
    launch_x8<kAcc, 2>(e, sc, byte_y, stream);
  else
    launch_x8<kAcc, 3>(e, sc, byte_y, stream);
}

// Launches q_epilogue_x8_kernel when the layout, dtypes, activation and pointers allow it
// (row-major, cols and each part a multiple of 8, 16-byte aligned operands, fewer than 2^31
// elements).
bool launch_epilogue_x8(const QEpilogue& e, int64_t n, cudaStream_t stream) {
  const bool rows = (!e.channels_first && !e.acc_channels_first) || e.positions == 1;
  if (!rows || n >= (int64_t{1} << 31) || e.cols % 8 != 0 || !epilogue4_ok(e)) return false;
  if (e.parts > 0 && (e.cols / e.parts) % 8 != 0) return false;
  if (e.act != Act::kNone && e.act != Act::kRelu && e.act != Act::kGelu && e.act != Act::kSilu)
    return false;
  const bool byte_y = e.y_t != DataType::kFloat32;
  const bool fp8_y = e.y_t == DataType::kFloat8E4M3FN || e.y_t == DataType::kFloat8E5M2;
  if (fp8_y && e.y_zp != 0.0f) return false;
  if (!aligned_to(e.y, byte_y ? 8 : 16) || !aligned_to(e.acc, 16)) return false;
  if (e.residual && !aligned_to(e.residual, e.residual_t == DataType::kFloat32 ? 16 : 8))
    return false;
  if (e.colsum && (!aligned_to(e.colsum, 16) || !e.acc_int32)) return false;
  X8Scales sc;
  for (int p = 0; p < QEpilogue::kMaxParts; ++p) {
    double f = 1.0 / e.y_scale;
    if (e.part_quant && p < e.parts) {
      f = 1.0 / e.part_scale[p];
      if (e.part_pre_op[p] == 1) f *= e.part_pre[p];
      if (e.part_pre_op[p] == 2) f /= e.part_pre[p];
    }
    sc.inv[p] = static_cast<float>(f);
  }
  if (e.acc_int32)
    launch_x8_act<0>(e, sc, byte_y, stream);
  else if (e.acc_half)
    launch_x8_act<2>(e, sc, byte_y, stream);
  else
    launch_x8_act<1>(e, sc, byte_y, stream);
  return true;
}

// A kernel switch (kernel_switches.h): on unless its value starts with '0'.
bool switch_is_on(const char* name) {
  const char* v = switch_value(name);
  return !(v && v[0] == '0');
}

// TRTUTILS_CUDA_INT8_DEPTHWISE16=0: the int8 depthwise kernel with 4 channels per thread only.
bool int8_depthwise16_on() {
  return switch_is_on("TRTUTILS_CUDA_INT8_DEPTHWISE16");
}
// TRTUTILS_CUDA_INT8_DEPTHWISE_DP4A=0 (read at each call): the 16-channel kernel without dp4a.
bool int8_depthwise_dp4a_on() {
  return switch_is_on("TRTUTILS_CUDA_INT8_DEPTHWISE_DP4A");
}

bool quantizable_out(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8 || t == DataType::kInt16 ||
         t == DataType::kUInt16 || t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E5M2;
}

}  // namespace

bool cast_supported(DataType t) {
  return is_float_t(t) || is_signed_t(t) || t == DataType::kUInt8 || t == DataType::kUInt16 ||
         t == DataType::kUInt32 || t == DataType::kUInt64 || t == DataType::kBool;
}

cudaError_t cast(DataType from, DataType to, const void* x, void* y, int64_t n, bool saturate,
                 cudaStream_t stream) {
  if (!cast_supported(from) || !cast_supported(to)) return cudaErrorNotSupported;
  if (n <= 0) return cudaSuccess;
  const Inter in =
      is_float_t(from) ? Inter::kDouble : (is_signed_t(from) ? Inter::kInt64 : Inter::kUInt64);
  cast_kernel<<<blocks_for(n), kThreads, 0, stream>>>(from, to, in, x, y, n, saturate);
  return cudaGetLastError();
}

cudaError_t quantize(DataType xt, DataType yt, const void* x, void* y, const QuantDesc& q,
                     bool saturate, cudaStream_t stream) {
  if (!quantizable_out(yt)) return cudaErrorNotSupported;
  if (q.n <= 0) return cudaSuccess;
  const bool int8_out = yt == DataType::kInt8 || yt == DataType::kUInt8;
  if (!q.per_axis && xt == DataType::kFloat32 && int8_out && q.n % 4 == 0 &&
      reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0) {
    const int64_t n4 = q.n / 4;
    if (yt == DataType::kInt8) {
      quantize4_kernel<true><<<blocks_for(n4), kThreads, 0, stream>>>(
          static_cast<const float4*>(x), static_cast<uint32_t*>(y), n4, q.scale, q.zero_point);
    } else {
      quantize4_kernel<false><<<blocks_for(n4), kThreads, 0, stream>>>(
          static_cast<const float4*>(x), static_cast<uint32_t*>(y), n4, q.scale, q.zero_point);
    }
    return cudaGetLastError();
  }
  const bool fp8_out = yt == DataType::kFloat8E4M3FN || yt == DataType::kFloat8E5M2;
  const size_t xal = xt == DataType::kFloat32 ? 16 : 8;
  if (!q.per_axis && fp8_out && (xt == DataType::kFloat32 || xt == DataType::kFloat16) &&
      q.n % 4 == 0 && q.n / 4 < (int64_t{1} << 31) && reinterpret_cast<uintptr_t>(x) % xal == 0 &&
      reinterpret_cast<uintptr_t>(y) % 4 == 0) {
    const int32_t n4 = static_cast<int32_t>(q.n / 4);
    auto* y4 = static_cast<uint32_t*>(y);
    const unsigned g = blocks_for(n4);
    const bool e4 = yt == DataType::kFloat8E4M3FN;
    if (xt == DataType::kFloat32) {
      const auto* xf = static_cast<const float*>(x);
      if (e4) {
        quantize_fp8_x4_kernel<float, true>
            <<<g, kThreads, 0, stream>>>(xf, y4, n4, q.scale, q.zero_point, saturate);
      } else {
        quantize_fp8_x4_kernel<float, false>
            <<<g, kThreads, 0, stream>>>(xf, y4, n4, q.scale, q.zero_point, saturate);
      }
    } else {
      const auto* xh = static_cast<const __half*>(x);
      if (e4) {
        quantize_fp8_x4_kernel<__half, true>
            <<<g, kThreads, 0, stream>>>(xh, y4, n4, q.scale, q.zero_point, saturate);
      } else {
        quantize_fp8_x4_kernel<__half, false>
            <<<g, kThreads, 0, stream>>>(xh, y4, n4, q.scale, q.zero_point, saturate);
      }
    }
    return cudaGetLastError();
  }
  const bool ok = dispatch_float(xt, [&](auto tag) {
    using T = decltype(tag);
    quantize_kernel<T>
        <<<blocks_for(q.n), kThreads, 0, stream>>>(yt, static_cast<const T*>(x), y, q, saturate);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t dequantize(DataType xt, DataType yt, const void* x, void* y, const QuantDesc& q,
                       cudaStream_t stream) {
  const bool xt_ok = xt == DataType::kInt8 || xt == DataType::kUInt8 || xt == DataType::kInt16 ||
                     xt == DataType::kUInt16 || xt == DataType::kInt32 ||
                     xt == DataType::kFloat8E4M3FN || xt == DataType::kFloat8E5M2;
  if (!xt_ok) return cudaErrorNotSupported;
  if (q.n <= 0) return cudaSuccess;
  const bool ok = dispatch_float(yt, [&](auto tag) {
    using T = decltype(tag);
    dequantize_kernel<T><<<blocks_for(q.n), kThreads, 0, stream>>>(xt, x, static_cast<T*>(y), q);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t qconv_depthwise(const void* x, bool x_unsigned, const void* w, const DepthwiseDesc& d,
                            const QEpilogue& e, cudaStream_t stream, const void* w_taps4) {
  const int64_t n = static_cast<int64_t>(d.n) * d.oh * d.ow * d.c;
  if (n <= 0) return cudaSuccess;
  if (d.c % 4 != 0 || n / 4 >= (int64_t{1} << 31) || !aligned_to(x, 4) || !aligned_to(w, 4) ||
      e.cols != d.c || !epilogue4_ok(e))
    return cudaErrorNotSupported;
  const bool fast_ok = !fast_epilogue(e).on || e.y_t != DataType::kInt8 ||
                       (aligned_to(e.y, 16) && (!e.residual || aligned_to(e.residual, 16)));
  if (!x_unsigned && d.c % 16 == 0 && aligned_to(x, 16) && aligned_to(w, 16) && fast_ok &&
      int8_depthwise16_on()) {
    const int32_t n16 = static_cast<int32_t>(n / 16);
    const auto* x16 = static_cast<const uint4*>(x);
    const auto* w16 = static_cast<const uint4*>(w);
    if (w_taps4 && d.x_zp == 0 && aligned_to(w_taps4, 16) && int8_depthwise_dp4a_on())
      qconv_depthwise16_kernel<true><<<blocks_for(n16), kThreads, 0, stream>>>(
          x16, w16, static_cast<const uint4*>(w_taps4), d, e, n16);
    else
      qconv_depthwise16_kernel<false>
          <<<blocks_for(n16), kThreads, 0, stream>>>(x16, w16, nullptr, d, e, n16);
    return cudaGetLastError();
  }
  const int32_t n4 = static_cast<int32_t>(n / 4);
  const auto* x4 = static_cast<const uint32_t*>(x);
  const auto* w4 = static_cast<const uint32_t*>(w);
  if (x_unsigned) {
    qconv_depthwise_kernel<true><<<blocks_for(n4), kThreads, 0, stream>>>(x4, w4, d, e, n4);
  } else {
    qconv_depthwise_kernel<false><<<blocks_for(n4), kThreads, 0, stream>>>(x4, w4, d, e, n4);
  }
  return cudaGetLastError();
}

cudaError_t q_epilogue(const QEpilogue& e, cudaStream_t stream) {
  if (e.y_t != DataType::kFloat32 && !quantizable_out(e.y_t)) return cudaErrorNotSupported;
  const int64_t n = e.rows * e.cols;
  if (n <= 0) return cudaSuccess;
  const bool rows = (!e.channels_first && !e.acc_channels_first) || e.positions == 1;
  if (e.grid0 > 0 && (!rows || e.grid0 * e.grid1 != e.rows)) return cudaErrorInvalidValue;
  if (e.parts > 0 && (!rows || e.grid0 > 0 || e.cols % e.parts != 0)) return cudaErrorInvalidValue;
  if (e.part_quant && (e.parts <= 0 || e.parts > QEpilogue::kMaxParts))
    return cudaErrorInvalidValue;
  // TRTUTILS_CUDA_EPILOGUE_X8=0 leaves the specialised epilogue out, TRTUTILS_CUDA_EPILOGUE_X4=0
  // the four-channel one too (A/B measurements).
  const bool x8 = switch_is_on("TRTUTILS_CUDA_EPILOGUE_X8"),
             x4 = switch_is_on("TRTUTILS_CUDA_EPILOGUE_X4");
  if (x8 && launch_epilogue_x8(e, n, stream)) return cudaGetLastError();
  if (x4 && launch_epilogue_x4(e, n, stream)) return cudaGetLastError();
  // 32-bit indices while i + the grid stride (< 2^28) cannot overflow.
  const bool small = n < (int64_t{1} << 30);
  if (rows && small) {
    q_epilogue_kernel<true, int32_t>
        <<<blocks_for(n), kThreads, 0, stream>>>(e, static_cast<int32_t>(n));
  } else if (rows) {
    q_epilogue_kernel<true, int64_t><<<blocks_for(n), kThreads, 0, stream>>>(e, n);
  } else if (small) {
    q_epilogue_kernel<false, int32_t>
        <<<blocks_for(n), kThreads, 0, stream>>>(e, static_cast<int32_t>(n));
  } else {
    q_epilogue_kernel<false, int64_t><<<blocks_for(n), kThreads, 0, stream>>>(e, n);
  }
  return cudaGetLastError();
}

cudaError_t q_epilogue_layer_norm(const QEpilogue& e, const LnEpilogue& ln, cudaStream_t stream) {
  const bool rows = (!e.channels_first && !e.acc_channels_first) || e.positions == 1;
  const bool ln_byte = ln.q.y_t == DataType::kInt8 || ln.q.y_t == DataType::kUInt8 ||
                       ln.q.y_t == DataType::kFloat8E4M3FN || ln.q.y_t == DataType::kFloat8E5M2;
  if (!rows || e.parts > 0 || e.part_quant || e.act != Act::kNone || e.y_t != DataType::kFloat32 ||
      !ln_byte || e.cols % 8 != 0 || e.cols > 8 * 32 * 8 || e.rows >= (int64_t{1} << 31))
    return cudaErrorNotSupported;
  if ((e.grid0 > 0 && e.grid0 * e.grid1 != e.rows) ||
      (ln.q.grid0 > 0 && ln.q.grid0 * ln.q.grid1 != e.rows))
    return cudaErrorInvalidValue;
  if (!aligned_to(e.acc, 16) || !aligned_to(e.y, 16) || !aligned_to(e.colscale, 16) ||
      !aligned_to(e.bias, 16) || !aligned_to(ln.scale, 16) || !aligned_to(ln.bias, 16) ||
      !aligned_to(ln.y, 8) || !ln.scale)
    return cudaErrorNotSupported;
  if (e.residual && !aligned_to(e.residual, e.residual_t == DataType::kFloat32 ? 16 : 8))
    return cudaErrorNotSupported;
  if (e.colsum && (!aligned_to(e.colsum, 16) || !e.acc_int32)) return cudaErrorNotSupported;
  if (e.rows == 0) return cudaSuccess;
  const int32_t chunks = static_cast<int32_t>(e.cols / 8);
  if (e.acc_int32)
    launch_epilogue_ln<0>(e, ln, chunks, stream);
  else if (e.acc_half)
    launch_epilogue_ln<2>(e, ln, chunks, stream);
  else
    launch_epilogue_ln<1>(e, ln, chunks, stream);
  return cudaGetLastError();
}

}  // namespace trtutils::cuda::k
