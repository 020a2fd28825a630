// quantize_onnx end to end on small models written to a temporary folder: errors with the
// original's meaning, the written Q/DQ model, the report.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "engine/session.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "trtutils/file_util.h"
#include "trtutils/npy.h"
#include "trtutils/quantize.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

Tensor randn(Shape s, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  Tensor t(DataType::kFloat32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

class QuantizeApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_qapi_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // x [N, 16, 8, 8] -> Conv 16->32 -> Relu -> Conv 32->32 -> Relu -> GAP -> Flatten -> Gemm
    // 32->10
    ir::GraphBuilder b("net");
    auto x = b.input("x", DataType::kFloat32, {ir::Dim("N"), 16, 8, 8});
    auto c1 = b.node("Conv",
                     {x, b.initializer("w1", randn({32, 16, 3, 3}, 1, 0.1f)),
                      b.initializer("b1", randn({32}, 2, 0.1f))},
                     {ir::attr_ints("pads", {1, 1, 1, 1})}, 1, "", "conv1")[0];
    auto r1 = b.node("Relu", {c1}, {}, 1, "", "relu1")[0];
    auto c2 = b.node("Conv", {r1, b.initializer("w2", randn({32, 32, 3, 3}, 3, 0.08f))},
                     {ir::attr_ints("pads", {1, 1, 1, 1})}, 1, "", "conv2")[0];
    auto r2 = b.node("Relu", {c2}, {}, 1, "", "relu2")[0];
    auto gp = b.node("GlobalAveragePool", {r2}, {}, 1, "", "gap")[0];
    auto fl = b.node("Flatten", {gp}, {}, 1, "", "flatten")[0];
    auto y = b.node("Gemm", {fl, b.initializer("wf", randn({10, 32}, 4, 0.3f))},
                    {ir::attr_int("transB", 1)}, 1, "", "fc")[0];
    b.output(y, DataType::kFloat32, ir::SymShape{ir::Dim("N"), 10});
    model_ = dir_ / "net.onnx";
    onnx_io::save_model(b.build(17), model_);
    calib_ = dir_ / "calib.npy";
    npy_save(calib_, randn({40, 16, 8, 8}, 7, 1.0f));
  }
  void TearDown() override { fs::remove_all(dir_); }

  QuantizeOptions opts(const std::string& mode = "int8", const std::string& method = "max") {
    QuantizeOptions o;
    o.onnx_path = model_;
    o.output_path = dir_ / "net_qdq.onnx";
    o.calibration_data = calib_;
    o.quantize_mode = mode;
    o.calibration_method = method;
    o.batch_size = 8;
    return o;
  }
  static std::string error_of(const QuantizeOptions& o) {
    try {
      quantize_onnx(o);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_, model_, calib_;
};

TEST_F(QuantizeApiTest, ErrorsHaveTheOriginalsMeaning) {
  EXPECT_NE(error_of(opts("int3")).find("int8, fp8, int4"), std::string::npos);
  EXPECT_NE(error_of(opts("int8", "minmax")).find("max, entropy, percentile, mse"),
            std::string::npos);
  EXPECT_NE(error_of(opts("int4", "bogus")).find("rtn, awq_clip"), std::string::npos);
  auto o = opts();
  o.onnx_path = dir_ / "missing.onnx";
  std::string e = error_of(o);
  EXPECT_NE(e.find("not found"), std::string::npos);
  EXPECT_NE(e.find("missing.onnx"), std::string::npos);
  o = opts();
  o.calibration_data = dir_ / "nope.npy";
  e = error_of(o);
  EXPECT_NE(e.find("not found"), std::string::npos);
  EXPECT_NE(e.find("nope.npy"), std::string::npos);
  npy_save(dir_ / "bad.npy", randn({4, 3, 8, 8}, 1, 1.0f));
  o = opts();
  o.calibration_data = dir_ / "bad.npy";
  e = error_of(o);
  EXPECT_NE(e.find("[4, 3, 8, 8]"), std::string::npos) << e;
  EXPECT_NE(e.find("[N, 16, 8, 8]"), std::string::npos) << e;
  o = opts();
  o.nodes_to_exclude = {"("};
  EXPECT_NE(error_of(o).find("invalid regex"), std::string::npos);
}

TEST_F(QuantizeApiTest, Int8WritesRunnableQdqModelAndReport) {
  for (const std::string method : {"max", "entropy", "percentile", "mse"}) {
    auto o = opts("int8", method);
    o.eval_batches = 1;
    o.report_per_tensor = true;
    QuantizeResult r = quantize_onnx(o);
    EXPECT_FALSE(r.already_quantized);
    EXPECT_EQ(r.num_quantized_nodes, 3);  // conv1, conv2, fc
    EXPECT_EQ(r.num_qdq_pairs, 3);
    EXPECT_EQ(r.num_weights_quantized, 3);
    EXPECT_EQ(r.calibration_samples, 32);
    EXPECT_EQ(r.eval_samples, 8);
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_GT(r.outputs[0].sqnr_db, 20.0) << method;
    EXPECT_GT(r.outputs[0].cosine, 0.99) << method;
    EXPECT_EQ(r.tensors.size(), 3u);
    ASSERT_TRUE(fs::exists(r.report_path));
    const std::string json = read_file(r.report_path);
    EXPECT_NE(json.find("\"sqnr_db\""), std::string::npos);
    EXPECT_NE(json.find("\"scales\""), std::string::npos);
    // The written model loads and runs on the CPU backend, with int8 weights and opset >= 13.
    ir::Model q = onnx_io::load_model(o.output_path);
    EXPECT_GE(q.opset(), 13);
    int qn = 0, dqn = 0;
    for (const auto& n : q.graph.nodes) {
      qn += n.op_type == "QuantizeLinear";
      dqn += n.op_type == "DequantizeLinear";
    }
    EXPECT_EQ(qn, 3);
    EXPECT_EQ(dqn, 6);
    Session s(q);
    auto out = s.run({{"x", randn({2, 16, 8, 8}, 99, 1.0f)}});
    EXPECT_EQ(out.begin()->second.shape(), (Shape{2, 10}));
  }
}

TEST_F(QuantizeApiTest, Fp8AndInt4Modes) {
  auto o = opts("fp8", "max");
  QuantizeResult r = quantize_onnx(o);
  EXPECT_GT(r.outputs.at(0).sqnr_db, 25.0);
  ir::Model q = onnx_io::load_model(o.output_path);
  EXPECT_EQ(q.opset(), 19);
  bool fp8_zp = false;
  for (const auto& [n, t] : q.graph.initializers) fp8_zp |= t.dtype() == DataType::kFloat8E4M3FN;
  EXPECT_TRUE(fp8_zp);

  auto o4 = opts("int4", "rtn");
  o4.block_size = 16;
  o4.op_types_to_quantize = {"Gemm"};
  QuantizeResult r4 = quantize_onnx(o4);
  EXPECT_EQ(r4.num_qdq_pairs, 0);  // weight-only
  EXPECT_EQ(r4.num_weights_quantized, 1);
  EXPECT_EQ(onnx_io::load_model(o4.output_path).opset(), 21);
  EXPECT_GT(r4.outputs.at(0).sqnr_db, 15.0);
}

TEST_F(QuantizeApiTest, StreamedBatchesWithPartialLast) {
  auto o = opts("int8", "entropy");
  o.batch_size = 7;  // 40 samples: 5 batches of 7, one of 5 (the held-out one)
  o.plot = dir_ / "sqnr.png";
  QuantizeResult r = quantize_onnx(o);
  EXPECT_EQ(read_file(o.plot).substr(0, 8), std::string("\x89PNG\r\n\x1a\n"));
  EXPECT_EQ(r.tensors.size(), 3u);        // --plot implies the per-tensor report
  EXPECT_EQ(r.tensors[0].node, "conv1");  // graph order
  o.plot.clear();
  EXPECT_EQ(r.calibration_samples, 35);
  EXPECT_EQ(r.eval_samples, 5);
  // float16 data goes through npy_load and a conversion instead of the streaming reader.
  Tensor h(DataType::kFloat16, {16, 16, 8, 8});
  Tensor f = randn({16, 16, 8, 8}, 3, 1.0f);
  for (int64_t i = 0; i < f.numel(); ++i) h.data<half>()[i] = float_to_half(f.data<float>()[i]);
  npy_save(dir_ / "h.npy", h);
  o.calibration_data = dir_ / "h.npy";
  o.batch_size = 8;
  r = quantize_onnx(o);
  EXPECT_EQ(r.calibration_samples, 8);
  EXPECT_GT(r.outputs.at(0).sqnr_db, 20.0);
}

TEST_F(QuantizeApiTest, Fp16HighPrecisionKeepsFp32Io) {
  auto o = opts("int8", "max");
  o.high_precision_dtype = "fp16";
  QuantizeResult r = quantize_onnx(o);
  EXPECT_GT(r.outputs.at(0).sqnr_db, 20.0);
  ir::Model q = onnx_io::load_model(o.output_path);
  EXPECT_GE(q.opset(), 19);
  EXPECT_EQ(q.graph.inputs[0].dtype, DataType::kFloat32);
  EXPECT_EQ(q.graph.outputs[0].dtype, DataType::kFloat32);
  for (const auto& [n, t] : q.graph.initializers) EXPECT_NE(t.dtype(), DataType::kFloat32) << n;
  o.high_precision_dtype = "bf16";
  EXPECT_NE(error_of(o).find("fp32, fp16"), std::string::npos);
}

TEST_F(QuantizeApiTest, ExistingQdqIsWrittenUnchanged) {
  auto o = opts();
  quantize_onnx(o);
  auto again = opts();
  again.onnx_path = o.output_path;
  again.output_path = dir_ / "twice.onnx";
  QuantizeResult r = quantize_onnx(again);
  EXPECT_TRUE(r.already_quantized);
  EXPECT_EQ(read_file(again.output_path), read_file(o.output_path));
}

TEST_F(QuantizeApiTest, MinSqnrFallbackLeavesLayersInFloat) {
  auto o = opts("int8", "max");
  o.min_sqnr = 200.0;  // unreachable while anything is quantized: everything falls back
  QuantizeResult r = quantize_onnx(o);
  EXPECT_FALSE(r.excluded_by_fallback.empty());
  EXPECT_TRUE(std::isinf(r.outputs.at(0).sqnr_db) || r.outputs.at(0).sqnr_db >= 200.0);
  EXPECT_EQ(r.num_quantized_nodes, 0);
}

}  // namespace
}  // namespace trtutils
