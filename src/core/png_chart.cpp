// The canvas, the built-in font, the PNG encoder and the two charts of png_chart.h. Layout is
// computed first (text sizes are known exactly with a bitmap font), then the canvas is sized to
// fit and everything is drawn once.
#include "core/png_chart.h"

#include <fmt/format.h>
#include <zlib.h>  // linked through libpng (PNG::PNG), which needs it

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "core/check.h"
#include "trtutils/file_util.h"
#include "trtutils/plot.h"

namespace trtutils::chart {

namespace {

// 5x7 glyphs for ASCII 32..126, one byte per row from the top, bit 4 = leftmost column, and an
// eighth row for the descenders of g j p q y , ;.
// clang-format off
constexpr uint8_t kFont[95][kGlyphH + kDescent] = {
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // ' '
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04, 0x00},  // '!'
    {0x0A, 0x0A, 0x0A, 0x00, 0x00, 0x00, 0x00, 0x00},  // '"'
    {0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A, 0x00},  // '#'
    {0x04, 0x0F, 0x14, 0x0E, 0x05, 0x1E, 0x04, 0x00},  // '$'
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03, 0x00},  // '%'
    {0x0C, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0D, 0x00},  // '&'
    {0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00},  // '\''
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02, 0x00},  // '('
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08, 0x00},  // ')'
    {0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00, 0x00},  // '*'
    {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00, 0x00},  // '+'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08},  // ','
    {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00, 0x00},  // '-'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C, 0x00},  // '.'
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00, 0x00},  // '/'
    {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E, 0x00},  // '0'
    {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E, 0x00},  // '1'
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F, 0x00},  // '2'
    {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E, 0x00},  // '3'
    {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02, 0x00},  // '4'
    {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E, 0x00},  // '5'
    {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E, 0x00},  // '6'
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08, 0x00},  // '7'
    {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E, 0x00},  // '8'
    {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C, 0x00},  // '9'
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00, 0x00},  // ':'
    {0x00, 0x0C, 0x0C, 0x00, 0x00, 0x0C, 0x04, 0x08},  // ';'
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02, 0x00},  // '<'
    {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00, 0x00},  // '='
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08, 0x00},  // '>'
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04, 0x00},  // '?'
    {0x0E, 0x11, 0x01, 0x0D, 0x15, 0x15, 0x0E, 0x00},  // '@'
    {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11, 0x00},  // 'A'
    {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E, 0x00},  // 'B'
    {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E, 0x00},  // 'C'
    {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C, 0x00},  // 'D'
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F, 0x00},  // 'E'
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10, 0x00},  // 'F'
    {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F, 0x00},  // 'G'
    {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11, 0x00},  // 'H'
    {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E, 0x00},  // 'I'
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C, 0x00},  // 'J'
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11, 0x00},  // 'K'
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F, 0x00},  // 'L'
    {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11, 0x00},  // 'M'
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11, 0x00},  // 'N'
    {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E, 0x00},  // 'O'
    {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10, 0x00},  // 'P'
    {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D, 0x00},  // 'Q'
    {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11, 0x00},  // 'R'
    {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E, 0x00},  // 'S'
    {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x00},  // 'T'
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E, 0x00},  // 'U'
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04, 0x00},  // 'V'
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A, 0x00},  // 'W'
    {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11, 0x00},  // 'X'
    {0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04, 0x00},  // 'Y'
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F, 0x00},  // 'Z'
    {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E, 0x00},  // '['
    {0x00, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00, 0x00},  // '\\'
    {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E, 0x00},  // ']'
    {0x04, 0x0A, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00},  // '^'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F, 0x00},  // '_'
    {0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00},  // '`'
    {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F, 0x00},  // 'a'
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E, 0x00},  // 'b'
    {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E, 0x00},  // 'c'
    {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F, 0x00},  // 'd'
    {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E, 0x00},  // 'e'
    {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08, 0x00},  // 'f'
    {0x00, 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E},  // 'g'
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11, 0x00},  // 'h'
    {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E, 0x00},  // 'i'
    {0x02, 0x00, 0x06, 0x02, 0x02, 0x02, 0x12, 0x0C},  // 'j'
    {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12, 0x00},  // 'k'
    {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E, 0x00},  // 'l'
    {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11, 0x00},  // 'm'
    {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11, 0x00},  // 'n'
    {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E, 0x00},  // 'o'
    {0x00, 0x00, 0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10},  // 'p'
    {0x00, 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x01},  // 'q'
    {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10, 0x00},  // 'r'
    {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E, 0x00},  // 's'
    {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06, 0x00},  // 't'
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D, 0x00},  // 'u'
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04, 0x00},  // 'v'
    {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A, 0x00},  // 'w'
    {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x00},  // 'x'
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x0E},  // 'y'
    {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F, 0x00},  // 'z'
    {0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02, 0x00},  // '{'
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x00},  // '|'
    {0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08, 0x00},  // '}'
    {0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00, 0x00},  // '~'
};
// clang-format on

constexpr int kMaxSide = 16384;
constexpr int64_t kMaxPixels = int64_t{1} << 25;
constexpr int kMargin = 12;
constexpr int kLabelScale = 2;  // axis, tick, legend and marker labels
constexpr int kTitleScale = 3;
constexpr Rgb kSubtle{90, 90, 90};

const uint8_t* glyph(char ch) {
  auto u = static_cast<unsigned char>(ch);
  if (u < 32 || u > 126) u = '?';
  return kFont[u - 32];
}

// Offset from an anchor to the start of a span of `len` pixels aligned as `a`.
int align_shift(Align a, int len) {
  switch (a) {
    case Align::kStart:
      return 0;
    case Align::kCenter:
      return len / 2;
    case Align::kEnd:
      return len - 1;
  }
  return 0;
}

// ---- PNG ----

uint32_t crc32_update(uint32_t c, const char* p, size_t n) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t v = i;
      for (int k = 0; k < 8; ++k) v = (v & 1) ? 0xEDB88320u ^ (v >> 1) : v >> 1;
      t[i] = v;
    }
    return t;
  }();
  for (size_t i = 0; i < n; ++i) c = table[(c ^ static_cast<uint8_t>(p[i])) & 0xFF] ^ (c >> 8);
  return c;
}

void put32(std::string& s, uint32_t v) {
  for (int k = 3; k >= 0; --k) s += static_cast<char>((v >> (8 * k)) & 0xFF);
}

void put_chunk(std::string& out, const char* type, const std::string& data) {
  put32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out.append(type, 4);
  out += data;
  put32(out, crc32_update(0xFFFFFFFFu, out.data() + start, out.size() - start) ^ 0xFFFFFFFFu);
}

// A zlib stream of "stored" (uncompressed) deflate blocks of at most 65535 bytes.
std::string zlib_stored(const std::string& raw) {
  std::string z = "\x78\x01";
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  size_t off = 0;
  do {
    const size_t len = std::min<size_t>(65535, raw.size() - off);
    const bool last = off + len >= raw.size();
    z += static_cast<char>(last ? 1 : 0);
    z += static_cast<char>(len & 0xFF);
    z += static_cast<char>(len >> 8);
    z += static_cast<char>(~len & 0xFF);
    z += static_cast<char>((~len >> 8) & 0xFF);
    z.append(raw, off, len);
    off += len;
  } while (off < raw.size());
  put32(z, (b << 16) | a);
  return z;
}

std::string zlib_deflate(const std::string& raw) {
  uLongf n = compressBound(static_cast<uLong>(raw.size()));
  std::string z(n, '\0');
  const int rc =
      compress2(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), 6);
  TRT_CHECK(rc == Z_OK, ErrorCode::kInternal, "PNG encoding: zlib compress2 failed ({})", rc);
  z.resize(n);
  return z;
}

// ---- axes ----

// A 1-2-5 step giving about `target` intervals over `range`.
double nice_step(double range, int target) {
  if (!(range > 0) || !std::isfinite(range)) return 1;
  const double raw = range / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f <= 1.0001 ? 1 : f <= 2.0001 ? 2 : f <= 5.0001 ? 5 : 10) * mag;
}

// The 1-2-5 step after `step`.
double next_step(double step) {
  const double mag = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  const double f = step / mag;
  return (f < 1.5 ? 2 : f < 3.5 ? 5 : 10) * mag;
}

std::vector<double> tick_values(double lo, double hi, double step) {
  std::vector<double> t;
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (int i = 0; i <= 1000; ++i) {
    const double v = first + i * step;
    if (v > hi + step * 1e-9) break;
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);  // no "-0"
  }
  return t;
}

std::string tick_label(double v) {
  return fmt::format("{:g}", v);
}

// A value with about four significant digits and no exponent (marker labels, subtitles).
std::string value_label(double v) {
  const double a = std::fabs(v);
  if (a >= 1000) return fmt::format("{:.0f}", v);
  if (a >= 100) return fmt::format("{:.1f}", v);
  if (a >= 10) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3f}", v);
}

// The left end of a line of `w` pixels centred on centre_x, moved inside the margins if it can be.
int centred_x(const Canvas& c, int centre_x, int w) {
  return std::clamp(centre_x - w / 2, kMargin, std::max(kMargin, c.width() - kMargin - w));
}

// Title, subtitle and legend rows above the plot.
// Caps on text lengths, so that a long model or tensor name cannot blow up the canvas.
constexpr int kMaxTitleChars = 90, kMaxLineChars = 150, kMaxMarkerChars = 60;

struct Header {
  Header(std::string_view t, std::string_view s, std::vector<LegendEntry> l)
      : title(elide_middle(t, kMaxTitleChars)),
        subtitle(elide_middle(s, kMaxLineChars)),
        legend(std::move(l)) {
    for (auto& e : legend) e.label = elide_middle(e.label, kMaxMarkerChars);
  }
  std::string title;
  std::string subtitle;
  std::vector<LegendEntry> legend;

  static int legend_width(const std::vector<LegendEntry>& l) {
    const int th = text_height(kLabelScale);
    int w = 0;
    for (const auto& e : l) w += (w ? 18 : 0) + th + 6 + text_width(e.label, kLabelScale);
    return w;
  }
  int height() const {
    int h = 0;
    if (!title.empty()) h += text_height(kTitleScale) + 10;
    if (!subtitle.empty()) h += text_height(kLabelScale) + 8;
    if (!legend.empty()) h += text_height(kLabelScale) + 8;
    return h;
  }
  int width() const {
    return std::max(
        {text_width(title, kTitleScale), text_width(subtitle, kLabelScale), legend_width(legend)});
  }
  // Title and subtitle centred on centre_x (kept inside the canvas), legend from legend_x.
  void draw(Canvas& c, int centre_x, int legend_x, int y) const {
    auto centred = [&](const std::string& s, int scale, Rgb col) {
      c.text(centred_x(c, centre_x, text_width(s, scale)), y, s, col, scale);
    };
    if (!title.empty()) {
      centred(title, kTitleScale, colors::kText);
      y += text_height(kTitleScale) + 10;
    }
    if (!subtitle.empty()) {
      centred(subtitle, kLabelScale, kSubtle);
      y += text_height(kLabelScale) + 8;
    }
    if (!legend.empty()) {
      const int th = text_height(kLabelScale);
      int x = std::clamp(legend_x, kMargin,
                         std::max(kMargin, c.width() - kMargin - legend_width(legend)));
      for (const auto& e : legend) {
        c.fill_rect(x, y, x + th - 1, y + th - 1, e.color);
        x += th + 6;
        c.text(x, y, e.label, colors::kText, kLabelScale);
        x += text_width(e.label, kLabelScale) + 18;
      }
    }
  }
};

int max_text_width(const std::vector<std::string>& v, int scale) {
  int w = 0;
  for (const auto& s : v) w = std::max(w, text_width(s, scale));
  return w;
}

}  // namespace

// ---- text ----

int text_width(std::string_view s, int scale) {
  if (s.empty()) return 0;
  scale = std::clamp(scale, 1, 16);
  return static_cast<int>(std::min<size_t>(s.size(), 1 << 20)) * kCellW * scale - scale;
}

std::string elide_middle(std::string_view s, int max_chars) {
  const size_t m = static_cast<size_t>(std::max(max_chars, 3));
  if (s.size() <= m) return std::string(s);
  const size_t keep = m - 2, tail = (keep + 1) / 2, head = keep - tail;
  return std::string(s.substr(0, head)) + ".." + std::string(s.substr(s.size() - tail));
}

// ---- canvas ----

Canvas::Canvas(int width, int height, Rgb background) : w_(width), h_(height) {
  TRT_CHECK_ARG(width >= 1 && height >= 1, "chart canvas of {}x{} pixels: sides must be >= 1",
                width, height);
  TRT_CHECK(width <= kMaxSide && height <= kMaxSide && int64_t{width} * height <= kMaxPixels,
            ErrorCode::kOutOfRange,
            "chart canvas of {}x{} pixels: at most {} per side and {} pixels in all", width, height,
            kMaxSide, kMaxPixels);
  rgb_.resize(static_cast<size_t>(width) * height * 3);
  for (size_t i = 0; i < rgb_.size(); i += 3) {
    rgb_[i] = background.r;
    rgb_[i + 1] = background.g;
    rgb_[i + 2] = background.b;
  }
}

Canvas Canvas::from_rgb(int width, int height, std::vector<uint8_t> rgb) {
  Canvas c(width, height, colors::kBlack);
  TRT_CHECK_ARG(rgb.size() == c.rgb_.size(), "{}x{} RGB canvas: {} bytes given, {} needed", width,
                height, rgb.size(), c.rgb_.size());
  c.rgb_ = std::move(rgb);
  return c;
}

Rgb Canvas::pixel(int x, int y) const {
  TRT_CHECK(x >= 0 && y >= 0 && x < w_ && y < h_, ErrorCode::kOutOfRange,
            "pixel ({}, {}) outside the {}x{} canvas", x, y, w_, h_);
  const uint8_t* p = &rgb_[(static_cast<size_t>(y) * w_ + x) * 3];
  return {p[0], p[1], p[2]};
}

void Canvas::set(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
  uint8_t* p = &rgb_[(static_cast<size_t>(y) * w_ + x) * 3];
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

void Canvas::fill_rect(int x0, int y0, int x1, int y1, Rgb c) {
  if (x0 > x1) std::swap(x0, x1);
  if (y0 > y1) std::swap(y0, y1);
  x0 = std::max(x0, 0), y0 = std::max(y0, 0);
  x1 = std::min(x1, w_ - 1), y1 = std::min(y1, h_ - 1);
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) set(x, y, c);
}

void Canvas::rect(int x0, int y0, int x1, int y1, Rgb c) {
  hline(x0, x1, y0, c);
  hline(x0, x1, y1, c);
  vline(x0, y0, y1, c);
  vline(x1, y0, y1, c);
}

void Canvas::hline(int x0, int x1, int y, Rgb c, int dash) {
  if (x0 > x1) std::swap(x0, x1);
  if (y < 0 || y >= h_) return;
  for (int x = std::max(x0, 0); x <= std::min(x1, w_ - 1); ++x)
    if (dash <= 0 || ((x - x0) / dash) % 2 == 0) set(x, y, c);
}

void Canvas::vline(int x, int y0, int y1, Rgb c, int dash) {
  if (y0 > y1) std::swap(y0, y1);
  if (x < 0 || x >= w_) return;
  for (int y = std::max(y0, 0); y <= std::min(y1, h_ - 1); ++y)
    if (dash <= 0 || ((y - y0) / dash) % 2 == 0) set(x, y, c);
}

void Canvas::line(int x0, int y0, int x1, int y1, Rgb c) {
  int64_t x = x0, y = y0;
  const int64_t dx = std::abs(int64_t{x1} - x0), dy = -std::abs(int64_t{y1} - y0);
  const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int64_t err = dx + dy;
  for (;;) {
    set(static_cast<int>(x), static_cast<int>(y), c);
    if (x == x1 && y == y1) break;
    const int64_t e2 = 2 * err;
    if (e2 >= dy) err += dy, x += sx;
    if (e2 <= dx) err += dx, y += sy;
  }
}

void Canvas::text(int x, int y, std::string_view s, Rgb c, int scale, TextDir dir) {
  scale = std::clamp(scale, 1, 16);
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t u0 = static_cast<int64_t>(i) * kCellW * scale;
    if (u0 > 2 * kMaxSide) break;  // the rest is off any canvas
    const uint8_t* g = glyph(s[i]);
    for (int r = 0; r < kGlyphH + kDescent; ++r) {
      for (int col = 0; col < kGlyphW; ++col) {
        if (((g[r] >> (kGlyphW - 1 - col)) & 1) == 0) continue;
        const int u = static_cast<int>(u0) + col * scale, v = r * scale;
        switch (dir) {
          case TextDir::kRight:
            fill_rect(x + u, y + v, x + u + scale - 1, y + v + scale - 1, c);
            break;
          case TextDir::kUp:  // unrotated right -> up, down -> right
            fill_rect(x + v, y - u - scale + 1, x + v + scale - 1, y - u, c);
            break;
        }
      }
    }
  }
}

void Canvas::text_aligned(int x, int y, std::string_view s, Rgb c, Align h, Align v, int scale,
                          TextDir dir) {
  const int tw = text_width(s, scale), th = text_height(std::clamp(scale, 1, 16));
  switch (dir) {
    case TextDir::kRight:
      text(x - align_shift(h, tw), y - align_shift(v, th), s, c, scale, dir);
      break;
    case TextDir::kUp:  // (x, y) of text() is the bottom-left corner of the rotated box
      text(x - align_shift(h, th), y + align_shift(v, tw), s, c, scale, dir);
      break;
  }
}

// ---- PNG ----

std::string encode_png(const Canvas& canvas, bool compress) {
  const int w = canvas.width(), h = canvas.height();
  const size_t row = static_cast<size_t>(w) * 3;
  std::string raw;
  raw.reserve((row + 1) * h);
  for (int y = 0; y < h; ++y) {
    raw += '\0';  // filter type 0 (none)
    raw.append(reinterpret_cast<const char*>(canvas.rgb().data()) + y * row, row);
  }
  std::string out = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put32(ihdr, static_cast<uint32_t>(w));
  put32(ihdr, static_cast<uint32_t>(h));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, filters, no interlace
  put_chunk(out, "IHDR", ihdr);
  put_chunk(out, "IDAT", compress ? zlib_deflate(raw) : zlib_stored(raw));
  put_chunk(out, "IEND", "");
  return out;
}

void write_png(const std::filesystem::path& path, const Canvas& canvas) {
  write_file_atomic(path, encode_png(canvas));
}

// ---- bar chart ----

Canvas bar_chart(const std::vector<Bar>& bars, const BarChartOptions& o) {
  TRT_CHECK_ARG(std::isfinite(o.y_min) && std::isfinite(o.y_tick),
                "bar chart: y_min and y_tick must be finite");
  TRT_CHECK_ARG(!o.y_max || (std::isfinite(*o.y_max) && *o.y_max > o.y_min),
                "bar chart: y_max ({}) must be finite and above y_min ({})", o.y_max.value_or(0),
                o.y_min);
  TRT_CHECK_ARG(
      o.plot_width >= 1 && o.plot_width <= 8000 && o.plot_height >= 20 && o.plot_height <= 4000,
      "bar chart: plot size {}x{} outside 1..8000 x 20..4000", o.plot_width, o.plot_height);
  const int n = static_cast<int>(bars.size());
  TRT_CHECK(n <= 8000, ErrorCode::kOutOfRange, "bar chart: {} bars, at most 8000 fit", n);

  // Value range: y_min up to the largest finite value or reference line, rounded up to a tick.
  const double lo = o.y_min;
  double hi = o.y_max.value_or(lo), step = o.y_tick;
  if (!o.y_max) {
    double top = lo;
    for (const auto& b : bars)
      if (std::isfinite(b.value)) top = std::max(top, b.value);
    for (const auto& l : o.lines)
      if (std::isfinite(l.value)) top = std::max(top, l.value);
    if (!(top > lo)) top = lo + 1;
    if (!(step > 0) || (top - lo) / step > 40) step = nice_step(top - lo, 6);
    hi = lo + std::ceil((top - lo) / step - 1e-9) * step;
  }
  if (!(step > 0)) step = nice_step(hi - lo, 6);
  while ((hi - lo) / step > 40) step = next_step(step);
  const std::vector<double> ticks = tick_values(lo, hi, step);
  std::vector<std::string> tick_text;
  for (double t : ticks) tick_text.push_back(tick_label(t));

  // Horizontal layout: y label, tick labels, the bars, reference line labels.
  const int th = text_height(kLabelScale);
  const int y_label_w = o.y_label.empty() ? 0 : th + 10;
  const int px0 = kMargin + y_label_w + max_text_width(tick_text, kLabelScale) + 8;  // y axis
  int pitch = n ? std::clamp(o.plot_width / n, 1, 40) : o.plot_width;
  if (n && n <= o.label_all_max) pitch = std::max(pitch, kCellH + 2);
  const int plot_w = std::max(n * pitch, n ? std::min(o.plot_width, 400) : o.plot_width);
  const int bars_x = px0 + 1 + (plot_w - n * pitch) / 2;  // left end of the first slot
  const int px1 = px0 + plot_w + 1;                       // right end of the plot
  int ref_w = 0;
  std::vector<std::string> ref_text;
  for (const auto& l : o.lines) {
    ref_text.push_back(elide_middle(l.label, kMaxMarkerChars));
    ref_w = std::max(ref_w, text_width(ref_text.back(), kLabelScale));
  }

  // Bar labels: rotated, every k-th bar so that neighbours do not overlap.
  const int label_scale = pitch >= 2 * kCellH + 2 ? 2 : 1;
  const int k = n ? std::max(1, (kCellH * label_scale + 2 + pitch - 1) / pitch) : 1;
  std::vector<std::string> labels(bars.size());
  int band = 0;
  for (int i = 0; i < n; i += k) {
    labels[i] = elide_middle(bars[i].label, o.max_label_chars);
    band = std::max(band, text_width(labels[i], label_scale));
  }
  if (band) band += 8;
  std::string x_label = o.x_label;
  if (k > 1)
    x_label += fmt::format("{}every {}{} labelled", x_label.empty() ? "" : ", ", k,
                           k == 2   ? "nd"
                           : k == 3 ? "rd"
                                    : "th");
  x_label = elide_middle(x_label, kMaxLineChars);

  // Vertical layout: header, plot, bar labels, x label.
  const Header header{o.title, o.subtitle, o.legend};
  const int py0 = kMargin + header.height() + 12;  // room for '^' and the top tick label
  const int py1 = py0 + o.plot_height;             // x axis
  const int width = std::max({px1 + (ref_w ? 8 + ref_w : 0) + kMargin, header.width() + 2 * kMargin,
                              px0 + text_width(x_label, kLabelScale) + kMargin});
  const int height = py1 + 6 + band + (x_label.empty() ? 0 : th + 8) + kMargin;
  Canvas c(width, height);

  auto ypix = [&](double v) {
    return py1 - static_cast<int>(std::lround((v - lo) / (hi - lo) * (py1 - py0)));
  };
  for (size_t i = 0; i < ticks.size(); ++i) {
    const int y = ypix(ticks[i]);
    c.hline(px0 + 1, px1, y, colors::kGrid);
    c.hline(px0 - 4, px0, y, colors::kAxis);
    c.text_aligned(px0 - 7, y, tick_text[i], colors::kText, Align::kEnd, Align::kCenter,
                   kLabelScale);
  }
  const int gap = pitch >= 3 ? std::max(1, pitch / 5) : 0;
  for (int i = 0; i < n; ++i) {
    const Bar& b = bars[i];
    const int bx0 = bars_x + i * pitch + gap / 2, bx1 = bx0 + pitch - gap - 1;
    const int cx = (bx0 + bx1) / 2;
    if (std::isnan(b.value)) {
      c.text_aligned(cx, py1 - 2, "?", b.color, Align::kCenter, Align::kEnd);
    } else if (b.value > lo) {
      const int y = std::min(ypix(std::min(b.value, hi)), py1 - 1);
      c.fill_rect(bx0, y, bx1, py1 - 1, b.color);
      if (b.value > hi)
        c.text_aligned(cx, py0 - 3, "^", b.color, Align::kCenter, Align::kEnd,
                       pitch >= 2 * kCellW ? 2 : 1);
    }
    if (!labels[i].empty()) {
      if (k > 1) c.vline(cx, py1 + 1, py1 + 3, colors::kAxis);
      c.text_aligned(cx, py1 + 6, labels[i], colors::kText, Align::kCenter, Align::kEnd,
                     label_scale, TextDir::kUp);
    }
  }
  for (size_t i = 0; i < o.lines.size(); ++i) {
    const RefLine& l = o.lines[i];
    if (!(l.value >= lo && l.value <= hi)) continue;
    const int y = ypix(l.value);
    c.hline(px0 + 1, px1, y, l.color, 6);
    c.text_aligned(px1 + 8, y, ref_text[i], l.color, Align::kStart, Align::kCenter, kLabelScale);
  }
  c.vline(px0, py0, py1, colors::kAxis);
  c.hline(px0, px1, py1, colors::kAxis);
  if (!o.y_label.empty())
    c.text_aligned(kMargin, (py0 + py1) / 2, o.y_label, colors::kText, Align::kStart,
                   Align::kCenter, kLabelScale, TextDir::kUp);
  if (!x_label.empty())
    c.text(centred_x(c, (px0 + px1) / 2, text_width(x_label, kLabelScale)), py1 + 6 + band + 4,
           x_label, colors::kText, kLabelScale);
  header.draw(c, width / 2, px0, kMargin);
  return c;
}

// ---- histogram ----

Canvas histogram(const std::vector<double>& values, const HistogramOptions& o) {
  TRT_CHECK_ARG(
      o.plot_width >= 16 && o.plot_width <= 8000 && o.plot_height >= 20 && o.plot_height <= 4000,
      "histogram: plot size {}x{} outside 16..8000 x 20..4000", o.plot_width, o.plot_height);
  std::vector<double> v;
  for (double x : values)
    if (std::isfinite(x)) v.push_back(x);
  TRT_CHECK_ARG(!v.empty(), "histogram: no finite value to plot");
  const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  double lo = *mn, hi = *mx;
  int64_t left_out = 0;
  if (o.x_max > lo && o.x_max < hi) {
    hi = o.x_max;
    left_out = std::count_if(v.begin(), v.end(), [&](double x) { return x > hi; });
  }
  const bool all_equal = !(hi > lo);
  if (all_equal) {  // a small range around the value
    const double d = lo != 0 ? std::fabs(lo) * 0.05 : 0.5;
    lo -= d, hi += d;
  }
  int bins = o.bins > 0
                 ? std::min(o.bins, 1000)
                 : std::clamp(static_cast<int>(std::ceil(std::sqrt(double(v.size())))), 8, 60);
  if (all_equal && bins % 2 == 0) --bins;  // the value in the middle bin
  std::vector<int64_t> counts(bins, 0);
  for (double x : v) {
    if (x > hi) continue;
    const int b = static_cast<int>((x - lo) / (hi - lo) * bins);
    ++counts[std::clamp(b, 0, bins - 1)];
  }
  const int64_t max_count = *std::max_element(counts.begin(), counts.end());

  // x axis: a 1-2-5 step whose labels do not collide; the axis ends on ticks.
  const int plot_w = o.plot_width;
  double xstep = nice_step(hi - lo, 8), ax_lo = 0, ax_hi = 0;
  std::vector<double> xticks;
  std::vector<std::string> xtick_text;
  for (int iter = 0; iter < 30; ++iter) {
    ax_lo = std::floor(lo / xstep + 1e-9) * xstep;
    ax_hi = std::ceil(hi / xstep - 1e-9) * xstep;
    xticks = tick_values(ax_lo, ax_hi, xstep);
    xtick_text.clear();
    for (double t : xticks) xtick_text.push_back(tick_label(t));
    const double px_per_step = xstep / (ax_hi - ax_lo) * (plot_w - 1);
    if (px_per_step >= max_text_width(xtick_text, kLabelScale) + 12) break;
    xstep = next_step(xstep);
  }
  // y axis: integer counts.
  const double ystep = std::max(1.0, std::round(nice_step(double(max_count), 5)));
  const double y_hi = std::max(ystep, std::ceil(double(max_count) / ystep) * ystep);
  const std::vector<double> yticks = tick_values(0, y_hi, ystep);
  std::vector<std::string> ytick_text;
  for (double t : yticks) ytick_text.push_back(tick_label(t));

  const int th = text_height(kLabelScale);
  const int y_label_w = o.y_label.empty() ? 0 : th + 10;
  const int px0 = kMargin + y_label_w + max_text_width(ytick_text, kLabelScale) + 8;
  const int px1 = px0 + plot_w + 1;
  auto xpix = [&](double x) {
    return px0 + 1 + static_cast<int>(std::lround((x - ax_lo) / (ax_hi - ax_lo) * (plot_w - 1)));
  };

  // Marker labels sit above the plot, right of their line, in a staircase: a label that would
  // overlap the previous ones goes one row lower, so no line crosses another marker's label.
  struct Placed {
    const Marker* m;
    std::string label;
    int x, row;
  };
  std::vector<Placed> placed;
  for (const auto& m : o.markers)
    if (m.value >= ax_lo && m.value <= ax_hi)
      placed.push_back({&m, elide_middle(m.label, kMaxMarkerChars), xpix(m.value), 0});
  std::stable_sort(placed.begin(), placed.end(),
                   [](const Placed& a, const Placed& b) { return a.x < b.x; });
  int rows = 0, end = -1000000, right = px1;
  for (size_t i = 0; i < placed.size(); ++i) {
    Placed& p = placed[i];
    p.row = (i == 0 || p.x + 4 > end + 10) ? 0 : placed[i - 1].row + 1;
    end = std::max(end, p.x + 4 + text_width(p.label, kLabelScale));
    right = std::max(right, end);
    rows = std::max(rows, p.row + 1);
  }
  const int row_h = th + 6;

  std::string x_label = o.x_label;
  if (left_out > 0)
    x_label += fmt::format("{}{} value{} above {} not shown", x_label.empty() ? "" : "; ", left_out,
                           left_out == 1 ? "" : "s", value_label(hi));
  x_label = elide_middle(x_label, kMaxLineChars);
  const Header header{o.title, o.subtitle, {}};
  const int rows_y = kMargin + header.height() + 4;
  const int py0 = rows_y + rows * row_h + 10;
  const int py1 = py0 + o.plot_height;
  const int width =
      std::max({right + kMargin, header.width() + 2 * kMargin,
                px0 + text_width(x_label, kLabelScale) + kMargin,
                xpix(ax_hi) + text_width(xtick_text.back(), kLabelScale) / 2 + kMargin});
  const int height = py1 + 7 + th + (x_label.empty() ? 0 : th + 12) + kMargin;
  Canvas c(width, height);

  auto ypix = [&](double n) { return py1 - static_cast<int>(std::lround(n / y_hi * (py1 - py0))); };
  for (size_t i = 0; i < yticks.size(); ++i) {
    const int y = ypix(yticks[i]);
    c.hline(px0 + 1, px1, y, colors::kGrid);
    c.hline(px0 - 4, px0, y, colors::kAxis);
    c.text_aligned(px0 - 7, y, ytick_text[i], colors::kText, Align::kEnd, Align::kCenter,
                   kLabelScale);
  }
  const double bin_w = (hi - lo) / bins;
  for (int b = 0; b < bins; ++b) {
    if (counts[b] == 0) continue;
    const int x0 = xpix(lo + b * bin_w);
    int x1 = xpix(lo + (b + 1) * bin_w) - 1;
    if (x1 - x0 >= 3) --x1;  // a 1-pixel gap between wide bins
    c.fill_rect(x0, std::min(ypix(double(counts[b])), py1 - 1), std::max(x0, x1), py1 - 1,
                o.bar_color);
  }
  for (size_t i = 0; i < xticks.size(); ++i) {
    const int x = xpix(xticks[i]);
    c.vline(x, py1, py1 + 4, colors::kAxis);
    c.text_aligned(x, py1 + 7, xtick_text[i], colors::kText, Align::kCenter, Align::kStart,
                   kLabelScale);
  }
  for (const auto& p : placed) {
    const int ly = rows_y + p.row * row_h;
    c.vline(p.x, ly, py1 - 1, p.m->color, 4);
    c.text(p.x + 4, ly, p.label, p.m->color, kLabelScale);
  }
  c.vline(px0, py0, py1, colors::kAxis);
  c.hline(px0, px1, py1, colors::kAxis);
  if (!o.y_label.empty())
    c.text_aligned(kMargin, (py0 + py1) / 2, o.y_label, colors::kText, Align::kStart,
                   Align::kCenter, kLabelScale, TextDir::kUp);
  if (!x_label.empty())
    c.text(centred_x(c, (px0 + px1) / 2, text_width(x_label, kLabelScale)), py1 + 7 + th + 10,
           x_label, colors::kText, kLabelScale);
  header.draw(c, width / 2, px0, kMargin);
  return c;
}

double quantile_sorted(const std::vector<double>& sorted, double q) {
  TRT_CHECK_ARG(!sorted.empty(), "quantile of an empty list");
  const double pos = std::clamp(q, 0.0, 1.0) * double(sorted.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  const size_t j = std::min(i + 1, sorted.size() - 1);
  return sorted[i] + (sorted[j] - sorted[i]) * (pos - double(i));
}

void write_latency_histogram_png(const std::filesystem::path& path,
                                 const std::vector<double>& latencies_ms,
                                 const std::string& title) {
  std::vector<double> v;
  for (double x : latencies_ms)
    if (std::isfinite(x)) v.push_back(x);
  TRT_CHECK_ARG(!v.empty(), "latency histogram {}: no finite latency to plot", path.string());
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  const double med = quantile_sorted(v, 0.5), p90 = quantile_sorted(v, 0.9),
               p99 = quantile_sorted(v, 0.99);
  HistogramOptions o;
  o.title = title.empty() ? "Latency" : title;
  o.subtitle =
      fmt::format("n = {}   min {}   mean {}   max {} ms", v.size(), value_label(v.front()),
                  value_label(sum / double(v.size())), value_label(v.back()));
  o.x_label = "latency (ms)";
  o.x_max = p99 + (p99 - v.front());
  o.markers = {{med, "median " + value_label(med), Rgb{30, 130, 60}},
               {p90, "p90 " + value_label(p90), Rgb{205, 115, 0}},
               {p99, "p99 " + value_label(p99), colors::kRed}};
  write_png(path, histogram(v, o));
}

}  // namespace trtutils::chart

namespace trtutils {

void plot_latency_histogram_png(const std::vector<double>& latencies_ms,
                                const std::filesystem::path& path, const std::string& title) {
  chart::write_latency_histogram_png(path, latencies_ms, title);
}

}  // namespace trtutils
