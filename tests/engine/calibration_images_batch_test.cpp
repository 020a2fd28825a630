// Weakly typed INT8 from images (data_batcher, build --calibration_dir) on a model whose batch
// is fixed: the batches take the model's batch, whatever batch_size says (it applies to a
// dynamic batch only); too few images for that batch say so.
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.h"
#include "quantize/image_model.h"
#include "trtutils/builder.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

class CalibrationImagesBatchTest : public ::testing::Test {
 protected:
  void SetUp() override { images_ = image_model::write_photos(dir_ / "images", 2); }  // 6
  builder::BuildResult build(int64_t model_batch, int64_t batch_size) {
    const auto model = image_model::write_image_model(dir_ / "net.onnx", model_batch);
    ImageBatcherOptions images;
    images.image_dir = images_;
    images.dtype = DataType::kUndefined;
    images.batch_size = batch_size;
    return builder::build_engine(model, dir_ / "net.engine",
                                 {.int8 = true, .data_batcher = images, .backend = "cpu"});
  }
  std::string build_error(int64_t model_batch, int64_t batch_size) {
    try {
      build(model_batch, batch_size);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  testing_data::TempDir dir_;
  std::filesystem::path images_;
};

TEST_F(CalibrationImagesBatchTest, FixedBatchOfTheModelWins) {
  EXPECT_EQ(build_error(4, 8), "");  // 6 images: one batch of 4, the other 2 dropped
  EXPECT_EQ(build_error(0, 4), "");  // dynamic: batch_size applies
  // The case: 9 images made one batch of 8 ("got [8, 3, 16, 16]") for a batch-1 input.
  images_ = image_model::write_photos(dir_ / "nine", 3);
  EXPECT_EQ(build_error(1, 8), "");
}

TEST_F(CalibrationImagesBatchTest, TooFewImagesForTheFixedBatchSaySo) {
  const std::string e = build_error(8, 2);
  EXPECT_NE(e.find("6 image(s)"), std::string::npos) << e;
  EXPECT_NE(e.find("fixed batch of 8"), std::string::npos) << e;
  EXPECT_NE(e.find("at least 8 images"), std::string::npos) << e;
}

TEST_F(CalibrationImagesBatchTest, CliBuildsABatchOneModelWithTheDefaultBatchSize) {
  const auto model = image_model::write_image_model(dir_ / "net.onnx", 1);
  const auto r =
      test_util::run_command(std::string(TRTUTILS_CLI) + " -v build --onnx " + model.string() +
                             " --output " + (dir_ / "net.engine").string() +
                             " --backend cpu --int8 --calibration_dir " + images_.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("model input 'x' has a fixed batch of 1: calibration images in batches "
                          "of 1 (batch_size 8 applies to a dynamic batch)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[trtutils] calibration: 6/6 batches (100%)"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace trtutils
