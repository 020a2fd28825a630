// Latency statistics shared by benchmark and detect --iterations.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace trtutils::cli {

// The p-th percentile (0..100) of v, linearly interpolated between ranks (numpy's default).
inline double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace trtutils::cli
