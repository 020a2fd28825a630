// SiLU in place (silu.h): exp(-x) from a degree-6 polynomial of 2^f and a scale by 2^n, then
// x / (1 + e); within 2e-7 relative of the double-precision value over the float range.
#include "backends/cpu/silu.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the masked-off source, which
// -Wmaybe-uninitialized reports once inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

namespace trtutils::cpu {

namespace {

constexpr int64_t kChunk = 16 * 1024;  // elements per parallel task

void silu_plain(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] / (1.0f + std::exp(-y[i]));
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) __m512 exp_avx512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);  // x - n ln 2, in two
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

__attribute__((target("avx512f"))) void silu_avx512(float* y, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(m, y + i);
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), x));
    _mm512_mask_storeu_ps(y + i, m, _mm512_div_ps(x, _mm512_add_ps(one, e)));
  }
}

bool has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
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
    if (has_avx512()) {
      silu_avx512(p, len);
      continue;
    }
#endif
    silu_plain(p, len);
  }
}

}  // namespace trtutils::cpu
