// com.trtutils::QConv through the channels-last int8 / fp8 paths vs the CPU kernel: cuBLASLt on
// NHWC bytes (1x1 stride-1 convolutions read X directly, the others through a vectorised im2col
// in (tap, channel) order) and, on request (TRTUTILS_CUDA_INT8_CONV=cudnn), cuDNN's int8 NHWC
// convolution. Cases: channels-first and channels-last X, input channels 3, 5, 8, 13, 16, 24, 32
// (vector widths 1..16 bytes), stride 2, asymmetric padding, dilation, per-channel and
// per-tensor weight scales, bias, int8 / float residual, Relu / Clip, int8 and float outputs,
// an X zero point and uint8 X (padding with the zero point). Quantized outputs may differ by one
// step where float rounding crosses a rounding boundary.
#include <cstdlib>
#include <functional>
#include <iostream>

#include "backends/cuda/cuda_test_util.h"
#include "ops/qlinear_ops.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT
using namespace ops::qlinear;  // NOLINT

// int8 outputs: one quantization step, at most 2% of the elements.
constexpr double kInt8Steps = 1.0;
// float outputs: the int32 sum converted to float once (exact below 2^24), then scaled.
constexpr Tolerance kInt8Float{2e-4, 2e-4};

template <typename T>
Tensor scalar(DataType dt, T v) {
  return Tensor::from_vector<T>(dt, {}, {v});
}

NodeCase qconv(std::map<size_t, In> given, std::vector<ir::Attribute> attrs) {
  NodeCase c;
  c.op = "QConv";
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

void check(const NodeCase& c, const std::string& what, const std::string& path,
           const std::string& not_path = "") {
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
    got = ex.run(feeds).at("out0");  // the second run re-uses the plan
    kernel = ex.node_kernels().at(0);
  } catch (const std::exception& e) {
    FAIL() << what << ": " << e.what();
  }
  std::cout << "[ kernel   ] " << what << ": " << kernel << std::endl;
  EXPECT_NE(kernel.find(path), std::string::npos) << what << ": " << kernel;
  if (!not_path.empty()) {
    EXPECT_EQ(kernel.find(not_path), std::string::npos) << what << ": " << kernel;
  }
  if (want[0].dtype() == DataType::kFloat32) {
    expect_close(got, want[0], kInt8Float, what);
  } else {
    expect_within_steps(got, want[0], kInt8Steps, what);
  }
}

struct Geo {
  std::string name;
  int64_t n, c, h, w, k, kh, kw;
  std::vector<ir::Attribute> attrs;
  bool direct = false;  // 1x1 stride 1, C a multiple of 16: X is the GEMM's A
  bool dilated = false;
};

std::vector<Geo> geometries() {
  return {
      {"stem 3->8 7x7 s2 p3",
       2,
       3,
       23,
       21,
       8,
       7,
       7,
       {ais("pads", {3, 3, 3, 3}), ais("strides", {2, 2})}},
      {"3x3 p1 13->12", 2, 13, 9, 11, 12, 3, 3, {ais("pads", {1, 1, 1, 1})}},
      {"3x3 s2 p1 8->20",
       3,
       8,
       15,
       13,
       20,
       3,
       3,
       {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 2})}},
      {"3x3 p1 16->16 (16-byte chunks)", 2, 16, 7, 9, 16, 3, 3, {ais("pads", {1, 1, 1, 1})}},
      {"1x1 24->36", 2, 24, 7, 7, 36, 1, 1, {}},
      {"1x1 32->40 direct", 2, 32, 7, 5, 40, 1, 1, {}, true},
      {"1x1 s2 projection 16->20", 2, 16, 9, 9, 20, 1, 1, {ais("strides", {2, 2})}},
      {"asymmetric pads 5->4", 1, 5, 10, 11, 4, 3, 3, {ais("pads", {0, 1, 1, 2})}},
      {"dilated 16->16",
       1,
       16,
       12,
       12,
       16,
       3,
       3,
       {ais("dilations", {2, 2}), ais("pads", {2, 2, 2, 2})},
       false,
       true},
  };
}

// Every geometry x layout x epilogue variant; `path(g)` is the kernel the case must name.
void check_geometries(const std::function<std::string(const Geo&)>& path, const char* label) {
  uint32_t seed = 500;
  for (const Geo& g : geometries()) {
    for (bool channels_last : {false, true}) {
      for (int variant = 0; variant < 4; ++variant) {
        // 0: per-channel W, bias, int8 residual, Relu, int8 Y
        // 1: per-tensor W, no bias, float Y
        // 2: per-channel W, bias, float residual, Clip(0, 6), float Y
        // 3: per-channel W, bias, Silu, int8 Y (EfficientNet's expansions)
        const Shape xs = channels_last ? Shape{g.n, g.h, g.w, g.c} : Shape{g.n, g.c, g.h, g.w};
        std::map<size_t, In> in;
        in[kX] = feed(random_tensor(DataType::kInt8, xs, seed++, -128, 127));
        in[kXScale] = weight(scalar<float>(DataType::kFloat32, 0.02f));
        in[kW] = weight(random_tensor(DataType::kInt8, {g.k, g.c, g.kh, g.kw}, seed++, -127, 127));
        in[kWScale] =
            variant == 1 ? weight(scalar<float>(DataType::kFloat32, 0.003f))
                         : weight(random_tensor(DataType::kFloat32, {g.k}, seed++, 0.001f, 0.004f));
        if (variant != 1) in[kBias] = weight(random_tensor(DataType::kFloat32, {g.k}, seed++));
        std::vector<ir::Attribute> attrs = g.attrs;
        if (channels_last) attrs.push_back(ai("channels_last", 1));
        // The output shape, from the CPU kernel on a float-output probe.
        const Shape ys = run_cpu(qconv(in, attrs))[0].shape();
        if (variant == 0) {
          in[kYScale] = weight(scalar<float>(DataType::kFloat32, 0.05f));
          in[kYZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, 0));
          in[kResidual] = feed(random_tensor(DataType::kInt8, ys, seed++, -128, 127));
          in[kRScale] = weight(scalar<float>(DataType::kFloat32, 0.03f));
          attrs.push_back(as("activation", "Relu"));
        } else if (variant == 2) {
          in[kResidual] = feed(random_tensor(DataType::kFloat32, ys, seed++));
          attrs.push_back(as("activation", "Clip"));
          attrs.push_back(afs("activation_params", {0.0f, 6.0f}));
        } else if (variant == 3) {
          in[kYScale] = weight(scalar<float>(DataType::kFloat32, 0.04f));
          in[kYZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, 0));
          attrs.push_back(as("activation", "Silu"));
        }
        check(qconv(in, attrs),
              std::string(label) + " QConv " + g.name + (channels_last ? " NHWC" : " NCHW") +
                  " variant " + std::to_string(variant),
              path(g));
      }
    }
  }
}

// The tests of the cuBLASLt paths turn the implicit-GEMM kernel (timed against them; tested by
// CudaQuant.QConvImplicitGemm) off for their scope.
struct CublasLtOnly {
  CublasLtOnly() { ::setenv("TRTUTILS_CUDA_IGEMM", "0", 1); }
  ~CublasLtOnly() { ::unsetenv("TRTUTILS_CUDA_IGEMM"); }
  CublasLtOnly(const CublasLtOnly&) = delete;
  CublasLtOnly& operator=(const CublasLtOnly&) = delete;
};

TEST(CudaQConvNhwc, Int8MatchesCpu) {
  TRT_REQUIRE_CUDA();
  const CublasLtOnly lt_only;
  check_geometries(
      [](const Geo& g) {
        return g.direct ? "cuBLASLt int8 NHWC (direct)" : "cuBLASLt int8 NHWC (im2col)";
      },
      "cuBLASLt");
}

// TRTUTILS_CUDA_INT8_CONV=cudnn: cuDNN's int8 convolution where it applies (not dilated).
TEST(CudaQConvNhwc, Int8CudnnOnRequest) {
  TRT_REQUIRE_CUDA();
  const CublasLtOnly lt_only;  // where cuDNN does not apply (dilation)
  ::setenv("TRTUTILS_CUDA_INT8_CONV", "cudnn", 1);
  check_geometries(
      [](const Geo& g) { return g.dilated ? "cuBLASLt int8 NHWC" : "cuDNN int8 NHWC"; }, "cuDNN");
  ::unsetenv("TRTUTILS_CUDA_INT8_CONV");
}

// An X zero point (padding reads it; the column sums correct the product), uint8 X (flipped to
// int8 by XOR 0x80), output channels not a multiple of 4: still the NHWC im2col path (never
// "direct": the 1x1 case below has an X zero point handled by the column sums only).
TEST(CudaQConvNhwc, ZeroPointsAndUint8) {
  TRT_REQUIRE_CUDA();
  const Shape xs{2, 8, 9, 9};
  auto base = [&](uint32_t seed, int64_t k, int64_t ksize) {
    std::map<size_t, In> in;
    in[kX] = feed(random_tensor(DataType::kInt8, xs, seed, -128, 127));
    in[kXScale] = weight(scalar<float>(DataType::kFloat32, 0.02f));
    in[kW] = weight(random_tensor(DataType::kInt8, {k, 8, ksize, ksize}, seed + 1, -127, 127));
    in[kWScale] = weight(random_tensor(DataType::kFloat32, {k}, seed + 2, 0.001f, 0.004f));
    return in;
  };
  const std::vector<ir::Attribute> pads = {ais("pads", {1, 1, 1, 1})};
  check(qconv(base(10, 6, 3), pads), "QConv 8->6 (K % 4 != 0)", "cuBLASLt int8 NHWC (im2col)");
  auto zp = base(20, 8, 3);
  zp[kXZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, 3));
  check(qconv(zp, pads), "QConv x zero point", "cuBLASLt int8 NHWC (im2col)");
  auto u8 = base(30, 8, 3);
  u8[kX] = feed(random_tensor(DataType::kUInt8, xs, 31, 0, 255));
  u8[kXZeroPoint] = weight(scalar<uint8_t>(DataType::kUInt8, 128));
  check(qconv(u8, pads), "QConv uint8 X", "cuBLASLt int8 NHWC (im2col)");
  auto u8b = base(40, 8, 1);
  u8b[kX] = feed(random_tensor(DataType::kUInt8, xs, 41, 0, 255));
  u8b[kXZeroPoint] = weight(scalar<uint8_t>(DataType::kUInt8, 100));
  check(qconv(u8b, {}), "QConv 1x1 uint8 X zero point 100", "cuBLASLt int8 NHWC", "direct");
}

// int8 Y (no zero point) with ReLU and an int8 residual, channels-last: cuBLASLt writes Y itself
// (per-channel alpha vector, float bias, beta * residual), for a 3x3 (im2col) and a 1x1
// (direct) convolution with per-channel scales, an X zero point (folded into the bias) and a
// QGemm. Channels-first Y keeps the int32 + epilogue path.
TEST(CudaQConvNhwc, Int8RequantInCublasLt) {
  TRT_REQUIRE_CUDA();
  const CublasLtOnly lt_only;
  struct Case {
    std::string name;
    int64_t c, k, ks;
    int8_t x_zp;
    bool channels_last;
  };
  const std::vector<Case> cases = {{"3x3 32->48 NHWC", 32, 48, 3, 0, true},
                                   {"1x1 64->32 NHWC direct", 64, 32, 1, 0, true},
                                   {"3x3 16->16 NHWC x zero point", 16, 16, 3, -7, true},
                                   {"3x3 16->16 NCHW (no requant)", 16, 16, 3, 0, false}};
  uint32_t seed = 900;
  for (const Case& cs : cases) {
    const Shape xs = cs.channels_last ? Shape{2, 9, 7, cs.c} : Shape{2, cs.c, 9, 7};
    const Shape ys = cs.channels_last ? Shape{2, 9, 7, cs.k} : Shape{2, cs.k, 9, 7};
    std::map<size_t, In> in;
    in[kX] = feed(random_tensor(DataType::kInt8, xs, seed++, -128, 127));
    in[kXScale] = weight(scalar<float>(DataType::kFloat32, 0.02f));
    if (cs.x_zp) in[kXZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, cs.x_zp));
    in[kW] = weight(random_tensor(DataType::kInt8, {cs.k, cs.c, cs.ks, cs.ks}, seed++, -127, 127));
    in[kWScale] = weight(random_tensor(DataType::kFloat32, {cs.k}, seed++, 0.0005f, 0.002f));
    in[kBias] = weight(random_tensor(DataType::kFloat32, {cs.k}, seed++));
    in[kYScale] = weight(scalar<float>(DataType::kFloat32, 0.05f));
    in[kYZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, 0));
    in[kResidual] = feed(random_tensor(DataType::kInt8, ys, seed++, -128, 127));
    in[kRScale] = weight(scalar<float>(DataType::kFloat32, 0.03f));
    std::vector<ir::Attribute> attrs = {as("activation", "Relu")};
    if (cs.ks == 3) attrs.push_back(ais("pads", {1, 1, 1, 1}));
    if (cs.channels_last) attrs.push_back(ai("channels_last", 1));
    if (cs.channels_last) {
      check(qconv(in, attrs), "requant " + cs.name, "+ requant");
    } else {
      check(qconv(in, attrs), "requant " + cs.name, "cuBLASLt int8 NHWC", "requant");
    }
  }
  NodeCase g;
  g.op = "QGemm";
  g.domain = kDomain;
  g.attrs = {ai("transB", 1)};
  std::map<size_t, In> in;
  in[kX] = feed(random_tensor(DataType::kInt8, {37, 64}, seed++, -128, 127));
  in[kXScale] = weight(scalar<float>(DataType::kFloat32, 0.02f));
  in[kW] = weight(random_tensor(DataType::kInt8, {48, 64}, seed++, -127, 127));
  in[kWScale] = weight(random_tensor(DataType::kFloat32, {48}, seed++, 0.0005f, 0.002f));
  in[kBias] = weight(random_tensor(DataType::kFloat32, {48}, seed++));
  in[kYScale] = weight(scalar<float>(DataType::kFloat32, 0.05f));
  in[kYZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, 0));
  for (size_t i = 0; i <= kYZeroPoint; ++i) g.inputs.push_back(in.count(i) ? in[i] : omitted());
  check(g, "requant QGemm 37x64x48", "+ requant");
}

// Per-tensor QuantizeLinear float32 -> int8 / uint8 (the vectorised kernel: 4 elements per
// thread), with exact halves (round half to even) and saturation, bit-exact with the CPU.
TEST(CudaQuantizeVectorised, PerTensorInt8AndUint8) {
  TRT_REQUIRE_CUDA();
  Tensor x(DataType::kFloat32, {2, 8, 9, 12});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = 0.25f * static_cast<float>((i * 37) % 1200 - 600);  // halves of 0.5
  check_case({"QuantizeLinear",
              {feed(x), weight(scalar<float>(DataType::kFloat32, 0.5f)),
               weight(scalar<int8_t>(DataType::kInt8, -3))}},
             kExact, "QuantizeLinear int8 vectorised");
  check_case({"QuantizeLinear",
              {feed(x), weight(scalar<float>(DataType::kFloat32, 0.5f)),
               weight(scalar<uint8_t>(DataType::kUInt8, 128))}},
             kExact, "QuantizeLinear uint8 vectorised");
  // float32 / float16 -> float8 (4 per thread), saturating.
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16})
    for (DataType q : {DataType::kFloat8E4M3FN, DataType::kFloat8E5M2})
      check_case({"QuantizeLinear",
                  {feed(random_tensor(dt, {2, 8, 9, 12}, 90, -900, 900)),
                   weight(scalar<float>(DataType::kFloat32, 0.7f)), weight(Tensor(q, {}))}},
                 kExact,
                 std::string("QuantizeLinear vectorised ") + std::string(dtype_name(dt)) + " -> " +
                     std::string(dtype_name(q)));
}

// float8 convolutions take the same channels-last im2col (SM >= 89).
TEST(CudaQConvNhwc, Float8MatchesCpu) {
  TRT_REQUIRE_CUDA();
  if (cuda::device_status().sm < 89) GTEST_SKIP() << "float8 products need SM >= 89";
  const CublasLtOnly lt_only;
  for (bool channels_last : {false, true}) {
    const Shape xs = channels_last ? Shape{2, 9, 11, 16} : Shape{2, 16, 9, 11};
    std::map<size_t, In> in;
    in[kX] = feed(random_tensor(DataType::kFloat8E4M3FN, xs, 70, -4, 4));
    in[kXScale] = weight(scalar<float>(DataType::kFloat32, 0.1f));
    in[kW] = weight(random_tensor(DataType::kFloat8E4M3FN, {32, 16, 3, 3}, 71, -4, 4));
    in[kWScale] = weight(random_tensor(DataType::kFloat32, {32}, 72, 0.01f, 0.02f));
    in[kYScale] = weight(scalar<float>(DataType::kFloat32, 0.1f));
    in[kYZeroPoint] = weight(Tensor(DataType::kFloat8E4M3FN, {}));
    std::vector<ir::Attribute> attrs = {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 1})};
    if (channels_last) attrs.push_back(ai("channels_last", 1));
    const NodeCase c = qconv(in, attrs);
    const Tensor want = run_cpu(c)[0];
    cuda::Executor ex(make_model(c), {});
    const Tensor got = ex.run({{"in0", in[kX].value}}).at("out0");
    const std::string kernel = ex.node_kernels().at(0);
    std::cout << "[ kernel   ] QConv float8 " << channels_last << ": " << kernel << std::endl;
    EXPECT_NE(kernel.find("cuBLASLt fp8 NHWC (im2col)"), std::string::npos) << kernel;
    // One float8 step (e4m3: 3 mantissa bits) relative.
    expect_close(got, want, {4e-3, 0.13}, "QConv float8");
  }
}

// Depthwise int8 / uint8 convolutions (MobileNet, EfficientNet) through our channels-last
// kernel with the epilogue fused: stride 1 and 2, dilation, ReLU6, per-channel scales, an X
// zero point, an int8 residual; 10 channels (not a multiple of 4) take the float path.
TEST(CudaQConvNhwc, DepthwiseInt8MatchesCpu) {
  TRT_REQUIRE_CUDA();
  struct Case {
    std::string name;
    int64_t c;
    DataType xt;
    std::vector<ir::Attribute> geo;
    bool residual;
    const char* path;
  };
  const std::vector<Case> cases = {
      {"3x3 s1 int8", 32, DataType::kInt8, {ais("pads", {1, 1, 1, 1})}, false, "depthwise"},
      {"3x3 s2 uint8 zp",
       16,
       DataType::kUInt8,
       {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 2})},
       false,
       "depthwise"},
      {"5x5 s1 dilated residual",
       12,
       DataType::kInt8,
       {ais("kernel_shape", {5, 5}), ais("pads", {4, 4, 4, 4}), ais("dilations", {2, 2})},
       true,
       "depthwise"},
      {"3x3 s2 int8 residual C=48 (16 channels per thread)",
       48,
       DataType::kInt8,
       {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 2})},
       true,
       "depthwise"},
      {"5x5 s2 int8 C=32 (dp4a: 7 groups of 4 taps, 3 padding taps)",
       32,
       DataType::kInt8,
       {ais("kernel_shape", {5, 5}), ais("pads", {2, 2, 2, 2}), ais("strides", {2, 2})},
       false,
       "depthwise"},
      {"5x5 s1 dilated int8 C=32 residual",
       32,
       DataType::kInt8,
       {ais("kernel_shape", {5, 5}), ais("pads", {4, 4, 4, 4}), ais("dilations", {2, 2})},
       true,
       "depthwise"},
      {"3x3 C=10 (float path)",
       10,
       DataType::kInt8,
       {ais("pads", {1, 1, 1, 1})},
       false,
       "dequantize"},
  };
  // The 16-channel int8 cases with and without dp4a (W packed by taps).
  for (const char* dp4a : {"1", "0"})
    for (const Case& cs : cases) {
      ::setenv("TRTUTILS_CUDA_INT8_DEPTHWISE_DP4A", dp4a, 1);
      const int64_t c = cs.c, kh = cs.name.rfind("5x5", 0) == 0 ? 5 : 3;
      const bool s2 = cs.name.find("s2") != std::string::npos;
      const int64_t oh = s2 ? 6 : 11, ow = s2 ? 7 : 13;
      std::map<size_t, In> in;
      const bool u = cs.xt == DataType::kUInt8;
      in[kX] = feed(random_tensor(cs.xt, {2, 11, 13, c}, 100, u ? 0 : -128, u ? 255 : 127));
      in[kXScale] = weight(scalar<float>(DataType::kFloat32, 0.02f));
      if (u) in[kXZeroPoint] = weight(scalar<uint8_t>(DataType::kUInt8, 120));
      in[kW] = weight(random_tensor(DataType::kInt8, {c, 1, kh, kh}, 101, -127, 127));
      in[kWScale] = weight(random_tensor(DataType::kFloat32, {c}, 102, 0.001f, 0.004f));
      in[kBias] = weight(random_tensor(DataType::kFloat32, {c}, 103));
      in[kYScale] = weight(scalar<float>(DataType::kFloat32, 0.03f));
      in[kYZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, 0));
      if (cs.residual) {
        in[kResidual] = feed(random_tensor(DataType::kInt8, {2, oh, ow, c}, 104, -128, 127));
        in[kRScale] = weight(scalar<float>(DataType::kFloat32, 0.02f));
      }
      std::vector<ir::Attribute> attrs = cs.geo;
      attrs.push_back(ai("group", c));
      attrs.push_back(ai("channels_last", 1));
      attrs.push_back(as("activation", "Clip"));
      attrs.push_back(afs("activation_params", {0.0f, 6.0f}));
      check(qconv(in, attrs), "depthwise " + cs.name + " dp4a=" + dp4a, cs.path);
    }
  ::unsetenv("TRTUTILS_CUDA_INT8_DEPTHWISE_DP4A");
}

// Grouped convolutions with several channels per group (ResNeXt's 32x4d, RegNet's), which the
// int8 GEMMs and the depthwise kernel do not take: X dequantized to float16 NHWC, cuDNN's float16
// grouped convolution, the quantizing epilogue. int8 and uint8 X (zero point), per-channel and
// per-tensor W, int8 residual + Relu, float Y, stride 2.
TEST(CudaQConvNhwc, GroupedInt8MatchesCpu) {
  TRT_REQUIRE_CUDA();
  struct Case {
    std::string name;
    int64_t c, k, group, stride;
    DataType xt;
    bool per_channel, residual, float_y;
  };
  const std::vector<Case> cases = {
      {"C=16 K=16 g=4 (4 per group) residual Relu", 16, 16, 4, 1, DataType::kInt8, true, true,
       false},
      {"C=64 K=64 g=2 (32 per group) s2 float Y", 64, 64, 2, 2, DataType::kInt8, true, false, true},
      {"C=32 K=16 g=8 uint8 zp per-tensor W", 32, 16, 8, 1, DataType::kUInt8, false, false, false},
  };
  uint32_t seed = 700;
  for (const Case& cs : cases) {
    const bool u = cs.xt == DataType::kUInt8;
    const int64_t oh = cs.stride == 2 ? 5 : 9, ow = cs.stride == 2 ? 6 : 11;
    std::map<size_t, In> in;
    in[kX] = feed(random_tensor(cs.xt, {2, 9, 11, cs.c}, seed++, u ? 0 : -128, u ? 255 : 127));
    in[kXScale] = weight(scalar<float>(DataType::kFloat32, 0.02f));
    if (u) in[kXZeroPoint] = weight(scalar<uint8_t>(DataType::kUInt8, 120));
    in[kW] =
        weight(random_tensor(DataType::kInt8, {cs.k, cs.c / cs.group, 3, 3}, seed++, -127, 127));
    in[kWScale] = cs.per_channel
                      ? weight(random_tensor(DataType::kFloat32, {cs.k}, seed++, 0.001f, 0.004f))
                      : weight(scalar<float>(DataType::kFloat32, 0.003f));
    in[kBias] = weight(random_tensor(DataType::kFloat32, {cs.k}, seed++));
    std::vector<ir::Attribute> attrs = {ais("pads", {1, 1, 1, 1}),
                                        ais("strides", {cs.stride, cs.stride}),
                                        ai("group", cs.group), ai("channels_last", 1)};
    if (!cs.float_y) {
      in[kYScale] = weight(scalar<float>(DataType::kFloat32, 0.03f));
      in[kYZeroPoint] = weight(scalar<int8_t>(DataType::kInt8, 0));
    }
    if (cs.residual) {
      in[kResidual] = feed(random_tensor(DataType::kInt8, {2, oh, ow, cs.k}, seed++, -128, 127));
      in[kRScale] = weight(scalar<float>(DataType::kFloat32, 0.02f));
      attrs.push_back(as("activation", "Relu"));
    }
    check(qconv(in, attrs), "grouped " + cs.name, "float16 NHWC (grouped)");
  }
}

// float8 output written by cuBLASLt (scales, float16 bias, float16-dequantized float8
// residual and ReLU in its epilogue) or float16 products + our epilogue; per-channel and
// per-tensor weight scales.
TEST(CudaQConvNhwc, Float8OutputInCublasLt) {
  TRT_REQUIRE_CUDA();
  const CublasLtOnly lt_only;
  if (cuda::device_status().sm < 89) GTEST_SKIP() << "float8 products need SM >= 89";
  for (bool per_channel : {true, false}) {
    const Shape xs{2, 9, 11, 16}, ys{2, 9, 11, 32};
    std::map<size_t, In> in;
    in[kX] = feed(random_tensor(DataType::kFloat8E4M3FN, xs, 80, -4, 4));
    in[kXScale] = weight(scalar<float>(DataType::kFloat32, 0.1f));
    in[kW] = weight(random_tensor(DataType::kFloat8E4M3FN, {32, 16, 3, 3}, 81, -4, 4));
    in[kWScale] = weight(per_channel ? random_tensor(DataType::kFloat32, {32}, 82, 0.01f, 0.02f)
                                     : scalar<float>(DataType::kFloat32, 0.015f));
    in[kBias] = weight(random_tensor(DataType::kFloat32, {32}, 83));
    in[kYScale] = weight(scalar<float>(DataType::kFloat32, 0.1f));
    in[kYZeroPoint] = weight(Tensor(DataType::kFloat8E4M3FN, {}));
    in[kResidual] = feed(random_tensor(DataType::kFloat8E4M3FN, ys, 84, -8, 8));
    in[kRScale] = weight(scalar<float>(DataType::kFloat32, 0.05f));
    const NodeCase c =
        qconv(in, {ais("pads", {1, 1, 1, 1}), ai("channels_last", 1), as("activation", "Relu")});
    const Tensor want = run_cpu(c)[0];
    cuda::Executor ex(make_model(c), {});
    const Tensor got = ex.run({{"in0", in[kX].value}, {"in9", in[kResidual].value}}).at("out0");
    const std::string kernel = ex.node_kernels().at(0);
    std::cout << "[ kernel   ] QConv float8 out " << per_channel << ": " << kernel << std::endl;
    // cuBLASLt writes float8 itself where it offers the scale mode (per-tensor W, and per-channel
    // through outer-vector scaling where supported), else float16 products and our epilogue.
    EXPECT_TRUE(kernel.find("+ fp8 out") != std::string::npos ||
                kernel.find("(float16 products)") != std::string::npos)
        << kernel;
    expect_close(got, want, {4e-3, 0.13}, "QConv float8 out");
  }
}

}  // namespace
}  // namespace trtutils
