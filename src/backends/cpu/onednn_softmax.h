// oneDNN's softmax and logsoftmax for float32 (onednn_softmax.cpp): its jit kernels vectorise the
// exponentials that the portable kernel (reduce_kernels.cpp) computes one std::exp at a time;
// ViT-B/16's 12 attention softmaxes took 27 ms of a 285 ms batch-1 run that way (issue 36).
#pragma once

#include <cstdint>

namespace trtutils::cpu {

// y = softmax (or log-softmax) of x [outer, n, inner] along n, both plain float32 buffers of
// outer * n * inner values. False (nothing written) where oneDNN offers only its reference
// implementation or refuses the shape: the caller runs the portable kernel.
bool onednn_softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log);

}  // namespace trtutils::cpu
