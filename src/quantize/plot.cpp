// A PNG bar chart of per-tensor SQNR (--plot): one bar per quantized tensor in graph order,
// grey gridlines every 10 dB from 0 to the top, bars coloured by SQNR (red < 20 dB, orange
// < 30 dB, green above). No text: the JSON report has the names and values in the same order.
// The PNG is written uncompressed (zlib "stored" blocks) so that no codec is needed.
#include <algorithm>
#include <array>
#include <cmath>

#include "quantize/report.h"
#include "trtutils/file_util.h"

namespace trtutils::quantize {

namespace {

uint32_t crc32(const uint8_t* p, size_t n, uint32_t c = 0xFFFFFFFFu) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t v = i;
      for (int k = 0; k < 8; ++k) v = (v & 1) ? 0xEDB88320u ^ (v >> 1) : v >> 1;
      t[i] = v;
    }
    return t;
  }();
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c;
}

void put32(std::string& s, uint32_t v) {
  for (int k = 3; k >= 0; --k) s += static_cast<char>((v >> (8 * k)) & 0xFF);
}

void chunk(std::string& out, const char* type, const std::string& data) {
  put32(out, static_cast<uint32_t>(data.size()));
  std::string td = std::string(type, 4) + data;
  out += td;
  put32(out, crc32(reinterpret_cast<const uint8_t*>(td.data()), td.size()) ^ 0xFFFFFFFFu);
}

std::string png_rgb(int w, int h, const std::vector<uint8_t>& rgb) {
  std::string raw;
  for (int y = 0; y < h; ++y) {
    raw += '\0';  // filter: none
    raw.append(reinterpret_cast<const char*>(rgb.data()) + static_cast<size_t>(y) * w * 3,
               static_cast<size_t>(w) * 3);
  }
  std::string z = "\x78\x01";  // zlib header, no compression
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  for (size_t off = 0; off < raw.size() || off == 0; off += 65535) {
    const size_t len = std::min<size_t>(65535, raw.size() - off);
    const bool last = off + len >= raw.size();
    z += static_cast<char>(last ? 1 : 0);
    z += static_cast<char>(len & 0xFF);
    z += static_cast<char>(len >> 8);
    z += static_cast<char>(~len & 0xFF);
    z += static_cast<char>((~len >> 8) & 0xFF);
    z.append(raw, off, len);
    if (last) break;
  }
  put32(z, (b << 16) | a);
  std::string out = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put32(ihdr, static_cast<uint32_t>(w));
  put32(ihdr, static_cast<uint32_t>(h));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", "");
  return out;
}

}  // namespace

void plot_sqnr_png(const std::vector<QuantizeTensorMetrics>& tensors,
                   const std::filesystem::path& path) {
  const int n = std::max<int>(1, static_cast<int>(tensors.size()));
  const int bar = std::clamp(1200 / n, 2, 16), w = n * bar + 20, h = 300;
  double top = 10;
  for (const auto& t : tensors)
    if (std::isfinite(t.sqnr_db)) top = std::max(top, std::ceil(t.sqnr_db / 10) * 10);
  std::vector<uint8_t> img(static_cast<size_t>(w) * h * 3, 255);
  auto px = [&](int x, int y, uint8_t r, uint8_t g, uint8_t b) {
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    uint8_t* p = &img[(static_cast<size_t>(y) * w + x) * 3];
    p[0] = r, p[1] = g, p[2] = b;
  };
  const int y0 = h - 10, plot_h = h - 20;
  for (double db = 0; db <= top; db += 10) {
    const int y = y0 - static_cast<int>(db / top * plot_h);
    for (int x = 0; x < w; ++x) px(x, y, 200, 200, 200);
  }
  for (int i = 0; i < static_cast<int>(tensors.size()); ++i) {
    const double s =
        std::isfinite(tensors[i].sqnr_db) ? std::clamp(tensors[i].sqnr_db, 0.0, top) : top;
    const int hh = static_cast<int>(s / top * plot_h);
    const bool red = s < 20, orange = s < 30;
    for (int x = 10 + i * bar; x < 10 + (i + 1) * bar - 1; ++x)
      for (int y = y0 - hh; y <= y0; ++y)
        px(x, y,
           red      ? 214
           : orange ? 240
                    : 60,
           red      ? 39
           : orange ? 160
                    : 160,
           red      ? 40
           : orange ? 40
                    : 80);
  }
  write_file_atomic(path, png_rgb(w, h, img));
}

}  // namespace trtutils::quantize
