// Format sniffing, the size limits, EXIF orientation and the decode_image/load_image front end.
#include <cstring>

#include "core/check.h"
#include "data/codecs.h"
#include "trtutils/file_util.h"

namespace trtutils::data {

Image make_image(int64_t width, int64_t height, int channels, std::string_view what) {
  TRT_CHECK_ARG(width > 0 && height > 0, "{}: invalid image size {}x{}", what, width, height);
  TRT_CHECK(channels >= 1 && channels <= 4, ErrorCode::kInternal, "{}: {} channels", what,
            channels);
  TRT_CHECK(width <= kMaxImageSide && height <= kMaxImageSide && width * height <= kMaxImagePixels,
            ErrorCode::kOutOfRange,
            "{}: image of {}x{} pixels is over the limit ({} per side, {} pixels in all)", what,
            width, height, kMaxImageSide, kMaxImagePixels);
  Image img;
  img.width = width;
  img.height = height;
  img.channels = channels;
  img.pixels.resize(static_cast<size_t>(width * height * channels));
  return img;
}

ImageFormat sniff_image_format(std::span<const uint8_t> b) {
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::kJpeg;
  static constexpr uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (b.size() >= 8 && std::memcmp(b.data(), kPng, 8) == 0) return ImageFormat::kPng;
  if (b.size() >= 2 && b[0] == 'B' && b[1] == 'M') return ImageFormat::kBmp;
  if (b.size() >= 12 && std::memcmp(b.data(), "RIFF", 4) == 0 &&
      std::memcmp(b.data() + 8, "WEBP", 4) == 0)
    return ImageFormat::kWebp;
  return ImageFormat::kUnknown;
}

int exif_orientation(std::span<const uint8_t> p) {
  // "Exif\0\0", then a TIFF header: byte order ("II" / "MM"), 42, offset of IFD0 from the TIFF
  // start. IFD0: entry count, 12-byte entries (tag, type, count, value).
  if (p.size() < 6 + 8 || std::memcmp(p.data(), "Exif\0\0", 6) != 0) return 1;
  const std::span<const uint8_t> t = p.subspan(6);
  bool le;
  if (t[0] == 'I' && t[1] == 'I') {
    le = true;
  } else if (t[0] == 'M' && t[1] == 'M') {
    le = false;
  } else {
    return 1;
  }
  auto u16 = [&](size_t off) -> uint32_t {
    return le ? t[off] | (t[off + 1] << 8) : (t[off] << 8) | t[off + 1];
  };
  auto u32 = [&](size_t off) -> uint64_t {
    return le ? (uint64_t{u16(off + 2)} << 16) | u16(off)
              : (uint64_t{u16(off)} << 16) | u16(off + 2);
  };
  if (u16(2) != 42) return 1;
  const uint64_t ifd = u32(4);
  if (ifd + 2 > t.size()) return 1;
  const uint64_t count = u16(ifd);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t e = ifd + 2 + 12 * i;
    if (e + 12 > t.size()) return 1;
    if (u16(e) != 0x0112) continue;
    if (u16(e + 2) != 3 || u32(e + 4) < 1) return 1;  // SHORT, at least one value
    const uint32_t v = u16(e + 8);
    return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
  }
  return 1;
}

Image apply_orientation(Image src, int orientation) {
  if (orientation < 2 || orientation > 8) return src;
  const int64_t w = src.width, h = src.height;
  const int c = src.channels;
  const bool swap = orientation >= 5;
  Image dst;
  dst.width = swap ? h : w;
  dst.height = swap ? w : h;
  dst.channels = c;
  dst.pixels.resize(src.pixels.size());
  // For each destination pixel (x, y), the source column/row it comes from.
  for (int64_t y = 0; y < dst.height; ++y) {
    uint8_t* out = dst.row(y);
    for (int64_t x = 0; x < dst.width; ++x) {
      int64_t sx = 0, sy = 0;
      switch (orientation) {
        case 2:
          sx = w - 1 - x;
          sy = y;
          break;  // mirrored horizontally
        case 3:
          sx = w - 1 - x;
          sy = h - 1 - y;
          break;  // rotated 180
        case 4:
          sx = x;
          sy = h - 1 - y;
          break;  // mirrored vertically
        case 5:
          sx = y;
          sy = x;
          break;  // transposed
        case 6:
          sx = y;
          sy = h - 1 - x;
          break;  // rotate 90 clockwise to view
        case 7:
          sx = w - 1 - y;
          sy = h - 1 - x;
          break;  // transversed
        case 8:
          sx = w - 1 - y;
          sy = x;
          break;  // rotate 90 counter-clockwise to view
        default:
          break;
      }
      std::memcpy(out + x * c, src.row(sy) + sx * c, static_cast<size_t>(c));
    }
  }
  return dst;
}

Image decode_image(std::span<const uint8_t> bytes, std::string_view name) {
  try {
    switch (sniff_image_format(bytes)) {
      case ImageFormat::kJpeg: {
        int orientation = 1;
        Image img = decode_jpeg(bytes, &orientation);
        return apply_orientation(std::move(img), orientation);
      }
      case ImageFormat::kPng:
        return decode_png(bytes);
      case ImageFormat::kBmp:
        return decode_bmp(bytes);
      case ImageFormat::kWebp:
        return decode_webp(bytes);
      case ImageFormat::kUnknown:
        break;
    }
    TRT_THROW(ErrorCode::kInvalidArgument,
              "not a JPEG, PNG, BMP or WebP image ({} bytes, unknown signature)", bytes.size());
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("image '{}': {}", name, e.what()));
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kOutOfRange,
                fmt::format("image '{}': out of memory while decoding", name));
  }
}

Image load_image(const std::filesystem::path& path) {
  const std::string bytes = read_file(path, uint64_t{1} << 30);
  return decode_image({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                      path.string());
}

}  // namespace trtutils::data

namespace trtutils {

Image load_image(const std::filesystem::path& path) {
  return data::load_image(path);
}

}  // namespace trtutils
