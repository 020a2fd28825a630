// InstanceNormalization / GroupNormalization: group_norm_kernels.h has the contract.
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/group_norm_kernels.h"

namespace trtutils::cuda::k {
namespace {

constexpr int kStatThreads = 512;

// stats[2 * (n * groups + g)] = mean, [+1] = 1 / sqrt(var + eps) of one (sample, group).
template <typename T>
__global__ void group_stats_kernel(GroupNormArgs a, float* stats) {
  const int64_t per_group = a.c / a.groups * a.inner;
  const T* x = static_cast<const T*>(a.x) + static_cast<int64_t>(blockIdx.x) * per_group;
  double s = 0, q = 0;
  for (int64_t i = threadIdx.x; i < per_group; i += blockDim.x) {
    const double v = to_float(x[i]);
    s += v;
    q += v * v;
  }
  __shared__ double ss[kStatThreads / 32], sq[kStatThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    q += __shfl_xor_sync(0xffffffffu, q, o);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) ss[warp] = s, sq[warp] = q;
  __syncthreads();
  if (threadIdx.x == 0) {
    s = q = 0;
    for (int w = 0; w < kStatThreads / 32; ++w) s += ss[w], q += sq[w];
    const double cnt = per_group > 0 ? static_cast<double>(per_group) : 1.0;
    const double mean = s / cnt;
    double var = q / cnt - mean * mean;
    if (var < 0) var = 0;
    stats[2 * blockIdx.x] = static_cast<float>(mean);
    stats[2 * blockIdx.x + 1] = static_cast<float>(1.0 / sqrt(var + static_cast<double>(a.eps)));
  }
}

template <typename T>
__global__ void group_apply_kernel(GroupNormArgs a, const float* stats) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const int64_t cpg = a.c / a.groups;
  TRT_GRID_STRIDE(e, a.n * a.c * a.inner) {
    const int64_t nc = e / a.inner;
    const int64_t ch = nc % a.c;
    const int64_t ng = (nc / a.c) * a.groups + ch / cpg;
    const int64_t p = a.per_channel ? ch : ch / cpg;
    const float v = (to_float(x[e]) - stats[2 * ng]) * stats[2 * ng + 1];
    y[e] = from_float<T>(v * a.scale[p] + a.bias[p]);
  }
}

}  // namespace

size_t group_norm_scratch_bytes(const GroupNormArgs& a) {
  return static_cast<size_t>(a.n * a.groups) * 2 * sizeof(float);
}

cudaError_t group_norm(const GroupNormArgs& a, void* scratch, cudaStream_t stream) {
  if (a.n * a.c * a.inner <= 0) return cudaSuccess;
  auto* stats = static_cast<float*>(scratch);
  const bool ok = dispatch_float(a.dt, [&](auto tag) {
    using T = decltype(tag);
    group_stats_kernel<T>
        <<<static_cast<unsigned>(a.n * a.groups), kStatThreads, 0, stream>>>(a, stats);
    group_apply_kernel<T><<<blocks_for(a.n * a.c * a.inner), kThreads, 0, stream>>>(a, stats);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

}  // namespace trtutils::cuda::k
