// calibration_method auto: the method is chosen by what it does to the model's outputs, not
// per tensor. Each candidate threshold table (max, entropy, percentile, mse, and per tensor the
// method of least histogram error) becomes a Q/DQ model; each runs on the selection batches
// against the float model, and the candidate with the best worst-output SQNR wins; the winner's
// method is then applied to the statistics of every calibration batch, so that auto writes the
// model that method alone writes. Per tensor least error alone was the wrong proxy: 0.4-1.3 dB
// under the best single method on 4 of 14 model/data rows measured against ONNX Runtime
// (bench/RESULTS.md, issue 35). The selection is cross-fitted where there are enough batches
// (eval_split.h, selection_batches): up to kAutoSelectionSamples calibration samples in
// kAutoSelectionFolds folds, each judged by thresholds fitted without it, so that a method that
// fits the calibration histograms too closely does not win for that, and the scores rest on
// many samples (16 in-sample ones chose mse on MobileNetV3-L's photos, 1.37 dB under
// percentile on other photos).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quantize/calibration.h"
#include "quantize/eval_split.h"

namespace trtutils::quantize {

// Calibration samples the selection runs at most (spread over the calibration batches).
inline constexpr int64_t kAutoSelectionSamples = 64;
// Folds of the held-out selection: each candidate's thresholds are fitted once per fold, on
// every calibration batch but that fold's, and judged on that fold's batches.
inline constexpr int kAutoSelectionFolds = 4;

struct MethodScore {
  std::string name;  // max | entropy | percentile | mse | per_tensor
  double sqnr_db = 0;
};
struct MethodSelection {
  CalibrationMethod method = CalibrationMethod::kMax;  // kAuto: the per-tensor table won
  std::string name;
  std::vector<MethodScore> scores;  // every candidate, in trial order
  int64_t samples = 0;              // calibration samples the scores are measured on
  bool on_gpu = false;              // the candidates ran on the GPU (else the CPU backend)
};

// fold_stats[k]: the statistics fold k's thresholds are fitted on (one entry, every calibration
// batch, when the selection is in-sample). fold_of[i]: the fold of selection batch i; feed(i),
// i < fold_of.size(): that batch. make_model(amax): the Q/DQ model with those activation
// thresholds. A candidate's score is the worst output SQNR over all selection batches together
// (sums of signal and noise over them). The candidates run on the GPU when one is usable (the
// reference on the CPU backend); two methods with equal tables are scored once. `progress`: one
// display over the reference's and the candidates' batches.
MethodSelection select_calibration_method(
    const std::vector<std::map<std::string, TensorStats>>& fold_stats,
    const std::vector<int>& fold_of, const CalibratorParams& p, const std::set<std::string>& by_max,
    const std::function<ir::Model(const std::map<std::string, double>&)>& make_model,
    const ir::Model& float_model, int64_t num_samples,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed, int num_threads,
    bool progress = false);

// The statistics of each fold (SelectionSplit): those of every calibration batch but the fold's
// own, streamed alongside the full statistics in the same pass (a tensor's b-th visit is batch
// b: stream_tensors visits batches in order).
class FoldStats {
 public:
  FoldStats(const SelectionSplit& split, int64_t num_bins);
  void add(const std::string& name, const Tensor& t);
  std::vector<std::map<std::string, TensorStats>> take() { return std::move(stats_); }

 private:
  std::vector<std::map<std::string, TensorStats>> stats_;
  int64_t num_bins_;
  std::map<int64_t, int> fold_of_;  // selection batch -> its fold
  std::map<std::string, int64_t> visits_;
};

}  // namespace trtutils::quantize
