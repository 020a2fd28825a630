// compare --plot: one bar per compared tensor (layer order), its SQNR; identical tensors (+inf
// dB) reach the top of the chart marked '^'.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/png_chart.h"
#include "trtutils/compare.h"

namespace trtutils::compare {

void plot_sqnr_png(const std::vector<TensorComparison>& comparisons,
                   const std::filesystem::path& path, const std::string& title) {
  namespace ch = trtutils::chart;
  std::vector<ch::Bar> bars;
  double lowest = 0, highest = 0;
  const TensorComparison* first_bad = nullptr;
  for (const auto& c : comparisons) {
    bars.push_back({c.name, c.sqnr_db, c.pass ? ch::colors::kGreen : ch::colors::kRed});
    if (std::isfinite(c.sqnr_db)) {
      lowest = std::min(lowest, c.sqnr_db);
      highest = std::max(highest, c.sqnr_db);
    }
    if (!c.pass && !first_bad) first_bad = &c;
  }
  ch::BarChartOptions o;
  o.title = title;
  o.subtitle = first_bad ? fmt::format("{} tensors; first outside the tolerance: {}",
                                       comparisons.size(), ch::elide_middle(first_bad->name, 48))
                         : fmt::format("{} tensors, all within the tolerance", comparisons.size());
  o.y_label = "SQNR (dB)";
  o.x_label = "tensors in topological order (+inf: identical)";
  o.y_min = std::floor(lowest / 10) * 10;
  o.y_max = std::max(40.0, std::ceil(highest / 10) * 10 + 10);
  o.y_tick = 10;
  o.legend = {{"within tolerance", ch::colors::kGreen}, {"outside", ch::colors::kRed}};
  ch::write_png(path, ch::bar_chart(bars, o));
}

}  // namespace trtutils::compare
