// Small PNG charts with text labels (quantize --plot, benchmark --plot), with no dependency
// beyond zlib (already linked through libpng): an RGB canvas, a built-in 5x7 bitmap font, a PNG
// encoder, a bar chart and a histogram.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trtutils::chart {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

namespace colors {
inline constexpr Rgb kWhite{255, 255, 255};
inline constexpr Rgb kBlack{0, 0, 0};
inline constexpr Rgb kText{30, 30, 30};
inline constexpr Rgb kAxis{60, 60, 60};
inline constexpr Rgb kGrid{222, 222, 222};
inline constexpr Rgb kRed{214, 39, 40};
inline constexpr Rgb kOrange{240, 160, 40};
inline constexpr Rgb kGreen{60, 160, 80};
inline constexpr Rgb kBlue{50, 110, 190};
inline constexpr Rgb kPurple{140, 70, 170};
}  // namespace colors

// The built-in font: 5x7 glyphs for ASCII 32..126 (others are drawn as '?') in 6x9 cells: one
// column of spacing, one row below the 7 for the descenders of g j p q y , ; and one row of
// spacing; all multiplied by an integer scale (clamped to 1..16).
inline constexpr int kGlyphW = 5, kGlyphH = 7, kDescent = 1, kCellW = 6, kCellH = 9;
// Extent of a one-line string without descenders: width = 6 * scale * chars - scale (0 when
// empty), height = 7 * scale. Descenders go one row (scale pixels) below.
int text_width(std::string_view s, int scale = 1);
inline int text_height(int scale = 1) {
  return kGlyphH * scale;
}
// `s` shortened to at most max_chars (>= 3) by replacing its middle with "..", which keeps the
// two ends of tensor names such as "/backbone/layer3/conv2/Conv_output_0" apart.
std::string elide_middle(std::string_view s, int max_chars);

enum class Align { kStart, kCenter, kEnd };
enum class TextDir {
  kRight,  // normal text
  kUp,     // rotated 90 degrees counter-clockwise: reads bottom to top (y-axis labels)
};

// An RGB image, white unless told otherwise. Drawing is clipped to the canvas; coordinates are
// pixels from the top-left corner, rectangles and lines include both end points.
class Canvas {
 public:
  // Error(kInvalidArgument) when a side is < 1, kOutOfRange over 16384 per side or 2^25 pixels.
  Canvas(int width, int height, Rgb background = colors::kWhite);
  // A canvas holding `rgb` (width * height * 3 bytes, interleaved RGB rows top to bottom), e.g.
  // a photo to draw on: the same limits, and Error(kInvalidArgument) when rgb has another size.
  static Canvas from_rgb(int width, int height, std::vector<uint8_t> rgb);

  int width() const { return w_; }
  int height() const { return h_; }
  // Interleaved RGB rows, top to bottom, no padding.
  const std::vector<uint8_t>& rgb() const { return rgb_; }
  // Error(kOutOfRange) outside the canvas.
  Rgb pixel(int x, int y) const;

  void set(int x, int y, Rgb c);
  void fill_rect(int x0, int y0, int x1, int y1, Rgb c);   // any corner order
  void rect(int x0, int y0, int x1, int y1, Rgb c);        // outline
  void hline(int x0, int x1, int y, Rgb c, int dash = 0);  // dash > 0: dash px on, dash px off
  void vline(int x, int y0, int y1, Rgb c, int dash = 0);
  void line(int x0, int y0, int x1, int y1, Rgb c);  // any direction (Bresenham)

  // Draws `s` with the top-left corner of its first cell at (x, y) for kRight. For kUp the text
  // runs upwards from (x, y), which is the bottom-left corner of the rotated ink box (width
  // text_height, height text_width). '\n' is not special.
  void text(int x, int y, std::string_view s, Rgb c, int scale = 1, TextDir dir = TextDir::kRight);
  // As text(), placed relative to the anchor (x, y): for kRight, h aligns x (left edge / centre /
  // right edge of the ink) and v aligns y (top / middle / bottom); for kUp, h aligns x over the
  // rotated box's width and v aligns y over its height (kStart = bottom end of the text).
  void text_aligned(int x, int y, std::string_view s, Rgb c, Align h, Align v, int scale = 1,
                    TextDir dir = TextDir::kRight);

 private:
  int w_, h_;
  std::vector<uint8_t> rgb_;
};

// An 8-bit RGB PNG (IHDR, one IDAT, IEND). compress = false writes zlib "stored" blocks (no
// deflate at all: larger files, trivially decodable); true deflates with zlib.
std::string encode_png(const Canvas& canvas, bool compress = true);
// encode_png, written atomically; Error(kIO) naming the path on failure.
void write_png(const std::filesystem::path& path, const Canvas& canvas);

// A horizontal reference line drawn across the plot at `value`, with `label` at its right end.
struct RefLine {
  double value = 0;
  std::string label;
  Rgb color = colors::kAxis;
};

// A vertical marker line at x = `value` (histograms), with `label` at its top.
struct Marker {
  double value = 0;
  std::string label;
  Rgb color = colors::kAxis;
};

struct LegendEntry {
  std::string label;
  Rgb color;
};

struct Bar {
  std::string label;
  double value = 0;  // +inf and values above the top are clipped (and marked with '^'), NaN
                     // draws no bar but a '?', -inf and values below y_min draw no bar
  Rgb color = colors::kBlue;
};

struct BarChartOptions {
  std::string title;
  std::string subtitle;  // a smaller line under the title
  std::string y_label;
  std::string x_label;
  double y_min = 0;
  std::optional<double> y_max;  // unset: from the data and the lines, rounded up to a tick
  double y_tick = 0;            // <= 0: a 1-2-5 step giving about 6 ticks
  std::vector<RefLine> lines;
  std::vector<LegendEntry> legend;  // drawn at the top right of the plot
  // Bars get a pitch of plot_width / n pixels (at least 1, at most 40; a few bars are centred in
  // a plot at least 400 pixels wide). Up to `label_all_max`
  // bars, every bar gets its rotated label (the pitch is raised to fit one line of text); past
  // that, every k-th bar, k chosen so that labels do not overlap.
  int plot_width = 1200;
  int plot_height = 360;
  int label_all_max = 64;
  int max_label_chars = 32;  // longer labels are elided in the middle
};

// Error(kInvalidArgument) on bad options (non-finite limits, y_max <= y_min, plot sizes outside
// 1..8000 x 20..4000), kOutOfRange over 8000 bars.
Canvas bar_chart(const std::vector<Bar>& bars, const BarChartOptions& options);

struct HistogramOptions {
  std::string title;
  std::string subtitle;  // a smaller line under the title (e.g. n, min, mean, max)
  std::string x_label;
  std::string y_label = "count";
  int bins = 0;  // <= 0: ceil(sqrt(n)) clamped to 8..60; at most 1000; odd if all are equal
  // Values above x_max are left out (a long tail would squeeze the rest into a few bins); the
  // x label says how many. Ignored when it is not above the smallest value.
  double x_max = std::numeric_limits<double>::infinity();
  Rgb bar_color = colors::kBlue;
  std::vector<Marker> markers;
  int plot_width = 800;
  int plot_height = 360;
};

// The finite values of `values` binned over [min, max] (widened a little when all are equal).
// Error(kInvalidArgument) when there is no finite value.
Canvas histogram(const std::vector<double>& values, const HistogramOptions& options);

// The q-quantile (0..1) of `sorted` (ascending, not empty) by linear interpolation between
// closest ranks (numpy's default).
double quantile_sorted(const std::vector<double>& sorted, double q);

// For `trtutils benchmark --plot`: a histogram of the latencies (ms) with median, p90 and p99
// marker lines and an "n, min, mean, max" subtitle, written atomically. The x axis stops at
// p99 + (p99 - min) when the maximum is beyond it (outliers are counted in the x label).
// Non-finite values are ignored; Error(kInvalidArgument) when none is left, kIO when the file
// cannot be written.
void write_latency_histogram_png(const std::filesystem::path& path,
                                 const std::vector<double>& latencies_ms, const std::string& title);

}  // namespace trtutils::chart
