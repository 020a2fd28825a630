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
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "trtutils/tensor.h"

namespace trtutils::quantize {

// kAuto: per tensor, the method whose threshold quantizes the calibration histogram with the
// least squared error (what users of TensorRT and ONNX Runtime try by hand, one tensor at a time).
enum class CalibrationMethod { kMax, kEntropy, kPercentile, kMse, kAuto };
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
  // Counts of |x| by float32 exponent and the top two mantissa bits (a quarter of an octave per
  // bucket; bucket k covers [2^(k/4 - 127) ...) for k >= 4, buckets 0-3 hold zeros and float32
  // subnormals): the resolution near zero that the linear histogram lacks (E4M3's range).
  static constexpr int kLogBuckets = 1024;
  const std::vector<double>& log_histogram() const { return log_hist_; }

 private:
  void rebin(double new_range);
  double absmax_ = 0;
  double range_ = 0;
  std::vector<double> hist_;
  std::vector<double> log_hist_ = std::vector<double>(kLogBuckets, 0.0);
  int64_t count_ = 0;
};

// Where a tensor's values fall on float8 e4m3fn's grid with scale amax / 448: the share of its
// nonzero values under the smallest normal (2^-6 after scaling: fewer mantissa bits, the
// relative error grows up to 50%), of those that round to zero (under 2^-10), and of those above
// amax (clipped). From TensorStats::log_histogram (a quarter octave per bucket).
struct E4m3Range {
  double below_normal = 0;
  double flushed = 0;
  double clipped = 0;
};
E4m3Range e4m3_range(const TensorStats& stats, double amax);
// "Outside E4M3's comfortable range": over 1% of the nonzero values under its normal range.
inline constexpr double kE4m3BelowNormalLimit = 0.01;

struct CalibratorParams {
  double percentile = 99.99;
  double qmax = 127;             // largest quantized magnitude: 127 int8, 448 fp8 (mse)
  bool fp8 = false;              // mse: round to float8e4m3fn instead of an integer grid
  int64_t num_quant_bins = 128;  // entropy: quantized levels of |x|
};

// Calibration samples must be finite: one NaN or infinity poisons every histogram and scale
// after it. Error(kInvalidArgument) naming `source`, the first bad sample (`first_sample` is
// the batch's first) and how many values are bad; integer data passes.
void check_calibration_values(const Tensor& batch, const std::string& source, int64_t first_sample);

// The largest histogram a calibrated tensor gets (num_bins): 512 KiB of counts per tensor.
inline constexpr int64_t kMaxHistogramBins = 1 << 16;

// The clipping threshold for `method` (> 0 unless the tensor is all zeros: then 0), through the
// guard every calibrator (quantize, weakly typed build) passes: a threshold whose quantization
// error on the histogram is over kGuardRatio times absmax's is rejected for absmax (a 50th
// percentile, say).
inline constexpr double kGuardRatio = 2.0;
// The entropy search's own bound on its candidates: no more error on the histogram than
// absmax's (KL's minimum alone clipped MobileNetV2's first ReLU6 outputs at 1/3 of their range;
// within 2x absmax's error it still clipped Swin-T's GELU outputs at 35-80% of their range, the
// model 1.5 dB under max on noise calibration; bench/RESULTS.md, issue 35).
inline constexpr double kEntropyErrorRatio = 1.0;
struct AmaxChoice {
  double amax = 0;
  CalibrationMethod method = CalibrationMethod::kMax;  // the one that set amax
  bool rejected = false;   // the method's threshold failed the guard: amax is absmax
  double error_ratio = 1;  // the method's threshold error / absmax's (before the guard)
};
AmaxChoice choose_amax(const TensorStats& stats, CalibrationMethod method,
                       const CalibratorParams& p);
// The method's threshold as it computes it, without the guard (kAuto: as choose_amax).
double compute_amax(const TensorStats& stats, CalibrationMethod method, const CalibratorParams& p);
// Mean squared error of quantizing the histogram's values with clipping threshold t (scale
// t / qmax; int8 rounding, or float8 e4m3 when p.fp8), each bin sampled at 4 points.
double threshold_error(const TensorStats& stats, double t, const CalibratorParams& p);

// choose_amax for many tensors; those in `by_max` (Softmax probabilities, say) are calibrated by
// their maximum whatever the method.
struct ThresholdTable {
  std::map<std::string, double> amax;
  std::vector<std::string> rejected;            // "tensor: error ratio", guard rejections
  std::map<std::string, int64_t> methods_used;  // method name -> tensors whose amax it set
  size_t by_max = 0;                            // tensors of `by_max` among the stats
};
ThresholdTable choose_thresholds(const std::map<std::string, TensorStats>& stats,
                                 CalibrationMethod method, const CalibratorParams& p,
                                 const std::set<std::string>& by_max);

// The tensors of g that hold Softmax probabilities: Softmax outputs and what ops that only move
// or keep values (Identity, inference Dropout, Reshape, Transpose, ...) make of them. Values in
// [0, 1] whose few large ones carry the attention: the clipping calibrators (entropy,
// percentile, mse), made for bell-shaped activations, clip exactly those (measured on Swin-T,
// int8 entropy: thresholds 1/8 of the maximum, 4 dB on these tensors, 11 dB at the output
// against 35 dB with max), so the quantizer and the INT8 builder calibrate them by their maximum
// whatever the method.
std::set<std::string> softmax_probability_tensors(const ir::Graph& g);

// Per-channel first and second moments of a tensor along one axis, streamed batch by batch:
// the weights of int4 awq_clip's activation-aware error (the K channels of a MatMul/Gemm input
// X) and the input means of bias correction. Non-finite values are skipped.
class ChannelStats {
 public:
  explicit ChannelStats(int64_t axis = -1) : axis_(axis) {}  // axis < 0 counts from the end
  // Throws Error(kInvalidArgument) when the channel count changes between batches.
  void add(const Tensor& t);
  int64_t channels() const { return static_cast<int64_t>(sum_sq_.size()); }
  int64_t rows() const { return rows_; }  // values seen per channel
  // E[x_k^2] per channel (zeros before any data).
  std::vector<double> mean_square() const;
  std::vector<double> mean() const;  // E[x_k] per channel (zeros before any data)

 private:
  int64_t axis_;
  std::vector<double> sum_sq_, sum_;
  int64_t rows_ = 0;
};

// E[x x^T] over the last axis (K) of a tensor viewed as [rows, K], streamed batch by batch: the
// Hessian of a MatMul/Gemm layer's output error with respect to its weights (GPTQ). Accumulated
// in float32 (K x K, row-major) with one sgemm per batch; non-finite values count as 0.
class HessianStats {
 public:
  // Throws Error(kInvalidArgument) when K changes between batches.
  void add(const Tensor& t);
  int64_t dim() const { return k_; }
  int64_t rows() const { return rows_; }
  // sum x x^T / rows (zeros before any data), K x K row-major.
  std::vector<float> mean_outer() const;

 private:
  int64_t k_ = 0, rows_ = 0;
  std::vector<float> sum_;
};

// Streams `num_batches` batches through the float model (copied, with `tensors` marked as
// extra outputs so that no pass removes them) on the GPU or the CPU backend and calls visit(name,
// value) once per tensor and batch, batches in order. Graph inputs among `tensors` come from the
// feeds.
//   per_node = false: one Session::run per batch; every tensor in `tensors` stays alive (as a
//     graph output) until the whole batch has run, then they are visited.
//   per_node = true (--calibrate_per_node): the optimized graph is executed node by node here;
//     a tensor is visited as soon as its producer ran and freed after its last reader, like any
//     intermediate, so the peak is that of plain inference. Same kernels, same values.
using BatchFn = std::function<std::map<std::string, Tensor>(int64_t)>;
using TensorVisitor = std::function<void(const std::string&, const Tensor&)>;
//   allow_gpu (per_node = false): the batches run on the GPU when one is usable and every op
//     has a CUDA kernel (float32, TF32 off: the statistics of the CPU run up to summation
//     order); TRTUTILS_CALIBRATION_DEVICE=cpu keeps them on the CPU.
struct StreamOptions {
  int num_threads = 0;
  bool per_node = false;
  bool allow_gpu = true;
};
// Returns the most bytes of activations (feeds, intermediates, kept tensors) alive at once.
size_t stream_tensors(const ir::Model& model, const std::vector<std::string>& tensors,
                      int64_t num_batches, const BatchFn& feed_batch, const StreamOptions& options,
                      const TensorVisitor& visit);

// The statistics of each tensor over the batches (stream_tensors + TensorStats::add); the
// result does not depend on per_node.
std::map<std::string, TensorStats> collect_stats(const ir::Model& model,
                                                 const std::vector<std::string>& tensors,
                                                 int64_t num_batches, const BatchFn& feed_batch,
                                                 int64_t num_bins, int num_threads,
                                                 bool per_node = false,
                                                 size_t* peak_activation_bytes = nullptr);

}  // namespace trtutils::quantize
