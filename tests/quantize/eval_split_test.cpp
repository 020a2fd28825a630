// The accuracy report's samples: split_batches / spread_batches, and what quantize reports
// (result fields, report JSON, CLI line) by default and with eval_batches.
#include "quantize/eval_split.h"

#include <gtest/gtest.h>

#include <string>

#include "cli_runner.h"
#include "quantize/image_model.h"
#include "trtutils/file_util.h"
#include "trtutils/npy.h"
#include "trtutils/quantize.h"

namespace trtutils {
namespace {

using quantize::split_batches;
using quantize::spread_batches;
using V = std::vector<int64_t>;

TEST(SpreadBatches, WholeBatchesSpreadEvenly) {
  EXPECT_EQ(spread_batches(10, 8, 32), (V{0, 2, 5, 7}));
  EXPECT_EQ(spread_batches(3, 8, 32), (V{0, 1, 2}));  // fewer samples than the target: all
  EXPECT_EQ(spread_batches(5, 64, 32), (V{0}));       // at least one batch
  EXPECT_EQ(spread_batches(0, 8, 32), V{});
}

TEST(SplitBatches, DefaultEvaluatesUpTo32CalibrationSamples) {
  quantize::EvalSplit s = split_batches(40, 1, std::nullopt, 0);
  EXPECT_EQ(s.calib_batches, 40);  // nothing held out
  EXPECT_EQ(s.eval.size(), 32u);
  EXPECT_EQ(s.eval.front(), 0);
  EXPECT_EQ(s.eval.back(), 38);  // spread over the set, not its first 32
  EXPECT_FALSE(s.held_out);
  s = split_batches(3, 8, std::nullopt, 0);  // 24 samples: all of them
  EXPECT_EQ(s.calib_batches, 3);
  EXPECT_EQ(s.eval, (V{0, 1, 2}));
  s = split_batches(40, 1, std::nullopt, 10);  // max_calibration_batches: among those
  EXPECT_EQ(s.calib_batches, 10);
  EXPECT_EQ(s.eval.size(), 10u);
  EXPECT_EQ(s.eval.back(), 9);
}

TEST(SplitBatches, EvalBatchesHoldOutTheLast) {
  quantize::EvalSplit s = split_batches(10, 8, 2, 0);
  EXPECT_EQ(s.calib_batches, 8);
  EXPECT_EQ(s.eval, (V{8, 9}));
  EXPECT_TRUE(s.held_out);
  s = split_batches(2, 8, 2, 0);  // no more batches than that: all calibrate and evaluate
  EXPECT_EQ(s.calib_batches, 2);
  EXPECT_EQ(s.eval, (V{0, 1}));
  EXPECT_FALSE(s.held_out);
  s = split_batches(10, 8, 0, 0);  // no report
  EXPECT_EQ(s.calib_batches, 10);
  EXPECT_TRUE(s.eval.empty());
  EXPECT_FALSE(s.held_out);
}

// auto's selection batches: up to 64 samples spread over the calibration batches, cross-fitted
// in up to 4 folds (interleaved) when there are two batches or more.
TEST(SelectionBatches, CrossFittedInFoldsWhereThereAreTwoBatches) {
  quantize::SelectionSplit s = quantize::selection_batches(60, 1, 64, 4);
  EXPECT_EQ(s.batches.size(), 60u);  // fewer than 64: all of them
  EXPECT_EQ(s.folds, 4);
  EXPECT_EQ(s.fold[0], 0);
  EXPECT_EQ(s.fold[5], 1);
  EXPECT_EQ(s.fold[59], 3);
  EXPECT_TRUE(s.held_out());
  s = quantize::selection_batches(200, 1, 64, 4);
  EXPECT_EQ(s.batches.size(), 64u);
  EXPECT_EQ(s.batches.back(), 196);              // 63 * 200 / 64: spread, not the first 64
  s = quantize::selection_batches(3, 8, 64, 4);  // three batches: three folds of one
  EXPECT_EQ(s.batches, (V{0, 1, 2}));
  EXPECT_EQ(s.folds, 3);
  EXPECT_EQ(s.fold, (std::vector<int>{0, 1, 2}));
  s = quantize::selection_batches(1, 8, 64, 4);  // one batch: it fits and selects
  EXPECT_EQ(s.batches, (V{0}));
  EXPECT_FALSE(s.held_out());
  EXPECT_TRUE(quantize::selection_batches(0, 8, 64, 4).batches.empty());
}

class ReportSamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = image_model::write_image_model(dir_ / "net.onnx", 0);
    npy_save(dir_ / "calib.npy", image_model::random_weights({40, 3, 16, 16}, 5, 1.0f));
  }
  QuantizeOptions opts() const {
    QuantizeOptions o;
    o.onnx_path = model_;
    o.output_path = dir_ / "q.onnx";
    o.calibration_data = dir_ / "calib.npy";
    o.op_types_to_quantize = {"Conv", "Gemm"};
    return o;
  }
  testing_data::TempDir dir_;
  std::filesystem::path model_;
};

TEST_F(ReportSamplesTest, DefaultReportRunsOn32CalibrationSamples) {
  QuantizeResult r = quantize_onnx(opts());
  EXPECT_EQ(r.calibration_samples, 40);
  EXPECT_EQ(r.eval_samples, 32);
  EXPECT_FALSE(r.eval_held_out);
  std::string json = read_file(r.report_path);
  EXPECT_NE(json.find("\"eval_samples\": 32,\n  \"eval_held_out\": false"), std::string::npos)
      << json;
  QuantizeOptions o = opts();
  o.eval_batches = 4;
  r = quantize_onnx(o);
  EXPECT_EQ(r.calibration_samples, 36);
  EXPECT_EQ(r.eval_samples, 4);
  EXPECT_TRUE(r.eval_held_out);
  json = read_file(r.report_path);
  EXPECT_NE(json.find("\"eval_samples\": 4,\n  \"eval_held_out\": true"), std::string::npos);
}

TEST_F(ReportSamplesTest, CliSaysHowManySamplesTheReportUsed) {
  const std::string base = std::string(TRTUTILS_CLI) + " quantize --onnx " + model_.string() +
                           " --output " + (dir_ / "q.onnx").string() + " --calibration_data " +
                           (dir_ / "calib.npy").string() + " --batch_size 8";
  auto r = test_util::run_command(base);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("calibration samples: 40, evaluation samples: 32 (calibration samples, "
                          "none held out; --eval_batches N holds out N batches)\n"),
            std::string::npos)
      << r.output;
  r = test_util::run_command(base + " --eval_batches 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("calibration samples: 32, evaluation samples: 8 (held out)\n"),
            std::string::npos)
      << r.output;
  r = test_util::run_command(base + " --eval_batches 0");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("calibration samples: 40, evaluation samples: 0\n"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace trtutils
