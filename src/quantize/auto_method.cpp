#include "quantize/auto_method.h"

#include <limits>
#include <utility>

#include "quantize/report.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

MethodSelection select_calibration_method(
    const std::map<std::string, TensorStats>& stats, const CalibratorParams& p,
    const std::set<std::string>& by_max,
    const std::function<ir::Model(const std::map<std::string, double>&)>& make_model,
    const ir::Model& float_model, int64_t num_batches, int64_t num_samples,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed, int num_threads) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<std::string> names;
  for (const auto& v : float_model.graph.outputs) {
    pairs.emplace_back(v.name, v.name);
    names.push_back(v.name);
  }
  const auto reference = run_batches(float_model, names, num_batches, feed, num_threads);
  // max first: on equal scores the earlier (simpler) candidate stays.
  const std::pair<CalibrationMethod, const char*> candidates[] = {
      {CalibrationMethod::kMax, "max"},
      {CalibrationMethod::kEntropy, "entropy"},
      {CalibrationMethod::kPercentile, "percentile"},
      {CalibrationMethod::kMse, "mse"},
      {CalibrationMethod::kAuto, "per_tensor"}};
  MethodSelection best;
  best.samples = num_samples;
  double best_db = -std::numeric_limits<double>::infinity();
  for (const auto& [method, name] : candidates) {
    ThresholdTable t = choose_thresholds(stats, method, p, by_max);
    const auto metrics =
        compare_to_reference(reference, make_model(t.amax), pairs, feed, num_threads);
    double worst = std::numeric_limits<double>::infinity();
    for (const auto& m : metrics) worst = std::min(worst, m.sqnr_db);
    best.scores.push_back({name, worst});
    TRT_LOG_VERBOSE("calibration_method auto: {} gives {:.2f} dB", name, worst);
    if (worst > best_db || best.name.empty()) {
      best_db = worst;
      best.method = method;
      best.name = name;
      best.thresholds = std::move(t);
    }
  }
  return best;
}

}  // namespace trtutils::quantize
