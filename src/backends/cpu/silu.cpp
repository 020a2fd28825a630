// SiLU in place (silu.h): x / (1 + exp(-x)) with vector_exp.h's exponential; within 2e-7
// relative of the double-precision value over the float range.
#include "backends/cpu/silu.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/vector_exp.h"

namespace trtutils::cpu {

namespace {

constexpr int64_t kChunk = 16 * 1024;  // elements per parallel task

void silu_plain(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] / (1.0f + std::exp(-y[i]));
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void silu_avx512(float* y, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = first_lanes(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(m, y + i);
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), x));
    _mm512_mask_storeu_ps(y + i, m, _mm512_div_ps(x, _mm512_add_ps(one, e)));
  }
}
#endif

}  // namespace

void silu_inplace(float* y, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    float* p = y + c * kChunk;
    const int64_t len = std::min(kChunk, n - c * kChunk);
#if defined(__x86_64__)
    if (has_avx512f()) {
      silu_avx512(p, len);
      continue;
    }
#endif
    silu_plain(p, len);
  }
}

}  // namespace trtutils::cpu
