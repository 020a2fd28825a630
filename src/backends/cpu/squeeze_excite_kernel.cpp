// com.trtutils::SqueezeExcite (se_fusion, passes.h): Y = X * gate(W2 . A(W1 . mean(X) + B1) + B2)
// on float32, [N, C, H, W], channels-last [N, H, W, C] or blocked [N, C / 16, H, W, 16]
// (ops/blocked_layout.h; the per-channel arrays then have 16 lanes per block, those past C
// zero). One parallel region: per-thread
// channel sums of X, the two small products on the summed means, then the scaling pass, which
// writes into X's buffer when the session donates it.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/nn_kernels.h"
#include "backends/cpu/vector_exp.h"
#include "core/check.h"
#include "ops/blocked_layout.h"

namespace trtutils::cpu::nn {

namespace {

struct SeParams {
  int64_t n = 0, c = 0, r = 0, hw = 0;
  int64_t lanes = 0;  // per-image stride of the channel arrays: C, or the blocks' 16 lanes each
  bool channels_last = false, blocked = false;
  const float *w1 = nullptr, *b1 = nullptr, *w2 = nullptr, *b2 = nullptr;
  ConvPostOps act;  // A (activation only)
  bool hard_gate = false;
  float gate_alpha = 0, gate_beta = 0;
};

float activate(const ConvPostOps& a, float v) {
  switch (a.act) {
    case ConvActivation::kNone:
      return v;
    case ConvActivation::kRelu:
      return v > 0.0f ? v : 0.0f;
    case ConvActivation::kLeakyRelu:
      return v < 0.0f ? a.alpha * v : v;
    case ConvActivation::kClip:
      return std::min(std::max(v, a.alpha), a.beta);
    case ConvActivation::kSigmoid:
      return 1.0f / (1.0f + std::exp(-v));
    case ConvActivation::kHardSwish:
      return v * std::max(0.0f, std::min(1.0f, v / 6.0f + 0.5f));
    case ConvActivation::kSilu:
      return v * (1.0f / (1.0f + std::exp(-v)));
  }
  return v;
}

float gate(const SeParams& p, float v) {
  if (p.hard_gate) return std::max(0.0f, std::min(1.0f, p.gate_alpha * v + p.gate_beta));
  return 1.0f / (1.0f + std::exp(-v));
}

#if defined(__x86_64__)
// The blocked layout's loops in AVX-512 lanes (one vector per pixel): the library's baseline
// build runs the plain loops below in SSE2, 4-8 instructions per pixel; EfficientNet-B0's 56 px
// block took 0.21 ms where ONNX Runtime's pool and Mul take 0.08.
__attribute__((target("avx512f"))) void plane_sums_16(const float* xp, int64_t hw, double* s) {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (int64_t i = 0; i < hw; ++i) {
    const __m512 v = _mm512_loadu_ps(xp + i * 16);
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    hi = _mm512_add_pd(
        hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
  }
  _mm512_storeu_pd(s, _mm512_add_pd(_mm512_loadu_pd(s), lo));
  _mm512_storeu_pd(s + 8, _mm512_add_pd(_mm512_loadu_pd(s + 8), hi));
}
__attribute__((target("avx512f"))) void plane_scale_16(const float* xp, int64_t hw, const float* s,
                                                       float* yp) {
  const __m512 sv = _mm512_loadu_ps(s);
  for (int64_t i = 0; i < hw; ++i)
    _mm512_storeu_ps(yp + i * 16, _mm512_mul_ps(_mm512_loadu_ps(xp + i * 16), sv));
}
#endif

void plane_sums(const float* xp, int64_t hw, double* s) {
#if defined(__x86_64__)
  if (has_avx512f()) return plane_sums_16(xp, hw, s);
#endif
  for (int64_t i = 0; i < hw; ++i)
    for (int64_t j = 0; j < 16; ++j) s[j] += xp[i * 16 + j];
}
void plane_scale(const float* xp, int64_t hw, const float* s, float* yp) {
#if defined(__x86_64__)
  if (has_avx512f()) return plane_scale_16(xp, hw, s, yp);
#endif
  for (int64_t i = 0; i < hw; ++i)
    for (int64_t j = 0; j < 16; ++j) yp[i * 16 + j] = xp[i * 16 + j] * s[j];
}

// Per-thread partial sums (in double) of X's channels for thread t of nt: sums[b * c + k].
void channel_sums(const SeParams& p, const float* x, int t, int nt, double* sums) {
  std::fill(sums, sums + p.n * p.lanes, 0.0);
  if (p.blocked) {  // planes of (image, block): hw rows of 16 lanes
    const int64_t blocks = p.lanes / 16, planes = p.n * blocks;
    const int64_t lo = planes * t / nt, hi = planes * (t + 1) / nt;
    for (int64_t pl = lo; pl < hi; ++pl)
      plane_sums(x + pl * p.hw * 16, p.hw, sums + (pl / blocks) * p.lanes + (pl % blocks) * 16);
    return;
  }
  if (p.channels_last) {
    const int64_t rows = p.n * p.hw, lo = rows * t / nt, hi = rows * (t + 1) / nt;
    for (int64_t row = lo; row < hi; ++row) {
      const float* xr = x + row * p.c;
      double* s = sums + (row / p.hw) * p.c;
      for (int64_t k = 0; k < p.c; ++k) s[k] += xr[k];
    }
    return;
  }
  const int64_t planes = p.n * p.c, lo = planes * t / nt, hi = planes * (t + 1) / nt;
  for (int64_t pl = lo; pl < hi; ++pl) {
    const float* xp = x + pl * p.hw;
    double acc = 0.0;
    for (int64_t i = 0; i < p.hw; ++i) acc += xp[i];
    sums[pl] = acc;
  }
}

// sum_k w[k] * v[k] in vector lanes (the order of a plain loop would keep it scalar: a float
// reduction does not vectorize otherwise; EfficientNet's 1152 x 48 products took 0.1 ms).
float dot(const float* w, const float* v, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t k = 0; k < n; ++k) acc += w[k] * v[k];
  return acc;
}

// The gate of image b's channels from the nt threads' partial sums.
void image_scale(const SeParams& p, int64_t b, const double* partial, int nt, float* scale) {
  std::vector<float> mean(p.c), h(p.r);
  for (int64_t k = 0; k < p.c; ++k) {
    double acc = 0;
    for (int t = 0; t < nt; ++t) acc += partial[(t * p.n + b) * p.lanes + k];
    mean[k] = static_cast<float>(acc / static_cast<double>(p.hw));
  }
  for (int64_t j = 0; j < p.r; ++j) {
    const float acc = (p.b1 ? p.b1[j] : 0.0f) + dot(p.w1 + j * p.c, mean.data(), p.c);
    h[j] = activate(p.act, acc);
  }
  for (int64_t k = 0; k < p.c; ++k) {
    const float acc = (p.b2 ? p.b2[k] : 0.0f) + dot(p.w2 + k * p.r, h.data(), p.r);
    scale[b * p.lanes + k] = gate(p, acc);
  }
}

void scale_rows(const SeParams& p, const float* x, const float* scale, float* y) {
  if (p.blocked) {
    const int64_t blocks = p.lanes / 16;
#pragma omp for schedule(static)
    for (int64_t pl = 0; pl < p.n * blocks; ++pl)
      plane_scale(x + pl * p.hw * 16, p.hw, scale + (pl / blocks) * p.lanes + (pl % blocks) * 16,
                  y + pl * p.hw * 16);
    return;
  }
  if (p.channels_last) {
#pragma omp for schedule(static)
    for (int64_t row = 0; row < p.n * p.hw; ++row) {
      const float* s = scale + (row / p.hw) * p.c;
      const float* xr = x + row * p.c;
      float* yr = y + row * p.c;
      for (int64_t k = 0; k < p.c; ++k) yr[k] = xr[k] * s[k];
    }
    return;
  }
#pragma omp for schedule(static)
  for (int64_t pl = 0; pl < p.n * p.c; ++pl) {
    const float s = scale[pl];
    const float* xp = x + pl * p.hw;
    float* yp = y + pl * p.hw;
    for (int64_t i = 0; i < p.hw; ++i) yp[i] = xp[i] * s;
  }
}

void squeeze_excite(const SeParams& p, const float* x, float* y) {
  const int64_t work = p.n * p.c * p.hw;
  // Each synchronisation (region start, barrier, region end) costs a thread wake-up where idle
  // threads sleep (the CLI's passive wait policy on a busy machine), ~50 us on the 2-core
  // machine; with the brief spin of an idle machine it costs little, and EfficientNet-B0's
  // 7x7x1152 blocks (56 Ki floats) ran 4-15% faster split in two (bench/RESULTS.md, issue 36).
  // Below 32 Ki floats one thread does it alone.
  const int threads = work > (1 << 15) ? omp_get_max_threads() : 1;
  std::vector<double> partial(static_cast<size_t>(threads * p.n * p.lanes));
  std::vector<float> scale(static_cast<size_t>(p.n * p.lanes), 0.0f);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    channel_sums(p, x, t, nt, partial.data() + t * p.n * p.lanes);
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t b = 0; b < p.n; ++b) image_scale(p, b, partial.data(), nt, scale.data());
    scale_rows(p, x, scale.data(), y);
  }
}

const float* optional_vector(const KernelContext& ctx, size_t i, int64_t size, const char* what) {
  if (!ctx.has_input(i)) return nullptr;
  const Tensor& t = ctx.input(i);
  TRT_CHECK_ARG(t.dtype() == DataType::kFloat32 && t.numel() == size,
                "{}: {} must be float32 with {} elements, got {} {}", ctx.node.describe(), what,
                size, dtype_name(t.dtype()), shape_str(t.shape()));
  return t.data<float>();
}

SeParams read_params(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x = ctx.input(0);
  const Tensor& w1 = ctx.input(1);
  const Tensor& w2 = ctx.input(3);
  TRT_CHECK(x.dtype() == DataType::kFloat32 && w1.dtype() == DataType::kFloat32 &&
                w2.dtype() == DataType::kFloat32,
            ErrorCode::kNotSupported, "{}: SqueezeExcite runs float32 only", node.describe());
  SeParams p;
  p.channels_last = node.attr_int("channels_last", 0) != 0;
  p.blocked = node.attr_int("blocked", 0) != 0;
  TRT_CHECK_ARG(x.rank() == (p.blocked ? 5 : 4) && w1.rank() == 4 && w2.rank() == 4,
                "{}: X ({} in this layout), W1 and W2 must have rank 4", node.describe(),
                p.blocked ? 5 : 4);
  p.n = x.dim(0);
  p.c = p.blocked ? w1.dim(1) : p.channels_last ? x.dim(3) : x.dim(1);
  p.hw = p.channels_last ? x.dim(1) * x.dim(2) : x.dim(2) * x.dim(3);
  p.lanes = p.blocked ? x.dim(1) * 16 : p.c;
  TRT_CHECK_ARG(!p.blocked || (x.dim(4) == 16 && x.dim(1) == ops::channel_blocks(p.c)),
                "{}: a blocked X must be [N, {}, H, W, 16], got {}", node.describe(),
                ops::channel_blocks(p.c), shape_str(x.shape()));
  p.r = w1.dim(0);
  TRT_CHECK_ARG(w1.shape() == (Shape{p.r, p.c, 1, 1}) && w2.shape() == (Shape{p.c, p.r, 1, 1}),
                "{}: W1 {} and W2 {} must be [R, {}, 1, 1] and [{}, R, 1, 1]", node.describe(),
                shape_str(w1.shape()), shape_str(w2.shape()), p.c, p.c);
  p.w1 = w1.data<float>();
  p.w2 = w2.data<float>();
  p.b1 = optional_vector(ctx, 2, p.r, "B1");
  p.b2 = optional_vector(ctx, 4, p.c, "B2");
  const ops::FusedActivationAttr a = ops::read_fused_activation(node);
  p.act.act = a.kind;
  p.act.alpha = a.alpha;
  p.act.beta = a.beta;
  const std::string g = node.attr_string("gate", "Sigmoid");
  TRT_CHECK(g == "Sigmoid" || g == "HardSigmoid", ErrorCode::kNotSupported,
            "{}: gate '{}' is not supported (Sigmoid, HardSigmoid)", node.describe(), g);
  p.hard_gate = g == "HardSigmoid";
  const std::vector<float> gp = node.attr_floats("gate_params", {0.2f, 0.5f});
  TRT_CHECK_ARG(!p.hard_gate || gp.size() == 2, "{}: gate_params must be [alpha, beta]",
                node.describe());
  if (p.hard_gate) p.gate_alpha = gp[0], p.gate_beta = gp[1];
  return p;
}

}  // namespace

void squeeze_excite_kernel(KernelContext& ctx) {
  const SeParams p = read_params(ctx);
  const Tensor& x = ctx.input(0);
  ctx.outputs.at(0) = ctx.input_is_donated(0) ? x : Tensor::uninitialized(x.dtype(), x.shape());
  squeeze_excite(p, x.data<float>(), ctx.outputs[0].data<float>());
}

}  // namespace trtutils::cpu::nn
