// The image preprocessing kernel: an 8-bit interleaved image on the device rendered into one
// slot of a model input, computing the same bytes as data::render_image on the host (the code
// ImageBatcher, generate_calibration, Detector and Classifier run). Plain C++ declarations, as
// in kernels.h, so that g++ and nvcc both read it; kept apart from kernels.h so that a change
// here recompiles one kernel file.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "trtutils/dtype.h"

namespace trtutils::cuda::k {

struct RenderArgs {
  const uint8_t* src = nullptr;  // src_h x src_w x channels bytes, rows unpadded
  int64_t src_w = 0;
  int channels = 0;  // of the source and of the output (converted before)
  // The resize's taps (data::linear_axis), device arrays: box_w entries for x, box_h for y.
  const int32_t *x0 = nullptr, *x1 = nullptr, *y0 = nullptr, *y1 = nullptr;
  const float *wx = nullptr, *wy = nullptr;
  // Where the resized image sits on the height x width canvas; the rest is pad_value.
  int64_t top = 0, left = 0, box_h = 0, box_w = 0;
  int64_t height = 0, width = 0;
  bool nchw = true;
  DataType dtype = DataType::kFloat32;  // float32, float16, uint8, int8
  // Output channel c reads source channel srcc[c], written as raw * scale[c] + bias[c].
  int srcc[4] = {0, 1, 2, 3};
  float scale[4] = {1, 1, 1, 1};
  float bias[4] = {0, 0, 0, 0};
  float pad_value = 114.0f;
  void* dst = nullptr;  // height * width * channels elements of dtype
};

cudaError_t render_image(const RenderArgs& a, cudaStream_t stream);

}  // namespace trtutils::cuda::k
