// Small ops on the GPU (ops_misc.cpp): IsNaN / IsInf, Hardmax, and ONNX NonMaxSuppression. Each
// computes what the CPU kernel computes (backends/cpu/unary_kernels.cpp, reduce_kernels.cpp,
// tensor_kernels.cpp), so results are equal: Hardmax takes the first maximum of a column (NaN
// never wins), NonMaxSuppression orders a class's boxes as the CPU's stable sort does (score
// descending, equal scores by lower index) and computes corners and IoU in double as the CPU
// does, so a box on a threshold falls on the same side. Plain C++ declarations.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "trtutils/dtype.h"

namespace trtutils::cuda::k {

// y[i] (bool) = isnan(x[i]), or isinf(x[i]) with the sign filter of IsInf. x: float32 /
// float16 / bfloat16 / float64.
struct FloatClassArgs {
  const void* x = nullptr;
  DataType dt = DataType::kFloat32;
  int64_t n = 0;
  bool nan = true;                        // IsNaN; else IsInf
  bool negative = true, positive = true;  // IsInf's detect_negative / detect_positive
  uint8_t* y = nullptr;
};
cudaError_t float_class(const FloatClassArgs& a, cudaStream_t stream);

// Hardmax of x [outer, n, inner] along n: 1 at the first maximum of each column, 0 elsewhere.
cudaError_t hardmax(DataType dt, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                    cudaStream_t stream);

// ONNX NonMaxSuppression: boxes [batch, boxes, 4], scores [batch, classes, boxes] (float32 or
// float16). Per (batch, class) segment the candidates (score > score_threshold when there is
// one) in score order, greedily kept unless their IoU with a kept box exceeds iou_threshold, at
// most max_out (>= 1) per segment.
struct OnnxNmsArgs {
  const void* boxes = nullptr;
  const void* scores = nullptr;
  bool half = false;
  int64_t batch = 0, boxes_n = 0, classes = 0;
  int64_t max_out = 0;
  double iou_threshold = 0, score_threshold = 0;
  bool has_score_threshold = false;
  bool center = false;  // center_point_box = 1: [x_center, y_center, width, height]
};
// Scratch bytes for onnx_nms_select.
size_t onnx_nms_scratch_bytes(const OnnxNmsArgs& a);
// Step 1: the kept boxes per segment, in the scratch; *counts points at the batch * classes
// counts (int32, device) inside it.
cudaError_t onnx_nms_select(const OnnxNmsArgs& a, void* scratch, const int32_t** counts,
                            cudaStream_t stream);
// Step 2 (after the host has read the counts and sized y): y [total, 3] int64 triples (batch,
// class, box), segments in order.
cudaError_t onnx_nms_emit(const OnnxNmsArgs& a, const void* scratch, int64_t* y,
                          cudaStream_t stream);

}  // namespace trtutils::cuda::k
