#include "quantize/auto_method.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "backends/cuda/cuda_executor.h"
#include "core/check.h"
#include "core/progress.h"
#include "passes/passes.h"
#include "quantize/report.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

namespace {

using Feed = std::function<std::map<std::string, Tensor>(int64_t)>;

// The candidate's outputs on the GPU when one is usable and runs the Q/DQ graph (as a strongly
// typed engine would); std::nullopt otherwise, and the CPU backend runs it.
std::optional<std::vector<std::map<std::string, Tensor>>> gpu_outputs(ir::Model m, int64_t n,
                                                                      const Feed& feed) {
  if (!cuda::device_status().usable) return std::nullopt;
  try {
    passes::run_pipeline(m.graph, m.opset());
    cuda::ExecutorOptions options;
    options.deterministic = true;  // the same scores on every run
    cuda::Executor ex(m, options);
    std::vector<std::map<std::string, Tensor>> r;
    for (int64_t b = 0; b < n; ++b) r.push_back(ex.run(feed(b)));
    return r;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotSupported) throw;
    TRT_LOG_VERBOSE("calibration_method auto: candidates run on the CPU ({})", e.what());
    return std::nullopt;
  }
}

// Worst output SQNR of `model` against the reference.
double worst_sqnr(const ir::Model& model,
                  const std::vector<std::map<std::string, Tensor>>& reference,
                  const std::vector<std::pair<std::string, std::string>>& pairs, const Feed& feed,
                  int num_threads, bool& gpu) {
  auto got = gpu ? gpu_outputs(model, static_cast<int64_t>(reference.size()), feed) : std::nullopt;
  gpu = got.has_value();
  const std::vector<PairMetrics> metrics =
      got ? pair_metrics(reference, *got, pairs)
          : compare_to_reference(reference, model, pairs, feed, num_threads);
  double worst = std::numeric_limits<double>::infinity();
  for (const auto& m : metrics) worst = std::min(worst, m.sqnr_db);
  return worst;
}

}  // namespace

MethodSelection select_calibration_method(
    const std::map<std::string, TensorStats>& stats, const CalibratorParams& p,
    const std::set<std::string>& by_max,
    const std::function<ir::Model(const std::map<std::string, double>&)>& make_model,
    const ir::Model& float_model, int64_t num_batches, int64_t num_samples,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed, int num_threads,
    bool progress) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<std::string> names;
  for (const auto& v : float_model.graph.outputs) {
    pairs.emplace_back(v.name, v.name);
    names.push_back(v.name);
  }
  // max first: on equal scores the earlier (simpler) candidate stays.
  const std::pair<CalibrationMethod, const char*> candidates[] = {
      {CalibrationMethod::kMax, "max"},
      {CalibrationMethod::kEntropy, "entropy"},
      {CalibrationMethod::kPercentile, "percentile"},
      {CalibrationMethod::kMse, "mse"},
      {CalibrationMethod::kAuto, "per_tensor"}};
  // One display over every batch run, the reference's and each candidate's: on the CPU the
  // candidates are most of quantize's time.
  const auto total = static_cast<int64_t>(1 + std::size(candidates)) * num_batches;
  Progress bar("calibration_method auto", total, progress, "batches");
  int64_t done = 0;
  const Feed counted = [&](int64_t b) {
    bar.update(std::min(done++, total));
    return feed(b);
  };
  const auto reference = run_batches(float_model, names, num_batches, counted, num_threads);
  MethodSelection best;
  best.samples = num_samples;
  double best_db = -std::numeric_limits<double>::infinity();
  bool gpu = true;  // until a candidate fails to run there
  std::vector<std::pair<std::map<std::string, double>, double>> tried;
  for (const auto& [method, name] : candidates) {
    ThresholdTable t = choose_thresholds(stats, method, p, by_max);
    // Two methods often agree on every tensor (per_tensor and mse, say): scored once.
    auto same =
        std::find_if(tried.begin(), tried.end(), [&](const auto& x) { return x.first == t.amax; });
    const double worst = same != tried.end() ? same->second
                                             : worst_sqnr(make_model(t.amax), reference, pairs,
                                                          counted, num_threads, gpu);
    if (same == tried.end()) tried.emplace_back(t.amax, worst);
    best.scores.push_back({name, worst});
    TRT_LOG_VERBOSE("calibration_method auto: {} gives {:.2f} dB{}", name, worst,
                    gpu ? " (GPU)" : "");
    if (worst > best_db || best.name.empty()) {
      best_db = worst;
      best.method = method;
      best.name = name;
      best.thresholds = std::move(t);
    }
  }
  bar.update(total);
  best.on_gpu = gpu;
  return best;
}

HeldOutStats::HeldOutStats(const std::vector<int64_t>& held_out, int64_t num_bins)
    : held_out_(held_out.begin(), held_out.end()), num_bins_(num_bins) {}

void HeldOutStats::add(const std::string& name, const Tensor& t) {
  if (held_out_.count(visits_[name]++)) return;
  stats_.try_emplace(name, TensorStats(num_bins_)).first->second.add(t);
}

}  // namespace trtutils::quantize
