// Calibration statistics and calibrators. Statistics are streamed: a TensorStats sees one batch
// at a time and keeps only |x|max and a fixed-size histogram of |x| over [0, range]; when a
// batch exceeds the range, the histogram is re-binned onto the wider range (counts of an old
// bin are split over the new bins it overlaps, in proportion to the overlap).
//
// Calibrators turn statistics into an amax (the clipping threshold; scale = amax / qmax):
//   max         |x|max seen.
//   percentile  the upper edge of the bin where the cumulative count reaches p% of all values.
//   mse         the threshold (a bin edge) minimising the expected squared error of symmetric
//               quantization with `qmax` levels, bins represented by their centres.
//   entropy     TensorRT's: for each threshold bin i >= num_quant_bins, P = hist[0:i] with
//               the outliers added to its last bin, Q = hist[0:i] merged into num_quant_bins
//               bins and expanded back over P's non-empty bins; picks the i minimising KL(P||Q).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "trtutils/tensor.h"

namespace trtutils::quantize {

enum class CalibrationMethod { kMax, kEntropy, kPercentile, kMse };
CalibrationMethod calibration_method_from_name(const std::string& name);  // throws, listing options
std::string calibration_method_name(CalibrationMethod m);

class TensorStats {
 public:
  explicit TensorStats(int64_t num_bins = 2048) : hist_(num_bins, 0.0) {}
  // Adds the values of a float32 tensor (other dtypes are converted).
  void add(const Tensor& t);
  void add(const float* x, int64_t n);

  double absmax() const { return absmax_; }
  double range() const { return range_; }  // histogram covers [0, range]
  const std::vector<double>& histogram() const { return hist_; }
  int64_t count() const { return count_; }

 private:
  void rebin(double new_range);
  double absmax_ = 0;
  double range_ = 0;
  std::vector<double> hist_;
  int64_t count_ = 0;
};

struct CalibratorParams {
  double percentile = 99.99;
  double qmax = 127;             // largest quantized magnitude: 127 int8, 448 fp8 (mse)
  bool fp8 = false;              // mse: round to float8e4m3fn instead of an integer grid
  int64_t num_quant_bins = 128;  // entropy: quantized levels of |x|
};
// The clipping threshold for `method` (> 0 unless the tensor is all zeros: then 0).
double compute_amax(const TensorStats& stats, CalibrationMethod method, const CalibratorParams& p);

// Streams `batches` through the float model (copied, with `tensors` marked as extra outputs) on
// the CPU backend and returns the statistics of each tensor. Graph inputs among `tensors` are
// taken from the feeds. `feed_batch(i)` returns the feeds of batch i.
using BatchFn = std::function<std::map<std::string, Tensor>(int64_t)>;
std::map<std::string, TensorStats> collect_stats(const ir::Model& model,
                                                 const std::vector<std::string>& tensors,
                                                 int64_t num_batches, const BatchFn& feed_batch,
                                                 int64_t num_bins, int num_threads);

}  // namespace trtutils::quantize
