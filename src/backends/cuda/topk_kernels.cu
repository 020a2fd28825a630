// TopK: keys, one radix sort, gather (topk_kernels.h has the order rules).
#include <cuda_fp16.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "backends/cuda/topk_kernels.h"

namespace trtutils::cuda::k {
namespace {

__device__ __forceinline__ float load(const float* p, int64_t i) {
  return p[i];
}
__device__ __forceinline__ float load(const __half* p, int64_t i) {
  return __half2float(p[i]);
}

// Ascending float order as ascending unsigned order; NaN (any sign) above +inf, -0 as +0.
__device__ __forceinline__ uint32_t ascending_bits(float f) {
  if (f != f) return 0xffffffffu;
  if (f == 0.0f) f = 0.0f;
  const uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

template <typename T>
__global__ void make_keys(TopKArgs a, uint64_t* keys) {
  const int64_t total = a.outer * a.n * a.inner;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t s = e / a.n, j = e - s * a.n;  // key e: slice s, element j
    const int64_t o = s / a.inner, i = s - o * a.inner;
    const float v = load(static_cast<const T*>(a.x), (o * a.n + j) * a.inner + i);
    uint32_t bits = ascending_bits(v);
    if (a.largest) bits = ~bits;  // descending: larger (and NaN) first
    keys[e] = (static_cast<uint64_t>(bits) << 32) | static_cast<uint32_t>(j);
  }
}

template <typename T>
__global__ void gather(TopKArgs a, const uint64_t* sorted) {
  const int64_t total = a.outer * a.k * a.inner;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t s = e / a.k, r = e - s * a.k;  // output rank r of slice s
    const int64_t o = s / a.inner, i = s - o * a.inner;
    const int64_t j = static_cast<int64_t>(sorted[s * a.n + r] & 0xffffffffu);
    const int64_t to = (o * a.k + r) * a.inner + i;
    static_cast<T*>(a.values)[to] = static_cast<const T*>(a.x)[(o * a.n + j) * a.inner + i];
    a.indices[to] = j;
  }
}

__global__ void slice_offsets(int64_t n, int segments, int* offsets) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= segments) offsets[i] = static_cast<int>(i * n);
}

size_t align256(size_t v) {
  return (v + 255) / 256 * 256;
}

unsigned blocks(int64_t n) {
  const int64_t b = (n + 255) / 256;
  return static_cast<unsigned>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

size_t cub_bytes(const TopKArgs& a) {
  const int total = static_cast<int>(a.outer * a.n * a.inner);
  const int segments = static_cast<int>(a.outer * a.inner);
  size_t bytes = 0;
  if (segments == 1) {
    cub::DeviceRadixSort::SortKeys(nullptr, bytes, static_cast<const uint64_t*>(nullptr),
                                   static_cast<uint64_t*>(nullptr), total, 0, 64);
  } else {
    cub::DeviceSegmentedRadixSort::SortKeys(
        nullptr, bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
        total, segments, static_cast<const int*>(nullptr), static_cast<const int*>(nullptr), 0, 64);
  }
  return bytes;
}

template <typename T>
cudaError_t run(const TopKArgs& a, void* scratch, cudaStream_t stream) {
  const int64_t total = a.outer * a.n * a.inner;
  const int segments = static_cast<int>(a.outer * a.inner);
  if (total == 0 || a.k == 0) return cudaSuccess;
  auto* base = static_cast<uint8_t*>(scratch);
  auto* keys = reinterpret_cast<uint64_t*>(base);
  const size_t key_bytes = align256(static_cast<size_t>(total) * 8);
  auto* sorted = reinterpret_cast<uint64_t*>(base + key_bytes);
  auto* offsets = reinterpret_cast<int*>(base + 2 * key_bytes);
  void* temp = base + 2 * key_bytes + align256((static_cast<size_t>(segments) + 1) * 4);
  make_keys<T><<<blocks(total), 256, 0, stream>>>(a, keys);
  size_t temp_bytes = cub_bytes(a);
  cudaError_t e;
  if (segments == 1) {
    e = cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys, sorted, static_cast<int>(total), 0,
                                       64, stream);
  } else {
    slice_offsets<<<(segments + 256) / 256, 256, 0, stream>>>(a.n, segments, offsets);
    e = cub::DeviceSegmentedRadixSort::SortKeys(temp, temp_bytes, keys, sorted,
                                                static_cast<int>(total), segments, offsets,
                                                offsets + 1, 0, 64, stream);
  }
  if (e != cudaSuccess) return e;
  gather<T><<<blocks(a.outer * a.k * a.inner), 256, 0, stream>>>(a, sorted);
  return cudaGetLastError();
}

}  // namespace

size_t topk_scratch_bytes(const TopKArgs& a) {
  const size_t total = static_cast<size_t>(a.outer * a.n * a.inner);
  const size_t segments = static_cast<size_t>(a.outer * a.inner);
  return 2 * align256(total * 8) + align256((segments + 1) * 4) + align256(cub_bytes(a));
}

cudaError_t topk(const TopKArgs& a, void* scratch, cudaStream_t stream) {
  return a.half ? run<__half>(a, scratch, stream) : run<float>(a, scratch, stream);
}

}  // namespace trtutils::cuda::k
