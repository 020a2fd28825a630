// Row softmax in AVX-512 lanes (fast_softmax.h): per row the maximum, then exp(x - max) into y
// with its sum, then y scaled by 1 / sum (softmax) or y = (x - max) - log(sum) (log-softmax).
#include "backends/cpu/fast_softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/vector_exp.h"

namespace trtutils::cpu {

#if defined(__x86_64__)
namespace {

// One row. A row holding NaN or an infinite maximum gives NaN everywhere, as the reference does
// (exp(inf - inf), exp(NaN)), so that nothing falls back after y (maybe x itself) was written.
__attribute__((target("avx512f"))) void softmax_row(const float* x, float* y, int64_t n, bool log) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  __mmask16 nan = 0;  // the exponential clamps NaN away: look for it here
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = first_lanes(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    mx = _mm512_mask_max_ps(mx, m, mx, v);
    nan |= _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
  }
  const float row_max = _mm512_reduce_max_ps(mx);
  if (nan || !std::isfinite(row_max)) {
    std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  const __m512 vmax = _mm512_set1_ps(row_max);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = first_lanes(n - i);
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vmax));
    acc = _mm512_mask_add_ps(acc, m, acc, e);
    if (!log) _mm512_mask_storeu_ps(y + i, m, e);
  }
  const float sum = _mm512_reduce_add_ps(acc);  // >= 1: the maximum's own term
  if (log) {
    const __m512 log_sum = _mm512_set1_ps(std::log(sum));  // (x - max) first: no rounding at max
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = first_lanes(n - i);
      const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vmax);
      _mm512_mask_storeu_ps(y + i, m, _mm512_sub_ps(d, log_sum));
    }
    return;
  }
  const __m512 inv = _mm512_set1_ps(1.0f / sum);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = first_lanes(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), inv));
  }
}

}  // namespace

bool fast_softmax(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  if (!has_avx512f() || n <= 0) return false;
#pragma omp parallel for schedule(static) if (rows * n > (1 << 14))
  for (int64_t r = 0; r < rows; ++r) softmax_row(x + r * n, y + r * n, n, log);
  return true;
}
#else
bool fast_softmax(const float*, float*, int64_t, int64_t, bool) {
  return false;
}
#endif

}  // namespace trtutils::cpu
