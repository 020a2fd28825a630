// exp(x) on 16 float32 lanes (AVX-512F), for the CPU kernels that need many exponentials
// (silu.cpp, fast_softmax.cpp): 2^n * p(r) with n = round(x / ln 2), r = x - n ln 2 (two-part
// ln 2) and p a degree-6 polynomial; within 2e-7 relative of exp over [-87.3, 88.3], where x is
// clamped (0 and +inf beyond; NaN stays NaN only through the caller's own arithmetic). oneDNN
// 2.6's jit exponentials (swish, softmax) ran at about half this rate on the 2-core AVX-512
// machine (bench/RESULTS.md, issue 36). Include only in x86-64 translation units, and call from
// functions with __attribute__((target("avx512f"))) after checking has_avx512f().
#pragma once

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the masked-off source, which
// -Wmaybe-uninitialized / -Wuninitialized report once inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

namespace trtutils::cpu {

inline bool has_avx512f() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

__attribute__((target("avx512f"))) inline __m512 exp_avx512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
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

// The mask of the first `left` lanes (all 16 when left >= 16).
__attribute__((target("avx512f"))) inline __mmask16 first_lanes(int64_t left) {
  return left >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << left) - 1);
}

}  // namespace trtutils::cpu
#endif
