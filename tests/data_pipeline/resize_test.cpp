// Linear and letterbox resizing against OpenCV (cv2.resize INTER_LINEAR, and the ultralytics
// letterbox built from cv2.resize + cv2.copyMakeBorder) on real photos: references in
// tests/data/images from make_fixtures.py. OpenCV rounds to 8 bits, we do not: within 1/255.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "data/codecs.h"
#include "data/preprocess.h"
#include "data_pipeline/fixtures.h"

namespace trtutils {
namespace {

using namespace testing_data;

const char* const kPhotos[] = {"astronaut", "coffee", "chelsea"};

TEST(ResizeTest, AxisTapsFollowHalfPixelCentres) {
  // Upscale 2 -> 4: positions -0.25, 0.25, 0.75, 1.25 -> clamped at both edges.
  const data::LinearAxis up = data::linear_axis(2, 4);
  EXPECT_EQ(up.i0, (std::vector<int32_t>{0, 0, 0, 1}));
  EXPECT_EQ(up.i1, (std::vector<int32_t>{1, 1, 1, 1}));
  EXPECT_EQ(up.w, (std::vector<float>{0.0f, 0.25f, 0.75f, 0.0f}));
  // Downscale 4 -> 2: positions 0.5 and 2.5.
  const data::LinearAxis down = data::linear_axis(4, 2);
  EXPECT_EQ(down.i0, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(down.w, (std::vector<float>{0.5f, 0.5f}));
  // Same size: a copy.
  const data::LinearAxis same = data::linear_axis(5, 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(same.i0[i], i);
    EXPECT_EQ(same.w[i], 0.0f);
  }
  // One source pixel: replicated.
  const data::LinearAxis one = data::linear_axis(1, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(one.i0[i], 0);
    EXPECT_EQ(one.i1[i], 0);
  }
}

TEST(ResizeTest, LinearMatchesOpenCVOnPhotos) {
  for (const char* p : kPhotos) {
    const data::Image img = data::load_image(fixture(std::string("photo_") + p + ".png"));
    for (auto [h, w] : {std::pair{48, 64}, std::pair{130, 170}, std::pair{31, 97}}) {
      const Tensor want = load_ref(fmt::format("ref_{}_linear_{}x{}.npy", p, h, w));
      ASSERT_EQ(want.shape(), (Shape{h, w, 3}));
      const std::vector<float> got = data::resize_linear(img, h, w);
      ASSERT_EQ(static_cast<int64_t>(got.size()), want.numel());
      const double d = max_abs_diff(got.data(), want.data<uint8_t>(), want.numel());
      EXPECT_LE(d, 1.0) << p << " " << h << "x" << w;
      RecordProperty(fmt::format("max_diff_{}_{}x{}", p, h, w), fmt::format("{:.3f}", d));
    }
  }
}

data::RenderSpec raw_spec(int64_t h, int64_t w, ResizeMethod method,
                          DataType dtype = DataType::kFloat32) {
  data::RenderSpec s;
  s.height = h;
  s.width = w;
  s.channels = 3;
  s.method = method;
  s.order = DataOrder::kNHWC;
  s.dtype = dtype;
  return s;  // scale 1, bias 0: values in 0..255
}

TEST(ResizeTest, LetterboxMatchesUltralyticsOnPhotos) {
  for (const char* p : kPhotos) {
    const data::Image img = data::load_image(fixture(std::string("photo_") + p + ".png"));
    for (auto [h, w] : {std::pair{64, 64}, std::pair{100, 60}, std::pair{57, 150}}) {
      const Tensor want = load_ref(fmt::format("ref_{}_letterbox_{}x{}.npy", p, h, w));
      std::vector<float> got(static_cast<size_t>(h * w * 3));
      data::render_image(img, raw_spec(h, w, ResizeMethod::kLetterbox), got.data());
      EXPECT_LE(max_abs_diff(got.data(), want.data<uint8_t>(), want.numel()), 1.0)
          << p << " " << h << "x" << w;
      // The padding is exact: wherever OpenCV has 114 on a border row/column, so do we.
      const data::LetterboxBox box = data::letterbox_box(img.height, img.width, h, w);
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const bool inside =
              y >= box.top && y < box.top + box.height && x >= box.left && x < box.left + box.width;
          if (!inside) {
            ASSERT_EQ(got[(y * w + x) * 3], 114.0f) << p << " at " << y << "," << x;
            ASSERT_EQ(want.data<uint8_t>()[(y * w + x) * 3], 114) << p << " at " << y << "," << x;
          }
        }
    }
  }
}

TEST(ResizeTest, Uint8OutputIsRoundedOpenCV) {
  const data::Image img = data::load_image(fixture("photo_coffee.png"));
  const Tensor want = load_ref("ref_coffee_linear_48x64.npy");
  std::vector<uint8_t> got(48 * 64 * 3);
  data::render_image(img, raw_spec(48, 64, ResizeMethod::kLinear, DataType::kUInt8), got.data());
  EXPECT_LE(max_abs_diff(got.data(), want.data<uint8_t>(), want.numel()), 1.0);
}

TEST(ResizeTest, LetterboxGeometryRoundsLikePython) {
  // 96x128 into 100x60: r = 0.46875 -> 45x60, top = floor(55 / 2) = 27.
  data::LetterboxBox b = data::letterbox_box(96, 128, 100, 60);
  EXPECT_EQ(b.height, 45);
  EXPECT_EQ(b.width, 60);
  EXPECT_EQ(b.top, 27);
  EXPECT_EQ(b.left, 0);
  // 5x8 into 8x4: r = 0.5, round(2.5) = 2 (half to even), top = round(3 - 0.1) = 3.
  b = data::letterbox_box(5, 8, 8, 4);
  EXPECT_EQ(b.height, 2);
  EXPECT_EQ(b.width, 4);
  EXPECT_EQ(b.top, 3);
  // 7x7 into 10x10 (upscale): r = 10/7, 10x10, no padding.
  b = data::letterbox_box(7, 7, 10, 10);
  EXPECT_EQ(b.height, 10);
  EXPECT_EQ(b.top, 0);
  // Extreme aspect: never a zero-sized image.
  b = data::letterbox_box(1, 10000, 64, 64);
  EXPECT_EQ(b.height, 1);
  EXPECT_EQ(b.width, 64);
  EXPECT_EQ(b.top, 31);
}

TEST(ResizeTest, ChannelConversion) {
  data::Image rgb = data::make_image(2, 1, 3, "t");
  rgb.pixels = {255, 0, 0, 10, 200, 30};
  const data::Image gray = data::convert_channels(rgb, 1);
  EXPECT_EQ(gray.pixels,
            (std::vector<uint8_t>{76, 124}));  // 0.299 * 255; .299*10 + .587*200 + .114*30
  const data::Image rgba = data::convert_channels(rgb, 4);
  EXPECT_EQ(rgba.pixels, (std::vector<uint8_t>{255, 0, 0, 255, 10, 200, 30, 255}));
  data::Image ga = data::make_image(1, 1, 2, "t");
  ga.pixels = {7, 9};
  EXPECT_EQ(data::convert_channels(ga, 3).pixels, (std::vector<uint8_t>{7, 7, 7}));
  EXPECT_EQ(data::convert_channels(ga, 4).pixels, (std::vector<uint8_t>{7, 7, 7, 9}));
  EXPECT_EQ(data::convert_channels(rgba, 3).pixels, rgb.pixels);
}

}  // namespace
}  // namespace trtutils
