// The engine builder: an ONNX model -> an engine file, with TensorRT's precision semantics.
//
//   trtutils::builder::build_engine("model_qdq.onnx", "model.engine", {.strongly_typed = true});
//   trtutils::builder::build_engine("model.onnx", "model.engine",
//                                   {.int8 = true, .calibration_data = "calib.npy"});
//
// Field names are the Python original's keyword arguments and the CLI's flags.
//
// Strongly typed (strongly_typed = true): every tensor's type comes from the graph (input
// dtypes, Cast, FP16 weights, Q/DQ). DequantizeLinear -> Conv/Gemm/MatMul -> QuantizeLinear
// islands run as int8/fp8 kernels with the graph's scales. No precision flags, no calibration,
// no per-layer precision: combining them is an Error(kConfig) with the original's message.
//
// Weakly typed (default): the graph is float; fp16 / int8 / fp8 *allow* those precisions per
// layer and the builder keeps the fastest allowed kernel on the target backend (int8 and fp8
// also allow fp16). INT8 scales come from calibration_cache (TensorRT's text format) or from
// calibration data (calibration_data .npy or data_batcher images); then the cache is written
// (to calibration_cache, or <output>.cache) for reuse. int8 without either -> a warning and no
// INT8 layers. layer_precision forces layers (by index or name) with precision_constraints
// "prefer" (fall back with a warning when impossible) or "obey" (an error when impossible);
// "none" ignores it. A graph that already has Q/DQ builds the same way weakly typed.
//
// Rules (Error(kConfig), the CLI's exit code 2; no engine file is written):
//   strongly_typed + fp16/int8/fp8          "strongly_typed=True derives precision from the ONNX
//                                           graph; remove fp16/int8/fp8 builder flags."
//   strongly_typed + calibration            "strongly_typed=True does not support runtime
//                                           calibration ..."
//   strongly_typed + layer_precision        mutually exclusive
//   weakly typed int8 + fp8 on SM >= 100    "INT8+FP8 mixed precision on Blackwell requires
//                                           strongly_typed=True ..."
//   strongly_typed + tensor formats         accepted with a warning: the dtype part is ignored,
//                                           only the format (LINEAR, CHW4, ...) applies.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trtutils/dtype.h"
#include "trtutils/image_batcher.h"
#include "trtutils/tensor.h"

namespace trtutils::builder {

// One IO tensor's (dtype, format): dtype kUndefined = keep the model's.
struct TensorFormat {
  DataType dtype = DataType::kUndefined;
  std::string format = "LINEAR";  // LINEAR, CHW2, CHW4, CHW16, CHW32, HWC, HWC8, HWC16, DHWC8
};
// "fp16:chw4", "int8:LINEAR", "HWC" (format only) -> TensorFormat; Error(kInvalidArgument) listing
// the valid formats and dtypes otherwise.
TensorFormat parse_tensor_format(const std::string& text);
const std::vector<std::string>& tensor_format_names();

struct BuildConfig {
  bool strongly_typed = false;
  bool fp16 = false;
  bool int8 = false;
  bool fp8 = false;
  // FP32 layers on the GPU may use TF32 tensor cores (TensorRT's default; trtexec --noTF32).
  bool tf32 = true;
  // TensorRT calibration cache: read when it exists; written after calibrating from data.
  std::filesystem::path calibration_cache{};
  // Calibration data: a .npy whose first axis is samples (batches of calibration_batch_size)...
  std::filesystem::path calibration_data{};
  // ... or images through ImageBatcher (the original's data_batcher); shape (0, 0, 0) takes
  // the model input's H, W, C, dtype kUndefined the input's dtype. A fixed batch axis of the
  // input sets the batch (data_batcher's batch_size applies to a dynamic batch only).
  std::optional<ImageBatcherOptions> data_batcher{};
  int64_t calibration_batch_size = 8;
  std::string calibration_algorithm = "entropy";  // "entropy" (EntropyCalibration2) | "minmax"
  // (layer index or name, precision): kFloat32, kFloat16, kInt8, kFloat8E4M3FN.
  std::vector<std::pair<std::string, DataType>> layer_precision{};
  std::string precision_constraints = "none";         // "none" | "prefer" | "obey"
  std::vector<TensorFormat> input_tensor_formats{};   // one per input, in order
  std::vector<TensorFormat> output_tensor_formats{};  // one per output, in order
  // Fixed input shapes, and an optimization profile (all three given together, per input).
  std::map<std::string, Shape> shapes{};
  std::map<std::string, Shape> min_shapes{}, opt_shapes{}, max_shapes{};
  uint64_t workspace = 0;      // bytes of scratch a kernel may use; 0: no limit
  int optimization_level = 3;  // 0-5; >= 3 times the backend's tactics per layer
  // Timing cache file ("global": ~/.cache/trtutils/timing.cache); empty: none.
  std::filesystem::path timing_cache{};
  bool cache = false;  // reuse an engine built from the same model bytes and config
  bool verbose = false;
  std::string backend = "auto";  // "cpu" | "cuda" | "auto" (cuda when a GPU is present)
  int target_sm = 0;             // 0: the local GPU's (none: 0); e.g. 90, 100
  // GPU engines: a layer without a GPU kernel runs on the CPU backend inside the engine (named
  // in a build warning, `cpu (fallback)` in inspect). no_fallback: such a model is refused.
  bool no_fallback = false;
  // int8 (weakly typed) with no calibration source and no Q/DQ nodes in the model would build an
  // engine with no INT8 layer: Error(kConfig) unless this is set (then a warning).
  bool allow_float_fallback = false;
  // GPU engines: kernel switches recorded in the engine (NAME or TRTUTILS_CUDA_NAME -> value,
  // e.g. {"FUSION", "0"}, {"IGEMM", "force"}), on top of the TRTUTILS_CUDA_* variables set when
  // building; the engine then runs with exactly these wherever it is loaded (the environment at
  // run time changes nothing). Unknown names: Error(kInvalidArgument) listing the known ones.
  std::map<std::string, std::string> gpu_switches{};
  int num_threads = 0;  // CPU threads for calibration and timing; 0: all cores
  // Calibration progress on stderr (a bar on a terminal, lines otherwise); the CLI turns it on.
  bool progress = false;
};

struct BuildResult {
  std::filesystem::path engine_path;
  bool from_cache = false;  // copied from the engine cache
  std::filesystem::path calibration_cache_written;
  // Calibrated from data_batcher: what was done to each image (preprocessing_summary).
  std::string calibration_preprocessing;
  std::vector<std::string> warnings;
  int64_t num_layers = 0;
  std::map<std::string, int64_t> layers_per_precision;  // "fp32" -> 120, "int8" -> 53, ...
  // GPU engines: the layers that run on the CPU backend ("name (op): why").
  std::vector<std::string> fallback_layers;
  double seconds = 0;
};

// Validates the configuration, builds, writes `output` atomically. Throws trtutils::Error
// (kConfig for the rules above; nothing is written on any error).
BuildResult build_engine(const std::filesystem::path& onnx, const std::filesystem::path& output,
                         const BuildConfig& config = {});

// Whether the configuration names a calibration source (calibration_cache, calibration_data or
// data_batcher).
bool has_calibration(const BuildConfig& config);

// The seed's rules alone (no model needed), for tools: throws Error(kConfig); returns the
// warnings. target_sm as in BuildConfig after resolution.
std::vector<std::string> validate_build_config(const BuildConfig& config, int target_sm);

}  // namespace trtutils::builder
