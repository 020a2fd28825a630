// SiLU in place, y = x * sigmoid(x), on float32 in vector lanes (AVX-512 where the CPU has it,
// else a plain loop). oneDNN 2.6's swish (post-op or eltwise) costs about twice this: the CPU
// plan's float convolutions with a SiLU run oneDNN without the activation and this pass after
// it (EfficientNet, YOLO).
#pragma once

#include <cstdint>

namespace trtutils::cpu {

void silu_inplace(float* y, int64_t n);

}  // namespace trtutils::cpu
