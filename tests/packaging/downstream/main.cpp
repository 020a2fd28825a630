// A program outside trtutils' tree that uses only its installed public API (include/trtutils):
// quantizes the bundled tiny CNN to a Q/DQ ONNX (INT8, calibrated on perturbed copies of its
// input), builds a float engine and a strongly typed INT8 engine on the CPU backend, runs both
// and checks the outputs against the expected ones the example ships.
//   downstream_app <model.onnx> <input.npy> <expected.npy> <work dir>
// Exit 0 and "downstream: OK" when everything holds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <string>

#include "trtutils/builder.h"
#include "trtutils/engine.h"
#include "trtutils/npy.h"
#include "trtutils/platform.h"
#include "trtutils/quantize.h"
#include "trtutils/status.h"
#include "trtutils/tensor.h"

namespace fs = std::filesystem;

namespace {

double max_abs_diff(const trtutils::Tensor& a, const trtutils::Tensor& b) {
  if (a.shape() != b.shape())
    throw std::runtime_error("shape " + trtutils::shape_str(a.shape()) +
                             " != " + trtutils::shape_str(b.shape()));
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::abs(a.at_double(i) - b.at_double(i)));
  return worst;
}

trtutils::Tensor run_engine(const fs::path& engine_path, const std::string& input_name,
                            const trtutils::Tensor& x) {
  auto engine = trtutils::Engine::load(engine_path);
  auto context = engine->create_execution_context();
  auto outputs = context->execute({{input_name, x}});
  if (outputs.size() != 1) throw std::runtime_error("expected one output");
  return outputs.begin()->second;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <model.onnx> <input.npy> <expected.npy> <work dir>\n", argv[0]);
    return 2;
  }
  const fs::path model = argv[1], work = argv[4];
  try {
    fs::create_directories(work);
    std::printf("trtutils %s\n", trtutils::platform_info().version.c_str());
    const trtutils::Tensor x = trtutils::npy_load(argv[2]);
    const trtutils::Tensor expected = trtutils::npy_load(argv[3]);
    if (x.dtype() != trtutils::DataType::kFloat32 || x.rank() != 4 || x.dim(0) != 1)
      throw std::runtime_error("input: expected float32 [1, C, H, W]");

    // Calibration data: 8 copies of the input, each scaled and shifted a little.
    trtutils::Shape calib_shape = x.shape();
    calib_shape[0] = 8;
    trtutils::Tensor calib(trtutils::DataType::kFloat32, calib_shape);
    const float* src = x.data<float>();
    float* dst = calib.data<float>();
    for (int64_t b = 0; b < 8; ++b)
      for (int64_t i = 0; i < x.numel(); ++i)
        dst[b * x.numel() + i] = src[i] * (0.8f + 0.05f * static_cast<float>(b)) +
                                 0.01f * static_cast<float>((i + b) % 7);
    trtutils::npy_save(work / "calib.npy", calib);

    trtutils::QuantizeOptions q;
    q.onnx_path = model;
    q.output_path = work / "model_qdq.onnx";
    q.calibration_data = work / "calib.npy";
    q.quantize_mode = "int8";
    q.num_threads = 1;
    q.write_report = false;
    const trtutils::QuantizeResult qr = trtutils::quantize_onnx(q);
    std::printf("quantize: %lld quantized nodes, %lld Q/DQ pairs\n",
                static_cast<long long>(qr.num_quantized_nodes),
                static_cast<long long>(qr.num_qdq_pairs));
    if (qr.num_quantized_nodes == 0) throw std::runtime_error("quantize: no node quantized");

    trtutils::builder::BuildConfig fp32;
    fp32.backend = "cpu";
    fp32.num_threads = 1;
    trtutils::builder::build_engine(model, work / "model_fp32.engine", fp32);
    trtutils::builder::BuildConfig int8 = fp32;
    int8.strongly_typed = true;
    const auto br =
        trtutils::builder::build_engine(q.output_path, work / "model_int8.engine", int8);
    std::printf("build: %lld layers", static_cast<long long>(br.num_layers));
    for (const auto& [precision, count] : br.layers_per_precision)
      std::printf(", %s %lld", precision.c_str(), static_cast<long long>(count));
    std::printf("\n");
    if (br.layers_per_precision.count("int8") == 0)
      throw std::runtime_error("build: no int8 layer in the strongly typed engine");

    auto engine = trtutils::Engine::load(work / "model_fp32.engine");
    const std::string input_name = engine->inputs().at(0).name;
    const double fp32_error =
        max_abs_diff(run_engine(work / "model_fp32.engine", input_name, x), expected);
    const double int8_error =
        max_abs_diff(run_engine(work / "model_int8.engine", input_name, x), expected);
    std::printf("execute: max |fp32 - expected| = %.3g, max |int8 - expected| = %.3g\n", fp32_error,
                int8_error);
    if (!(fp32_error < 1e-4)) throw std::runtime_error("fp32 engine: outputs differ from expected");
    if (!(int8_error < 0.05))
      throw std::runtime_error("int8 engine: outputs too far from expected");
  } catch (const trtutils::Error& e) {
    std::fprintf(stderr, "downstream: trtutils::Error (%s): %s\n",
                 std::string(trtutils::error_code_name(e.code())).c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "downstream: %s\n", e.what());
    return 1;
  }
  std::printf("downstream: OK\n");
  return 0;
}
