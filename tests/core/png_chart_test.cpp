#include "core/png_chart.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>
#include <string>

#include "data/codecs.h"
#include "quantize/report.h"
#include "trtutils/file_util.h"
#include "trtutils/status.h"

namespace trtutils::chart {
namespace {

namespace fs = std::filesystem;

ErrorCode error_code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no trtutils::Error thrown";
  return ErrorCode::kInternal;
}

uint32_t be32(const std::string& s, size_t off) {
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) v = (v << 8) | static_cast<uint8_t>(s[off + k]);
  return v;
}

// Bitwise CRC-32 (no table): independent of the encoder's table-driven one.
uint32_t crc32_bitwise(const std::string& s, size_t off, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= static_cast<uint8_t>(s[off + i]);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

struct Chunk {
  std::string type, data;
};

// Splits a PNG into chunks, checking the signature and every CRC.
std::vector<Chunk> parse_chunks(const std::string& png) {
  std::vector<Chunk> out;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n"));
  size_t off = 8;
  while (off + 12 <= png.size()) {
    const uint32_t len = be32(png, off);
    EXPECT_LE(off + 12 + len, png.size());
    if (off + 12 + len > png.size()) break;
    EXPECT_EQ(be32(png, off + 8 + len), crc32_bitwise(png, off + 4, len + 4))
        << "CRC of chunk " << png.substr(off + 4, 4);
    out.push_back({png.substr(off + 4, 4), png.substr(off + 8, len)});
    off += 12 + len;
  }
  EXPECT_EQ(off, png.size()) << "trailing bytes";
  return out;
}

// Decodes a PNG whose IDAT is zlib "stored" blocks, 8-bit RGB, filter 0 on every row.
std::vector<uint8_t> decode_stored_png(const std::string& png, int* w, int* h) {
  const auto chunks = parse_chunks(png);
  EXPECT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks.front().type, "IHDR");
  EXPECT_EQ(chunks.back().type, "IEND");
  EXPECT_TRUE(chunks.back().data.empty());
  const std::string& ihdr = chunks.front().data;
  EXPECT_EQ(ihdr.size(), 13u);
  *w = static_cast<int>(be32(ihdr, 0));
  *h = static_cast<int>(be32(ihdr, 4));
  EXPECT_EQ(ihdr.substr(8), std::string("\x08\x02\x00\x00\x00", 5));
  std::string z;
  for (const auto& c : chunks)
    if (c.type == "IDAT") z += c.data;
  EXPECT_EQ(static_cast<uint8_t>(z[0]) & 0x0F, 8);  // deflate
  EXPECT_EQ(((static_cast<uint8_t>(z[0]) << 8) | static_cast<uint8_t>(z[1])) % 31, 0);
  std::string raw;
  size_t p = 2;
  for (;;) {
    const uint8_t hdr = static_cast<uint8_t>(z[p]);
    EXPECT_EQ(hdr & 6, 0) << "not a stored block";
    const size_t len = static_cast<uint8_t>(z[p + 1]) | (static_cast<uint8_t>(z[p + 2]) << 8);
    const size_t nlen = static_cast<uint8_t>(z[p + 3]) | (static_cast<uint8_t>(z[p + 4]) << 8);
    EXPECT_EQ(len ^ 0xFFFF, nlen);
    raw += z.substr(p + 5, len);
    p += 5 + len;
    if (hdr & 1) break;
    if (p >= z.size()) {
      ADD_FAILURE() << "no final block";
      return {};
    }
  }
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) a = (a + c) % 65521, b = (b + a) % 65521;
  EXPECT_EQ(be32(z, p), (b << 16) | a) << "adler32";
  EXPECT_EQ(p + 4, z.size());
  const size_t row = static_cast<size_t>(*w) * 3;
  EXPECT_EQ(raw.size(), (row + 1) * *h);
  std::vector<uint8_t> px;
  for (int y = 0; y < *h; ++y) {
    EXPECT_EQ(raw[y * (row + 1)], '\0');
    px.insert(px.end(), raw.begin() + y * (row + 1) + 1, raw.begin() + (y + 1) * (row + 1));
  }
  return px;
}

data::Image decode_with_libpng(const std::string& png) {
  return data::decode_png(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(png.data()), png.size()));
}

struct Box {
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;
  int count = 0;
  bool empty() const { return count == 0; }
};

// Bounding box of the pixels for which `pred` holds.
Box find(const Canvas& c, const std::function<bool(Rgb)>& pred, int x0 = 0, int y0 = 0, int x1 = -1,
         int y1 = -1) {
  if (x1 < 0) x1 = c.width() - 1;
  if (y1 < 0) y1 = c.height() - 1;
  Box b;
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x)
      if (pred(c.pixel(x, y))) {
        b.x0 = std::min(b.x0, x), b.y0 = std::min(b.y0, y);
        b.x1 = std::max(b.x1, x), b.y1 = std::max(b.y1, y);
        ++b.count;
      }
  return b;
}
Box find_color(const Canvas& c, Rgb col) {
  return find(c, [&](Rgb p) { return p == col; });
}
bool not_white(Rgb p) {
  return !(p == colors::kWhite);
}

class PngChartFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trtutils_png_chart_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Also copies the file to $TRTUTILS_CHART_EXAMPLES (if set), to look at by eye.
  void keep_example(const fs::path& p) {
    if (const char* d = std::getenv("TRTUTILS_CHART_EXAMPLES"))
      fs::copy_file(p, fs::path(d) / p.filename(), fs::copy_options::overwrite_existing);
  }
  fs::path dir_;
};

// ---- canvas, font, text ----

TEST(PngChartCanvas, RejectsBadSizes) {
  EXPECT_EQ(error_code_of([] { Canvas(0, 5); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of([] { Canvas(5, -1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of([] { Canvas(20000, 1); }), ErrorCode::kOutOfRange);
  EXPECT_EQ(error_code_of([] { Canvas(10000, 10000); }), ErrorCode::kOutOfRange);
  Canvas c(3, 2, Rgb{1, 2, 3});
  EXPECT_EQ(c.pixel(2, 1), (Rgb{1, 2, 3}));
  EXPECT_EQ(error_code_of([&] { c.pixel(3, 0); }), ErrorCode::kOutOfRange);
  c.set(-1, 0, colors::kBlack);  // clipped, no error
  c.fill_rect(-10, -10, 100, 0, colors::kBlack);
  EXPECT_EQ(c.pixel(2, 0), colors::kBlack);
  EXPECT_EQ(c.pixel(2, 1), (Rgb{1, 2, 3}));
}

TEST(PngChartCanvas, LinesAndDashes) {
  Canvas c(20, 20);
  c.hline(2, 13, 5, colors::kRed, 3);  // on 2-4, off 5-7, on 8-10, off 11-13
  EXPECT_EQ(c.pixel(2, 5), colors::kRed);
  EXPECT_EQ(c.pixel(4, 5), colors::kRed);
  EXPECT_EQ(c.pixel(5, 5), colors::kWhite);
  EXPECT_EQ(c.pixel(8, 5), colors::kRed);
  EXPECT_EQ(c.pixel(12, 5), colors::kWhite);
  c.line(0, 19, 19, 0, colors::kBlue);  // anti-diagonal
  for (int i = 0; i < 20; ++i) EXPECT_EQ(c.pixel(i, 19 - i), colors::kBlue) << i;
  c.vline(17, 10, 12, colors::kGreen);
  EXPECT_EQ(find_color(c, colors::kGreen).count, 3);
}

TEST(PngChartFont, GlyphsHaveInkAndAreDistinct) {
  std::set<uint64_t> seen;  // 40-bit ink masks
  for (int ch = 33; ch <= 126; ++ch) {
    Canvas c(kGlyphW, kGlyphH + kDescent);
    c.text(0, 0, std::string(1, static_cast<char>(ch)), colors::kBlack);
    uint64_t mask = 0;
    for (int y = 0; y < kGlyphH + kDescent; ++y)
      for (int x = 0; x < kGlyphW; ++x) mask = (mask << 1) | (c.pixel(x, y) == colors::kBlack);
    EXPECT_NE(mask, 0u) << static_cast<char>(ch);
    EXPECT_TRUE(seen.insert(mask).second)
        << "glyph '" << static_cast<char>(ch) << "' repeats another one";
  }
  Canvas space(kGlyphW, kGlyphH + kDescent);
  space.text(0, 0, " ", colors::kBlack);
  EXPECT_TRUE(find(space, not_white).empty());
  // Characters outside 32..126 draw as '?'.
  Canvas q(kGlyphW, kGlyphH + kDescent), other(kGlyphW, kGlyphH + kDescent);
  q.text(0, 0, "?", colors::kBlack);
  other.text(0, 0, "\x01", colors::kBlack);
  EXPECT_EQ(q.rgb(), other.rgb());
}

TEST(PngChartFont, TextPutsInkWhereExpected) {
  // 'I' is .###. / ..#.. x5 / .###.
  Canvas c(20, 12);
  c.text(1, 2, "I", colors::kBlack);
  EXPECT_EQ(c.pixel(1, 2), colors::kWhite);
  for (int x = 2; x <= 4; ++x) EXPECT_EQ(c.pixel(x, 2), colors::kBlack);
  EXPECT_EQ(c.pixel(5, 2), colors::kWhite);
  EXPECT_EQ(c.pixel(3, 3), colors::kBlack);
  EXPECT_EQ(c.pixel(2, 3), colors::kWhite);
  EXPECT_EQ(c.pixel(3, 8), colors::kBlack);  // bottom row
  const Box b = find(c, not_white);
  EXPECT_EQ(b.x0, 2);
  EXPECT_EQ(b.x1, 4);
  EXPECT_EQ(b.y0, 2);
  EXPECT_EQ(b.y1, 8);
  EXPECT_EQ(b.count, 3 + 5 + 3);

  // Scale 2: each font pixel is a 2x2 block.
  Canvas s(20, 20);
  s.text(0, 0, "I", colors::kBlack, 2);
  const Box b2 = find(s, not_white);
  EXPECT_EQ(b2.x0, 2);
  EXPECT_EQ(b2.x1, 7);
  EXPECT_EQ(b2.y0, 0);
  EXPECT_EQ(b2.y1, 13);
  EXPECT_EQ(b2.count, 4 * 11);

  // Descenders go one row below the 7: 'p' ends with #.... on rows 6 and 7, 'A' on row 6.
  Canvas d(20, 12);
  d.text(0, 0, "pA", colors::kBlack);
  EXPECT_EQ(d.pixel(0, 7), colors::kBlack);
  EXPECT_EQ(find(d, not_white, 6, 0, 11, 11).y1, 6);

  // Rotated: the top row of 'I' becomes the left column, reading upwards from (0, 9).
  Canvas r(12, 12);
  r.text(0, 9, "I", colors::kBlack, 1, TextDir::kUp);
  EXPECT_EQ(r.pixel(0, 9), colors::kWhite);  // column 0 of the glyph is blank
  for (int y = 6; y <= 8; ++y) EXPECT_EQ(r.pixel(0, y), colors::kBlack) << y;
  EXPECT_EQ(r.pixel(1, 7), colors::kBlack);  // the stem
  EXPECT_EQ(r.pixel(1, 8), colors::kWhite);
  const Box br = find(r, not_white);
  EXPECT_EQ(br.x0, 0);
  EXPECT_EQ(br.x1, 6);
  EXPECT_EQ(br.y0, 6);
  EXPECT_EQ(br.y1, 8);
}

TEST(PngChartFont, WidthsAlignmentAndElision) {
  EXPECT_EQ(text_width(""), 0);
  EXPECT_EQ(text_width("abc"), 17);
  EXPECT_EQ(text_width("abc", 2), 34);
  EXPECT_EQ(text_height(2), 14);
  // "AB": A has ink in column 0 and row 6, B in its column 4 and row 0 -> the ink box is the
  // text box, so alignment can be checked exactly.
  Canvas c(80, 40);
  c.text_aligned(50, 20, "AB", colors::kBlack, Align::kEnd, Align::kEnd);
  Box b = find(c, not_white);
  EXPECT_EQ(b.x1, 50);
  EXPECT_EQ(b.y1, 20);
  EXPECT_EQ(b.x0, 50 - text_width("AB") + 1);
  EXPECT_EQ(b.y0, 14);
  Canvas m(80, 40);
  m.text_aligned(40, 20, "AB", colors::kBlack, Align::kCenter, Align::kCenter);
  b = find(m, not_white);
  EXPECT_EQ(b.x0, 40 - text_width("AB") / 2);
  EXPECT_EQ(b.y0, 20 - 3);
  // Rotated, anchored at its top end and centred on x.
  Canvas u(40, 40);
  u.text_aligned(20, 5, "AB", colors::kBlack, Align::kCenter, Align::kEnd, 1, TextDir::kUp);
  b = find(u, not_white);
  EXPECT_EQ(b.y0, 5);
  EXPECT_EQ(b.y1, 5 + text_width("AB") - 1);
  EXPECT_EQ(b.x0, 20 - 3);
  EXPECT_EQ(b.x1, 20 + 3);

  EXPECT_EQ(elide_middle("abcdefghij", 20), "abcdefghij");
  EXPECT_EQ(elide_middle("abcdefghij", 7), "ab..hij");
  EXPECT_EQ(elide_middle("abcdefghij", 7).size(), 7u);
  EXPECT_EQ(elide_middle("abcdefghij", 1), "..j");
}

// ---- PNG ----

Canvas sample_canvas() {
  Canvas c(37, 23);  // odd sizes: rows are not multiples of anything
  c.fill_rect(3, 4, 10, 12, Rgb{200, 10, 20});
  c.fill_rect(20, 0, 36, 22, Rgb{1, 2, 3});
  c.text(2, 14, "Ok", colors::kBlack);
  c.set(0, 22, Rgb{9, 8, 7});
  return c;
}

TEST(PngChartPng, StoredIsValidAndDecodesToTheCanvas) {
  const Canvas c = sample_canvas();
  const std::string png = encode_png(c, /*compress=*/false);
  int w = 0, h = 0;
  const std::vector<uint8_t> px = decode_stored_png(png, &w, &h);
  EXPECT_EQ(w, 37);
  EXPECT_EQ(h, 23);
  EXPECT_EQ(px, c.rgb());
  EXPECT_EQ(px[(4 * 37 + 3) * 3 + 0], 200);  // the red rectangle at (3, 4)
}

TEST(PngChartPng, StoredSplitsLargeImagesIntoBlocks) {
  Canvas c(300, 200);  // 180,200 bytes of rows: three stored blocks
  c.fill_rect(100, 150, 120, 199, colors::kGreen);
  int w = 0, h = 0;
  EXPECT_EQ(decode_stored_png(encode_png(c, false), &w, &h), c.rgb());
}

TEST(PngChartPng, DeflatedDecodesWithLibpng) {
  const Canvas c = sample_canvas();
  const std::string png = encode_png(c);
  const auto chunks = parse_chunks(png);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].type, "IHDR");
  EXPECT_EQ(chunks[1].type, "IDAT");
  EXPECT_EQ(chunks[2].type, "IEND");
  const data::Image img = decode_with_libpng(png);
  EXPECT_EQ(img.width, 37);
  EXPECT_EQ(img.height, 23);
  ASSERT_EQ(img.channels, 3);
  EXPECT_EQ(img.pixels, c.rgb());
  EXPECT_LT(png.size(), encode_png(c, false).size());
}

TEST_F(PngChartFiles, PillowReadsThePixels) {
  if (std::system("/usr/bin/python3 -c 'import PIL' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 with PIL is not available";
  const Canvas c = sample_canvas();
  for (bool compress : {false, true}) {
    const fs::path p = dir_ / (compress ? "z.png" : "s.png");
    write_file_atomic(p, encode_png(c, compress));
    const std::string cmd = "/usr/bin/python3 -c \"from PIL import Image; im = Image.open('" +
                            p.string() +
                            "'); im.load(); print(im.size, im.mode, im.getpixel((3, 4)), "
                            "im.getpixel((36, 0)), im.getpixel((0, 22)))\"";
    FILE* f = ::popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[256] = {};
    std::string out;
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    EXPECT_EQ(::pclose(f), 0);
    EXPECT_EQ(out, "(37, 23) RGB (200, 10, 20) (1, 2, 3) (9, 8, 7)\n") << compress;
  }
}

// ---- bar chart ----

TEST(PngChartBars, BarsHaveTheirColourHeightAndOrder) {
  const Rgb a{200, 0, 0}, b{0, 200, 0}, c{0, 0, 200}, ref{150, 0, 150};
  BarChartOptions o;
  o.title = "Test";
  o.y_label = "dB";
  o.x_label = "tensors";
  o.y_tick = 10;
  o.lines = {{20, "20 dB", ref}};
  const Canvas img = bar_chart({{"first", 10, a}, {"second", 25, b}, {"third", 40, c}}, o);
  const Box ba = find_color(img, a), bb = find_color(img, b), bc = find_color(img, c);
  ASSERT_FALSE(ba.empty());
  ASSERT_FALSE(bb.empty());
  ASSERT_FALSE(bc.empty());
  // Left to right in order, same width, same baseline.
  EXPECT_LT(ba.x1, bb.x0);
  EXPECT_LT(bb.x1, bc.x0);
  EXPECT_EQ(ba.x1 - ba.x0, bc.x1 - bc.x0);
  EXPECT_EQ(ba.y1, bb.y1);
  EXPECT_EQ(ba.y1, bc.y1);
  // Solid rectangles (the dashed line is drawn over b and c, so check a only).
  EXPECT_EQ(ba.count, (ba.x1 - ba.x0 + 1) * (ba.y1 - ba.y0 + 1));
  // Heights proportional to the values (axis 0..40 after rounding up to a tick).
  const double unit = (ba.y1 - ba.y0 + 1) / 10.0;
  EXPECT_NEAR(bb.y1 - bb.y0 + 1, 25 * unit, 2);
  EXPECT_NEAR(bc.y1 - bc.y0 + 1, 40 * unit, 2);
  EXPECT_GE(ba.y1 - ba.y0 + 1, 30);  // a readable plot height
  // The dashed reference line: one row, at 20, across the plot, plus its label to the right.
  const Box line = find(
      img, [&](Rgb p) { return p == ref; }, 0, 0, bc.x1 + 2, -1);
  EXPECT_EQ(line.y0, line.y1);
  EXPECT_NEAR(line.y0, ba.y1 - 20 * unit, 2);
  EXPECT_LT(line.x0, ba.x0);
  const Box ref_label = find(
      img, [&](Rgb p) { return p == ref; }, bc.x1 + 3, 0, -1, -1);
  EXPECT_EQ(ref_label.count > 0, true);
  EXPECT_LE(ref_label.y0, line.y0);
  EXPECT_GE(ref_label.y1, line.y0);
  // Bar labels: ink below each bar (rotated names), none below the gaps far from bars.
  for (const Box& bar : {ba, bb, bc}) {
    const Box ink = find(
        img, [](Rgb p) { return p == colors::kText; }, bar.x0, bar.y1 + 3, bar.x1, bar.y1 + 60);
    EXPECT_GT(ink.count, 10);
    EXPECT_GE(ink.x0, bar.x0);
    EXPECT_LE(ink.x1, bar.x1);
  }
  // Title ink at the top, y-axis tick labels left of the bars.
  EXPECT_FALSE(find(img, not_white, 0, 0, -1, 30).empty());
  EXPECT_GT(find(
                img, [](Rgb p) { return p == colors::kText; }, 0, ba.y0, ba.x0 - 8, ba.y1)
                .count,
            20);
}

TEST(PngChartBars, ClippedNanAndNegativeBars) {
  const Rgb a{200, 0, 0}, b{0, 200, 0}, n{0, 0, 200}, m{90, 0, 90};
  BarChartOptions o;
  o.y_max = 30;
  o.y_tick = 10;
  const Canvas img = bar_chart({{"inf", std::numeric_limits<double>::infinity(), a},
                                {"ten", 10, b},
                                {"nan", std::nan(""), n},
                                {"neg", -5, m}},
                               o);
  // The clipped bar (its left column: the '^' above it is centred) is 3x as tall as the 10 one.
  const Box bb = find_color(img, b), all_a = find_color(img, a);
  const Box ba = find(
      img, [&](Rgb p) { return p == a; }, all_a.x0, 0, all_a.x0, -1);
  EXPECT_NEAR(ba.y1 - ba.y0 + 1, 3 * (bb.y1 - bb.y0 + 1), 3);
  EXPECT_GT(find(
                img, [&](Rgb p) { return p == a; }, all_a.x0, 0, all_a.x1, ba.y0 - 1)
                .count,
            0);
  // NaN: a small '?' at the baseline, no bar; below y_min: nothing.
  const Box bn = find_color(img, n);
  EXPECT_LE(bn.y1 - bn.y0 + 1, kGlyphH);
  EXPECT_TRUE(find_color(img, m).empty());
}

TEST(PngChartBars, NegativeMinimumWithAutomaticMaximum) {
  const Rgb a{200, 0, 0}, b{0, 200, 0};
  BarChartOptions o;
  o.y_min = -10;
  o.y_tick = 10;
  const Canvas img = bar_chart({{"neg", -6, a}, {"pos", 40, b}}, o);  // axis -10..40
  const Box ba = find_color(img, a), bb = find_color(img, b);
  EXPECT_EQ(ba.y1, bb.y1);
  EXPECT_NEAR(bb.y1 - bb.y0 + 1, 50.0 / 4 * (ba.y1 - ba.y0 + 1), 3);
  BarChartOptions bad;
  bad.y_min = 5;
  bad.y_max = 5;
  EXPECT_EQ(error_code_of([&] { bar_chart({}, bad); }), ErrorCode::kInvalidArgument);
}

TEST(PngChartBars, ManyBarsLabelEveryKth) {
  std::vector<Bar> bars;
  for (int i = 0; i < 300; ++i)
    bars.push_back({fmt::format("t{}", i), 5.0 + i % 40, i % 2 ? colors::kGreen : colors::kRed});
  const Canvas img = bar_chart(bars, BarChartOptions{});
  EXPECT_LE(img.width(), 1600);
  // Count bars along the row just above the baseline.
  const Box g = find_color(img, colors::kGreen);
  int runs = 0;
  Rgb prev = colors::kWhite;
  for (int x = 0; x < img.width(); ++x) {
    const Rgb p = img.pixel(x, g.y1);
    if ((p == colors::kGreen || p == colors::kRed) && !(p == prev)) ++runs;
    prev = p;
  }
  EXPECT_EQ(runs, 300);
  // Tick marks under the labelled bars only.
  int ticks = 0;
  for (int x = 0; x < img.width(); ++x)
    if (img.pixel(x, g.y1 + 3) == colors::kAxis) ++ticks;
  EXPECT_GT(ticks, 30);
  EXPECT_LT(ticks, 300);
}

TEST(PngChartBars, EmptyAndBadOptions) {
  EXPECT_GT(bar_chart({}, BarChartOptions{}).width(), 100);
  BarChartOptions o;
  o.y_max = std::numeric_limits<double>::infinity();
  EXPECT_EQ(error_code_of([&] { bar_chart({}, o); }), ErrorCode::kInvalidArgument);
  BarChartOptions p;
  p.plot_height = 0;
  EXPECT_EQ(error_code_of([&] { bar_chart({}, p); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of([&] { bar_chart(std::vector<Bar>(9000), BarChartOptions{}); }),
            ErrorCode::kOutOfRange);
  // Huge texts are elided, not a reason to fail.
  BarChartOptions big;
  big.title = big.subtitle = big.x_label = std::string(100000, 'x');
  big.lines = {{0.5, std::string(100000, 'y')}};
  big.legend = {{std::string(100000, 'z'), colors::kRed}};
  const Canvas c = bar_chart({{std::string(100000, 'w'), 1.0}}, big);
  EXPECT_LT(c.width(), 2000);
  HistogramOptions h;
  h.title = h.x_label = std::string(100000, 'x');
  h.markers = {{1.0, std::string(100000, 'm')}};
  EXPECT_LT(histogram({1.0, 2.0}, h).width(), 2000);
}

// ---- histogram ----

TEST(PngChartHistogram, BinHeightsAndMarkers) {
  std::vector<double> v(100, 1.0);
  v.insert(v.end(), 50, 2.0);
  HistogramOptions o;
  o.bins = 4;
  o.bar_color = Rgb{0, 0, 200};
  o.markers = {{1.5, "mid", Rgb{200, 0, 0}}, {1.52, "close", Rgb{0, 150, 0}}};
  const Canvas img = histogram(v, o);
  // Two bars (first and last bin) of heights 2:1 on one baseline.
  const Box all = find_color(img, o.bar_color);
  const Box left = find(
      img, [&](Rgb p) { return p == o.bar_color; }, 0, 0, (all.x0 + all.x1) / 2);
  const Box right = find(
      img, [&](Rgb p) { return p == o.bar_color; }, (all.x0 + all.x1) / 2, 0, -1, -1);
  EXPECT_EQ(left.y1, right.y1);
  EXPECT_NEAR(left.y1 - left.y0 + 1, 2 * (right.y1 - right.y0 + 1), 2);
  EXPECT_NEAR(right.x1 - right.x0, left.x1 - left.x0, 1);
  // Marker lines in the middle; the close labels are staggered on two rows.
  const Box mid = find_color(img, Rgb{200, 0, 0}), close = find_color(img, Rgb{0, 150, 0});
  EXPECT_GT(mid.x0, left.x1);
  EXPECT_LT(mid.x0, right.x0);
  EXPECT_GE(mid.y1, all.y1 - 4);  // the dashed line reaches the baseline
  EXPECT_GT(close.y0, mid.y0 + text_height(2));
}

TEST(PngChartHistogram, EqualValuesAndErrors) {
  EXPECT_GT(histogram({3.0, 3.0, 3.0}, HistogramOptions{}).width(), 100);
  EXPECT_GT(histogram({0.0}, HistogramOptions{}).width(), 100);
  EXPECT_EQ(error_code_of([] { histogram({}, HistogramOptions{}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of([] { histogram({std::nan("")}, HistogramOptions{}); }),
            ErrorCode::kInvalidArgument);
}

TEST(PngChartHistogram, Quantiles) {
  const std::vector<double> s = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.5), 3);
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.9), 4.6);  // numpy.quantile
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 0), 1);
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 1), 5);
  EXPECT_DOUBLE_EQ(quantile_sorted({7}, 0.99), 7);
}

TEST_F(PngChartFiles, LatencyHistogramFile) {
  std::vector<double> lat;
  uint32_t r = 12345;
  for (int i = 0; i < 1000; ++i) {  // about 2.0 +- 0.3 ms, a tail, one outlier
    r = r * 1664525u + 1013904223u;
    double u = (r >> 8) / double(1 << 24);
    lat.push_back(1.7 + 0.6 * u * u + (i % 50 == 0 ? 0.5 : 0.0));
  }
  lat.push_back(25.0);
  lat.push_back(std::nan(""));
  const fs::path p = dir_ / "latency.png";
  write_latency_histogram_png(p, lat, "ResNet-18 latency, batch 1 (CPU)");
  keep_example(p);
  const data::Image img = data::load_image(p);
  EXPECT_EQ(img.channels, 3);
  EXPECT_GT(img.width, 700);
  EXPECT_GT(img.height, 300);
  bool red = false;  // the p99 marker
  for (size_t i = 0; i + 2 < img.pixels.size(); i += 3)
    red |= img.pixels[i] == colors::kRed.r && img.pixels[i + 1] == colors::kRed.g &&
           img.pixels[i + 2] == colors::kRed.b;
  EXPECT_TRUE(red);
  EXPECT_EQ(error_code_of([&] { write_latency_histogram_png(p, {}, "x"); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_code_of(
                [&] { write_latency_histogram_png(dir_ / "no" / "such" / "x.png", {1.0}, "x"); }),
            ErrorCode::kIO);
}

// ---- the quantizer's SQNR plot ----

TEST_F(PngChartFiles, SqnrPlot) {
  std::vector<QuantizeTensorMetrics> t;
  const char* stages[] = {"stem", "layer1", "layer2", "layer3", "layer4"};
  for (int i = 0; i < 48; ++i) {
    QuantizeTensorMetrics m;
    m.name =
        fmt::format("/backbone/{}/block{}/conv{}/Conv_output_0", stages[i / 10], i % 10, i % 3);
    m.node = fmt::format("n{}", i);
    m.sqnr_db = 12 + 35 * std::fabs(std::sin(i * 0.7));
    t.push_back(m);
  }
  t[5].sqnr_db = std::numeric_limits<double>::infinity();
  t.push_back({"output", "Gemm_0", 18.5, 0, 0});
  const fs::path p = dir_ / "sqnr.png";
  quantize::plot_sqnr_png(t, p);
  keep_example(p);
  const data::Image img = data::load_image(p);
  ASSERT_EQ(img.channels, 3);
  int red = 0, orange = 0, green = 0;
  for (size_t i = 0; i + 2 < img.pixels.size(); i += 3) {
    const Rgb px{img.pixels[i], img.pixels[i + 1], img.pixels[i + 2]};
    red += px == colors::kRed, orange += px == colors::kOrange, green += px == colors::kGreen;
  }
  EXPECT_GT(red, 100);
  EXPECT_GT(orange, 100);
  EXPECT_GT(green, 100);

  // Many tensors still give a chart of bounded width.
  std::vector<QuantizeTensorMetrics> many(400, t[0]);
  for (int i = 0; i < 400; ++i) {
    many[i].name = fmt::format("/model.{}/cv{}/conv/Conv_output_0", i / 10, i % 10);
    many[i].sqnr_db = 8 + 40 * std::fabs(std::cos(i * 0.05));
  }
  const fs::path pm = dir_ / "sqnr_many.png";
  quantize::plot_sqnr_png(many, pm);
  keep_example(pm);
  EXPECT_LE(data::load_image(pm).width, 1700);
  quantize::plot_sqnr_png({}, dir_ / "empty.png");
  EXPECT_TRUE(fs::exists(dir_ / "empty.png"));
}

}  // namespace
}  // namespace trtutils::chart
