// trtutils quantize --onnx M --output M_qdq.onnx --calibration_data calib.npy
//                   [--quantize_mode int8|fp8|int4] [--calibration_method
//                   max|entropy|percentile|mse|rtn|awq_clip] [--calibrate_per_node]
//   --calibration_data DIR (images): generate_calibration's [--input_shape H W C]
//   [--input_dtype T] [--data_order NCHW|NHWC] [--max_images N] [--resize_method linear|letterbox]
//   [--input_scale LO HI] [--mean R G B] [--std R G B] [--color_order RGB|BGR] [--pad_value V]
//   (shape and dtype default to the model input's, resize to linear)
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "batcher_flags.h"
#include "commands.h"
#include "flag_ranges.h"
#include "trtutils/check.h"
#include "trtutils/logging.h"
#include "trtutils/quantize.h"

namespace trtutils::cli {

namespace {
struct QuantizeCliOptions {
  QuantizeOptions q;
  BatcherFlags images;  // --calibration_data DIR: the preprocessing
  std::string report = "outputs";
  double min_sqnr = NAN;
  int64_t eval_batches = 0;  // given: QuantizeOptions::eval_batches
  bool no_report_file = false;
};

std::string fmt_db(double v) {
  return std::isinf(v) ? (v > 0 ? "inf" : "-inf") : fmt::format("{:.2f}", v);
}

// fp8: the tensors outside E4M3's comfortable range (over 1% of their nonzero values under its
// smallest normal after scaling), worst first.
void print_fp8_range(std::vector<QuantizeRangeMetrics> v) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end(),
            [](const auto& a, const auto& b) { return a.below_normal > b.below_normal; });
  const auto outside = std::count_if(v.begin(), v.end(), [](const auto& m) { return m.outside; });
  fmt::print(
      "fp8 range: {} of {} tensor(s) have over 1% of their nonzero values under E4M3's "
      "normal range (|x| / scale < 2^-6; report: fp8_range)\n",
      outside, v.size());
  for (size_t i = 0; i < v.size() && i < 5 && v[i].outside; ++i)
    fmt::print("  {:<46} {:6.2f}% under normal, {:6.2f}% flushed to 0, {:6.3f}% clipped\n",
               v[i].name, 100 * v[i].below_normal, 100 * v[i].flushed, 100 * v[i].clipped);
}

// The preprocessing flags into o.q; a warning when they are given for a .npy (its samples are
// already preprocessed).
void resolve_quantize_images(QuantizeCliOptions& o, const CLI::App* sub) {
  o.q.image_preprocess = to_image_options(o.images, sub);
  const std::vector<std::string> given = given_image_flags(sub);
  std::error_code ec;
  if (!given.empty() && !std::filesystem::is_directory(o.q.calibration_data, ec))
    TRT_LOG_WARN(
        "{} appl{} to an image directory only: --calibration_data '{}' is not one "
        "(ignored)",
        fmt::join(given, ", "), given.size() == 1 ? "ies" : "y", o.q.calibration_data.string());
}

// How many samples calibrated and how many the report (and --min_sqnr) used, and whether those
// were held out.
void print_eval_samples(const QuantizeResult& r) {
  std::string how;
  if (r.eval_samples > 0)
    how = r.eval_held_out ? " (held out)"
                          : " (calibration samples, none held out; --eval_batches N holds out N "
                            "batches)";
  fmt::print("calibration samples: {}, evaluation samples: {}{}\n", r.calibration_samples,
             r.eval_samples, how);
}

void run(QuantizeCliOptions o, const CLI::App* sub) {
  TRT_CHECK_ARG(o.report == "outputs" || o.report == "per_tensor",
                "invalid --report '{}': choose one of outputs, per_tensor", o.report);
  resolve_quantize_images(o, sub);
  if (sub->count("--eval_batches") > 0) o.q.eval_batches = o.eval_batches;
  o.q.report_per_tensor = o.report == "per_tensor";
  if (!std::isnan(o.min_sqnr)) o.q.min_sqnr = o.min_sqnr;
  o.q.write_report = !o.no_report_file;
  o.q.progress = true;
  const QuantizeResult r = quantize_onnx(o.q);
  if (r.already_quantized) {
    fmt::print("{} already has Q/DQ nodes: copied unchanged to {}\n", o.q.onnx_path.string(),
               o.q.output_path.string());
    return;
  }
  fmt::print("quantized {} node(s) ({}, {}): {} activation Q/DQ pair(s), {} weight(s)\n",
             r.num_quantized_nodes, o.q.quantize_mode, o.q.calibration_method, r.num_qdq_pairs,
             r.num_weights_quantized);
  if (r.num_bias_corrected > 0) fmt::print("bias correction: {} layer(s)\n", r.num_bias_corrected);
  if (r.num_gptq_rounded > 0)
    fmt::print("gptq weight rounding: {} weight(s)\n", r.num_gptq_rounded);
  if (!r.preprocessing.empty()) fmt::print("preprocessing: {}\n", r.preprocessing);
  print_eval_samples(r);
  if (!r.calibration_method_chosen.empty()) {
    std::string scores;
    for (size_t i = 0; i < r.calibration_method_scores.size(); ++i) {
      const auto& [m, db] = r.calibration_method_scores[i];
      scores += fmt::format("{}{} {}", scores.empty() ? "" : ", ", m, fmt_db(db));
      if (i > 0 && i < r.calibration_method_gains.size() &&
          r.calibration_method_gains[i].batches > 1)
        scores +=
            fmt::format(" ({:+.2f} +/- {:.2f} dB per batch vs max)",
                        r.calibration_method_gains[i].mean_db, r.calibration_method_gains[i].se_db);
    }
    fmt::print(
        "calibration_method auto: {} (worst-batch output SQNR dB on {} calibration sample(s), {}: "
        "{}; {})\n",
        r.calibration_method_chosen, r.auto_selection_samples,
        r.auto_selection_held_out
            ? fmt::format("held out in {} folds, each judged by thresholds fitted on the "
                          "other samples",
                          r.auto_selection_folds)
            : std::string("in-sample (too few batches to hold out)"),
        scores, r.auto_selection_rule);
  }
  if (!r.calibration_methods_used.empty() && r.calibration_method_chosen == "per_tensor") {
    std::string used;
    for (const auto& [m, n] : r.calibration_methods_used)
      used += fmt::format("{}{} {}", used.empty() ? "" : ", ", n, m);
    fmt::print("per_tensor thresholds: {}\n", used);
  }
  print_fp8_range(r.fp8_range);
  if (!r.calibration_rejected.empty())
    fmt::print("{} tensor(s) kept absmax (the {} threshold's error was over 2x absmax's): {}\n",
               r.calibration_rejected.size(), o.q.calibration_method,
               fmt::join(r.calibration_rejected, ", "));
  if (!r.outputs.empty()) {
    fmt::print("{:<32} {:>10} {:>10} {:>14}\n", "output", "SQNR dB", "cosine", "max abs err");
    for (const auto& m : r.outputs)
      fmt::print("{:<32} {:>10} {:>10.6f} {:>14.6g}\n", m.name, fmt_db(m.sqnr_db), m.cosine,
                 m.max_abs_error);
  }
  if (!r.tensors.empty()) {
    fmt::print("{:<48} {:>10} {:>12}\n", "quantized tensor", "SQNR dB", "scale");
    for (const auto& m : r.tensors)
      fmt::print("{:<48} {:>10} {:>12.6g}\n", m.name, fmt_db(m.sqnr_db), m.scale);
  }
  if (!r.excluded_detection_head.empty()) {
    fmt::print(
        "kept the detection head's decode in {} ({} node(s); --quantize_detection_head "
        "quantizes it):",
        o.q.high_precision_dtype, r.excluded_detection_head.size());
    for (const auto& n : r.excluded_detection_head) fmt::print(" {}", n);
    fmt::print("\n");
  }
  if (!r.excluded_by_fallback.empty()) {
    fmt::print("left in high precision by --min_sqnr:");
    for (const auto& n : r.excluded_by_fallback) fmt::print(" {}", n);
    fmt::print("\n");
  }
  fmt::print("wrote {}\n", o.q.output_path.string());
  if (!r.report_path.empty()) fmt::print("report: {}\n", r.report_path.string());
}
}  // namespace

void add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<QuantizeCliOptions>();
  CLI::App* sub =
      app.add_subcommand("quantize", "Post-training quantization: write a Q/DQ ONNX model");
  sub->add_option("--onnx", o->q.onnx_path, "float ONNX model")->required();
  sub->add_option("--output", o->q.output_path, "Q/DQ ONNX model to write")->required();
  sub->add_option("--calibration_data", o->q.calibration_data,
                  ".npy (first axis = samples) or an image directory (preprocessed as the "
                  "flags below say)");
  o->images.resize_method = "linear";  // quantize's default: stretch to the input's H x W
  add_image_flags(sub, o->images, /*from_model=*/true);
  sub->add_option("--quantize_mode", o->q.quantize_mode, "int8 | fp8 | int4")
      ->capture_default_str();
  sub->add_option("--calibration_method", o->q.calibration_method,
                  "max | entropy | percentile | mse | auto (per tensor the one with the least "
                  "quantization error; int4: rtn | awq_clip)")
      ->capture_default_str();
  add_ranged(sub, "--batch_size", o->q.batch_size, "calibration batch size", int64_t{1}, kMaxBatch);
  add_ranged(sub, "--percentile", o->q.percentile, "for --calibration_method percentile", 50.0,
             100.0);
  add_ranged(sub, "--num_bins", o->q.num_bins, "histogram bins per tensor", int64_t{256},
             int64_t{1} << 16);
  sub->add_option("--op_types_to_quantize", o->q.op_types_to_quantize,
                  "only these op types (forced: small-layer rules off)");
  sub->add_option("--op_types_to_exclude", o->q.op_types_to_exclude, "op types left in float");
  sub->add_option("--nodes_to_exclude", o->q.nodes_to_exclude, "node name regexes left in float");
  sub->add_option("--high_precision_dtype", o->q.high_precision_dtype, "fp32 | fp16")
      ->capture_default_str();
  sub->add_flag(
      "--quantize_detection_head{false}", o->q.keep_detection_head_float,
      "also quantize a detection head's decode (by default it stays in "
      "high_precision_dtype: anchor-list reshapes, Concat, Sigmoid, DFL, box arithmetic)");
  add_ranged(sub, "--block_size", o->q.block_size, "int4 block length along K", int64_t{2},
             int64_t{1} << 16);
  sub->add_option("--eval_batches", o->eval_batches,
                  "hold out the last N batches for the accuracy report and --min_sqnr (0: no "
                  "report; default: none held out, the report runs on about 32 calibration "
                  "samples spread over the set)")
      ->check(in_range(int64_t{0}, int64_t{1} << 20));
  sub->add_option("--report", o->report, "outputs | per_tensor")->capture_default_str();
  sub->add_option("--min_sqnr", o->min_sqnr,
                  "dB: leave layers in float until the outputs reach it, those whose float "
                  "version alone gains the most output SQNR first (measured: one evaluation of "
                  "the report's samples per quantized layer)")
      ->check(in_range(0.0, 200.0));
  add_ranged(sub, "--max_calibration_batches", o->q.max_calibration_batches, "0: all", int64_t{0},
             int64_t{1} << 30);
  sub->add_flag("--calibrate_per_node", o->q.calibrate_per_node,
                "calibrate node by node: each activation is measured when produced and freed "
                "after its last reader (lower peak memory, same scales)");
  sub->add_option("--bias_correction", o->q.bias_correction,
                  "auto | on | off: subtract the mean output shift of weight rounding from each "
                  "quantized layer's bias (auto: on for int8/fp8)")
      ->capture_default_str();
  sub->add_option(
         "--weight_rounding", o->q.weight_rounding,
         "auto | rtn | gptq: MatMul/Gemm weights rounded to nearest, or by GPTQ (rounding "
         "errors compensated using E[x x^T] of each layer's input; Conv: nearest). auto: "
         "gptq with calibration_data (measured on ViT-B/16: fp8 +2.6 dB, int4 +14 dB output SQNR)")
      ->capture_default_str();
  add_threads_flag(sub, o->q.num_threads, "CPU threads");
  sub->add_option("--plot", o->q.plot, "PNG of per-tensor SQNR (bars in graph order)");
  sub->add_flag("--no_report_file", o->no_report_file, "do not write <output>.report.json");
  sub->callback([o, sub] { run(*o, sub); });
}

}  // namespace trtutils::cli
