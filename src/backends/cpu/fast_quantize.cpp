#include "backends/cpu/fast_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/vector_exp.h"

namespace trtutils::cpu {

namespace {

constexpr int64_t kChunk = 32 * 1024;  // elements per parallel task

void quantize_plain(const float* x, int64_t n, float s, float z, bool is_signed, void* q) {
  const float lo = is_signed ? -128.0f : 0.0f, hi = is_signed ? 127.0f : 255.0f;
  for (int64_t i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] / s) + z;
    if (std::isnan(v)) v = z;
    v = v < lo ? lo : (v > hi ? hi : v);
    if (is_signed)
      static_cast<int8_t*>(q)[i] = static_cast<int8_t>(v);
    else
      static_cast<uint8_t*>(q)[i] = static_cast<uint8_t>(v);
  }
}

void dequantize_plain(const void* q, int64_t n, float s, int32_t z, bool is_signed, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v =
        is_signed ? static_cast<const int8_t*>(q)[i] : static_cast<const uint8_t*>(q)[i];
    y[i] = static_cast<float>(v - z) * s;
  }
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void quantize_avx512(const float* x, int64_t n, float s, float z,
                                                        bool is_signed, void* q) {
  const __m512 vs = _mm512_set1_ps(s), vz = _mm512_set1_ps(z);
  const __m512 lo = _mm512_set1_ps(is_signed ? -128.0f : 0.0f);
  const __m512 hi = _mm512_set1_ps(is_signed ? 127.0f : 255.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = first_lanes(n - i);
    const __m512 r = _mm512_roundscale_ps(_mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), vs),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 v = _mm512_add_ps(r, vz);
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), vz);
    const __m512i k = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, lo), hi));
    if (is_signed)
      _mm512_mask_cvtsepi32_storeu_epi8(static_cast<int8_t*>(q) + i, m, k);
    else
      _mm512_mask_cvtusepi32_storeu_epi8(static_cast<uint8_t*>(q) + i, m, k);
  }
}

__attribute__((target("avx512f"))) void dequantize_avx512(const void* q, int64_t n, float s,
                                                          int32_t z, bool is_signed, float* y) {
  const __m512 vs = _mm512_set1_ps(s);
  const __m512i vz = _mm512_set1_epi32(z);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = first_lanes(n - i);
    alignas(16) uint8_t tail[16] = {};
    const uint8_t* at = static_cast<const uint8_t*>(q) + i;
    if (n - i < 16) at = static_cast<const uint8_t*>(std::memcpy(tail, at, n - i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    const __m512i v = is_signed ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
    const __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(v, vz));
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(f, vs));
  }
}
#endif

template <typename Fn>
void in_chunks(int64_t n, Fn&& fn) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) fn(c * kChunk, std::min(kChunk, n - c * kChunk));
}

}  // namespace

void quantize_per_tensor(const float* x, int64_t n, float scale, float zero_point, bool is_signed,
                         void* q) {
  in_chunks(n, [&](int64_t at, int64_t len) {
    void* out = static_cast<uint8_t*>(q) + at;
#if defined(__x86_64__)
    if (has_avx512f()) return quantize_avx512(x + at, len, scale, zero_point, is_signed, out);
#endif
    quantize_plain(x + at, len, scale, zero_point, is_signed, out);
  });
}

void dequantize_per_tensor(const void* q, int64_t n, float scale, int32_t zero_point,
                           bool is_signed, float* y) {
  in_chunks(n, [&](int64_t at, int64_t len) {
    const void* in = static_cast<const uint8_t*>(q) + at;
#if defined(__x86_64__)
    if (has_avx512f()) return dequantize_avx512(in, len, scale, zero_point, is_signed, y + at);
#endif
    dequantize_plain(in, len, scale, zero_point, is_signed, y + at);
  });
}

}  // namespace trtutils::cpu
