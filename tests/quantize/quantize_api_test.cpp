// quantize_onnx end to end on small models written to a temporary folder: errors with the
// original's meaning, the written Q/DQ model, the report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>

#include "engine/session.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "ops/qlinear_ops.h"
#include "passes/passes.h"
#include "quantize/auto_method.h"
#include "quantize/quantize_test_util.h"
#include "quantize/report.h"
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
    return quantize_testing::quantize_error(o);
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

// An input without a batch axis ([16, 8, 8], as torchvision's detectors take [3, H, W]): the
// calibration samples [n, 16, 8, 8] are fed one at a time without their leading axis.
TEST_F(QuantizeApiTest, InputWithoutBatchAxisTakesOneSampleAtATime) {
  ir::GraphBuilder b("unbatched");
  auto x = b.input("x", DataType::kFloat32, {16, 8, 8});
  auto u = b.node(
      "Unsqueeze",
      {x, b.initializer("axes", Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {0}))})[0];
  auto c = b.node("Conv",
                  {u, b.initializer("w", randn({32, 16, 3, 3}, 1, 0.1f)),
                   b.initializer("b", randn({32}, 2, 0.1f))},
                  {ir::attr_ints("pads", {1, 1, 1, 1})}, 1, "", "conv")[0];
  b.output(b.node("Relu", {c})[0], DataType::kFloat32);
  const fs::path model = dir_ / "unbatched.onnx";
  onnx_io::save_model(b.build(17), model);
  auto o = opts("int8", "max");
  o.onnx_path = model;
  o.output_path = dir_ / "unbatched_qdq.onnx";
  o.eval_batches = 2;
  const QuantizeResult r = quantize_onnx(o);
  EXPECT_EQ(r.num_quantized_nodes, 1);
  EXPECT_EQ(r.calibration_samples + r.eval_samples, 40);
  EXPECT_EQ(r.eval_samples, 2);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_GT(r.outputs[0].sqnr_db, 25.0);
  // Two axes more than the input: neither layout.
  npy_save(dir_ / "deep.npy", randn({2, 4, 16, 8, 8}, 9, 1.0f));
  o.calibration_data = dir_ / "deep.npy";
  EXPECT_NE(error_of(o).find("does not fit the model input 'x'"), std::string::npos);
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

TEST_F(QuantizeApiTest, BiasCorrectionOption) {
  EXPECT_NE(error_of([&] {
              auto o = opts("fp8");
              o.bias_correction = "yes";
              return o;
            }())
                .find("choose one of auto, on, off"),
            std::string::npos);
  for (const std::string mode : {"int8", "fp8"}) {
    auto on = opts(mode);  // auto: on for int8 / fp8
    on.eval_batches = 2;
    auto off = on;
    off.output_path = dir_ / "off.onnx";
    off.bias_correction = "off";
    const QuantizeResult a = quantize_onnx(on), b = quantize_onnx(off);
    EXPECT_EQ(a.num_bias_corrected, 3) << mode;  // conv1, conv2 (bias created), fc (C created)
    EXPECT_EQ(b.num_bias_corrected, 0) << mode;
    EXPECT_NE(read_file(a.report_path).find("\"bias_corrected\": 3"), std::string::npos);
    // Same Q/DQ layout and scales; only the biases differ.
    ir::Model qa = onnx_io::load_model(on.output_path), qb = onnx_io::load_model(off.output_path);
    EXPECT_EQ(qa.graph.nodes.size(), qb.graph.nodes.size());
    for (const auto& n : qa.graph.nodes) {
      if (n.name == "fc" || n.name == "conv2") {
        EXPECT_TRUE(n.has_input(2)) << n.name;
      }
    }
    EXPECT_GT(a.outputs.at(0).sqnr_db, b.outputs.at(0).sqnr_db - 0.5) << mode;
    std::printf("%s bias correction: %.2f dB, off: %.2f dB\n", mode.c_str(),
                a.outputs.at(0).sqnr_db, b.outputs.at(0).sqnr_db);
  }
}

TEST_F(QuantizeApiTest, StreamedBatchesWithPartialLast) {
  auto o = opts("int8", "entropy");
  o.batch_size = 7;  // 40 samples: 5 batches of 7, one of 5 (the held-out one)
  o.eval_batches = 1;
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

// Inputs of |x| ~ 1e-9: their amax / 127 underflows float16 (to 0, an invalid scale). With
// --high_precision_dtype fp16 every scale is at least float16's smallest normal, and the model
// runs to finite outputs.
TEST_F(QuantizeApiTest, Fp16ScalesStayAboveFloat16Underflow) {
  for (const char* mode : {"int8", "fp8"}) {
    auto o = opts(mode, "max");
    o.high_precision_dtype = "fp16";
    o.calibration_data = dir_ / "tiny.npy";
    npy_save(o.calibration_data, randn({16, 16, 8, 8}, 7, 1e-9f));
    const QuantizeResult r = quantize_onnx(o);
    const ir::Model q = onnx_io::load_model(o.output_path);
    int scales = 0;
    for (const auto& n : q.graph.nodes) {
      if (n.op_type != "QuantizeLinear" && n.op_type != "DequantizeLinear") continue;
      const Tensor* s = q.graph.initializer(n.inputs[1]);
      ASSERT_NE(s, nullptr) << n.name;
      EXPECT_EQ(s->dtype(), DataType::kFloat16) << n.name;
      for (int64_t i = 0; i < s->numel(); ++i) {
        EXPECT_GE(s->at_double(i), 6.103515625e-05) << mode << " " << n.name;
        ++scales;
      }
    }
    EXPECT_GT(scales, 0);
    for (const auto& m : r.outputs) EXPECT_TRUE(std::isfinite(m.sqnr_db) || m.sqnr_db > 0) << mode;
  }
}

// A float16 Q/DQ graph (nvidia-modelopt's default high precision) fuses like a float32 one:
// QConv / QGemm with float32 copies of the float16 scales and bias, a float output cast back to
// float16; and it computes what the unfused graph computes.
TEST_F(QuantizeApiTest, Fp16HighPrecisionGraphFusesIntoQuantizedOps) {
  for (const char* mode : {"int8", "fp8"}) {
    auto o = opts(mode, "max");
    o.high_precision_dtype = "fp16";
    quantize_onnx(o);
    const ir::Model q = onnx_io::load_model(o.output_path);
    // A quantized Conv / Gemm keeps no float16 bias of its own (ONNX Runtime's
    // WeightBiasQuantization would quantize it to int32 in float16, overflowing): the bias is an
    // Add after it, which the fusion below takes back.
    std::set<std::string> dq_out;
    for (const auto& n : q.graph.nodes)
      if (n.op_type == "DequantizeLinear") dq_out.insert(n.outputs[0]);
    int quantized_layers = 0;
    for (const auto& n : q.graph.nodes) {
      if ((n.op_type == "Conv" || n.op_type == "Gemm") && dq_out.count(n.inputs[0])) {
        ++quantized_layers;
        EXPECT_FALSE(n.has_input(2)) << mode << " " << n.name;
      }
    }
    EXPECT_EQ(quantized_layers, 3) << mode;
    ir::Model fused = q;
    passes::run_pipeline(fused.graph, fused.opset());
    int quantized_ops = 0, casts_back = 0;
    for (const auto& n : fused.graph.nodes) {
      quantized_ops += n.op_type == "QConv" || n.op_type == "QGemm";
      casts_back += n.op_type == "Cast" && n.attr_int("to", 0) == 10;
      for (const std::string& in : n.inputs) {
        const Tensor* t = in.empty() ? nullptr : fused.graph.initializer(in);
        if (n.domain == "com.trtutils" && t) {
          EXPECT_NE(t->dtype(), DataType::kFloat16) << mode << " " << n.name << " " << in;
        }
      }
    }
    EXPECT_EQ(quantized_ops, 3) << mode;  // conv1, conv2, fc
    EXPECT_GE(casts_back, 1) << mode;
    for (const auto& n : fused.graph.nodes) {  // each bias back in its layer
      EXPECT_NE(n.op_type, "Add") << mode;
      if ((n.op_type == "QConv" || n.op_type == "QGemm") && n.has_input(ops::qlinear::kBias)) {
        const Tensor* b = fused.graph.initializer(n.inputs[ops::qlinear::kBias]);
        ASSERT_TRUE(b) << mode;
        EXPECT_EQ(b->rank(), 1) << mode << " " << n.name;
      }
    }
    const Tensor x = randn({4, 16, 8, 8}, 21, 1.0f);
    SessionOptions off;
    off.run_passes = false;  // the Q/DQ graph as saved, node by node
    ir::Model plain = q;
    Session unfused(plain, off);
    Session with_fusion(fused, off);
    const Tensor want = unfused.run({{"x", x}}).begin()->second;
    const Tensor got = with_fusion.run({{"x", x}}).begin()->second;
    ASSERT_EQ(got.shape(), want.shape());
    quantize::MetricsAccumulator metrics;
    metrics.add(want, got);
    // float16 rounding of the dequantized operands in the unfused graph moves a few values
    // across quantization boundaries; the fused ops compute in float32.
    EXPECT_GE(metrics.result().sqnr_db, 30.0) << mode;
  }
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

// y = 0.001 * MatMul(x * c, WA) + MatMul(x, WB), c = 1 but 100 on one channel: mm_a's int8
// input is coarse (its own output ~22 dB) but reaches y scaled by 0.001; mm_b's (~38 dB) is
// what limits y. Ranked by the measured output gain, mm_b alone goes back to float and y
// reaches 50 dB; ranked by the noise each node adds locally, mm_a would go first, uselessly.
TEST_F(QuantizeApiTest, MinSqnrFallbackRanksNodesByMeasuredOutputGain) {
  ir::GraphBuilder b("two_branches");
  auto x = b.input("x", DataType::kFloat32, {ir::Dim("N"), 64});
  Tensor c(DataType::kFloat32, {64});
  for (int64_t i = 0; i < 64; ++i) c.data<float>()[i] = i == 5 ? 100.0f : 1.0f;
  auto x2 = b.node("Mul", {x, b.initializer("c", c)}, {}, 1, "", "outlier")[0];
  auto a =
      b.node("MatMul", {x2, b.initializer("wa", randn({64, 32}, 11, 0.1f))}, {}, 1, "", "mm_a")[0];
  Tensor k(DataType::kFloat32, {});
  k.data<float>()[0] = 0.001f;
  auto as = b.node("Mul", {a, b.initializer("k", k)}, {}, 1, "", "scale_a")[0];
  auto bb =
      b.node("MatMul", {x, b.initializer("wb", randn({64, 32}, 12, 0.1f))}, {}, 1, "", "mm_b")[0];
  auto y = b.node("Add", {as, bb}, {}, 1, "", "sum")[0];
  b.output(y, DataType::kFloat32, ir::SymShape{ir::Dim("N"), 32});
  onnx_io::save_model(b.build(17), dir_ / "two.onnx");
  npy_save(dir_ / "two.npy", randn({48, 64}, 13, 1.0f));
  QuantizeOptions o;
  o.onnx_path = dir_ / "two.onnx";
  o.output_path = dir_ / "two_qdq.onnx";
  o.calibration_data = dir_ / "two.npy";
  o.batch_size = 8;
  o.eval_batches = 2;
  o.weight_rounding = "rtn";
  QuantizeResult plain = quantize_onnx(o);
  ASSERT_EQ(plain.num_quantized_nodes, 2);
  ASSERT_LT(plain.outputs.at(0).sqnr_db, 50.0);
  o.min_sqnr = 50.0;
  QuantizeResult r = quantize_onnx(o);
  EXPECT_EQ(r.excluded_by_fallback, std::vector<std::string>{"mm_b"});
  EXPECT_EQ(r.num_quantized_nodes, 1);
  EXPECT_GE(r.outputs.at(0).sqnr_db, 50.0);
}

TEST_F(QuantizeApiTest, CalibratePerNodeGivesIdenticalScales) {
  for (const std::string method : {"entropy", "max"}) {
    auto a = opts("int8", method);
    a.output_path = dir_ / "a.onnx";
    auto b = a;
    b.output_path = dir_ / "b.onnx";
    b.calibrate_per_node = true;
    quantize_onnx(a);
    quantize_onnx(b);
    EXPECT_EQ(read_file(a.output_path), read_file(b.output_path)) << method;
  }
}

// Attention probabilities (Softmax, then an inference Dropout as exporters leave it) read by a
// MatMul: whatever the method they are calibrated by their maximum (the clipping calibrators cut
// the few large probabilities); the other activations still get the method's threshold.
TEST_F(QuantizeApiTest, SoftmaxOutputsAreCalibratedByTheirMaximum) {
  ir::GraphBuilder b("attn");
  auto x = b.input("x", DataType::kFloat32, {ir::Dim("N"), 64, 32});
  auto s =
      b.node("MatMul", {x, b.initializer("wk", randn({32, 64}, 31, 0.4f))}, {}, 1, "", "scores")[0];
  auto p = b.node("Softmax", {s}, {ir::attr_int("axis", -1)}, 1, "", "softmax")[0];
  auto pd = b.node_with_outputs(
      "Dropout",
      {p, b.initializer("ratio", Tensor::from_vector<float>(DataType::kFloat32, {}, {0.0f}))},
      {"pd"});
  auto y = b.node("MatMul", {pd[0], x}, {}, 1, "", "pv")[0];
  b.output(y, DataType::kFloat32);
  model_ = dir_ / "attn.onnx";
  onnx_io::save_model(b.build(17), model_);
  calib_ = dir_ / "attn_x.npy";
  npy_save(calib_, randn({16, 64, 32}, 32, 1.0f));
  auto scale_of = [&](const std::string& method, const std::string& input) {
    auto o = opts("int8", method);
    o.output_path = dir_ / ("attn_" + method + ".onnx");
    quantize_onnx(o);
    const ir::Model m = onnx_io::load_model(o.output_path);
    for (const ir::Node& n : m.graph.nodes)
      if (n.op_type == "QuantizeLinear" && n.inputs[0] == input)
        return static_cast<double>(m.graph.initializer(n.inputs[1])->at_double(0));
    ADD_FAILURE() << "no QuantizeLinear on " << input << " (" << method << ")";
    return 0.0;
  };
  for (const std::string method : {"entropy", "percentile", "mse"})
    EXPECT_DOUBLE_EQ(scale_of(method, "pd"), scale_of("max", "pd")) << method;
  // The input (Gaussian) is still clipped by the method: 0.0308 (mse) against 0.0327 (max).
  EXPECT_LT(scale_of("mse", "x"), 0.97 * scale_of("max", "x"));
}

// auto tries every method on the outputs of a few calibration batches and keeps max unless
// another beats it sample for sample (auto_method.h); the report and the result name the
// candidates, their scores and the rule.
TEST_F(QuantizeApiTest, AutoKeepsTheMethodWithTheBestOutputs) {
  for (const std::string mode : {"int8", "fp8"}) {
    auto o = opts(mode, "auto");
    const QuantizeResult r = quantize_onnx(o);
    ASSERT_EQ(r.calibration_method_scores.size(), 5u) << mode;
    // The chosen one is a scored candidate (choose_candidate's paired test needs the per-batch
    // scores, which the result does not carry: tests/quantize/auto_method_test.cpp).
    std::string best_name;
    for (const auto& [m, db] : r.calibration_method_scores)
      if (m == r.calibration_method_chosen) best_name = m;
    EXPECT_EQ(r.calibration_method_chosen, best_name) << mode;
    // The paired test's figures: max's gain over itself is 0, and a chosen candidate other than
    // max gained over 2 standard errors per batch.
    ASSERT_EQ(r.calibration_method_gains.size(), r.calibration_method_scores.size()) << mode;
    EXPECT_EQ(r.calibration_method_gains[0].mean_db, 0.0) << mode;
    for (const auto& g : r.calibration_method_gains) {
      if (g.name == r.calibration_method_chosen && g.name != "max") {
        EXPECT_GT(g.mean_db, quantize::kAutoPairedZ * g.se_db) << mode << " " << g.name;
      }
    }
    EXPECT_EQ(r.auto_selection_rule, quantize::kAutoSelectionRule) << mode;
    EXPECT_EQ(r.calibration_method_scores[0].first, "max");
    EXPECT_EQ(r.auto_selection_samples, 40);  // the 5 calibration batches of 8, in 4 folds
    EXPECT_TRUE(r.auto_selection_held_out);
    EXPECT_EQ(r.auto_selection_folds, 4);
    const std::string json = read_file(r.report_path);
    EXPECT_NE(json.find("\"calibration_method_chosen\": \"" + best_name + "\""), std::string::npos);
    EXPECT_NE(json.find("\"calibration_method_scores\""), std::string::npos);
    EXPECT_NE(json.find("\"calibration_method_gain_db\""), std::string::npos);
    EXPECT_NE(json.find("\"auto_selection_held_out\": true"), std::string::npos);
    // The written model's scales are the chosen method's: quantizing with it directly gives
    // the same output figures (per_tensor is "auto" per tensor, not a method of its own).
    if (best_name != "per_tensor") {
      auto d = opts(mode, best_name);
      d.output_path = dir_ / "direct.onnx";
      EXPECT_DOUBLE_EQ(quantize_onnx(d).outputs.at(0).sqnr_db, r.outputs.at(0).sqnr_db) << mode;
    }
    EXPECT_EQ(r.fp8_range.size(), mode == "fp8" ? 3u : 0u);
  }
}

// fp8: every calibrated tensor's place on E4M3's grid is in the result and the report.
TEST_F(QuantizeApiTest, Fp8ReportsTensorsOutsideTheE4m3Range) {
  // Inputs spanning 2^-30 .. 2^3: most nonzero values sit under E4M3's normal range.
  Tensor x(DataType::kFloat32, {40, 16, 8, 8});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> e(-30.0f, 3.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::exp2(e(rng));
  npy_save(calib_, x);
  const QuantizeResult r = quantize_onnx(opts("fp8", "max"));
  ASSERT_EQ(r.fp8_range.size(), 3u);
  const auto in = std::find_if(r.fp8_range.begin(), r.fp8_range.end(),
                               [](const auto& m) { return m.name == "x"; });
  ASSERT_NE(in, r.fp8_range.end());
  EXPECT_TRUE(in->outside);
  EXPECT_GT(in->below_normal, 0.5);  // 2^3 / 448 * 2^-6 ~ 2^-11.8: 18 of 33 octaves under it
  EXPECT_GT(in->flushed, 0.3);
  EXPECT_NE(read_file(r.report_path).find("\"fp8_range\""), std::string::npos);
}

// X [N, 256] with 4 channels 25x larger than the rest, read by a MatMul (W [K, N]) and a Gemm
// (transB: W [N, K]); int4 blocks of 64 along K.
class QuantizeAwqTest : public QuantizeApiTest {
 protected:
  static constexpr int64_t kK = 256;
  static Tensor activations(int64_t rows, uint32_t seed) {
    Tensor x = randn({rows, kK}, seed, 1.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k : {5, 70, 150, 222}) x.data<float>()[r * kK + k] *= 25.0f;
    return x;
  }
  void SetUp() override {
    QuantizeApiTest::SetUp();
    ir::GraphBuilder b("mm");
    auto x = b.input("x", DataType::kFloat32, {ir::Dim("N"), kK});
    auto y1 = b.node("MatMul", {x, b.initializer("w_mm", randn({kK, 96}, 11, 0.05f))}, {}, 1, "",
                     "mm")[0];
    auto y2 = b.node("Gemm", {x, b.initializer("w_gemm", randn({64, kK}, 12, 0.05f))},
                     {ir::attr_int("transB", 1)}, 1, "", "gemm")[0];
    b.output(y1, DataType::kFloat32);
    b.output(y2, DataType::kFloat32);
    model_ = dir_ / "mm.onnx";
    onnx_io::save_model(b.build(17), model_);
    calib_ = dir_ / "x.npy";
    npy_save(calib_, activations(512, 21));
  }
  QuantizeOptions int4(const std::string& method, bool with_data, const std::string& out) {
    QuantizeOptions o = opts("int4", method);
    o.block_size = 64;
    o.batch_size = 64;
    o.output_path = dir_ / out;
    if (!with_data) o.calibration_data.clear();
    return o;
  }
  // Output MSE of a model vs the float model on fresh activations, on the CPU backend.
  double output_mse(const fs::path& q) {
    const Tensor x = activations(2048, 99);
    auto ref = Session(onnx_io::load_model(model_)).run({{"x", x}});
    auto out = Session(onnx_io::load_model(q)).run({{"x", x}});
    double se = 0;
    int64_t n = 0;
    for (const auto& [name, r] : ref) {
      const Tensor& t = out.at(name);
      for (int64_t i = 0; i < r.numel(); ++i) {
        const double d = static_cast<double>(t.data<float>()[i]) - r.data<float>()[i];
        se += d * d;
      }
      n += r.numel();
    }
    return se / static_cast<double>(n);
  }
  static std::vector<float> scales(const fs::path& q, const std::string& w) {
    ir::Model m = onnx_io::load_model(q);
    const Tensor* t = m.graph.initializer(w + "_scale");
    return t ? t->to_float_vector() : std::vector<float>{};
  }
};

TEST_F(QuantizeAwqTest, AwqClipIsActivationAware) {
  quantize_onnx(int4("rtn", true, "rtn.onnx"));
  quantize_onnx(int4("awq_clip", false, "blind.onnx"));  // no data: activation-blind clip
  QuantizeResult r = quantize_onnx(int4("awq_clip", true, "awq.onnx"));
  EXPECT_EQ(r.num_weights_quantized, 2);
  EXPECT_EQ(r.num_qdq_pairs, 0);
  const double rtn = output_mse(dir_ / "rtn.onnx");
  const double blind = output_mse(dir_ / "blind.onnx");
  const double awq = output_mse(dir_ / "awq.onnx");
  std::printf("int4 output MSE: rtn %.4g, activation-blind clip %.4g, awq_clip %.4g\n", rtn, blind,
              awq);
  EXPECT_LT(awq, rtn);
  EXPECT_LT(awq, blind);
  EXPECT_LT(awq, 0.8 * std::min(rtn, blind));
  // The chosen clips differ from the activation-blind ones (for both K layouts).
  for (const std::string w : {"w_mm", "w_gemm"}) {
    const auto a = scales(dir_ / "awq.onnx", w), b = scales(dir_ / "blind.onnx", w);
    ASSERT_EQ(a.size(), b.size()) << w;
    ASSERT_FALSE(a.empty()) << w;
    size_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
    EXPECT_GT(differ, a.size() / 10) << w;
  }
  // Per-node streaming gives the same statistics, hence the same model.
  auto pn = int4("awq_clip", true, "awq_pn.onnx");
  pn.calibrate_per_node = true;
  quantize_onnx(pn);
  EXPECT_EQ(read_file(dir_ / "awq.onnx"), read_file(dir_ / "awq_pn.onnx"));
}

TEST_F(QuantizeAwqTest, Int4WithAnActivationMethodSaysItDoesNotApply) {
  // Still accepted (rtn is used, with a warning): same model as rtn.
  quantize_onnx(int4("rtn", true, "rtn.onnx"));
  quantize_onnx(int4("entropy", true, "entropy.onnx"));
  EXPECT_EQ(read_file(dir_ / "rtn.onnx"), read_file(dir_ / "entropy.onnx"));
}

std::set<std::string> listing(const fs::path& d) {
  std::set<std::string> v;
  for (const auto& e : fs::directory_iterator(d)) v.insert(e.path().filename().string());
  return v;
}

TEST_F(QuantizeApiTest, ExistingQdqWithExternalDataIsSelfContained) {
  auto o = opts();
  quantize_onnx(o);
  const ir::Model q = onnx_io::load_model(o.output_path);
  const fs::path in = dir_ / "in", out = dir_ / "out";
  fs::create_directories(in);
  fs::create_directories(out);
  onnx_io::save_model(q, in / "q.onnx", {.external_data_threshold = 64});
  ASSERT_EQ(onnx_io::external_data_locations(in / "q.onnx"),
            std::vector<std::string>{"q.onnx.data"});
  auto again = opts();
  again.onnx_path = in / "q.onnx";
  again.output_path = out / "copy.onnx";
  QuantizeResult r = quantize_onnx(again);
  EXPECT_TRUE(r.already_quantized);
  EXPECT_EQ(listing(in), (std::set<std::string>{"q.onnx", "q.onnx.data"}));
  EXPECT_EQ(listing(out), (std::set<std::string>{"copy.onnx", "copy.onnx.data"}));
  EXPECT_EQ(onnx_io::external_data_locations(out / "copy.onnx"),
            std::vector<std::string>{"copy.onnx.data"});
  // Loadable from its own folder with the input's folder gone, and the same model.
  fs::remove_all(in);
  const Tensor x = randn({2, 16, 8, 8}, 5, 1.0f);
  auto want = Session(q).run({{"x", x}});
  auto got = Session(onnx_io::load_model(out / "copy.onnx")).run({{"x", x}});
  const Tensor& a = want.begin()->second;
  const Tensor& b = got.begin()->second;
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.to_float_vector(), b.to_float_vector());

  // A float model with external data quantizes into a self-contained output too.
  const fs::path fin = dir_ / "fin", fout = dir_ / "fout";
  fs::create_directories(fin);
  fs::create_directories(fout);
  onnx_io::save_model(onnx_io::load_model(model_), fin / "net.onnx",
                      {.external_data_threshold = 64});
  auto f = opts();
  f.onnx_path = fin / "net.onnx";
  f.output_path = fout / "net_qdq.onnx";
  f.write_report = false;
  quantize_onnx(f);
  fs::remove_all(fin);
  EXPECT_EQ(listing(fout), (std::set<std::string>{"net_qdq.onnx"}));
  EXPECT_EQ(Session(onnx_io::load_model(f.output_path)).run({{"x", x}}).begin()->second.shape(),
            (Shape{2, 10}));
}

}  // namespace
}  // namespace trtutils
