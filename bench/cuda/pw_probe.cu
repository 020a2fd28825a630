// The quantized convolutions of ResNet-50 and the matrix products of ViT-B/16 (batch 256) through
// k::qconv_igemm with one of its kernel switches off ("old") and on ("new"):
// SWITCH=TRTUTILS_CUDA_QPOINTWISE (default: the persistent streaming kernel of qconv_pointwise.cu,
// 1x1 layers), SWITCH=TRTUTILS_CUDA_WGMMA (the Hopper warpgroup-MMA kernel; the 3x3 layers too) or
// SWITCH=TRTUTILS_CUDA_TMA_GEMM (the TMA matrix-product kernel; NEW=2: int8 too). Outputs compared
// byte for byte, medians of 20 timed runs each, bytes moved and TB/s (TOP/s for the 3x3 layers and
// the products). Also small shapes at the tile edges (partial tiles in M and N, a partial
// reduction step, stride 2, padding, GELU), checked against a host reference.
//   nvcc -std=c++17 -O2 -arch=sm_90a -DTRTUTILS_CUDA_SM90A -Isrc -Iinclude bench/cuda/pw_probe.cu \
//     src/backends/cuda/qconv_igemm.cu src/backends/cuda/qconv_pointwise.cu \
//     src/backends/cuda/kernel_switches.cpp -o dist/pw_probe
//   [SWITCH=...] [NEW=1] ./pw_probe [NAME]   (int8 and E4M3; NAME: only the layers whose name
//   contains it, e.g. vit; NOTIME=1: one run each, for ncu)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cuda/kernels.h"

using trtutils::DataType;
namespace k = trtutils::cuda::k;

#include "probe_check.h"

struct Layer {
  const char* name;
  int n, h, w, c, k, stride;
  bool residual;
  int r = 1;          // kernel size r x r, padding r / 2
  bool gelu = false;  // GELU (erf) instead of ReLU
  bool gemm = false;  // a matrix product (ViT-B/16's): TOP/s instead of TB/s
};

static uint32_t rng = 12345;
static uint8_t next_byte(bool fp8) {
  rng = rng * 1664525u + 1013904223u;
  const uint8_t b = static_cast<uint8_t>(rng >> 24);
  // float8: small magnitudes only (no NaN 0x7f / 0xff), int8: any value
  return fp8 ? static_cast<uint8_t>((b & 0x80) | (b % 0x40)) : b;
}
// Host reference of the short epilogue (float32 arithmetic as the kernels contract it).
static float e4m3_value(int code) {
  const int e = (code >> 3) & 15, m = code & 7;
  const float v = e ? std::ldexp(1.0f + m / 8.0f, e - 7) : std::ldexp(m / 8.0f, -6);
  return code & 0x80 ? -v : v;
}
static uint8_t e4m3_code(float v) {  // round half to even, saturating to 448
  const float a = std::fmin(std::fabs(v), 448.0f);
  int lo = 0;
  while (lo < 126 && e4m3_value(lo + 1) <= a) ++lo;
  int c = lo;
  if (lo < 126) {
    const float dl = a - e4m3_value(lo), dh = e4m3_value(lo + 1) - a;
    if (dh < dl || (dh == dl && (lo & 1))) c = lo + 1;
  }
  return static_cast<uint8_t>(c | (std::signbit(v) && c ? 0x80 : 0));
}
static void* upload(const std::vector<uint8_t>& v) {
  void* p = nullptr;
  CK(cudaMalloc(&p, v.size()));
  CK(cudaMemcpy(p, v.data(), v.size(), cudaMemcpyHostToDevice));
  return p;
}

static const char* new_value = "1";  // NEW=...: the switch's value for "new"

static bool run(const Layer& l, bool fp8, bool time_it, const char* sw) {
  k::IgemmDesc d;
  d.n = l.n, d.h = l.h, d.w = l.w, d.c = l.c, d.k = l.k, d.kh = l.r, d.kw = l.r, d.sh = l.stride,
  d.sw = l.stride, d.ph = l.r / 2, d.pw = l.r / 2;
  d.oh = (l.h + 2 * d.ph - l.r) / l.stride + 1, d.ow = (l.w + 2 * d.pw - l.r) / l.stride + 1;
  const int64_t m = static_cast<int64_t>(d.n) * d.oh * d.ow;
  const int taps = l.r * l.r;
  std::vector<uint8_t> hx(static_cast<size_t>(l.n) * l.h * l.w * l.c), hw(size_t(l.k) * taps * l.c),
      hr(l.residual ? size_t(m) * l.k : 0);
  for (auto& b : hx) b = next_byte(fp8);
  for (auto& b : hw) b = next_byte(fp8);
  for (auto& b : hr) b = next_byte(fp8);
  std::vector<float> scale(l.k), bias(l.k);
  for (int i = 0; i < l.k; ++i) {
    scale[i] = (fp8 ? 0.02f : 0.0004f) * (1.0f + 0.5f * (i % 7) / 7.0f);
    bias[i] = 0.3f * ((i % 11) - 5);
  }
  void *x = upload(hx), *w = upload(hw), *r = l.residual ? upload(hr) : nullptr, *cs = nullptr,
       *bs = nullptr, *y0 = nullptr, *y1 = nullptr;
  CK(cudaMalloc(&cs, l.k * 4));
  CK(cudaMalloc(&bs, l.k * 4));
  CK(cudaMemcpy(cs, scale.data(), l.k * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(bs, bias.data(), l.k * 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&y0, size_t(m) * l.k));
  CK(cudaMalloc(&y1, size_t(m) * l.k));
  CK(cudaMemset(y0, 0x11, size_t(m) * l.k));
  CK(cudaMemset(y1, 0x22, size_t(m) * l.k));
  k::QEpilogue e;
  e.rows = m, e.cols = l.k;
  e.colscale = static_cast<const float*>(cs);
  e.bias = static_cast<const float*>(bs);
  e.act = l.gelu ? k::Act::kGelu : k::Act::kRelu;
  const DataType t = fp8 ? DataType::kFloat8E4M3FN : DataType::kInt8;
  e.y_t = t, e.y_scale = fp8 ? 0.05f : 0.04f, e.y_zp = fp8 ? 0.0f : -3.0f;
  if (r) e.residual = r, e.residual_t = t, e.r_scale = 0.03f, e.r_zp = fp8 ? 0.0f : 2.0f;
  float ms[2] = {0, 0};
  for (int variant = 0; variant < 2; ++variant) {
    setenv(sw, variant ? new_value : "0", 1);
    e.y = variant ? y1 : y0;
    CK(k::qconv_igemm(x, w, d, fp8, e, nullptr));
    CK(cudaDeviceSynchronize());
    if (!time_it) continue;
    std::vector<float> times;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int it = 0; it < 23; ++it) {
      CK(cudaEventRecord(a));
      CK(k::qconv_igemm(x, w, d, fp8, e, nullptr));
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float v = 0;
      CK(cudaEventElapsedTime(&v, a, b));
      if (it >= 3) times.push_back(v);
    }
    std::sort(times.begin(), times.end());
    ms[variant] = times[times.size() / 2];
  }
  std::vector<uint8_t> o0(size_t(m) * l.k), o1(size_t(m) * l.k);
  CK(cudaMemcpy(o0.data(), y0, o0.size(), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(o1.data(), y1, o1.size(), cudaMemcpyDeviceToHost));
  int64_t diff = 0, big = 0;
  for (size_t i = 0; i < o0.size(); ++i)
    if (o0[i] != o1[i]) {
      ++diff;
      const int a = fp8 ? o0[i] : static_cast<int8_t>(o0[i]);
      const int b = fp8 ? o1[i] : static_cast<int8_t>(o1[i]);
      if (std::abs(a - b) > 1) ++big;
    }
  // Against the host reference (double sums): every row of the small shapes, evenly spaced rows
  // of the large ones (about 5e7 products); outputs more than one step away, old and new kernel.
  int64_t ref_bad[2] = {0, 0}, ref_checked = 0;
  {
    const double products = double(m) * l.k * taps * l.c;
    const int64_t row_step = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(products / 5e7)));
    const float inv_y = 1.0f / e.y_scale, r_mul = e.r_scale * inv_y,
                r_add = -e.r_zp * e.r_scale * inv_y;
    float e4m3[256];
    for (int i = 0; i < 256; ++i) e4m3[i] = e4m3_value(i);
    for (int64_t row = 0; row < m; row += row_step) {
      const int64_t img = row / (d.oh * d.ow), rem = row % (d.oh * d.ow);
      const int64_t oy = rem / d.ow, ox = rem % d.ow;
      for (int n = 0; n < l.k; ++n) {
        double sum = 0;
        for (int tap = 0; tap < taps; ++tap) {
          const int64_t iy = oy * l.stride - d.ph + tap / l.r,
                        ix = ox * l.stride - d.pw + tap % l.r;
          if (iy < 0 || iy >= l.h || ix < 0 || ix >= l.w) continue;
          const int64_t pix = (img * l.h + iy) * l.w + ix;
          for (int c = 0; c < l.c; ++c) {
            const uint8_t xb = hx[pix * l.c + c], wb = hw[(size_t(n) * taps + tap) * l.c + c];
            sum += fp8 ? double(e4m3[xb]) * e4m3[wb]
                       : double(static_cast<int8_t>(xb)) * static_cast<int8_t>(wb);
          }
        }
        float y = std::fma(static_cast<float>(sum), scale[n] * inv_y, bias[n] * inv_y);
        if (r) {
          const uint8_t rb = hr[row * l.k + n];
          const float rv = fp8 ? e4m3_value(rb) : static_cast<float>(static_cast<int8_t>(rb));
          y += std::fma(rv, r_mul, r_add);
        }
        if (l.gelu) {
          const double t = double(y) * e.y_scale;
          y = static_cast<float>(0.5 * t * (1.0 + std::erf(t / std::sqrt(2.0))) / e.y_scale);
        } else {
          y = std::fmax(y, 0.0f);
        }
        const int want = fp8 ? static_cast<int8_t>(e4m3_code(y))
                             : static_cast<int>(std::fmin(
                                   std::fmax(std::nearbyint(y) + e.y_zp, -128.0f), 127.0f));
        ++ref_checked;
        for (int v = 0; v < 2; ++v) {
          int got = static_cast<int8_t>((v ? o1 : o0)[row * l.k + n]);
          if (fp8 && got == -128) got = 0;  // E4M3 -0 (a small negative GELU output) is 0
          if (std::abs(got - want) > 1) ++ref_bad[v];
        }
      }
    }
  }
  const double bytes = double(m) * l.c * (l.stride == 1 ? 1 : 1) + double(m) * l.k * (r ? 2 : 1);
  // 3x3 layers: TOP/s instead of TB/s (in the same columns)
  const bool tops = l.r > 1 || l.gemm;
  const double work = tops ? 2.0 * m * l.k * taps * l.c / 1e3 : bytes;
  // int8: the same bytes but for rare one-step ties; float8 (sums in another order, and the
  // wgmma kernel's float8 sums promoted to float32 every 64 products): at most 1 in 10,000
  // outputs more than one step off the reference
  const bool ok = fp8 ? ref_bad[1] * 10000 <= ref_checked && diff * 100 <= int64_t(o0.size())
                      : big == 0 && diff * 1000 <= int64_t(o0.size()) && ref_bad[1] == 0;
  std::printf(
      "%-5s %-22s M=%7lld C=%5d K=%5d s%d %s | old %.4f ms  new %.4f ms  x%.2f | %.2f -> "
      "%.2f %s | diff %lld (>1 step: %lld) | ref>1 of %lld: old %lld new %lld %s\n",
      fp8 ? "fp8" : "int8", l.name, static_cast<long long>(m), l.c, l.k, l.stride,
      r ? "res" : "   ", ms[0], ms[1], ms[1] > 0 ? ms[0] / ms[1] : 0.0,
      ms[0] > 0 ? work / ms[0] / 1e9 : 0.0, ms[1] > 0 ? work / ms[1] / 1e9 : 0.0,
      tops ? "TOP/s" : "TB/s", static_cast<long long>(diff), static_cast<long long>(big),
      static_cast<long long>(ref_checked), static_cast<long long>(ref_bad[0]),
      static_cast<long long>(ref_bad[1]), ok ? "OK" : "MISMATCH");
  for (void* p : {x, w, r, cs, bs, y0, y1})
    if (p) CK(cudaFree(p));
  return ok;
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;  // layers whose name contains it
  const bool time_it = std::getenv("NOTIME") == nullptr;
  const char* sw = std::getenv("SWITCH") ? std::getenv("SWITCH") : "TRTUTILS_CUDA_QPOINTWISE";
  if (std::getenv("NEW")) new_value = std::getenv("NEW");
  std::printf("old: %s=0, new: %s=%s\n", sw, sw, new_value);
  const std::vector<Layer> edges = {
      {"edge 2x13x11 s2", 2, 13, 11, 64, 144, 2, false},
      {"edge 3x9x7 K48", 3, 9, 7, 48, 48, 1, true},
      {"edge 1x10x7 C128", 1, 10, 7, 128, 48, 1, true},
      {"edge 2x5x5 C80 K272", 2, 5, 5, 80, 272, 1, true},
      {"edge 2x112x112", 2, 112, 112, 64, 256, 1, true},
      {"edge 5x17x17 C16", 5, 17, 17, 16, 32, 1, false},
      {"edge 3x3 2x9x7 C48 K80", 2, 9, 7, 48, 80, 1, true, 3},
      {"edge 3x3 s2 3x13x11 C64", 3, 13, 11, 64, 144, 2, false, 3},
      {"edge 3x3 2x6x6 C16 K16", 2, 6, 6, 16, 16, 1, false, 3},
      {"edge 3x3 1x7x7 C256 K64", 1, 7, 7, 256, 64, 1, true, 3},
      {"edge gelu 3x9x7 K48", 3, 9, 7, 48, 48, 1, true, 1, true},
      {"edge gelu 2x5x5 C320 K272", 2, 5, 5, 320, 272, 1, false, 1, true},
      // matrix products (1x1, C and K multiples of 128): partial row tiles, a ring that wraps
      {"edge gemm 1x37x5 C256 K128 res", 1, 37, 5, 256, 128, 1, true},
      {"edge gemm gelu 3x50x1 C384 K256", 3, 50, 1, 384, 256, 1, false, 1, true},
      {"edge gemm 2x33x3 C1024 K384 res", 2, 33, 3, 1024, 384, 1, true},
  };
  const std::vector<Layer> resnet = {
      {"l1 reduce 64->64", 256, 56, 56, 64, 64, 1, false},
      {"l1 reduce 256->64", 256, 56, 56, 256, 64, 1, false},
      {"l1 expand 64->256", 256, 56, 56, 64, 256, 1, true},
      {"l1 down 64->256", 256, 56, 56, 64, 256, 1, false},
      {"l2 reduce 256->128", 256, 56, 56, 256, 128, 1, false},
      {"l2 reduce 512->128", 256, 28, 28, 512, 128, 1, false},
      {"l2 expand 128->512", 256, 28, 28, 128, 512, 1, true},
      {"l2 down s2 256->512", 256, 56, 56, 256, 512, 2, false},
      {"l3 reduce 512->256", 256, 28, 28, 512, 256, 1, false},
      {"l3 reduce 1024->256", 256, 14, 14, 1024, 256, 1, false},
      {"l3 expand 256->1024", 256, 14, 14, 256, 1024, 1, true},
      {"l3 down s2 512->1024", 256, 28, 28, 512, 1024, 2, false},
      {"l4 reduce 1024->512", 256, 14, 14, 1024, 512, 1, false},
      {"l4 reduce 2048->512", 256, 7, 7, 2048, 512, 1, false},
      {"l4 expand 512->2048", 256, 7, 7, 512, 2048, 1, true},
      {"l4 down s2 1024->2048", 256, 14, 14, 1024, 2048, 2, false},
      {"l1 3x3 64", 256, 56, 56, 64, 64, 1, false, 3},
      {"l2 3x3 s2 128", 256, 56, 56, 128, 128, 2, false, 3},
      {"l2 3x3 128", 256, 28, 28, 128, 128, 1, false, 3},
      {"l3 3x3 s2 256", 256, 28, 28, 256, 256, 2, false, 3},
      {"l3 3x3 256", 256, 14, 14, 256, 256, 1, false, 3},
      {"l4 3x3 s2 512", 256, 14, 14, 512, 512, 2, false, 3},
      {"l4 3x3 512", 256, 7, 7, 512, 512, 1, false, 3},
      // ViT-B/16 at batch 256 (50,432 tokens) as 1x1 convolutions over [256, 197, 1] positions
      {"vit qkv 768->2304", 256, 197, 1, 768, 2304, 1, false, 1, false, true},
      {"vit proj 768->768 res", 256, 197, 1, 768, 768, 1, true, 1, false, true},
      {"vit mlp-up 768->3072 gelu", 256, 197, 1, 768, 3072, 1, false, 1, true, true},
      {"vit mlp-down 3072->768 res", 256, 197, 1, 3072, 768, 1, true, 1, false, true},
  };
  int bad = 0;
  for (bool fp8 : {false, true}) {
    if (!only)
      for (const Layer& l : edges) bad += !run(l, fp8, false, sw);
    for (const Layer& l : resnet)
      if (!only || std::strstr(l.name, only)) bad += !run(l, fp8, time_it, sw);
  }
  std::printf("%s: %d mismatching shapes\n", bad ? "FAIL" : "PASS", bad);
  return bad ? 1 : 0;
}
