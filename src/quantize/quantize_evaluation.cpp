// quantize_onnx's report stages (quantize_stages.h): the float and Q/DQ models run on the
// report's batches (report.cpp), the result's metrics, counts and warnings, and the report file.
#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/nn_kernels.h"
#include "quantize/quantize_stages.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

BatchFn eval_feed(const QuantizeRun& run) {
  return [&run](int64_t i) { return run.data->feeds(run.eval_index[static_cast<size_t>(i)]); };
}

double min_output_sqnr(const std::vector<PairMetrics>& ms) {
  double m = std::numeric_limits<double>::infinity();
  for (const auto& x : ms) m = std::min(m, x.sqnr_db);
  return m;
}

void evaluate_outputs(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  const BatchFn feed = eval_feed(run);
  std::vector<std::string> output_names;
  for (const auto& v : run.float_model.graph.outputs) {
    run.output_pairs.emplace_back(v.name, v.name);
    output_names.push_back(v.name);
  }
  if (run.eval_count() > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    run.reference =
        run_batches(run.float_model, output_names, run.eval_count(), feed, o.num_threads);
    // The float model's packed weights (CPU kernels' caches, alive as long as its weights) are
    // not needed again; the Q/DQ model packs its own (ResNet-50: 45 MiB less at the peak).
    cpu::nn::onednn_clear_caches();
    run.metrics =
        compare_to_reference(run.reference, run.qmodel, run.output_pairs, feed, o.num_threads);
    TRT_LOG_INFO("report: {} batch(es) through both models in {:.1f} s (peak RSS {:.0f} MiB)",
                 run.eval_count(), seconds(t0, std::chrono::steady_clock::now()), peak_rss_mib());
  }
}

void report_results(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  for (size_t i = 0; i < run.output_pairs.size() && i < run.metrics.size(); ++i)
    run.result.outputs.push_back({run.output_pairs[i].first, run.metrics[i].sqnr_db,
                                  run.metrics[i].cosine, run.metrics[i].max_abs_error});
  if ((o.report_per_tensor || !o.plot.empty()) && run.eval_count() > 0 &&
      !run.placement.activations.empty()) {
    // The dequantized value each quantized tensor's consumers read, vs the float tensor.
    std::map<std::string, std::string> dq_of;
    for (const auto& n : run.qmodel.graph.nodes)
      if (n.op_type == "DequantizeLinear" && !n.inputs.empty()) {
        for (const auto& q : run.qmodel.graph.nodes)
          if (q.op_type == "QuantizeLinear" && q.outputs[0] == n.inputs[0])
            dq_of[q.inputs[0]] = n.outputs[0];
      }
    std::vector<std::pair<std::string, std::string>> pairs;
    std::vector<std::string> nodes;
    for (const auto& [t, uses] : run.placement.activations)
      if (dq_of.count(t)) {
        pairs.emplace_back(t, dq_of[t]);
        nodes.push_back(uses.empty() ? "" : uses[0].first);
      }
    auto ms = compare_models(run.float_model, run.qmodel, pairs, run.eval_count(), eval_feed(run),
                             o.num_threads);
    for (size_t i = 0; i < pairs.size(); ++i) {
      const double a = run.table.amax[pairs[i].first];
      run.result.tensors.push_back({pairs[i].first, nodes[i], ms[i].sqnr_db, a,
                                    a > 0 ? a / quant_mode_qmax(run.mode) : 1.0});
    }
  }

  {  // graph order (of the first consumer) for the table and the plot
    std::map<std::string, size_t> pos;
    for (size_t i = 0; i < run.float_model.graph.nodes.size(); ++i)
      pos[run.float_model.graph.nodes[i].name] = i;
    std::stable_sort(run.result.tensors.begin(), run.result.tensors.end(),
                     [&](const QuantizeTensorMetrics& a, const QuantizeTensorMetrics& b) {
                       return pos[a.node] < pos[b.node];
                     });
  }
  if (!o.plot.empty()) plot_sqnr_png(run.result.tensors, o.plot);
  run.result.num_quantized_nodes = static_cast<int64_t>(run.placement.quantized_nodes.size());
  run.result.num_qdq_pairs = run.ast.qdq_pairs;
  run.result.num_weights_quantized = run.ast.weights;
  run.result.num_bias_corrected = run.ast.bias_corrected;
  run.result.num_gptq_rounded = run.ast.gptq_rounded;
  if (run.ast.scales_raised > 0)
    TRT_LOG_WARN(
        "high_precision_dtype fp16: {} scale(s) below float16's smallest normal ({:.3g}) were "
        "raised to it (their tensors' values are below {:.3g}, e.g. dead channels); fewer "
        "quantization steps cover those values. --high_precision_dtype fp32 keeps exact scales",
        run.ast.scales_raised, run.ao.min_scale, run.ao.min_scale * quant_mode_qmax(run.mode));
  if (run.ast.bias_corrected > 0)
    TRT_LOG_INFO("bias correction: {} of {} layer(s) with quantized weights",
                 run.ast.bias_corrected, run.ao.input_mean.size());
  run.result.skipped = run.placement.skipped;
}

void write_report_file(QuantizeRun& run) {
  const QuantizeOptions& o = run.o;
  run.result.report_path = o.output_path;
  run.result.report_path += ".report.json";
  write_file_atomic(run.result.report_path,
                    report_json(o, run.result, run.table, quant_mode_qmax(run.mode)));
}

}  // namespace trtutils::quantize
