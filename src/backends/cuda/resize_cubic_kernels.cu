// Cubic Resize (contract: resize_cubic_kernels.h).
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/resize_cubic_kernels.h"

namespace trtutils::cuda::k {
namespace {

// One thread per output element; the 4 taps summed as the CPU does: 0 + w0 s0 + w1 s1 + ...
template <typename S, typename D>
__global__ void cubic_pass_kernel(const S* src, D* dst, CubicPass p, int64_t numel) {
  TRT_GRID_STRIDE(e, numel) {
    const int64_t i = e % p.inner;
    const int64_t j = (e / p.inner) % p.out_len;
    const int64_t o = e / (p.inner * p.out_len);
    const S* s = src + o * p.n * p.inner + i;
    float acc = 0.0f;
    for (int t = 0; t < 4; ++t)
      acc =
          __fadd_rn(acc, __fmul_rn(p.weight[4 * j + t], to_float(s[p.index[4 * j + t] * p.inner])));
    dst[e] = from_float<D>(acc);
  }
}

template <typename T>
__global__ void fill_outside_kernel(T* y, OutsideMask m, T value, int64_t numel) {
  TRT_GRID_STRIDE(i, numel) {
    int64_t rem = i;
    bool outside = false;
    for (int a = m.rank - 1; a >= 0; --a) {
      const int64_t o = rem % m.out[a];
      rem /= m.out[a];
      outside = outside || (m.outside[a] && m.outside[a][o] != 0);
    }
    if (outside) y[i] = value;
  }
}

}  // namespace

cudaError_t resize_cubic_pass(DataType src_dt, const void* src, DataType dst_dt, void* dst,
                              const CubicPass& p, cudaStream_t stream) {
  const int64_t numel = p.outer * p.out_len * p.inner;
  if (numel <= 0) return cudaSuccess;
  bool ok = false;
  dispatch_float(src_dt, [&](auto s_tag) {
    using S = decltype(s_tag);
    ok = dispatch_float(dst_dt, [&](auto d_tag) {
      using D = decltype(d_tag);
      cubic_pass_kernel<S, D><<<blocks_for(numel), kThreads, 0, stream>>>(
          static_cast<const S*>(src), static_cast<D*>(dst), p, numel);
    });
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t resize_fill_outside(DataType dt, void* y, const OutsideMask& m, float value,
                                int64_t numel, cudaStream_t stream) {
  if (numel <= 0) return cudaSuccess;
  const bool ok = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    fill_outside_kernel<T><<<blocks_for(numel), kThreads, 0, stream>>>(static_cast<T*>(y), m,
                                                                       from_float<T>(value), numel);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

}  // namespace trtutils::cuda::k
