// oneDNN's layer normalization for float32 (onednn_layer_norm.cpp): its jit kernel against the
// portable loops of norm_kernels.cpp, which took 0.21 ms per [197, 768] layer norm of ViT-B/16 at
// batch 1 (5.2 ms of the run, ONNX Runtime 1.5 ms; issue 36).
#pragma once

#include <cstdint>

namespace trtutils::cpu {

// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * scale + shift over rows x d plain float32
// values, scale / shift d floats (shift may be null). False (nothing written) where oneDNN offers
// only its reference implementation or refuses the shape: the caller runs the portable kernel.
bool onednn_layer_norm(const float* x, float* y, int64_t rows, int64_t d, const float* scale,
                       const float* shift, float eps);

}  // namespace trtutils::cpu
