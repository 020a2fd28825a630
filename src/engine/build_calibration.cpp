// The weakly typed quantization stage of build_engine: the calibration batches (an .npy file
// or images), TensorRT-style scales (amax / 127) from max or entropy calibration, or from a
// calibration cache, and the Q/DQ nodes placed and scaled as `quantize` does it.
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "core/check.h"
#include "core/progress.h"
#include "engine/build_stages.h"
#include "engine/calibration_images.h"
#include "passes/passes.h"
#include "precision/calibration_cache.h"
#include "quantize/calibration.h"
#include "quantize/qdq.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"
#include "trtutils/npy.h"

namespace trtutils::builder {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// ---- calibration ----

// `preprocessing`: set to the images' preprocessing_summary when they come from data_batcher.
std::vector<Tensor> calibration_batches(const BuildConfig& c, const ir::Graph& g,
                                        std::string& preprocessing) {
  TRT_CHECK_ARG(g.inputs.size() == 1,
                "calibration data feeds one input, but the model has {} inputs", g.inputs.size());
  const ir::ValueInfo& in = g.inputs[0];
  std::vector<Tensor> batches;
  if (c.data_batcher) {
    batches = calibration_image_batches(*c.data_batcher, in, preprocessing);
  } else {
    require_regular_file(c.calibration_data, "calibration data");
    Tensor all = npy_load(c.calibration_data);
    TRT_CHECK_ARG(all.rank() >= 1 && all.dim(0) >= 1, "calibration data {} has no samples",
                  c.calibration_data.string());
    int64_t bs = c.calibration_batch_size;
    if (in.shape && !in.shape->empty() && (*in.shape)[0].is_static()) bs = (*in.shape)[0].value;
    const int64_t n = all.dim(0);
    if (n < bs && in.shape && (*in.shape)[0].is_static()) {
      // A fixed batch larger than the data (an engine built for batch 32, 16 calibration
      // images): one batch with the samples repeated in order. Ranges (max) are unchanged;
      // histograms (entropy) weight the repeated samples more.
      TRT_LOG_WARN(
          "calibration data {} has {} sample(s), fewer than the input '{}' batch of {}: the "
          "samples are repeated to fill one batch; give at least {} for calibration that sees "
          "each sample once",
          c.calibration_data.string(), n, in.name, bs, bs);
      Shape s = all.shape();
      s[0] = bs;
      Tensor t(all.dtype(), s);
      const size_t sample = all.nbytes() / static_cast<size_t>(n);
      for (int64_t b = 0; b < bs; b += n)
        std::memcpy(static_cast<uint8_t*>(t.raw()) + sample * static_cast<size_t>(b), all.raw(),
                    sample * static_cast<size_t>(std::min(n, bs - b)));
      quantize::check_calibration_values(t, c.calibration_data.string(), 0);
      batches.push_back(std::move(t));
    }
    const size_t row = all.nbytes() / static_cast<size_t>(n);
    for (int64_t b = 0; b + bs <= n || (b < n && !(in.shape && (*in.shape)[0].is_static()));
         b += bs) {
      const int64_t e = std::min(n, b + bs);
      Shape s = all.shape();
      s[0] = e - b;
      Tensor t(all.dtype(), s);
      std::memcpy(t.raw(), static_cast<const uint8_t*>(all.raw()) + row * b, row * (e - b));
      quantize::check_calibration_values(t, c.calibration_data.string(), b);
      batches.push_back(std::move(t));
    }
  }
  TRT_CHECK_ARG(!batches.empty(), "calibration data gives no complete batch for input '{}' {}",
                in.name, in.shape ? ir::sym_shape_str(*in.shape) : "");
  for (const auto& t : batches) {
    TRT_CHECK_ARG(t.dtype() == in.dtype || in.dtype == DataType::kUndefined,
                  "calibration data is {}, the model input '{}' is {}", dtype_name(t.dtype()),
                  in.name, dtype_name(in.dtype));
    if (!in.shape) continue;
    bool ok = in.shape->size() == t.rank();
    for (size_t d = 1; ok && d < t.rank(); ++d)
      ok = !(*in.shape)[d].is_static() || (*in.shape)[d].value == t.dim(d);
    TRT_CHECK_ARG(ok, "calibration data of shape {} does not fit the model input '{}' {}",
                  shape_str(t.shape()), in.name, ir::sym_shape_str(*in.shape));
  }
  return batches;
}

// Runs the float model over the calibration data and returns TensorRT-style scales
// (amax / 127) for `tensors`.
precision::CalibrationCache calibrate(const BuildConfig& c, const ir::Model& model,
                                      const std::vector<std::string>& tensors,
                                      std::string& preprocessing) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> batches = calibration_batches(c, model.graph, preprocessing);
  const std::string input = model.graph.inputs[0].name;
  TRT_LOG_INFO("calibrating {} tensor(s) over {} batch(es) ({})", tensors.size(), batches.size(),
               c.calibration_algorithm);
  const auto n = static_cast<int64_t>(batches.size());
  Progress bar("calibration", n, c.progress, "batches");
  auto stats = quantize::collect_stats(
      model, tensors, n,
      [&](int64_t i) {
        bar.update(i);  // batches [0, i) are done
        return std::map<std::string, Tensor>{{input, batches[i]}};
      },
      2048, c.num_threads);
  bar.update(n);
  precision::CalibrationCache cache;
  cache.algorithm =
      c.calibration_algorithm == "entropy" ? "EntropyCalibration2" : "MinMaxCalibration";
  const auto method = c.calibration_algorithm == "entropy" ? quantize::CalibrationMethod::kEntropy
                                                           : quantize::CalibrationMethod::kMax;
  quantize::CalibratorParams cp;
  const std::set<std::string> softmax = quantize::softmax_probability_tensors(model.graph);
  for (const auto& t : tensors) {
    auto it = stats.find(t);
    if (it == stats.end()) continue;
    double amax = quantize::choose_amax(
                      it->second, softmax.count(t) ? quantize::CalibrationMethod::kMax : method, cp)
                      .amax;
    if (!(amax > 0)) amax = 1e-8;  // an all-zero tensor: any positive scale quantizes it exactly
    cache.scales.emplace_back(t, static_cast<float>(amax / 127.0));
  }
  TRT_LOG_INFO("calibration done in {:.1f} s",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return cache;
}

}  // namespace

json quantize_weakly_typed(ir::Model& model, const BuildConfig& c,
                           const precision::LayerPrecisionPlan& plan, bool explicit_qdq,
                           const fs::path& output, BuildResult& result) {
  ir::Graph& g = model.graph;
  std::error_code ec;
  json calib_info{{"source", "none"}};
  const bool want_quant = !c.strongly_typed && (c.int8 || c.fp8) && !explicit_qdq;
  if (!c.strongly_typed && explicit_qdq && (c.int8 || c.fp8) && has_calibration(c)) {
    result.warnings.push_back(
        "the model already has Q/DQ nodes: its scales are used and the calibration arguments "
        "are ignored");
    TRT_LOG_WARN("{}", result.warnings.back());
  }
  if (want_quant) {
    const bool have_cache_file =
        !c.calibration_cache.empty() && fs::exists(c.calibration_cache, ec);
    const bool have_data = !c.calibration_data.empty() || c.data_batcher.has_value();
    if (!c.calibration_cache.empty() && !have_cache_file && !have_data)
      TRT_THROW(ErrorCode::kInvalidArgument,
                "calibration cache not found: {} (give calibration data to create it)",
                c.calibration_cache.string());
    if (have_cache_file || have_data) {
      // Same preparation as the quantizer: constants folded, BatchNorm folded into Conv, types.
      passes::run_pipeline(g, model.opset(), {"conv_fusion", "qdq_fusion"});
      quantize::fold_batch_norm(g);
      const quantize::QuantMode mode =
          c.int8 ? quantize::QuantMode::kInt8 : quantize::QuantMode::kFp8;
      const int64_t need = mode == quantize::QuantMode::kInt8 ? 13 : 19;
      if (model.opset() < need) quantize::upgrade_opset(model, need);
      g.value_info.clear();
      passes::infer_shapes(g, model.opset());
      quantize::PlacementOptions po;
      po.mode = mode;
      po.nodes_excluded_exact = plan.excluded_from_quantization;
      po.nodes_forced_exact = plan.forced_int8;
      // As `quantize` places them (and nvidia-modelopt): a MatMul / Gemm with a single output
      // row (a classifier at batch 1) stays in float unless asked for: no Tensor Core gain, and
      // its rounding error reaches the output undiluted (EfficientNetV2-S batch 1, weakly typed
      // INT8: 18.5 dB with its classifier in int8, 22.9 dB without; 23.1 dB for `quantize`).
      po.skip_single_row = true;
      quantize::Placement placement = quantize::place_qdq(g, po);
      std::vector<std::string> tensors;
      for (const auto& [t, uses] : placement.activations) tensors.push_back(t);
      precision::CalibrationCache cache;
      if (have_cache_file) {
        cache = precision::read_calibration_cache(c.calibration_cache);
        calib_info = {{"source", "cache"},
                      {"path", c.calibration_cache.string()},
                      {"algorithm", cache.algorithm}};
        if (have_data) {
          result.warnings.push_back("calibration cache " + c.calibration_cache.string() +
                                    " exists: it is used and the calibration data is not");
          TRT_LOG_WARN("{}", result.warnings.back());
        }
      } else {
        cache = calibrate(c, model, tensors, result.calibration_preprocessing);
        const fs::path cache_path = c.calibration_cache.empty()
                                        ? fs::path(output.string() + ".cache")
                                        : c.calibration_cache;
        precision::write_calibration_cache(cache_path, cache);
        result.calibration_cache_written = cache_path;
        calib_info = {
            {"source", "data"}, {"written", cache_path.string()}, {"algorithm", cache.algorithm}};
        TRT_LOG_INFO("calibration cache written to {}", cache_path.string());
      }
      // Scales: amax = scale * 127 (TensorRT's int8 convention); fp8 reuses the amax.
      quantize::ScaleTable table;
      std::set<std::string> missing;
      for (const auto& t : tensors) {
        if (auto s = cache.scale(t))
          table.amax[t] = static_cast<double>(*s) * 127.0;
        else
          missing.insert(t);
      }
      if (!missing.empty()) {
        // A node with an input lacking a scale stays in higher precision.
        const size_t dropped = quantize::drop_nodes_reading(placement, missing);
        result.warnings.push_back(fmt::format(
            "{} tensor(s) have no scale in the calibration cache (e.g. '{}'): {} layer(s) stay "
            "in higher precision",
            missing.size(), *missing.begin(), dropped));
        TRT_LOG_WARN("{}", result.warnings.back());
      }
      quantize::share_scales(g, table);
      quantize::apply_qdq(g, placement, table, {.mode = mode});
      calib_info["tensors"] = table.amax.size();
      calib_info["quantized_layers"] = placement.quantized_nodes.size();
      calib_info["mode"] = quantize::quant_mode_name(mode);
      // Layers forced to int8 that could not be quantized.
      const std::set<std::string> qset(placement.quantized_nodes.begin(),
                                       placement.quantized_nodes.end());
      for (const auto& n : plan.forced_int8)
        if (!qset.count(n)) {
          const std::string msg =
              fmt::format("layer '{}' cannot run in int8 (no quantizable input or no scale)", n);
          TRT_CHECK(c.precision_constraints != "obey", ErrorCode::kConfig,
                    "{}: precision_constraints=obey", msg);
          result.warnings.push_back(msg + ": it stays in higher precision");
          TRT_LOG_WARN("{}", result.warnings.back());
        }
    }
  } else if (!plan.forced_int8.empty() && !explicit_qdq) {
    const std::string msg = fmt::format(
        "layer_precision asks int8 for {} layer(s), but int8 is not enabled (--int8) or there is "
        "no calibration",
        plan.forced_int8.size());
    TRT_CHECK(c.precision_constraints != "obey" || c.strongly_typed, ErrorCode::kConfig, "{}", msg);
    result.warnings.push_back(msg);
    TRT_LOG_WARN("{}", msg);
  }

  return calib_info;
}

}  // namespace trtutils::builder
