// BatchNormalization as a per-channel affine, with the activation and the per-tensor
// QuantizeLinear that follow it in pre-activation networks (DenseNet's BN -> ReLU -> Q before
// each convolution) in the same pass: one read of x, one write of y.
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
    if constexpr (sizeof(T) == 4) {
      const float4 q = reinterpret_cast<const float4*>(x)[v];
      in[0] = q.x, in[1] = q.y, in[2] = q.z, in[3] = q.w;
    } else {
      const uint2 q = reinterpret_cast<const uint2*>(x)[v];
      memcpy(in, &q, sizeof q);
    }
    float o[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t cj = rows ? c + j : c;
      o[j] = affine_one<T, Q>(in[j], scale[cj], shift[cj], p);
    }
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

}  // namespace trtutils::cuda::k
