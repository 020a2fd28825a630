#include "backends/cpu/blocked_depthwise.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cpu/lru_cache.h"
#include "backends/cpu/onednn_conv_parts.h"
#include "backends/cpu/silu.h"
#include "backends/cpu/vector_exp.h"
#include "ops/blocked_layout.h"

namespace trtutils::cpu::nn {

namespace {

constexpr int64_t kLanes = ops::kChannelBlock;
constexpr int kPixels = 8;  // output pixels per register block
std::atomic<int64_t> g_runs{0};

// Weights [C, 1, k, k] as [C / 16, k * k, 16] and the bias as [C / 16, 16], zero lanes past C.
struct Packed {
  std::vector<float> w, b;
  std::weak_ptr<const uint8_t> weights, bias;  // the keys' buffers
  std::vector<uint32_t> sample, bias_sample;   // their values when packed
  bool stale() const { return weights.expired(); }
};

std::shared_ptr<Packed> pack(const BlockedDepthwise& p, const Tensor& w, const Tensor* bias) {
  auto r = std::make_shared<Packed>();
  const int64_t blocks = ops::channel_blocks(p.channels), taps = p.kernel * p.kernel;
  r->w.assign(static_cast<size_t>(blocks * taps * kLanes), 0.0f);
  r->b.assign(static_cast<size_t>(blocks * kLanes), 0.0f);
  const float* wd = w.data<float>();
  for (int64_t c = 0; c < p.channels; ++c) {
    float* dst = r->w.data() + (c / kLanes) * taps * kLanes + c % kLanes;
    for (int64_t t = 0; t < taps; ++t) dst[t * kLanes] = wd[c * taps + t];
    if (bias) r->b[c] = bias->data<float>()[c];
  }
  r->weights = w.weak_buffer();
  if (bias) r->bias = bias->weak_buffer();
  r->sample = parts::sample_of(w);
  if (bias) r->bias_sample = parts::sample_of(*bias);
  return r;
}

// Constant weights are packed once per (weights, bias, shape) and checked as oneDNN's cached
// entries are (onednn_nn.cpp): their buffer alive, a sample of their values unchanged.
std::shared_ptr<const Packed> packed_weights(const BlockedDepthwise& p, const Tensor& w,
                                             const Tensor* bias, bool cache_weights) {
  if (!cache_weights) return pack(p, w, bias);
  static auto* cache = new LruCache<Packed>(1024, size_t{256} << 20);
  const std::string key =
      fmt::format("{}|{}|{},{}", w.raw(), bias ? bias->raw() : nullptr, p.channels, p.kernel);
  std::lock_guard<std::mutex> lock(cache->mutex());
  std::shared_ptr<Packed> e = cache->find(key);
  if (e && !e->stale() && e->sample == parts::sample_of(w) &&
      (!bias || (!e->bias.expired() && e->bias_sample == parts::sample_of(*bias))))
    return e;
  e = pack(p, w, bias);
  cache->put(key, e, (e->w.size() + e->b.size()) * sizeof(float));
  return e;
}

#if defined(__x86_64__)
struct Epilogue {
  __m512 lo, hi;
  bool relu, clip;
  __mmask16 live;     // the block's lanes below C
  bool silu = false;  // x / (1 + exp(-x)) in registers (the windowed path; else a pass after)
};

__attribute__((target("avx512f"))) inline __m512 finish(__m512 v, const Epilogue& e) {
  if (e.relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
  if (e.clip) v = _mm512_min_ps(_mm512_max_ps(v, e.lo), e.hi);
  if (e.silu)
    v = _mm512_div_ps(
        v, _mm512_add_ps(_mm512_set1_ps(1.0f), exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), v))));
  return _mm512_maskz_mov_ps(e.live, v);
}

// One output pixel with every bounds check (the row's edges).
__attribute__((target("avx512f"))) void pixel(const BlockedDepthwise& p, const float* plane,
                                              const float* wp, __m512 b, int64_t oh, int64_t ow,
                                              const Epilogue& e, float* out) {
  __m512 acc = b;
  const int64_t k = p.kernel;
  for (int64_t kh = 0; kh < k; ++kh) {
    const int64_t ih = oh + kh - p.pad_top;
    if (ih < 0 || ih >= p.height) continue;
    for (int64_t kw = 0; kw < k; ++kw) {
      const int64_t iw = ow + kw - p.pad_left;
      if (iw < 0 || iw >= p.width) continue;
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(plane + (ih * p.width + iw) * kLanes),
                            _mm512_loadu_ps(wp + (kh * k + kw) * kLanes), acc);
    }
  }
  _mm512_storeu_ps(out, finish(acc, e));
}

// One kernel row kh for P output pixels: the P - 1 + K input pixels of `row` (no checks).
template <int P, int K>
__attribute__((target("avx512f"))) inline void kernel_row(const float* row, const float* wp, int kh,
                                                          __m512* acc) {
  __m512 in[P - 1 + K];
  for (int j = 0; j < P - 1 + K; ++j) in[j] = _mm512_loadu_ps(row + j * kLanes);
  for (int kw = 0; kw < K; ++kw) {
    const __m512 w = _mm512_loadu_ps(wp + (kh * K + kw) * kLanes);
    for (int i = 0; i < P; ++i) acc[i] = _mm512_fmadd_ps(in[i + kw], w, acc[i]);
  }
}

// P output pixels from ow0, every input column inside the row (no checks); K x K kernel, stride 1.
template <int P, int K>
__attribute__((target("avx512f"))) void pixels(const BlockedDepthwise& p, const float* plane,
                                               const float* wp, __m512 b, int64_t oh, int64_t ow0,
                                               const Epilogue& e, float* out) {
  __m512 acc[P];
  for (int i = 0; i < P; ++i) acc[i] = b;
  for (int kh = 0; kh < K; ++kh) {
    const int64_t ih = oh + kh - p.pad_top;
    if (ih < 0 || ih >= p.height) continue;
    kernel_row<P, K>(plane + (ih * p.width + ow0 - p.pad_left) * kLanes, wp, kh, acc);
  }
  for (int i = 0; i < P; ++i) _mm512_storeu_ps(out + i * kLanes, finish(acc[i], e));
}

// P output pixels from ow0 of a zero-padded window of K rows, `width` pixels each.
template <int P, int K>
__attribute__((target("avx512f"))) void window_pixels(const float* win, int64_t width,
                                                      const float* wp, __m512 b, int64_t ow0,
                                                      const Epilogue& e, float* out) {
  __m512 acc[P];
  for (int i = 0; i < P; ++i) acc[i] = b;
  for (int kh = 0; kh < K; ++kh) kernel_row<P, K>(win + (kh * width + ow0) * kLanes, wp, kh, acc);
  for (int i = 0; i < P; ++i) _mm512_storeu_ps(out + i * kLanes, finish(acc[i], e));
}

// Small maps (EfficientNet's and MobileNet's 7 and 14 px), where most pixels are edge pixels:
// each channel block's plane is copied once into a zero-padded one, so that every pixel runs the
// unchecked register blocks, and SiLU is applied in registers.
template <int K>
__attribute__((target("avx512f"))) void run_windowed(const BlockedDepthwise& p, const float* x,
                                                     const float* wp, const float* bp, float* y) {
  const int64_t blocks = ops::channel_blocks(p.channels);
  const int64_t width = p.out_width + K - 1, height = p.out_height + K - 1;  // padded (stride 1)
  const int64_t planes = p.batch * blocks;
#pragma omp parallel
  {
    // Zero once: every plane writes the same interior, the border stays zero.
    std::vector<float> padded(static_cast<size_t>(height * width * kLanes), 0.0f);
#pragma omp for schedule(static)
    for (int64_t nb = 0; nb < planes; ++nb) {
      const int64_t cb = nb % blocks, left = p.channels - cb * kLanes;
      const Epilogue e{_mm512_set1_ps(p.alpha),
                       _mm512_set1_ps(p.beta),
                       p.act == ConvActivation::kRelu,
                       p.act == ConvActivation::kClip,
                       static_cast<__mmask16>(left >= kLanes ? 0xFFFF : (1u << left) - 1),
                       p.act == ConvActivation::kSilu};
      const float* plane = x + nb * p.height * p.width * kLanes;
      for (int64_t ih = 0; ih < p.height; ++ih) {
        const int64_t row = ih + p.pad_top;
        if (row >= height) break;
        std::copy_n(plane + ih * p.width * kLanes, std::min(p.width, width - p.pad_left) * kLanes,
                    padded.data() + (row * width + p.pad_left) * kLanes);
      }
      const float* w = wp + cb * K * K * kLanes;
      const __m512 b = _mm512_loadu_ps(bp + cb * kLanes);
      for (int64_t oh = 0; oh < p.out_height; ++oh) {
        const float* win = padded.data() + oh * width * kLanes;
        float* out = y + (nb * p.out_height + oh) * p.out_width * kLanes;
        int64_t ow = 0;
        for (; ow + kPixels <= p.out_width; ow += kPixels)
          window_pixels<kPixels, K>(win, width, w, b, ow, e, out + ow * kLanes);
        for (; ow + kPixels / 2 <= p.out_width; ow += kPixels / 2)
          window_pixels<kPixels / 2, K>(win, width, w, b, ow, e, out + ow * kLanes);
        for (; ow < p.out_width; ++ow)
          window_pixels<1, K>(win, width, w, b, ow, e, out + ow * kLanes);
      }
    }
  }
}

template <int K>
__attribute__((target("avx512f"))) void run(const BlockedDepthwise& p, const float* x,
                                            const float* wp, const float* bp, float* y) {
  const int64_t blocks = ops::channel_blocks(p.channels);
  // Output columns whose K input columns all lie inside the row.
  const int64_t first = p.pad_left;
  const int64_t span = p.width - K + p.pad_left;  // the last fast column's first input column
  const int64_t last = span < 0 ? 0 : std::min(p.out_width, span + 1);  // exclusive
  const int64_t rows = p.batch * blocks * p.out_height;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t oh = r % p.out_height, nb = r / p.out_height, cb = nb % blocks;
    const int64_t left = p.channels - cb * kLanes;
    Epilogue e{_mm512_set1_ps(p.alpha),
               _mm512_set1_ps(p.beta),
               p.act == ConvActivation::kRelu,
               p.act == ConvActivation::kClip,
               static_cast<__mmask16>(left >= kLanes ? 0xFFFF : (1u << left) - 1),
               false};
    const float* plane = x + nb * p.height * p.width * kLanes;
    const float* w = wp + cb * K * K * kLanes;
    const __m512 b = _mm512_loadu_ps(bp + cb * kLanes);
    float* out = y + (nb * p.out_height + oh) * p.out_width * kLanes;
    int64_t ow = 0;
    for (; ow < std::min(first, p.out_width); ++ow)
      pixel(p, plane, w, b, oh, ow, e, out + ow * kLanes);
    for (; ow + kPixels <= last; ow += kPixels)
      pixels<kPixels, K>(p, plane, w, b, oh, ow, e, out + ow * kLanes);
    for (; ow + kPixels / 2 <= last; ow += kPixels / 2)
      pixels<kPixels / 2, K>(p, plane, w, b, oh, ow, e, out + ow * kLanes);
    for (; ow < p.out_width; ++ow) pixel(p, plane, w, b, oh, ow, e, out + ow * kLanes);
  }
}
#endif

}  // namespace

bool blocked_depthwise_supported(const BlockedDepthwise& p) {
#if defined(__x86_64__)
  const bool act = p.act == ConvActivation::kNone || p.act == ConvActivation::kRelu ||
                   p.act == ConvActivation::kClip || p.act == ConvActivation::kSilu;
  const int64_t half = p.kernel / 2;
  // Stride 1 only: at stride 2 oneDNN's jit_dw was as fast or faster (trtutils_bench_ops
  // --benchmark_filter=Depthwise: 96 channels at 112 px 299 against 252 us, 672 at 14 px 23
  // against 18), at stride 1 slower (bench/RESULTS.md, issue 36).
  return has_avx512f() && act && (p.kernel == 3 || p.kernel == 5) && p.stride == 1 &&
         p.pad_top >= 0 && p.pad_top <= half && p.pad_left >= 0 && p.pad_left <= half &&
         p.height > 0 && p.width > 0;
#else
  return false;
#endif
}

void blocked_depthwise(const BlockedDepthwise& p, const float* x, const Tensor& w,
                       const Tensor* bias, bool cache_weights, float* y) {
#if defined(__x86_64__)
  ++g_runs;
  const std::shared_ptr<const Packed> packed = packed_weights(p, w, bias, cache_weights);
  const float* wp = packed->w.data();
  const float* bp = packed->b.data();
  // Up to 2 register blocks a row: the windowed rows (copies of K rows per output row) cost
  // less than the checked edge pixels.
  if (p.out_width <= 2 * kPixels) {
    if (p.kernel == 3)
      run_windowed<3>(p, x, wp, bp, y);
    else
      run_windowed<5>(p, x, wp, bp, y);
    return;
  }
  if (p.kernel == 3)
    run<3>(p, x, wp, bp, y);
  else
    run<5>(p, x, wp, bp, y);
  if (p.act == ConvActivation::kSilu)
    silu_inplace(y,
                 p.batch * ops::channel_blocks(p.channels) * p.out_height * p.out_width * kLanes);
#else
  (void)p, (void)x, (void)w, (void)bias, (void)cache_weights, (void)y;
#endif
}

int64_t blocked_depthwise_runs() {
  return g_runs.load();
}

}  // namespace trtutils::cpu::nn
