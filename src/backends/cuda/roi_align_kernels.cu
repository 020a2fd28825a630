// RoiAlign: roi_align_kernels.h has the contract.
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/roi_align_kernels.h"

namespace trtutils::cuda::k {
namespace {

template <typename R>
__device__ __forceinline__ float roi_at(const void* rois, int64_t i) {
  return to_float(static_cast<const R*>(rois)[i]);
}

// The bilinear sample at (y, x) of an H x W map m (zero more than a pixel outside), or, in max
// mode, the largest of its four weighted corners (the CPU kernel's rules).
template <typename T>
__device__ float sample(const T* m, float y, float x, int64_t h, int64_t w, bool max_mode,
                        bool& inside) {
  inside = !(y < -1.0f || y > static_cast<float>(h) || x < -1.0f || x > static_cast<float>(w));
  if (!inside) return 0.0f;
  y = fmaxf(y, 0.0f);
  x = fmaxf(x, 0.0f);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= h - 1) {
    y1 = y0 = h - 1;
    y = static_cast<float>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x1 = x0 = w - 1;
    x = static_cast<float>(x0);
  } else {
    x1 = x0 + 1;
  }
  const float ly = y - static_cast<float>(y0), lx = x - static_cast<float>(x0);
  const float hy = 1.0f - ly, hx = 1.0f - lx;
  const float v0 = __fmul_rn(__fmul_rn(hy, hx), to_float(m[y0 * w + x0]));
  const float v1 = __fmul_rn(__fmul_rn(hy, lx), to_float(m[y0 * w + x1]));
  const float v2 = __fmul_rn(__fmul_rn(ly, hx), to_float(m[y1 * w + x0]));
  const float v3 = __fmul_rn(__fmul_rn(ly, lx), to_float(m[y1 * w + x1]));
  if (max_mode) return fmaxf(fmaxf(v0, v1), fmaxf(v2, v3));
  return __fadd_rn(__fadd_rn(__fadd_rn(v0, v1), v2), v3);
}

template <typename T, typename R>
__global__ void roi_align_kernel(RoiAlignArgs a) {
  TRT_GRID_STRIDE(e, a.r * a.c * a.oh * a.ow) {
    const int64_t pw = e % a.ow, ph = (e / a.ow) % a.oh;
    const int64_t ch = (e / (a.ow * a.oh)) % a.c, r = e / (a.ow * a.oh * a.c);
    T* y = static_cast<T*>(a.y);
    const int64_t b = a.batch[r];
    if (b < 0 || b >= a.n || a.h == 0 || a.w == 0) {
      y[e] = from_float<T>(0.0f);
      continue;
    }
    const float off = a.half_pixel ? 0.5f : 0.0f;
    const float sw = roi_at<R>(a.rois, 4 * r) * a.scale - off;
    const float sh = roi_at<R>(a.rois, 4 * r + 1) * a.scale - off;
    float rw = roi_at<R>(a.rois, 4 * r + 2) * a.scale - off - sw;
    float rh = roi_at<R>(a.rois, 4 * r + 3) * a.scale - off - sh;
    if (!a.half_pixel) {
      rw = fmaxf(rw, 1.0f);
      rh = fmaxf(rh, 1.0f);
    }
    const float bh = rh / static_cast<float>(a.oh), bw = rw / static_cast<float>(a.ow);
    const int64_t gh = a.sampling > 0 ? a.sampling : static_cast<int64_t>(ceilf(rh / a.oh));
    const int64_t gw = a.sampling > 0 ? a.sampling : static_cast<int64_t>(ceilf(rw / a.ow));
    const float count = static_cast<float>(gh * gw > 1 ? gh * gw : 1);
    const T* m = static_cast<const T*>(a.x) + (b * a.c + ch) * a.h * a.w;
    float acc = 0.0f;
    bool first = true;
    for (int64_t iy = 0; iy < gh; ++iy)
      for (int64_t ix = 0; ix < gw; ++ix) {
        const float yy = sh + ph * bh + (iy + 0.5f) * bh / static_cast<float>(gh);
        const float xx = sw + pw * bw + (ix + 0.5f) * bw / static_cast<float>(gw);
        bool inside;
        const float v = sample(m, yy, xx, a.h, a.w, a.max_mode, inside);
        if (a.max_mode) {
          acc = first ? v : fmaxf(acc, v);
          first = false;
        } else {
          acc += v;
        }
      }
    y[e] = from_float<T>(a.max_mode ? acc : acc / count);
  }
}

}  // namespace

cudaError_t roi_align(const RoiAlignArgs& a, cudaStream_t stream) {
  const int64_t n = a.r * a.c * a.oh * a.ow;
  if (n <= 0) return cudaSuccess;
  bool ok = false;
  dispatch_float(a.dt, [&](auto tag) {
    using T = decltype(tag);
    ok = dispatch_float(a.rois_dt, [&](auto rtag) {
      using R = decltype(rtag);
      roi_align_kernel<T, R><<<blocks_for(n), kThreads, 0, stream>>>(a);
    });
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

}  // namespace trtutils::cuda::k
