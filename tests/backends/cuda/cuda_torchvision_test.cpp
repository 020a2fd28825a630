// Real models on the GPU: every *.onnx in $TRTUTILS_CUDA_MODELS (bench/cuda/device_check.sh
// exports torchvision ResNet-50, MobileNetV2, EfficientNet-B0 and ViT-B/16 with random weights)
// runs through cuda::Executor in float32, float16 (convert_to_fp16), int8 and float8 E4M3 (Q/DQ
// islands with a fixed activation range) and is compared with the CPU Session on the same graph.
// Times per run (and the slowest layers) go to stdout and, when $TRTUTILS_CUDA_REPORT names a
// file, to it as CSV. Skipped without a device or without the variable.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "backends/cuda/cuda_test_util.h"
#include "engine/session.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "quantize/qdq.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT
namespace fs = std::filesystem;

std::vector<fs::path> model_files() {
  const char* dir = std::getenv("TRTUTILS_CUDA_MODELS");
  std::vector<fs::path> v;
  if (!dir || !*dir || !fs::is_directory(dir)) return v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".onnx") v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

void report(const std::string& line) {
  std::cout << "[cuda-model] " << line << std::endl;
  if (const char* f = std::getenv("TRTUTILS_CUDA_REPORT"); f && *f) {
    std::ofstream out(f, std::ios::app);
    out << line << "\n";
  }
}

Shape input_shape(const ir::Model& m) {
  Shape s;
  for (const auto& d : *m.graph.inputs.at(0).shape) s.push_back(d.is_static() ? d.value : 1);
  return s;
}

ir::Model quantized(ir::Model m, quantize::QuantMode mode) {
  const int opset = mode == quantize::QuantMode::kFp8 ? 19 : 13;
  if (m.opset() < opset) quantize::upgrade_opset(m, opset);
  ir::Graph& g = m.graph;
  passes::run_pipeline(g, m.opset(), {"conv_fusion", "qdq_fusion"});
  quantize::fold_batch_norm(g);
  quantize::name_nodes(g);
  g.value_info.clear();
  passes::infer_shapes(g, m.opset());
  quantize::PlacementOptions po;
  const quantize::Placement p = quantize::place_qdq(g, po);
  quantize::ScaleTable table;
  for (const auto& [t, uses] : p.activations) table.amax[t] = 6.0;
  quantize::share_scales(g, table);
  quantize::ApplyOptions ao;
  ao.mode = mode;
  quantize::apply_qdq(g, p, table, ao);
  g.value_info.clear();
  return m;
}

void run_model(const std::string& name, const std::string& variant, const ir::Model& model,
               double frac) {
  const Shape shape = input_shape(model);
  const std::string in = model.graph.inputs.at(0).name, out = model.graph.outputs.at(0).name;
  const Tensor x = random_tensor(DataType::kFloat32, shape, 42, -2, 2);
  ir::Model opt = model;
  passes::run_pipeline(opt.graph, opt.opset());
  opt.graph.value_info.clear();
  passes::infer_shapes(opt.graph, opt.opset());
  Tensor want;
  {
    Session cpu(opt, {.run_passes = false});
    want = cpu.run({{in, x}}).at(out);
  }
  cuda::ExecutorOptions o;
  o.profile = true;
  std::unique_ptr<cuda::Executor> ex;
  Tensor got;
  try {
    ex = std::make_unique<cuda::Executor>(opt, o);
    got = ex->run({{in, x}}).at(out);  // also plans (cuDNN find, cuBLASLt heuristics)
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << " " << variant << ": " << e.what();
    report(name + "," + variant + ",error," + e.what());
    return;
  }
  double mx = 0;
  for (int64_t i = 0; i < want.numel(); ++i) mx = std::max(mx, std::fabs(want.at_double(i)));
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, std::fabs(got.at_double(i) - want.at_double(i)));
  expect_close(got, want, {frac * mx + 1e-5, 0.0}, name + " " + variant);
  std::map<std::string, int> kernels;
  for (const std::string& k : ex->node_kernels()) ++kernels[k];
  std::string ks;
  for (const auto& [k, n] : kernels) ks += fmt::format("{}{} x{}", ks.empty() ? "" : "; ", k, n);
  report(fmt::format("{},{},kernels,{}", name, variant, ks));
  const std::vector<cuda::LayerTime> first = ex->profile();  // planning included: left out
  const int runs = 20;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) ex->run({{in, x}});
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
      runs;
  report(
      fmt::format("{},{},{},ms_per_run={:.3f},max_abs_err={:.3g},max_abs_ref={:.3g},"
                  "weights_mb={:.1f},activations_mb={:.1f}",
                  name, variant, shape_str(shape), ms, worst, mx, ex->device_weight_bytes() / 1e6,
                  ex->device_activation_bytes() / 1e6));
  // The same with CUDA graph replay (no per-node host work), and for float32 with TF32.
  for (bool tf32 : {false, true}) {
    if (tf32 && variant != "fp32") continue;
    const std::string v = variant + (tf32 ? "+tf32" : "") + "+graph";
    try {
      cuda::ExecutorOptions go;
      go.cuda_graph = true;
      go.allow_tf32 = tf32;
      cuda::Executor gx(opt, go);
      Tensor g1 = gx.run({{in, x}}).at(out);  // eager (planning)
      g1 = gx.run({{in, x}}).at(out);         // captured
      expect_close(g1, want, {(tf32 ? 2e-2 : frac) * mx + 1e-5, 0.0}, name + " " + v);
      const auto g0 = std::chrono::steady_clock::now();
      for (int i = 0; i < runs; ++i) gx.run({{in, x}});
      const double gms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g0).count() /
          runs;
      report(fmt::format("{},{},{},ms_per_run={:.3f}", name, v, shape_str(shape), gms));
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << " " << v << ": " << e.what();
    }
  }
  std::vector<cuda::LayerTime> prof = ex->profile();
  for (size_t i = 0; i < prof.size() && i < first.size(); ++i) {
    prof[i].total_ms -= first[i].total_ms;
    prof[i].calls -= first[i].calls;
  }
  std::sort(prof.begin(), prof.end(),
            [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  for (size_t i = 0; i < std::min<size_t>(5, prof.size()); ++i)
    report(fmt::format("{},{},layer,{},{},{:.3f} ms/run", name, variant, prof[i].name, prof[i].op,
                       prof[i].total_ms / std::max<int64_t>(prof[i].calls, 1)));
}

TEST(CudaTorchvision, ModelsMatchCpu) {
  TRT_REQUIRE_CUDA();
  const auto files = model_files();
  if (files.empty()) GTEST_SKIP() << "set TRTUTILS_CUDA_MODELS to a folder of .onnx models";
  for (const fs::path& f : files) {
    const std::string name = f.stem().string();
    ir::Model m = onnx_io::load_model(f);
    run_model(name, "fp32", m, 1e-3);
    ir::Model h = m;
    if (h.opset() < 19) quantize::upgrade_opset(h, 19);
    quantize::convert_to_fp16(h);
    run_model(name, "fp16", h, 3e-2);
    run_model(name, "int8", quantized(m, quantize::QuantMode::kInt8), 0.1);
    // float8: one E4M3 step at the output's magnitude (3 mantissa bits: 2^-3 of it)
    run_model(name, "fp8", quantized(m, quantize::QuantMode::kFp8), 0.125);
  }
}

}  // namespace
}  // namespace trtutils
