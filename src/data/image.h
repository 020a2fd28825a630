// Decoded 8-bit images and the size limits that every decoder enforces before allocating, so
// that an untrusted file can never ask for unbounded memory.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace trtutils::data {

// Width and height of a decoded image: at most kMaxImageSide each and kMaxImagePixels in all
// (134 megapixels, about 400 MB as RGB).
inline constexpr int64_t kMaxImageSide = 65535;
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 27;

// Rows top to bottom, pixels interleaved (HWC), no row padding.
// channels: 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA.
struct Image {
  int64_t width = 0;
  int64_t height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;

  uint8_t* row(int64_t y) { return pixels.data() + y * width * channels; }
  const uint8_t* row(int64_t y) const { return pixels.data() + y * width * channels; }
};

// Checks the limits above (Error(kOutOfRange) naming `what` beyond them, kInvalidArgument for a
// zero or negative size) and allocates a zeroed image.
Image make_image(int64_t width, int64_t height, int channels, std::string_view what);

}  // namespace trtutils::data
