// Detector and Classifier (include/trtutils/detector.h) on tiny engines whose outputs are known
// constants: boxes mapped back to the original image through letterbox and linear resizes
// (landscape, portrait, non-integer scales), the EfficientNMS output check, top-k and softmax.
#include "trtutils/detector.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

#include "engine/detector_models.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

Image solid(int64_t w, int64_t h, int channels, std::vector<uint8_t> color) {
  Image img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.pixels.resize(static_cast<size_t>(w * h * channels));
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = color[i % color.size()];
  return img;
}

// One engine for every case: anchor / class i is case i's box in 640 x 640 network pixels,
// written out by hand from the letterbox rule (r = min(640 / h, 640 / w), resized
// round(w r) x round(h r), centred with the odd pixel right / below) or the linear stretch.
struct GeometryCase {
  const char* name;
  int64_t width, height;
  ResizeMethod method;
  std::array<float, 4> original;  // the box in the image, x1 y1 x2 y2
  std::array<float, 4> network;   // where the model sees it
};

const std::vector<GeometryCase>& geometry_cases() {
  static const std::vector<GeometryCase> cases = {
      // 1280x720 -> 640x360 at top 140.
      {"letterbox_landscape",
       1280,
       720,
       ResizeMethod::kLetterbox,
       {200, 100, 600, 500},
       {100, 190, 300, 390}},
      // 720x1280 -> 360x640 at left 140.
      {"letterbox_portrait",
       720,
       1280,
       ResizeMethod::kLetterbox,
       {100, 200, 500, 600},
       {190, 100, 390, 300}},
      // x * 0.5, y * 640 / 720.
      {"linear_landscape",
       1280,
       720,
       ResizeMethod::kLinear,
       {200, 100, 600, 500},
       {100, 800.0f / 9.0f, 300, 4000.0f / 9.0f}},
      {"linear_portrait",
       720,
       1280,
       ResizeMethod::kLinear,
       {100, 200, 500, 600},
       {800.0f / 9.0f, 100, 4000.0f / 9.0f, 300}},
      // 1000x700: r = 0.64 -> 640x448 at top 96.
      {"letterbox_fractional",
       1000,
       700,
       ResizeMethod::kLetterbox,
       {123, 45, 678, 654},
       {78.72f, 124.8f, 433.92f, 514.56f}},
      // 333x999: r = 640/999 -> round(213.33) = 213 x 640, left (640 - 213) / 2 = 213; x scale
      // 213 / 333 (the rounded size, not r).
      {"letterbox_odd_portrait",
       333,
       999,
       ResizeMethod::kLetterbox,
       {10, 20, 300, 990},
       {213 + 10 * 213.0f / 333, 20 * 640.0f / 999, 213 + 300 * 213.0f / 333, 990 * 640.0f / 999}},
  };
  return cases;
}

class DetectorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("trtutils_detector_test_" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    std::vector<std::array<float, 4>> boxes;
    for (const auto& c : geometry_cases()) boxes.push_back(c.network);
    test_models::build_fixed_box_detector(*dir_, "boxes", 640, 640, boxes);
    test_models::build_fixed_logits_classifier(*dir_, "logits", {0.5f, 3.0f, 1.0f, -2.0f, 2.5f},
                                               false);
    test_models::build_fixed_logits_classifier(*dir_, "probs", {0.5f, 3.0f, 1.0f, -2.0f, 2.5f},
                                               true);
    test_models::build_channel_mean_classifier(*dir_, "means");
    test_models::build_bright_box_detector(*dir_, "bright", 640, 640);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static fs::path engine(const std::string& name) { return *dir_ / (name + ".engine"); }
  static fs::path* dir_;
};
fs::path* DetectorTest::dir_ = nullptr;

TEST_F(DetectorTest, MapsBoxesBackToTheOriginalImage) {
  const auto& cases = geometry_cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const GeometryCase& c = cases[i];
    SCOPED_TRACE(c.name);
    Detector det(engine("boxes"), {.conf_threshold = 0.3f, .resize_method = c.method});
    EXPECT_EQ(det.input_height(), 640);
    EXPECT_EQ(det.input_width(), 640);
    const std::vector<Detection> dets = det.detect(solid(c.width, c.height, 3, {90, 120, 150}));
    ASSERT_EQ(dets.size(), cases.size());
    const Detection& d = dets[i];  // scores fall with the anchor index: the engine's order
    EXPECT_EQ(d.class_id, static_cast<int64_t>(i));
    EXPECT_NEAR(d.score, 0.9f - 0.01f * static_cast<float>(i), 1e-6);
    // Exact up to float rounding; the brief allows 1 px.
    EXPECT_NEAR(d.x1, c.original[0], 0.01);
    EXPECT_NEAR(d.y1, c.original[1], 0.01);
    EXPECT_NEAR(d.x2, c.original[2], 0.01);
    EXPECT_NEAR(d.y2, c.original[3], 0.01);
    for (const Detection& o : dets) {  // every box lies inside the image
      EXPECT_TRUE(o.x1 >= 0 && o.x1 <= o.x2 && o.x2 <= static_cast<float>(c.width));
      EXPECT_TRUE(o.y1 >= 0 && o.y1 <= o.y2 && o.y2 <= static_cast<float>(c.height));
    }
    const ImageLatency& l = det.last_latency();
    EXPECT_GT(l.inference_ms, 0.0);
    EXPECT_GE(l.preprocess_ms, 0.0);
    EXPECT_EQ(l.decode_ms, 0.0);
  }
}

TEST_F(DetectorTest, NhwcUint8InputWithADynamicBatch) {
  // A 384 x 640 (H x W) uint8 NHWC input: 1000x700 -> r = min(384 / 700, 640 / 1000) = 0.5486,
  // resized round(548.57) = 549 x 384, left (640 - 549) / 2 = 45; x scale 549 / 1000,
  // y scale 384 / 700.
  const std::array<float, 4> original = {123, 45, 678, 654};
  const float sx = 549.0f / 1000, sy = 384.0f / 700;
  test_models::build_fixed_box_detector(
      *dir_, "nhwc", 384, 640,
      {{45 + original[0] * sx, original[1] * sy, 45 + original[2] * sx, original[3] * sy}}, true);
  Detector det(engine("nhwc"));
  EXPECT_EQ(det.engine().inputs()[0].shape, (std::vector<int64_t>{-1, 384, 640, 3}));
  EXPECT_EQ(det.engine().inputs()[0].dtype, DataType::kUInt8);
  EXPECT_EQ(det.input_height(), 384);
  EXPECT_EQ(det.input_width(), 640);
  const auto dets = det.detect(solid(1000, 700, 3, {10, 20, 30}));
  ASSERT_EQ(dets.size(), 1u);
  EXPECT_NEAR(dets[0].x1, original[0], 0.01);
  EXPECT_NEAR(dets[0].y1, original[1], 0.01);
  EXPECT_NEAR(dets[0].x2, original[2], 0.01);
  EXPECT_NEAR(dets[0].y2, original[3], 0.01);
}

TEST_F(DetectorTest, ConfThresholdAndChannelsAndErrors) {
  // 0.9 - 0.01 i >= 0.875 keeps i = 0, 1, 2; a gray image works as RGB.
  Detector det(engine("boxes"), {.conf_threshold = 0.875f});
  EXPECT_EQ(det.detect(solid(64, 48, 1, {7})).size(), 3u);
  EXPECT_EQ(det.detect(solid(64, 48, 4, {1, 2, 3, 255})).size(), 3u);
  Image bad = solid(4, 4, 3, {0});
  bad.pixels.pop_back();
  EXPECT_THROW(det.detect(bad), Error);
  EXPECT_THROW(Detector(engine("boxes"), {.conf_threshold = 1.5f}), Error);
  EXPECT_THROW(Detector(engine("boxes"), {.mean = {1, 2}}), Error);
  // A classifier engine has no EfficientNMS outputs: the error says how to get them.
  try {
    Detector d(engine("logits"));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("num_dets"), std::string::npos) << m;
    EXPECT_NE(m.find("build_yolo"), std::string::npos) << m;
    EXPECT_NE(m.find("logits float32 [1, 5]"), std::string::npos) << m;
  }
}

TEST_F(DetectorTest, ClassifierTopKWithSoftmax) {
  const std::vector<double> logits = {0.5, 3.0, 1.0, -2.0, 2.5};
  double z = 0;
  for (double v : logits) z += std::exp(v);
  for (const char* name : {"logits", "probs"}) {
    SCOPED_TRACE(name);
    Classifier cls(engine(name));
    const std::vector<Classification> top = cls.classify(solid(20, 10, 3, {1, 2, 3}), 3);
    EXPECT_EQ(cls.softmax_applied(), std::string(name) == "logits");
    EXPECT_EQ(cls.num_classes(), 5);
    ASSERT_EQ(top.size(), 3u);
    const int64_t want[] = {1, 4, 2};
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(top[i].class_id, want[i]);
      EXPECT_NEAR(top[i].score, std::exp(logits[static_cast<size_t>(want[i])]) / z, 1e-5);
    }
    EXPECT_EQ(cls.classify(solid(2, 2, 3, {0}), 50).size(), 5u);  // capped at the classes
    EXPECT_THROW(cls.classify(solid(2, 2, 3, {0}), 0), Error);
  }
}

TEST_F(DetectorTest, ClassifierSeesThePreprocessedImage) {
  // The model outputs the mean of each input channel: (200, 50, 0) / 255 in RGB order ...
  Classifier rgb(engine("means"));
  const Image img = solid(30, 20, 3, {200, 50, 0});
  auto top = rgb.classify(img, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].class_id, 0);
  EXPECT_EQ(top[2].class_id, 2);
  EXPECT_TRUE(rgb.softmax_applied());  // 0.78 + 0.20 + 0 is not 1
  const double e0 = std::exp(200.0 / 255), e1 = std::exp(50.0 / 255), e2 = 1.0;
  EXPECT_NEAR(top[0].score, e0 / (e0 + e1 + e2), 1e-5);
  // ... BGR swaps the channels, mean / std apply per colour.
  Classifier bgr(engine("means"), {.color_order = ColorOrder::kBGR});
  EXPECT_EQ(bgr.classify(img, 1)[0].class_id, 2);
  Classifier norm(engine("means"), {.mean = {0.5f, 0.0f, -10.0f}});
  EXPECT_EQ(norm.classify(img, 1)[0].class_id, 2);  // (0 - (-10)) / 1 = 10 is the largest
}

TEST_F(DetectorTest, FindsADrawnBoxWhereItWasDrawn) {
  // The model finds the bright pixels in its 640 x 640 input; the box must come back where it
  // was drawn in the original image, through the letterbox (exact at scale 0.5: 1280x720) or
  // within a pixel of the source at a fractional scale (1000x700: 0.64), and through linear.
  Detector det(engine("bright"), {.conf_threshold = 0.5f});
  Detector lin(engine("bright"), {.conf_threshold = 0.5f, .resize_method = ResizeMethod::kLinear});
  struct Case {
    int64_t w, h, x0, y0, x1, y1;
    float tol;
  };
  for (const Case& c :
       {Case{1280, 720, 300, 200, 500, 400, 0.0f}, Case{1000, 700, 123, 45, 678, 654, 1.6f},
        Case{333, 999, 40, 100, 300, 900, 1.6f}}) {
    const Image img = test_models::image_with_box(c.w, c.h, c.x0, c.y0, c.x1, c.y1);
    for (Detector* d : {&det, &lin}) {
      const auto dets = d->detect(img);
      ASSERT_EQ(dets.size(), 1u) << c.w << "x" << c.h;
      const float tol = d == &lin ? std::max(c.tol, 2.0f * c.h / 640.0f) : c.tol;
      EXPECT_NEAR(dets[0].x1, c.x0, tol) << c.w << "x" << c.h;
      EXPECT_NEAR(dets[0].y1, c.y0, tol) << c.w << "x" << c.h;
      EXPECT_NEAR(dets[0].x2, c.x1, tol) << c.w << "x" << c.h;
      EXPECT_NEAR(dets[0].y2, c.y1, tol) << c.w << "x" << c.h;
    }
  }
}

TEST_F(DetectorTest, LoadsImageFiles) {
  Detector det(engine("boxes"));
  EXPECT_THROW(det.detect(fs::path(*dir_ / "missing.png")), Error);
  const fs::path photo = fs::path(TRTUTILS_TEST_DATA_DIR) / "images";
  for (const auto& e : fs::directory_iterator(photo)) {
    if (e.path().extension() != ".png" && e.path().extension() != ".jpg") continue;
    const auto dets = det.detect(e.path());
    EXPECT_EQ(dets.size(), geometry_cases().size()) << e.path();
    EXPECT_GT(det.last_latency().decode_ms, 0.0);
    break;
  }
}

}  // namespace
}  // namespace trtutils
