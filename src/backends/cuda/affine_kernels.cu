// BatchNormalization as a per-channel affine, with the activation and the per-tensor
// QuantizeLinear that follow it in pre-activation networks (DenseNet's BN -> ReLU -> Q before
// each convolution) in the same pass: one read of x, one write of y. With a Concat on the channel
// axis in front (DenseNet's dense layers: every concatenation's only reader is a BN), the inputs
// are read where they lie and the concatenation is never written.
#include "backends/cuda/device_util.cuh"

namespace trtutils::cuda::k {

namespace {

// One element: the affine rounded to T, the activation rounded to T, then (Q) the quantized
// byte of that value, as the separate nodes compute them.
template <typename T, bool Q>
__device__ __forceinline__ float affine_one(T x, float s, float b, const AffineAct& p) {
  float v = to_float(from_float<T>(to_float(x) * s + b));
  if (p.act != Act::kNone) v = to_float(from_float<T>(apply_act(p.act, v, p.alpha, p.beta)));
  if constexpr (Q) return static_cast<float>(byte_of(p.q_dtype, v / p.q_scale, p.q_zero));
  return v;
}

template <typename T, bool Q>
__device__ __forceinline__ void store_one(void* y, int64_t i, float v) {
  if constexpr (Q)
    static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(v);
  else
    static_cast<T*>(y)[i] = from_float<T>(v);
}

// Any shape: one element per step, c = (i / inner) % channels.
template <typename T, bool Q>
__global__ void affine_act_kernel(const T* x, void* y, const float* scale, const float* shift,
                                  int64_t n, int64_t channels, int64_t inner, AffineAct p) {
  TRT_GRID_STRIDE(i, n) {
    const int64_t c = (i / inner) % channels;
    store_one<T, Q>(y, i, affine_one<T, Q>(x[i], scale[c], shift[c], p));
  }
}

// Four elements from p (aligned to four of T).
template <typename T>
__device__ __forceinline__ void load4(const T* p, T (&in)[4]) {
  if constexpr (sizeof(T) == 4) {
    const float4 q = *reinterpret_cast<const float4*>(p);
    in[0] = q.x, in[1] = q.y, in[2] = q.z, in[3] = q.w;
  } else {
    const uint2 q = *reinterpret_cast<const uint2*>(p);
    memcpy(in, &q, sizeof q);
  }
}

// Four results as elements 4v..4v+3 of y: bytes when quantized, else T.
template <typename T, bool Q>
__device__ __forceinline__ void store4(void* y, int64_t v, const float (&o)[4]) {
  if constexpr (Q) {
    reinterpret_cast<uint32_t*>(y)[v] =
        static_cast<uint32_t>(o[0]) | (static_cast<uint32_t>(o[1]) << 8) |
        (static_cast<uint32_t>(o[2]) << 16) | (static_cast<uint32_t>(o[3]) << 24);
  } else if constexpr (sizeof(T) == 4) {
    reinterpret_cast<float4*>(y)[v] = make_float4(o[0], o[1], o[2], o[3]);
  } else {
    T r[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) r[j] = from_float<T>(o[j]);
    uint2 q;
    memcpy(&q, r, sizeof q);
    reinterpret_cast<uint2*>(y)[v] = q;
  }
}

// Four elements of one channel run (inner % 4 == 0: NCHW planes) or of four consecutive channels
// (inner == 1, channels % 4 == 0: NHWC rows) per step, 32-bit indices: one division pair per
// four elements instead of per element, vector loads and stores.
template <typename T, bool Q>
__global__ void affine_act_vec4_kernel(const T* x, void* y, const float* scale, const float* shift,
                                       uint32_t n4, uint32_t channels, uint32_t inner,
                                       AffineAct p) {
  for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < n4; v += gridDim.x * blockDim.x) {
    const uint32_t i = v * 4;
    const bool rows = inner == 1;
    const uint32_t c = rows ? i % channels : (i / inner) % channels;
    T in[4];
    load4(x + i, in);
    float o[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t cj = rows ? c + j : c;
      o[j] = affine_one<T, Q>(in[j], scale[cj], shift[cj], p);
    }
    store4<T, Q>(y, v, o);
  }
}

// The input of s holding channel c (s.begin[k] <= c < s.begin[k + 1]).
__device__ __forceinline__ int source_of(const ConcatSources& s, int32_t c) {
  int lo = 0, hi = s.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (s.begin[mid] <= c)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// The same over the concatenation of s's inputs on the channel axis, read where they lie: element
// (o, c, pos) of the [outer, channels, inner] result comes from input k = source_of(c) at
// (o, c - begin[k], pos) of its [outer, channels_k, inner]. kVec: four elements per step (every
// input's channel count a multiple of 4 when inner == 1, else inner % 4 == 0), else one.
template <typename T, bool Q, bool kVec>
__global__ void concat_affine_act_kernel(ConcatSources s, void* y, const float* scale,
                                         const float* shift, int64_t steps, int32_t channels,
                                         int32_t inner, AffineAct p) {
  constexpr int kV = kVec ? 4 : 1;
  TRT_GRID_STRIDE(v, steps) {
    const int64_t i = v * kV;
    const int64_t plane = i / inner;
    const auto pos = static_cast<int32_t>(i - plane * inner);
    const int64_t o = plane / channels;
    const auto c = static_cast<int32_t>(plane - o * channels);
    const int k = source_of(s, c);
    const int32_t ck = s.begin[k + 1] - s.begin[k];
    const T* src = static_cast<const T*>(s.ptr[k]) + (o * ck + (c - s.begin[k])) * inner + pos;
    if constexpr (kVec) {
      T in[4];
      load4(src, in);
      float out[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int32_t cj = inner == 1 ? c + j : c;
        out[j] = affine_one<T, Q>(in[j], scale[cj], shift[cj], p);
      }
      store4<T, Q>(y, v, out);
    } else {
      store_one<T, Q>(y, i, affine_one<T, Q>(*src, scale[c], shift[c], p));
    }
  }
}

template <typename T, bool Q>
void launch_affine(const T* x, void* y, const float* scale, const float* shift, int64_t n,
                   int64_t channels, int64_t inner, const AffineAct& p, cudaStream_t stream) {
  const bool runs = inner % 4 == 0 || (inner == 1 && channels % 4 == 0);
  const bool aligned = reinterpret_cast<uintptr_t>(x) % (4 * sizeof(T)) == 0 &&
                       reinterpret_cast<uintptr_t>(y) % (Q ? 4 : 4 * sizeof(T)) == 0;
  if (runs && aligned && n < (int64_t{1} << 32) && channels < (int64_t{1} << 31)) {
    const int64_t n4 = n / 4;
    affine_act_vec4_kernel<T, Q><<<blocks_for(n4), kThreads, 0, stream>>>(
        x, y, scale, shift, static_cast<uint32_t>(n4), static_cast<uint32_t>(channels),
        static_cast<uint32_t>(inner), p);
    return;
  }
  affine_act_kernel<T, Q>
      <<<blocks_for(n), kThreads, 0, stream>>>(x, y, scale, shift, n, channels, inner, p);
}

}  // namespace

cudaError_t channel_affine_act(DataType dt, const void* x, void* y, const float* scale,
                               const float* shift, int64_t n, int64_t channels, int64_t inner,
                               const AffineAct& p, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (p.quantize && !(p.q_dtype == DataType::kInt8 || p.q_dtype == DataType::kUInt8 ||
                      p.q_dtype == DataType::kFloat8E4M3FN || p.q_dtype == DataType::kFloat8E5M2))
    return cudaErrorNotSupported;
  const bool ok = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* xt = static_cast<const T*>(x);
    if (p.quantize)
      launch_affine<T, true>(xt, y, scale, shift, n, channels, inner, p, stream);
    else
      launch_affine<T, false>(xt, y, scale, shift, n, channels, inner, p, stream);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t concat_channel_affine_act(DataType dt, const ConcatSources& s, void* y,
                                      const float* scale, const float* shift, int64_t outer,
                                      int64_t inner, const AffineAct& p, cudaStream_t stream) {
  if (s.count < 1 || s.count > ConcatSources::kMax) return cudaErrorInvalidValue;
  const int64_t channels = s.begin[s.count];
  const int64_t n = outer * channels * inner;
  if (n <= 0) return cudaSuccess;
  if (channels >= (int64_t{1} << 31) || inner >= (int64_t{1} << 31) ||
      (p.quantize && !(p.q_dtype == DataType::kInt8 || p.q_dtype == DataType::kUInt8 ||
                       p.q_dtype == DataType::kFloat8E4M3FN || p.q_dtype == DataType::kFloat8E5M2)))
    return cudaErrorNotSupported;
  const size_t esz = dt == DataType::kFloat32 ? 4 : 2;
  bool vec = inner == 1 ? true : inner % 4 == 0;
  for (int k = 0; k < s.count; ++k)
    vec = vec && reinterpret_cast<uintptr_t>(s.ptr[k]) % (4 * esz) == 0 &&
          (inner != 1 || (s.begin[k + 1] - s.begin[k]) % 4 == 0);
  vec = vec && reinterpret_cast<uintptr_t>(y) % (p.quantize ? 4 : 4 * esz) == 0;
  const auto ch = static_cast<int32_t>(channels);
  const auto in = static_cast<int32_t>(inner);
  const bool ok = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    auto go = [&](auto kernel, int64_t steps) {
      kernel<<<blocks_for(steps), kThreads, 0, stream>>>(s, y, scale, shift, steps, ch, in, p);
    };
    if (vec && p.quantize)
      go(concat_affine_act_kernel<T, true, true>, n / 4);
    else if (vec)
      go(concat_affine_act_kernel<T, false, true>, n / 4);
    else if (p.quantize)
      go(concat_affine_act_kernel<T, true, false>, n);
    else
      go(concat_affine_act_kernel<T, false, false>, n);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

}  // namespace trtutils::cuda::k
