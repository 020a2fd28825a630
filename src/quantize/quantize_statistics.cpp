// quantize_onnx's statistics stages (quantize_stages.h): what calibration measures, streamed
// over the calibration batches in one pass (the activations' histograms for the thresholds, the
// per-channel means bias correction needs, the E[x x^T] GPTQ needs), and awq_clip's importance.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/progress.h"
#include "quantize/quantize_stages.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

namespace {

// awq_clip: E[x_k^2] along K of the activation each int4 weight multiplies, streamed over the
// calibration batches; weight initializer -> importance (summed over its consumers).
std::map<std::string, std::vector<double>> awq_importance(const ir::Model& model,
                                                          const Placement& p, int64_t num_batches,
                                                          const BatchFn& feed_batch,
                                                          const StreamOptions& so) {
  const ir::Graph& g = model.graph;
  std::map<std::string, const ir::Node*> by_name;
  for (const auto& n : g.nodes) by_name[n.name] = &n;
  // (activation, its K axis) per weight use.
  std::map<std::string, std::vector<std::pair<std::string, int64_t>>> uses;
  std::map<std::string, ChannelStats> stats;  // keyed by activation tensor
  std::map<std::string, int64_t> act_axis;
  for (const auto& wq : p.weights) {
    auto it = by_name.find(wq.node);
    if (it == by_name.end() || wq.input != 1 || it->second->inputs.empty()) continue;
    const ir::Node& n = *it->second;
    const std::string& x = n.inputs[0];
    // MatMul / Gemm A: K is the last axis, or axis 0 of a transposed Gemm A ([K, M]).
    const int64_t axis = n.op_type == "Gemm" && n.attr_int("transA", 0) != 0 ? 0 : -1;
    auto [ai, fresh] = act_axis.emplace(x, axis);
    if (!fresh && ai->second != axis) continue;  // read with two layouts: leave it blind
    uses[wq.tensor].emplace_back(x, axis);
    if (fresh) stats.emplace(x, ChannelStats(axis));
  }
  std::vector<std::string> computed;
  for (auto& [x, st] : stats) {
    if (const Tensor* c = g.initializer(x)) {
      st.add(*c);  // a constant A: its own values, once
    } else {
      computed.push_back(x);
    }
  }
  if (!computed.empty())
    stream_tensors(model, computed, num_batches, feed_batch, so,
                   [&](const std::string& name, const Tensor& t) { stats.at(name).add(t); });
  std::map<std::string, std::vector<double>> imp;
  for (const auto& [w, xs] : uses) {
    const Tensor* wt = g.initializer(w);
    std::vector<double> sum;
    for (const auto& [x, axis] : xs) {
      std::vector<double> m = stats.at(x).mean_square();
      if (sum.empty()) sum.assign(m.size(), 0.0);
      if (m.size() != sum.size()) {
        sum.clear();
        break;
      }
      for (size_t k = 0; k < m.size(); ++k) sum[k] += m[k];
    }
    // Checked against the weight's K (the blocked axis) by quantize_weight; a mismatch here
    // (e.g. a broadcast A) leaves the weight to the activation-blind search.
    int64_t klen = -1;
    for (const auto& wq : p.weights)
      if (wq.tensor == w && wq.axis >= 0 && wt) klen = wt->dim(static_cast<size_t>(wq.axis));
    if (!sum.empty() && static_cast<int64_t>(sum.size()) == klen) imp[w] = std::move(sum);
  }
  return imp;
}

}  // namespace

void calibration_statistics(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  // Bias correction: the per-channel mean of each quantized layer's activation input, measured
  // in the same pass as the calibration statistics (no extra run of the model).
  const bool bias_correction =
      o.bias_correction == "on" || (o.bias_correction == "auto" && run.mode != QuantMode::kInt4);
  TRT_CHECK_ARG(!bias_correction || run.have_data || o.bias_correction == "auto",
                "bias_correction needs calibration_data (the mean of each layer's input)");
  if (bias_correction && run.have_data && run.calib_batches > 0) {
    std::map<std::string, const ir::Node*> by_name;
    for (const auto& n : run.model.graph.nodes) by_name[n.name] = &n;
    std::map<std::string, int64_t> axis_of;
    for (const auto& wq : run.placement.weights) {
      auto it = by_name.find(wq.node);
      if (it == by_name.end()) continue;
      const auto in = bias_correction_input(*it->second, wq.input);
      if (!in) continue;
      auto [a, fresh] = axis_of.emplace(in->first, in->second);
      if (!fresh && a->second != in->second) continue;  // read with two layouts
      if (fresh) run.input_stats.emplace(in->first, ChannelStats(in->second));
      run.corrected_input[wq.node] = in->first;
    }
  }
  // GPTQ: E[x x^T] over K of the activation input of each MatMul / Gemm weight use, measured in
  // the same pass.
  TRT_CHECK_ARG(o.weight_rounding != "gptq" || run.have_data,
                "weight_rounding gptq needs calibration_data (E[x x^T] of each layer's input)");
  run.gptq = o.weight_rounding == "gptq" || (o.weight_rounding == "auto" && run.have_data);
  if (run.gptq && run.have_data && run.calib_batches > 0) {
    std::map<std::string, const ir::Node*> by_name;
    for (const auto& n : run.model.graph.nodes) by_name[n.name] = &n;
    for (const auto& wq : run.placement.weights) {
      auto it = by_name.find(wq.node);
      if (it == by_name.end() || wq.input != 1) continue;
      const ir::Node& n = *it->second;
      const bool matmul =
          n.op_type == "MatMul" || (n.op_type == "Gemm" && n.attr_int("transA", 0) == 0);
      const Tensor* w = run.model.graph.initializer(wq.tensor);
      if (!matmul || !w || w->rank() != 2 || !n.has_input(0)) continue;
      run.hessian_stats.try_emplace(n.inputs[0]);
      run.gptq_input[n.name] = n.inputs[0];
    }
  }
  run.cp.percentile = o.percentile;
  run.cp.qmax = quant_mode_qmax(run.mode);
  run.cp.fp8 = run.mode == QuantMode::kFp8;
  run.softmax = softmax_probability_tensors(run.model.graph);
  if (run.have_data && run.method && *run.method == CalibrationMethod::kAuto)
    run.selection = selection_batches(run.calib_batches, run.data->samples(0, 1),
                                      kAutoSelectionSamples, kAutoSelectionFolds);
  calibrate(
      run,
      run.mode != QuantMode::kInt4 ? uncalibrated(run, run.placement) : std::vector<std::string>{},
      run.input_stats.empty() ? nullptr : &run.input_stats,
      run.hessian_stats.empty() ? nullptr : &run.hessian_stats, /*show_progress=*/true);
}

void calibrate(QuantizeRun& run, const std::vector<std::string>& tensors,
               std::map<std::string, ChannelStats>* channels,
               std::map<std::string, HessianStats>* hessians, bool show_progress) {
  const QuantizeOptions& o = run.o;
  std::vector<std::string> streamed = tensors;
  std::set<std::string> listed(tensors.begin(), tensors.end());
  if (channels) {
    for (auto& [x, st] : *channels) {
      if (const Tensor* c = run.model.graph.initializer(x)) {
        st.add(*c);  // a constant input: its own values, once
      } else if (listed.insert(x).second) {
        streamed.push_back(x);
      }
    }
  }
  if (hessians) {
    for (auto& [x, st] : *hessians) {
      if (const Tensor* c = run.model.graph.initializer(x)) {
        st.add(*c);
      } else if (listed.insert(x).second) {
        streamed.push_back(x);
      }
    }
  }
  if (streamed.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, TensorStats> stats;
  for (const auto& t : tensors) stats.emplace(t, TensorStats(o.num_bins));
  const bool selecting =
      !tensors.empty() && *run.method == CalibrationMethod::kAuto && !run.auto_selected;
  std::optional<FoldStats> fit;
  if (selecting && run.selection.held_out()) fit.emplace(run.selection, o.num_bins);
  Progress bar("calibration", run.calib_batches, show_progress && o.progress, "batches");
  const size_t live = stream_tensors(
      run.model, streamed, run.calib_batches,
      [&](int64_t i) {
        bar.update(i);  // batches [0, i) are done
        return run.data->feeds(i);
      },
      {.num_threads = o.num_threads, .per_node = o.calibrate_per_node},
      [&](const std::string& name, const Tensor& t) {
        if (auto s = stats.find(name); s != stats.end()) {
          s->second.add(t);
          if (fit) fit->add(name, t);
        }
        if (hessians)
          if (auto h = hessians->find(name); h != hessians->end()) h->second.add(t);
        if (!channels) return;
        if (auto c = channels->find(name); c != channels->end()) c->second.add(t);
      });
  bar.update(run.calib_batches);
  const auto t1 = std::chrono::steady_clock::now();
  if (tensors.empty()) return;
  // auto: the first calibration's thresholds are provisional (the per-tensor table) until
  // select_calibration_method has tried every method on the outputs.
  const ThresholdTable th = choose_thresholds(stats, *run.method, run.cp, run.softmax);
  record_thresholds(run, th, stats.size());
  if (run.mode == QuantMode::kFp8) add_fp8_ranges(stats, th.amax, run.result.fp8_range);
  if (selecting) {
    if (fit) run.fold_stats = fit->take();
    run.kept_stats = std::move(stats);
  }
  share_scales(run.model.graph, run.table);
  TRT_LOG_INFO(
      "calibration: {}{} tensor(s) over {} batch(es) in {:.1f} s (activations alive at most "
      "{:.1f} MiB, peak RSS so far {:.0f} MiB), {} thresholds in {:.1f} s",
      o.calibrate_per_node ? "node by node, " : "", tensors.size(), run.calib_batches,
      seconds(t0, t1), static_cast<double>(live) / (1 << 20), peak_rss_mib(), o.calibration_method,
      seconds(t1, std::chrono::steady_clock::now()));
}

std::vector<std::string> uncalibrated(const QuantizeRun& run, const Placement& p) {
  std::vector<std::string> v;
  for (const auto& [t, uses] : p.activations)
    if (!run.table.amax.count(t)) v.push_back(t);
  return v;
}

void weight_statistics(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  run.ao = ApplyOptions{.mode = run.mode, .awq_clip = run.awq};
  run.ao.gptq = run.gptq;
  {
    std::map<std::string, std::shared_ptr<const std::vector<float>>> by_input;
    for (auto& [x, st] : run.hessian_stats)
      if (st.rows() > 0) by_input[x] = std::make_shared<const std::vector<float>>(st.mean_outer());
    run.hessian_stats.clear();
    for (const auto& [node, x] : run.gptq_input)
      if (auto h = by_input.find(x); h != by_input.end()) run.ao.hessian[node] = h->second;
  }
  for (const auto& [node, x] : run.corrected_input) {
    const ChannelStats& st = run.input_stats.at(x);
    if (st.rows() > 0) run.ao.input_mean[node] = st.mean();
  }
  run.input_stats.clear();
  if (run.awq && run.have_data && run.calib_batches > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    run.ao.awq_importance = awq_importance(
        run.model, run.placement, run.calib_batches, [&](int64_t i) { return run.data->feeds(i); },
        {.num_threads = o.num_threads, .per_node = o.calibrate_per_node});
    TRT_LOG_INFO(
        "awq_clip: activation statistics for {} of {} weight(s) over {} batch(es) in {:.1f} s",
        run.ao.awq_importance.size(), run.placement.weights.size(), run.calib_batches,
        seconds(t0, std::chrono::steady_clock::now()));
  } else if (run.awq) {
    TRT_LOG_WARN(
        "awq_clip without calibration_data: the clip search cannot weight the error by the "
        "activations and minimises the weight error only");
  }
  // float16 scales: at least float16's smallest normal (qdq.h, ApplyOptions::min_scale).
  if (run.fp16) run.ao.min_scale = 6.103515625e-05f;  // 2^-14
}

}  // namespace trtutils::quantize
