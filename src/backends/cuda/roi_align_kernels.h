// RoiAlign on the GPU (ops_roi_align.cpp): one thread per output value (region, channel, bin),
// ops/roi_align.h's sampling grid and bilinear rule (the CPU kernel's), max / avg modes, computed
// in float32. A region whose batch index is outside [0, N) gets
// zeros (the op checks host-known indices). Plain C++ declarations.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/roi_align.h"
#include "trtutils/dtype.h"

namespace trtutils::cuda::k {

struct RoiAlignArgs {
  const void* x = nullptr;         // [N, C, H, W], dt
  const void* rois = nullptr;      // [R, 4] (x1, y1, x2, y2), rois_dt
  const int64_t* batch = nullptr;  // [R]
  void* y = nullptr;               // [R, C, oh, ow], dt
  DataType dt = DataType::kFloat32, rois_dt = DataType::kFloat32;  // float32 / float16 / bfloat16
  int64_t n = 0, c = 0, h = 0, w = 0, r = 0;
  ops::roi::Attrs attrs;  // oh, ow: the output's bins
};
cudaError_t roi_align(const RoiAlignArgs& a, cudaStream_t stream);

}  // namespace trtutils::cuda::k
