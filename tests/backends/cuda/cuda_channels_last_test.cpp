// Channels-last (NHWC) execution vs the CPU session: a convolution (NHWC on float16, and on
// float32 with TF32) followed by each op that takes NHWC (activations, BatchNormalization,
// elementwise ops with same-layout / per-channel / scalar / squeeze-excite operands, pools,
// global pools, Cast) and by ops that do not (Softmax, Transpose, Concat, Flatten: the executor
// converts their input to NCHW). Graph outputs must come back NCHW, and the number of layout
// conversions shows that chains stay NHWC. Odd channel counts (5 -> 13), stride 2. Batch 2 with
// channels_last_min_batch = 1 (the default keeps small batches NCHW).
#include <functional>
#include <iostream>

#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"
#include "passes/passes.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

constexpr Tolerance kTf32{2e-2, 1e-2};

struct Precision {
  const char* name;
  DataType dt;
  bool tf32;
  bool nhwc;  // expected layout of the convolutions
  Tolerance tol;
};

const std::vector<Precision> kPrecisions = {
    {"fp16", DataType::kFloat16, false, true, kFp16},
    {"fp32 tf32", DataType::kFloat32, true, true, kTf32},
    {"fp32 (NCHW)", DataType::kFloat32, false, false, kFp32},
};

ir::Model optimized(ir::Model m) {
  passes::run_pipeline(m.graph, m.opset());
  m.graph.value_info.clear();
  passes::infer_shapes(m.graph, m.opset());
  return m;
}

// Graph: x [2, 5, 11, 9] (or xs) -> Conv 5->13 (or k; 3x3, pad 1, stride `stride`) -> tail(...)
// -> outputs.
using Tail = std::function<std::vector<std::string>(ir::GraphBuilder&, const std::string& conv,
                                                    const std::string& x, DataType dt)>;

struct Result {
  std::vector<std::string> kernels;
  int64_t conversions = 0;
};

Result check_tail(const std::string& name, const Precision& p, const Tail& tail, int64_t stride = 1,
                  int64_t k = 13, const Shape& xs = {2, 5, 11, 9}) {
  ir::GraphBuilder b("channels_last");
  uint32_t seed = 77;
  const std::string x = b.input("x", p.dt, ir::sym_shape_from_static(xs));
  const std::string w = b.initializer("w", random_tensor(p.dt, {k, 5, 3, 3}, seed++));
  const std::string bias = b.initializer("b", random_tensor(p.dt, {k}, seed++));
  const std::string c =
      b.node("Conv", {x, w, bias}, {ais("pads", {1, 1, 1, 1}), ais("strides", {stride, stride})}, 1,
             "", "conv")[0];
  for (const auto& y : tail(b, c, x, p.dt)) b.output(y);
  const ir::Model m = b.build(17);
  const std::string what = name + " " + p.name;
  Result r;
  const Tensor xv = random_tensor(p.dt, xs, 5);
  try {
    Session cpu(m);
    const auto want = cpu.run({{"x", xv}});
    cuda::ExecutorOptions o;
    o.allow_tf32 = p.tf32;
    o.channels_last_min_batch = 1;
    const ir::Model opt = optimized(m);
    cuda::Executor gpu(opt, o);
    const auto got = gpu.run({{"x", xv}});
    for (const auto& [n, t] : want) {
      if (!got.count(n)) {
        ADD_FAILURE() << what << ": output " << n << " missing";
        continue;
      }
      expect_close(got.at(n), t, p.tol, what + " output " + n);
    }
    r.kernels = gpu.node_kernels();
    r.conversions = gpu.layout_conversions();
    for (size_t i = 0; i < r.kernels.size(); ++i)
      std::cout << "[ kernel   ] " << what << " " << opt.graph.nodes[i].op_type << ": "
                << r.kernels[i] << std::endl;
    std::cout << "[ layout   ] " << what << ": " << r.conversions << " conversion(s)" << std::endl;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
  return r;
}

bool any_has(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& k : v)
    if (k.find(s) != std::string::npos) return true;
  return false;
}

Tensor of(DataType dt, Shape s, uint32_t seed, float lo = -1, float hi = 1) {
  return random_tensor(dt, std::move(s), seed, lo, hi);
}

// Ops that keep NHWC: input conversion (x) + output conversion (the graph output) = 2.
TEST(CudaChannelsLast, LayoutPreservingOps) {
  TRT_REQUIRE_CUDA();
  struct Case {
    std::string name;
    Tail tail;
  };
  const std::vector<Case> cases = {
      {"Relu",
       [](auto& b, auto& c, auto&, DataType) { return std::vector{b.node("Relu", {c})[0]}; }},
      {"Sigmoid",
       [](auto& b, auto& c, auto&, DataType) { return std::vector{b.node("Sigmoid", {c})[0]}; }},
      {"LeakyRelu",
       [](auto& b, auto& c, auto&, DataType) {
         return std::vector{b.node("LeakyRelu", {c}, {af("alpha", 0.1f)})[0]};
       }},
      {"Clip 0..6",
       [](auto& b, auto& c, auto&, DataType dt) {
         const Tensor lo = Tensor::from_vector<float>(DataType::kFloat32, {}, {0.0f});
         const Tensor hi = Tensor::from_vector<float>(DataType::kFloat32, {}, {6.0f});
         auto cast = [&](const Tensor& t) {
           if (dt == DataType::kFloat32) return t;
           Tensor h(dt, {});
           h.data<half>()[0] = float_to_half(t.data<float>()[0]);
           return h;
         };
         return std::vector{
             b.node("Clip", {c, b.initializer("lo", cast(lo)), b.initializer("hi", cast(hi))})[0]};
       }},
      {"BatchNormalization",
       [](auto& b, auto& c, auto&, DataType dt) {
         return std::vector{
             b.node("BatchNormalization",
                    {c, b.initializer("s", of(dt, {13}, 1, 0.5f, 1.5f)),
                     b.initializer("bb", of(dt, {13}, 2)), b.initializer("m", of(dt, {13}, 3)),
                     b.initializer("v", of(dt, {13}, 4, 0.5f, 2.0f))})[0]};
       }},
      {"Add per-channel [13,1,1]",
       [](auto& b, auto& c, auto&, DataType dt) {
         return std::vector{b.node("Add", {c, b.initializer("pc", of(dt, {13, 1, 1}, 5))})[0]};
       }},
      {"Mul scalar",
       [](auto& b, auto& c, auto&, DataType dt) {
         return std::vector{b.node("Mul", {b.initializer("sc", of(dt, {}, 6)), c})[0]};
       }},
      {"Add same layout (two convs)",
       [](auto& b, auto& c, auto& x, DataType dt) {
         const std::string c2 =
             b.node("Conv", {x, b.initializer("w2", of(dt, {13, 5, 1, 1}, 7))}, {})[0];
         return std::vector{b.node("Add", {c, c2})[0]};
       }},
      {"squeeze-excite Mul [N,C,1,1]",
       [](auto& b, auto& c, auto&, DataType) {
         const std::string gate = b.node("Sigmoid", {b.node("GlobalAveragePool", {c})[0]})[0];
         return std::vector{b.node("Mul", {c, gate})[0]};
       }},
      {"MaxPool 3x3 s2 p1",
       [](auto& b, auto& c, auto&, DataType) {
         return std::vector{b.node(
             "MaxPool", {c},
             {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1})})[0]};
       }},
      {"MaxPool ceil dilated asymmetric",
       [](auto& b, auto& c, auto&, DataType) {
         return std::vector{
             b.node("MaxPool", {c},
                    {ais("kernel_shape", {2, 3}), ais("strides", {2, 2}), ais("dilations", {1, 2}),
                     ais("pads", {0, 1, 1, 0}), ai("ceil_mode", 1)})[0]};
       }},
      {"AveragePool include pad",
       [](auto& b, auto& c, auto&, DataType) {
         return std::vector{b.node("AveragePool", {c},
                                   {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}),
                                    ais("pads", {1, 0, 2, 1}), ai("count_include_pad", 1)})[0]};
       }},
      {"AveragePool exclude pad",
       [](auto& b, auto& c, auto&, DataType) {
         return std::vector{b.node("AveragePool", {c},
                                   {ais("kernel_shape", {3, 3}), ais("pads", {1, 1, 1, 1})})[0]};
       }},
      {"Relu -> Cast float32",
       [](auto& b, auto& c, auto&, DataType) {
         return std::vector{b.node("Cast", {b.node("Relu", {c})[0]},
                                   {ai("to", static_cast<int64_t>(DataType::kFloat32))})[0]};
       }},
  };
  for (const Precision& p : kPrecisions)
    for (const Case& c : cases) {
      const Result r = check_tail(c.name, p, c.tail);
      if (p.nhwc) {
        EXPECT_TRUE(any_has(r.kernels, "NHWC")) << c.name << " " << p.name;
        EXPECT_LE(r.conversions, 2) << c.name << " " << p.name << ": a chain left NHWC";
      } else {
        EXPECT_EQ(r.conversions, 0) << c.name << " " << p.name;
        EXPECT_FALSE(any_has(r.kernels, "NHWC")) << c.name << " " << p.name;
      }
    }
}

// Global pools end the NHWC chain without a conversion ([N, C, 1, 1] is the same in both).
TEST(CudaChannelsLast, GlobalPools) {
  TRT_REQUIRE_CUDA();
  for (const Precision& p : kPrecisions)
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
      const Result r = check_tail(
          op, p,
          [op](auto& b, auto& c, auto&, DataType) {
            return std::vector{b.node("Flatten", {b.node(op, {b.node("Relu", {c})[0]})[0]})[0]};
          },
          2);
      if (p.nhwc) {
        EXPECT_EQ(r.conversions, 1) << op << " " << p.name << ": only the input";
      }
    }
}

// 16 channels over 40 x 36 pixels: the global pools take the split reduction (reduce_mid_kernel:
// H * W >= 64) and the squeeze-excite Mul, either operand order, the per-image vector broadcast
// (C % 8 == 0).
TEST(CudaChannelsLast, SqueezeExciteWideFastPaths) {
  TRT_REQUIRE_CUDA();
  for (const Precision& p : kPrecisions)
    check_tail("squeeze-excite 16 x 40 x 36", p,
               [](auto& b, auto& c, auto&, DataType) {
                 const std::string gate =
                     b.node("Sigmoid", {b.node("GlobalAveragePool", {c})[0]})[0];
                 const std::string m = b.node("GlobalMaxPool", {c})[0];
                 return std::vector{b.node("Mul", {c, gate})[0], b.node("Mul", {gate, c})[0], m};
               },
               1, 16, {2, 5, 40, 36});
}

// Readers that want NCHW get a converted copy, made once per value; a full-size NCHW operand of
// an NHWC Add is converted to NHWC.
TEST(CudaChannelsLast, NchwReadersGetConvertedCopies) {
  TRT_REQUIRE_CUDA();
  for (const Precision& p : kPrecisions) {
    const Result r = check_tail(
        "Softmax + Transpose + Concat + NCHW operand", p, [](auto& b, auto& c, auto&, DataType) {
          const std::string r = b.node("Relu", {c})[0];
          const std::string s = b.node("Softmax", {r}, {ai("axis", 1)})[0];
          const std::string t = b.node("Transpose", {r}, {ais("perm", {0, 2, 3, 1})})[0];
          const std::string cat = b.node("Concat", {r, c}, {ai("axis", 1)})[0];
          const std::string back = b.node("Transpose", {t}, {ais("perm", {0, 3, 1, 2})})[0];
          const std::string sum = b.node("Add", {r, back})[0];
          return std::vector{s, t, cat, sum};
        });
    // x -> NHWC; r -> NCHW (once, for Softmax and Concat); c -> NCHW (Concat); the Add's
    // output -> NCHW (graph output). The Transposes are views: r is stored NHWC (what perm
    // 0,2,3,1 asks for), and `back` is t's memory marked channels-last.
    if (p.nhwc) {
      EXPECT_EQ(r.conversions, 4) << p.name;
      EXPECT_TRUE(any_has(r.kernels, "view")) << p.name;
    }
  }
}

// The stem of a quantized ResNet as the builder leaves it: a float32 convolution (channels-last
// with TF32), per-tensor QuantizeLinear, int8 MaxPool, the Transpose to NHWC the builder puts
// before channels-last QConvs, and (at the end of the network) the Transpose back before a
// global pool. Everything stays NHWC: no conversion of the graph input, the Transposes are
// views, MaxPool takes 16 channels per thread when C % 16 == 0 (16) and one otherwise (13); the
// float8 stem the same (its MaxPool compares the float8 bytes as keys).
TEST(CudaChannelsLast, QuantizedStemStaysChannelsLast) {
  TRT_REQUIRE_CUDA();
  for (const auto& [k, zt] : std::vector<std::pair<int64_t, DataType>>{
           {16, DataType::kInt8}, {13, DataType::kInt8}, {16, DataType::kFloat8E4M3FN}}) {
    ir::GraphBuilder b("stem");
    const std::string x = b.input("x", DataType::kFloat32, {2, 3, 23, 19});
    const std::string conv =
        b.node("Conv",
               {x, b.initializer("w", of(DataType::kFloat32, {k, 3, 7, 7}, 11)),
                b.initializer("b", of(DataType::kFloat32, {k}, 12))},
               {ais("pads", {3, 3, 3, 3}), ais("strides", {2, 2})})[0];
    const std::string relu = b.node("Relu", {conv})[0];
    const std::string s =
        b.initializer("s", Tensor::from_vector<float>(DataType::kFloat32, {}, {0.02f}));
    const std::string z = b.initializer("z", Tensor(zt, {}));  // zero point 0
    const std::string q = b.node("QuantizeLinear", {relu, s, z})[0];
    const std::string pool =
        b.node("MaxPool", {q},
               {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1})})[0];
    const std::string last = b.node("Transpose", {pool}, {ais("perm", {0, 2, 3, 1})})[0];
    const std::string first = b.node("Transpose", {last}, {ais("perm", {0, 3, 1, 2})})[0];
    const std::string dq = b.node("DequantizeLinear", {first, s, z})[0];
    b.output(b.node("GlobalAveragePool", {dq})[0]);
    b.output(dq);
    const ir::Model m = b.build(zt == DataType::kInt8 ? 17 : 19);
    const Tensor xv = of(DataType::kFloat32, {2, 3, 23, 19}, 13);
    Session cpu(m);
    const auto want = cpu.run({{"x", xv}});
    cuda::ExecutorOptions o;
    o.allow_tf32 = true;
    o.channels_last_min_batch = 1;
    cuda::Executor gpu(optimized(m), o);
    const auto got = gpu.run({{"x", xv}});
    const std::string what = "stem K=" + std::to_string(k) + " " + std::string(dtype_name(zt));
    // TF32 moves a few values across a rounding boundary: one int8 step (0.02) after DQ; one
    // E4M3 step (2^-3 relative), or TF32's error near zero, for float8.
    const Tolerance tol = zt == DataType::kInt8 ? Tolerance{0.0201, 0} : Tolerance{0.01, 0.13};
    for (const auto& [n, t] : want) expect_close(got.at(n), t, tol, what + " " + n);
    const auto kernels = gpu.node_kernels();
    for (const auto& kk : kernels) std::cout << "[ kernel   ] " << what << ": " << kk << std::endl;
    EXPECT_TRUE(any_has(kernels, "view")) << what;
    // The convolution and its QuantizeLinear run as one small-C kernel reading x NCHW and
    // writing int8 NHWC: one conversion, the DequantizeLinear output (a graph output) -> NCHW.
    EXPECT_TRUE(any_has(kernels, "small-C TF32 kernel + quantize NHWC")) << what;
    EXPECT_EQ(gpu.layout_conversions(), 1) << what;
  }
}

// float16 channels-last MaxPool moves 16 bytes of channels per thread (C % 8 == 0), 4 bytes (C
// even) or one value (C odd), the 3x3 window unrolled or the generic loops; the answer is the
// CPU backend's (a pool selects, so only the convolution before it rounds).
TEST(CudaChannelsLast, Float16MaxPoolVectorised) {
  TRT_REQUIRE_CUDA();
  for (int64_t k : {16, 24, 6, 13}) {
    for (bool k3x3 : {true, false}) {
      ir::GraphBuilder b("pool16");
      const std::string x = b.input("x", DataType::kFloat16, {2, 5, 17, 15});
      const std::string conv =
          b.node("Conv", {x, b.initializer("w", of(DataType::kFloat16, {k, 5, 3, 3}, 21))},
                 {ais("pads", {1, 1, 1, 1})})[0];
      const std::vector<ir::Attribute> attrs =
          k3x3 ? std::vector<ir::Attribute>{ais("kernel_shape", {3, 3}), ais("strides", {2, 2}),
                                            ais("pads", {1, 1, 1, 1})}
               : std::vector<ir::Attribute>{ais("kernel_shape", {2, 3}), ais("strides", {2, 1}),
                                            ais("pads", {0, 1, 1, 1})};
      b.output(b.node("MaxPool", {conv}, attrs)[0]);
      const ir::Model m = b.build(17);
      const Tensor xv = of(DataType::kFloat16, {2, 5, 17, 15}, 22);
      Session cpu(m);
      const Tensor want = cpu.run({{"x", xv}}).begin()->second;
      cuda::ExecutorOptions o;
      o.channels_last_min_batch = 1;
      cuda::Executor gpu(optimized(m), o);
      const std::string what =
          "float16 MaxPool K=" + std::to_string(k) + (k3x3 ? " 3x3" : " 2x3 asymmetric");
      expect_close(gpu.run({{"x", xv}}).begin()->second, want, Tolerance{2e-3, 2e-3}, what);
      EXPECT_TRUE(any_has(gpu.node_kernels(), "NHWC")) << what;
    }
  }
}

// A weight that is not a constant is converted to KRSC on the device each run.
TEST(CudaChannelsLast, NonConstantWeights) {
  TRT_REQUIRE_CUDA();
  for (const Precision& p : kPrecisions) {
    ir::GraphBuilder b("dyn_w");
    const std::string x = b.input("x", p.dt, {1, 7, 10, 10});
    const std::string w = b.input("w", p.dt, {9, 7, 3, 3});
    const std::string y = b.node("Relu", {b.node("Conv", {x, w}, {ais("strides", {2, 2})})[0]})[0];
    b.output(y);
    const ir::Model m = b.build(17);
    const Tensor xv = of(p.dt, {1, 7, 10, 10}, 1), wv = of(p.dt, {9, 7, 3, 3}, 2);
    Session cpu(m);
    const Tensor want = cpu.run({{"x", xv}, {"w", wv}}).begin()->second;
    cuda::ExecutorOptions o;
    o.allow_tf32 = p.tf32;
    o.channels_last_min_batch = 1;
    cuda::Executor gpu(optimized(m), o);
    expect_close(gpu.run({{"x", xv}, {"w", wv}}).begin()->second, want, p.tol,
                 std::string("dynamic W ") + p.name);
  }
}

// channels_last = false keeps everything NCHW (and gives the same answer).
TEST(CudaChannelsLast, OptionOff) {
  TRT_REQUIRE_CUDA();
  ir::GraphBuilder b("off");
  const std::string x = b.input("x", DataType::kFloat16, {2, 6, 9, 9});
  const std::string y = b.node(
      "Relu", {b.node("Conv", {x, b.initializer("w", of(DataType::kFloat16, {6, 6, 3, 3}, 3))},
                      {ais("pads", {1, 1, 1, 1})})[0]})[0];
  b.output(y);
  const ir::Model m = optimized(b.build(17));
  const Tensor xv = of(DataType::kFloat16, {2, 6, 9, 9}, 4);
  cuda::ExecutorOptions on, off;
  on.channels_last_min_batch = 1;
  off.channels_last = false;
  cuda::Executor a(m, on), c(m, off);
  const Tensor ya = a.run({{"x", xv}}).begin()->second;
  const Tensor yc = c.run({{"x", xv}}).begin()->second;
  expect_close(ya, yc, kFp16, "NHWC vs NCHW");
  EXPECT_TRUE(any_has(a.node_kernels(), "NHWC"));
  EXPECT_FALSE(any_has(c.node_kernels(), "NHWC"));
  EXPECT_EQ(c.layout_conversions(), 0);
}

}  // namespace
}  // namespace trtutils
