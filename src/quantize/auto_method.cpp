#include "quantize/auto_method.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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

// The worst output's SQNR of accumulators, one per output.
double worst_db(const std::vector<MetricsAccumulator>& acc) {
  double worst = std::numeric_limits<double>::infinity();
  for (const auto& a : acc) worst = std::min(worst, a.result().sqnr_db);
  return worst;
}

// A candidate's scores per batch, per fold and pooled from its outputs `got`.
CandidateScores score_outputs(const std::vector<std::map<std::string, Tensor>>& reference,
                              const std::vector<std::map<std::string, Tensor>>& got,
                              const std::vector<int>& fold_of, size_t folds,
                              const std::vector<std::string>& names) {
  using Acc = std::vector<MetricsAccumulator>;
  Acc pooled(names.size());
  std::vector<Acc> fold(folds, Acc(names.size()));
  CandidateScores s;
  for (size_t b = 0; b < reference.size(); ++b) {
    Acc one(names.size());
    for (size_t j = 0; j < names.size(); ++j) {
      const Tensor& r = reference[b].at(names[j]);
      const Tensor& g = got[b].at(names[j]);
      one[j].add(r, g);
      pooled[j].add(r, g);
      fold[static_cast<size_t>(fold_of[b])][j].add(r, g);
    }
    s.batch_db.push_back(worst_db(one));
  }
  for (const auto& f : fold) s.fold_db.push_back(worst_db(f));
  s.pooled_db = worst_db(pooled);
  return s;
}

// A candidate's scores, each selection batch judged by the model of the thresholds fitted
// without its fold.
CandidateScores candidate_scores(const std::vector<ir::Model>& fold_models,
                                 const std::vector<int>& fold_of,
                                 const std::vector<std::map<std::string, Tensor>>& reference,
                                 const std::vector<std::string>& names, const Feed& feed,
                                 int num_threads, bool& gpu) {
  std::vector<std::map<std::string, Tensor>> got(reference.size());
  for (size_t k = 0; k < fold_models.size(); ++k) {
    std::vector<int64_t> idx;
    for (size_t i = 0; i < fold_of.size(); ++i)
      if (fold_of[i] == static_cast<int>(k)) idx.push_back(static_cast<int64_t>(i));
    auto out = candidate_outputs(fold_models[k], idx, names, feed, num_threads, gpu);
    for (size_t j = 0; j < idx.size(); ++j) got[static_cast<size_t>(idx[j])] = std::move(out[j]);
  }
  return score_outputs(reference, got, fold_of, fold_models.size(), names);
}

std::string join_db(const std::vector<double>& v) {
  std::string s;
  for (double d : v) s += fmt::format("{}{:.2f}", s.empty() ? "" : " ", d);
  return s;
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
  // max first: the rule's default (choose_candidate).
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
  MethodSelection sel;
  sel.samples = num_samples;
  bool gpu = true;  // until a candidate fails to run there
  using Tables = std::vector<std::map<std::string, double>>;
  std::vector<std::pair<Tables, CandidateScores>> tried;
  std::vector<CandidateScores> all;
  for (const auto& [method, name] : candidates) {
    Tables t;
    for (const auto& st : fold_stats) t.push_back(choose_thresholds(st, method, p, by_max).amax);
    // Two methods often agree on every tensor (per_tensor and mse, say): scored once.
    auto same =
        std::find_if(tried.begin(), tried.end(), [&](const auto& x) { return x.first == t; });
    if (same == tried.end()) {
      std::vector<ir::Model> models;
      for (const auto& amax : t) models.push_back(make_model(amax));
      auto sc = candidate_scores(models, fold_of, reference, names, counted, num_threads, gpu);
      same = tried.emplace(tried.end(), std::move(t), std::move(sc));
    }
    const CandidateScores& sc = same->second;
    all.push_back(sc);
    sel.scores.push_back({name, sc.worst_batch_db(), sc, {}});
    TRT_LOG_VERBOSE(
        "calibration_method auto: {} worst batch {:.2f} dB, pooled {:.2f}, folds [{}], batches "
        "[{}]{}",
        name, sc.worst_batch_db(), sc.pooled_db, join_db(sc.fold_db), join_db(sc.batch_db),
        gpu ? " (GPU)" : "");
  }
  bar.update(total);
  for (MethodScore& m : sel.scores) m.gain = paired_gain(m.detail, all.front());
  const size_t i = choose_candidate(all);
  sel.method = candidates[i].first;
  sel.name = candidates[i].second;
  sel.on_gpu = gpu;
  return sel;
}

double CandidateScores::worst_batch_db() const {
  return batch_db.empty() ? pooled_db : *std::min_element(batch_db.begin(), batch_db.end());
}

PairedGain paired_gain(const CandidateScores& c, const CandidateScores& max) {
  PairedGain g;
  g.batches = std::min(c.batch_db.size(), max.batch_db.size());
  if (g.batches == 0) return g;
  const auto n = static_cast<double>(g.batches);
  double sum = 0, sq = 0;
  for (size_t i = 0; i < g.batches; ++i) sum += c.batch_db[i] - max.batch_db[i];
  g.mean_db = sum / n;
  if (g.batches < 2) return g;
  for (size_t i = 0; i < g.batches; ++i) {
    const double d = c.batch_db[i] - max.batch_db[i] - g.mean_db;
    sq += d * d;
  }
  g.se_db = std::sqrt(sq / (n - 1) / n);
  return g;
}

namespace {

// Whether c beats max (m) sample for sample (choose_candidate's paired test).
bool beats_max(const CandidateScores& c, const CandidateScores& m) {
  const PairedGain g = paired_gain(c, m);
  if (g.batches < 2) return c.worst_batch_db() >= m.worst_batch_db() + kAutoMarginDb;
  return g.mean_db > 0 && g.mean_db > kAutoPairedZ * g.se_db;
}

}  // namespace

size_t choose_candidate(const std::vector<CandidateScores>& scores) {
  size_t best = 0;
  for (size_t i = 1; i < scores.size(); ++i)
    if (beats_max(scores[i], scores[0]) &&
        (best == 0 || scores[i].worst_batch_db() > scores[best].worst_batch_db()))
      best = i;
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
