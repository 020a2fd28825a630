// PNG through libpng's classic API. libpng's error callback longjmps back into a C-style frame
// (no C++ object with a destructor between setjmp and longjmp), like the JPEG decoder.
#include <png.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "data/codecs.h"

namespace trtutils::data {

namespace {

struct PngState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  char message[256] = {};
  ~PngState() {
    if (png != nullptr) png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
  }
};

void on_error(png_structp png, png_const_charp msg) {
  auto* st = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(st->message, sizeof(st->message), "%s", msg != nullptr ? msg : "unknown error");
  png_longjmp(png, 1);
}
void on_warning(png_structp, png_const_charp) {}

void on_read(png_structp png, png_bytep out, png_size_t n) {
  auto* st = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > st->size - st->pos) png_error(png, "file is truncated");
  std::memcpy(out, st->data + st->pos, n);
  st->pos += n;
}

struct Header {
  png_uint_32 width = 0, height = 0;
  int channels = 0;
  size_t rowbytes = 0;
};

// Phase 1: signature, header chunks, transforms. False on a libpng error.
bool read_info(PngState* st, Header* h) {
  if (setjmp(png_jmpbuf(st->png))) return false;
  png_set_read_fn(st->png, st, on_read);
  // libpng's own dimension limits are wider than ours; ours are checked by make_image.
  png_set_user_limits(st->png, static_cast<png_uint_32>(kMaxImageSide),
                      static_cast<png_uint_32>(kMaxImageSide));
  png_set_chunk_malloc_max(st->png, 16u << 20);  // ancillary chunks (text, ICC, ...)
  png_read_info(st->png, st->info);
  const int color = png_get_color_type(st->png, st->info);
  const int depth = png_get_bit_depth(st->png, st->info);
  // Palette -> RGB, gray < 8 bits -> 8 bits, tRNS -> an alpha channel (as OpenCV's imread).
  if (color == PNG_COLOR_TYPE_PALETTE || depth < 8 ||
      png_get_valid(st->png, st->info, PNG_INFO_tRNS))
    png_set_expand(st->png);
  if (depth == 16) png_set_strip_16(st->png);
  png_set_interlace_handling(st->png);
  png_read_update_info(st->png, st->info);
  h->width = png_get_image_width(st->png, st->info);
  h->height = png_get_image_height(st->png, st->info);
  h->channels = png_get_channels(st->png, st->info);
  h->rowbytes = png_get_rowbytes(st->png, st->info);
  return true;
}

// Phase 2: the pixels, then the chunks after them (so a truncated file is an error).
bool read_rows(PngState* st, png_bytepp rows) {
  if (setjmp(png_jmpbuf(st->png))) return false;
  png_read_image(st->png, rows);
  png_read_end(st->png, nullptr);
  return true;
}

}  // namespace

Image decode_png(std::span<const uint8_t> bytes) {
  PngState st;
  st.data = bytes.data();
  st.size = bytes.size();
  st.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &st, on_error, on_warning);
  TRT_CHECK(st.png != nullptr, ErrorCode::kInternal, "png_create_read_struct failed");
  st.info = png_create_info_struct(st.png);
  TRT_CHECK(st.info != nullptr, ErrorCode::kInternal, "png_create_info_struct failed");
  Header h;
  if (!read_info(&st, &h)) TRT_THROW(ErrorCode::kInvalidArgument, "corrupt PNG: {}", st.message);
  TRT_CHECK(h.channels >= 1 && h.channels <= 4, ErrorCode::kNotSupported, "PNG with {} channels",
            h.channels);
  Image img = make_image(h.width, h.height, h.channels, "PNG");
  TRT_CHECK(h.rowbytes == static_cast<size_t>(img.width) * img.channels,
            ErrorCode::kInvalidArgument, "corrupt PNG: unexpected row size {}", h.rowbytes);
  std::vector<png_bytep> rows(static_cast<size_t>(img.height));
  for (int64_t y = 0; y < img.height; ++y) rows[y] = img.row(y);
  if (!read_rows(&st, rows.data()))
    TRT_THROW(ErrorCode::kInvalidArgument, "corrupt PNG: {}", st.message);
  return img;
}

}  // namespace trtutils::data
