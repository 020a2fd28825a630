// RoiAlign on the GPU (ops_roi_align.cpp): one thread per output value (region, channel, bin),
// the CPU kernel's sampling grid, bilinear rule and max / avg modes (backends/cpu/
// roi_align_kernel.cpp), computed in float32. A region whose batch index is outside [0, N) gets
// zeros (the op checks host-known indices). Plain C++ declarations.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "trtutils/dtype.h"

namespace trtutils::cuda::k {

struct RoiAlignArgs {
  const void* x = nullptr;         // [N, C, H, W], dt
  const void* rois = nullptr;      // [R, 4] (x1, y1, x2, y2), rois_dt
  const int64_t* batch = nullptr;  // [R]
  void* y = nullptr;               // [R, C, oh, ow], dt
  DataType dt = DataType::kFloat32, rois_dt = DataType::kFloat32;  // float32 / float16 / bfloat16
  int64_t n = 0, c = 0, h = 0, w = 0, r = 0, oh = 1, ow = 1, sampling = 0;
  float scale = 1.0f;
  bool half_pixel = false, max_mode = false;
};
cudaError_t roi_align(const RoiAlignArgs& a, cudaStream_t stream);

}  // namespace trtutils::cuda::k
