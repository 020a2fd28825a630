// Which batches of the calibration data calibrate, and which the accuracy report (and
// min_sqnr's search, which decides on the report's numbers) evaluates.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace trtutils::quantize {

// Samples the report evaluates by default (in whole batches): one sample's SQNR says little
// about the others, and min_sqnr ranked layers on it; 32 keep the cost bounded (the search
// evaluates them once per quantized layer).
inline constexpr int64_t kReportSamples = 32;

struct EvalSplit {
  int64_t calib_batches = 0;  // batches [0, calib_batches) calibrate
  std::vector<int64_t> eval;  // the batches the report runs on, in order
  bool held_out = false;      // `eval` are not among the calibration batches
};

// `num_batches` batches of `batch_samples` samples each (the last may have fewer).
//   eval_batches nullopt (the default): every batch calibrates (the first
//     max_calibration_batches of them when > 0) and the report runs on about kReportSamples of
//     those, whole batches spread evenly over them (spread_batches);
//   N > 0: the last N batches are held out for the report; with no more than N batches, all of
//     them calibrate and the report runs on them (not held out);
//   0: no report.
EvalSplit split_batches(int64_t num_batches, int64_t batch_samples,
                        std::optional<int64_t> eval_batches, int64_t max_calibration_batches);

// The batches of [0, num_batches) that cover at least `target_samples` samples of batches of
// `batch_samples` (all of them when there are fewer), spread evenly: i * num_batches / n.
std::vector<int64_t> spread_batches(int64_t num_batches, int64_t batch_samples,
                                    int64_t target_samples);

// calibration_method auto's selection batches among the calibration batches [0, calib_batches):
// whole batches of about `target_samples` samples, spread (spread_batches). With at least two of
// them, cross-fitted: batch i of the selection is in fold i % folds (folds = min(max_folds,
// batches)), and fold k's candidate thresholds are fitted on every calibration batch outside
// fold k, so that every selection batch is judged out of sample. With one batch, folds = 0: it
// fits and judges (in-sample).
struct SelectionSplit {
  std::vector<int64_t> batches;
  std::vector<int> fold;  // per entry of batches
  int folds = 0;
  bool held_out() const { return folds > 0; }
};
SelectionSplit selection_batches(int64_t calib_batches, int64_t batch_samples,
                                 int64_t target_samples, int max_folds);

}  // namespace trtutils::quantize
