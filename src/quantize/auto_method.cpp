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

// The candidate's outputs on batches `idx` of the selection (GPU when usable, else the CPU
// backend; `gpu` turns false once a candidate cannot run there).
std::vector<std::map<std::string, Tensor>> candidate_outputs(const ir::Model& model,
                                                             const std::vector<int64_t>& idx,
                                                             const std::vector<std::string>& names,
                                                             const Feed& feed, int num_threads,
                                                             bool& gpu) {
  const Feed local = [&](int64_t i) { return feed(idx[static_cast<size_t>(i)]); };
  const auto n = static_cast<int64_t>(idx.size());
  auto got = gpu ? gpu_outputs(model, n, local) : std::nullopt;
  gpu = got.has_value();
  return got ? std::move(*got) : run_batches(model, names, n, local, num_threads);
}

// Worst output SQNR of a candidate over every selection batch, each judged by the model of the
// thresholds fitted without its fold.
double worst_sqnr(const std::vector<ir::Model>& fold_models, const std::vector<int>& fold_of,
                  const std::vector<std::map<std::string, Tensor>>& reference,
                  const std::vector<std::string>& names, const Feed& feed, int num_threads,
                  bool& gpu) {
  std::vector<std::map<std::string, Tensor>> got(reference.size());
  for (size_t k = 0; k < fold_models.size(); ++k) {
    std::vector<int64_t> idx;
    for (size_t i = 0; i < fold_of.size(); ++i)
      if (fold_of[i] == static_cast<int>(k)) idx.push_back(static_cast<int64_t>(i));
    auto out = candidate_outputs(fold_models[k], idx, names, feed, num_threads, gpu);
    for (size_t j = 0; j < idx.size(); ++j) got[static_cast<size_t>(idx[j])] = std::move(out[j]);
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& n : names) pairs.emplace_back(n, n);
  double worst = std::numeric_limits<double>::infinity();
  for (const auto& m : pair_metrics(reference, got, pairs)) worst = std::min(worst, m.sqnr_db);
  return worst;
}

}  // namespace

MethodSelection select_calibration_method(
    const std::vector<std::map<std::string, TensorStats>>& fold_stats,
    const std::vector<int>& fold_of, const CalibratorParams& p, const std::set<std::string>& by_max,
    const std::function<ir::Model(const std::map<std::string, double>&)>& make_model,
    const ir::Model& float_model, int64_t num_samples,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed, int num_threads,
    bool progress) {
  std::vector<std::string> names;
  for (const auto& v : float_model.graph.outputs) names.push_back(v.name);
  const auto num_batches = static_cast<int64_t>(fold_of.size());
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
  using Tables = std::vector<std::map<std::string, double>>;
  std::vector<std::pair<Tables, double>> tried;
  for (const auto& [method, name] : candidates) {
    Tables t;
    for (const auto& st : fold_stats) t.push_back(choose_thresholds(st, method, p, by_max).amax);
    // Two methods often agree on every tensor (per_tensor and mse, say): scored once.
    auto same =
        std::find_if(tried.begin(), tried.end(), [&](const auto& x) { return x.first == t; });
    double worst = 0;
    if (same != tried.end()) {
      worst = same->second;
    } else {
      std::vector<ir::Model> models;
      for (const auto& amax : t) models.push_back(make_model(amax));
      worst = worst_sqnr(models, fold_of, reference, names, counted, num_threads, gpu);
      tried.emplace_back(std::move(t), worst);
    }
    best.scores.push_back({name, worst});
    TRT_LOG_VERBOSE("calibration_method auto: {} gives {:.2f} dB{}", name, worst,
                    gpu ? " (GPU)" : "");
    if (worst > best_db || best.name.empty()) {
      best_db = worst;
      best.method = method;
      best.name = name;
    }
  }
  bar.update(total);
  best.on_gpu = gpu;
  return best;
}

FoldStats::FoldStats(const SelectionSplit& split, int64_t num_bins)
    : stats_(static_cast<size_t>(split.folds)), num_bins_(num_bins) {
  for (size_t i = 0; i < split.batches.size(); ++i) fold_of_[split.batches[i]] = split.fold[i];
}

void FoldStats::add(const std::string& name, const Tensor& t) {
  const auto f = fold_of_.find(visits_[name]++);
  const int held = f == fold_of_.end() ? -1 : f->second;
  for (size_t k = 0; k < stats_.size(); ++k)
    if (static_cast<int>(k) != held)
      stats_[k].try_emplace(name, TensorStats(num_bins_)).first->second.add(t);
}

}  // namespace trtutils::quantize
