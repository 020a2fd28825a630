// Index ops on the GPU (ops_index.cpp): ArgMax / ArgMin, GatherElements / ScatterElements,
// GatherND / ScatterND, NonZero, CumSum. Each computes what the CPU kernel computes
// (backends/cpu/index_kernels.cpp, tensor_kernels.cpp, cumsum_kernel.cpp) in the same order, so
// results are equal, not close: ArgMax scans an axis in order; ScatterElements and ScatterND with
// a reduction apply their updates in index order (one thread per destination column or slice
// element), and CumSum accumulates in double (int64 for integers) in order. Out-of-range indices
// read the nearest element and are ignored by the scatters (the op checks host-known indices
// like the CPU kernel does). Plain C++ declarations, kept out of kernels.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "trtutils/dtype.h"

namespace trtutils::cuda::k {

constexpr int kIndexMaxRank = 8;

// ArgMax / ArgMin of x [outer, n, inner] along n into y [outer, inner] (int64).
struct ArgReduceArgs {
  const void* x = nullptr;
  DataType dt = DataType::kFloat32;  // float32 / float16 / bfloat16 / int8 / uint8 / int32 / int64
  int64_t outer = 1, n = 0, inner = 1;
  bool max = true, last = false;  // last: select_last_index
  int64_t* y = nullptr;
};
cudaError_t arg_reduce(const ArgReduceArgs& a, cudaStream_t stream);

// Element addressing of GatherElements / ScatterElements: indices of shape idx_dims (rank
// dims), data of the same rank with strides data_strides; the axis coordinate is the index.
struct ElementsDesc {
  int rank = 0, axis = 0;
  int64_t idx_dims[kIndexMaxRank] = {};
  int64_t data_strides[kIndexMaxRank] = {};
  int64_t axis_len = 0;
};
enum class ScatterReduce { kNone, kAdd, kMul, kMax, kMin };
cudaError_t gather_elements(size_t esz, const void* data, const void* idx, bool idx64, void* y,
                            const ElementsDesc& d, cudaStream_t stream);
// y (already a copy of data) receives updates (indices' shape) at the indexed positions.
// Reductions: float32 / float16 / bfloat16 / int32 / int64 (dt), else cudaErrorNotSupported.
cudaError_t scatter_elements(DataType dt, size_t esz, const void* idx, bool idx64,
                             const void* updates, void* y, const ElementsDesc& d, ScatterReduce r,
                             cudaStream_t stream);

// GatherND / ScatterND: `count` index tuples of k coordinates each (batches x per_batch for
// GatherND), each addressing a slice of `slice` elements; dims / strides of the k indexed axes.
struct NdDesc {
  int k = 0;
  int64_t dims[kIndexMaxRank] = {};
  int64_t strides[kIndexMaxRank] = {};
  int64_t slice = 1;
  int64_t batches = 1, per_batch = 1, batch_elems = 0;  // GatherND's batch_dims
};
cudaError_t gather_nd(size_t esz, const void* data, const void* idx, bool idx64, void* y,
                      const NdDesc& d, cudaStream_t stream);
// y (already a copy of data); count = per_batch index tuples (batches = 1).
cudaError_t scatter_nd(DataType dt, size_t esz, const void* idx, bool idx64, const void* updates,
                       void* y, const NdDesc& d, ScatterReduce r, cudaStream_t stream);

// NonZero, in two steps: nonzero_count writes flags, positions and the count into scratch
// (bytes from nonzero_scratch_bytes) and points *count_dev at the count (an int32 on the
// device); nonzero_coords then writes y [rank, count] (int64, row-major order of the elements). An
// element is nonzero when its bits other than the sign bit are (floats: sign_mask set; -0 is zero,
// NaN is not) or any bit (integers).
struct NonZeroDesc {
  int rank = 0;
  int64_t dims[kIndexMaxRank] = {};
  int64_t numel = 0;
  size_t esz = 4;
  bool sign_mask = false;
};
size_t nonzero_scratch_bytes(int64_t numel);
cudaError_t nonzero_count(const void* x, const NonZeroDesc& d, void* scratch,
                          const int32_t** count_dev, cudaStream_t stream);
cudaError_t nonzero_coords(const NonZeroDesc& d, const void* scratch, int64_t count, int64_t* y,
                           cudaStream_t stream);

// CumSum of x [outer, n, inner] along n (exclusive / reverse as ONNX defines them).
struct CumSumArgs {
  const void* x = nullptr;
  void* y = nullptr;
  DataType dt = DataType::kFloat32;  // float32 / float16 / bfloat16 / int32 / int64
  int64_t outer = 1, n = 0, inner = 1;
  bool exclusive = false, reverse = false;
};
cudaError_t cumsum(const CumSumArgs& a, cudaStream_t stream);

}  // namespace trtutils::cuda::k
