// Micro benchmarks of the CPU nn kernels through cpu::run_node: the oneDNN fast path against
// the plain reference (the reference only at batch 1, it is slow). Shapes are ResNet-50's.
//   trtutils_bench_ops --benchmark_filter=Conv3x3
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "backends/cpu/blocked_depthwise.h"
#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/nn_kernels.h"

namespace trtutils {
namespace {

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t(DataType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

ir::Attribute ints_attr(const std::string& name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

// Conv n x c x hw x hw -> m channels, k x k kernel, stride 1, "same" padding, with bias.
void run_conv(benchmark::State& state, int64_t n, int64_t c, int64_t hw, int64_t m, int64_t k,
              bool reference) {
  ir::Node node;
  node.op_type = "Conv";
  node.name = "bench_conv";
  node.inputs = {"x", "w", "b"};
  node.outputs = {"y"};
  const int64_t p = k / 2;
  node.attributes["pads"] = ints_attr("pads", {p, p, p, p});
  const Tensor x = random_tensor({n, c, hw, hw}, 1), w = random_tensor({m, c, k, k}, 2),
               b = random_tensor({m}, 3);
  for (auto _ : state) {
    auto y = cpu::run_node(node, 17, {&x, &w, &b}, reference);
    benchmark::DoNotOptimize(y[0].raw());
  }
  const double flops = 2.0 * n * m * c * k * k * hw * hw;
  state.counters["FLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

// A 3x3 depthwise convolution + Clip(0, 6) on the blocked layout ([N, C / 16, H, W, 16]): our
// kernel (blocked_depthwise.h, stride 1) against oneDNN's jit_dw. Four
// input/output sets rotate so that memory is as cold as in a model.
void run_depthwise(benchmark::State& state, int64_t n, int64_t c, int64_t hw, int64_t stride,
                   bool ours, int64_t k = 3) {
  const int64_t out = (hw + 2 * (k / 2) - k) / stride + 1;
  const Tensor w = random_tensor({c, 1, k, k}, 2), b = random_tensor({c}, 3);
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 4; ++i) {
    xs.push_back(random_tensor({n, (c + 15) / 16, hw, hw, 16}, 10 + i));
    ys.push_back(Tensor(DataType::kFloat32, {n, (c + 15) / 16, out, out, 16}));
  }
  cpu::nn::ConvProblem p;
  p.nspatial = 2;
  p.batch = n;
  p.in_channels = p.out_channels = p.group = c;
  p.in = {1, hw, hw};
  p.out = {1, out, out};
  p.kernel = {1, k, k};
  p.stride = {1, stride, stride};
  p.pad_begin = p.pad_end = {0, k / 2, k / 2};
  cpu::nn::ConvPostOps post;
  post.act = cpu::nn::ConvActivation::kClip;
  post.beta = 6.0f;
  cpu::nn::BlockedDepthwise d{n,      c,     hw,    hw,       out,  out, k,
                              stride, k / 2, k / 2, post.act, 0.0f, 6.0f};
  const cpu::nn::ConvLayouts l{cpu::nn::ActLayout::kBlocked16, cpu::nn::ActLayout::kBlocked16};
  int i = 0;
  for (auto _ : state) {
    const int k = i++ % 4;
    if (ours)
      cpu::nn::blocked_depthwise(d, xs[k].data<float>(), w, &b, true, ys[k].data<float>());
    else
      cpu::nn::onednn_conv(p, xs[k], w, &b, ys[k], post, true, l);
    benchmark::DoNotOptimize(ys[k].raw());
  }
}
void BM_Depthwise_1x144x56_s1_Ours(benchmark::State& s) {
  run_depthwise(s, 1, 144, 56, 1, true);
}
void BM_Depthwise_1x144x56_s1_OneDNN(benchmark::State& s) {
  run_depthwise(s, 1, 144, 56, 1, false);
}
void BM_Depthwise_1x384x14_s1_Ours(benchmark::State& s) {
  run_depthwise(s, 1, 384, 14, 1, true);
}
void BM_Depthwise_1x384x14_s1_OneDNN(benchmark::State& s) {
  run_depthwise(s, 1, 384, 14, 1, false);
}
void BM_Depthwise5x5_1x240x28_s1_Ours(benchmark::State& s) {
  run_depthwise(s, 1, 240, 28, 1, true, 5);
}
void BM_Depthwise5x5_1x240x28_s1_OneDNN(benchmark::State& s) {
  run_depthwise(s, 1, 240, 28, 1, false, 5);
}
void BM_Depthwise_8x144x56_s1_Ours(benchmark::State& s) {
  run_depthwise(s, 8, 144, 56, 1, true);
}
void BM_Depthwise_8x144x56_s1_OneDNN(benchmark::State& s) {
  run_depthwise(s, 8, 144, 56, 1, false);
}

void BM_Conv3x3_8x64x56x56_to64_Fast(benchmark::State& s) {
  run_conv(s, 8, 64, 56, 64, 3, false);
}
void BM_Conv3x3_1x64x56x56_to64_Fast(benchmark::State& s) {
  run_conv(s, 1, 64, 56, 64, 3, false);
}
void BM_Conv3x3_1x64x56x56_to64_Reference(benchmark::State& s) {
  run_conv(s, 1, 64, 56, 64, 3, true);
}
void BM_Conv1x1_8x256x56x56_to64_Fast(benchmark::State& s) {
  run_conv(s, 8, 256, 56, 64, 1, false);
}
void BM_Conv1x1_1x256x56x56_to64_Fast(benchmark::State& s) {
  run_conv(s, 1, 256, 56, 64, 1, false);
}
void BM_Conv1x1_1x256x56x56_to64_Reference(benchmark::State& s) {
  run_conv(s, 1, 256, 56, 64, 1, true);
}

// Gemm 8 x 2048 -> 1000 (transB, bias): ResNet-50's classifier.
void run_gemm(benchmark::State& state, bool reference) {
  ir::Node node;
  node.op_type = "Gemm";
  node.name = "bench_gemm";
  node.inputs = {"a", "b", "c"};
  node.outputs = {"y"};
  ir::Attribute tb;
  tb.name = "transB";
  tb.kind = ir::Attribute::Kind::kInt;
  tb.i = 1;
  node.attributes["transB"] = tb;
  const Tensor a = random_tensor({8, 2048}, 1), b = random_tensor({1000, 2048}, 2),
               c = random_tensor({1000}, 3);
  for (auto _ : state) {
    auto y = cpu::run_node(node, 17, {&a, &b, &c}, reference);
    benchmark::DoNotOptimize(y[0].raw());
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * 8 * 2048 * 1000, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_Gemm_8x2048x1000_Fast(benchmark::State& s) {
  run_gemm(s, false);
}
void BM_Gemm_8x2048x1000_Reference(benchmark::State& s) {
  run_gemm(s, true);
}

BENCHMARK(BM_Conv3x3_8x64x56x56_to64_Fast)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv3x3_1x64x56x56_to64_Fast)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv3x3_1x64x56x56_to64_Reference)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv1x1_8x256x56x56_to64_Fast)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv1x1_1x256x56x56_to64_Fast)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv1x1_1x256x56x56_to64_Reference)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Depthwise_1x144x56_s1_Ours)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Depthwise_1x144x56_s1_OneDNN)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Depthwise_1x384x14_s1_Ours)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Depthwise_1x384x14_s1_OneDNN)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Depthwise5x5_1x240x28_s1_Ours)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Depthwise5x5_1x240x28_s1_OneDNN)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Depthwise_8x144x56_s1_Ours)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Depthwise_8x144x56_s1_OneDNN)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Gemm_8x2048x1000_Fast)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Gemm_8x2048x1000_Reference)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace trtutils

BENCHMARK_MAIN();
