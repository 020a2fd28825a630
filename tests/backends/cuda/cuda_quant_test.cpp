// CUDA QuantizeLinear / DequantizeLinear and the quantized islands (QConv / QGemm / QMatMul) vs
// the CPU kernels: int8 (cuBLASLt int8 with the zero-point correction, uint8 inputs), float8
// (cuBLASLt FP8 on SM >= 89) and the float fallback (grouped convolutions, QMatMul). Quantized
// outputs may differ by one step where float rounding crosses a rounding boundary.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <iostream>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cuda_test_util.h"
#include "ops/qlinear_ops.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT
using namespace ops::qlinear;  // NOLINT

template <typename T>
Tensor scalar(DataType dt, T v) {
  return Tensor::from_vector<T>(dt, {}, {v});
}

Tensor per_channel(int64_t n, float lo, float hi, uint32_t seed) {
  return random_tensor(DataType::kFloat32, {n}, seed, lo, hi);
}

// One-node case of a Q-op with the 12 positional inputs (omitted where not given).
NodeCase qcase(const char* op, std::map<size_t, In> given, std::vector<ir::Attribute> attrs = {}) {
  NodeCase c;
  c.op = op;
  c.domain = kDomain;
  c.attrs = std::move(attrs);
  size_t last = 0;
  for (const auto& [i, v] : given) last = std::max(last, i);
  for (size_t i = 0; i <= last; ++i) {
    auto it = given.find(i);
    c.inputs.push_back(it == given.end() ? omitted() : it->second);
  }
  return c;
}

// Runs a one-node Q-op case on both backends; `path` (when not empty) must appear in the
// executor's kernel description ("int8", "fp8", "float32").
void check_quantized(const NodeCase& c, const std::string& what, const std::string& path = "") {
  const std::vector<Tensor> want = run_cpu(c);
  Tensor got;
  std::string kernel;
  try {
    cuda::Executor ex(make_model(c), {});
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      if (!c.inputs[i].omitted && !c.inputs[i].constant)
        feeds["in" + std::to_string(i)] = c.inputs[i].value;
    got = ex.run(feeds).at("out0");
    kernel = ex.node_kernels().at(0);
  } catch (const std::exception& e) {
    FAIL() << what << ": " << e.what();
  }
  std::cout << "[ kernel   ] " << what << ": " << kernel << std::endl;
  if (!path.empty()) {
    EXPECT_NE(kernel.find(path), std::string::npos) << what << ": " << kernel;
  }
  const DataType dt = want[0].dtype();
  if (dt == DataType::kFloat32) {
    expect_close(got, want[0], {2e-4, 2e-4}, what);
  } else if (dt == DataType::kFloat8E4M3FN || dt == DataType::kFloat8E5M2) {
    expect_close(got, want[0], {4e-3, dt == DataType::kFloat8E4M3FN ? 0.13 : 0.26}, what);
  } else {
    expect_within_steps(got, want[0], 1.0, what);
  }
}

// float8 products run on cuBLASLt from SM 89 (Ada / Hopper).
std::string fp8_path() {
  return cuda::device_status().sm >= 89 ? "fp8" : "float32";
}

TEST(CudaQuant, QuantizeDequantize) {
  TRT_REQUIRE_CUDA();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 5, 7}, 1, -4, 4);
  check_case({"QuantizeLinear",
              {feed(x), weight(scalar<float>(DataType::kFloat32, 0.03f)),
               weight(scalar<int8_t>(DataType::kInt8, -3))}},
             kExact, "Quantize int8 per tensor");
  check_case({"QuantizeLinear",
              {feed(x), weight(per_channel(3, 0.01f, 0.05f, 2)),
               weight(Tensor::from_vector<uint8_t>(DataType::kUInt8, {3}, {128, 120, 135}))},
              {ai("axis", 1)}},
             kExact, "Quantize uint8 per channel");
  check_case({"QuantizeLinear",
              {feed(x), weight(scalar<float>(DataType::kFloat32, 0.02f)),
               weight(Tensor(DataType::kFloat8E4M3FN, {}))},
              {},
              1,
              "",
              19},
             kExact, "Quantize float8e4m3fn");
  const Tensor q = random_tensor(DataType::kInt8, {2, 3, 5, 7}, 3, -128, 127);
  check_case({"DequantizeLinear",
              {feed(q), weight(per_channel(3, 0.01f, 0.05f, 4)),
               weight(Tensor::from_vector<int8_t>(DataType::kInt8, {3}, {0, 2, -1}))},
              {ai("axis", 1)}},
             kExact, "Dequantize int8 per channel");
  check_case({"DequantizeLinear",
              {feed(random_tensor(DataType::kFloat8E4M3FN, {4, 9}, 5, -100, 100)),
               weight(scalar<float>(DataType::kFloat32, 0.5f))},
              {},
              1,
              "",
              19},
             kExact, "Dequantize float8e4m3fn");
}

TEST(CudaQuant, QGemmInt8) {
  TRT_REQUIRE_CUDA();
  const int64_t m = 5, k = 33, n = 17;
  // int8 X with a non-zero zero point (column-sum correction), per-channel W, int8 Y.
  check_quantized(qcase("QGemm",
                        {{kX, feed(random_tensor(DataType::kInt8, {m, k}, 10, -128, 127))},
                         {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
                         {kXZeroPoint, weight(scalar<int8_t>(DataType::kInt8, 3))},
                         {kW, weight(random_tensor(DataType::kInt8, {n, k}, 11, -127, 127))},
                         {kWScale, weight(per_channel(n, 0.001f, 0.01f, 12))},
                         {kBias, weight(random_tensor(DataType::kFloat32, {n}, 13))},
                         {kYScale, weight(scalar<float>(DataType::kFloat32, 0.05f))},
                         {kYZeroPoint, weight(scalar<int8_t>(DataType::kInt8, -2))}},
                        {ai("transB", 1)}),
                  "QGemm int8 -> int8");
  // uint8 X, W [K, N], float output with a float residual and Relu, batch dims on X.
  check_quantized(qcase("QGemm",
                        {{kX, feed(random_tensor(DataType::kUInt8, {2, 3, k}, 14, 0, 255))},
                         {kXScale, weight(scalar<float>(DataType::kFloat32, 0.01f))},
                         {kXZeroPoint, weight(scalar<uint8_t>(DataType::kUInt8, 128))},
                         {kW, weight(random_tensor(DataType::kInt8, {k, n}, 15, -127, 127))},
                         {kWScale, weight(scalar<float>(DataType::kFloat32, 0.004f))},
                         {kResidual, feed(random_tensor(DataType::kFloat32, {2, 3, n}, 16))}},
                        {as("activation", "Relu")}),
                  "QGemm uint8 -> float with residual");
}

TEST(CudaQuant, QGemmFloat8) {
  TRT_REQUIRE_CUDA();
  const int64_t m = 24, k = 64, n = 48;
  check_quantized(qcase("QGemm",
                        {{kX, feed(random_tensor(DataType::kFloat8E4M3FN, {m, k}, 20, -4, 4))},
                         {kXScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
                         {kW, weight(random_tensor(DataType::kFloat8E4M3FN, {n, k}, 21, -4, 4))},
                         {kWScale, weight(per_channel(n, 0.01f, 0.02f, 22))},
                         {kBias, weight(random_tensor(DataType::kFloat32, {n}, 23))},
                         {kYScale, weight(scalar<float>(DataType::kFloat32, 0.05f))},
                         {kYZeroPoint, weight(Tensor(DataType::kFloat8E4M3FN, {}))}},
                        {ai("transB", 1)}),
                  "QGemm float8 -> float8", fp8_path());
  check_quantized(
      qcase("QGemm", {{kX, feed(random_tensor(DataType::kFloat8E4M3FN, {m, 30}, 24, -4, 4))},
                      {kXScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
                      {kW, weight(random_tensor(DataType::kFloat8E4M3FN, {30, n}, 25, -4, 4))},
                      {kWScale, weight(scalar<float>(DataType::kFloat32, 0.01f))}}),
      "QGemm float8 odd K -> float");
}

TEST(CudaQuant, QConv) {
  TRT_REQUIRE_CUDA();
  const Shape xs{2, 8, 11, 13}, ws{16, 8, 3, 3};
  // int8, stride 2, x zero point (im2col pads with it), quantized residual, Relu, int8 out.
  const std::vector<ir::Attribute> geo = {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 2})};
  std::vector<ir::Attribute> attrs = geo;
  attrs.push_back(as("activation", "Relu"));
  check_quantized(
      qcase("QConv",
            {{kX, feed(random_tensor(DataType::kInt8, xs, 30, -128, 127))},
             {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
             {kXZeroPoint, weight(scalar<int8_t>(DataType::kInt8, -5))},
             {kW, weight(random_tensor(DataType::kInt8, ws, 31, -127, 127))},
             {kWScale, weight(per_channel(16, 0.001f, 0.004f, 32))},
             {kBias, weight(random_tensor(DataType::kFloat32, {16}, 33))},
             {kYScale, weight(scalar<float>(DataType::kFloat32, 0.04f))},
             {kYZeroPoint, weight(scalar<int8_t>(DataType::kInt8, 0))},
             {kResidual, feed(random_tensor(DataType::kInt8, {2, 16, 6, 7}, 34, -128, 127))},
             {kRScale, weight(scalar<float>(DataType::kFloat32, 0.03f))},
             {kRZeroPoint, weight(scalar<int8_t>(DataType::kInt8, 1))}},
            attrs),
      "QConv int8 residual relu", "int8");
  // uint8 X, asymmetric pads, float output.
  check_quantized(qcase("QConv",
                        {{kX, feed(random_tensor(DataType::kUInt8, {1, 3, 10, 9}, 35, 0, 255))},
                         {kXScale, weight(scalar<float>(DataType::kFloat32, 0.01f))},
                         {kXZeroPoint, weight(scalar<uint8_t>(DataType::kUInt8, 100))},
                         {kW, weight(random_tensor(DataType::kInt8, {5, 3, 3, 3}, 36, -127, 127))},
                         {kWScale, weight(scalar<float>(DataType::kFloat32, 0.003f))}},
                        {ais("pads", {0, 1, 2, 1})}),
                  "QConv uint8 asymmetric pads -> float");
  // Depthwise: the float path.
  check_quantized(qcase("QConv",
                        {{kX, feed(random_tensor(DataType::kInt8, {1, 16, 9, 9}, 37, -128, 127))},
                         {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
                         {kW, weight(random_tensor(DataType::kInt8, {16, 1, 3, 3}, 38, -127, 127))},
                         {kWScale, weight(per_channel(16, 0.001f, 0.004f, 39))},
                         {kYScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
                         {kYZeroPoint, weight(scalar<int8_t>(DataType::kInt8, 0))}},
                        {ai("group", 16), ais("pads", {1, 1, 1, 1}), as("activation", "Clip"),
                         afs("activation_params", {0.0f, 6.0f})}),
                  "QConv depthwise (float path)", "float32");
  // Depthwise with SiLU (EfficientNet's), int8 and float Y.
  for (bool int8_y : {true, false}) {
    std::map<size_t, In> in = {
        {kX, feed(random_tensor(DataType::kInt8, {2, 9, 9, 24}, 43, -128, 127))},
        {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
        {kW, weight(random_tensor(DataType::kInt8, {24, 1, 3, 3}, 44, -127, 127))},
        {kWScale, weight(per_channel(24, 0.001f, 0.004f, 45))}};
    if (int8_y) {
      in[kYScale] = weight(scalar<float>(DataType::kFloat32, 0.02f));
      in[kYZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, 0));
    }
    check_quantized(qcase("QConv", in,
                          {ai("group", 24), ais("pads", {1, 1, 1, 1}), ai("channels_last", 1),
                           as("activation", "Silu")}),
                    int8_y ? "QConv depthwise Silu int8" : "QConv depthwise Silu float");
  }
  // float8.
  check_quantized(
      qcase("QConv",
            {{kX, feed(random_tensor(DataType::kFloat8E4M3FN, {2, 16, 7, 7}, 40, -4, 4))},
             {kXScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
             {kW, weight(random_tensor(DataType::kFloat8E4M3FN, {32, 16, 3, 3}, 41, -4, 4))},
             {kWScale, weight(per_channel(32, 0.01f, 0.02f, 42))},
             {kYScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
             {kYZeroPoint, weight(Tensor(DataType::kFloat8E4M3FN, {}))}},
            {ais("pads", {1, 1, 1, 1})}),
      "QConv float8", fp8_path());
}

// channels_last = 1 (the qdq_layout pass): X, R and Y are [N, H, W, C].
TEST(CudaQuant, QConvChannelsLast) {
  TRT_REQUIRE_CUDA();
  std::vector<ir::Attribute> attrs = {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 1}),
                                      ai("channels_last", 1), as("activation", "Relu")};
  check_quantized(
      qcase("QConv",
            {{kX, feed(random_tensor(DataType::kInt8, {2, 11, 13, 8}, 60, -128, 127))},
             {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
             {kXZeroPoint, weight(scalar<int8_t>(DataType::kInt8, 4))},
             {kW, weight(random_tensor(DataType::kInt8, {16, 8, 3, 3}, 61, -127, 127))},
             {kWScale, weight(per_channel(16, 0.001f, 0.004f, 62))},
             {kBias, weight(random_tensor(DataType::kFloat32, {16}, 63))},
             {kYScale, weight(scalar<float>(DataType::kFloat32, 0.04f))},
             {kYZeroPoint, weight(scalar<int8_t>(DataType::kInt8, 0))},
             {kResidual, feed(random_tensor(DataType::kInt8, {2, 6, 13, 16}, 64, -128, 127))},
             {kRScale, weight(scalar<float>(DataType::kFloat32, 0.03f))}},
            attrs),
      "QConv int8 channels-last", "int8");
  check_quantized(qcase("QConv",
                        {{kX, feed(random_tensor(DataType::kUInt8, {1, 9, 9, 16}, 65, 0, 255))},
                         {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
                         {kXZeroPoint, weight(scalar<uint8_t>(DataType::kUInt8, 120))},
                         {kW, weight(random_tensor(DataType::kInt8, {16, 1, 3, 3}, 66, -127, 127))},
                         {kWScale, weight(per_channel(16, 0.001f, 0.004f, 67))},
                         {kResidual, feed(random_tensor(DataType::kFloat32, {1, 9, 9, 16}, 68))}},
                        {ai("group", 16), ais("pads", {1, 1, 1, 1}), ai("channels_last", 1)}),
                  "QConv depthwise channels-last", "depthwise");
}

// The implicit-GEMM kernel (qconv_igemm.cu, forced instead of timed): channels-last int8 and
// float8 at tile edges: positions past a 128-row tile, output channels past a 64/128 tile (in
// steps of 16, the kernel's requirement), a
// reduction that ends inside a 64-byte stage (C = 16, 3x3), strides, dilation, padding, int8 /
// float32 residuals and outputs.
// A channels-last int8 QConv (int8 or float output, int8 or float residual) at a geometry of the
// implicit-GEMM kernels, against the CPU; `path` must appear in the kernel description.
struct IgemmGeo {
  Shape xs;  // NHWC
  int64_t k, kh, kw, stride, pad, dilation;
  bool int8_out, int8_residual, relu;
  bool float_residual = true;  // with int8_out and no int8 residual
};
void check_igemm(const IgemmGeo& t, uint32_t& seed, const std::string& path) {
  const int64_t n = t.xs[0], h = t.xs[1], w = t.xs[2], c = t.xs[3];
  const int64_t ek = (t.kh - 1) * t.dilation + 1, ew = (t.kw - 1) * t.dilation + 1;
  const int64_t oh = (h + 2 * t.pad - ek) / t.stride + 1, ow = (w + 2 * t.pad - ew) / t.stride + 1;
  const Shape ys{n, oh, ow, t.k};
  std::vector<ir::Attribute> attrs = {
      ais("pads", {t.pad, t.pad, t.pad, t.pad}), ais("strides", {t.stride, t.stride}),
      ais("dilations", {t.dilation, t.dilation}), ai("channels_last", 1)};
  if (t.relu) attrs.push_back(as("activation", "Relu"));
  std::map<size_t, In> in = {
      {kX, feed(random_tensor(DataType::kInt8, t.xs, seed++, -128, 127))},
      {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
      {kW, weight(random_tensor(DataType::kInt8, {t.k, c, t.kh, t.kw}, seed++, -127, 127))},
      {kWScale, weight(per_channel(t.k, 0.0005f, 0.002f, seed++))},
      {kBias, weight(random_tensor(DataType::kFloat32, {t.k}, seed++))}};
  if (t.int8_out) {
    in[kYScale] = weight(scalar<float>(DataType::kFloat32, 0.05f));
    in[kYZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, 3));
  }
  if (t.int8_residual) {
    in[kResidual] = feed(random_tensor(DataType::kInt8, ys, seed++, -128, 127));
    in[kRScale] = weight(scalar<float>(DataType::kFloat32, 0.03f));
    in[kRZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, -2));
  } else if (t.int8_out && t.float_residual) {
    in[kResidual] = feed(random_tensor(DataType::kFloat32, ys, seed++));
  }
  check_quantized(qcase("QConv", in, attrs), "QConv " + path + " " + shape_str(t.xs), path);
}

// Both implicit-GEMM kernels: mma.sync (TRTUTILS_CUDA_WGMMA=0) and, on Hopper builds with sm_90a
// code, the warpgroup-MMA one (the default there; its kernel description says "wgmma"). The
// float8 cases include a 36-step reduction (C = 256, 3x3), where Hopper's float8 MMAs need their
// sums promoted to float32 each step to stay within one step of the CPU.
TEST(CudaQuant, QConvImplicitGemm) {
  TRT_REQUIRE_CUDA();
  ::setenv("TRTUTILS_CUDA_IGEMM", "force", 1);
  ::setenv("TRTUTILS_CUDA_QPOINTWISE", "0", 1);
  const std::vector<IgemmGeo> geos = {
      {{2, 9, 9, 32}, 48, 3, 3, 1, 1, 1, true, true, true},        // 162 rows, BN 64 partial
      {{1, 13, 11, 64}, 144, 1, 1, 2, 0, 1, false, false, false},  // 1x1 stride 2, 2 N tiles
      {{2, 15, 14, 16}, 112, 3, 3, 2, 2, 2, true, false, true},    // R*S*C = 144: partial stage
      {{2, 28, 28, 64}, 128, 3, 3, 1, 1, 1, true, true, true},     // 9 stages, pipeline wrap
      {{2, 10, 7, 128}, 48, 1, 1, 1, 0, 1, true, true, true},      // 2 stages
      {{2, 9, 11, 48}, 80, 3, 3, 1, 1, 1, true, true, false},      // taps across 64-byte steps
      // More blocks than fit on the GPU at once, with 1 and 3 stages per block.
      {{2, 112, 112, 64}, 256, 1, 1, 1, 0, 1, true, true, true},
      {{4, 64, 64, 16}, 512, 3, 3, 1, 1, 1, true, false, false},
  };
  for (const char* wgmma : {"0", "1"}) {
    ::setenv("TRTUTILS_CUDA_WGMMA", wgmma, 1);
    uint32_t seed = 500;
    for (const IgemmGeo& t : geos) check_igemm(t, seed, "int8 implicit GEMM");
    if (cuda::device_status().sm < 89) continue;
    for (const auto& [c, k] : {std::pair<int64_t, int64_t>{32, 80}, {256, 128}}) {
      const Shape xs{2, 10, 9, c};
      check_quantized(
          qcase("QConv",
                {{kX, feed(random_tensor(DataType::kFloat8E4M3FN, xs, 520, -4, 4))},
                 {kXScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
                 {kW, weight(random_tensor(DataType::kFloat8E4M3FN, {k, c, 3, 3}, 521, -4, 4))},
                 {kWScale, weight(per_channel(k, 0.01f, 0.02f, 522))},
                 {kYScale, weight(scalar<float>(DataType::kFloat32, c > 64 ? 0.5f : 0.1f))},
                 {kYZeroPoint, weight(Tensor(DataType::kFloat8E4M3FN, {}))}},
                {ais("pads", {1, 1, 1, 1}), ai("channels_last", 1)}),
          std::string("QConv float8 implicit GEMM, WGMMA=") + wgmma + " " + shape_str(xs),
          "fp8 implicit GEMM");
    }
  }
  ::unsetenv("TRTUTILS_CUDA_WGMMA");
  ::unsetenv("TRTUTILS_CUDA_QPOINTWISE");
  ::unsetenv("TRTUTILS_CUDA_IGEMM");
}

// QGemm through the implicit-GEMM kernel (a 1x1 convolution over the rows): float8 with an
// activation (the generic epilogue, as ViT's GELU) and a float8 Y (MLP-up), float8 with a float
// residual and float Y (MLP-down), int8 with W [K, N]; rows not a multiple of the 128-row tile.
TEST(CudaQuant, QGemmImplicitGemm) {
  TRT_REQUIRE_CUDA();
  ::setenv("TRTUTILS_CUDA_IGEMM", "force", 1);
  ::setenv("TRTUTILS_CUDA_QPOINTWISE", "0", 1);
  const int64_t m = 300, k = 96, n = 160;
  for (const char* wgmma : {"0", "1"}) {
    ::setenv("TRTUTILS_CUDA_WGMMA", wgmma, 1);
    const std::string tag = std::string(", WGMMA=") + wgmma;
    check_quantized(qcase("QGemm",
                          {{kX, feed(random_tensor(DataType::kInt8, {2, m / 2, k}, 30, -128, 127))},
                           {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
                           {kW, weight(random_tensor(DataType::kInt8, {k, n}, 31, -127, 127))},
                           {kWScale, weight(per_channel(n, 0.001f, 0.01f, 32))},
                           {kBias, weight(random_tensor(DataType::kFloat32, {n}, 33))},
                           {kYScale, weight(scalar<float>(DataType::kFloat32, 0.05f))},
                           {kYZeroPoint, weight(scalar<int8_t>(DataType::kInt8, 0))}},
                          {as("activation", "Relu")}),
                    "QGemm int8 implicit GEMM" + tag, "int8 implicit GEMM");
    if (cuda::device_status().sm < 89) continue;
    check_quantized(qcase("QGemm",
                          {{kX, feed(random_tensor(DataType::kFloat8E4M3FN, {m, k}, 34, -4, 4))},
                           {kXScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
                           {kW, weight(random_tensor(DataType::kFloat8E4M3FN, {n, k}, 35, -4, 4))},
                           {kWScale, weight(per_channel(n, 0.01f, 0.02f, 36))},
                           {kBias, weight(random_tensor(DataType::kFloat32, {n}, 37))},
                           {kYScale, weight(scalar<float>(DataType::kFloat32, 0.05f))},
                           {kYZeroPoint, weight(Tensor(DataType::kFloat8E4M3FN, {}))}},
                          {ai("transB", 1), as("activation", "Silu")}),
                    "QGemm float8 SiLU -> float8 implicit GEMM" + tag, "fp8 implicit GEMM");
    check_quantized(qcase("QGemm",
                          {{kX, feed(random_tensor(DataType::kFloat8E4M3FN, {m, k}, 38, -4, 4))},
                           {kXScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
                           {kW, weight(random_tensor(DataType::kFloat8E4M3FN, {n, k}, 39, -4, 4))},
                           {kWScale, weight(per_channel(n, 0.01f, 0.02f, 40))},
                           {kBias, weight(random_tensor(DataType::kFloat32, {n}, 41))},
                           {kResidual, feed(random_tensor(DataType::kFloat32, {m, n}, 42))}},
                          {ai("transB", 1)}),
                    "QGemm float8 + residual -> float implicit GEMM" + tag, "fp8 implicit GEMM");
  }
  ::unsetenv("TRTUTILS_CUDA_WGMMA");
  ::unsetenv("TRTUTILS_CUDA_QPOINTWISE");
  ::unsetenv("TRTUTILS_CUDA_IGEMM");
}

// QGemm on the TMA kernel (gemm_tma_kernel, Hopper): float8, C and K multiples of 128, C >= 256.
// SiLU (the short epilogue's smooth activations; GELU comes from the executor's fusion, which the
// CPU reference does not know: pw_probe and CudaTorchvision check it) -> float8 Y over 8,997 rows
// x 256 channels: 142 tiles, so the persistent blocks (one per SM) take several, and the last row
// tile is partial; a float residual -> float Y with C = 1,280 (ten reduction stages around the
// four-stage ring); int8 through it (TRTUTILS_CUDA_TMA_GEMM=2).
TEST(CudaQuant, QGemmTmaKernel) {
  TRT_REQUIRE_CUDA();
  if (!cuda::k::wgmma_available()) GTEST_SKIP() << "the TMA kernel needs sm_90a code on SM 9.0";
  ::setenv("TRTUTILS_CUDA_IGEMM", "force", 1);
  ::setenv("TRTUTILS_CUDA_TMA_GEMM", "1", 1);
  const int64_t n = 256;
  for (int64_t m : {int64_t{8997}, int64_t{300}}) {
    const int64_t k = 384;
    check_quantized(qcase("QGemm",
                          {{kX, feed(random_tensor(DataType::kFloat8E4M3FN, {m, k}, 50, -4, 4))},
                           {kXScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
                           {kW, weight(random_tensor(DataType::kFloat8E4M3FN, {n, k}, 51, -4, 4))},
                           {kWScale, weight(per_channel(n, 0.01f, 0.02f, 52))},
                           {kBias, weight(random_tensor(DataType::kFloat32, {n}, 53))},
                           {kYScale, weight(scalar<float>(DataType::kFloat32, 0.05f))},
                           {kYZeroPoint, weight(Tensor(DataType::kFloat8E4M3FN, {}))}},
                          {ai("transB", 1), as("activation", "Silu")}),
                    "QGemm float8 SiLU -> float8, TMA, M " + std::to_string(m),
                    "fp8 matrix product (TMA");
  }
  const int64_t m = 300, k = 1280, n2 = 128;
  check_quantized(qcase("QGemm",
                        {{kX, feed(random_tensor(DataType::kFloat8E4M3FN, {m, k}, 54, -4, 4))},
                         {kXScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
                         {kW, weight(random_tensor(DataType::kFloat8E4M3FN, {n2, k}, 55, -4, 4))},
                         {kWScale, weight(per_channel(n2, 0.01f, 0.02f, 56))},
                         {kBias, weight(random_tensor(DataType::kFloat32, {n2}, 57))},
                         {kResidual, feed(random_tensor(DataType::kFloat32, {m, n2}, 58))}},
                        {ai("transB", 1)}),
                  "QGemm float8 + residual -> float, TMA, C 1280", "fp8 matrix product (TMA");
  ::setenv("TRTUTILS_CUDA_TMA_GEMM", "2", 1);
  check_quantized(qcase("QGemm",
                        {{kX, feed(random_tensor(DataType::kInt8, {m, 256}, 59, -128, 127))},
                         {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
                         {kW, weight(random_tensor(DataType::kInt8, {256, n}, 60, -127, 127))},
                         {kWScale, weight(per_channel(n, 0.001f, 0.01f, 61))},
                         {kBias, weight(random_tensor(DataType::kFloat32, {n}, 62))},
                         {kYScale, weight(scalar<float>(DataType::kFloat32, 0.05f))},
                         {kYZeroPoint, weight(scalar<int8_t>(DataType::kInt8, 0))}},
                        {as("activation", "Relu")}),
                  "QGemm int8, TMA (TRTUTILS_CUDA_TMA_GEMM=2)", "int8 matrix product (TMA");
  ::unsetenv("TRTUTILS_CUDA_TMA_GEMM");
  ::unsetenv("TRTUTILS_CUDA_IGEMM");
}

// The persistent streaming kernel of 1x1 convolutions (qconv_pointwise.cu): int8 output (zero
// point 3) with and without an int8 residual, tiles partial in rows and columns (BN 64 and 128),
// a partial reduction step (C = 16, 80), sums past 2^22 (C = 272: the conversion without the
// exact-add shortcut), stride 2, a block walking many row tiles; float8 with a residual.
TEST(CudaQuant, QConvPointwise) {
  TRT_REQUIRE_CUDA();
  ::setenv("TRTUTILS_CUDA_IGEMM", "force", 1);
  // Without the wgmma kernel the pointwise kernel takes C * stride^2 up to 1024 (with it, 256 or
  // 512): every shape below, C = 272 included.
  ::setenv("TRTUTILS_CUDA_WGMMA", "0", 1);
  const std::vector<IgemmGeo> geos = {
      {{3, 9, 7, 48}, 48, 1, 1, 1, 0, 1, true, true, true},
      {{2, 5, 5, 80}, 272, 1, 1, 1, 0, 1, true, true, false},
      {{5, 17, 17, 16}, 32, 1, 1, 1, 0, 1, true, false, true, false},
      {{1, 10, 7, 272}, 64, 1, 1, 1, 0, 1, true, true, true},
      {{2, 13, 11, 64}, 144, 1, 1, 2, 0, 1, true, false, true, false},
      {{4, 96, 96, 64}, 256, 1, 1, 1, 0, 1, true, true, true},
  };
  uint32_t seed = 700;
  for (const IgemmGeo& t : geos) check_igemm(t, seed, "int8 pointwise streaming GEMM");
  if (cuda::device_status().sm >= 89) {
    const Shape xs{3, 21, 19, 64}, ys{3, 21, 19, 192};
    check_quantized(
        qcase("QConv",
              {{kX, feed(random_tensor(DataType::kFloat8E4M3FN, xs, 720, -4, 4))},
               {kXScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
               {kW, weight(random_tensor(DataType::kFloat8E4M3FN, {192, 64, 1, 1}, 721, -4, 4))},
               {kWScale, weight(per_channel(192, 0.01f, 0.02f, 722))},
               {kBias, weight(random_tensor(DataType::kFloat32, {192}, 723))},
               {kYScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
               {kYZeroPoint, weight(Tensor(DataType::kFloat8E4M3FN, {}))},
               {kResidual, feed(random_tensor(DataType::kFloat8E4M3FN, ys, 724, -4, 4))},
               {kRScale, weight(scalar<float>(DataType::kFloat32, 0.2f))},
               {kRZeroPoint, weight(Tensor(DataType::kFloat8E4M3FN, {}))}},
              {ai("channels_last", 1), as("activation", "Relu")}),
        "QConv float8 pointwise", "fp8 pointwise streaming GEMM");
  }
  ::unsetenv("TRTUTILS_CUDA_WGMMA");
  ::unsetenv("TRTUTILS_CUDA_IGEMM");
}

// The timing cache (ExecutorOptions::timing_cache): the first executor times the implicit GEMM
// against cuBLASLt (and cuBLASLt's algorithms) and records its choices in the file; a second
// executor on the same file takes them without timing ("timing cache" in the kernel name) and
// computes the same bytes.
TEST(CudaTimingCache, SecondExecutorTakesTheRecordedChoices) {
  TRT_REQUIRE_CUDA();
  const Shape xs{4, 20, 20, 64};
  const NodeCase c =
      qcase("QConv",
            {{kX, feed(random_tensor(DataType::kInt8, xs, 900, -128, 127))},
             {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
             {kW, weight(random_tensor(DataType::kInt8, {96, 64, 3, 3}, 901, -127, 127))},
             {kWScale, weight(per_channel(96, 0.0005f, 0.002f, 902))},
             {kBias, weight(random_tensor(DataType::kFloat32, {96}, 903))},
             {kYScale, weight(scalar<float>(DataType::kFloat32, 0.05f))},
             {kYZeroPoint, weight(scalar<int8_t>(DataType::kInt8, 0))}},
            {ais("pads", {1, 1, 1, 1}), ai("channels_last", 1), as("activation", "Relu")});
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("trtutils_timing_cache_" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(file);
  cuda::ExecutorOptions o;
  o.timing_cache = file;
  const std::map<std::string, Tensor> feeds = {{"in0", c.inputs[0].value}};
  Tensor first, second;
  {
    cuda::Executor ex(make_model(c), o);
    first = ex.run(feeds).at("out0");
    EXPECT_GT(ex.timing_cache_recorded(), 0);
    EXPECT_EQ(ex.timing_cache_hits(), 0);
    EXPECT_EQ(ex.node_kernels().at(0).find("timing cache"), std::string::npos);
  }
  ASSERT_TRUE(std::filesystem::exists(file));
  {
    cuda::Executor ex(make_model(c), o);
    second = ex.run(feeds).at("out0");
    EXPECT_GT(ex.timing_cache_hits(), 0);
    EXPECT_EQ(ex.timing_cache_recorded(), 0);
    const std::string kernel = ex.node_kernels().at(0);
    std::cout << "[ kernel   ] " << kernel << std::endl;
    EXPECT_NE(kernel.find("timing cache"), std::string::npos) << kernel;
  }
  ASSERT_EQ(first.nbytes(), second.nbytes());
  EXPECT_EQ(std::memcmp(first.raw(), second.raw(), first.nbytes()), 0);
  std::filesystem::remove(file);
}

TEST(CudaQuant, QMatMul) {
  TRT_REQUIRE_CUDA();
  check_quantized(
      qcase("QMatMul", {{kX, feed(random_tensor(DataType::kInt8, {2, 4, 7, 16}, 50, -128, 127))},
                        {kXScale, weight(scalar<float>(DataType::kFloat32, 0.02f))},
                        {kW, feed(random_tensor(DataType::kInt8, {2, 4, 16, 9}, 51, -128, 127))},
                        {kWScale, weight(scalar<float>(DataType::kFloat32, 0.03f))},
                        {kYScale, weight(scalar<float>(DataType::kFloat32, 0.1f))},
                        {kYZeroPoint, weight(scalar<int8_t>(DataType::kInt8, 0))}}),
      "QMatMul int8", "float32");
}

}  // namespace
}  // namespace trtutils
