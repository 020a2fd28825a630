// Float32 tensors to and from the CPU plan's blocked layout (ops/blocked_layout.h), and the
// com.trtutils::ToBlocked / FromBlocked kernels at a blocked chain's boundaries.
#pragma once

#include "backends/cpu/kernel_registry.h"

namespace trtutils::cpu {

// [N, C, spatial...] -> [N, ceil(C / 16), spatial..., 16], zero lanes past C.
Tensor to_blocked(const Tensor& plain);
// [N, blocks, spatial..., 16] -> [N, channels, spatial...].
Tensor from_blocked(const Tensor& blocked, int64_t channels);

void to_blocked_kernel(KernelContext& ctx);
void from_blocked_kernel(KernelContext& ctx);  // attribute "channels"

}  // namespace trtutils::cpu
