// data::render_image on the GPU, one thread per output pixel. Every product and sum is rounded
// on its own (__fmul_rn / __fadd_rn: no multiply-add contraction), in the host code's order,
// so the bytes equal the host's: calibration data made on the CPU is what inference sees.
//   horizontal: h(sy) = p[sy][x0] * (1 - wx) + p[sy][x1] * wx      (data::LinearResizer)
//   vertical:   v = wy == 0 ? h(y0) : h(y0) * (1 - wy) + h(y1) * wy
//   output:     cast(v * scale + bias), pad cells cast(pad_value * scale + bias)
#include <cuda_fp16.h>

#include "backends/cuda/image_kernels.h"

namespace trtutils::cuda::k {
namespace {

template <typename T>
__device__ __forceinline__ T cast_out(float v);
template <>
__device__ __forceinline__ float cast_out<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half cast_out<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ uint8_t cast_out<uint8_t>(float v) {
  const float r = rintf(v);  // comparisons send NaN to 0, as on the host
  return r >= 255.0f ? 255 : (r > 0.0f ? static_cast<uint8_t>(r) : 0);
}
template <>
__device__ __forceinline__ int8_t cast_out<int8_t>(float v) {
  const float r = rintf(v);
  return r >= 127.0f ? 127 : (r > -128.0f ? static_cast<int8_t>(r) : -128);
}

__device__ __forceinline__ float mix(float a, float b, float w) {
  return __fadd_rn(__fmul_rn(a, __fsub_rn(1.0f, w)), __fmul_rn(b, w));
}

// Channel ch of the horizontally resized source row sy at box column bx.
__device__ __forceinline__ float hrow(const RenderArgs& a, int32_t sy, int64_t bx, int ch) {
  const uint8_t* row = a.src + static_cast<int64_t>(sy) * a.src_w * a.channels;
  const float p0 = row[static_cast<int64_t>(a.x0[bx]) * a.channels + ch];
  const float p1 = row[static_cast<int64_t>(a.x1[bx]) * a.channels + ch];
  return mix(p0, p1, a.wx[bx]);
}

template <typename T>
__global__ void render_kernel(RenderArgs a) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.height * a.width) return;
  const int64_t y = i / a.width, x = i - y * a.width;
  const int64_t by = y - a.top, bx = x - a.left;
  const bool inside = by >= 0 && by < a.box_h && bx >= 0 && bx < a.box_w;
  T* dst = static_cast<T*>(a.dst);
  const int64_t plane = a.height * a.width;
  for (int c = 0; c < a.channels; ++c) {
    float v = a.pad_value;
    if (inside) {
      const float wy = a.wy[by];
      v = hrow(a, a.y0[by], bx, a.srcc[c]);
      if (wy != 0.0f) v = mix(v, hrow(a, a.y1[by], bx, a.srcc[c]), wy);
    }
    const T out = cast_out<T>(__fadd_rn(__fmul_rn(v, a.scale[c]), a.bias[c]));
    dst[a.nchw ? c * plane + i : i * a.channels + c] = out;
  }
}

template <typename T>
cudaError_t launch(const RenderArgs& a, cudaStream_t stream) {
  const int64_t n = a.height * a.width;
  if (n == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  render_kernel<T>
      <<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace

cudaError_t render_image(const RenderArgs& a, cudaStream_t stream) {
  switch (a.dtype) {
    case DataType::kFloat32:
      return launch<float>(a, stream);
    case DataType::kFloat16:
      return launch<__half>(a, stream);
    case DataType::kUInt8:
      return launch<uint8_t>(a, stream);
    case DataType::kInt8:
      return launch<int8_t>(a, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace trtutils::cuda::k
