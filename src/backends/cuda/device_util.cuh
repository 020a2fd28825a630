// Device-side helpers of the .cu files: element conversions, launch geometry, dtype dispatch.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/kernels.h"

namespace trtutils::cuda::k {

// float8 values travel as their storage byte; these tags select the conversion.
struct E4M3 {
  uint8_t bits;
};
struct E5M2 {
  uint8_t bits;
};

template <typename T>
__device__ __forceinline__ float to_float(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else if constexpr (std::is_same_v<T, E4M3>) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(v.bits, __NV_E4M3)));
  } else if constexpr (std::is_same_v<T, E5M2>) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(v.bits, __NV_E5M2)));
  } else {
    return static_cast<float>(v);
  }
}

template <typename T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else if constexpr (std::is_same_v<T, E4M3>) {
    return E4M3{__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3)};
  } else if constexpr (std::is_same_v<T, E5M2>) {
    return E5M2{__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E5M2)};
  } else {
    return static_cast<T>(v);
  }
}

template <typename T>
inline constexpr bool kFloatLike =
    std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items.
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > (int64_t{1} << 20)) b = int64_t{1} << 20;
  return static_cast<unsigned>(b);
}

// The sum of v over the 32 lanes of a warp, in every lane.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Float order, descending, as ascending unsigned order (radix-sort keys of scores).
__device__ __forceinline__ uint32_t descending_bits(float f) {
  const uint32_t b = __float_as_uint(f);
  const uint32_t asc = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return ~asc;
}

#define TRT_GRID_STRIDE(i, n)                                                            \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// Calls f(T{}) for the float compute types; false when dt is none of them.
template <typename F>
bool dispatch_float(DataType dt, F&& f) {
  if (dt == DataType::kFloat32) {
    f(float{});
  } else if (dt == DataType::kFloat16) {
    f(__half{});
  } else if (dt == DataType::kBFloat16) {
    f(__nv_bfloat16{});
  } else {
    return false;
  }
  return true;
}

// Unsigned storage type of `esz` bytes.
template <size_t N>
struct Bytes;
template <>
struct Bytes<1> {
  using type = uint8_t;
};
template <>
struct Bytes<2> {
  using type = uint16_t;
};
template <>
struct Bytes<4> {
  using type = uint32_t;
};
template <>
struct Bytes<8> {
  using type = uint64_t;
};

template <typename F>
bool dispatch_size(size_t esz, F&& f) {
  switch (esz) {
    case 1:
      f(uint8_t{});
      return true;
    case 2:
      f(uint16_t{});
      return true;
    case 4:
      f(uint32_t{});
      return true;
    case 8:
      f(uint64_t{});
      return true;
    default:
      return false;
  }
}

// Offset of output element i (row-major over bc.dims) in input `which`.
__device__ __forceinline__ int64_t broadcast_offset(const Broadcast& bc, int which, uint32_t i) {
  int64_t off = 0;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d < bc.rank) {
      const uint32_t dim = static_cast<uint32_t>(bc.dims[d]);
      const uint32_t q = i / dim;
      off += static_cast<int64_t>(i - q * dim) * bc.strides[which][d];
      i = q;
    }
  }
  return off;
}

// 2^x and 1 / x on the MUFU unit alone (exp2f and the IEEE division wrap it in denormal and
// range handling); subnormal results flush to 0.
__device__ __forceinline__ float ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float rcp_ftz(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// GELU (the erf form, ONNX Gelu and torch.nn.GELU()): x * Phi(x), Phi(x) = 1 - h for x >= 0 and
// h for x < 0, h = erfc(|x| / sqrt(2)) / 2 = s * P(s) * exp(-t^2), s = 1 / (1 + 0.3275911 t) (the
// form of Abramowitz and Stegun 7.1.26, our degree-7 fit: |erfc error| < 4e-9). One path, no
// cancellation on the negative side, two MUFU operations and ~16 other instructions against
// erff's two divergent branches, which made the float8 MLP's GELU pass compute-bound on the H200
// (ViT-B/16: 0.234 ms, 39% of DRAM bandwidth; with exp2f and __fdividef, 0.199 ms). Float32
// accuracy: |error| <= 3.1e-7 |x| over [-12, 12] (erff's form: 1.1e-7 |x|, and 1.1e-5 relative to
// the result for x in [-3, 0), where 1 + erf cancels; this form 1.4e-6).
__device__ __forceinline__ float gelu_erf(float x) {
  const float t = fabsf(x) * 0.70710678118654752440f;
  const float s = rcp_ftz(fmaf(0.3275911f, t, 1.0f));
  float p = fmaf(-1.492252151e-01f, s, 7.524090855e-01f);  // P / 2
  p = fmaf(p, s, -1.042773861e+00f);
  p = fmaf(p, s, 1.020051080e+00f);
  p = fmaf(p, s, -3.745329357e-01f);
  p = fmaf(p, s, 2.155516654e-01f);
  p = fmaf(p, s, 7.852018345e-02f);
  const float h = p * s * ex2_ftz(-1.44269504088896341f * t * t);  // 0 past |x| ~ 13
  return x * (x >= 0.0f ? 1.0f - h : h);
}

__device__ __forceinline__ float apply_act(Act act, float v, float alpha, float beta) {
  switch (act) {
    case Act::kNone:
      return v;
    case Act::kRelu:
      return v > 0.0f ? v : 0.0f;
    case Act::kClip: {
      const float a = v < alpha ? alpha : v;  // NaN stays NaN, as on the CPU
      return beta < a ? beta : a;
    }
    case Act::kLeakyRelu:
      return v < 0.0f ? alpha * v : v;
    case Act::kSigmoid:
      return 1.0f / (1.0f + expf(-v));
    case Act::kHardSwish:
      return v * fmaxf(0.0f, fminf(1.0f, v / 6.0f + 0.5f));
    case Act::kGelu:  // as the Gelu kernel (ew_kernels.cu)
      return gelu_erf(v);
    case Act::kSilu:  // x * Sigmoid(x), as the unfused graph computes it
      return v * (1.0f / (1.0f + expf(-v)));
  }
  return v;
}

// ---- tensor-core helpers (sm_80+): asynchronous copies and ldmatrix --------------------
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared without a register round trip (zeros when !valid).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}
// Byte offset of 16-byte chunk `chunk` (0..3) of row `row` in a [rows][64] stage, the chunks
// XOR swizzled by row so that the eight rows of an ldmatrix 8x8 matrix hit different banks.
__device__ __forceinline__ int swz64(int row, int chunk) {
  return row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4);
}

__device__ __forceinline__ void mma_k32(int32_t c[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_k32(float c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();  // the host only launches float8 products on SM >= 89
#endif
}

// The same products with C = c for every element (the first reduction step, without zeroing the
// accumulators first).
__device__ __forceinline__ void mma_k32_from(int32_t d[4], const uint32_t a[4], const uint32_t b[2],
                                             int32_t c) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %10, %10, %10};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c));
}
__device__ __forceinline__ void mma_k32_from(float d[4], const uint32_t a[4], const uint32_t b[2],
                                             float c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %10, %10, %10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c));
#else
  __trap();  // the host only launches float8 products on SM >= 89
#endif
}

// One 64-byte reduction step of a warp's 64 x 32 tile: rows a_row0.. of the [rows][64] A stage
// `as`, rows b_row0.. (output channels) of the B stage `bs`, both swz64-swizzled; two k32 steps
// of 4 x 4 mma_k32 into acc[m tile][n tile]. kFirst: the sums start from `init` instead of acc.
template <bool kFirst = false, typename Acc>
__device__ __forceinline__ void mma_stage64(Acc acc[4][4][4], const uint8_t* as, const uint8_t* bs,
                                            int a_row0, int b_row0, int lane, Acc init = Acc(0)) {
#pragma unroll
  for (int kk = 0; kk < 2; ++kk) {
    uint32_t af[4][4], bf[4][2];
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
      ldmatrix_x4(af[mt], as + swz64(a_row0 + mt * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
    for (int np = 0; np < 2; ++np) {
      const int row = b_row0 + np * 16 + (lane & 7) + ((lane >> 4) << 3);
      uint32_t r[4];
      ldmatrix_x4(r, bs + swz64(row, kk * 2 + ((lane >> 3) & 1)));
      bf[2 * np][0] = r[0];
      bf[2 * np][1] = r[1];
      bf[2 * np + 1][0] = r[2];
      bf[2 * np + 1][1] = r[3];
    }
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        if (kFirst && kk == 0) {
          mma_k32_from(acc[mt][nt], af[mt], bf[nt], init);
        } else {
          mma_k32(acc[mt][nt], af[mt], bf[nt]);
        }
      }
  }
}

// Visits a warp's 64 x 32 accumulator tile (mma_stage64's acc) in pairs of adjacent columns:
// f(mt, nt, half, row, col) for acc[mt][nt][2 * half] and [2 * half + 1], at row
// a_row0 + mt * 16 + lane / 4 + 8 * half and columns col, col + 1 = b_row0 + nt * 8 + 2 * (lane %
// 4) of the block's tile (m16n8 fragment layout).
template <typename F>
__device__ __forceinline__ void for_each_acc_pair(int a_row0, int b_row0, int lane, F&& f) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
        f(mt, nt, half, a_row0 + mt * 16 + g + half * 8, b_row0 + nt * 8 + t * 2);
}

// ---- quantized bytes -------------------------------------------------------------------
struct IntRange {
  float lo, hi;
};
__host__ __device__ inline IntRange range_of(DataType t) {
  if (t == DataType::kUInt8) return {0.0f, 255.0f};
  if (t == DataType::kInt8) return {-128.0f, 127.0f};
  if (t == DataType::kUInt16) return {0.0f, 65535.0f};
  return {-32768.0f, 32767.0f};
}

// One byte of a 1-byte quantized dtype as a float (int8, uint8, float8).
__device__ __forceinline__ float byte_value(DataType t, uint32_t b) {
  if (t == DataType::kInt8) return static_cast<float>(static_cast<int8_t>(b));
  if (t == DataType::kUInt8) return static_cast<float>(b);
  if (t == DataType::kFloat8E4M3FN) return to_float(E4M3{static_cast<uint8_t>(b)});
  return to_float(E5M2{static_cast<uint8_t>(b)});
}

// v (already divided by the scale) as one byte of dtype t (saturating).
__device__ __forceinline__ uint32_t byte_of(DataType t, float v, float zp) {
  if (t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E5M2)
    return __nv_cvt_float_to_fp8(v + zp, __NV_SATFINITE,
                                 t == DataType::kFloat8E4M3FN ? __NV_E4M3 : __NV_E5M2) &
           0xffu;
  const IntRange r = range_of(t);
  float q = rintf(v) + zp;
  if (isnan(q)) q = zp;
  q = q < r.lo ? r.lo : (q > r.hi ? r.hi : q);
  return t == DataType::kInt8 ? static_cast<uint8_t>(static_cast<int8_t>(q))
                              : static_cast<uint8_t>(q);
}

// ---- the short epilogue of the int8 / float8 convolution kernels ---------------------------
// For int8 (float8 E4M3) Y with no activation, ReLU or Clip, and no residual or one of Y's dtype:
// y = acc * (x_scale * w_scale / y_scale) + bias / y_scale (+ r * r_mul + r_add), clamped, then
// converted (round half to even, saturating). x * (1 / y_scale) instead of a division: within
// one step of q_epilogue_kernel's result. The generic epilogue costs ~200 instructions per
// element, which made these kernels epilogue-bound.
struct FastEpilogue {
  bool on = false, clip = false;
  float lo = 0.0f, hi = 0.0f;  // the activation's bounds in output steps
  float inv_y = 1.0f, r_mul = 0.0f, r_add = 0.0f;
  int y_zp = 0;
  // int8 Y: the activation's bounds and the saturation in one range for y before rounding
  // (round is monotonic: clamping to integer bounds before or after it gives the same value)
  float sat_lo = 0.0f, sat_hi = 0.0f;
  __device__ __forceinline__ float act(float y) const { return clip ? fminf(fmaxf(y, lo), hi) : y; }
};
__host__ __device__ inline FastEpilogue fast_epilogue(const QEpilogue& e) {
  FastEpilogue f;
  f.on = (e.y_t == DataType::kInt8 || e.y_t == DataType::kFloat8E4M3FN) &&
         (e.act == Act::kNone || e.act == Act::kRelu || e.act == Act::kClip) &&
         (!e.residual || e.residual_t == e.y_t) &&
         (e.y_t == DataType::kInt8 || (e.y_zp == 0.0f && e.r_zp == 0.0f)) && e.y_scale > 0.0f;
  f.inv_y = 1.0f / e.y_scale;
  f.clip = e.act != Act::kNone;
  f.lo = e.act == Act::kClip ? e.alpha * f.inv_y : 0.0f;
  f.hi = e.act == Act::kClip ? e.beta * f.inv_y : INFINITY;
  f.r_mul = e.r_scale * f.inv_y;
  f.r_add = -e.r_zp * e.r_scale * f.inv_y;
  f.y_zp = static_cast<int>(e.y_zp);
  f.sat_lo = -128.0f - f.y_zp;
  f.sat_hi = 127.0f - f.y_zp;
  if (f.clip) {
    f.sat_lo = f.lo > f.sat_lo ? f.lo : f.sat_lo;
    f.sat_hi = f.hi < f.sat_hi ? f.hi : f.sat_hi;
  }
  return f;
}

// ---- conversions without the conversion unit ---------------------------------------------------
// Type conversions (I2F, F2I) issue at 16 per clock per SM on sm_80-90, against 64-128 for integer
// and float adds: the short epilogue's three per element (the sum, the residual byte, the output
// byte) made the memory-bound 1x1 convolutions compute-bound. These give the same values from
// adds and byte permutes, through floats in [2^23, 2^24) whose unit in the last place is 1.
// int32 v with |v| <= 2^22 as float (exact): the bits of 1.5 * 2^23 + v.
__device__ __forceinline__ float i2f_exact22(int32_t v) {
  return __int_as_float(0x4B400000 + v) - 12582912.0f;
}
// Byte j of w, an int8, as float; wx = w ^ 0x80808080 (the bytes offset by 128): 2^23 + b + 128.
__device__ __forceinline__ float s8_byte_to_float(uint32_t wx, int j) {
  return __int_as_float(__byte_perm(wx, 0x4B000000u, 0x7540 + j)) - 8388736.0f;
}
// y in output steps -> a word whose low byte is the int8 saturate(round_half_even(y) + zp).
__device__ __forceinline__ uint32_t int8_word(float y, const FastEpilogue& f) {
  y = fminf(fmaxf(y, f.sat_lo), f.sat_hi);
  return __float_as_uint(y + 12582912.0f) + static_cast<uint32_t>(f.y_zp);
}
// The low bytes of a, b, c, d as one word (a in the lowest byte).
__device__ __forceinline__ uint32_t pack4_low(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return __byte_perm(__byte_perm(a, b, 0x0040), __byte_perm(c, d, 0x0040), 0x5410);
}
// A residual byte as a value (int8 or E4M3).
template <bool kFp8>
__device__ __forceinline__ float fast_residual(uint32_t b) {
  if constexpr (kFp8) return to_float(E4M3{static_cast<uint8_t>(b)});
  return static_cast<float>(static_cast<int8_t>(b));
}
// y (in output steps) as one byte of Y.
template <bool kFp8>
__device__ __forceinline__ uint32_t fast_byte(float y, int zp) {
  if constexpr (kFp8) return __nv_cvt_float_to_fp8(y, __NV_SATFINITE, __NV_E4M3) & 0xffu;
  return static_cast<uint32_t>(min(max(__float2int_rn(y) + zp, -128), 127)) & 0xffu;
}

// ---- depthwise convolutions (channels-last) -------------------------------------------------
// The in-bounds taps of output pixel `row` (= (n * oh + y) * ow + x): f(pixel, tap) with pixel =
// (n * h + ih) * w + iw, the input pixel's index, and tap = r * kw + s.
template <typename F>
__device__ __forceinline__ void depthwise_taps(const DepthwiseDesc& d, int32_t row, F&& f) {
  const int32_t ow = row % d.ow;
  const int32_t oh = (row / d.ow) % d.oh;
  const int32_t n = row / (d.ow * d.oh);
  for (int32_t r = 0; r < d.kh; ++r) {
    const int32_t ih = oh * d.sh - d.ph + r * d.dh;
    if (ih < 0 || ih >= d.h) continue;
    for (int32_t s = 0; s < d.kw; ++s) {
      const int32_t iw = ow * d.sw - d.pw + s * d.dw;
      if (iw < 0 || iw >= d.w) continue;
      f((n * d.h + ih) * d.w + iw, r * d.kw + s);
    }
  }
}

}  // namespace trtutils::cuda::k
