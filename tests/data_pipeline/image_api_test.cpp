// The public image helpers (include/trtutils/image.h) and the detection drawing of detector.h:
// what `trtutils detect` writes through the public headers.
#include <gtest/gtest.h>

#include <set>

#include "fixtures.h"
#include "trtutils/detector.h"
#include "trtutils/image.h"
#include "trtutils/status.h"

namespace trtutils::testing_data {
namespace {

Image solid(int64_t w, int64_t h, int channels, uint8_t v) {
  Image img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.pixels.assign(static_cast<size_t>(w * h * channels), v);
  return img;
}

TEST(ImageApi, ConvertsChannels) {
  const Image gray = solid(4, 2, 1, 77);
  const Image rgb = convert_image_channels(gray, 3);
  EXPECT_EQ(rgb.channels, 3);
  EXPECT_EQ(rgb.pixels.size(), 4u * 2 * 3);
  for (uint8_t p : rgb.pixels) EXPECT_EQ(p, 77);
  const Image rgba = convert_image_channels(rgb, 4);
  EXPECT_EQ(rgba.pixels[3], 255);  // no alpha: opaque
  EXPECT_EQ(convert_image_channels(rgba, 1).pixels[0], 77);
}

TEST(ImageApi, RefusesBadImagesAndChannelCounts) {
  EXPECT_THROW(convert_image_channels(solid(2, 2, 3, 0), 2), Error);
  Image short_pixels = solid(2, 2, 3, 0);
  short_pixels.pixels.pop_back();
  EXPECT_THROW(convert_image_channels(short_pixels, 1), Error);
  EXPECT_THROW(convert_image_channels(solid(2, 2, 5, 0), 3), Error);
  EXPECT_THROW(convert_image_channels(Image{}, 3), Error);
}

TEST(ImageApi, WritesAPngThatLoadsBack) {
  TempDir dir;
  Image img = solid(5, 3, 3, 0);
  img.row(1)[2 * 3 + 0] = 200;  // (2, 1) red
  write_png(dir / "x.png", img);
  const Image back = load_image(dir / "x.png");
  EXPECT_EQ(back.width, 5);
  EXPECT_EQ(back.height, 3);
  ASSERT_EQ(back.channels, 3);
  EXPECT_EQ(back.pixels, img.pixels);
  // Gray is written as RGB.
  write_png(dir / "g.png", solid(2, 2, 1, 9));
  EXPECT_EQ(load_image(dir / "g.png").channels, 3);
  EXPECT_THROW(write_png(dir / "no_such_dir" / "x.png", img), Error);
}

TEST(ImageApi, ListsTheImagesOfAFolder) {
  TempDir dir;
  dir.add("gray.png", "b.png");
  dir.add("gray.jpg", "a.JPG");
  write_bytes(dir / "notes.txt", "x");
  const auto files = list_image_files(dir.path());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].filename(), "a.JPG");
  EXPECT_EQ(files[1].filename(), "b.png");
  EXPECT_THROW(list_image_files(dir / "missing"), Error);
}

TEST(DetectionDrawing, ColoursCycleByClass) {
  std::set<std::array<uint8_t, 3>> seen;
  for (int64_t c = 0; c < 18; ++c) seen.insert(detection_color(c));
  EXPECT_EQ(seen.size(), 18u);
  EXPECT_EQ(detection_color(18), detection_color(0));
  EXPECT_EQ(detection_color(-1), detection_color(17));
}

TEST(DetectionDrawing, OutlinesEachBoxInItsColour) {
  const Image img = solid(100, 80, 1, 128);
  const Detection d{.x1 = 10, .y1 = 40, .x2 = 60, .y2 = 70, .score = 0.5f, .class_id = 2};
  const Image out = draw_detections(img, {d}, {"a", "b", "car"});
  EXPECT_EQ(out.width, 100);
  EXPECT_EQ(out.height, 80);
  ASSERT_EQ(out.channels, 3);
  const auto c = detection_color(2);
  auto at = [&](int x, int y) {
    const uint8_t* p = out.row(y) + x * 3;
    return std::array<uint8_t, 3>{p[0], p[1], p[2]};
  };
  EXPECT_EQ(at(30, 69), c);                                        // the bottom edge (y2 - 1)
  EXPECT_EQ(at(59, 55), c);                                        // the right edge (x2 - 1)
  EXPECT_EQ(at(30, 55), (std::array<uint8_t, 3>{128, 128, 128}));  // inside: the image
  EXPECT_EQ(at(5, 5), (std::array<uint8_t, 3>{128, 128, 128}));    // away from the box
  // No detections: the image as RGB.
  EXPECT_EQ(draw_detections(img, {}).pixels, convert_image_channels(img, 3).pixels);
}

}  // namespace
}  // namespace trtutils::testing_data
