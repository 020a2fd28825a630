// Depthwise convolution (one group per channel, multiplier 1) for float32 / float16 / bfloat16,
// channels-last: each thread computes 16 bytes of channels of one output pixel (8 float16 /
// bfloat16 or 4 float32 values) with 16-byte loads of X and of W packed [taps, C], float sums
// over the in-bounds taps, then bias, residual and the activation before one 16-byte store.
// cuDNN's NHWC kernels for these memory-bound layers run at ~10% of the bandwidth on MobileNetV2.
// Kernels 3, 5 and 7 wide (the convolutions of MobileNets, EfficientNets, ConvNeXt) run row-tiled
// (conv_depthwise_rows_kernel) unless DepthwiseDesc::variant asks for the per-pixel kernel.
#include "backends/cuda/device_util.cuh"

namespace trtutils::cuda::k {

namespace {

// 16 bytes of channels: 8 float16 / bfloat16 or 4 float32 values.
template <typename T>
union Chunk {
  static constexpr int kV = 16 / sizeof(T);
  uint4 u;
  T t[kV];
};

// The epilogue of one output chunk: acc + bias + residual, the activation, one 16-byte store to
// y[o] (b: the chunk's bias, read when bias is set).
template <typename T>
__device__ __forceinline__ void finish_chunk(const float (&acc)[Chunk<T>::kV], const Chunk<T>& b,
                                             bool bias, const uint4* residual, uint4* y, int64_t o,
                                             Act act, float alpha, float beta) {
  Chunk<T> res, out;
  if (residual) res.u = residual[o];
#pragma unroll
  for (int k = 0; k < Chunk<T>::kV; ++k) {
    float v = acc[k];
    if (bias) v += to_float(b.t[k]);
    if (residual) v += to_float(res.t[k]);
    out.t[k] = from_float<T>(apply_act(act, v, alpha, beta));
  }
  y[o] = out.u;
}

template <typename T>
__global__ void conv_depthwise_kernel(const uint4* x, const uint4* w, const uint4* bias,
                                      const uint4* residual, uint4* y, DepthwiseDesc d, Act act,
                                      float alpha, float beta, int32_t total) {
  constexpr int kV = Chunk<T>::kV;
  const int32_t cv = d.c / kV;
  for (int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x); i < total;
       i += static_cast<int32_t>(gridDim.x * blockDim.x)) {
    const int32_t c = i % cv;
    float acc[kV];
#pragma unroll
    for (int k = 0; k < kV; ++k) acc[k] = 0.0f;
    depthwise_taps(d, i / cv, [&](int32_t pixel, int32_t tap) {
      Chunk<T> xv, wv;
      xv.u = x[pixel * cv + c];
      wv.u = w[tap * cv + c];
#pragma unroll
      for (int k = 0; k < kV; ++k) acc[k] += to_float(xv.t[k]) * to_float(wv.t[k]);
    });
    Chunk<T> b;
    if (bias) b.u = bias[c];
    finish_chunk<T>(acc, b, bias != nullptr, residual, y, i, act, alpha, beta);
  }
}

// The row-tiled form for the common kernels (kKw = 3, 5 or 7 columns, column stride kSw, no
// column dilation): each thread computes kTile consecutive output pixels of one row for 16 bytes
// of channels. Per kernel row, the input segment the kTile pixels share is loaded once
// ((kTile - 1) * kSw + kKw 16-byte loads, zeros outside the image) and each weight once, and the
// index arithmetic is done once per tile: the per-pixel kernel above loads kKw chunks per pixel
// and kernel row and repeats the divisions per pixel.
// Two blocks per SM (launch bounds): at most 128 registers (two instances spill 8 bytes).
constexpr int kTile = 4;

template <typename T, int kKw, int kSw>
__global__ void __launch_bounds__(kThreads, 2)
    conv_depthwise_rows_kernel(const uint4* x, const uint4* w, const uint4* bias,
                               const uint4* residual, uint4* y, DepthwiseDesc d, Act act,
                               float alpha, float beta, int32_t tiles_w, int32_t total) {
  constexpr int kV = Chunk<T>::kV;
  constexpr int kIn = (kTile - 1) * kSw + kKw;
  const int32_t cv = d.c / kV;
  for (int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x); i < total;
       i += static_cast<int32_t>(gridDim.x * blockDim.x)) {
    const int32_t c = i % cv;
    int32_t rest = i / cv;
    const int32_t ox0 = (rest % tiles_w) * kTile;
    rest /= tiles_w;
    const int32_t oy = rest % d.oh;
    const int32_t n = rest / d.oh;
    const int32_t iw0 = ox0 * kSw - d.pw;
    float acc[kTile][kV];
#pragma unroll
    for (int t = 0; t < kTile; ++t)
#pragma unroll
      for (int k = 0; k < kV; ++k) acc[t][k] = 0.0f;
    for (int32_t r = 0; r < d.kh; ++r) {
      const int32_t ih = oy * d.sh - d.ph + r * d.dh;
      if (ih < 0 || ih >= d.h) continue;
      const uint4* xrow = x + (static_cast<int64_t>(n) * d.h + ih) * d.w * cv + c;
      Chunk<T> in[kIn];
#pragma unroll
      for (int j = 0; j < kIn; ++j) {
        const int32_t iw = iw0 + j;
        in[j].u =
            iw >= 0 && iw < d.w ? xrow[static_cast<int64_t>(iw) * cv] : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int s = 0; s < kKw; ++s) {
        Chunk<T> wv;
        wv.u = w[(r * kKw + s) * cv + c];
#pragma unroll
        for (int k = 0; k < kV; ++k) {
          const float wf = to_float(wv.t[k]);
#pragma unroll
          for (int t = 0; t < kTile; ++t) acc[t][k] += to_float(in[t * kSw + s].t[k]) * wf;
        }
      }
    }
    Chunk<T> b;
    if (bias) b.u = bias[c];
#pragma unroll
    for (int t = 0; t < kTile; ++t) {
      if (ox0 + t >= d.ow) break;
      const int64_t o = ((static_cast<int64_t>(n) * d.oh + oy) * d.ow + ox0 + t) * cv + c;
      finish_chunk<T>(acc[t], b, bias != nullptr, residual, y, o, act, alpha, beta);
    }
  }
}

// Launches the row-tiled kernel when the problem's kernel width and stride have an instance;
// false (nothing launched) otherwise.
template <typename T>
bool launch_rows(const uint4* x, const uint4* w, const uint4* bias, const uint4* residual, uint4* y,
                 const DepthwiseDesc& d, Act act, float alpha, float beta, cudaStream_t stream) {
  if (d.dw != 1) return false;
  const int32_t tiles_w = (d.ow + kTile - 1) / kTile;
  const int64_t total =
      static_cast<int64_t>(d.n) * d.oh * tiles_w * (d.c / static_cast<int>(16 / sizeof(T)));
  if (total > 0x7fffffff) return false;
  const auto n = static_cast<int32_t>(total);
  auto go = [&](auto kernel) {
    kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, w, bias, residual, y, d, act, alpha, beta,
                                                       tiles_w, n);
    return true;
  };
  const int key = d.kw * 10 + d.sw;
  switch (key) {
    case 31:
      return go(conv_depthwise_rows_kernel<T, 3, 1>);
    case 32:
      return go(conv_depthwise_rows_kernel<T, 3, 2>);
    case 51:
      return go(conv_depthwise_rows_kernel<T, 5, 1>);
    case 52:
      return go(conv_depthwise_rows_kernel<T, 5, 2>);
    case 71:
      return go(conv_depthwise_rows_kernel<T, 7, 1>);
    default:
      return false;
  }
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace

cudaError_t conv_depthwise(DataType dt, const void* x, const void* w, const void* bias,
                           const void* residual, void* y, const DepthwiseDesc& d, Act act,
                           float alpha, float beta, cudaStream_t stream) {
  const int v = dt == DataType::kFloat32 ? 4 : 8;
  if ((dt != DataType::kFloat32 && dt != DataType::kFloat16 && dt != DataType::kBFloat16) ||
      d.c % v != 0 || !aligned16(x) || !aligned16(w) || !aligned16(y) ||
      (bias && !aligned16(bias)) || (residual && !aligned16(residual)))
    return cudaErrorNotSupported;
  const int64_t total = static_cast<int64_t>(d.n) * d.oh * d.ow * (d.c / v);
  if (total == 0) return cudaSuccess;
  if (total > 0x7fffffff) return cudaErrorNotSupported;
  const auto* xp = static_cast<const uint4*>(x);
  const auto* wp = static_cast<const uint4*>(w);
  const auto* bp = static_cast<const uint4*>(bias);
  const auto* rp = static_cast<const uint4*>(residual);
  auto* yp = static_cast<uint4*>(y);
  const auto n = static_cast<int32_t>(total);
  dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    if (d.variant != DepthwiseVariant::kPixel &&
        launch_rows<T>(xp, wp, bp, rp, yp, d, act, alpha, beta, stream))
      return;
    conv_depthwise_kernel<T>
        <<<blocks_for(total), kThreads, 0, stream>>>(xp, wp, bp, rp, yp, d, act, alpha, beta, n);
  });
  return cudaGetLastError();
}

}  // namespace trtutils::cuda::k
