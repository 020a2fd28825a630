// TopK on the GPU (ops_topk.cpp): for each of `segments` slices of `n` elements (slice s, element
// j at x[(s / inner) * n * inner + j * inner + s % inner]), the first k in order, as the CPU
// kernel orders them (backends/cpu/tensor_kernels.cpp): by value (largest or smallest first),
// equal values by the lower index, NaN above every number, -0 equal to +0. One 64-bit key per
// element (the value's order bits, then its index), one radix sort (segmented for several
// slices), then a gather. Plain C++ declarations, kept out of kernels.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace trtutils::cuda::k {

struct TopKArgs {
  const void* x = nullptr;  // float32 or float16 (half = true)
  bool half = false;
  int64_t outer = 1, n = 0, inner = 1, k = 0;
  bool largest = true;
  void* values = nullptr;      // [outer, k, inner], x's dtype
  int64_t* indices = nullptr;  // [outer, k, inner]
};

// Bytes of scratch topk() needs.
size_t topk_scratch_bytes(const TopKArgs& a);
cudaError_t topk(const TopKArgs& a, void* scratch, cudaStream_t stream);

}  // namespace trtutils::cuda::k
