// ONNX Range and ConstantOfShape's fill (contract: range_kernels.h).
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/range_kernels.h"

namespace trtutils::cuda::k {
namespace {

template <typename U>
__global__ void range_int_kernel(U* y, uint64_t start, uint64_t delta, int64_t n) {
  TRT_GRID_STRIDE(i, n) y[i] = static_cast<U>(start + static_cast<uint64_t>(i) * delta);
}

// Sequential on purpose: each value is the previous one plus delta, rounded (see RangeArgs).
template <typename T, typename Acc>
__global__ void range_float_kernel(T* y, Acc start, Acc delta, int64_t n) {
  Acc v = start;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, Acc>)
      y[i] = v;
    else
      y[i] = from_float<T>(v);
    v = v + delta;
  }
}

template <typename U>
__global__ void fill_kernel(U* y, U v, int64_t n) {
  TRT_GRID_STRIDE(i, n) y[i] = v;
}

}  // namespace

cudaError_t fill_bits(size_t esz, uint64_t bits, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const bool known = dispatch_size(esz, [&](auto tag) {
    using U = decltype(tag);
    fill_kernel<U>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<U*>(y), static_cast<U>(bits), n);
  });
  return known ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t range_fill(const RangeArgs& a, cudaStream_t stream) {
  if (a.n <= 0) return cudaSuccess;
  if (dtype_is_integer(a.dt)) {
    const bool known = dispatch_size(a.esz, [&](auto tag) {
      using U = decltype(tag);
      range_int_kernel<U><<<blocks_for(a.n), kThreads, 0, stream>>>(
          static_cast<U*>(a.y), static_cast<uint64_t>(a.start_int),
          static_cast<uint64_t>(a.delta_int), a.n);
    });
    return known ? cudaGetLastError() : cudaErrorNotSupported;
  }
  if (a.dt == DataType::kFloat64) {
    range_float_kernel<double, double>
        <<<1, 1, 0, stream>>>(static_cast<double*>(a.y), a.start, a.delta, a.n);
    return cudaGetLastError();
  }
  const bool known = dispatch_float(a.dt, [&](auto tag) {
    using T = decltype(tag);
    range_float_kernel<T, float><<<1, 1, 0, stream>>>(
        static_cast<T*>(a.y), static_cast<float>(a.start), static_cast<float>(a.delta), a.n);
  });
  return known ? cudaGetLastError() : cudaErrorNotSupported;
}

}  // namespace trtutils::cuda::k
