// The stages of quantize_onnx (quantize.cpp runs them in this order), each in a file of its own
// concern, and what they share (QuantizeRun):
//   quantize_options.cpp     the options checked, the model loaded (a Q/DQ model passed through)
//                            and prepared (folding, opset, shapes)
//   quantize_data.cpp        the calibration data as batches, split into calibration batches
//                            and the report's (eval_split.h)
//   quantize_export.cpp      Q/DQ placement, the Q/DQ model built from the scale table, saved
//   quantize_statistics.cpp  the calibration statistics (streamed over the batches) and the
//                            weight statistics they carry (bias correction, GPTQ, AWQ)
//   quantize_thresholds.cpp  thresholds per method into the scale table; calibration_method
//                            auto's selection
//   quantize_evaluation.cpp  the report: the float and Q/DQ models' outputs compared, per-tensor
//                            SQNR, counts and warnings, the report file
//   quantize_min_sqnr.cpp    min_sqnr's fallback: layers back in high precision by sensitivity
// Calibration produces the scale table; apply_qdq (rewrite.cpp) applies it: the two stay apart.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "quantize/auto_method.h"
#include "quantize/calibration.h"
#include "quantize/eval_split.h"
#include "quantize/qdq.h"
#include "quantize/report.h"
#include "trtutils/quantize.h"

namespace trtutils::quantize {

// Calibration / evaluation batches over one float input: held in memory (images), or read
// from the .npy file one batch at a time (pread of the rows), so that a large calibration set
// never sits in memory at once.
class BatchSource {
 public:
  std::string input_name;
  // The model input has no batch axis (e.g. torchvision's detectors: [3, H, W]): batches of one
  // sample are fed without their leading axis.
  bool unbatched = false;
  std::string preprocessing;  // images: preprocessing_summary
  int64_t num_batches() const {
    return file_ ? static_cast<int64_t>(ranges_.size()) : static_cast<int64_t>(batches_.size());
  }
  std::map<std::string, Tensor> feeds(int64_t i) const {
    Tensor t = batch(i);
    if (unbatched) t = t.reshaped(Shape(t.shape().begin() + 1, t.shape().end()));
    return {{input_name, t}};
  }
  int64_t samples(int64_t begin, int64_t end) const {
    int64_t n = 0;
    for (int64_t i = begin; i < end; ++i)
      n += file_ ? ranges_[i].second - ranges_[i].first : batches_[i].dim(0);
    return n;
  }
  void add(Tensor t) { batches_.push_back(std::move(t)); }
  const Tensor& last() const { return batches_.back(); }
  // Rows [b, e) of a C-order float32 little-endian .npy whose data starts at `offset`.
  void add_file_range(int64_t b, int64_t e) { ranges_.emplace_back(b, e); }
  void set_file(const std::filesystem::path& path, uint64_t offset, Shape shape);

 private:
  Tensor batch(int64_t i) const;
  std::vector<Tensor> batches_;
  std::shared_ptr<std::ifstream> file_;
  std::filesystem::path path_;
  uint64_t offset_ = 0;
  Shape shape_;
  std::vector<std::pair<int64_t, int64_t>> ranges_;
};

// What the stages of one quantize_onnx call share, in the order the stages fill it.
struct QuantizeRun {
  explicit QuantizeRun(const QuantizeOptions& options) : o(options) {}

  const QuantizeOptions& o;
  // validate_options
  QuantMode mode = QuantMode::kInt8;
  std::optional<CalibrationMethod> method;  // none for int4; auto's winner once selected
  bool awq = false;                         // int4 awq_clip
  bool have_data = false;                   // calibration_data given
  PlacementOptions po;
  // prepare_model
  ir::Model model;        // prepared: folded, opset upgraded, shapes inferred
  ir::Model float_model;  // its copy: the report's reference and the base of every Q/DQ model
  bool fp16 = false;      // high_precision_dtype fp16
  // load_data
  std::optional<BatchSource> data;
  int64_t calib_batches = 0;
  std::vector<int64_t> eval_index;  // the report's batches
  int64_t eval_count() const { return static_cast<int64_t>(eval_index.size()); }
  // place_activations, calibration_statistics, select_calibration
  Placement placement;
  ScaleTable table;
  std::map<std::string, ChannelStats> input_stats;     // activation -> per-channel moments
  std::map<std::string, std::string> corrected_input;  // node -> its activation input
  bool gptq = false;
  std::map<std::string, HessianStats> hessian_stats;  // activation -> E[x x^T]
  std::map<std::string, std::string> gptq_input;      // node -> its activation input
  CalibratorParams cp;
  std::set<std::string> softmax;
  std::map<std::string, TensorStats> kept_stats;  // auto: the statistics the selection reuses
  std::vector<std::map<std::string, TensorStats>> fold_stats;  // auto, cross-fitted: per fold
  bool auto_selected = false;
  SelectionSplit selection;  // auto: the batches the candidates are judged on
  // weight_statistics
  ApplyOptions ao;
  // build_qdq_model, evaluate_outputs, min_sqnr_fallback
  ApplyStats ast;
  ir::Model qmodel;
  std::vector<std::pair<std::string, std::string>> output_pairs;
  std::vector<std::map<std::string, Tensor>> reference;  // the float model's outputs
  std::vector<PairMetrics> metrics;
  QuantizeResult result;
};

// ---- quantize_options.cpp ----
// Checks every option (the messages name the option and the allowed values) and fills mode,
// method, awq, have_data and the placement options.
void validate_options(QuantizeRun& run);
// A model that already holds Q/DQ nodes: written unchanged (external data beside the output).
QuantizeResult pass_through_quantized(QuantizeRun& run);
// Names, sorts and folds the model, upgrades its opset for the mode, infers shapes; keeps the
// float copy.
void prepare_model(QuantizeRun& run);

// ---- quantize_data.cpp ----
BatchSource load_batches(const QuantizeOptions& o, const ir::Graph& g);
// The calibration batches and the report's (with calibration_data only).
void load_data(QuantizeRun& run);

// ---- quantize_export.cpp ----
// External data: tensors at least this large go to the .data file (ONNX's default).
constexpr uint64_t kExternalMinBytes = 1024;
// Models whose weights exceed this are saved with external data (protobuf's limit is 2 GiB).
constexpr uint64_t kInlineMaxBytes = uint64_t{1} << 30;
// The detection head's decode kept in high precision (keep_detection_head_float), then the
// Q/DQ placement.
void place_activations(QuantizeRun& run);
// The Q/DQ model of placement p with the current scale table and apply options (float16 rest
// with high_precision_dtype fp16); st (optional) gets apply_qdq's counts.
ir::Model build_qdq_model(const QuantizeRun& run, const Placement& p, ApplyStats* st);
// The Q/DQ model written to output_path (external data above kInlineMaxBytes of weights).
void save_qdq_model(QuantizeRun& run);

// ---- quantize_statistics.cpp ----
// Which inputs bias correction and GPTQ measure, the calibrator's parameters, then the main
// calibration (statistics, thresholds, scale table) in one streamed pass.
void calibration_statistics(QuantizeRun& run);
// Calibrates `tensors` (streaming over the calibration batches) into the table; with
// `channels` / `hessians`, also accumulates those tensors' per-channel statistics / E[x x^T]
// in the same pass.
// `show_progress`: the main calibration (min_sqnr's small ones are part of its search).
void calibrate(QuantizeRun& run, const std::vector<std::string>& tensors,
               std::map<std::string, ChannelStats>* channels = nullptr,
               std::map<std::string, HessianStats>* hessians = nullptr, bool show_progress = false);
// The activations of p without a threshold in the table.
std::vector<std::string> uncalibrated(const QuantizeRun& run, const Placement& p);
// The apply options from the weight statistics: GPTQ's Hessians, bias correction's input means,
// awq_clip's importance, float16's smallest scale.
void weight_statistics(QuantizeRun& run);

// ---- quantize_thresholds.cpp ----
// Thresholds into the table and the result's calibration fields, with their log lines.
void record_thresholds(QuantizeRun& run, const ThresholdTable& th, size_t count);
// Each calibrated tensor's place on E4M3's grid at its threshold, appended to `out`.
void add_fp8_ranges(const std::map<std::string, TensorStats>& stats,
                    const std::map<std::string, double>& amax,
                    std::vector<QuantizeRangeMetrics>& out);
// calibration_method auto: every method's table judged by the outputs, the winner's thresholds
// into the table (nothing otherwise).
void select_calibration(QuantizeRun& run);

// ---- quantize_evaluation.cpp ----
// The report's batches as a feed: i -> the batch eval_index[i].
BatchFn eval_feed(const QuantizeRun& run);
double min_output_sqnr(const std::vector<PairMetrics>& ms);
// The float model's outputs on the report's batches (the reference) and the Q/DQ model's
// metrics against them.
void evaluate_outputs(QuantizeRun& run);
// The result's metrics (outputs, per tensor, plot), counts and warnings.
void report_results(QuantizeRun& run);
// <output>.report.json.
void write_report_file(QuantizeRun& run);

// ---- quantize_min_sqnr.cpp ----
// With min_sqnr above the worst output SQNR: quantized nodes back in high precision, most
// sensitive first, until the target is met.
void min_sqnr_fallback(QuantizeRun& run);

// ---- quantize.cpp ----
// Peak resident memory so far (VmHWM), in MiB; 0 where /proc is not available.
double peak_rss_mib();
inline double seconds(std::chrono::steady_clock::time_point a,
                      std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace trtutils::quantize
