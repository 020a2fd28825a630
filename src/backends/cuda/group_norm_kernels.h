// InstanceNormalization and GroupNormalization on the GPU (ops_norm.cpp): x [N, C, inner] in
// groups of C / groups channels (InstanceNormalization: groups = C). One block per sample and
// group sums x and x^2 in double (the CPU kernel's statistics are double too), then one pass
// over every element writes (x - mean) * rstd * scale + bias with scale and bias float32, per
// channel or (GroupNormalization at opset 18) per group. Plain C++ declarations.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "trtutils/dtype.h"

namespace trtutils::cuda::k {

struct GroupNormArgs {
  const void* x = nullptr;
  void* y = nullptr;
  DataType dt = DataType::kFloat32;  // float32 / float16 / bfloat16 (x and y)
  int64_t n = 0, c = 0, groups = 1, inner = 0;
  const float* scale = nullptr;  // c values (per_channel) or groups values
  const float* bias = nullptr;
  bool per_channel = true;
  float eps = 1e-5f;
};
// Scratch: 2 floats per (sample, group).
size_t group_norm_scratch_bytes(const GroupNormArgs& a);
cudaError_t group_norm(const GroupNormArgs& a, void* scratch, cudaStream_t stream);

}  // namespace trtutils::cuda::k
