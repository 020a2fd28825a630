// Index ops on the GPU: index_kernels.h has the contracts (the CPU kernels' order and results).
#include <cub/device/device_scan.cuh>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/index_kernels.h"

namespace trtutils::cuda::k {
namespace {

template <typename I>
__device__ __forceinline__ int64_t clamp_index(I raw, int64_t len) {
  int64_t i = static_cast<int64_t>(raw);
  if (i < 0) i += len;
  return i < 0 ? 0 : (i >= len ? len - 1 : i);
}

template <typename I>
__device__ __forceinline__ bool wrap_index(I raw, int64_t len, int64_t& i) {
  i = static_cast<int64_t>(raw);
  if (i < 0) i += len;
  return i >= 0 && i < len;
}

// The index value at position p of int64 or int32 indices.
__device__ __forceinline__ int64_t index_at(const void* idx, bool idx64, int64_t p) {
  return idx64 ? static_cast<const int64_t*>(idx)[p]
               : static_cast<int64_t>(static_cast<const int32_t*>(idx)[p]);
}

// ---- ArgMax / ArgMin: one thread per output, the axis in order (the CPU kernel's comparisons)
template <typename T, typename C>
__device__ __forceinline__ C arg_load(const T* x, int64_t i) {
  if constexpr (kFloatLike<T>)
    return to_float(x[i]);
  else
    return static_cast<C>(x[i]);
}

template <typename T, typename C>
__global__ void arg_reduce_kernel(ArgReduceArgs a) {
  const T* x = static_cast<const T*>(a.x);
  TRT_GRID_STRIDE(e, a.outer * a.inner) {
    const int64_t o = e / a.inner, i = e - o * a.inner;
    const int64_t base = o * a.n * a.inner + i;
    int64_t best = 0;
    C bv = arg_load<T, C>(x, base);
    for (int64_t j = 1; j < a.n; ++j) {
      const C v = arg_load<T, C>(x, base + j * a.inner);
      const bool better = a.max ? (a.last ? v >= bv : v > bv) : (a.last ? v <= bv : v < bv);
      if (better) best = j, bv = v;
    }
    a.y[e] = best;
  }
}

// ---- GatherElements / ScatterElements
// The data offset of index position p with the axis coordinate left out, and p's axis coordinate.
__device__ __forceinline__ int64_t element_base(const ElementsDesc& d, int64_t p, int64_t& a) {
  int64_t off = 0;
  a = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    const int64_t c = p % d.idx_dims[k];
    p /= d.idx_dims[k];
    if (k == d.axis)
      a = c;
    else
      off += c * d.data_strides[k];
  }
  return off;
}

template <typename U>
__global__ void gather_elements_kernel(const U* data, const void* idx, bool idx64, U* y,
                                       ElementsDesc d, int64_t n) {
  TRT_GRID_STRIDE(p, n) {
    int64_t a;
    const int64_t base = element_base(d, p, a);
    const int64_t i = clamp_index(index_at(idx, idx64, p), d.axis_len);
    y[p] = data[base + i * d.data_strides[d.axis]];
  }
}

template <typename T>
__device__ __forceinline__ T combine(T a, T b, ScatterReduce r) {
  if constexpr (kFloatLike<T>) {
    const double x = to_float(a), z = to_float(b);  // the CPU kernel combines in double
    const double v = r == ScatterReduce::kAdd   ? x + z
                     : r == ScatterReduce::kMul ? x * z
                     : r == ScatterReduce::kMax ? (x > z ? x : z)
                                                : (x < z ? x : z);
    return from_float<T>(static_cast<float>(v));
  } else {
    return r == ScatterReduce::kAdd   ? static_cast<T>(a + b)
           : r == ScatterReduce::kMul ? static_cast<T>(a * b)
           : r == ScatterReduce::kMax ? (a > b ? a : b)
                                      : (a < b ? a : b);
  }
}

// One thread per column of the indices (every coordinate but the axis one): its updates in order.
template <typename T>
__global__ void scatter_elements_kernel(const void* idx, bool idx64, const T* upd, T* y,
                                        ElementsDesc d, ScatterReduce r, int64_t columns) {
  const int64_t len = d.idx_dims[d.axis];
  int64_t inner = 1;
  for (int k = d.axis + 1; k < d.rank; ++k) inner *= d.idx_dims[k];
  TRT_GRID_STRIDE(col, columns) {
    const int64_t o = col / inner, in = col - o * inner;
    for (int64_t j = 0; j < len; ++j) {
      const int64_t p = (o * len + j) * inner + in;
      int64_t a, i;
      const int64_t base = element_base(d, p, a);
      if (!wrap_index(index_at(idx, idx64, p), d.axis_len, i)) continue;
      T* dst = y + base + i * d.data_strides[d.axis];
      *dst = r == ScatterReduce::kNone ? upd[p] : combine(*dst, upd[p], r);
    }
  }
}

// ---- GatherND / ScatterND
// The data offset of index tuple t (k coordinates), or -1 when one is out of range (clamp: the
// nearest element instead).
__device__ __forceinline__ int64_t tuple_offset(const NdDesc& d, const void* idx, bool idx64,
                                                int64_t t, bool clamp) {
  int64_t off = 0;
  for (int c = 0; c < d.k; ++c) {
    const int64_t raw = index_at(idx, idx64, t * d.k + c);
    int64_t i;
    if (clamp)
      i = clamp_index(raw, d.dims[c]);
    else if (!wrap_index(raw, d.dims[c], i))
      return -1;
    off += i * d.strides[c];
  }
  return off;
}

template <typename U>
__global__ void gather_nd_kernel(const U* data, const void* idx, bool idx64, U* y, NdDesc d,
                                 int64_t n) {
  TRT_GRID_STRIDE(e, n) {
    const int64_t t = e / d.slice, s = e - t * d.slice;
    const int64_t bi = t / d.per_batch;
    y[e] = data[bi * d.batch_elems + tuple_offset(d, idx, idx64, t, true) + s];
  }
}

// Reduction none: every (tuple, element) at once (ONNX leaves duplicate indices' order open).
template <typename U>
__global__ void scatter_nd_kernel(const void* idx, bool idx64, const U* upd, U* y, NdDesc d,
                                  int64_t n) {
  TRT_GRID_STRIDE(e, n) {
    const int64_t t = e / d.slice, s = e - t * d.slice;
    const int64_t off = tuple_offset(d, idx, idx64, t, false);
    if (off >= 0) y[off + s] = upd[e];
  }
}

// A reduction: one thread per slice element, the tuples in order (the CPU kernel's order).
template <typename T>
__global__ void scatter_nd_reduce_kernel(const void* idx, bool idx64, const T* upd, T* y, NdDesc d,
                                         ScatterReduce r) {
  TRT_GRID_STRIDE(s, d.slice) {
    for (int64_t t = 0; t < d.per_batch; ++t) {
      const int64_t off = tuple_offset(d, idx, idx64, t, false);
      if (off >= 0) y[off + s] = combine(y[off + s], upd[t * d.slice + s], r);
    }
  }
}

// ---- NonZero
template <typename U>
__global__ void nonzero_flags_kernel(const U* x, U mask, int32_t* flags, int64_t n) {
  TRT_GRID_STRIDE(i, n) flags[i] = (x[i] & mask) != 0 ? 1 : 0;
}

__global__ void nonzero_total_kernel(const int32_t* flags, const int32_t* pos, int64_t n,
                                     int32_t* count) {
  *count = n > 0 ? pos[n - 1] + flags[n - 1] : 0;
}

__global__ void nonzero_coords_kernel(NonZeroDesc d, const int32_t* flags, const int32_t* pos,
                                      int64_t count, int64_t* y) {
  TRT_GRID_STRIDE(i, d.numel) {
    if (!flags[i]) continue;
    const int64_t j = pos[i];
    int64_t rest = i;
    for (int k = d.rank - 1; k >= 0; --k) {
      y[k * count + j] = rest % d.dims[k];
      rest /= d.dims[k];
    }
  }
}

// ---- CumSum: one thread per (outer, inner) line, in order; A is the accumulator type.
template <typename T, typename A>
__global__ void cumsum_kernel(CumSumArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  TRT_GRID_STRIDE(e, a.outer * a.inner) {
    const int64_t o = e / a.inner, i = e - o * a.inner;
    A acc = 0;
    for (int64_t s = 0; s < a.n; ++s) {
      const int64_t j = a.reverse ? a.n - 1 - s : s;
      const int64_t at = (o * a.n + j) * a.inner + i;
      A v;
      if constexpr (kFloatLike<T>)
        v = static_cast<A>(to_float(x[at]));
      else
        v = static_cast<A>(x[at]);
      if (!a.exclusive) acc += v;
      if constexpr (kFloatLike<T>)
        y[at] = from_float<T>(static_cast<float>(acc));
      else
        y[at] = static_cast<T>(acc);
      if (a.exclusive) acc += v;
    }
  }
}

// Calls f(T{}) for the dtypes the typed index kernels handle; false for others.
template <typename F>
bool dispatch_index_type(DataType dt, F&& f) {
  switch (dt) {
    case DataType::kFloat32:
      f(float{});
      return true;
    case DataType::kFloat16:
      f(__half{});
      return true;
    case DataType::kBFloat16:
      f(__nv_bfloat16{});
      return true;
    case DataType::kInt32:
      f(int32_t{});
      return true;
    case DataType::kInt64:
      f(int64_t{});
      return true;
    default:
      return false;
  }
}

}  // namespace

cudaError_t arg_reduce(const ArgReduceArgs& a, cudaStream_t stream) {
  const int64_t n = a.outer * a.inner;
  if (n <= 0) return cudaSuccess;
  const unsigned blocks = blocks_for(n);
  switch (a.dt) {
    case DataType::kFloat32:
      arg_reduce_kernel<float, float><<<blocks, kThreads, 0, stream>>>(a);
      break;
    case DataType::kFloat16:
      arg_reduce_kernel<__half, float><<<blocks, kThreads, 0, stream>>>(a);
      break;
    case DataType::kBFloat16:
      arg_reduce_kernel<__nv_bfloat16, float><<<blocks, kThreads, 0, stream>>>(a);
      break;
    case DataType::kInt8:
      arg_reduce_kernel<int8_t, int32_t><<<blocks, kThreads, 0, stream>>>(a);
      break;
    case DataType::kUInt8:
      arg_reduce_kernel<uint8_t, int32_t><<<blocks, kThreads, 0, stream>>>(a);
      break;
    case DataType::kInt32:
      arg_reduce_kernel<int32_t, int32_t><<<blocks, kThreads, 0, stream>>>(a);
      break;
    case DataType::kInt64:
      arg_reduce_kernel<int64_t, int64_t><<<blocks, kThreads, 0, stream>>>(a);
      break;
    default:
      return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

cudaError_t gather_elements(size_t esz, const void* data, const void* idx, bool idx64, void* y,
                            const ElementsDesc& d, cudaStream_t stream) {
  int64_t n = 1;
  for (int k = 0; k < d.rank; ++k) n *= d.idx_dims[k];
  if (n <= 0) return cudaSuccess;
  const bool ok = dispatch_size(esz, [&](auto tag) {
    using U = decltype(tag);
    gather_elements_kernel<U><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const U*>(data), idx, idx64, static_cast<U*>(y), d, n);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t scatter_elements(DataType dt, size_t esz, const void* idx, bool idx64,
                             const void* updates, void* y, const ElementsDesc& d, ScatterReduce r,
                             cudaStream_t stream) {
  int64_t n = 1;
  for (int k = 0; k < d.rank; ++k) n *= d.idx_dims[k];
  if (n <= 0) return cudaSuccess;
  const int64_t columns = n / d.idx_dims[d.axis];
  bool ok;
  if (r == ScatterReduce::kNone) {
    ok = dispatch_size(esz, [&](auto tag) {
      using U = decltype(tag);
      scatter_elements_kernel<U><<<blocks_for(columns), kThreads, 0, stream>>>(
          idx, idx64, static_cast<const U*>(updates), static_cast<U*>(y), d, r, columns);
    });
  } else {
    ok = dispatch_index_type(dt, [&](auto tag) {
      using T = decltype(tag);
      scatter_elements_kernel<T><<<blocks_for(columns), kThreads, 0, stream>>>(
          idx, idx64, static_cast<const T*>(updates), static_cast<T*>(y), d, r, columns);
    });
  }
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t gather_nd(size_t esz, const void* data, const void* idx, bool idx64, void* y,
                      const NdDesc& d, cudaStream_t stream) {
  const int64_t n = d.batches * d.per_batch * d.slice;
  if (n <= 0) return cudaSuccess;
  const bool ok = dispatch_size(esz, [&](auto tag) {
    using U = decltype(tag);
    gather_nd_kernel<U><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const U*>(data), idx,
                                                                idx64, static_cast<U*>(y), d, n);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t scatter_nd(DataType dt, size_t esz, const void* idx, bool idx64, const void* updates,
                       void* y, const NdDesc& d, ScatterReduce r, cudaStream_t stream) {
  const int64_t n = d.per_batch * d.slice;
  if (n <= 0) return cudaSuccess;
  bool ok;
  if (r == ScatterReduce::kNone) {
    ok = dispatch_size(esz, [&](auto tag) {
      using U = decltype(tag);
      scatter_nd_kernel<U><<<blocks_for(n), kThreads, 0, stream>>>(
          idx, idx64, static_cast<const U*>(updates), static_cast<U*>(y), d, n);
    });
  } else {
    ok = dispatch_index_type(dt, [&](auto tag) {
      using T = decltype(tag);
      scatter_nd_reduce_kernel<T><<<blocks_for(d.slice), kThreads, 0, stream>>>(
          idx, idx64, static_cast<const T*>(updates), static_cast<T*>(y), d, r);
    });
  }
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

namespace {
size_t scan_temp_bytes(int64_t numel) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                static_cast<int32_t*>(nullptr), static_cast<int>(numel));
  return bytes;
}
size_t align256(size_t b) {
  return (b + 255) / 256 * 256;
}

// Scratch layout: flags, positions (numel int32 each), the count, cub's temporary storage.
struct NonZeroScratch {
  int32_t *flags, *pos, *count;
  void* temp;
  size_t temp_bytes;
};
NonZeroScratch nonzero_scratch(void* scratch, int64_t numel) {
  auto* b = static_cast<uint8_t*>(scratch);
  const size_t fbytes = align256(static_cast<size_t>(numel) * 4);
  return {reinterpret_cast<int32_t*>(b), reinterpret_cast<int32_t*>(b + fbytes),
          reinterpret_cast<int32_t*>(b + 2 * fbytes), b + 2 * fbytes + 256, scan_temp_bytes(numel)};
}
}  // namespace

size_t nonzero_scratch_bytes(int64_t numel) {
  return 2 * align256(static_cast<size_t>(numel) * 4) + 256 + align256(scan_temp_bytes(numel));
}

cudaError_t nonzero_count(const void* x, const NonZeroDesc& d, void* scratch,
                          const int32_t** count_dev, cudaStream_t stream) {
  NonZeroScratch s = nonzero_scratch(scratch, d.numel);
  *count_dev = s.count;
  if (d.numel > 0) {
    const bool ok = dispatch_size(d.esz, [&](auto tag) {
      using U = decltype(tag);
      const U all = static_cast<U>(~U{0});
      const U mask = d.sign_mask ? static_cast<U>(all >> 1) : all;
      nonzero_flags_kernel<U><<<blocks_for(d.numel), kThreads, 0, stream>>>(
          static_cast<const U*>(x), mask, s.flags, d.numel);
    });
    if (!ok) return cudaErrorNotSupported;
    const cudaError_t e = cub::DeviceScan::ExclusiveSum(s.temp, s.temp_bytes, s.flags, s.pos,
                                                        static_cast<int>(d.numel), stream);
    if (e != cudaSuccess) return e;
  }
  nonzero_total_kernel<<<1, 1, 0, stream>>>(s.flags, s.pos, d.numel, s.count);
  return cudaGetLastError();
}

cudaError_t nonzero_coords(const NonZeroDesc& d, const void* scratch, int64_t count, int64_t* y,
                           cudaStream_t stream) {
  if (count <= 0 || d.numel <= 0) return cudaSuccess;
  const NonZeroScratch s = nonzero_scratch(const_cast<void*>(scratch), d.numel);
  nonzero_coords_kernel<<<blocks_for(d.numel), kThreads, 0, stream>>>(d, s.flags, s.pos, count, y);
  return cudaGetLastError();
}

cudaError_t cumsum(const CumSumArgs& a, cudaStream_t stream) {
  const int64_t n = a.outer * a.inner;
  if (n <= 0 || a.n <= 0) return cudaSuccess;
  const unsigned blocks = blocks_for(n);
  switch (a.dt) {
    case DataType::kFloat32:
      cumsum_kernel<float, double><<<blocks, kThreads, 0, stream>>>(a);
      break;
    case DataType::kFloat16:
      cumsum_kernel<__half, double><<<blocks, kThreads, 0, stream>>>(a);
      break;
    case DataType::kBFloat16:
      cumsum_kernel<__nv_bfloat16, double><<<blocks, kThreads, 0, stream>>>(a);
      break;
    case DataType::kInt32:
      cumsum_kernel<int32_t, int64_t><<<blocks, kThreads, 0, stream>>>(a);
      break;
    case DataType::kInt64:
      cumsum_kernel<int64_t, int64_t><<<blocks, kThreads, 0, stream>>>(a);
      break;
    default:
      return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

}  // namespace trtutils::cuda::k
