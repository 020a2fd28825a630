// GPTQ weight rounding: lower layer-output error than round to nearest on correlated inputs
// (int8 and fp8 grids), grid membership, fallbacks, and the weight_rounding option end to end;
// the single-row (M = 1) GEMV placement rule.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "quantize/calibration.h"
#include "quantize/qdq.h"
#include "quantize/quantize_test_util.h"
#include "trtutils/file_util.h"
#include "trtutils/npy.h"
#include "trtutils/quantize.h"
#include "trtutils/status.h"

namespace trtutils::quantize {
namespace {

namespace fs = std::filesystem;

std::vector<float> randn(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// X [rows, k] with correlated channels (a random mixing of iid normals, plus a mean).
std::vector<float> correlated_inputs(int64_t rows, int64_t k, uint32_t seed) {
  const std::vector<float> z = randn(static_cast<size_t>(rows * k), seed);
  const std::vector<float> mix = randn(static_cast<size_t>(k * k), seed + 1, 0.3f);
  std::vector<float> x(static_cast<size_t>(rows * k), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      double s = z[r * k + j] + 0.5;
      for (int64_t p = 0; p < k; ++p) s += z[r * k + p] * mix[p * k + j];
      x[r * k + j] = static_cast<float>(s);
    }
  return x;
}

std::vector<float> hessian_of(const std::vector<float>& x, int64_t rows, int64_t k) {
  Tensor t = Tensor::from_vector<float>(DataType::kFloat32, {rows, k}, x);
  HessianStats h;
  h.add(t);
  EXPECT_EQ(h.rows(), rows);
  EXPECT_EQ(h.dim(), k);
  return h.mean_outer();
}

// sum over rows of ||(W - Q) x||^2, W and Q [n, k].
double output_error(const std::vector<float>& x, int64_t rows, int64_t k,
                    const std::vector<float>& w, const std::vector<float>& q, int64_t n) {
  double e = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < n; ++o) {
      double s = 0;
      for (int64_t j = 0; j < k; ++j)
        s += static_cast<double>(w[o * k + j] - q[o * k + j]) * x[r * k + j];
      e += s * s;
    }
  return e;
}

struct Grid {
  QuantMode mode;
  std::vector<float> scale;  // per row
  float operator()(float v, int64_t row, int64_t) const {
    const float s = scale[static_cast<size_t>(row)];
    const float u = v / s;
    if (mode == QuantMode::kFp8) return e4m3fn_to_float(float_to_e4m3fn(u, true)) * s;
    return std::clamp(std::nearbyint(u), -128.0f, 127.0f) * s;
  }
};

Grid per_row_grid(const std::vector<float>& w, int64_t n, int64_t k, QuantMode mode) {
  Grid g{mode, {}};
  for (int64_t o = 0; o < n; ++o) {
    float m = 0;
    for (int64_t j = 0; j < k; ++j) m = std::max(m, std::fabs(w[o * k + j]));
    g.scale.push_back(m / static_cast<float>(quant_mode_qmax(mode)));
  }
  return g;
}

TEST(GptqTest, LowersLayerOutputErrorVersusRoundToNearest) {
  // k = 300: more than two 128-column blocks (the sgemm updates between blocks).
  const int64_t n = 24, k = 300, rows = 1024;
  const std::vector<float> x = correlated_inputs(rows, k, 11);
  const std::vector<float> h = hessian_of(x, rows, k);
  const std::vector<float> w = randn(static_cast<size_t>(n * k), 5, 0.05f);
  for (QuantMode mode : {QuantMode::kInt8, QuantMode::kFp8}) {
    const Grid grid = per_row_grid(w, n, k, mode);
    std::vector<float> rtn(w.size());
    for (int64_t o = 0; o < n; ++o)
      for (int64_t j = 0; j < k; ++j) rtn[o * k + j] = grid(w[o * k + j], o, j);
    const std::vector<float> q = gptq_round(w, n, k, h, grid);
    ASSERT_EQ(q.size(), w.size());
    for (int64_t o = 0; o < n; ++o)
      for (int64_t j = 0; j < k; ++j)
        ASSERT_EQ(grid(q[o * k + j], o, j), q[o * k + j]) << "off the grid at " << o << "," << j;
    const double e_rtn = output_error(x, rows, k, w, rtn, n);
    const double e_gptq = output_error(x, rows, k, w, q, n);
    std::printf("%s: layer output squared error rtn %.4g, gptq %.4g (%.2f dB lower)\n",
                quant_mode_name(mode).c_str(), e_rtn, e_gptq, 10 * std::log10(e_rtn / e_gptq));
    EXPECT_LT(e_gptq, 0.7 * e_rtn) << quant_mode_name(mode);
  }
}

TEST(GptqTest, ZeroHessianAndDeadColumnsFallBackToNearest) {
  const int64_t n = 4, k = 8;
  const std::vector<float> w = randn(static_cast<size_t>(n * k), 3, 0.1f);
  const Grid grid = per_row_grid(w, n, k, QuantMode::kInt8);
  std::vector<float> rtn(w.size());
  for (int64_t o = 0; o < n; ++o)
    for (int64_t j = 0; j < k; ++j) rtn[o * k + j] = grid(w[o * k + j], o, j);
  EXPECT_EQ(gptq_round(w, n, k, std::vector<float>(k * k, 0.0f), grid), rtn);
  // Only column 2 ever sees input: every other column keeps its nearest grid point.
  std::vector<float> h(k * k, 0.0f);
  h[2 * k + 2] = 4.0f;
  EXPECT_EQ(gptq_round(w, n, k, h, grid), rtn);
  EXPECT_THROW(gptq_round(w, n, k + 1, h, grid), Error);
}

TEST(GptqTest, HessianStatsAccumulatesOverBatches) {
  HessianStats h;
  h.add(Tensor::from_vector<float>(DataType::kFloat32, {2, 1, 2}, {1, 2, 3, 4}));
  h.add(Tensor::from_vector<float>(DataType::kFloat32, {1, 2}, {NAN, 2}));
  EXPECT_EQ(h.rows(), 3);
  const std::vector<float> m = h.mean_outer();  // (x x^T summed) / 3, NaN counted as 0
  EXPECT_FLOAT_EQ(m[0], (1 + 9) / 3.0f);
  EXPECT_FLOAT_EQ(m[1], (2 + 12) / 3.0f);
  EXPECT_FLOAT_EQ(m[2], (2 + 12) / 3.0f);
  EXPECT_FLOAT_EQ(m[3], (4 + 16 + 4) / 3.0f);
  EXPECT_THROW(h.add(Tensor::from_vector<float>(DataType::kFloat32, {1, 3}, {1, 2, 3})), Error);
}

TEST(GptqTest, SingleRowGemmSkippedOnlyWhenAsked) {
  // x [1, 8, 32] -> MatMul (M = 8) -> ReduceMean over the rows -> [1, 32] -> Gemm (M = 1).
  ir::GraphBuilder b("head");
  auto x = b.input("x", DataType::kFloat32, {1, 8, 32});
  auto w1 = Tensor::from_vector<float>(DataType::kFloat32, {32, 32}, randn(32 * 32, 1));
  auto w2 = Tensor::from_vector<float>(DataType::kFloat32, {10, 32}, randn(10 * 32, 2));
  auto m1 = b.node("MatMul", {x, b.initializer("w1", w1)}, {}, 1, "", "mm")[0];
  auto r = b.node("ReduceMean", {m1}, {ir::attr_ints("axes", {1}), ir::attr_int("keepdims", 0)}, 1,
                  "", "pool")[0];
  auto y =
      b.node("Gemm", {r, b.initializer("w2", w2)}, {ir::attr_int("transB", 1)}, 1, "", "head")[0];
  b.output(y, DataType::kFloat32);
  ir::Model m = b.build(17);
  passes::infer_shapes(m.graph, 17);
  PlacementOptions po;
  po.mode = QuantMode::kFp8;
  EXPECT_EQ(place_qdq(m.graph, po).quantized_nodes, (std::vector<std::string>{"mm", "head"}));
  po.skip_single_row = true;
  const Placement p = place_qdq(m.graph, po);
  EXPECT_EQ(p.quantized_nodes, (std::vector<std::string>{"mm"}));
  ASSERT_EQ(p.skipped.size(), 1u);
  EXPECT_NE(p.skipped[0].find("M = 1"), std::string::npos) << p.skipped[0];
  po.op_types_to_quantize = {"Gemm", "MatMul"};  // a forced list quantizes it anyway
  EXPECT_EQ(place_qdq(m.graph, po).quantized_nodes.size(), 2u);
}

class GptqQuantizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_gptq_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // x [N, 8, 64] -> MatMul 64->96 -> Add -> Relu -> Gemm(transB) 96->32: correlated inputs
    // come from the first layer.
    ir::GraphBuilder b("mlp");
    auto t = [](std::vector<float> v, Shape s) {
      return Tensor::from_vector<float>(DataType::kFloat32, std::move(s), v);
    };
    auto x = b.input("x", DataType::kFloat32, {ir::Dim("N"), 8, 64});
    auto m1 = b.node("MatMul", {x, b.initializer("w1", t(randn(64 * 96, 1, 0.12f), {64, 96}))}, {},
                     1, "", "mm1")[0];
    auto a1 =
        b.node("Add", {m1, b.initializer("b1", t(randn(96, 2, 0.1f), {96}))}, {}, 1, "", "add1")[0];
    auto r1 = b.node("Relu", {a1}, {}, 1, "", "relu")[0];
    auto r2 = b.node(
        "Reshape",
        {r1, b.initializer("shp", Tensor::from_vector<int64_t>(DataType::kInt64, {2}, {-1, 96}))},
        {}, 1, "", "flat")[0];
    auto y = b.node("Gemm", {r2, b.initializer("w2", t(randn(32 * 96, 3, 0.1f), {32, 96}))},
                    {ir::attr_int("transB", 1)}, 1, "", "fc")[0];
    b.output(y, DataType::kFloat32, ir::SymShape{ir::Dim("M"), 32});
    model_ = dir_ / "mlp.onnx";
    onnx_io::save_model(b.build(17), model_);
    calib_ = dir_ / "calib.npy";
    std::vector<float> c = correlated_inputs(48 * 8, 64, 21);
    npy_save(calib_, Tensor::from_vector<float>(DataType::kFloat32, {48, 8, 64}, c));
  }
  void TearDown() override { fs::remove_all(dir_); }
  QuantizeOptions opts(const std::string& mode, const std::string& rounding) {
    QuantizeOptions o;
    o.onnx_path = model_;
    o.output_path = dir_ / ("mlp_" + mode + "_" + rounding + ".onnx");
    o.calibration_data = calib_;
    o.quantize_mode = mode;
    o.calibration_method = mode == "int4" ? "rtn" : "max";
    o.weight_rounding = rounding;
    o.batch_size = 8;
    o.eval_batches = 2;
    o.block_size = 32;
    return o;
  }
  static std::string error_of(const QuantizeOptions& o) {
    return quantize_testing::quantize_error(o);
  }
  fs::path dir_, model_, calib_;
};

TEST_F(GptqQuantizeTest, OptionIsValidated) {
  EXPECT_NE(error_of(opts("fp8", "nearest"))
                .find("invalid weight_rounding 'nearest': choose one "
                      "of auto, rtn, gptq"),
            std::string::npos);
  auto o = opts("int4", "gptq");
  o.calibration_data.clear();
  EXPECT_NE(error_of(o).find("weight_rounding gptq needs calibration_data"), std::string::npos)
      << error_of(o);
  o.weight_rounding = "auto";  // without data: round to nearest, no error
  EXPECT_EQ(quantize_onnx(o).num_gptq_rounded, 0);
}

TEST_F(GptqQuantizeTest, GptqRoundsMatMulAndGemmWeightsAndDoesNotLoseAccuracy) {
  for (const std::string mode : {"int8", "fp8", "int4"}) {
    const QuantizeResult g = quantize_onnx(opts(mode, "gptq"));
    const QuantizeResult r = quantize_onnx(opts(mode, "rtn"));
    EXPECT_EQ(g.num_gptq_rounded, 2) << mode;  // mm1 (K on axis 0), fc (transB: K on axis 1)
    EXPECT_EQ(r.num_gptq_rounded, 0) << mode;
    EXPECT_NE(read_file(g.report_path).find("\"gptq_rounded\": 2"), std::string::npos);
    std::printf("%s: output SQNR gptq %.2f dB, rtn %.2f dB\n", mode.c_str(),
                g.outputs.at(0).sqnr_db, r.outputs.at(0).sqnr_db);
    EXPECT_GT(g.outputs.at(0).sqnr_db, r.outputs.at(0).sqnr_db - 0.3) << mode;
  }
  EXPECT_EQ(quantize_onnx(opts("int8", "auto")).num_gptq_rounded, 2);  // auto: gptq with data
}

}  // namespace
}  // namespace trtutils::quantize
