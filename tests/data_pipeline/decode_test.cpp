// Decoders against OpenCV's imread (references in tests/data/images, from make_fixtures.py) and
// against damaged files: every damaged input must give an Error naming the file, never a crash.
#include <gtest/gtest.h>

#include <random>

#include "data/codecs.h"
#include "data/preprocess.h"
#include "data_pipeline/fixtures.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

using namespace testing_data;
using data::Image;

// Decoded image (converted to the reference's channel count) vs the reference.
void expect_matches(const Image& got, const Tensor& want, double tolerance,
                    const std::string& what) {
  const int want_c = want.rank() == 2 ? 1 : static_cast<int>(want.dim(2));
  ASSERT_EQ(got.height, want.dim(0)) << what;
  ASSERT_EQ(got.width, want.dim(1)) << what;
  const Image conv = data::convert_channels(got, want_c);
  EXPECT_LE(max_abs_diff(conv.pixels.data(), want.data<uint8_t>(), want.numel()), tolerance)
      << what;
}

TEST(DecodeTest, JpegMatchesOpenCV) {
  for (const char* name : {"photo_hubble", "progressive", "gray"}) {
    const Image img = data::load_image(fixture(std::string(name) + ".jpg"));
    EXPECT_EQ(img.channels, std::string(name) == "gray" ? 1 : 3) << name;
    expect_matches(img, load_ref(std::string("ref_") + name + "_jpg.npy"), 0, name);
  }
}

TEST(DecodeTest, CmykJpegIsConvertedToRgb) {
  const Image img = data::load_image(fixture("cmyk.jpg"));
  EXPECT_EQ(img.channels, 3);
  // OpenCV's CMYK conversion uses >> 8 where we divide by 255 with rounding.
  expect_matches(img, load_ref("ref_cmyk_jpg.npy"), 2, "cmyk");
}

TEST(DecodeTest, ExifOrientationMatchesOpenCV) {
  for (int o = 1; o <= 8; ++o) {
    const Image img = data::load_image(fixture("orient_" + std::to_string(o) + ".jpg"));
    expect_matches(img, load_ref("ref_orient_" + std::to_string(o) + ".npy"), 0,
                   "orientation " + std::to_string(o));
  }
}

TEST(DecodeTest, ExifParserIgnoresMalformedPayloads) {
  auto parse = [](const std::string& s) {
    return data::exif_orientation({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  const std::string ok("Exif\0\0II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0\x06\0\0\0",
                       6 + 8 + 2 + 12);
  EXPECT_EQ(parse(ok), 6);
  for (size_t n = 0; n < ok.size(); ++n)
    EXPECT_EQ(parse(ok.substr(0, n)), 1) << "truncated to " << n;
  std::string bad_type = ok;
  bad_type[6 + 8 + 2 + 2] = 4;  // LONG instead of SHORT
  EXPECT_EQ(parse(bad_type), 1);
  std::string bad_value = ok;
  bad_value[6 + 8 + 2 + 8] = 9;
  EXPECT_EQ(parse(bad_value), 1);
  std::string far_ifd = ok;
  far_ifd[6 + 4] = '\xff';  // IFD offset past the end
  EXPECT_EQ(parse(far_ifd), 1);
  std::string many = ok;
  many[6 + 8] = '\xff';       // entry count past the end
  EXPECT_EQ(parse(many), 6);  // the orientation entry comes first and is still read
  EXPECT_EQ(
      parse(std::string("Exif\0\0MM\0*\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0\x03\0\0", 28)), 3);
}

TEST(DecodeTest, PngVariantsMatchOpenCV) {
  struct Case {
    const char* name;
    int channels;
  };
  for (const Case& c : {Case{"gray", 1}, Case{"gray16", 1}, Case{"rgba", 4},
                        Case{"palette_trns", 4}, Case{"palette_2bit", 3}, Case{"gray_alpha", 2}}) {
    const Image img = data::load_image(fixture(std::string(c.name) + ".png"));
    EXPECT_EQ(img.channels, c.channels) << c.name;
    // As OpenCV's IMREAD_COLOR: gray replicated, alpha dropped.
    expect_matches(img, load_ref(std::string("ref_") + c.name + "_png.npy"), 0, c.name);
  }
  // Alpha kept as it is (tRNS expanded).
  expect_matches(data::load_image(fixture("rgba.png")), load_ref("ref_rgba_png_unchanged.npy"), 0,
                 "rgba");
  expect_matches(data::load_image(fixture("palette_trns.png")),
                 load_ref("ref_palette_trns_png_unchanged.npy"), 0, "palette_trns");
}

TEST(DecodeTest, WebpMatchesOpenCV) {
  expect_matches(data::load_image(fixture("lossless.webp")), load_ref("ref_lossless_webp.npy"), 0,
                 "lossless");
  expect_matches(data::load_image(fixture("lossy.webp")), load_ref("ref_lossy_webp.npy"), 0,
                 "lossy");
  const Image alpha = data::load_image(fixture("alpha.webp"));
  EXPECT_EQ(alpha.channels, 4);
  expect_matches(alpha, load_ref("ref_alpha_webp.npy"), 0, "alpha");
}

TEST(DecodeTest, BmpVariants) {
  struct Case {
    const char* file;
    const char* reference;
    int channels;
  };
  for (const Case& c :
       {Case{"rgb24.bmp", "ref_rgb24_bmp.npy", 3},
        Case{"rgb24_topdown.bmp", "ref_rgb24_bmp.npy", 3},
        Case{"rgb24_core.bmp", "ref_rgb24_bmp.npy", 3}, Case{"rgb32.bmp", "ref_rgb24_bmp.npy", 3},
        Case{"rgba32_v4.bmp", "ref_rgba32_v4_bmp.npy", 4},
        Case{"rgb16.bmp", "ref_rgb16_bmp.npy", 3}, Case{"pal8.bmp", "ref_pal8_bmp.npy", 3},
        Case{"gray8.bmp", "ref_gray8_bmp.npy", 1}, Case{"pal4.bmp", "ref_pal4_bmp.npy", 3},
        Case{"pal1.bmp", "ref_pal1_bmp.npy", 3}}) {
    const Image img = data::load_image(fixture(c.file));
    EXPECT_EQ(img.channels, c.channels) << c.file;
    expect_matches(img, load_ref(c.reference), 0, c.file);
  }
}

// Decoding `bytes` must throw an Error of `code` whose message names the file and has `needle`.
void expect_error(const std::string& bytes, ErrorCode code, const std::string& needle) {
  try {
    data::decode_image({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                       "some/file.img");
    ADD_FAILURE() << "no error; expected '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find("some/file.img"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

void put32(std::string& s, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[off + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

TEST(DecodeTest, UnsupportedAndInvalidBmp) {
  const std::string bmp = read_bytes(fixture("rgb24.bmp"));
  std::string rle = bmp;
  put32(rle, 30, 1);  // BI_RLE8
  expect_error(rle, ErrorCode::kNotSupported, "RLE");
  std::string bits2 = bmp;
  bits2[28] = 2;
  expect_error(bits2, ErrorCode::kNotSupported, "2 bits per pixel");
  std::string huge = bmp;
  put32(huge, 18, 60000);
  put32(huge, 22, 60000);
  expect_error(huge, ErrorCode::kOutOfRange, "over the limit");
  std::string past_end = bmp;
  put32(past_end, 22, 1000);
  expect_error(past_end, ErrorCode::kInvalidArgument, "past the end");
  std::string bad_offset = bmp;
  put32(bad_offset, 10, 0xFFFFFFF0u);
  expect_error(bad_offset, ErrorCode::kInvalidArgument, "past the end");
  std::string zero_width = bmp;
  put32(zero_width, 18, 0);
  expect_error(zero_width, ErrorCode::kInvalidArgument, "invalid size");
  std::string min_height = bmp;
  put32(min_height, 22, 0x80000000u);  // INT32_MIN: negating it must not overflow
  expect_error(min_height, ErrorCode::kOutOfRange, "over the limit");
  std::string header = bmp;
  put32(header, 14, 64);  // OS/2 2.x
  expect_error(header, ErrorCode::kNotSupported, "header");
}

TEST(DecodeTest, HugeJpegIsRefusedBeforeDecoding) {
  std::string jpg = read_bytes(fixture("photo_hubble.jpg"));
  const size_t sof = jpg.find("\xff\xc0");
  ASSERT_NE(sof, std::string::npos);
  jpg[sof + 5] = jpg[sof + 6] = jpg[sof + 7] = jpg[sof + 8] = '\xfe';  // 65278 x 65278
  expect_error(jpg, ErrorCode::kOutOfRange, "over the limit");
}

TEST(DecodeTest, UnknownAndEmptyFiles) {
  expect_error("", ErrorCode::kInvalidArgument, "not a JPEG, PNG, BMP or WebP");
  expect_error("GIF89a....", ErrorCode::kInvalidArgument, "not a JPEG, PNG, BMP or WebP");
  expect_error("\xff\xd8\xff", ErrorCode::kInvalidArgument, "corrupt JPEG");
  expect_error(std::string("\x89PNG\r\n\x1a\n", 8), ErrorCode::kInvalidArgument, "corrupt PNG");
  expect_error("RIFF\0\0\0\0WEBP", ErrorCode::kInvalidArgument, "WebP");
  expect_error("BM", ErrorCode::kInvalidArgument, "corrupt BMP");
}

const char* const kAllFixtures[] = {
    "photo_hubble.jpg", "progressive.jpg", "gray.jpg",   "cmyk.jpg",         "orient_6.jpg",
    "gray.png",         "gray16.png",      "rgba.png",   "palette_trns.png", "gray_alpha.png",
    "lossless.webp",    "lossy.webp",      "alpha.webp", "rgb24.bmp",        "rgba32_v4.bmp",
    "rgb16.bmp",        "pal8.bmp",        "pal4.bmp",   "pal1.bmp",         "rgb24_core.bmp"};

// Decodes or throws Error; anything else (another exception type, a crash) fails the test.
bool decodes(const std::string& bytes) {
  try {
    data::decode_image({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "x");
    return true;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("image 'x'"), std::string::npos) << e.what();
    return false;
  }
}

TEST(DecodeTest, TruncatedFilesAreErrors) {
  for (const char* name : kAllFixtures) {
    const std::string bytes = read_bytes(fixture(name));
    ASSERT_TRUE(decodes(bytes)) << name;
    for (size_t n : {size_t{0}, size_t{1}, size_t{4}, size_t{16}, size_t{40}, bytes.size() / 4,
                     bytes.size() / 2, bytes.size() * 3 / 4, bytes.size() - 16}) {
      if (n < bytes.size()) {
        EXPECT_FALSE(decodes(bytes.substr(0, n))) << name << " truncated to " << n;
      }
    }
    decodes(bytes.substr(0, bytes.size() - 1));  // may lose only padding: either outcome, no crash
  }
}

TEST(DecodeTest, MutatedFilesNeverCrash) {
  std::mt19937 rng(1234);
  int errors = 0, total = 0;
  for (const char* name : kAllFixtures) {
    const std::string bytes = read_bytes(fixture(name));
    for (int trial = 0; trial < 60; ++trial) {
      std::string m = bytes;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips; ++f) {
        // Headers are where the sizes live: bias the damage towards the first bytes.
        const size_t pos =
            (trial % 2 == 0) ? rng() % std::min<size_t>(m.size(), 64) : rng() % m.size();
        m[pos] = static_cast<char>(rng() & 0xFF);
      }
      errors += decodes(m) ? 0 : 1;
      ++total;
    }
  }
  EXPECT_GT(errors, 0);
  RecordProperty("mutations", total);
}

}  // namespace
}  // namespace trtutils
