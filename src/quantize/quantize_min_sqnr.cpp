// quantize_onnx's min_sqnr stage (quantize_stages.h): while the worst output SQNR is below
// min_sqnr, the quantized node whose return to high precision gains the most goes back, each
// step re-placed, re-calibrated where needed and measured on the report's batches.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/progress.h"
#include "quantize/quantize_stages.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

namespace {

// `qm` (a Q/DQ model built from `fm`) with node `name` reading what it reads in `fm` again: its
// activations before their Q/DQ, its float weights and bias, and the uncorrected constants of
// the Adds that read its output (bias correction of a MatMul). The same as excluding the node,
// without rebuilding (no weight rounding, no calibration); its Q/DQ nodes lose their readers.
ir::Model with_node_in_float(const ir::Model& qm, const ir::Model& fm, const std::string& name) {
  ir::Model m = qm;
  ir::Graph& g = m.graph;
  std::map<std::string, const ir::Node*> fnodes;
  for (const auto& n : fm.graph.nodes) fnodes[n.name] = &n;
  auto restore = [&](ir::Node& n, bool constants_only) {
    auto f = fnodes.find(n.name);
    if (f == fnodes.end() || f->second->inputs.size() != n.inputs.size()) return;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& orig = f->second->inputs[k];
      if (n.inputs[k] == orig) continue;
      const Tensor* c = fm.graph.initializer(orig);
      if (constants_only && !c) continue;
      if (c && !g.is_initializer(orig)) g.initializers[orig] = *c;
      n.inputs[k] = orig;
    }
  };
  std::string out;
  for (auto& n : g.nodes)
    if (n.name == name) {
      restore(n, false);
      if (!n.outputs.empty()) out = n.outputs[0];
    }
  if (!out.empty())
    for (auto& n : g.nodes)
      if (n.op_type == "Add" && std::find(n.inputs.begin(), n.inputs.end(), out) != n.inputs.end())
        restore(n, true);
  g.remove_dead_nodes();
  return m;
}

}  // namespace

void min_sqnr_fallback(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  if (!(o.min_sqnr && run.eval_count() > 0 && min_output_sqnr(run.metrics) < *o.min_sqnr)) return;
  const BatchFn feed = eval_feed(run);
  // Sensitivity, measured: the output SQNR with each quantized node alone back in float (the
  // Q/DQ model with that node's inputs rewired to float, one evaluation per node). A local
  // proxy (the noise a node adds to its own output) misses how that noise propagates: on
  // ViT-B/16 fp8 (random weights), the 12 QKV projections back in float gain 0 dB, the 12
  // MLP fc2 2.1 dB (near-uniform attention averages the per-token noise away); ranked by
  // that proxy, 32 of 72 layers had to stay in float for 25 dB.
  const auto t0 = std::chrono::steady_clock::now();
  const double base = min_output_sqnr(run.metrics);
  std::vector<std::pair<double, std::string>> order;
  {
    Progress bar("min_sqnr sensitivity", static_cast<int64_t>(run.placement.quantized_nodes.size()),
                 o.progress, "layers");
    for (const auto& name : run.placement.quantized_nodes) {
      const auto ms =
          compare_to_reference(run.reference, with_node_in_float(run.qmodel, run.float_model, name),
                               run.output_pairs, feed, o.num_threads);
      order.emplace_back(min_output_sqnr(ms), name);
      bar.update(static_cast<int64_t>(order.size()));
    }
  }
  // Largest gain first; ties keep graph order.
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  TRT_LOG_INFO("min_sqnr: sensitivity of {} node(s) measured in {:.1f} s", order.size(),
               seconds(t0, std::chrono::steady_clock::now()));
  std::set<std::string> excluded = run.po.nodes_excluded_exact;
  // At most every layer; the search stops as soon as the target is met.
  Progress bar("min_sqnr fallback", static_cast<int64_t>(order.size()), o.progress, "layers");
  for (const auto& [alone, worst] : order) {
    excluded.insert(worst);
    run.result.excluded_by_fallback.push_back(worst);
    run.po.nodes_excluded_exact = excluded;
    run.placement = place_qdq(run.float_model.graph, run.po);
    calibrate(run, uncalibrated(run, run.placement));  // e.g. the other branch of a residual Add
    run.qmodel = build_qdq_model(run, run.placement, &run.ast);
    run.metrics =
        compare_to_reference(run.reference, run.qmodel, run.output_pairs, feed, o.num_threads);
    TRT_LOG_INFO(
        "min_sqnr: left {} in high precision (alone: {:+.2f} dB), output SQNR now {:.2f} dB", worst,
        alone - base, min_output_sqnr(run.metrics));
    if (min_output_sqnr(run.metrics) >= *o.min_sqnr) break;
    bar.update(static_cast<int64_t>(run.result.excluded_by_fallback.size()));
  }
  bar.finish(static_cast<int64_t>(run.result.excluded_by_fallback.size()));
}

}  // namespace trtutils::quantize
