// Latency statistics shared by benchmark and detect --iterations.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
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

// benchmark's warning for unsteady timings: a p99 over twice the median, by at least
// kUnsteadyGapMs (below that it is the OS's timer and scheduler jitter, nothing to act on);
// empty otherwise. `threads` is the --threads value (0: all cores).
inline constexpr double kUnsteadyGapMs = 0.5;
inline std::string unsteady_latency_warning(double median_ms, double p99_ms, int threads) {
  if (!(p99_ms > 2 * median_ms) || !(p99_ms - median_ms >= kUnsteadyGapMs)) return "";
  const std::string causes =
      threads == 1 ? "other load on this machine (processes competing for the cores)"
                   : fmt::format(
                         "other load on this machine (processes competing for the cores), or "
                         "more threads than free cores{}; try --threads 1 (or fewer threads than "
                         "idle cores)",
                         threads == 0 ? " (--threads 0 takes every core)" : "");
  return fmt::format(
      "p99 latency {:.3f} ms is {:.1f}x the median {:.3f} ms: the timings are unsteady. Likely "
      "causes: {}",
      p99_ms, median_ms > 0 ? p99_ms / median_ms : 0.0, median_ms, causes);
}

}  // namespace trtutils::cli
