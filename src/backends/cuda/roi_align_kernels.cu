// RoiAlign: roi_align_kernels.h has the contract.
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/roi_align_kernels.h"

namespace trtutils::cuda::k {
namespace {

template <typename R>
__device__ __forceinline__ float roi_at(const void* rois, int64_t i) {
  return to_float(static_cast<const R*>(rois)[i]);
}

template <typename T, typename R>
__global__ void roi_align_kernel(RoiAlignArgs a) {
  TRT_GRID_STRIDE(e, a.r * a.c * a.attrs.oh * a.attrs.ow) {
    const int64_t pw = e % a.attrs.ow, ph = (e / a.attrs.ow) % a.attrs.oh;
    const int64_t ch = (e / (a.attrs.ow * a.attrs.oh)) % a.c,
                  r = e / (a.attrs.ow * a.attrs.oh * a.c);
    T* y = static_cast<T*>(a.y);
    const int64_t b = a.batch[r];
    if (b < 0 || b >= a.n || a.h == 0 || a.w == 0) {
      y[e] = from_float<T>(0.0f);
      continue;
    }
    const ops::roi::Region g =
        ops::roi::region(a.attrs, roi_at<R>(a.rois, 4 * r), roi_at<R>(a.rois, 4 * r + 1),
                         roi_at<R>(a.rois, 4 * r + 2), roi_at<R>(a.rois, 4 * r + 3));
    const T* m = static_cast<const T*>(a.x) + (b * a.c + ch) * a.h * a.w;
    float acc = 0.0f;
    bool first = true;
    for (int64_t iy = 0; iy < g.gh; ++iy)
      for (int64_t ix = 0; ix < g.gw; ++ix) {
        const ops::roi::Sample s = ops::roi::bin_sample(g, ph, pw, iy, ix, a.h, a.w);
        if (a.attrs.max_mode) {
          float v = s.w[0] * to_float(m[s.pos[0]]);
          for (int k = 1; k < 4; ++k) v = fmaxf(v, s.w[k] * to_float(m[s.pos[k]]));
          acc = first ? v : fmaxf(acc, v);
          first = false;
        } else {
          for (int k = 0; k < 4; ++k) acc += s.w[k] * to_float(m[s.pos[k]]);
        }
      }
    y[e] = from_float<T>(a.attrs.max_mode ? acc : acc / g.count);
  }
}

}  // namespace

cudaError_t roi_align(const RoiAlignArgs& a, cudaStream_t stream) {
  const int64_t n = a.r * a.c * a.attrs.oh * a.attrs.ow;
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
