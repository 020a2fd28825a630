// Tensors generated on the GPU (ops_range.cpp): ONNX Range, y[i] for i < n, equal to the CPU
// kernel's (backends/cpu/tensor_kernels.cpp), and ConstantOfShape's fill. Plain C++ declarations.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "trtutils/dtype.h"

namespace trtutils::cuda::k {

struct RangeArgs {
  DataType dt = DataType::kInt64;
  int64_t n = 0;
  // Integer dtypes: y[i] = start + i * delta in 64-bit two's complement, stored in the dtype's
  // `esz` bytes (wrapping as the CPU's cast does). One thread per element.
  int64_t start_int = 0, delta_int = 0;
  size_t esz = 8;
  // float64: accumulated in double; float32 / float16 / bfloat16: in float (stored rounded).
  // y[0] = start, y[i + 1] = y[i] + delta, the order of ONNX's function body and the CPU kernel:
  // rounding makes it differ from start + i * delta, so one thread walks the sequence.
  double start = 0, delta = 0;
  void* y = nullptr;
};
// cudaErrorNotSupported for other dtypes (bool, int4, float8) or element sizes.
cudaError_t range_fill(const RangeArgs& a, cudaStream_t stream);

// y[i] = the esz-byte pattern `bits` (its low esz bytes) for i < n; esz 1, 2, 4 or 8, else
// cudaErrorNotSupported.
cudaError_t fill_bits(size_t esz, uint64_t bits, void* y, int64_t n, cudaStream_t stream);

}  // namespace trtutils::cuda::k
