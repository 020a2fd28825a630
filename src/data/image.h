// Decoded 8-bit images and the size limits that every decoder enforces before allocating, so
// that an untrusted file can never ask for unbounded memory.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "trtutils/image.h"

namespace trtutils::data {

// Width and height of a decoded image: at most kMaxImageSide each and kMaxImagePixels in all
// (134 megapixels, about 400 MB as RGB).
inline constexpr int64_t kMaxImageSide = 65535;
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 27;

// Rows top to bottom, pixels interleaved (HWC), no row padding (include/trtutils/image.h).
using Image = trtutils::Image;

// Checks the limits above (Error(kOutOfRange) naming `what` beyond them, kInvalidArgument for a
// zero or negative size) and allocates a zeroed image.
Image make_image(int64_t width, int64_t height, int channels, std::string_view what);

}  // namespace trtutils::data
