// GridSample: grid_sample_kernels.h has the contract.
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/grid_sample_kernels.h"

namespace trtutils::cuda::k {
namespace {

template <typename T, typename G>
__global__ void grid_sample_kernel(GridSampleArgs a) {
  const int64_t hw = a.p.h * a.p.w, howo = a.ho * a.wo;
  TRT_GRID_STRIDE(e, a.n * a.c * howo) {
    const int64_t i = e % howo, nc = e / howo, b = nc / a.c;
    const T* plane = static_cast<const T*>(a.x) + nc * hw;
    const G* g = static_cast<const G*>(a.grid) + (b * howo + i) * 2;
    const int64_t w = a.p.w;
    auto at = [plane, w](int64_t yy, int64_t xx) { return to_float(plane[yy * w + xx]); };
    static_cast<T*>(a.y)[e] =
        from_float<T>(ops::grid::sample(a.p, to_float(g[0]), to_float(g[1]), at));
  }
}

}  // namespace

cudaError_t grid_sample(const GridSampleArgs& a, cudaStream_t stream) {
  const int64_t n = a.n * a.c * a.ho * a.wo;
  if (n <= 0) return cudaSuccess;
  bool ok = false;
  dispatch_float(a.dt, [&](auto tag) {
    using T = decltype(tag);
    ok = dispatch_float(a.grid_dt, [&](auto gtag) {
      using G = decltype(gtag);
      grid_sample_kernel<T, G><<<blocks_for(n), kThreads, 0, stream>>>(a);
    });
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

}  // namespace trtutils::cuda::k
