#include "quantize/report.h"

#include <cmath>
#include <limits>
#include <set>

#include "core/check.h"
#include "engine/session.h"
#include "passes/passes.h"

namespace trtutils::quantize {

void MetricsAccumulator::add(const Tensor& ref, const Tensor& test) {
  TRT_CHECK(ref.numel() == test.numel(), ErrorCode::kInternal,
            "report: compared tensors differ in size ({} vs {})", shape_str(ref.shape()),
            shape_str(test.shape()));
  const std::vector<float> a = ref.to_float_vector(), b = test.to_float_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i], e = x - y;
    sig_ += x * x;
    noise_ += e * e;
    dot_ += x * y;
    nr_ += x * x;
    nt_ += y * y;
    max_abs_ = std::max(max_abs_, std::fabs(e));
  }
}

PairMetrics MetricsAccumulator::result() const {
  PairMetrics m;
  m.sqnr_db = noise_ == 0 ? std::numeric_limits<double>::infinity()
                          : (sig_ == 0 ? -std::numeric_limits<double>::infinity()
                                       : 10.0 * std::log10(sig_ / noise_));
  m.cosine = (nr_ == 0 || nt_ == 0) ? (nr_ == nt_ ? 1.0 : 0.0) : dot_ / std::sqrt(nr_ * nt_);
  m.max_abs_error = max_abs_;
  return m;
}

namespace {
ir::Model with_outputs(const ir::Model& m, const std::vector<std::string>& names) {
  ir::Model r = m;
  // Weights stored quantized are dequantized once here instead of at every run (the same
  // values; and the CPU backend caches weights that are initializers, not per-run tensors).
  passes::ConstantFoldingOptions fo;
  fo.keep_ops = {"QuantizeLinear"};
  fo.max_output_bytes = size_t{1} << 31;
  passes::infer_shapes(r.graph, r.opset());
  passes::fold_constants(r.graph, r.opset(), fo);
  std::set<std::string> have;
  for (const auto& v : r.graph.inputs) have.insert(v.name);
  for (const auto& v : r.graph.outputs) have.insert(v.name);
  for (const auto& n : names) {
    if (have.count(n)) continue;
    ir::ValueInfo vi;
    vi.name = n;
    r.graph.outputs.push_back(vi);
    have.insert(n);
  }
  return r;
}
}  // namespace

std::vector<PairMetrics> compare_models(
    const ir::Model& float_model, const ir::Model& qdq_model,
    const std::vector<std::pair<std::string, std::string>>& pairs, int64_t num_batches,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed_batch, int num_threads) {
  std::vector<std::string> fa, qa;
  for (const auto& [f, q] : pairs) {
    fa.push_back(f);
    qa.push_back(q);
  }
  Session fs(with_outputs(float_model, fa), {.num_threads = num_threads});
  Session qs(with_outputs(qdq_model, qa), {.num_threads = num_threads});
  std::vector<MetricsAccumulator> acc(pairs.size());
  for (int64_t b = 0; b < num_batches; ++b) {
    auto feeds = feed_batch(b);
    auto fo = fs.run(feeds);
    auto qo = qs.run(feeds);
    auto get = [&](std::map<std::string, Tensor>& outs, const std::string& n) -> const Tensor& {
      auto it = outs.find(n);
      if (it != outs.end()) return it->second;
      auto f = feeds.find(n);
      TRT_CHECK(f != feeds.end(), ErrorCode::kInternal, "report: '{}' was not computed", n);
      return f->second;
    };
    for (size_t i = 0; i < pairs.size(); ++i)
      acc[i].add(get(fo, pairs[i].first), get(qo, pairs[i].second));
  }
  std::vector<PairMetrics> r;
  for (const auto& a : acc) r.push_back(a.result());
  return r;
}

std::vector<std::map<std::string, Tensor>> run_batches(
    const ir::Model& model, const std::vector<std::string>& names, int64_t num_batches,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed_batch, int num_threads) {
  Session s(with_outputs(model, names), {.num_threads = num_threads});
  std::vector<std::map<std::string, Tensor>> r;
  for (int64_t b = 0; b < num_batches; ++b) {
    auto feeds = feed_batch(b);
    auto out = s.run(feeds);
    std::map<std::string, Tensor> keep;
    for (const auto& n : names) {
      auto it = out.find(n);
      if (it != out.end()) {
        keep[n] = it->second;
      } else {
        auto f = feeds.find(n);
        TRT_CHECK(f != feeds.end(), ErrorCode::kInternal, "report: '{}' was not computed", n);
        keep[n] = f->second;
      }
    }
    r.push_back(std::move(keep));
  }
  return r;
}

std::vector<PairMetrics> compare_to_reference(
    const std::vector<std::map<std::string, Tensor>>& reference, const ir::Model& qdq_model,
    const std::vector<std::pair<std::string, std::string>>& pairs,
    const std::function<std::map<std::string, Tensor>(int64_t)>& feed_batch, int num_threads) {
  std::vector<std::string> qa;
  for (const auto& pr : pairs) qa.push_back(pr.second);
  return pair_metrics(
      reference,
      run_batches(qdq_model, qa, static_cast<int64_t>(reference.size()), feed_batch, num_threads),
      pairs);
}

std::vector<PairMetrics> pair_metrics(
    const std::vector<std::map<std::string, Tensor>>& reference,
    const std::vector<std::map<std::string, Tensor>>& got,
    const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<MetricsAccumulator> acc(pairs.size());
  for (size_t b = 0; b < reference.size(); ++b)
    for (size_t i = 0; i < pairs.size(); ++i)
      acc[i].add(reference[b].at(pairs[i].first), got.at(b).at(pairs[i].second));
  std::vector<PairMetrics> r;
  for (const auto& a : acc) r.push_back(a.result());
  return r;
}

namespace {
std::string js(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      r += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      r += c;
    }
  }
  return r + "\"";
}
std::string jn(double v) {
  if (std::isnan(v)) return "null";
  if (std::isinf(v))
    return v > 0 ? "1e999" : "-1e999";  // JSON has no inf; parsers read these as inf
  return fmt::format("{:.9g}", v);
}
}  // namespace

std::string report_json(const QuantizeOptions& o, const QuantizeResult& r, const ScaleTable& table,
                        double qmax) {
  std::string s = "{\n";
  s += fmt::format("  \"onnx_path\": {},\n  \"output_path\": {},\n", js(o.onnx_path.string()),
                   js(o.output_path.string()));
  s += fmt::format("  \"quantize_mode\": {},\n  \"calibration_method\": {},\n", js(o.quantize_mode),
                   js(o.calibration_method));
  s += fmt::format(
      "  \"calibration_samples\": {},\n  \"eval_samples\": {},\n  \"eval_held_out\": {},\n",
      r.calibration_samples, r.eval_samples, r.eval_held_out ? "true" : "false");
  s += fmt::format("  \"preprocessing\": {},\n", js(r.preprocessing));
  s += fmt::format(
      "  \"quantized_nodes\": {},\n  \"qdq_pairs\": {},\n  \"quantized_weights\": {},\n"
      "  \"bias_corrected\": {},\n  \"gptq_rounded\": {},\n",
      r.num_quantized_nodes, r.num_qdq_pairs, r.num_weights_quantized, r.num_bias_corrected,
      r.num_gptq_rounded);
  s += "  \"outputs\": [";
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const auto& m = r.outputs[i];
    s += fmt::format(
        "{}\n    {{\"name\": {}, \"sqnr_db\": {}, \"cosine\": {}, \"max_abs_error\": {}}}",
        i ? "," : "", js(m.name), jn(m.sqnr_db), jn(m.cosine), jn(m.max_abs_error));
  }
  s += r.outputs.empty() ? "],\n" : "\n  ],\n";
  s += "  \"tensors\": [";
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    const auto& m = r.tensors[i];
    s += fmt::format(
        "{}\n    {{\"name\": {}, \"node\": {}, \"sqnr_db\": {}, \"amax\": {}, \"scale\": {}}}",
        i ? "," : "", js(m.name), js(m.node), jn(m.sqnr_db), jn(m.amax), jn(m.scale));
  }
  s += r.tensors.empty() ? "],\n" : "\n  ],\n";
  s += "  \"excluded_by_fallback\": [";
  for (size_t i = 0; i < r.excluded_by_fallback.size(); ++i)
    s += (i ? ", " : "") + js(r.excluded_by_fallback[i]);
  s += "],\n  \"excluded_detection_head\": [";
  for (size_t i = 0; i < r.excluded_detection_head.size(); ++i)
    s += (i ? ", " : "") + js(r.excluded_detection_head[i]);
  s += "],\n  \"calibration_rejected\": [";
  for (size_t i = 0; i < r.calibration_rejected.size(); ++i)
    s += (i ? ", " : "") + js(r.calibration_rejected[i]);
  s += "],\n  \"calibration_methods_used\": {";
  for (auto it = r.calibration_methods_used.begin(); it != r.calibration_methods_used.end(); ++it)
    s += fmt::format("{}{}: {}", it == r.calibration_methods_used.begin() ? "" : ", ",
                     js(it->first), it->second);
  s += fmt::format(
      "}},\n  \"calibration_method_chosen\": {},\n  \"auto_selection_samples\": {},\n"
      "  \"auto_selection_held_out\": {},\n  \"auto_selection_folds\": {},\n"
      "  \"auto_selection_rule\": {},\n",
      js(r.calibration_method_chosen), r.auto_selection_samples,
      r.auto_selection_held_out ? "true" : "false", r.auto_selection_folds,
      js(r.auto_selection_rule));
  s += "  \"calibration_method_scores\": {";
  for (size_t i = 0; i < r.calibration_method_scores.size(); ++i)
    s += fmt::format("{}{}: {}", i ? ", " : "", js(r.calibration_method_scores[i].first),
                     jn(r.calibration_method_scores[i].second));
  s += "},\n  \"calibration_method_gain_db\": {";
  for (size_t i = 0; i < r.calibration_method_gains.size(); ++i) {
    const auto& g = r.calibration_method_gains[i];
    s += fmt::format("{}{}: {{\"mean\": {}, \"se\": {}, \"batches\": {}}}", i ? ", " : "",
                     js(g.name), jn(g.mean_db), jn(g.se_db), g.batches);
  }
  s += "},\n  \"fp8_range\": [";
  for (size_t i = 0; i < r.fp8_range.size(); ++i) {
    const auto& m = r.fp8_range[i];
    s += fmt::format(
        "{}\n    {{\"name\": {}, \"amax\": {}, \"below_normal\": {}, \"flushed\": {}, "
        "\"clipped\": {}, \"outside\": {}}}",
        i ? "," : "", js(m.name), jn(m.amax), jn(m.below_normal), jn(m.flushed), jn(m.clipped),
        m.outside ? "true" : "false");
  }
  s += r.fp8_range.empty() ? "],\n" : "\n  ],\n";
  s += "  \"skipped\": [";
  for (size_t i = 0; i < r.skipped.size(); ++i) s += (i ? ",\n    " : "\n    ") + js(r.skipped[i]);
  s += r.skipped.empty() ? "],\n" : "\n  ],\n";
  s += "  \"scales\": {";
  size_t i = 0;
  for (const auto& [t, a] : table.amax)
    s += fmt::format("{}\n    {}: {{\"amax\": {}, \"scale\": {}}}", i++ ? "," : "", js(t), jn(a),
                     jn(a > 0 ? a / qmax : 1.0));
  s += table.amax.empty() ? "}\n" : "\n  }\n";
  return s + "}\n";
}

}  // namespace trtutils::quantize
