// Calibration from a folder of images, in quantize (calibration_data DIR, image_preprocess) and
// the weakly typed build (data_batcher): what fit_images_to_input takes from the model input,
// the preprocessing line, and that the preprocessing reaches the calibration.
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.h"
#include "data/input_images.h"
#include "quantize/image_model.h"
#include "quantize/quantize_test_util.h"
#include "trtutils/builder.h"
#include "trtutils/file_util.h"
#include "trtutils/quantize.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;
using testing_data::TempDir;

ir::ValueInfo input(ir::SymShape shape, DataType dtype = DataType::kFloat32) {
  ir::ValueInfo v;
  v.name = "x";
  v.dtype = dtype;
  v.shape = std::move(shape);
  return v;
}

std::string fit_error(const ImageBatcherOptions& o, const ir::ValueInfo& in) {
  try {
    data::fit_images_to_input(o, in);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FitImagesToInput, TakesShapeAndDtypeFromTheInput) {
  ImageBatcherOptions o;
  o.dtype = DataType::kUndefined;
  ImageBatcherOptions f = data::fit_images_to_input(o, input({1, 3, 24, 32}, DataType::kFloat16));
  EXPECT_EQ(f.shape, (std::array<int64_t, 3>{24, 32, 3}));
  EXPECT_EQ(f.dtype, DataType::kFloat16);
  o.order = DataOrder::kNHWC;
  f = data::fit_images_to_input(o, input({ir::Dim("N"), 24, 32, 1}));
  EXPECT_EQ(f.shape, (std::array<int64_t, 3>{24, 32, 1}));
  EXPECT_EQ(f.dtype, DataType::kFloat32);
  // Given values stay.
  o.order = DataOrder::kNCHW;
  o.shape = {24, 32, 3};
  o.dtype = DataType::kUInt8;
  f = data::fit_images_to_input(o, input({1, 3, ir::Dim("H"), ir::Dim("W")}));
  EXPECT_EQ(f.shape, (std::array<int64_t, 3>{24, 32, 3}));
  EXPECT_EQ(f.dtype, DataType::kUInt8);
}

TEST(FitImagesToInput, ErrorsSayWhatToSet) {
  ImageBatcherOptions o;
  std::string e = fit_error(o, input({1, 3, ir::Dim("H"), ir::Dim("W")}));
  EXPECT_NE(e.find("'x' [1, 3, H, W]"), std::string::npos) << e;
  EXPECT_NE(e.find("input_shape H W C"), std::string::npos) << e;
  o.shape = {16, 16, 3};
  e = fit_error(o, input({1, 3, 224, 224}));
  EXPECT_NE(e.find("(16, 16, 3) does not fit the model input 'x' [1, 3, 224, 224] in NCHW"),
            std::string::npos)
      << e;
  e = fit_error(o, input({3, 16, 16}));
  EXPECT_NE(e.find("rank 4"), std::string::npos) << e;
}

TEST(PreprocessingSummary, SaysSizeResizeScaleMeanStdLayoutDtype) {
  ImageBatcherOptions o;
  o.shape = {224, 224, 3};
  o.resize_method = ResizeMethod::kLinear;
  EXPECT_EQ(preprocessing_summary(o),
            "224x224x3 (H x W x C), resize linear, scale [0, 1], no mean/std, RGB, NCHW, float32");
  o.resize_method = ResizeMethod::kLetterbox;
  o.mean = {0.485f, 0.456f, 0.406f};
  o.std = {0.229f, 0.224f, 0.225f};
  o.color_order = ColorOrder::kBGR;
  o.order = DataOrder::kNHWC;
  o.dtype = DataType::kFloat16;
  EXPECT_EQ(preprocessing_summary(o),
            "224x224x3 (H x W x C), resize letterbox (pad 114), scale [0, 1], mean 0.485 0.456 "
            "0.406, std 0.229 0.224 0.225, BGR, NHWC, float16");
  o.dtype = DataType::kUInt8;
  o.mean.clear();
  EXPECT_NE(preprocessing_summary(o).find("scale none (0..255), mean 0, std 0.229"),
            std::string::npos);
  o.input_scale = std::pair<float, float>{-1.0f, 1.0f};
  EXPECT_NE(preprocessing_summary(o).find("scale [-1, 1]"), std::string::npos);
}

class CalibrationImagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = image_model::write_image_model(dir_ / "net.onnx", 0);
    images_ = image_model::write_photos(dir_ / "images", 2);
  }
  QuantizeOptions opts() const {
    QuantizeOptions o;
    o.onnx_path = model_;
    o.output_path = dir_ / "q.onnx";
    o.calibration_data = images_;
    o.report_per_tensor = true;
    o.op_types_to_quantize = {"Conv"};  // forced: its 3 input channels are under the rule's 16
    return o;
  }
  static double input_amax(const QuantizeResult& r) {
    for (const auto& t : r.tensors)
      if (t.name == "x") return t.amax;
    ADD_FAILURE() << "no report for the input x";
    return 0;
  }
  TempDir dir_;
  fs::path model_, images_;
};

TEST_F(CalibrationImagesTest, QuantizeAppliesAndReportsThePreprocessing) {
  const QuantizeResult plain = quantize_onnx(opts());
  EXPECT_EQ(plain.preprocessing,
            "16x16x3 (H x W x C), resize linear, scale [0, 1], no mean/std, RGB, NCHW, float32");
  EXPECT_LE(input_amax(plain), 1.0);
  EXPECT_NE(read_file(plain.report_path).find("\"preprocessing\": \"16x16x3 (H x W x C)"),
            std::string::npos);
  QuantizeOptions o = opts();
  o.image_preprocess.mean = {0.5f};
  o.image_preprocess.std = {0.25f};
  o.image_preprocess.resize_method = ResizeMethod::kLetterbox;
  const QuantizeResult normalized = quantize_onnx(o);
  EXPECT_EQ(normalized.preprocessing,
            "16x16x3 (H x W x C), resize letterbox (pad 114), scale [0, 1], mean 0.5, std 0.25, "
            "RGB, NCHW, float32");
  // (x - 0.5) / 0.25 spans [-2, 2]: the photos reach beyond 1.
  EXPECT_GT(input_amax(normalized), 1.5);
  EXPECT_LE(input_amax(normalized), 2.0 + 1e-6);
}

TEST_F(CalibrationImagesTest, QuantizeRefusesAShapeThatDoesNotFit) {
  QuantizeOptions o = opts();
  o.image_preprocess.shape = {32, 32, 3};
  const std::string e = quantize_testing::quantize_error(o);
  EXPECT_NE(e.find("does not fit the model input 'x'"), std::string::npos) << e;
}

TEST_F(CalibrationImagesTest, BuildTakesTheShapeFromTheModelAndReportsThePreprocessing) {
  ImageBatcherOptions images;
  images.image_dir = images_;
  images.dtype = DataType::kUndefined;
  images.batch_size = 2;
  images.mean = {0.5f};
  const builder::BuildResult r = builder::build_engine(
      model_, dir_ / "net.engine", {.int8 = true, .data_batcher = images, .backend = "cpu"});
  EXPECT_EQ(r.calibration_preprocessing,
            "16x16x3 (H x W x C), resize letterbox (pad 114), scale [0, 1], mean 0.5, std 1, RGB, "
            "NCHW, float32");
  EXPECT_GT(r.layers_per_precision.count("int8"), 0u);
}

// The CLI: quantize takes generate_calibration's flags and prints the preprocessing line; build
// prints it too; a flag given for a .npy is said to be ignored.
TEST_F(CalibrationImagesTest, CliPrintsThePreprocessing) {
  const std::string cli = TRTUTILS_CLI;
  auto r = test_util::run_command(cli + " quantize --onnx " + model_.string() + " --output " +
                                  (dir_ / "q.onnx").string() + " --calibration_data " +
                                  images_.string() +
                                  " --resize_method letterbox --mean 0.485 0.456 0.406 --std "
                                  "0.229 0.224 0.225 --input_dtype float32");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("preprocessing: 16x16x3 (H x W x C), resize letterbox (pad 114), scale "
                          "[0, 1], mean 0.485 0.456 0.406, std 0.229 0.224 0.225, RGB, NCHW, "
                          "float32\n"),
            std::string::npos)
      << r.output;
  r = test_util::run_command(cli + " build --onnx " + model_.string() + " --output " +
                             (dir_ / "net.engine").string() +
                             " --backend cpu --int8 --calibration_dir " + images_.string() +
                             " --batch_size 2 --resize_method linear");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("calibration preprocessing: 16x16x3 (H x W x C), resize linear, scale "
                          "[0, 1], no mean/std, RGB, NCHW, float32\n"),
            std::string::npos)
      << r.output;
  Tensor calib(DataType::kFloat32, {4, 3, 16, 16});
  for (int64_t i = 0; i < calib.numel(); ++i) calib.data<float>()[i] = 0.01f * (i % 97);
  npy_save(dir_ / "calib.npy", calib);
  r = test_util::run_command(cli + " quantize --onnx " + model_.string() + " --output " +
                             (dir_ / "q.onnx").string() + " --calibration_data " +
                             (dir_ / "calib.npy").string() + " --mean 0.5 --std 0.2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--mean, --std apply to an image directory only"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("preprocessing:"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace trtutils
