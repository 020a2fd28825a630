// A small BMP reader (no library on Debian decodes BMP without pulling in a toolkit). Every
// header field is validated against the file size before it is used; all offsets are 64-bit.
#include <bit>
#include <cstring>

#include "core/check.h"
#include "data/codecs.h"

namespace trtutils::data {

namespace {

constexpr uint32_t kBiRgb = 0, kBiRle8 = 1, kBiRle4 = 2, kBiBitfields = 3, kBiJpeg = 4, kBiPng = 5,
                   kBiAlphaBitfields = 6;

uint32_t rd16(const uint8_t* p) {
  return p[0] | (p[1] << 8);
}
uint32_t rd32(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t{p[3]} << 24);
}

// One channel of a BI_BITFIELDS pixel: mask position, width and the scale to 8 bits.
struct Field {
  uint32_t mask = 0;
  int shift = 0;
  int bits = 0;
  explicit Field(uint32_t m) : mask(m) {
    if (m == 0) return;
    shift = std::countr_zero(m);
    bits = std::popcount(m);
    TRT_CHECK_ARG(std::countr_one(m >> shift) == bits,
                  "corrupt BMP: colour mask {:#x} is not contiguous", m);
  }
  // Scaled to 0..255 (full scale maps to 255; wider fields keep their top 8 bits).
  uint8_t get(uint32_t px) const {
    if (mask == 0) return 0;
    const uint32_t v = (px & mask) >> shift;
    if (bits >= 8) return static_cast<uint8_t>(v >> (bits - 8));
    const uint32_t maxv = (1u << bits) - 1;
    return static_cast<uint8_t>((v * 255 + maxv / 2) / maxv);
  }
};

}  // namespace

Image decode_bmp(std::span<const uint8_t> b) {
  const uint64_t size = b.size();
  TRT_CHECK_ARG(size >= 14 + 12, "corrupt BMP: file is truncated ({} bytes)", size);
  const uint64_t data_offset = rd32(&b[10]);
  const uint64_t hsize = rd32(&b[14]);
  TRT_CHECK_ARG(14 + hsize <= size, "corrupt BMP: header of {} bytes in a file of {} bytes", hsize,
                size);

  int64_t width = 0, height = 0;
  uint32_t bits = 0, compression = kBiRgb, colors_used = 0;
  uint32_t masks[4] = {0, 0, 0, 0};  // R, G, B, A
  uint64_t palette_offset = 14 + hsize;
  int palette_entry = 4;
  if (hsize == 12) {  // BITMAPCOREHEADER (OS/2 1.x)
    width = rd16(&b[18]);
    height = static_cast<int16_t>(rd16(&b[20]));
    bits = rd16(&b[24]);
    palette_entry = 3;
  } else if (hsize == 40 || hsize == 52 || hsize == 56 || hsize == 108 || hsize == 124) {
    width = static_cast<int32_t>(rd32(&b[18]));
    height = static_cast<int32_t>(rd32(&b[22]));
    bits = rd16(&b[28]);
    compression = rd32(&b[30]);
    colors_used = rd32(&b[46]);
    if (hsize >= 52) {
      for (int i = 0; i < 3; ++i) masks[i] = rd32(&b[54 + 4 * i]);
      if (hsize >= 56) masks[3] = rd32(&b[66]);
    } else if (compression == kBiBitfields || compression == kBiAlphaBitfields) {
      // A 40-byte header is followed by the masks (3, or 4 with alpha).
      const int n = compression == kBiAlphaBitfields ? 4 : 3;
      TRT_CHECK_ARG(palette_offset + 4 * n <= size,
                    "corrupt BMP: colour masks past the end of the file");
      for (int i = 0; i < n; ++i) masks[i] = rd32(&b[palette_offset + 4 * i]);
      palette_offset += 4 * n;
    }
  } else {
    TRT_THROW(ErrorCode::kNotSupported,
              "BMP header of {} bytes (OS/2 2.x or unknown) is not supported", hsize);
  }

  TRT_CHECK(compression != kBiRle8 && compression != kBiRle4, ErrorCode::kNotSupported,
            "RLE-compressed BMP is not supported; convert it to PNG");
  TRT_CHECK(compression != kBiJpeg && compression != kBiPng, ErrorCode::kNotSupported,
            "BMP with embedded JPEG/PNG data is not supported");
  TRT_CHECK_ARG(
      compression == kBiRgb || compression == kBiBitfields || compression == kBiAlphaBitfields,
      "corrupt BMP: unknown compression {}", compression);
  const bool top_down = height < 0;
  height = top_down ? -height : height;
  const bool paletted = bits == 1 || bits == 4 || bits == 8;
  TRT_CHECK(paletted || bits == 16 || bits == 24 || bits == 32, ErrorCode::kNotSupported,
            "BMP with {} bits per pixel is not supported", bits);
  TRT_CHECK_ARG(compression == kBiRgb || bits == 16 || bits == 32,
                "corrupt BMP: bit fields with {} bits per pixel", bits);
  TRT_CHECK_ARG(width > 0 && height > 0, "corrupt BMP: invalid size {}x{}", width, height);
  TRT_CHECK(width <= kMaxImageSide && height <= kMaxImageSide && width * height <= kMaxImagePixels,
            ErrorCode::kOutOfRange, "BMP of {}x{} pixels is over the limit", width, height);

  // Palette: BGR(X) entries; missing entries (indices past the palette) read as black.
  uint8_t palette[256][3] = {};
  bool gray = true;
  if (paletted) {
    const uint64_t max_colors = uint64_t{1} << bits;
    const uint64_t n = colors_used == 0 ? max_colors : std::min<uint64_t>(colors_used, max_colors);
    TRT_CHECK_ARG(palette_offset + n * palette_entry <= size,
                  "corrupt BMP: palette past the end of the file");
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t* e = &b[palette_offset + i * palette_entry];
      palette[i][0] = e[2];
      palette[i][1] = e[1];
      palette[i][2] = e[0];
      gray = gray && e[0] == e[1] && e[1] == e[2];
    }
  }

  const uint64_t stride = (static_cast<uint64_t>(width) * bits + 31) / 32 * 4;
  const uint64_t row_bytes = (static_cast<uint64_t>(width) * bits + 7) / 8;
  // The last row's padding may be missing in files from some writers.
  TRT_CHECK_ARG(
      data_offset >= 14 + hsize && data_offset <= size &&
          stride * static_cast<uint64_t>(height - 1) + row_bytes <= size - data_offset,
      "corrupt BMP: pixel data ({} rows of {} bytes at offset {}) past the end of the {}-byte file",
      height, stride, data_offset, size);

  if (compression == kBiRgb && bits == 16) masks[0] = 0x7C00, masks[1] = 0x03E0, masks[2] = 0x001F;
  if (compression == kBiRgb && bits == 32)
    masks[0] = 0xFF0000, masks[1] = 0xFF00, masks[2] = 0xFF, masks[3] = 0;
  const Field fr(masks[0]), fg(masks[1]), fb(masks[2]), fa(masks[3]);
  const bool alpha = (bits == 16 || bits == 32) && masks[3] != 0;

  Image img = make_image(width, height, paletted && gray ? 1 : (alpha ? 4 : 3), "BMP");
  const int c = img.channels;
  bool any_alpha = false;
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* src =
        &b[data_offset + stride * static_cast<uint64_t>(top_down ? y : height - 1 - y)];
    uint8_t* out = img.row(y);
    for (int64_t x = 0; x < width; ++x, out += c) {
      if (paletted) {
        const int per_byte = 8 / static_cast<int>(bits);
        const uint32_t byte = src[x / per_byte];
        const int shift = 8 - static_cast<int>(bits) * (1 + static_cast<int>(x % per_byte));
        const uint32_t idx = (byte >> shift) & ((1u << bits) - 1);
        if (c == 1) {
          out[0] = palette[idx][0];
        } else {
          std::memcpy(out, palette[idx], 3);
        }
      } else if (bits == 24) {
        out[0] = src[x * 3 + 2];
        out[1] = src[x * 3 + 1];
        out[2] = src[x * 3];
      } else {
        const uint32_t px = bits == 16 ? rd16(&src[x * 2]) : rd32(&src[x * 4]);
        out[0] = fr.get(px);
        out[1] = fg.get(px);
        out[2] = fb.get(px);
        if (alpha) {
          out[3] = fa.get(px);
          any_alpha = any_alpha || out[3] != 0;
        }
      }
    }
  }
  if (alpha && !any_alpha) {
    // An alpha mask with every pixel fully transparent is a writer that left the byte at 0:
    // the image is opaque.
    Image rgb = make_image(width, height, 3, "BMP");
    for (int64_t i = 0; i < width * height; ++i)
      std::memcpy(&rgb.pixels[i * 3], &img.pixels[i * 4], 3);
    return rgb;
  }
  return img;
}

}  // namespace trtutils::data
