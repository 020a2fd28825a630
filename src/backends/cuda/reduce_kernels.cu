// Pools, softmax, layer normalisation and reductions. Rows reduce with one warp each (shuffles);
// strided layouts (inner > 1) with one thread per output. Accumulation in float32.
#include <cfloat>
#include <type_traits>

#include "backends/cuda/device_util.cuh"

namespace trtutils::cuda::k {

namespace {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_min(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_prod(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v *= __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

unsigned warp_blocks(int64_t rows) {
  return blocks_for(rows * kWarp, kWarpsPerBlock * kWarp);
}

// ---- pools ---------------------------------------------------------------------------------
// I: the index type (int32_t when every index fits: integer division is much cheaper).
template <typename T, bool kMax, typename I>
__global__ void pool_kernel(const T* x, T* y, PoolDesc p, bool include_pad, I n) {
  // Channels-last: consecutive threads take consecutive channels (coalesced), cs = C apart.
  const I cs = p.channels > 0 ? static_cast<I>(p.channels) : 1;
  const I in0s = static_cast<I>(p.in[0]), in1s = static_cast<I>(p.in[1]),
          in2s = static_cast<I>(p.in[2]);
  const I o0 = static_cast<I>(p.out[0]), o1 = static_cast<I>(p.out[1]),
          o2 = static_cast<I>(p.out[2]);
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I ch = i % cs;
    const I j = i / cs;
    const I ow = j % o2;
    const I oh = (j / o2) % o1;
    const I od = (j / (o2 * o1)) % o0;
    const I pl = j / (o2 * o1 * o0);
    const T* xp = x + static_cast<int64_t>(pl) * in0s * in1s * in2s * cs + ch;
    const I s0 = od * static_cast<I>(p.stride[0]) - static_cast<I>(p.pad_begin[0]);
    const I s1 = oh * static_cast<I>(p.stride[1]) - static_cast<I>(p.pad_begin[1]);
    const I s2 = ow * static_cast<I>(p.stride[2]) - static_cast<I>(p.pad_begin[2]);
    float acc = kMax ? -FLT_MAX : 0.0f;
    I count = 0;
    for (I a = 0; a < static_cast<I>(p.kernel[0]); ++a) {
      const I id = s0 + a * static_cast<I>(p.dilation[0]);
      const bool in0 = id >= 0 && id < in0s;
      if (!include_pad && !in0) continue;
      for (I b = 0; b < static_cast<I>(p.kernel[1]); ++b) {
        const I ih = s1 + b * static_cast<I>(p.dilation[1]);
        const bool in1 = ih >= 0 && ih < in1s;
        for (I c = 0; c < static_cast<I>(p.kernel[2]); ++c) {
          const I iw = s2 + c * static_cast<I>(p.dilation[2]);
          const bool in2 = iw >= 0 && iw < in2s;
          if (in0 && in1 && in2) {
            const float v = to_float(xp[((id * in1s + ih) * in2s + iw) * cs]);
            if (kMax) {
              acc = v > acc ? v : acc;
            } else {
              acc += v;
            }
            ++count;
          } else if (include_pad && id >= -p.pad_begin[0] && id < p.in[0] + p.pad_end[0] &&
                     ih >= -p.pad_begin[1] && ih < p.in[1] + p.pad_end[1] &&
                     iw >= -p.pad_begin[2] && iw < p.in[2] + p.pad_end[2]) {
            ++count;
          }
        }
      }
    }
    if (!kMax) acc = count > 0 ? acc / static_cast<float>(count) : 0.0f;
    y[i] = from_float<T>(acc);
  }
}

// The byte kinds of a quantized MaxPool: int8, uint8, and float8 (E4M3 / E5M2: sign and
// magnitude, compared as unsigned keys: positive b -> b ^ 0x80, negative b -> b ^ 0xff).
// kH16: float16, two per 32-bit word (the float16 engines' MaxPool, same kernel).
enum ByteKind : int { kS8, kU8, kF8, kH16 };
__device__ __forceinline__ uint32_t f8_key(uint32_t b) {  // 4 bytes
  return b ^ (0x80808080u | (((b >> 7) & 0x01010101u) * 0x7fu));
}
__device__ __forceinline__ uint32_t f8_unkey(uint32_t k) {
  return k ^ (0x80808080u | (((~k >> 7) & 0x01010101u) * 0x7fu));
}
// SIMD byte max of 32-bit words (4 channels) or 16-byte vectors (16 channels); float8 bytes as
// keys (f8_key on load, f8_unkey on store).
template <int kKind>
__device__ __forceinline__ uint32_t vmax(uint32_t a, uint32_t b) {
  if constexpr (kKind == kH16) {  // NaN loses, as in pool_kernel's comparison
    const __half2 m =
        __hmax2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));
    return *reinterpret_cast<const uint32_t*>(&m);
  }
  return kKind == kS8 ? __vmaxs4(a, b) : __vmaxu4(a, b);
}
template <int kKind>
__device__ __forceinline__ uint4 vmax(uint4 a, uint4 b) {
  return make_uint4(vmax<kKind>(a.x, b.x), vmax<kKind>(a.y, b.y), vmax<kKind>(a.z, b.z),
                    vmax<kKind>(a.w, b.w));
}
template <int kKind>
__device__ __forceinline__ uint32_t key(uint32_t w, bool inverse = false) {
  if constexpr (kKind == kF8) return inverse ? f8_unkey(w) : f8_key(w);
  return w;
}
template <int kKind>
__device__ __forceinline__ uint4 key(uint4 w, bool inverse = false) {
  return make_uint4(key<kKind>(w.x, inverse), key<kKind>(w.y, inverse), key<kKind>(w.z, inverse),
                    key<kKind>(w.w, inverse));
}
template <typename V>
__device__ __forceinline__ V splat(uint32_t w) {
  if constexpr (std::is_same_v<V, uint4>) {
    return make_uint4(w, w, w, w);
  } else {
    return w;
  }
}

// Channels-last int8 / uint8 / float8 MaxPool, 4 (V = uint32_t) or 16 (V = uint4) channels per
// thread with a SIMD byte max: 4- or 16-byte loads where the generic kernel moves single bytes
// (ResNet-50's stem pool at batch 256: 0.28 ms with 4 channels per thread, 0.10 ms with 16).
// kK > 0: a 2-D pool (kernel[0] == 1) with a kK x kK window, its taps unrolled so that all kK^2
// loads are in flight at once (the generic loops wait for each tap's load before the next:
// ResNet-50's stem pool, 3x3, ran at 2.6 TB/s).
template <int kKind, typename V, int kK = 0>
__global__ void max_pool_vec_kernel(const V* x, V* y, PoolDesc p, int32_t n) {
  constexpr int64_t kElemBytes = kKind == kH16 ? 2 : 1;
  const int32_t cs = static_cast<int32_t>(p.channels * kElemBytes / sizeof(V));
  const int32_t in0s = static_cast<int32_t>(p.in[0]), in1s = static_cast<int32_t>(p.in[1]),
                in2s = static_cast<int32_t>(p.in[2]);
  const int32_t o0 = static_cast<int32_t>(p.out[0]), o1 = static_cast<int32_t>(p.out[1]),
                o2 = static_cast<int32_t>(p.out[2]);
  for (int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += static_cast<int32_t>(gridDim.x * blockDim.x)) {
    const int32_t ch = i % cs;
    const int32_t j = i / cs;
    const int32_t ow = j % o2;
    const int32_t oh = (j / o2) % o1;
    const int32_t od = (j / (o2 * o1)) % o0;
    const int32_t pl = j / (o2 * o1 * o0);
    const V* xp = x + pl * in0s * in1s * in2s * cs + ch;
    const int32_t s0 =
        od * static_cast<int32_t>(p.stride[0]) - static_cast<int32_t>(p.pad_begin[0]);
    const int32_t s1 =
        oh * static_cast<int32_t>(p.stride[1]) - static_cast<int32_t>(p.pad_begin[1]);
    const int32_t s2 =
        ow * static_cast<int32_t>(p.stride[2]) - static_cast<int32_t>(p.pad_begin[2]);
    // The smallest value (key); -inf for float16.
    V acc = splat<V>(kKind == kS8 ? 0x80808080u : (kKind == kH16 ? 0xfc00fc00u : 0u));
    if constexpr (kK > 0) {
      const int32_t d1 = static_cast<int32_t>(p.dilation[1]),
                    d2 = static_cast<int32_t>(p.dilation[2]);
      V v[kK * kK];
#pragma unroll
      for (int32_t b = 0; b < kK; ++b) {
#pragma unroll
        for (int32_t c = 0; c < kK; ++c) {
          const int32_t ih = s1 + b * d1, iw = s2 + c * d2;
          const bool in = static_cast<uint32_t>(ih) < static_cast<uint32_t>(in1s) &&
                          static_cast<uint32_t>(iw) < static_cast<uint32_t>(in2s);
          v[b * kK + c] = in ? key<kKind>(xp[(ih * in2s + iw) * cs]) : acc;  // keys
        }
      }
#pragma unroll
      for (int32_t t = 0; t < kK * kK; ++t) acc = vmax<kKind>(acc, v[t]);
    } else {
      for (int32_t a = 0; a < static_cast<int32_t>(p.kernel[0]); ++a) {
        const int32_t id = s0 + a * static_cast<int32_t>(p.dilation[0]);
        if (id < 0 || id >= in0s) continue;
        for (int32_t b = 0; b < static_cast<int32_t>(p.kernel[1]); ++b) {
          const int32_t ih = s1 + b * static_cast<int32_t>(p.dilation[1]);
          if (ih < 0 || ih >= in1s) continue;
          for (int32_t c = 0; c < static_cast<int32_t>(p.kernel[2]); ++c) {
            const int32_t iw = s2 + c * static_cast<int32_t>(p.dilation[2]);
            if (iw < 0 || iw >= in2s) continue;
            acc = vmax<kKind>(acc, key<kKind>(xp[((id * in1s + ih) * in2s + iw) * cs]));
          }
        }
      }
    }
    y[i] = key<kKind>(acc, true);
  }
}

template <typename T>
__global__ void global_pool_kernel(const T* x, T* y, int64_t planes, int64_t size, bool is_max) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (warp >= planes) return;
  const T* xp = x + warp * size;
  float acc = is_max ? -FLT_MAX : 0.0f;
  for (int64_t j = lane; j < size; j += kWarp) {
    const float v = to_float(xp[j]);
    acc = is_max ? fmaxf(acc, v) : acc + v;
  }
  acc = is_max ? warp_max(acc) : warp_sum(acc);
  if (lane == 0) y[warp] = from_float<T>(is_max ? acc : (size > 0 ? acc / size : 0.0f));
}

// ---- softmax ---------------------------------------------------------------------------------
template <typename T>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t rows, int64_t n, Soft kind) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const T* xr = x + row * n;
  T* yr = y + row * n;
  float mx = -INFINITY;
  for (int64_t j = lane; j < n; j += kWarp) mx = fmaxf(mx, to_float(xr[j]));
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int64_t j = lane; j < n; j += kWarp) sum += expf(to_float(xr[j]) - mx);
  sum = warp_sum(sum);
  if (kind == Soft::kSoftmax) {
    const float inv = 1.0f / sum;
    for (int64_t j = lane; j < n; j += kWarp)
      yr[j] = from_float<T>(expf(to_float(xr[j]) - mx) * inv);
  } else {
    const float ls = logf(sum);
    for (int64_t j = lane; j < n; j += kWarp) yr[j] = from_float<T>(to_float(xr[j]) - mx - ls);
  }
}

// Rows of at most 32 * kPer elements: each lane keeps its kPer values in registers, so x is
// read once (the general kernel above reads it three times).
template <typename T, int kPer>
__global__ void softmax_rows_reg_kernel(const T* x, T* y, int64_t rows, int n, Soft kind) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const T* xr = x + row * n;
  T* yr = y + row * n;
  float v[kPer];
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int j = lane + i * kWarp;
    v[i] = j < n ? to_float(xr[j]) : -INFINITY;
    mx = fmaxf(mx, v[i]);
  }
  mx = warp_max(mx);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kPer; ++i) sum += lane + i * kWarp < n ? expf(v[i] - mx) : 0.0f;
  sum = warp_sum(sum);
  const float inv = 1.0f / sum, ls = logf(sum);
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int j = lane + i * kWarp;
    if (j < n)
      yr[j] = from_float<T>(kind == Soft::kSoftmax ? expf(v[i] - mx) * inv : v[i] - mx - ls);
  }
}

template <typename T>
__global__ void softmax_cols_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner,
                                    Soft kind) {
  TRT_GRID_STRIDE(t, outer * inner) {
    const int64_t o = t / inner, i = t % inner;
    const T* xs = x + o * n * inner + i;
    T* ys = y + o * n * inner + i;
    float mx = -INFINITY;
    for (int64_t k = 0; k < n; ++k) mx = fmaxf(mx, to_float(xs[k * inner]));
    float sum = 0.0f;
    for (int64_t k = 0; k < n; ++k) sum += expf(to_float(xs[k * inner]) - mx);
    const float ls = logf(sum);
    for (int64_t k = 0; k < n; ++k) {
      const float v = to_float(xs[k * inner]) - mx;
      ys[k * inner] = from_float<T>(kind == Soft::kSoftmax ? expf(v) / sum : v - ls);
    }
  }
}

// ---- layer norm --------------------------------------------------------------------------------
// kQ: Y quantized per tensor (LnQuant), else Y of X's dtype. Either way row `row` of X is
// written at row ln_out_row(row) of Y (the fused Transpose(1, 0, 2) when q.grid0 > 0).
__device__ __forceinline__ int64_t ln_out_row(int64_t row, const LnQuant& q) {
  return q.grid0 > 0 ? (row % q.grid1) * q.grid0 + row / q.grid1 : row;
}
// One normalised value as Y stores it: T, or the quantized byte of its T-rounded value.
template <typename T>
__device__ __forceinline__ uint32_t ln_quant_byte(float o, const LnQuant& q) {
  return byte_of(q.y_t, to_float(from_float<T>(o)) / q.y_scale, q.y_zp);
}

template <typename T, bool kQ>
__global__ void layer_norm_kernel(const T* x, const T* scale, const T* bias, void* y, int64_t rows,
                                  int64_t d, float eps, float* mean_out, float* inv_out,
                                  LnQuant q) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const T* xr = x + row * d;
  const int64_t orow = ln_out_row(row, q);
  float s = 0.0f;
  for (int64_t j = lane; j < d; j += kWarp) s += to_float(xr[j]);
  const float mean = warp_sum(s) / static_cast<float>(d);
  float qs = 0.0f;
  for (int64_t j = lane; j < d; j += kWarp) {
    const float c = to_float(xr[j]) - mean;
    qs += c * c;
  }
  const float var = warp_sum(qs) / static_cast<float>(d);
  const float inv = rsqrtf(var + eps);
  for (int64_t j = lane; j < d; j += kWarp) {
    float v = (to_float(xr[j]) - mean) * inv * to_float(scale[j]);
    if (bias) v += to_float(bias[j]);
    if constexpr (kQ)
      static_cast<uint8_t*>(y)[orow * d + j] = static_cast<uint8_t>(ln_quant_byte<T>(v, q));
    else
      static_cast<T*>(y)[orow * d + j] = from_float<T>(v);
  }
  if (lane == 0) {
    if (mean_out) mean_out[row] = mean;
    if (inv_out) inv_out[row] = inv;
  }
}

// Rows of 16-byte multiples (d * sizeof(T) % 16 == 0, 16-byte aligned), at most 32 * kChunks
// chunks: each lane loads its chunks of x (and of scale / bias) with 16-byte loads once and
// keeps x in registers; two-pass mean and variance from the registers. Quantized Y: one store of
// 16 / sizeof(T) bytes per chunk.
template <typename T, int kChunks, bool kQ>
__global__ void layer_norm_vec_kernel(const T* x, const T* scale, const T* bias, void* y,
                                      int64_t rows, int d, float eps, float* mean_out,
                                      float* inv_out, LnQuant q) {
  constexpr int kV = 16 / sizeof(T);
  union Chunk {
    uint4 u;
    T t[kV];
  };
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const int chunks = d / kV;
  const uint4* xr = reinterpret_cast<const uint4*>(x + row * d);
  float v[kChunks][kV];
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int c = lane + i * kWarp;
    Chunk ch;
    ch.u = c < chunks ? xr[c] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int e = 0; e < kV; ++e) {
      v[i][e] = c < chunks ? to_float(ch.t[e]) : 0.0f;
      s += v[i][e];
    }
  }
  const float mean = warp_sum(s) / static_cast<float>(d);
  float qs = 0.0f;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    if (lane + i * kWarp >= chunks) continue;
#pragma unroll
    for (int e = 0; e < kV; ++e) {
      const float c = v[i][e] - mean;
      qs += c * c;
    }
  }
  const float var = warp_sum(qs) / static_cast<float>(d);
  const float inv = rsqrtf(var + eps);
  const int64_t orow = ln_out_row(row, q);
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int c = lane + i * kWarp;
    if (c >= chunks) continue;
    Chunk sc, bc, out;
    sc.u = reinterpret_cast<const uint4*>(scale)[c];
    if (bias) bc.u = reinterpret_cast<const uint4*>(bias)[c];
    uint8_t bytes[kV];
#pragma unroll
    for (int e = 0; e < kV; ++e) {
      float o = (v[i][e] - mean) * inv * to_float(sc.t[e]);
      if (bias) o += to_float(bc.t[e]);
      if constexpr (kQ)
        bytes[e] = static_cast<uint8_t>(ln_quant_byte<T>(o, q));
      else
        out.t[e] = from_float<T>(o);
    }
    if constexpr (kQ) {
      uint8_t* yb = static_cast<uint8_t*>(y) + orow * d + static_cast<int64_t>(c) * kV;
      if constexpr (kV == 4) {
        *reinterpret_cast<uint32_t*>(yb) = *reinterpret_cast<const uint32_t*>(bytes);
      } else {
        *reinterpret_cast<uint2*>(yb) = *reinterpret_cast<const uint2*>(bytes);
      }
    } else {
      reinterpret_cast<uint4*>(static_cast<T*>(y) + orow * d)[c] = out.u;
    }
  }
  if (lane == 0) {
    if (mean_out) mean_out[row] = mean;
    if (inv_out) inv_out[row] = inv;
  }
}

template <bool kQ>
cudaError_t layer_norm_any(DataType dt, const void* x, const void* scale, const void* bias, void* y,
                           int64_t rows, int64_t d, float eps, float* mean, float* inv_std,
                           const LnQuant& q, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return cudaSuccess;
  const bool ok = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    const unsigned blocks = warp_blocks(rows), threads = kWarpsPerBlock * kWarp;
    const T* xt = static_cast<const T*>(x);
    const T* st = static_cast<const T*>(scale);
    const T* bt = static_cast<const T*>(bias);
    const int di = static_cast<int>(d);
    constexpr int kV = 16 / sizeof(T);
    // Quantized rows are d bytes: the chunk stores need d aligned to their kV bytes.
    const bool vec = d % kV == 0 && aligned16(x) && aligned16(y) && aligned16(scale) &&
                     (!bias || aligned16(bias));
    const int64_t chunks = d / kV;
    // Registers for exactly the chunks a lane holds: ViT-B's 768 float32 columns (6 chunks)
    // took the 8-chunk kernel at 66 registers, 35% of the warps resident and 46% of DRAM
    // bandwidth on the H200.
    if (vec && chunks <= kWarp)
      layer_norm_vec_kernel<T, 1, kQ>
          <<<blocks, threads, 0, stream>>>(xt, st, bt, y, rows, di, eps, mean, inv_std, q);
    else if (vec && chunks <= 2 * kWarp)
      layer_norm_vec_kernel<T, 2, kQ>
          <<<blocks, threads, 0, stream>>>(xt, st, bt, y, rows, di, eps, mean, inv_std, q);
    else if (vec && chunks <= 3 * kWarp)
      layer_norm_vec_kernel<T, 3, kQ>
          <<<blocks, threads, 0, stream>>>(xt, st, bt, y, rows, di, eps, mean, inv_std, q);
    else if (vec && chunks <= 4 * kWarp)
      layer_norm_vec_kernel<T, 4, kQ>
          <<<blocks, threads, 0, stream>>>(xt, st, bt, y, rows, di, eps, mean, inv_std, q);
    else if (vec && chunks <= 6 * kWarp)
      layer_norm_vec_kernel<T, 6, kQ>
          <<<blocks, threads, 0, stream>>>(xt, st, bt, y, rows, di, eps, mean, inv_std, q);
    else if (vec && chunks <= 8 * kWarp)
      layer_norm_vec_kernel<T, 8, kQ>
          <<<blocks, threads, 0, stream>>>(xt, st, bt, y, rows, di, eps, mean, inv_std, q);
    else
      layer_norm_kernel<T, kQ>
          <<<blocks, threads, 0, stream>>>(xt, st, bt, y, rows, d, eps, mean, inv_std, q);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

// ---- reductions ---------------------------------------------------------------------------------
__device__ __forceinline__ float reduce_init(Reduce k) {
  return k == Reduce::kMax ? -INFINITY
                           : (k == Reduce::kMin ? INFINITY : (k == Reduce::kProd ? 1.0f : 0.0f));
}
__device__ __forceinline__ float reduce_step(Reduce k, float acc, float v, float shift) {
  switch (k) {
    case Reduce::kSum:
    case Reduce::kMean:
      return acc + v;
    case Reduce::kMax:
      return fmaxf(acc, v);
    case Reduce::kMin:
      return fminf(acc, v);
    case Reduce::kSumSquare:
    case Reduce::kL2:
      return acc + v * v;
    case Reduce::kL1:
      return acc + fabsf(v);
    case Reduce::kProd:
      return acc * v;
    case Reduce::kLogSumExp:
      return acc + expf(v - shift);
  }
  return acc;
}
__device__ __forceinline__ float reduce_warp(Reduce k, float v) {
  if (k == Reduce::kMax) return warp_max(v);
  if (k == Reduce::kMin) return warp_min(v);
  if (k == Reduce::kProd) return warp_prod(v);
  return warp_sum(v);
}
__device__ __forceinline__ float reduce_finish(Reduce k, float acc, int64_t r, float shift) {
  if (k == Reduce::kMean) return r > 0 ? acc / static_cast<float>(r) : NAN;
  if (k == Reduce::kL2) return sqrtf(acc);
  if (k == Reduce::kLogSumExp) return shift + logf(acc);
  return acc;
}

// How the reductions read an element as float: as it is (FloatLoad), or a quantized byte
// dequantized as DequantizeLinear does ((q - zp) * scale: DequantLoad).
struct FloatLoad {
  template <typename T>
  __device__ __forceinline__ float operator()(const T* p, int64_t i) const {
    return to_float(p[i]);
  }
};
struct DequantLoad {
  DataType t;
  float scale, zp;
  __device__ __forceinline__ float operator()(const uint8_t* p, int64_t i) const {
    return (byte_value(t, p[i]) - zp) * scale;
  }
};

template <typename T, typename O = T, typename L = FloatLoad>
__global__ void reduce_rows_kernel(const T* x, O* y, int64_t outer, int64_t r, Reduce kind,
                                   L load = {}) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= outer) return;
  const T* xr = x + row * r;
  float shift = 0.0f;
  if (kind == Reduce::kLogSumExp) {
    float m = -INFINITY;
    for (int64_t j = lane; j < r; j += kWarp) m = fmaxf(m, load(xr, j));
    shift = warp_max(m);
    if (isinf(shift)) shift = 0.0f;
  }
  float acc = reduce_init(kind);
  for (int64_t j = lane; j < r; j += kWarp) acc = reduce_step(kind, acc, load(xr, j), shift);
  acc = reduce_warp(kind, acc);
  if (lane == 0) y[row] = from_float<O>(reduce_finish(kind, acc, r, shift));
}

template <typename T, typename O = T, typename L = FloatLoad>
__global__ void reduce_cols_kernel(const T* x, O* y, int64_t outer, int64_t r, int64_t inner,
                                   Reduce kind, L load = {}) {
  TRT_GRID_STRIDE(t, outer * inner) {
    const int64_t o = t / inner, i = t % inner;
    const T* xs = x + o * r * inner + i;
    float shift = 0.0f;
    if (kind == Reduce::kLogSumExp) {
      float m = -INFINITY;
      for (int64_t k = 0; k < r; ++k) m = fmaxf(m, load(xs, k * inner));
      shift = isinf(m) ? 0.0f : m;
    }
    float acc = reduce_init(kind);
    for (int64_t k = 0; k < r; ++k) acc = reduce_step(kind, acc, load(xs, k * inner), shift);
    y[t] = from_float<O>(reduce_finish(kind, acc, r, shift));
  }
}

// The middle axis of [outer, r, inner] when r is long and there are few outputs (a global
// average pool over channels-last [N, H * W, C]: one thread per output read H * W values one
// after the other, 36,864 threads for EfficientNet-B0's first squeeze-excite at batch 256, ~0.2
// TB/s). A block takes 32 consecutive channels of one outer index (coalesced 128-byte rows) and
// its kMidSlices warps split r, each with kMidUnroll loads in flight; the warps' partial results
// meet in shared memory in a fixed order (deterministic). Not for LogSumExp (its shift).
constexpr int kMidSlices = 16, kMidUnroll = 8;
template <typename T, typename O = T, typename L = FloatLoad>
__global__ void __launch_bounds__(kWarp* kMidSlices)
    reduce_mid_kernel(const T* x, O* y, int64_t r, int64_t inner, Reduce kind, L load = {}) {
  __shared__ float part[kMidSlices][kWarp];
  const int lane = threadIdx.x % kWarp, slice = threadIdx.x / kWarp;
  const int64_t o = blockIdx.y, c = static_cast<int64_t>(blockIdx.x) * kWarp + lane;
  float acc = reduce_init(kind);
  if (c < inner) {
    const T* xs = x + o * r * inner + c;
    int64_t k = slice;
    for (; k + (kMidUnroll - 1) * kMidSlices < r; k += kMidUnroll * kMidSlices) {
      float v[kMidUnroll];
#pragma unroll
      for (int u = 0; u < kMidUnroll; ++u) v[u] = load(xs, (k + u * kMidSlices) * inner);
#pragma unroll
      for (int u = 0; u < kMidUnroll; ++u) acc = reduce_step(kind, acc, v[u], 0.0f);
    }
    for (; k < r; k += kMidSlices) acc = reduce_step(kind, acc, load(xs, k * inner), 0.0f);
  }
  part[slice][lane] = acc;
  __syncthreads();
  if (slice == 0 && c < inner) {
    // The slices' partial sums (squares, maxima...) combine as the values do, except that the
    // products of kProd multiply and kL2's partial sums of squares add before the root.
#pragma unroll
    for (int sl = 1; sl < kMidSlices; ++sl) {
      const float v = part[sl][lane];
      switch (kind) {
        case Reduce::kMax:
          acc = fmaxf(acc, v);
          break;
        case Reduce::kMin:
          acc = fminf(acc, v);
          break;
        case Reduce::kProd:
          acc *= v;
          break;
        default:
          acc += v;
      }
    }
    y[o * inner + c] = from_float<O>(reduce_finish(kind, acc, r, 0.0f));
  }
}

template <typename T>
__global__ void reduce_int_kernel(const T* x, T* y, int64_t outer, int64_t r, int64_t inner,
                                  Reduce kind) {
  TRT_GRID_STRIDE(t, outer * inner) {
    const int64_t o = t / inner, i = t % inner;
    const T* xs = x + o * r * inner + i;
    T acc = kind == Reduce::kProd ? T(1) : T(0);
    for (int64_t k = 0; k < r; ++k) {
      const T v = xs[k * inner];
      if (kind == Reduce::kMax) {
        acc = (k == 0 || v > acc) ? v : acc;
      } else if (kind == Reduce::kMin) {
        acc = (k == 0 || v < acc) ? v : acc;
      } else if (kind == Reduce::kProd) {
        acc = static_cast<T>(acc * v);
      } else {
        acc = static_cast<T>(acc + v);
      }
    }
    if (kind == Reduce::kMean) acc = r > 0 ? static_cast<T>(acc / r) : T(0);
    y[t] = acc;
  }
}

int64_t pool_outputs(const PoolDesc& p) {
  return p.planes * p.out[0] * p.out[1] * p.out[2] * (p.channels > 0 ? p.channels : 1);
}

// 32-bit indices when the outputs (with the grid stride) and the input fit.
bool pool_fits_int32(const PoolDesc& p) {
  const int64_t in = p.planes * p.in[0] * p.in[1] * p.in[2] * (p.channels > 0 ? p.channels : 1);
  return pool_outputs(p) < (int64_t{1} << 30) && in < (int64_t{1} << 31);
}

template <typename T, bool kMax>
void launch_pool(const void* x, void* y, const PoolDesc& p, bool include_pad, cudaStream_t stream) {
  const int64_t n = pool_outputs(p);
  if (pool_fits_int32(p)) {
    pool_kernel<T, kMax, int32_t><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), p, include_pad, static_cast<int32_t>(n));
  } else {
    pool_kernel<T, kMax, int64_t><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), p, include_pad, n);
  }
}

}  // namespace

cudaError_t max_pool(DataType dt, const void* x, void* y, const PoolDesc& p, cudaStream_t stream) {
  const int64_t n = pool_outputs(p);
  if (n <= 0) return cudaSuccess;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    launch_pool<T, true>(x, y, p, false, stream);
  };
  const bool fp8 = dt == DataType::kFloat8E4M3FN || dt == DataType::kFloat8E5M2;
  const bool bytes = dt == DataType::kInt8 || dt == DataType::kUInt8 || fp8;
  const bool half = dt == DataType::kFloat16;
  const int64_t elem = half ? 2 : 1;
  auto aligned = [&](uintptr_t a) {
    return reinterpret_cast<uintptr_t>(x) % a == 0 && reinterpret_cast<uintptr_t>(y) % a == 0;
  };
  auto vec = [&](auto tag) {
    using V = decltype(tag);
    const int64_t nv = n * elem / static_cast<int64_t>(sizeof(V));
    const auto* xv = static_cast<const V*>(x);
    auto* yv = static_cast<V*>(y);
    const unsigned blocks = blocks_for(nv);
    const auto n32 = static_cast<int32_t>(nv);
    const bool k3x3 = p.in[0] == 1 && p.kernel[0] == 1 && p.pad_begin[0] == 0 && p.kernel[1] == 3 &&
                      p.kernel[2] == 3;
    if (half) {
      (k3x3 ? max_pool_vec_kernel<kH16, V, 3>
            : max_pool_vec_kernel<kH16, V>)<<<blocks, kThreads, 0, stream>>>(xv, yv, p, n32);
    } else if (dt == DataType::kInt8) {
      (k3x3 ? max_pool_vec_kernel<kS8, V, 3>
            : max_pool_vec_kernel<kS8, V>)<<<blocks, kThreads, 0, stream>>>(xv, yv, p, n32);
    } else if (dt == DataType::kUInt8) {
      (k3x3 ? max_pool_vec_kernel<kU8, V, 3>
            : max_pool_vec_kernel<kU8, V>)<<<blocks, kThreads, 0, stream>>>(xv, yv, p, n32);
    } else {
      (k3x3 ? max_pool_vec_kernel<kF8, V, 3>
            : max_pool_vec_kernel<kF8, V>)<<<blocks, kThreads, 0, stream>>>(xv, yv, p, n32);
    }
    return cudaGetLastError();
  };
  // Channels-last bytes and float16: 16 (or 4) bytes of channels per thread.
  if ((bytes || half) && p.channels > 0 && pool_fits_int32(p)) {
    if ((p.channels * elem) % 16 == 0 && aligned(16)) return vec(uint4{});
    if ((p.channels * elem) % 4 == 0 && aligned(4)) return vec(uint32_t{});
  }
  if (dispatch_float(dt, run)) return cudaGetLastError();
  if (dt == DataType::kInt8) {
    run(int8_t{});
  } else if (dt == DataType::kUInt8) {
    run(uint8_t{});
  } else if (dt == DataType::kFloat8E4M3FN) {
    run(E4M3{});
  } else if (dt == DataType::kFloat8E5M2) {
    run(E5M2{});
  } else {
    return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

cudaError_t avg_pool(DataType dt, const void* x, void* y, const PoolDesc& p, bool count_include_pad,
                     cudaStream_t stream) {
  const int64_t n = pool_outputs(p);
  if (n <= 0) return cudaSuccess;
  const bool ok = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    launch_pool<T, false>(x, y, p, count_include_pad, stream);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t global_pool(DataType dt, const void* x, void* y, int64_t planes, int64_t size,
                        bool is_max, cudaStream_t stream) {
  if (planes <= 0) return cudaSuccess;
  const bool ok = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    global_pool_kernel<T><<<warp_blocks(planes), kWarpsPerBlock * kWarp, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), planes, size, is_max);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t softmax(DataType dt, Soft kind, const void* x, void* y, int64_t outer, int64_t n,
                    int64_t inner, cudaStream_t stream) {
  if (outer * n * inner <= 0) return cudaSuccess;
  const bool ok = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    const unsigned blocks = warp_blocks(outer), threads = kWarpsPerBlock * kWarp;
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    const int ni = static_cast<int>(n);
    if (inner == 1 && n <= kWarp)
      softmax_rows_reg_kernel<T, 1><<<blocks, threads, 0, stream>>>(xt, yt, outer, ni, kind);
    else if (inner == 1 && n <= 2 * kWarp)
      softmax_rows_reg_kernel<T, 2><<<blocks, threads, 0, stream>>>(xt, yt, outer, ni, kind);
    else if (inner == 1 && n <= 4 * kWarp)
      softmax_rows_reg_kernel<T, 4><<<blocks, threads, 0, stream>>>(xt, yt, outer, ni, kind);
    else if (inner == 1 && n <= 8 * kWarp)
      softmax_rows_reg_kernel<T, 8><<<blocks, threads, 0, stream>>>(xt, yt, outer, ni, kind);
    else if (inner == 1 && n <= 32 * kWarp)
      softmax_rows_reg_kernel<T, 32><<<blocks, threads, 0, stream>>>(xt, yt, outer, ni, kind);
    else if (inner == 1)
      softmax_rows_kernel<T><<<blocks, threads, 0, stream>>>(xt, yt, outer, n, kind);
    else
      softmax_cols_kernel<T><<<blocks_for(outer * inner), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), outer, n, inner, kind);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t layer_norm(DataType dt, const void* x, const void* scale, const void* bias, void* y,
                       int64_t rows, int64_t d, float eps, float* mean, float* inv_std,
                       cudaStream_t stream) {
  return layer_norm_any<false>(dt, x, scale, bias, y, rows, d, eps, mean, inv_std, LnQuant{},
                               stream);
}

cudaError_t layer_norm_quantize(DataType dt, const void* x, const void* scale, const void* bias,
                                void* y, int64_t rows, int64_t d, float eps, const LnQuant& q,
                                cudaStream_t stream) {
  if (q.grid0 < 0 || q.grid1 < 0 || (q.grid0 > 0 && q.grid0 * q.grid1 != rows))
    return cudaErrorInvalidValue;
  return layer_norm_any<true>(dt, x, scale, bias, y, rows, d, eps, nullptr, nullptr, q, stream);
}

// The reduction of [outer, r, inner] by the kernel that suits the shape: a warp per row (inner
// 1), the split middle axis (long r, few outputs), else a thread per output.
template <typename T, typename O, typename L>
void launch_reduce(const T* x, O* y, int64_t outer, int64_t r, int64_t inner, Reduce kind, L load,
                   cudaStream_t stream) {
  if (inner == 1)
    reduce_rows_kernel<T, O, L>
        <<<warp_blocks(outer), kWarpsPerBlock * kWarp, 0, stream>>>(x, y, outer, r, kind, load);
  else if (kind != Reduce::kLogSumExp && r >= 4 * kMidSlices && outer <= 65535 &&
           outer * inner < int64_t{1} << 20)
    reduce_mid_kernel<T, O, L>
        <<<dim3(static_cast<unsigned>((inner + kWarp - 1) / kWarp), static_cast<unsigned>(outer)),
           kWarp * kMidSlices, 0, stream>>>(x, y, r, inner, kind, load);
  else
    reduce_cols_kernel<T, O, L>
        <<<blocks_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, r, inner, kind, load);
}

cudaError_t global_pool_dequant(DataType xt, const void* x, float* y, int64_t outer, int64_t r,
                                int64_t inner, float scale, float zp, bool is_max,
                                cudaStream_t stream) {
  if (!(xt == DataType::kInt8 || xt == DataType::kUInt8 || xt == DataType::kFloat8E4M3FN ||
        xt == DataType::kFloat8E5M2))
    return cudaErrorNotSupported;
  if (outer * inner <= 0) return cudaSuccess;
  launch_reduce(static_cast<const uint8_t*>(x), y, outer, r, inner,
                is_max ? Reduce::kMax : Reduce::kMean, DequantLoad{xt, scale, zp}, stream);
  return cudaGetLastError();
}

cudaError_t reduce(DataType dt, Reduce kind, const void* x, void* y, int64_t outer, int64_t r,
                   int64_t inner, cudaStream_t stream) {
  if (outer * inner <= 0) return cudaSuccess;
  const bool ok = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    launch_reduce(static_cast<const T*>(x), static_cast<T*>(y), outer, r, inner, kind, FloatLoad{},
                  stream);
  });
  if (ok) return cudaGetLastError();
  const bool int_kind = kind == Reduce::kSum || kind == Reduce::kMean || kind == Reduce::kMax ||
                        kind == Reduce::kMin || kind == Reduce::kProd;
  if (!int_kind) return cudaErrorNotSupported;
  if (dt == DataType::kInt32) {
    reduce_int_kernel<int32_t><<<blocks_for(outer * inner), kThreads, 0, stream>>>(
        static_cast<const int32_t*>(x), static_cast<int32_t*>(y), outer, r, inner, kind);
  } else if (dt == DataType::kInt64) {
    reduce_int_kernel<int64_t><<<blocks_for(outer * inner), kThreads, 0, stream>>>(
        static_cast<const int64_t*>(x), static_cast<int64_t*>(y), outer, r, inner, kind);
  } else {
    return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

}  // namespace trtutils::cuda::k
