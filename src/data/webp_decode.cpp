// WebP (still images) through libwebp's simple decoding API.
#include <webp/decode.h>

#include "core/check.h"
#include "data/codecs.h"

namespace trtutils::data {

Image decode_webp(std::span<const uint8_t> bytes) {
  WebPBitstreamFeatures f;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &f);
  TRT_CHECK(status != VP8_STATUS_NOT_ENOUGH_DATA, ErrorCode::kInvalidArgument,
            "corrupt WebP: file is truncated");
  TRT_CHECK(status == VP8_STATUS_OK, ErrorCode::kInvalidArgument,
            "corrupt WebP (libwebp status {})", static_cast<int>(status));
  TRT_CHECK(!f.has_animation, ErrorCode::kNotSupported,
            "animated WebP is not supported; extract a frame as a still image");
  Image img = make_image(f.width, f.height, f.has_alpha ? 4 : 3, "WebP");
  const int stride = static_cast<int>(img.width * img.channels);
  const uint8_t* ok = f.has_alpha ? WebPDecodeRGBAInto(bytes.data(), bytes.size(),
                                                       img.pixels.data(), img.pixels.size(), stride)
                                  : WebPDecodeRGBInto(bytes.data(), bytes.size(), img.pixels.data(),
                                                      img.pixels.size(), stride);
  TRT_CHECK(ok != nullptr, ErrorCode::kInvalidArgument,
            "corrupt WebP: the image data does not decode");
  return img;
}

}  // namespace trtutils::data
