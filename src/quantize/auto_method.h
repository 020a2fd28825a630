// calibration_method auto: the method is chosen by what it does to the model's outputs, not
// per tensor. Each candidate threshold table (max, entropy, percentile, mse, and per tensor the
// method of least histogram error) becomes a Q/DQ model; each runs on the selection batches
// against the float model, and max stays unless another candidate beats it sample for sample
// (choose_candidate); the winner's method is then applied to the statistics of every
// calibration batch, so that auto writes the model that method alone writes. Per tensor least error
// alone was the wrong proxy: 0.4-1.3 dB under the best single method on 4 of 14 model/data rows
// measured against ONNX Runtime (bench/RESULTS.md, issue 35). The selection is cross-fitted where
// there are enough batches (eval_split.h, selection_batches): up to kAutoSelectionSamples
// calibration samples in kAutoSelectionFolds folds, each judged by thresholds fitted without it, so
// that a method that fits the calibration histograms too closely does not win for that, and the
// scores rest on many samples (16 in-sample ones chose mse on MobileNetV3-L's photos, 1.37 dB under
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

// Output SQNR (dB, the worst output's) of one candidate on the selection batches, each batch
// judged by the thresholds of its fold (fitted without it).
struct CandidateScores {
  std::vector<double> batch_db;   // per selection batch (per sample at batch size 1)
  std::vector<double> fold_db;    // per fold, over that fold's batches together
  double pooled_db = 0;           // over every selection batch together (the score until 2026-12)
  double worst_batch_db() const;  // min of batch_db (pooled_db when there are none)
};

// The rule: max (the first candidate, which clips nothing) stays unless another candidate beats
// it sample for sample: the mean of its per-batch SQNR differences to max exceeds kAutoPairedZ
// standard errors of that mean (a paired test on the same selection batches). Among those that
// do, the one of the best worst selection batch wins (the earlier on a tie).
// Why paired: the scores of a few dozen samples are noisy, and a fixed margin on one of them
// (the worst batch) was both too strict and too loose. DenseNet-121 int8 on photos: max had
// the best worst batch (15.5 dB against 12.5-12.9) while entropy beat it by 1.84 dB per sample
// (standard error 0.41), and the judging photos put entropy 3.2 dB ahead; FP8's candidates
// differ from max by 0.0-0.4 dB per sample within one or two standard errors, where a worst
// batch up to 2.6 dB better had picked a method the judge put below max (bench/RESULTS.md,
// issue 35). Why the worst batch among the winners: pooled over the batches, the SQNR weighs
// each by its output energy, and the few loud samples decide it, while the quieter samples lose
// up to 30 dB to max's coarse steps (EfficientNet-B0); the worst batch counts every sample as
// one, and a clipping threshold that a held-out sample's activations exceed by far shows there.
// With fewer than two batches (no spread to test) the worst batch must beat max's by
// kAutoMarginDb. Returns the index of the chosen candidate.
size_t choose_candidate(const std::vector<CandidateScores>& scores);
// A candidate's per-batch SQNR gain over max (dB): the mean of the differences and its standard
// error (0 with fewer than two batches), the paired test's figures (the report shows them).
struct PairedGain {
  double mean_db = 0, se_db = 0;
  size_t batches = 0;
};
PairedGain paired_gain(const CandidateScores& c, const CandidateScores& max);
// Standard errors by which a candidate's mean per-batch gain over max must exceed zero.
inline constexpr double kAutoPairedZ = 2.0;
// With fewer than two selection batches: how much better than max's (dB) another candidate's
// score must be to win.
inline constexpr double kAutoMarginDb = 0.75;
// choose_candidate in words, for the report (QuantizeResult::auto_selection_rule).
inline constexpr const char* kAutoSelectionRule =
    "max stays unless a candidate beats it sample for sample (mean per-batch SQNR gain over 2 "
    "standard errors, each batch judged out of fold); among those, the best worst selection "
    "batch wins";

struct MethodScore {
  std::string name;    // max | entropy | percentile | mse | per_tensor
  double sqnr_db = 0;  // its worst batch's SQNR: the score the rule ranks by
  CandidateScores detail;
  PairedGain gain;  // over max, per batch (max's own: 0)
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
// thresholds. Each candidate is scored per batch, per fold and pooled (CandidateScores) and
// chosen by choose_candidate. The candidates run on the GPU when one is usable (the
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
