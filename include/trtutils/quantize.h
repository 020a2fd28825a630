// Post-training quantization: a float ONNX model + calibration data -> a Q/DQ ONNX model that
// TensorRT (strongly typed) and ONNX Runtime accept, plus an accuracy report.
//
//   trtutils::quantize_onnx({.onnx_path = "model.onnx", .output_path = "model_qdq.onnx",
//                            .calibration_data = "calib.npy", .quantize_mode = "int8",
//                            .calibration_method = "entropy"});
//
// Field names are the Python original's keyword arguments and the CLI's flags.
//
// Pipeline: load -> constant folding + BatchNormalization folded into the preceding Conv ->
// placement (which tensors get Q/DQ, per op handler) -> streaming calibration (the float model is
// run batch by batch on the CPU backend; per tensor only |x|max and a 2048-bin histogram of |x|
// are kept) -> a scale table -> rewriting (Q/DQ inserted, weights stored quantized) -> accuracy
// report (on calibration samples, or held-out batches) -> save.
//
// Modes:
//   int8  activations per-tensor symmetric (int8, zero point 0), weights per output channel
//         symmetric (int8 initializers feeding DequantizeLinear); opset >= 13.
//   fp8   float8e4m3fn, scale = amax / 448, saturating; opset 19.
//   int4  weight-only: MatMul/Gemm weights blocked along K (block_size), symmetric int4;
//         opset 21; methods "rtn" (round to nearest, scale = block |w|max / 7) and "awq_clip"
//         (activation-aware clipping: calibration collects E[x_k^2] of each quantized
//         MatMul/Gemm's input per K channel; per block the clip ratio in 1.0..0.5 minimising
//         sum_k E[x_k^2] (w_k - q(w_k))^2, an estimate of the output error; without
//         calibration_data the search is activation-blind). The activation calibration methods
//         do not apply to int4 (a warning says so and rtn is used).
// Calibration methods (int8/fp8): "max" (absmax), "entropy" (KL-divergence threshold, as
// TensorRT's entropy calibrator: 128 quantized bins for int8), "percentile" (of |x|),
// "mse" (threshold minimising the expected quantization MSE over the histogram).
//
// Errors (trtutils::Error): an invalid mode or method lists the options; a missing model or
// calibration file says "not found" with the path; calibration data whose shape does not fit
// the model input names both shapes; a model that already has Q/DQ nodes is written unchanged
// with a notice (QuantizeResult::already_quantized); when that model keeps its weights in
// external data files, they are rewritten into "<output file name>.data" next to the output, so
// that the output folder is self-contained (the same for a quantized model whose input used
// external data).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trtutils/image_batcher.h"

namespace trtutils {

struct QuantizeOptions {
  std::filesystem::path onnx_path;
  std::filesystem::path output_path;
  // .npy whose first axis is samples (split into batches of batch_size; a trailing partial
  // batch is used too), or a directory of images (read through ImageBatcher with
  // image_preprocess).
  std::filesystem::path calibration_data;
  // calibration_data as an image directory: how each image becomes a sample (the ImageBatcher
  // options, image_batcher.h; the CLI's generate_calibration flags). quantize sets image_dir,
  // batch_size, keep_partial and num_threads itself; shape (0, 0, 0) takes the model input's
  // H, W, C (laid out as `order` says), dtype kUndefined the input's dtype. The default: the
  // input's size, linear resize, values in [0, 1], no mean/std, RGB, NCHW.
  ImageBatcherOptions image_preprocess = {.dtype = DataType::kUndefined,
                                          .resize_method = ResizeMethod::kLinear};
  std::string quantize_mode = "int8";  // "int8" | "fp8" | "int4"
  std::string calibration_method =
      "max";  // int8/fp8: max|entropy|percentile|mse; int4: rtn|awq_clip
  int64_t batch_size = 1;
  double percentile = 99.99;  // for "percentile", in (0, 100]
  int64_t num_bins = 2048;    // histogram bins for entropy / percentile / mse (256..65536)
  std::vector<std::string>
      op_types_to_quantize;  // empty: the mode's defaults; listed ops are forced
  std::vector<std::string> op_types_to_exclude;
  std::vector<std::string> nodes_to_exclude;  // ECMAScript regexes matched against node names
  std::string high_precision_dtype = "fp32";  // "fp32" | "fp16": the unquantized rest
  // A detection head's decode (after the last feature layers: anchor-list reshapes, Concat,
  // Sigmoid, DFL, box arithmetic; quantize/detection_head.h has the rule) stays in
  // high_precision_dtype; QuantizeResult::excluded_detection_head lists its nodes.
  bool keep_detection_head_float = true;
  int64_t block_size = 128;  // int4: block length along K
  // The accuracy report's samples (min_sqnr decides on them too). nullopt (default): nothing
  // is held out: every sample calibrates and the report runs on about 32 of them (whole
  // batches spread over the set); N: the last N batches are held out for the report (with no
  // more than N batches, all calibrate and the report runs on them); 0: no report.
  std::optional<int64_t> eval_batches;
  bool report_per_tensor = false;       // also SQNR of every quantized tensor
  std::optional<double> min_sqnr;       // dB; sensitivity fallback target
  int64_t max_calibration_batches = 0;  // 0: all
  // Calibrate node by node: each calibrated activation is measured as soon as its producer ran
  // and freed after its last reader, instead of being kept until the whole batch has run; the
  // peak memory is that of plain inference. Same statistics, same scales.
  bool calibrate_per_node = false;
  // "auto" | "on" | "off". Bias correction: the mean output shift that weight rounding causes
  // in each quantized Conv / Gemm / MatMul (+ Add) channel, sum (Wq - W) E[x] with E[x] measured
  // per input channel during calibration, is subtracted from the layer's bias. auto: on for fp8
  // and int8 (needs calibration_data), off for int4.
  std::string bias_correction = "auto";
  // "auto" | "rtn" | "gptq". Weight rounding of MatMul / Gemm weights: round to nearest, or GPTQ
  // (each weight column's rounding error is compensated by the columns not yet rounded, using
  // E[x x^T] of the layer input measured during calibration; Conv weights stay round to
  // nearest). auto: gptq when calibration_data is given, rtn otherwise.
  std::string weight_rounding = "auto";
  int num_threads = 0;       // CPU threads; 0: all cores
  bool write_report = true;  // <output_path>.report.json
  // Progress on stderr (core/progress.h: a bar on a terminal, lines otherwise) of the long
  // steps: reading the images, calibration, min_sqnr's search. The CLI turns it on.
  bool progress = false;
  std::filesystem::path plot;  // non-empty: PNG of per-tensor SQNR (implies report_per_tensor)
};

struct QuantizeOutputMetrics {
  std::string name;
  double sqnr_db = 0;  // 10 log10(sum ref^2 / sum (ref - q)^2); +inf when equal
  double cosine = 0;
  double max_abs_error = 0;
};

struct QuantizeTensorMetrics {
  std::string name;    // the quantized tensor
  std::string node;    // the node whose input it is
  double sqnr_db = 0;  // fake-quantized vs float, on the eval batches
  double amax = 0;
  double scale = 0;  // per-tensor scale (activations)
};

struct QuantizeRangeMetrics {
  std::string name;
  double amax = 0;
  double below_normal = 0;  // share of nonzero values under E4M3's smallest normal (2^-6)
  double flushed = 0;       // share of nonzero values that quantize to zero
  double clipped = 0;       // share of values above amax
  bool outside = false;     // below_normal over 1%: outside E4M3's comfortable range
};

struct QuantizeResult {
  bool already_quantized = false;  // the input had Q/DQ: written unchanged
  int64_t num_quantized_nodes = 0;
  int64_t num_qdq_pairs = 0;  // QuantizeLinear nodes inserted (weights are stored quantized)
  int64_t num_weights_quantized = 0;
  int64_t num_bias_corrected = 0;  // layers whose bias absorbed the weight error's mean
  int64_t num_gptq_rounded = 0;    // weights rounded by GPTQ
  int64_t calibration_samples = 0;
  int64_t eval_samples = 0;    // samples the report (and min_sqnr) evaluated
  bool eval_held_out = false;  // those samples did not calibrate (eval_batches N)
  // calibration_data as images: what was done to each one (preprocessing_summary); else empty.
  std::string preprocessing;
  std::vector<QuantizeOutputMetrics> outputs;
  std::vector<QuantizeTensorMetrics> tensors;        // filled with report_per_tensor
  std::vector<std::string> excluded_by_fallback;     // nodes left in high precision by min_sqnr
  std::vector<std::string> excluded_detection_head;  // keep_detection_head_float's nodes
  std::vector<std::string> skipped;                  // "node: reason" for candidates not quantized
  // Tensors whose calibration_method threshold failed the guard (its quantization error on the
  // calibration histogram over 2x absmax's): they keep absmax. "tensor: error ratio".
  std::vector<std::string> calibration_rejected;
  // calibration_method auto: how many tensors each method's threshold was picked for.
  std::map<std::string, int64_t> calibration_methods_used;
  // calibration_method auto: the candidate chosen (max, entropy, percentile, mse, or per_tensor:
  // per tensor the method of least histogram error) and every candidate's score: the worst
  // output's SQNR (dB) on its worst selection batch of auto_selection_samples calibration samples
  // (up to 64, spread). Held out (auto_selection_held_out, two selection batches or more):
  // cross-fitted in auto_selection_folds folds, each fold judged by thresholds fitted on the
  // calibration samples outside it; the written model's thresholds are the chosen method's on all
  // of them. auto_selection_rule says how the scores chose: max unless another candidate beats
  // it sample for sample (a paired test on the per-batch scores), then the best score.
  std::string calibration_method_chosen;
  std::vector<std::pair<std::string, double>> calibration_method_scores;
  // calibration_method auto: each candidate's SQNR gain over max per selection batch (dB), the
  // mean and its standard error over `batches` (the rule's paired test; max's own is 0).
  struct MethodGain {
    std::string name;
    double mean_db = 0, se_db = 0;
    int64_t batches = 0;
  };
  std::vector<MethodGain> calibration_method_gains;
  std::string auto_selection_rule;
  int64_t auto_selection_samples = 0;
  bool auto_selection_held_out = false;
  int auto_selection_folds = 0;
  bool auto_selection_on_gpu = false;  // the candidates ran on the GPU (else the CPU backend)
  // fp8: every calibrated activation on E4M3's grid (scale amax / 448), graph-independent order.
  std::vector<QuantizeRangeMetrics> fp8_range;
  std::filesystem::path report_path;
};

// Runs the whole pipeline and writes options.output_path (atomically). Throws trtutils::Error.
QuantizeResult quantize_onnx(const QuantizeOptions& options);

// The valid names, for messages and --help.
const std::vector<std::string>& quantize_mode_names();
const std::vector<std::string>& calibration_method_names(const std::string& quantize_mode);

// calib_to_qdq: a weakly-typed INT8 calibration cache (TensorRT's text format) + the float ONNX
// model it was made for -> the same model with Q/DQ nodes, for strongly-typed builds (TensorRT
// 11 has no calibrators; strongly-typed DLA builds refuse caches). The Q/DQ placement and scales
// are those of the builder's weakly-typed INT8 path, so a strongly-typed build of the result has
// the layer precisions of the weakly-typed build from the same cache. A tensor the cache has no
// scale for leaves the layers reading it in float (`missing`).
struct CalibToQdqResult {
  int64_t qdq_pairs = 0;  // activation QuantizeLinear -> DequantizeLinear pairs
  int64_t quantized_weights = 0;
  int64_t quantized_layers = 0;
  std::vector<std::string> missing{};  // activation tensors without a scale in the cache
  std::vector<std::string> warnings{};
};
// Loads `onnx` and `calibration_cache`, converts, writes `output` atomically; nothing is written
// on error. Error(kInvalidArgument) for an output that is one of the inputs (naming --output
// and the flag), a model that already has Q/DQ nodes, or a cache with no scale for any tensor
// the placement quantizes; kIO / kInvalidArgument for files that cannot be read or parsed.
CalibToQdqResult calib_to_qdq(const std::filesystem::path& onnx,
                              const std::filesystem::path& calibration_cache,
                              const std::filesystem::path& output);

}  // namespace trtutils
