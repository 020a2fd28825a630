// 8-bit images as the decoders produce them and the detector / classifier take them.
//
//   trtutils::Image img = trtutils::load_image("street.jpg");   // JPEG, PNG, BMP, WebP
//
// Pixels are interleaved (HWC), rows top to bottom with no padding; channels: 1 gray,
// 2 gray + alpha, 3 RGB, 4 RGBA (in that order whatever the model wants: the preprocessing
// swaps to BGR when asked).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace trtutils {

struct Image {
  int64_t width = 0;
  int64_t height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // width * height * channels bytes

  uint8_t* row(int64_t y) { return pixels.data() + y * width * channels; }
  const uint8_t* row(int64_t y) const { return pixels.data() + y * width * channels; }
};

// Reads and decodes an image file (the content decides the format; JPEG EXIF orientation is
// applied). Throws Error: kIO when it cannot be read, kInvalidArgument for corrupt data,
// kNotSupported for valid files no decoder handles, kOutOfRange over 65535 pixels a side or
// 2^27 pixels in all; the message names the file.
Image load_image(const std::filesystem::path& path);

// `image` with `channels` channels (1, 3 or 4), by ImageBatcher's rules (image_batcher.h):
// gray <-> colour by BT.601 luma / replication, an alpha channel dropped (not composited) unless
// 4 are asked, where images without alpha get 255.
Image convert_image_channels(const Image& image, int channels);

// `image` as an 8-bit RGB PNG (convert_image_channels(image, 3)), written atomically. Error(kIO)
// naming the path when it cannot be written; kInvalidArgument / kOutOfRange for an image over
// 16384 pixels a side or 2^25 pixels in all.
void write_png(const std::filesystem::path& path, const Image& image);

// The image files of `dir` that ImageBatcher takes (*.jpg *.jpeg *.png *.bmp *.webp in any case,
// not starting with '.'; regular files, not recursive), in byte order of their names.
// Error(kIO) for a missing or unlistable folder, kInvalidArgument for a file or a folder without
// images.
std::vector<std::filesystem::path> list_image_files(const std::filesystem::path& dir);

}  // namespace trtutils
