// quantize_onnx's threshold stages (quantize_stages.h): each calibrated tensor's threshold per
// method (calibration.cpp) into the scale table, and calibration_method auto's choice of the
// method by the outputs (auto_method.cpp).
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "quantize/quantize_stages.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

void record_thresholds(QuantizeRun& run, const ThresholdTable& th, size_t count) {
  for (const auto& [t, a] : th.amax) run.table.amax[t] = a;
  run.result.calibration_rejected.insert(run.result.calibration_rejected.end(), th.rejected.begin(),
                                         th.rejected.end());
  if (*run.method == CalibrationMethod::kAuto)
    for (const auto& [m, n] : th.methods_used) run.result.calibration_methods_used[m] += n;
  if (!th.rejected.empty())
    TRT_LOG_WARN(
        "calibration: {} of {} tensor(s) keep their absmax: the {} threshold quantized their "
        "calibration values with over {:g}x absmax's squared error (e.g. {})",
        th.rejected.size(), count, calibration_method_name(*run.method), kGuardRatio,
        th.rejected.front());
  if (th.by_max)
    TRT_LOG_INFO(
        "calibration: {} Softmax output(s) calibrated by their maximum ({} would clip "
        "the largest probabilities)",
        th.by_max, calibration_method_name(*run.method));
}

void add_fp8_ranges(const std::map<std::string, TensorStats>& stats,
                    const std::map<std::string, double>& amax,
                    std::vector<QuantizeRangeMetrics>& out) {
  for (const auto& [t, s] : stats) {
    const double a = amax.at(t);
    const E4m3Range r = e4m3_range(s, a);
    out.push_back({.name = t,
                   .amax = a,
                   .below_normal = r.below_normal,
                   .flushed = r.flushed,
                   .clipped = r.clipped,
                   .outside = r.below_normal > kE4m3BelowNormalLimit});
  }
}

namespace {

// The selection's fields of the result, and its log line.
void record_selection(QuantizeRun& run, const MethodSelection& sel, int64_t samples, double secs) {
  run.result.calibration_method_chosen = sel.name;
  run.result.auto_selection_samples = samples;
  run.result.auto_selection_held_out = run.selection.held_out();
  run.result.auto_selection_folds = run.selection.folds;
  run.result.auto_selection_on_gpu = sel.on_gpu;
  run.result.auto_selection_rule = kAutoSelectionRule;
  std::string scores;
  for (const auto& sc : sel.scores) {
    run.result.calibration_method_scores.emplace_back(sc.name, sc.sqnr_db);
    run.result.calibration_method_gains.push_back(
        {sc.name, sc.gain.mean_db, sc.gain.se_db, static_cast<int64_t>(sc.gain.batches)});
    scores += fmt::format("{}{} {:.2f} (pooled {:.2f}, per batch {:+.2f} +/- {:.2f} vs max)",
                          scores.empty() ? "" : ", ", sc.name, sc.sqnr_db, sc.detail.pooled_db,
                          sc.gain.mean_db, sc.gain.se_db);
  }
  TRT_LOG_INFO(
      "calibration_method auto: {} (worst-batch output SQNR dB on {} calibration sample(s), {}: "
      "{}; {}; {:.1f} s on the {})",
      sel.name, samples,
      run.selection.held_out()
          ? fmt::format("{} folds, each fitted without its own", run.selection.folds)
          : std::string("in-sample"),
      scores, kAutoSelectionRule, secs, sel.on_gpu ? "GPU" : "CPU");
}

}  // namespace

void select_calibration(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  if (run.method && *run.method == CalibrationMethod::kAuto && !run.kept_stats.empty()) {
    // Every method's table on the same statistics (per fold, without the fold's batches, when
    // cross-fitted), judged by the outputs on the selection batches (never the report's held-out
    // ones); the winner's method then runs on the statistics of every calibration batch.
    const std::vector<int64_t>& picked = run.selection.batches;
    auto pick = [&](int64_t i) { return run.data->feeds(picked[static_cast<size_t>(i)]); };
    int64_t samples = 0;
    for (int64_t b : picked) samples += run.data->samples(b, b + 1);
    if (run.fold_stats.empty()) run.fold_stats.push_back(run.kept_stats);  // in-sample: one table
    for (auto& fs : run.fold_stats)  // a tensor no fold batch reached (none in practice)
      for (const auto& [t, st] : run.kept_stats) fs.try_emplace(t, st);
    const auto t0 = std::chrono::steady_clock::now();
    MethodSelection sel = select_calibration_method(
        run.fold_stats, run.selection.fold, run.cp, run.softmax,
        [&](const std::map<std::string, double>& amax) {
          const ScaleTable saved = run.table;
          for (const auto& [t, a] : amax) run.table.amax[t] = a;
          share_scales(run.model.graph, run.table);
          ir::Model m = build_qdq_model(run, run.placement, nullptr);
          run.table = saved;
          return m;
        },
        run.float_model, samples, pick, o.num_threads, o.progress);
    run.fold_stats.clear();
    record_selection(run, sel, samples, seconds(t0, std::chrono::steady_clock::now()));
    run.method = sel.method;  // later calibrations (min_sqnr) use the chosen method
    const ThresholdTable th = choose_thresholds(run.kept_stats, sel.method, run.cp, run.softmax);
    // The provisional table's fields give way to the winner's.
    for (const auto& [t, a] : th.amax) run.table.amax[t] = a;
    run.result.calibration_rejected = th.rejected;
    run.result.calibration_methods_used = th.methods_used;
    run.result.fp8_range.clear();
    if (run.mode == QuantMode::kFp8) add_fp8_ranges(run.kept_stats, th.amax, run.result.fp8_range);
    share_scales(run.model.graph, run.table);
    run.kept_stats.clear();
    run.auto_selected = true;
  }
}

}  // namespace trtutils::quantize
