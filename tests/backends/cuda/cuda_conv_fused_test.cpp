// FusedConv / Conv epilogues on the GPU vs the CPU reference: bias, residual and ReLU or identity
// fused into cudnnConvolutionBiasActivationForward (float32 and float16), the activations cuDNN
// cannot fuse (conv + epilogue kernel), at odd channel counts, stride 2, asymmetric padding,
// groups and dilation. Each case also checks which path ran (Executor::node_kernels()) under
// TRTUTILS_CUDA_FUSED_CONV=force; the default timed policy is checked for correctness.
#include <cstdlib>
#include <iostream>
#include <tuple>

#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

// float32 with TF32 tensor cores (10-bit significand products, float accumulation).
constexpr Tolerance kTf32{2e-2, 1e-2};

struct Geo {
  std::string name;
  Shape x, w;
  std::vector<ir::Attribute> attrs;
  bool grouped = false;
};

std::vector<Geo> geometries() {
  return {
      {"3x3 pad 1, 13->7", {2, 13, 9, 11}, {7, 13, 3, 3}, {ais("pads", {1, 1, 1, 1})}},
      {"3x3 stride 2, 5->12",
       {2, 5, 15, 13},
       {12, 5, 3, 3},
       {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 2})}},
      {"1x1, 24->20", {3, 24, 7, 7}, {20, 24, 1, 1}, {}},
      {"1x1 stride 2 projection, 12->20", {2, 12, 9, 9}, {20, 12, 1, 1}, {ais("strides", {2, 2})}},
      {"stem 7x7 stride 2, 3->8",
       {2, 3, 23, 23},
       {8, 3, 7, 7},
       {ais("pads", {3, 3, 3, 3}), ais("strides", {2, 2})}},
      {"asymmetric pads, 6->5", {1, 6, 10, 11}, {5, 6, 3, 3}, {ais("pads", {0, 1, 1, 2})}},
      {"dilated, 4->6",
       {1, 4, 12, 12},
       {6, 4, 3, 3},
       {ais("dilations", {2, 2}), ais("pads", {2, 2, 2, 2})}},
      {"grouped 3, 12->9",
       {1, 12, 8, 10},
       {9, 4, 3, 3},
       {ai("group", 3), ais("pads", {1, 1, 1, 1})},
       true},
      {"depthwise 10",
       {2, 10, 9, 9},
       {10, 1, 3, 3},
       {ai("group", 10), ais("pads", {1, 1, 1, 1})},
       true},
  };
}

struct Epi {
  std::string name;
  const char* act;  // "" = none
  std::vector<float> params;
  bool bias, residual;
  bool fusable;  // cuDNN's fused call applies (ReLU / identity with something to fuse)
};

std::vector<Epi> epilogues() {
  return {
      {"bias", "", {}, true, false, true},
      {"bias relu", "Relu", {}, true, false, true},
      {"bias residual relu", "Relu", {}, true, true, true},
      {"bias residual", "", {}, true, true, true},
      {"relu, no bias", "Relu", {}, false, false, true},
      {"bias residual clip (not fusable)", "Clip", {0.0f, 6.0f}, true, true, false},
      {"bias silu (not fusable)", "Silu", {}, true, false, false},
      {"none", "", {}, false, false, false},
  };
}

// Runs a one-node case; returns the output and the kernel description.
std::pair<Tensor, std::string> run_with_kernel(const NodeCase& c, const cuda::ExecutorOptions& o) {
  cuda::Executor ex(make_model(c), o);
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (!c.inputs[i].omitted && !c.inputs[i].constant)
      feeds["in" + std::to_string(i)] = c.inputs[i].value;
  Tensor y = ex.run(feeds).at("out0");
  return {y, ex.node_kernels().at(0)};
}

// force: TRTUTILS_CUDA_FUSED_CONV=force (every fusable case through the fused call, asserted);
// otherwise the timed default policy (paths printed, only correctness checked).
void check_fused(DataType dt, const cuda::ExecutorOptions& o, Tolerance tol, const char* label,
                 bool force = true) {
  if (force) ::setenv("TRTUTILS_CUDA_FUSED_CONV", "force", 1);
  uint32_t seed = 1000;
  for (const Geo& g : geometries()) {
    for (const Epi& e : epilogues()) {
      const Tensor x = random_tensor(dt, g.x, seed++);
      const Tensor w = random_tensor(dt, g.w, seed++);
      const Tensor probe = run_cpu({"Conv", {feed(x), weight(w)}, g.attrs})[0];
      std::vector<In> ins = {feed(x), weight(w)};
      ins.push_back(e.bias ? weight(random_tensor(dt, {g.w[0]}, seed++)) : omitted());
      if (e.residual) ins.push_back(feed(random_tensor(dt, probe.shape(), seed++)));
      while (!ins.empty() && ins.back().omitted) ins.pop_back();
      std::vector<ir::Attribute> attrs = g.attrs;
      if (*e.act) {
        attrs.push_back(as("activation", e.act));
        if (!e.params.empty()) attrs.push_back(afs("activation_params", e.params));
      }
      const NodeCase c{"FusedConv", ins, attrs, 1, "com.trtutils"};
      const std::string what =
          std::string(label) + " " + g.name + " / " + e.name + " " + std::string(dtype_name(dt));
      const Tensor want = run_cpu(c)[0];
      std::pair<Tensor, std::string> got;
      try {
        got = run_with_kernel(c, o);
      } catch (const std::exception& ex) {
        ADD_FAILURE() << what << ": " << ex.what();
        continue;
      }
      std::cout << "[ kernel   ] " << what << ": " << got.second << std::endl;
      expect_close(got.first, want, tol, what);
      // ReLU fuses with any algorithm; an identity epilogue needs IMPLICIT_PRECOMP_GEMM, which
      // cuDNN offers for ungrouped problems (grouped ones may run conv + epilogue).
      const bool must_fuse = force && e.fusable && (std::string(e.act) == "Relu" || !g.grouped);
      if (must_fuse) {
        EXPECT_NE(got.second.find("cuDNN fused"), std::string::npos) << what << ": " << got.second;
      } else if (!e.fusable) {
        EXPECT_EQ(got.second.find("cuDNN fused"), std::string::npos) << what << ": " << got.second;
      }
    }
  }
  ::unsetenv("TRTUTILS_CUDA_FUSED_CONV");
}

// The default (timed) policy: fused or conv + epilogue, whichever cudnnFind makes faster.
TEST(CudaConvFused, DefaultPolicyMatchesCpu) {
  TRT_REQUIRE_CUDA();
  check_fused(DataType::kFloat16, {}, kFp16, "fp16 auto", false);
  check_fused(DataType::kFloat32, {}, kFp32, "fp32 auto", false);
}

TEST(CudaConvFused, Float32MatchesCpu) {
  TRT_REQUIRE_CUDA();
  check_fused(DataType::kFloat32, {}, kFp32, "fp32");
}

TEST(CudaConvFused, Float32Tf32MatchesCpu) {
  TRT_REQUIRE_CUDA();
  cuda::ExecutorOptions o;
  o.allow_tf32 = true;
  check_fused(DataType::kFloat32, o, kTf32, "tf32");
}

TEST(CudaConvFused, Float16MatchesCpu) {
  TRT_REQUIRE_CUDA();
  check_fused(DataType::kFloat16, {}, kFp16, "fp16");
}

// Pointwise convolutions as cuBLASLt GEMMs (TRTUTILS_CUDA_POINTWISE_GEMM=force), NCHW (batch
// under the channels-last minimum) and NHWC, every epilogue: bias and ReLU in cuBLASLt's
// epilogue and the residual as its C (NHWC), or one epilogue kernel (NCHW, other activations).
TEST(CudaConvFused, PointwiseGemmMatchesCpu) {
  TRT_REQUIRE_CUDA();
  ::setenv("TRTUTILS_CUDA_POINTWISE_GEMM", "force", 1);
  cuda::ExecutorOptions nhwc;
  nhwc.channels_last_min_batch = 1;
  cuda::ExecutorOptions tf32 = nhwc;
  tf32.allow_tf32 = true;
  struct Layout {
    const char* name;
    DataType dt;
    cuda::ExecutorOptions o;
    Tolerance tol;
    bool nhwc;
  };
  const std::vector<Layout> layouts = {{"NCHW fp32", DataType::kFloat32, {}, kFp32, false},
                                       {"NCHW fp16", DataType::kFloat16, {}, kFp16, false},
                                       {"NHWC fp16", DataType::kFloat16, nhwc, kFp16, true},
                                       {"NHWC tf32", DataType::kFloat32, tf32, kTf32, true}};
  uint32_t seed = 5000;
  for (const Layout& l : layouts) {
    for (const Epi& e : epilogues()) {
      const Tensor x = random_tensor(l.dt, {3, 24, 7, 5}, seed++);
      const Tensor w = random_tensor(l.dt, {20, 24, 1, 1}, seed++);
      std::vector<In> ins{feed(x), weight(w)};
      ins.push_back(e.bias ? weight(random_tensor(l.dt, {20}, seed++)) : omitted());
      if (e.residual) ins.push_back(feed(random_tensor(l.dt, {3, 20, 7, 5}, seed++)));
      while (!ins.empty() && ins.back().omitted) ins.pop_back();
      std::vector<ir::Attribute> attrs;
      if (*e.act) {
        attrs.push_back(as("activation", e.act));
        if (!e.params.empty()) attrs.push_back(afs("activation_params", e.params));
      }
      const NodeCase c{"FusedConv", ins, attrs, 1, "com.trtutils"};
      const std::string what = std::string(l.name) + " / " + e.name;
      const auto [y, kernel] = run_with_kernel(c, l.o);
      std::cout << "[ kernel   ] " << what << ": " << kernel << std::endl;
      expect_close(y, run_cpu(c)[0], l.tol, what);
      EXPECT_NE(kernel.find("1x1 conv as GEMM"), std::string::npos) << what << ": " << kernel;
      EXPECT_EQ(kernel.find("NHWC") != std::string::npos, l.nhwc) << what << ": " << kernel;
    }
  }
  ::unsetenv("TRTUTILS_CUDA_POINTWISE_GEMM");
}

// Depthwise convolutions through our channels-last kernels (TRTUTILS_CUDA_DEPTHWISE=force; the
// row-tiled one for 3 / 5 / 7 columns, the per-pixel one for the dilated case), every epilogue,
// strides, dilation and asymmetric padding; 10 channels (not a multiple of 16
// bytes) stay on cuDNN.
TEST(CudaConvFused, DepthwiseKernelMatchesCpu) {
  TRT_REQUIRE_CUDA();
  ::setenv("TRTUTILS_CUDA_DEPTHWISE", "force", 1);
  cuda::ExecutorOptions nhwc;
  nhwc.channels_last_min_batch = 1;
  cuda::ExecutorOptions tf32 = nhwc;
  tf32.allow_tf32 = true;
  struct Dw {
    const char* name;
    Shape x;
    std::vector<ir::Attribute> attrs;
    int64_t k;
  };
  const std::vector<Dw> geos = {
      {"3x3 pad 1, 16", {2, 16, 9, 11}, {ais("pads", {1, 1, 1, 1})}, 3},
      {"3x3 stride 2, 24", {2, 24, 13, 12}, {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 2})}, 3},
      {"5x5 dilated, asymmetric pads, 8",
       {1, 8, 12, 10},
       {ais("pads", {2, 4, 3, 4}), ais("dilations", {2, 2})},
       5},
      {"3x3, 10 (cuDNN)", {2, 10, 9, 9}, {ais("pads", {1, 1, 1, 1})}, 3},
      // The row-tiled kernel's edges: rows of 4 outputs with 1-3 left over, a tile wider than
      // the row, stride 2 past the right edge, 7 columns (ConvNeXt), one 16-byte chunk of C.
      {"5x5 stride 2, asymmetric pads, 16",
       {2, 16, 15, 13},
       {ais("pads", {2, 1, 2, 3}), ais("strides", {2, 2})},
       5},
      {"7x7 pad 3, 8", {1, 8, 10, 13}, {ais("pads", {3, 3, 3, 3})}, 7},
      {"3x3 no pad, row of 3, 32", {2, 32, 6, 5}, {}, 3},
  };
  uint32_t seed = 7000;
  for (const auto& [dt, o, tol] :
       std::vector<std::tuple<DataType, cuda::ExecutorOptions, Tolerance>>{
           {DataType::kFloat16, nhwc, kFp16}, {DataType::kFloat32, tf32, kTf32}}) {
    for (const Dw& g : geos) {
      for (const Epi& e : epilogues()) {
        const int64_t c = g.x[1];
        const Tensor x = random_tensor(dt, g.x, seed++);
        const Tensor w = random_tensor(dt, {c, 1, g.k, g.k}, seed++);
        std::vector<ir::Attribute> attrs = g.attrs;
        attrs.push_back(ai("group", c));
        const Tensor probe = run_cpu({"Conv", {feed(x), weight(w)}, attrs})[0];
        std::vector<In> ins{feed(x), weight(w)};
        ins.push_back(e.bias ? weight(random_tensor(dt, {c}, seed++)) : omitted());
        if (e.residual) ins.push_back(feed(random_tensor(dt, probe.shape(), seed++)));
        while (!ins.empty() && ins.back().omitted) ins.pop_back();
        if (*e.act) {
          attrs.push_back(as("activation", e.act));
          if (!e.params.empty()) attrs.push_back(afs("activation_params", e.params));
        }
        const NodeCase nc{"FusedConv", ins, attrs, 1, "com.trtutils"};
        const std::string what =
            std::string(g.name) + " / " + e.name + " " + std::string(dtype_name(dt));
        const auto [y, kernel] = run_with_kernel(nc, o);
        std::cout << "[ kernel   ] " << what << ": " << kernel << std::endl;
        // float32: exact products in our kernel, TF32 in cuDNN (the 10-channel case).
        expect_close(y, run_cpu(nc)[0], tol, what);
        EXPECT_EQ(kernel.find("CUDA depthwise kernel NHWC") != std::string::npos, c % 8 == 0)
            << what << ": " << kernel;
      }
    }
  }
  ::unsetenv("TRTUTILS_CUDA_DEPTHWISE");
}

// Plain ONNX Conv with a bias: the bias rides in the fused call (identity activation).
TEST(CudaConvFused, ConvBiasIsFused) {
  TRT_REQUIRE_CUDA();
  ::setenv("TRTUTILS_CUDA_FUSED_CONV", "force", 1);
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    const NodeCase c{
        "Conv",
        {feed(random_tensor(dt, {2, 16, 14, 14}, 1)), weight(random_tensor(dt, {32, 16, 3, 3}, 2)),
         weight(random_tensor(dt, {32}, 3))},
        {ais("pads", {1, 1, 1, 1})}};
    const auto [y, kernel] = run_with_kernel(c, {});
    expect_close(y, run_cpu(c)[0], dt == DataType::kFloat32 ? kFp32 : kFp16,
                 "Conv bias " + std::string(dtype_name(dt)));
    EXPECT_NE(kernel.find("cuDNN fused"), std::string::npos) << kernel;
  }
  ::unsetenv("TRTUTILS_CUDA_FUSED_CONV");
}

}  // namespace
}  // namespace trtutils
