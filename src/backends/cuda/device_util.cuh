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
      return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
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
  return f;
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
