#include "quantize/eval_split.h"

#include <algorithm>

namespace trtutils::quantize {

std::vector<int64_t> spread_batches(int64_t num_batches, int64_t batch_samples,
                                    int64_t target_samples) {
  const int64_t bs = std::max<int64_t>(1, batch_samples);
  const int64_t n = std::min(num_batches, (target_samples + bs - 1) / bs);
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < n; ++i) picked.push_back(i * num_batches / n);
  return picked;
}

SelectionSplit selection_batches(int64_t calib_batches, int64_t batch_samples,
                                 int64_t target_samples, int max_folds) {
  SelectionSplit s;
  s.batches = spread_batches(calib_batches, batch_samples, target_samples);
  const auto n = static_cast<int64_t>(s.batches.size());
  if (n >= 2) s.folds = static_cast<int>(std::min<int64_t>(max_folds, n));
  for (int64_t i = 0; i < n; ++i) s.fold.push_back(s.folds > 0 ? static_cast<int>(i % s.folds) : 0);
  return s;
}

EvalSplit split_batches(int64_t num_batches, int64_t batch_samples,
                        std::optional<int64_t> eval_batches, int64_t max_calibration_batches) {
  EvalSplit s;
  const int64_t limit = max_calibration_batches > 0 ? max_calibration_batches : num_batches;
  if (!eval_batches) {
    s.calib_batches = std::min(num_batches, limit);
    s.eval = spread_batches(s.calib_batches, batch_samples, kReportSamples);
    return s;
  }
  const int64_t ev = std::min(*eval_batches, num_batches);
  const bool hold_out = num_batches > ev;
  s.calib_batches = std::min(hold_out ? num_batches - ev : num_batches, limit);
  const int64_t begin = hold_out ? num_batches - ev : 0;
  for (int64_t b = begin; b < begin + ev; ++b) s.eval.push_back(b);
  s.held_out = hold_out && ev > 0;
  return s;
}

}  // namespace trtutils::quantize
