// PNG charts of timings (`trtutils benchmark --plot`). The per-tensor SQNR chart of comparisons
// is compare::plot_sqnr_png (compare.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace trtutils {

// A histogram of `latencies_ms` with median, p90 and p99 marker lines and an "n, min, mean, max"
// subtitle under `title`, written atomically to `path`. The x axis stops at p99 + (p99 - min)
// when the maximum is beyond it (the outliers are counted in the x label). Non-finite values are
// ignored; Error(kInvalidArgument) when none is left, kIO naming the path when it cannot be
// written.
void plot_latency_histogram_png(const std::vector<double>& latencies_ms,
                                const std::filesystem::path& path, const std::string& title);

}  // namespace trtutils
