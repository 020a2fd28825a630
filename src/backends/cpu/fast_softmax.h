// Softmax / LogSoftmax of float32 rows (the reduced axis innermost) in AVX-512 lanes, with
// vector_exp.h's exponential: oneDNN 2.6's softmax ran ViT-B/16's attention rows (2364 x 197 at
// batch 1) at 0.7-1.0 ms a layer on the 2-core machine, this at about a tenth of that
// (bench/RESULTS.md, issue 36).
#pragma once

#include <cstdint>

namespace trtutils::cpu {

// y = softmax (or log-softmax) of x [rows, n] along n; y may be x (in place). A row holding NaN
// or an infinite maximum becomes NaN, as the reference's does. False only where it does not
// apply (no AVX-512F, n <= 0), before anything is written.
bool fast_softmax(const float* x, float* y, int64_t rows, int64_t n, bool log);

}  // namespace trtutils::cpu
