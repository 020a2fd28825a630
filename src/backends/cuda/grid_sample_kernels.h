// GridSample on the GPU (ops_grid_sample.cpp): one thread per output value, ops/grid_sample.h's
// rule (the CPU kernel's), in float32. Plain C++ declarations.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/grid_sample.h"
#include "trtutils/dtype.h"

namespace trtutils::cuda::k {

struct GridSampleArgs {
  const void* x = nullptr;                                         // [N, C, H, W], dt
  const void* grid = nullptr;                                      // [N, Ho, Wo, 2], grid_dt
  void* y = nullptr;                                               // [N, C, Ho, Wo], dt
  DataType dt = DataType::kFloat32, grid_dt = DataType::kFloat32;  // float32 / float16 / bfloat16
  int64_t n = 0, c = 0, ho = 0, wo = 0;
  ops::grid::Params p;  // h, w: X's
};
cudaError_t grid_sample(const GridSampleArgs& a, cudaStream_t stream);

}  // namespace trtutils::cuda::k
