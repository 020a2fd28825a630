// The image helpers of include/trtutils/image.h beyond load_image (image_decode.cpp):
// channel conversion, PNG writing and the image files of a folder, over the internal data/ and
// core/png_chart code.
#include <utility>

#include "core/check.h"
#include "core/png_chart.h"
#include "data/codecs.h"
#include "data/preprocess.h"
#include "trtutils/image.h"

namespace trtutils {

namespace {

// An Image from a caller is checked before its pixels are read.
void check_image(const Image& image) {
  TRT_CHECK_ARG(image.width >= 1 && image.height >= 1 && image.channels >= 1 && image.channels <= 4,
                "image {}x{} with {} channels: expected a positive size and 1 to 4 channels",
                image.width, image.height, image.channels);
  TRT_CHECK_ARG(image.width <= data::kMaxImageSide && image.height <= data::kMaxImageSide &&
                    image.width * image.height <= data::kMaxImagePixels,
                "image {}x{}: over the limits ({} pixels a side, {} in all)", image.width,
                image.height, data::kMaxImageSide, data::kMaxImagePixels);
  TRT_CHECK_ARG(
      image.pixels.size() == static_cast<size_t>(image.width * image.height * image.channels),
      "image {}x{}x{}: {} bytes of pixels, {} expected", image.width, image.height, image.channels,
      image.pixels.size(), image.width * image.height * image.channels);
}

}  // namespace

Image convert_image_channels(const Image& image, int channels) {
  TRT_CHECK_ARG(channels == 1 || channels == 3 || channels == 4,
                "cannot convert an image to {} channels: 1, 3 or 4", channels);
  check_image(image);
  return data::convert_channels(image, channels);
}

void write_png(const std::filesystem::path& path, const Image& image) {
  Image rgb = convert_image_channels(image, 3);
  chart::write_png(
      path, chart::Canvas::from_rgb(static_cast<int>(rgb.width), static_cast<int>(rgb.height),
                                    std::move(rgb.pixels)));
}

std::vector<std::filesystem::path> list_image_files(const std::filesystem::path& dir) {
  return data::list_image_files(dir);
}

}  // namespace trtutils
