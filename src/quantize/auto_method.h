// calibration_method auto: the method is chosen by what it does to the model's outputs, not
// per tensor. Each candidate threshold table (max, entropy, percentile, mse, and per tensor the
// method of least histogram error) becomes a Q/DQ model; each runs on a few selection batches
// against the float model, and the candidate with the best worst-output SQNR wins; the winner's
// method is then applied to the statistics of every calibration batch, so that auto writes the
// model that method alone writes. Per tensor least error alone was the wrong proxy: 0.4-1.3 dB
// under the best single method on 4 of 14 model/data rows measured against ONNX Runtime
// (bench/RESULTS.md, issue 35). The selection batches are held out where there are enough
// (eval_split.h, selection_batches): the candidates are fitted without them, so that a method
// that fits the calibration samples' histograms too closely (mse on MobileNetV3-L's photos,
// chosen in-sample, 1.37 dB under percentile on other photos) does not win for that.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quantize/calibration.h"

namespace trtutils::quantize {

// Calibration samples the selection runs (spread over the calibration batches).
inline constexpr int64_t kAutoSelectionSamples = 16;

struct MethodScore {
  std::string name;  // max | entropy | percentile | mse | per_tensor
  double sqnr_db = 0;
};
struct MethodSelection {
  CalibrationMethod method = CalibrationMethod::kMax;  // kAuto: the per-tensor table won
  std::string name;
  ThresholdTable thresholds;        // the winner's, on the statistics it was given
  std::vector<MethodScore> scores;  // every candidate, in trial order
  int64_t samples = 0;              // calibration samples the scores are measured on
  bool on_gpu = false;              // the candidates ran on the GPU (else the CPU backend)
};

// make_model(amax): the Q/DQ model with those activation thresholds. feed(i), i < num_batches:
// the selection's batches. The candidates run on the GPU when one is usable (the reference on
// the CPU backend); two methods with equal tables are scored once. `progress`: one display over
// the reference and the candidates' batches.
MethodSelection select_calibration_method(
    const std::map<std::string, TensorStats>& stats, const CalibratorParams& p,
    const std::set<std::string>& by_max,
    const std::function<ir::Model(const std::map<std::string, double>&)>& make_model,
    const ir::Model& float_model, int64_t num_batches, int64_t num_samples,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed, int num_threads,
    bool progress = false);

// The statistics the candidates are fitted on when the selection batches are held out: those of
// every calibration batch but `held_out`, streamed alongside the full statistics in the same
// pass (a tensor's b-th visit is batch b: stream_tensors visits batches in order).
class HeldOutStats {
 public:
  HeldOutStats(const std::vector<int64_t>& held_out, int64_t num_bins);
  void add(const std::string& name, const Tensor& t);
  std::map<std::string, TensorStats> take() { return std::move(stats_); }

 private:
  std::set<int64_t> held_out_;
  int64_t num_bins_;
  std::map<std::string, int64_t> visits_;
  std::map<std::string, TensorStats> stats_;
};

}  // namespace trtutils::quantize
