// The PNG bar chart of per-tensor SQNR (--plot): one bar per quantized tensor in graph order,
// labelled with the tensor name (shortened; every k-th one past 64 bars), coloured by SQNR (red <
// 20 dB, orange < 30 dB, green above) with dashed 20 dB and 30 dB reference lines. The JSON report
// has the same tensors in the same order.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include "core/png_chart.h"
#include "quantize/report.h"

namespace trtutils::quantize {

namespace {

// Bar labels: the tensor names without the exporter's "_output_0" suffix and without the leading
// path components that all '/' names share ("/backbone/..."), so that the distinguishing middle
// fits; *common gets what was left out. The JSON report keeps the full names.
std::vector<std::string> bar_labels(const std::vector<QuantizeTensorMetrics>& tensors,
                                    std::string* common) {
  std::vector<std::string> out;
  for (const auto& t : tensors) {
    std::string s = t.name.empty() ? t.node : t.name;
    constexpr std::string_view kSuffix = "_output_0";
    if (s.size() > kSuffix.size() && s.ends_with(kSuffix)) s.resize(s.size() - kSuffix.size());
    out.push_back(std::move(s));
  }
  std::string prefix;
  int paths = 0;
  for (const auto& s : out) {
    if (s.empty() || s[0] != '/') continue;
    if (paths++ == 0) {
      prefix = s;
    } else {
      size_t n = 0;
      while (n < prefix.size() && n < s.size() && prefix[n] == s[n]) ++n;
      prefix.resize(n);
    }
  }
  // Cut back to a component boundary, keeping at least one component of every name.
  const size_t slash = prefix.rfind('/');
  prefix.resize(slash == std::string::npos ? 0 : slash + 1);
  for (const auto& s : out)
    if (!s.empty() && s[0] == '/' && s.size() == prefix.size()) prefix.clear();
  common->clear();
  if (paths < 2 || prefix.size() <= 1) return out;
  *common = prefix;
  for (auto& s : out)
    if (s.starts_with(prefix)) s.erase(0, prefix.size());
  return out;
}

}  // namespace

void plot_sqnr_png(const std::vector<QuantizeTensorMetrics>& tensors,
                   const std::filesystem::path& path) {
  namespace ch = trtutils::chart;
  std::string common;
  const std::vector<std::string> labels = bar_labels(tensors, &common);
  std::vector<ch::Bar> bars;
  bars.reserve(tensors.size());
  double lowest = 0;
  const QuantizeTensorMetrics* worst = nullptr;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const QuantizeTensorMetrics& t = tensors[i];
    const double s = t.sqnr_db;
    const ch::Rgb color = !(s >= 20) ? ch::colors::kRed
                          : s < 30   ? ch::colors::kOrange
                                     : ch::colors::kGreen;
    bars.push_back({labels[i], s, color});
    if (std::isfinite(s)) lowest = std::min(lowest, s);
    if (!std::isnan(s) && (!worst || s < worst->sqnr_db)) worst = &t;
  }
  ch::BarChartOptions o;
  o.title = "Per-tensor SQNR (dB)";
  if (worst)
    o.subtitle = fmt::format("{} quantized tensor{}; lowest {:.1f} dB: {}", tensors.size(),
                             tensors.size() == 1 ? "" : "s", worst->sqnr_db,
                             ch::elide_middle(worst->name.empty() ? worst->node : worst->name, 48));
  else
    o.subtitle = "no quantized tensor was evaluated";
  o.y_label = "SQNR (dB)";
  o.x_label = "quantized tensors in graph order";
  if (!common.empty())
    o.x_label += fmt::format(" (names shown without {})", ch::elide_middle(common, 40));
  o.y_min = std::floor(lowest / 10) * 10;  // 0 unless some tensor is below 0 dB
  o.y_tick = 10;
  o.lines = {{20, "20 dB", ch::Rgb{190, 30, 30}}, {30, "30 dB", ch::Rgb{205, 115, 0}}};
  o.legend = {{"< 20 dB", ch::colors::kRed},
              {"20 - 30 dB", ch::colors::kOrange},
              {">= 30 dB", ch::colors::kGreen}};
  ch::write_png(path, ch::bar_chart(bars, o));
}

}  // namespace trtutils::quantize
