// A small ResNet-like block (conv-bn-relu-conv-add-relu-pool-gemm, testing_models::resnet_block)
// through the GPU engine builder and cuda::Executor vs the CPU: float16 (builder --fp16: BN
// folded, fp16 FusedConv), float32 with TF32, and int8 (Q/DQ islands fused into QConv). Each
// compares with the CPU session of the float model (tolerance relative to the output range) and,
// for the engine graphs, with the CPU running the same engine graph; the int8 graph with the CPU
// session of the same Q/DQ model.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "backends/cuda/cuda_test_util.h"
#include "backends/cuda/resnet_block.h"
#include "engine/engine_file.h"
#include "engine/session.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "quantize/qdq.h"
#include "trtutils/builder.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;
using namespace cuda_testing;  // NOLINT

// |gpu - cpu| <= frac * max|cpu| + 1e-5 per element.
void expect_close_to_range(const Tensor& gpu, const Tensor& cpu, double frac,
                           const std::string& what) {
  double mx = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) mx = std::max(mx, std::fabs(cpu.at_double(i)));
  expect_close(gpu, cpu, {frac * mx + 1e-5, 0.0}, what);
}

// The engine graph the builder makes for the block (backend cuda, SM 90).
ir::Model engine_graph(bool fp16) {
  const fs::path dir =
      fs::temp_directory_path() /
      ("trtutils_cuda_block_" + std::to_string(::getpid()) + (fp16 ? "_16" : "_32"));
  fs::create_directories(dir);
  onnx_io::save_model(testing_models::resnet_block(ir::Dim("N")), dir / "m.onnx");
  builder::BuildConfig c;
  c.backend = "cuda";
  c.target_sm = 90;
  c.fp16 = fp16;
  builder::build_engine(dir / "m.onnx", dir / "m.engine", c);
  ir::Model m = engine::read_engine_file(dir / "m.engine").model;
  fs::remove_all(dir);
  return m;
}

void print_kernels(const ir::Model& m, const cuda::Executor& ex, const std::string& what) {
  const auto k = ex.node_kernels();
  for (size_t i = 0; i < k.size(); ++i)
    std::cout << "[ kernel   ] " << what << " " << m.graph.nodes[i].op_type << " '"
              << m.graph.nodes[i].name << "': " << k[i] << std::endl;
}

// Runs the engine graph on the GPU (twice: the second run re-uses the plans) against the CPU
// session of the float model (frac_float) and the CPU running the engine graph (frac_engine).
// Channels-last from batch 1 (the default starts at batch 4).
cuda::ExecutorOptions nhwc_options() {
  cuda::ExecutorOptions o;
  o.channels_last_min_batch = 1;
  return o;
}

void compare_engine(const ir::Model& engine, const cuda::ExecutorOptions& o, double frac_float,
                    double frac_engine, const std::string& what) {
  Session reference(testing_models::resnet_block(ir::Dim("N")));
  SessionOptions so;
  so.run_passes = false;  // already optimized
  Session cpu_engine(engine, so);
  cuda::Executor gpu(engine, o);
  uint32_t seed = 11;
  for (int64_t batch : {3, 3, 3, 1}) {  // eager, captured, replayed (cuda_graph), new shape
    const Tensor x = random_tensor(DataType::kFloat32, {batch, 3, 15, 15}, seed++);
    const Tensor want = reference.run({{"x", x}}).begin()->second;
    const Tensor same = cpu_engine.run({{"x", x}}).begin()->second;
    Tensor got;
    try {
      got = gpu.run({{"x", x}}).begin()->second;
    } catch (const std::exception& e) {
      FAIL() << what << ": " << e.what();
    }
    const std::string b = " batch " + std::to_string(batch);
    expect_close_to_range(got, want, frac_float, what + " vs float model" + b);
    expect_close_to_range(got, same, frac_engine, what + " vs CPU engine graph" + b);
  }
  print_kernels(engine, gpu, what);
}

TEST(CudaResNetBlock, Float16Engine) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = engine_graph(true);
  // fp16 storage between layers: ~1e-3 relative per layer, a handful of layers.
  compare_engine(m, nhwc_options(), 2e-2, 1e-2, "fp16 engine");
  cuda::Executor ex(m, nhwc_options());
  ex.run({{"x", random_tensor(DataType::kFloat32, {2, 3, 15, 15}, 5)}});
  int nhwc = 0;
  for (const auto& k : ex.node_kernels())
    nhwc += (k.find("cuDNN") == 0 || k.find("cuBLASLt 1x1") == 0) &&
            k.find("NHWC") != std::string::npos;
  EXPECT_GE(nhwc, 5) << "expected channels-last convolutions";
  // The whole block stays NHWC: the only conversion is the input's (GAP ends the chain).
  EXPECT_EQ(ex.layout_conversions(), 1);
  // NCHW (channels_last off) gives the same answer.
  cuda::ExecutorOptions nchw;
  nchw.channels_last = false;
  compare_engine(m, nchw, 2e-2, 1e-2, "fp16 engine NCHW");
}

// Every convolution through cudnnConvolutionBiasActivationForward (TRTUTILS_CUDA_FUSED_CONV=force).
TEST(CudaResNetBlock, Float16EngineForcedFusion) {
  TRT_REQUIRE_CUDA();
  ::setenv("TRTUTILS_CUDA_FUSED_CONV", "force", 1);
  const ir::Model m = engine_graph(true);
  compare_engine(m, nhwc_options(), 2e-2, 1e-2, "fp16 engine forced fusion");
  cuda::Executor ex(m, nhwc_options());
  ex.run({{"x", random_tensor(DataType::kFloat32, {2, 3, 15, 15}, 5)}});
  int fused = 0;
  for (const auto& k : ex.node_kernels()) fused += k.find("cuDNN fused NHWC") != std::string::npos;
  EXPECT_GE(fused, 5) << "expected every convolution through cudnnConvolutionBiasActivationForward";
  ::unsetenv("TRTUTILS_CUDA_FUSED_CONV");
}

// The fp16 engine replayed from a CUDA graph (NHWC conversions captured with the rest).
TEST(CudaResNetBlock, Float16EngineCudaGraph) {
  TRT_REQUIRE_CUDA();
  cuda::ExecutorOptions o = nhwc_options();
  o.cuda_graph = true;
  compare_engine(engine_graph(true), o, 2e-2, 1e-2, "fp16 engine cuda graph");
}

TEST(CudaResNetBlock, Float32Tf32Engine) {
  TRT_REQUIRE_CUDA();
  cuda::ExecutorOptions o = nhwc_options();
  o.allow_tf32 = true;
  compare_engine(engine_graph(false), o, 1e-2, 1e-2, "fp32 tf32 engine");
  compare_engine(engine_graph(false), {}, 1e-4, 1e-4, "fp32 engine");
}

// The block quantized to int8 (Q/DQ on every conv / gemm input, fixed activation ranges):
// QConv chains channels-last through cuBLASLt int8 (or cuDNN int8 on request, conv1's 3
// channels padded to 4).
ir::Model quantized_block() {
  ir::Model m = testing_models::resnet_block(ir::Dim(2));
  ir::Graph& g = m.graph;
  quantize::fold_batch_norm(g);
  quantize::name_nodes(g);
  passes::infer_shapes(g, m.opset());
  quantize::PlacementOptions po;
  po.mode = quantize::QuantMode::kInt8;
  po.min_channels = 1;
  const quantize::Placement p = quantize::place_qdq(g, po);
  quantize::ScaleTable table;
  for (const auto& [t, uses] : p.activations) table.amax[t] = 3.0;
  quantize::share_scales(g, table);
  quantize::ApplyOptions ao;
  ao.mode = quantize::QuantMode::kInt8;
  quantize::apply_qdq(g, p, table, ao);
  g.value_info.clear();
  return m;
}

void check_int8_block(const std::string& path, const std::string& what) {
  const ir::Model m = quantized_block();
  ir::Model opt = m;
  passes::run_pipeline(opt.graph, opt.opset());
  opt.graph.value_info.clear();
  passes::infer_shapes(opt.graph, opt.opset());
  Session cpu(m);
  cuda::Executor gpu(opt, {});
  uint32_t seed = 31;
  for (int run = 0; run < 2; ++run) {
    const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 15, 15}, seed++);
    const Tensor want = cpu.run({{"x", x}}).begin()->second;
    Tensor got;
    try {
      got = gpu.run({{"x", x}}).begin()->second;
    } catch (const std::exception& e) {
      FAIL() << what << ": " << e.what();
    }
    // One-step differences inside the network move the logits by a few quantization steps.
    expect_close_to_range(got, want, 0.05, what + " run " + std::to_string(run));
  }
  print_kernels(opt, gpu, what);
  int qconv = 0, on_path = 0;
  const auto k = gpu.node_kernels();
  for (size_t i = 0; i < k.size(); ++i) {
    if (opt.graph.nodes[i].op_type != "QConv") continue;
    ++qconv;
    on_path += k[i].find(path) != std::string::npos;
  }
  EXPECT_GE(qconv, 5) << what;
  EXPECT_EQ(on_path, qconv) << what << ": every QConv of the block should take " << path;
}

TEST(CudaResNetBlock, Int8QConvChannelsLast) {
  TRT_REQUIRE_CUDA();
  check_int8_block("cuBLASLt int8 NHWC", "int8 block");
}

TEST(CudaResNetBlock, Int8QConvCudnnOnRequest) {
  TRT_REQUIRE_CUDA();
  ::setenv("TRTUTILS_CUDA_INT8_CONV", "cudnn", 1);
  check_int8_block("cuDNN int8 NHWC", "int8 block (cuDNN)");
  ::unsetenv("TRTUTILS_CUDA_INT8_CONV");
}

}  // namespace
}  // namespace trtutils
