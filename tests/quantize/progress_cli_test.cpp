// The long steps of quantize (calibration, --min_sqnr's search) and of the weakly typed build
// (calibration) show progress: lines when stderr is not a terminal (here: a pipe).
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.h"
#include "quantize/image_model.h"
#include "trtutils/npy.h"

namespace trtutils {
namespace {

class ProgressCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = image_model::write_image_model(dir_ / "net.onnx", 0);
    npy_save(dir_ / "calib.npy", image_model::random_weights({12, 3, 16, 16}, 5, 1.0f));
  }
  testing_data::TempDir dir_;
  std::filesystem::path model_;
};

TEST_F(ProgressCliTest, QuantizeShowsCalibrationAndMinSqnrSearch) {
  // 200 dB cannot be met: the search goes through both quantized layers.
  const auto r = test_util::run_command(
      std::string(TRTUTILS_CLI) + " quantize --onnx " + model_.string() + " --output " +
      (dir_ / "q.onnx").string() + " --calibration_data " + (dir_ / "calib.npy").string() +
      " --batch_size 4 --op_types_to_quantize Conv Gemm --min_sqnr 200");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("[trtutils] calibration: 3/3 batches (100%)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[trtutils] min_sqnr sensitivity: 2/2 layers (100%)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[trtutils] min_sqnr fallback: 2/2 layers (100%)"), std::string::npos)
      << r.output;
  // --quiet: none of it.
  const auto q = test_util::run_command(std::string(TRTUTILS_CLI) + " --quiet quantize --onnx " +
                                        model_.string() + " --output " +
                                        (dir_ / "q.onnx").string() + " --calibration_data " +
                                        (dir_ / "calib.npy").string() + " --batch_size 4");
  ASSERT_EQ(q.code, 0) << q.output;
  EXPECT_EQ(q.output.find("[trtutils] calibration:"), std::string::npos) << q.output;
}

TEST_F(ProgressCliTest, WeaklyTypedBuildShowsCalibration) {
  const auto r = test_util::run_command(
      std::string(TRTUTILS_CLI) + " build --onnx " + model_.string() + " --output " +
      (dir_ / "net.engine").string() + " --backend cpu --int8 --calibration_data " +
      (dir_ / "calib.npy").string() + " --calibration_batch_size 4");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("[trtutils] calibration: 3/3 batches (100%)"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace trtutils
