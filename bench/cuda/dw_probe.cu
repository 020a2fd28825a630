// The channels-last depthwise kernels (depthwise_kernels.cu) at the depthwise layers of the
// GPU-speed set (MobileNetV2, EfficientNet-B0, ConvNeXt-T) at batch 256, float16: the row-tiled
// kernel against the per-pixel one, median of 20 runs each, with the bandwidth of X + Y + W.
//   nvcc -std=c++17 -O2 -arch=sm_90a -Isrc -Iinclude bench/cuda/dw_probe.cu \
//       src/backends/cuda/depthwise_kernels.cu -o dw_probe && ./dw_probe [batch]
// Output: one line per layer shape; a last line with the sums.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backends/cuda/kernels.h"
#include "probe_check.h"

namespace k = trtutils::cuda::k;

namespace {

struct Layer {
  const char* model;
  int c, h, kernel, stride;
};

const Layer kLayers[] = {
    {"mobilenet_v2", 32, 112, 3, 1},    {"mobilenet_v2", 96, 112, 3, 2},
    {"mobilenet_v2", 144, 56, 3, 1},    {"mobilenet_v2", 144, 56, 3, 2},
    {"mobilenet_v2", 192, 28, 3, 1},    {"mobilenet_v2", 192, 28, 3, 2},
    {"mobilenet_v2", 384, 14, 3, 1},    {"mobilenet_v2", 576, 14, 3, 1},
    {"mobilenet_v2", 576, 14, 3, 2},    {"mobilenet_v2", 960, 7, 3, 1},
    {"efficientnet_b0", 144, 56, 5, 2}, {"efficientnet_b0", 240, 28, 5, 1},
    {"efficientnet_b0", 240, 28, 3, 2}, {"efficientnet_b0", 480, 14, 5, 1},
    {"efficientnet_b0", 672, 14, 5, 2}, {"efficientnet_b0", 1152, 7, 5, 1},
    {"convnext_tiny", 96, 56, 7, 1},    {"convnext_tiny", 192, 28, 7, 1},
    {"convnext_tiny", 384, 14, 7, 1},   {"convnext_tiny", 768, 7, 7, 1},
};

float median_ms(const k::DepthwiseDesc& d, const void* x, const void* w, const void* b, void* y) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int i = 0; i < 23; ++i) {
    CK(cudaEventRecord(e0));
    CK(k::conv_depthwise(trtutils::DataType::kFloat16, x, w, b, nullptr, y, d, k::Act::kRelu, 0, 0,
                         nullptr));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float t = 0;
    CK(cudaEventElapsedTime(&t, e0, e1));
    if (i >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 256;
  std::printf("%-16s %5s %4s %2s %2s %9s %9s %7s %8s\n", "model", "C", "HW", "k", "s", "pixel ms",
              "rows ms", "ratio", "rows GB/s");
  double sum_pixel = 0, sum_rows = 0;
  for (const Layer& l : kLayers) {
    k::DepthwiseDesc d;
    d.n = batch;
    d.h = d.w = l.h;
    d.c = l.c;
    d.kh = d.kw = l.kernel;
    d.sh = d.sw = l.stride;
    d.ph = d.pw = l.kernel / 2;
    d.oh = d.ow = (l.h + 2 * d.ph - l.kernel) / l.stride + 1;
    const size_t xb = size_t(batch) * l.h * l.h * l.c * 2,
                 yb = size_t(batch) * d.oh * d.ow * l.c * 2;
    const size_t wb = size_t(l.kernel) * l.kernel * l.c * 2;
    void *x, *w, *b, *y;
    CK(cudaMalloc(&x, xb));
    CK(cudaMalloc(&w, wb));
    CK(cudaMalloc(&b, l.c * 2));
    CK(cudaMalloc(&y, yb));
    CK(cudaMemset(x, 0x3c, xb));  // 1.0 + tiny: finite values
    CK(cudaMemset(w, 0x20, wb));
    CK(cudaMemset(b, 0, l.c * 2));
    d.variant = k::DepthwiseVariant::kPixel;
    const float pixel = median_ms(d, x, w, b, y);
    d.variant = k::DepthwiseVariant::kRows;
    const float rows = median_ms(d, x, w, b, y);
    sum_pixel += pixel;
    sum_rows += rows;
    std::printf("%-16s %5d %4d %2d %2d %9.4f %9.4f %7.2f %8.0f\n", l.model, l.c, l.h, l.kernel,
                l.stride, pixel, rows, pixel / rows, (xb + yb + wb) / (rows * 1e6));
    CK(cudaFree(x));
    CK(cudaFree(w));
    CK(cudaFree(b));
    CK(cudaFree(y));
  }
  std::printf("sum: pixel %.3f ms, rows %.3f ms, ratio %.2f\n", sum_pixel, sum_rows,
              sum_pixel / sum_rows);
  return 0;
}
