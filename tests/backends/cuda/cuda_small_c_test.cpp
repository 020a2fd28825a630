// Float32 convolutions with few input channels (the stem of image models) through the small-C
// TF32 kernel (conv_small_c.cu), and the stem's QuantizeLinear fused into it
// (com.trtutils.cuda::ConvQuantize). GpuFusion.* check the rewrite (no device needed);
// CudaSmallC.* run against the CPU reference at tile edges (output sizes not multiples of the
// 8 x 16 tile, K not a multiple of the 64-channel block or of 16), NCHW and NHWC outputs, and
// the quantized output types, with the mma.sync kernel (TRTUTILS_CUDA_WGMMA=0) and, on Hopper
// builds with sm_90a code, the warpgroup-MMA one (the default there; its description says
// "wgmma").
#include <iostream>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

constexpr Tolerance kTf32{2e-2, 1e-2};

// X [n, c, h, w] -> FusedConv (ReLU) -> QuantizeLinear (scale, zero point of zp_t) ->
// DequantizeLinear -> y. graph_output_conv: the convolution's output is also a graph output.
ir::Model stem(const Shape& x, const Shape& w, std::vector<ir::Attribute> attrs, DataType zp_t,
               float scale, float zp, bool graph_output_conv = false) {
  ir::GraphBuilder b("stem");
  const std::string in = b.input("x", DataType::kFloat32, ir::sym_shape_from_static(x));
  attrs.push_back(ir::attr_string("activation", "Relu"));
  const std::string c = b.node("FusedConv",
                               {in, b.initializer("w", random_tensor(DataType::kFloat32, w, 11)),
                                b.initializer("b", random_tensor(DataType::kFloat32, {w[0]}, 12))},
                               attrs, 1, "com.trtutils")[0];
  Tensor z(zp_t, {});
  if (zp_t == DataType::kInt8) {
    z.data<int8_t>()[0] = static_cast<int8_t>(zp);
  } else if (zp_t == DataType::kUInt8) {
    z.data<uint8_t>()[0] = static_cast<uint8_t>(zp);
  }  // float8: zero
  const std::string q = b.node(
      "QuantizeLinear",
      {c, b.initializer("s", scalar_tensor(DataType::kFloat32, scale)), b.initializer("z", z)})[0];
  b.output(b.node("DequantizeLinear", {q, "s", "z"})[0]);
  if (graph_output_conv) b.output(c);
  return b.build(19, {{"com.trtutils", 1}});
}

int count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op_type == op ? 1 : 0;
  return n;
}

TEST(GpuFusion, StemConvAndQuantizeLinearBecomeConvQuantize) {
  const std::vector<ir::Attribute> pads{ir::attr_ints("pads", {1, 1, 1, 1})};
  ir::Model m = stem({2, 3, 16, 16}, {8, 3, 3, 3}, pads, DataType::kInt8, 0.05f, 0);
  EXPECT_EQ(cuda::fuse_for_gpu(m.graph, 19), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  const ir::Node& f = m.graph.nodes[0];
  EXPECT_EQ(f.op_type, "ConvQuantize");
  EXPECT_EQ(f.domain, cuda::kGpuDomain);
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"x", "w", "b", "", "s", "z"}));
  EXPECT_EQ(f.attr_string("activation", ""), "Relu");
  EXPECT_EQ(f.attr_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(m.graph.nodes[1].op_type, "DequantizeLinear");
  EXPECT_EQ(m.graph.nodes[1].inputs[0], f.outputs[0]);
  // 16 input channels (the quantizer quantizes such convolutions), or a float output that
  // something else reads: nothing to fuse.
  ir::Model wide = stem({2, 16, 16, 16}, {8, 16, 3, 3}, pads, DataType::kInt8, 0.05f, 0);
  EXPECT_EQ(cuda::fuse_for_gpu(wide.graph, 19), 0u);
  ir::Model shared = stem({2, 3, 16, 16}, {8, 3, 3, 3}, pads, DataType::kInt8, 0.05f, 0, true);
  EXPECT_EQ(cuda::fuse_for_gpu(shared.graph, 19), 0u);
  EXPECT_EQ(count(shared.graph, "QuantizeLinear"), 1);
}

struct Geo {
  std::string name;
  Shape x, w;
  std::vector<ir::Attribute> attrs;
  bool small_c;  // the kernel applies
};

std::vector<Geo> geometries() {
  return {
      {"stem 7x7 stride 2, 3->64, 23x25 out",
       {2, 3, 45, 50},
       {64, 3, 7, 7},
       {ais("pads", {3, 3, 3, 3}), ais("strides", {2, 2})},
       true},
      {"3x3, 3->24 (K % 16 != 0)", {2, 3, 17, 9}, {24, 3, 3, 3}, {ais("pads", {1, 1, 1, 1})}, true},
      {"5x5 dilated, asymmetric pads, 1->16",
       {1, 1, 19, 21},
       {16, 1, 5, 5},
       {ais("pads", {1, 2, 3, 0}), ais("dilations", {2, 2})},
       true},
      {"3x3 stride 2, 4->80 (two channel blocks)",
       {3, 4, 20, 33},
       {80, 4, 3, 3},
       {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 2})},
       true},
      // W % 4 == 0: the patch staged by 16-byte copies, its first column 3, 2 and 0 columns into
      // an aligned chunk (pads 1, 2, 0).
      {"3x3, 3->32, W % 4 == 0, pad 1",
       {2, 3, 20, 36},
       {32, 3, 3, 3},
       {ais("pads", {1, 1, 1, 1})},
       true},
      {"5x5 stride 2, 3->64, W % 4 == 0, pad 2",
       {2, 3, 30, 40},
       {64, 3, 5, 5},
       {ais("pads", {2, 2, 2, 2}), ais("strides", {2, 2})},
       true},
      {"3x3, 4->16, W % 4 == 0, no pad", {1, 4, 18, 24}, {16, 4, 3, 3}, {}, true},
      {"11x11 stride 4, 3->16 (reduction 363: cuDNN)",
       {1, 3, 40, 40},
       {16, 3, 11, 11},
       {ais("strides", {4, 4})},
       false},
  };
}

TEST(CudaSmallC, Float32MatchesCpu) {
  TRT_REQUIRE_CUDA();
  struct Epi {
    const char* act;
    std::vector<float> params;
    bool bias;
  };
  const std::vector<Epi> epis = {{"Relu", {}, true},
                                 {"", {}, false},
                                 {"Clip", {-0.5f, 0.5f}, true},
                                 {"LeakyRelu", {0.1f}, true},
                                 {"Silu", {}, true}};
  for (const char* wgmma : {"0", "1"}) {
    ::setenv("TRTUTILS_CUDA_WGMMA", wgmma, 1);
    const bool wgmma_kernel = cuda::k::wgmma_available();
    uint32_t seed = 100;
    for (const Geo& g : geometries()) {
      for (int64_t min_batch : {1, 1000}) {  // channels-last Y, NCHW Y
        for (const Epi& e : epis) {
          cuda::ExecutorOptions o;
          o.allow_tf32 = true;
          o.channels_last_min_batch = min_batch;
          std::vector<In> ins = {feed(random_tensor(DataType::kFloat32, g.x, seed++)),
                                 weight(random_tensor(DataType::kFloat32, g.w, seed++))};
          if (e.bias) ins.push_back(weight(random_tensor(DataType::kFloat32, {g.w[0]}, seed++)));
          std::vector<ir::Attribute> attrs = g.attrs;
          if (*e.act) {
            attrs.push_back(as("activation", e.act));
            if (!e.params.empty()) attrs.push_back(afs("activation_params", e.params));
          }
          const NodeCase c{"FusedConv", ins, attrs, 1, "com.trtutils"};
          cuda::Executor ex(make_model(c), o);
          const Tensor y = ex.run({{"in0", ins[0].value}}).at("out0");
          const std::string kernel = ex.node_kernels().at(0);
          const std::string what = g.name + " / " + (*e.act ? e.act : "none") +
                                   (min_batch == 1 ? " NHWC" : " NCHW") + ", WGMMA=" + wgmma;
          std::cout << "[ kernel   ] " << what << ": " << kernel << std::endl;
          expect_close(y, run_cpu(c)[0], kTf32, what);
          EXPECT_EQ(kernel.find("small-C") != std::string::npos, g.small_c)
              << what << ": " << kernel;
          if (g.small_c) {
            EXPECT_EQ(kernel.find("NHWC") != std::string::npos, min_batch == 1)
                << what << ": " << kernel;
            EXPECT_EQ(kernel.find("(wgmma)") != std::string::npos, wgmma_kernel)
                << what << ": " << kernel;
          }
        }
      }
    }
  }
  ::unsetenv("TRTUTILS_CUDA_WGMMA");
  // TF32 not allowed (exact float32 asked for): cuDNN.
  const NodeCase c{"Conv",
                   {feed(random_tensor(DataType::kFloat32, {1, 3, 12, 12}, 1)),
                    weight(random_tensor(DataType::kFloat32, {16, 3, 3, 3}, 2))}};
  cuda::Executor ex(make_model(c), {});
  const Tensor y = ex.run({{"in0", c.inputs[0].value}}).at("out0");
  expect_close(y, run_cpu(c)[0], kFp32, "TF32 off");
  EXPECT_EQ(ex.node_kernels().at(0).find("small-C"), std::string::npos) << ex.node_kernels()[0];
}

// The fused QuantizeLinear: int8 (zero point 0), uint8 (zero point 7), float8 E4M3, against the
// CPU session of the unfused graph; values may sit one step apart (TF32 sums crossing a rounding
// boundary). Also the fallback (TRTUTILS_CUDA_SMALL_C=0: cuDNN, then the quantize kernel).
TEST(CudaSmallC, QuantizedStemMatchesCpu) {
  TRT_REQUIRE_CUDA();
  const std::vector<ir::Attribute> attrs{ais("pads", {3, 3, 3, 3}), ais("strides", {2, 2})};
  for (const auto& [fallback, wgmma] :
       std::vector<std::pair<bool, const char*>>{{false, "0"}, {false, "1"}, {true, "1"}}) {
    ::setenv("TRTUTILS_CUDA_WGMMA", wgmma, 1);
    if (fallback) ::setenv("TRTUTILS_CUDA_SMALL_C", "0", 1);
    for (const auto& [zp_t, zp] : std::vector<std::pair<DataType, float>>{
             {DataType::kInt8, 0.0f}, {DataType::kUInt8, 7.0f}, {DataType::kFloat8E4M3FN, 0.0f}}) {
      // 18 tiles; and 768, more than the GPU holds at once, so that a warpgroup runs several
      // (with the byte outputs, the next one's input copied while this one's MMAs run).
      for (const Shape& xs : {Shape{3, 3, 37, 45}, Shape{96, 3, 64, 64}}) {
        const float scale = 0.04f;
        const ir::Model m = stem(xs, {64, 3, 7, 7}, attrs, zp_t, scale, zp);
        const std::map<std::string, Tensor> feeds{{"x", random_tensor(DataType::kFloat32, xs, 77)}};
        Session cpu(m);
        const Tensor want = cpu.run(feeds).begin()->second;
        for (int64_t min_batch : {1, 1000}) {
          cuda::ExecutorOptions o;
          o.allow_tf32 = true;
          o.channels_last_min_batch = min_batch;
          cuda::Executor gpu(m, o);
          const Tensor got = gpu.run(feeds).begin()->second;
          const std::string what = std::string(dtype_name(zp_t)) + " " + shape_str(xs) +
                                   (min_batch == 1 ? " NHWC" : " NCHW") +
                                   (fallback ? " (fallback)" : "") + ", WGMMA=" + wgmma;
          const std::string kernel = gpu.node_kernels().at(0);
          std::cout << "[ kernel   ] " << what << ": " << kernel << std::endl;
          if (zp_t == DataType::kFloat8E4M3FN) {
            // One E4M3 step (2^-3 relative); near zero, where the steps are finer than TF32's
            // error on the sums (~2^-11 of their magnitude, ~4 here), that error.
            expect_close(got, want, Tolerance{0.01, 0.13}, what);
          } else {
            expect_close(got, want, Tolerance{scale * 1.001, 0}, what);
          }
          EXPECT_EQ(kernel.find("small-C TF32 kernel + quantize") != std::string::npos, !fallback)
              << what << ": " << kernel;
          EXPECT_EQ(kernel.find("QuantizeLinear kernel") != std::string::npos, fallback)
              << what << ": " << kernel;
        }
      }
    }
    if (fallback) ::unsetenv("TRTUTILS_CUDA_SMALL_C");
  }
  ::unsetenv("TRTUTILS_CUDA_WGMMA");
}

}  // namespace
}  // namespace trtutils
