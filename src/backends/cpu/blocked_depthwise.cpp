#include "backends/cpu/blocked_depthwise.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "backends/cpu/silu.h"
#include "backends/cpu/vector_exp.h"
#include "ops/blocked_layout.h"

namespace trtutils::cpu::nn {

namespace {

constexpr int64_t kLanes = ops::kChannelBlock;
constexpr int kPixels = 8;  // output pixels per register block
std::atomic<int64_t> g_runs{0};

// w [C, 1, 3, 3] -> [C / 16, 9, 16] with zero lanes past C; bias -> [C / 16, 16].
void pack(const BlockedDepthwise& p, const float* w, const float* bias, std::vector<float>& wp,
          std::vector<float>& bp) {
  const int64_t blocks = ops::channel_blocks(p.channels);
  wp.assign(static_cast<size_t>(blocks * 9 * kLanes), 0.0f);
  bp.assign(static_cast<size_t>(blocks * kLanes), 0.0f);
  for (int64_t c = 0; c < p.channels; ++c) {
    for (int t = 0; t < 9; ++t) wp[((c / kLanes) * 9 + t) * kLanes + c % kLanes] = w[c * 9 + t];
    if (bias) bp[c] = bias[c];
  }
}

#if defined(__x86_64__)
struct Epilogue {
  __m512 lo, hi;
  bool relu, clip;
  __mmask16 live;  // the block's lanes below C
};

__attribute__((target("avx512f"))) inline __m512 finish(__m512 v, const Epilogue& e) {
  if (e.relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
  if (e.clip) v = _mm512_min_ps(_mm512_max_ps(v, e.lo), e.hi);
  return _mm512_maskz_mov_ps(e.live, v);
}

// One output pixel with every bounds check (the row's edges).
__attribute__((target("avx512f"))) void pixel(const BlockedDepthwise& p, const float* plane,
                                              const float* wp, __m512 b, int64_t oh, int64_t ow,
                                              const Epilogue& e, float* out) {
  __m512 acc = b;
  for (int kh = 0; kh < 3; ++kh) {
    const int64_t ih = oh * p.stride + kh - p.pad_top;
    if (ih < 0 || ih >= p.height) continue;
    for (int kw = 0; kw < 3; ++kw) {
      const int64_t iw = ow * p.stride + kw - p.pad_left;
      if (iw < 0 || iw >= p.width) continue;
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(plane + (ih * p.width + iw) * kLanes),
                            _mm512_loadu_ps(wp + (kh * 3 + kw) * kLanes), acc);
    }
  }
  _mm512_storeu_ps(out, finish(acc, e));
}

// P output pixels from ow0, every input column inside the row (no checks).
template <int S, int P>
__attribute__((target("avx512f"))) void pixels(const BlockedDepthwise& p, const float* plane,
                                               const float* wp, __m512 b, int64_t oh, int64_t ow0,
                                               const Epilogue& e, float* out) {
  constexpr int kIn = (P - 1) * S + 3;
  __m512 acc[P];
  for (int i = 0; i < P; ++i) acc[i] = b;
  for (int kh = 0; kh < 3; ++kh) {
    const int64_t ih = oh * S + kh - p.pad_top;
    if (ih < 0 || ih >= p.height) continue;
    const float* row = plane + (ih * p.width + ow0 * S - p.pad_left) * kLanes;
    __m512 in[kIn];
    for (int j = 0; j < kIn; ++j) in[j] = _mm512_loadu_ps(row + j * kLanes);
    for (int kw = 0; kw < 3; ++kw) {
      const __m512 w = _mm512_loadu_ps(wp + (kh * 3 + kw) * kLanes);
      for (int i = 0; i < P; ++i) acc[i] = _mm512_fmadd_ps(in[i * S + kw], w, acc[i]);
    }
  }
  for (int i = 0; i < P; ++i) _mm512_storeu_ps(out + i * kLanes, finish(acc[i], e));
}

template <int S>
__attribute__((target("avx512f"))) void run(const BlockedDepthwise& p, const float* x,
                                            const float* wp, const float* bp, float* y) {
  const int64_t blocks = ops::channel_blocks(p.channels);
  // Output columns whose three input columns all lie inside the row.
  const int64_t first = (p.pad_left + S - 1) / S;
  const int64_t span = p.width - 3 + p.pad_left;  // the last fast column's first input column
  const int64_t last = span < 0 ? 0 : std::min(p.out_width, span / S + 1);  // exclusive
  const int64_t rows = p.batch * blocks * p.out_height;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t oh = r % p.out_height, nb = r / p.out_height, cb = nb % blocks;
    const int64_t left = p.channels - cb * kLanes;
    Epilogue e{_mm512_set1_ps(p.alpha), _mm512_set1_ps(p.beta), p.act == ConvActivation::kRelu,
               p.act == ConvActivation::kClip,
               static_cast<__mmask16>(left >= kLanes ? 0xFFFF : (1u << left) - 1)};
    const float* plane = x + nb * p.height * p.width * kLanes;
    const float* w = wp + cb * 9 * kLanes;
    const __m512 b = _mm512_loadu_ps(bp + cb * kLanes);
    float* out = y + (nb * p.out_height + oh) * p.out_width * kLanes;
    int64_t ow = 0;
    for (; ow < std::min(first, p.out_width); ++ow)
      pixel(p, plane, w, b, oh, ow, e, out + ow * kLanes);
    for (; ow + kPixels <= last; ow += kPixels)
      pixels<S, kPixels>(p, plane, w, b, oh, ow, e, out + ow * kLanes);
    for (; ow + kPixels / 2 <= last; ow += kPixels / 2)
      pixels<S, kPixels / 2>(p, plane, w, b, oh, ow, e, out + ow * kLanes);
    for (; ow < p.out_width; ++ow) pixel(p, plane, w, b, oh, ow, e, out + ow * kLanes);
  }
}
#endif

}  // namespace

bool blocked_depthwise_supported(const BlockedDepthwise& p) {
#if defined(__x86_64__)
  const bool act = p.act == ConvActivation::kNone || p.act == ConvActivation::kRelu ||
                   p.act == ConvActivation::kClip || p.act == ConvActivation::kSilu;
  return has_avx512f() && act && (p.stride == 1 || p.stride == 2) && p.pad_top >= 0 &&
         p.pad_top <= 1 && p.pad_left >= 0 && p.pad_left <= 1 && p.height > 0 && p.width > 0;
#else
  return false;
#endif
}

void blocked_depthwise(const BlockedDepthwise& p, const float* x, const float* w, const float* bias,
                       float* y) {
#if defined(__x86_64__)
  ++g_runs;
  thread_local std::vector<float> wp, bp;
  pack(p, w, bias, wp, bp);
  if (p.stride == 1)
    run<1>(p, x, wp.data(), bp.data(), y);
  else
    run<2>(p, x, wp.data(), bp.data(), y);
  if (p.act == ConvActivation::kSilu)
    silu_inplace(y,
                 p.batch * ops::channel_blocks(p.channels) * p.out_height * p.out_width * kLanes);
#else
  (void)p, (void)x, (void)w, (void)bias, (void)y;
#endif
}

int64_t blocked_depthwise_runs() {
  return g_runs.load();
}

}  // namespace trtutils::cpu::nn
