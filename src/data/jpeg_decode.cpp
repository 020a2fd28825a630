// JPEG through libjpeg-turbo. libjpeg reports errors by calling error_exit, which must not
// return: ours longjmps back into a small C-style frame (no C++ object with a destructor lives
// between setjmp and longjmp), which then turns the message into an Error.
#include <csetjmp>
#include <cstdio>
#include <cstring>

// jpeglib.h needs FILE and size_t declared before it.
#include <jpeglib.h>

// After jpeglib.h (it reads JPEG_LIB_VERSION): the warning codes.
#include <jerror.h>

#include "core/check.h"
#include "data/codecs.h"

namespace trtutils::data {

namespace {

// Progressive files with thousands of tiny scans decode very slowly; libjpeg-turbo's own
// TurboJPEG API uses the same kind of limit against such files.
constexpr int kMaxScans = 500;

struct JpegError {
  jpeg_error_mgr mgr;  // first member: libjpeg passes &mgr, we cast back
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (level -1) about corrupt entropy data or a truncated file mean the image is damaged:
// they become errors. Others (extraneous bytes, unknown JFIF revision, ...) are harmless and
// ignored; trace messages (level >= 0) are dropped. Nothing is printed.
void on_emit_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION:
      on_error_exit(cinfo);
      break;
    default:
      break;
  }
}

void on_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->is_decompressor && d->input_scan_number > kMaxScans) {
    std::snprintf(reinterpret_cast<JpegError*>(cinfo->err)->message, JMSG_LENGTH_MAX,
                  "more than %d progressive scans", kMaxScans);
    std::longjmp(reinterpret_cast<JpegError*>(cinfo->err)->jump, 1);
  }
}

struct JpegState {
  jpeg_decompress_struct cinfo;
  JpegError err;
  jpeg_progress_mgr progress;
  bool created = false;
  ~JpegState() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

// Phase 1: header and markers. Returns false on a libjpeg error (message in st->err.message).
bool read_header(JpegState* st, const uint8_t* data, size_t size) {
  st->cinfo.err = jpeg_std_error(&st->err.mgr);
  st->err.mgr.error_exit = on_error_exit;
  st->err.mgr.emit_message = on_emit_message;
  st->err.message[0] = '\0';
  if (setjmp(st->err.jump)) return false;
  st->created = true;  // jpeg_destroy_decompress copes with a half-created object
  jpeg_create_decompress(&st->cinfo);
  jpeg_mem_src(&st->cinfo, data, static_cast<unsigned long>(size));
  jpeg_save_markers(&st->cinfo, JPEG_APP0 + 1, 0xFFFF);
  if (jpeg_read_header(&st->cinfo, TRUE) != JPEG_HEADER_OK) {
    std::snprintf(st->err.message, JMSG_LENGTH_MAX, "no image in the file (tables only)");
    return false;
  }
  return true;
}

// Phase 2: pixels into `out` (rows of `stride` bytes, `rows` of them).
bool read_pixels(JpegState* st, uint8_t* out, size_t stride, JDIMENSION rows, int components) {
  if (setjmp(st->err.jump)) return false;
  st->progress.progress_monitor = on_progress;
  st->cinfo.progress = &st->progress;
  jpeg_start_decompress(&st->cinfo);
  if (st->cinfo.output_components != components || st->cinfo.output_height != rows) {
    std::snprintf(st->err.message, JMSG_LENGTH_MAX, "unexpected output layout");
    return false;
  }
  while (st->cinfo.output_scanline < rows) {
    JSAMPROW row = out + static_cast<size_t>(st->cinfo.output_scanline) * stride;
    if (jpeg_read_scanlines(&st->cinfo, &row, 1) != 1) {
      std::snprintf(st->err.message, JMSG_LENGTH_MAX, "decoder stalled");
      return false;
    }
  }
  jpeg_finish_decompress(&st->cinfo);
  return true;
}

}  // namespace

Image decode_jpeg(std::span<const uint8_t> bytes, int* orientation) {
  JpegState st;
  std::memset(&st.cinfo, 0, sizeof(st.cinfo));
  std::memset(&st.progress, 0, sizeof(st.progress));
  if (!read_header(&st, bytes.data(), bytes.size()))
    TRT_THROW(ErrorCode::kInvalidArgument, "corrupt JPEG: {}", st.err.message);

  *orientation = 1;
  for (jpeg_saved_marker_ptr m = st.cinfo.marker_list; m != nullptr; m = m->next) {
    // APP1 also carries XMP; the first Exif payload is the one readers honour.
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 &&
        std::memcmp(m->data, "Exif\0\0", 6) == 0) {
      *orientation = exif_orientation({m->data, m->data_length});
      break;
    }
  }

  const int in_components = st.cinfo.num_components;
  bool cmyk = false;
  int components = 3;
  switch (st.cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:
      st.cinfo.out_color_space = JCS_GRAYSCALE;
      components = 1;
      break;
    case JCS_CMYK:
    case JCS_YCCK:
      st.cinfo.out_color_space = JCS_CMYK;
      components = 4;
      cmyk = true;
      break;
    default:
      TRT_CHECK(in_components == 3, ErrorCode::kNotSupported,
                "JPEG with {} colour components is not supported", in_components);
      st.cinfo.out_color_space = JCS_RGB;
      break;
  }
  Image img =
      make_image(st.cinfo.image_width, st.cinfo.image_height, cmyk ? 3 : components, "JPEG");
  std::vector<uint8_t> cmyk_buf;
  uint8_t* out = img.pixels.data();
  size_t stride = static_cast<size_t>(img.width) * img.channels;
  if (cmyk) {
    cmyk_buf.resize(static_cast<size_t>(img.width * img.height * 4));
    out = cmyk_buf.data();
    stride = static_cast<size_t>(img.width) * 4;
  }
  if (!read_pixels(&st, out, stride, st.cinfo.image_height, components))
    TRT_THROW(ErrorCode::kInvalidArgument, "corrupt JPEG: {}", st.err.message);
  if (cmyk) {
    // Adobe writes CMYK inverted (0 = full ink); others store it plainly.
    const bool inverted = st.cinfo.saw_Adobe_marker;
    const int64_t n = img.width * img.height;
    for (int64_t i = 0; i < n; ++i) {
      int c = cmyk_buf[i * 4], m = cmyk_buf[i * 4 + 1], y = cmyk_buf[i * 4 + 2],
          k = cmyk_buf[i * 4 + 3];
      if (!inverted) c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
      img.pixels[i * 3] = static_cast<uint8_t>((c * k + 127) / 255);
      img.pixels[i * 3 + 1] = static_cast<uint8_t>((m * k + 127) / 255);
      img.pixels[i * 3 + 2] = static_cast<uint8_t>((y * k + 127) / 255);
    }
  }
  return img;
}

}  // namespace trtutils::data
