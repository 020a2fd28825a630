// Calibration on the GPU (quantize / weakly typed INT8 builds stream their batches through the
// CUDA executor when a device is usable): the statistics and the thresholds of every method
// match the CPU run (per_node, which always runs on the CPU) up to summation order.
#include <cmath>
#include <filesystem>
#include <map>

#include "backends/cuda/cuda_test_util.h"
#include "onnx/onnx_io.h"
#include "quantize/auto_method.h"
#include "quantize/calibration.h"
#include "trtutils/npy.h"
#include "trtutils/quantize.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

TEST(CudaCalibration, GpuStatisticsMatchCpu) {
  TRT_REQUIRE_CUDA();
  ir::GraphBuilder b("calib");
  const std::string x = b.input("x", DataType::kFloat32, {4, 3, 16, 16});
  const std::string c1 =
      b.node("Conv",
             {x, b.initializer("w1", random_tensor(DataType::kFloat32, {8, 3, 3, 3}, 1)),
              b.initializer("b1", random_tensor(DataType::kFloat32, {8}, 2))},
             {ais("pads", {1, 1, 1, 1})})[0];
  const std::string r1 = b.node("Relu", {c1})[0];
  const std::string c2 =
      b.node("Conv", {r1, b.initializer("w2", random_tensor(DataType::kFloat32, {16, 8, 3, 3}, 3))},
             {ais("strides", {2, 2})})[0];
  const std::string p = b.node("Flatten", {b.node("GlobalAveragePool", {c2})[0]})[0];
  const std::string y =
      b.node("Gemm", {p, b.initializer("wf", random_tensor(DataType::kFloat32, {10, 16}, 4))},
             {ai("transB", 1)})[0];
  b.output(y);
  const ir::Model m = b.build(17);
  const std::vector<std::string> tensors = {x, c1, r1, c2, p, y};
  auto feed = [&](int64_t i) {
    return std::map<std::string, Tensor>{
        {"x", random_tensor(DataType::kFloat32, {4, 3, 16, 16}, 100 + static_cast<uint32_t>(i),
                            -2.0f, 2.0f)}};
  };
  const auto gpu = quantize::collect_stats(m, tensors, 3, feed, 2048, 1, false);
  const auto cpu = quantize::collect_stats(m, tensors, 3, feed, 2048, 1, true);
  for (const auto& t : tensors) {
    SCOPED_TRACE(t);
    const auto& g = gpu.at(t);
    const auto& c = cpu.at(t);
    EXPECT_EQ(g.count(), c.count());
    EXPECT_NEAR(g.absmax(), c.absmax(), 1e-5 * std::max(1.0, c.absmax()));
    for (auto method :
         {quantize::CalibrationMethod::kMax, quantize::CalibrationMethod::kEntropy,
          quantize::CalibrationMethod::kPercentile, quantize::CalibrationMethod::kMse}) {
      const double a = quantize::compute_amax(g, method, {});
      const double e = quantize::compute_amax(c, method, {});
      EXPECT_NEAR(a, e, 2e-3 * std::max(1e-6, e)) << quantize::calibration_method_name(method);
    }
  }
}

// calibration_method auto scores its candidate Q/DQ models on the GPU (int8 and fp8 on Hopper)
// and keeps the best; the written model's scales are the chosen method's.
TEST(CudaCalibration, AutoScoresTheCandidatesOnTheGpu) {
  TRT_REQUIRE_CUDA();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "trtutils_cuda_auto";
  fs::create_directories(dir);
  ir::GraphBuilder b("auto");
  const std::string x = b.input("x", DataType::kFloat32, {ir::Dim("N"), 16, 12, 12});
  const std::string c1 =
      b.node("Conv", {x, b.initializer("w1", random_tensor(DataType::kFloat32, {32, 16, 3, 3}, 1))},
             {ais("pads", {1, 1, 1, 1})})[0];
  const std::string r1 = b.node("Relu", {c1})[0];
  const std::string c2 = b.node(
      "Conv", {r1, b.initializer("w2", random_tensor(DataType::kFloat32, {32, 32, 3, 3}, 2))},
      {ais("pads", {1, 1, 1, 1})})[0];
  b.output(b.node("Relu", {c2})[0]);
  onnx_io::save_model(b.build(17), dir / "m.onnx");
  npy_save(dir / "c.npy", random_tensor(DataType::kFloat32, {24, 16, 12, 12}, 7, -1.0f, 1.0f));
  for (const std::string mode : {"int8", "fp8"}) {
    QuantizeOptions o;
    o.onnx_path = dir / "m.onnx";
    o.output_path = dir / ("m_" + mode + ".onnx");
    o.calibration_data = dir / "c.npy";
    o.quantize_mode = mode;
    o.calibration_method = "auto";
    o.batch_size = 8;
    const QuantizeResult r = quantize_onnx(o);
    EXPECT_TRUE(r.auto_selection_on_gpu) << mode;
    ASSERT_EQ(r.calibration_method_scores.size(), 5u);
    // The chosen one is a scored candidate (the rule itself: auto_method_test.cpp).
    std::map<std::string, double> score(r.calibration_method_scores.begin(),
                                        r.calibration_method_scores.end());
    ASSERT_TRUE(score.count(r.calibration_method_chosen)) << mode;
    EXPECT_GT(score.at(r.calibration_method_chosen), 20.0) << mode;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trtutils
