// detection_color and draw_detections (include/trtutils/detector.h): the boxes `trtutils detect`
// draws, on the chart canvas (core/png_chart.h) and its built-in font.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/png_chart.h"
#include "data/preprocess.h"
#include "trtutils/detector.h"

namespace trtutils {

namespace {

// Box colours by class id (cycled): distinct hues that read on photos.
constexpr chart::Rgb kDetectionPalette[] = {
    {255, 56, 56},  {255, 157, 151}, {255, 112, 31}, {255, 178, 29}, {207, 210, 49},
    {72, 249, 10},  {26, 147, 52},   {0, 212, 187},  {44, 153, 168}, {0, 194, 255},
    {52, 69, 147},  {100, 115, 255}, {0, 24, 236},   {132, 56, 255}, {82, 0, 133},
    {203, 56, 255}, {255, 149, 200}, {255, 55, 199}};

chart::Rgb palette_color(int64_t class_id) {
  constexpr int64_t n = sizeof(kDetectionPalette) / sizeof(kDetectionPalette[0]);
  return kDetectionPalette[((class_id % n) + n) % n];
}

std::string detection_label(const std::vector<std::string>& labels, int64_t class_id) {
  if (class_id >= 0 && class_id < static_cast<int64_t>(labels.size()))
    return labels[static_cast<size_t>(class_id)];
  return fmt::format("class {}", class_id);
}

}  // namespace

std::array<uint8_t, 3> detection_color(int64_t class_id) {
  const chart::Rgb c = palette_color(class_id);
  return {c.r, c.g, c.b};
}

Image draw_detections(const Image& image, const std::vector<Detection>& dets,
                      const std::vector<std::string>& labels) {
  Image rgb = convert_image_channels(image, 3);
  chart::Canvas c = chart::Canvas::from_rgb(static_cast<int>(image.width),
                                            static_cast<int>(image.height), std::move(rgb.pixels));
  const int side = std::min(c.width(), c.height());
  const int thick = std::max(1, side / 300);
  const int scale = std::max(1, side / 360);
  // Lowest score first, so that the best boxes end on top.
  for (auto it = dets.rbegin(); it != dets.rend(); ++it) {
    const Detection& d = *it;
    const chart::Rgb color = palette_color(d.class_id);
    const int x1 = std::clamp(static_cast<int>(std::floor(d.x1)), 0, c.width() - 1);
    const int y1 = std::clamp(static_cast<int>(std::floor(d.y1)), 0, c.height() - 1);
    const int x2 = std::clamp(static_cast<int>(std::ceil(d.x2)) - 1, x1, c.width() - 1);
    const int y2 = std::clamp(static_cast<int>(std::ceil(d.y2)) - 1, y1, c.height() - 1);
    for (int t = 0; t < thick && x1 + t <= x2 - t && y1 + t <= y2 - t; ++t)
      c.rect(x1 + t, y1 + t, x2 - t, y2 - t, color);
    const std::string text = fmt::format("{} {:.2f}", detection_label(labels, d.class_id), d.score);
    const int tw = chart::text_width(text, scale) + 2 * scale;
    const int th = (chart::kGlyphH + chart::kDescent + 2) * scale;
    const int ty = y1 - th >= 0 ? y1 - th : y1;
    c.fill_rect(x1, ty, x1 + tw - 1, ty + th - 1, color);
    const bool light = color.r * 299 + color.g * 587 + color.b * 114 > 140'000;
    c.text(x1 + scale, ty + scale, text, light ? chart::colors::kBlack : chart::colors::kWhite,
           scale);
  }
  Image out;
  out.width = c.width();
  out.height = c.height();
  out.channels = 3;
  out.pixels = c.rgb();
  return out;
}

}  // namespace trtutils
