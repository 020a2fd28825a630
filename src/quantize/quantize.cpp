// quantize_onnx: prepare -> place -> calibrate (scale table) -> rewrite -> report -> save.
#include "trtutils/quantize.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>

#include "backends/cpu/nn_kernels.h"
#include "core/check.h"
#include "core/progress.h"
#include "data/input_images.h"
#include "engine/session.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "quantize/auto_method.h"
#include "quantize/calibration.h"
#include "quantize/detection_head.h"
#include "quantize/eval_split.h"
#include "quantize/qdq.h"
#include "quantize/report.h"
#include "trtutils/file_util.h"
#include "trtutils/image_batcher.h"
#include "trtutils/logging.h"
#include "trtutils/npy.h"

namespace trtutils {

const std::vector<std::string>& quantize_mode_names() {
  static const std::vector<std::string> v = {"int8", "fp8", "int4"};
  return v;
}

const std::vector<std::string>& calibration_method_names(const std::string& mode) {
  static const std::vector<std::string> act = {"max", "entropy", "percentile", "mse", "auto"};
  static const std::vector<std::string> w4 = {"rtn", "awq_clip"};
  return mode == "int4" ? w4 : act;
}

namespace quantize {
namespace {

namespace fs = std::filesystem;

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
  void set_file(const fs::path& path, uint64_t offset, Shape shape) {
    file_ = std::make_shared<std::ifstream>(path, std::ios::binary);
    TRT_CHECK(file_->good(), ErrorCode::kIO, "cannot open {}", path.string());
    path_ = path;
    offset_ = offset;
    shape_ = std::move(shape);
  }

 private:
  Tensor batch(int64_t i) const {
    if (!file_) return batches_.at(i);
    const auto [b, e] = ranges_.at(i);
    Shape s = shape_;
    s[0] = e - b;
    Tensor t(DataType::kFloat32, s);
    const uint64_t row = t.nbytes() / static_cast<uint64_t>(e - b);
    file_->clear();
    file_->seekg(static_cast<std::streamoff>(offset_ + row * static_cast<uint64_t>(b)));
    file_->read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
    TRT_CHECK(file_->good(), ErrorCode::kIO, "{}: truncated while reading samples {}..{}",
              path_.string(), b, e - 1);
    check_calibration_values(t, path_.string(), b);
    return t;
  }
  std::vector<Tensor> batches_;
  std::shared_ptr<std::ifstream> file_;
  fs::path path_;
  uint64_t offset_ = 0;
  Shape shape_;
  std::vector<std::pair<int64_t, int64_t>> ranges_;
};

Tensor slice_rows(const Tensor& t, int64_t begin, int64_t end) {
  Shape s = t.shape();
  s[0] = end - begin;
  Tensor r(t.dtype(), s);
  const size_t row = t.nbytes() / static_cast<size_t>(std::max<int64_t>(1, t.dim(0)));
  std::memcpy(r.raw(), static_cast<const uint8_t*>(t.raw()) + row * begin, row * (end - begin));
  return r;
}

Tensor to_dtype(const Tensor& t, DataType dt) {
  if (t.dtype() == dt) return t;
  TRT_CHECK(dt == DataType::kFloat32, ErrorCode::kNotSupported,
            "calibration data is {}, the model input is {}: convert the data to {}",
            dtype_name(t.dtype()), dtype_name(dt), dtype_name(dt));
  std::vector<float> v = t.to_float_vector();
  return Tensor::from_vector<float>(DataType::kFloat32, t.shape(), v);
}

// Data of one more axis than the model input whose other dims match: samples for an input
// without a batch axis (see BatchSource::unbatched).
bool unbatched_data(const Shape& ds, const ir::SymShape& ms) {
  bool yes = ds.size() == ms.size() + 1;
  for (size_t d = 0; yes && d < ms.size(); ++d)
    yes = !ms[d].is_static() || ms[d].value == ds[d + 1];
  return yes;
}

BatchSource load_batches(const QuantizeOptions& o, const ir::Graph& g) {
  TRT_CHECK_ARG(g.inputs.size() == 1,
                "calibration data feeds one input, but the model has {} inputs", g.inputs.size());
  const ir::ValueInfo& in = g.inputs[0];
  TRT_CHECK(in.shape.has_value(), ErrorCode::kNotSupported,
            "model input '{}' has no shape: cannot check the calibration data", in.name);
  const ir::SymShape& ms = *in.shape;
  BatchSource src;
  src.input_name = in.name;
  const bool static_batch = !ms.empty() && ms[0].is_static();
  int64_t bs = o.batch_size;
  auto fixed_batch = [&] {
    if (static_batch && ms[0].value != bs) {
      TRT_LOG_INFO(
          "model input '{}' has a fixed batch of {}: calibrating with batch_size {} (not {})",
          in.name, ms[0].value, ms[0].value, bs);
      bs = ms[0].value;
    }
  };
  if (fs::is_directory(o.calibration_data)) {
    fixed_batch();
    ImageBatcherOptions bo = data::fit_images_to_input(o.image_preprocess, in);
    bo.image_dir = o.calibration_data;
    bo.batch_size = bs;
    bo.keep_partial = !static_batch;
    bo.num_threads = o.num_threads;
    bo.progress = o.progress;
    ImageBatcher batcher(bo);
    src.preprocessing = preprocessing_summary(batcher.options());
    TRT_LOG_INFO("calibration images: {}", src.preprocessing);
    for (Tensor t = batcher.next_batch(); !t.empty(); t = batcher.next_batch())
      src.add(to_dtype(t, in.dtype));
    return src;
  }
  // One reader for every .npy (npy_read_header checks what npy_load checks): little-endian
  // float32 data for a float32 input is streamed from the file, anything else loaded whole.
  const NpyHeader header = npy_read_header(o.calibration_data);
  const bool stream =
      header.dtype == DataType::kFloat32 && !header.big_endian && in.dtype == DataType::kFloat32;
  Tensor data;
  Shape dshape;
  if (stream) {
    dshape = header.shape;
  } else {
    data = to_dtype(npy_load(o.calibration_data), in.dtype);
    dshape = data.shape();
  }
  auto mismatch = [&] {
    std::string expect;
    for (size_t d = 1; d < ms.size(); ++d)
      expect +=
          (d > 1 ? ", " : "") + (ms[d].is_static() ? std::to_string(ms[d].value) : ms[d].param);
    return fmt::format(
        "calibration data {} has shape {}, which does not fit the model input '{}' {} "
        "(expected [samples, {}])",
        o.calibration_data.string(), shape_str(dshape), in.name, ir::sym_shape_str(ms), expect);
  };
  const bool unbatched = unbatched_data(dshape, ms);
  if (unbatched) {
    TRT_LOG_INFO("model input '{}' {} has no batch axis: calibrating one sample at a time", in.name,
                 ir::sym_shape_str(ms));
    src.unbatched = true;
    bs = 1;
  } else {
    fixed_batch();
    TRT_CHECK_ARG(dshape.size() == ms.size() && !dshape.empty(), "{}", mismatch());
    for (size_t d = 1; d < ms.size(); ++d)
      TRT_CHECK_ARG(!ms[d].is_static() || ms[d].value == dshape[d], "{}", mismatch());
  }
  TRT_CHECK_ARG(dshape[0] >= 1, "calibration data {} has no samples", o.calibration_data.string());
  if (!data.defined()) src.set_file(o.calibration_data, header.data_offset, dshape);
  const int64_t n = dshape[0];
  for (int64_t b = 0; b < n; b += bs) {
    const int64_t e = std::min(n, b + bs);
    if (e - b < bs && static_batch && !unbatched) {
      TRT_LOG_INFO("dropping the last {} sample(s): the model's batch is fixed at {}", e - b, bs);
      break;
    }
    if (data.defined()) {
      src.add(slice_rows(data, b, e));
      check_calibration_values(src.last(), o.calibration_data.string(), b);
    } else {
      src.add_file_range(b, e);
    }
  }
  TRT_CHECK_ARG(src.num_batches() > 0,
                "calibration data {} has {} samples, fewer than one batch of {}",
                o.calibration_data.string(), n, bs);
  return src;
}

// Peak resident memory so far (VmHWM), in MiB; 0 where /proc is not available.
double peak_rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// Each calibrated tensor's place on E4M3's grid at its threshold, appended to `out`.
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

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// External data: tensors at least this large go to the .data file (ONNX's default).
constexpr uint64_t kExternalMinBytes = 1024;
// Models whose weights exceed this are saved with external data (protobuf's limit is 2 GiB).
constexpr uint64_t kInlineMaxBytes = uint64_t{1} << 30;

uint64_t weight_bytes(const ir::Graph& g) {
  uint64_t n = 0;
  for (const auto& [name, t] : g.initializers) n += t.nbytes();
  return n;
}

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

int64_t required_opset(QuantMode m) {
  switch (m) {
    case QuantMode::kInt8:
      return 13;
    case QuantMode::kFp8:
      return 19;
    case QuantMode::kInt4:
      return 21;
  }
  return 13;
}

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
}  // namespace quantize

QuantizeResult quantize_onnx(const QuantizeOptions& o) {
  using namespace quantize;
  namespace fs = std::filesystem;
  check_output_is_not_input("--output", o.output_path,
                            {{"--onnx", o.onnx_path}, {"--calibration_data", o.calibration_data}});
  if (o.write_report)
    check_output_is_not_input(
        "the report", fs::path(o.output_path.string() + ".report.json"),
        {{"--onnx", o.onnx_path}, {"--calibration_data", o.calibration_data}});
  check_output_is_not_input("--plot", o.plot,
                            {{"--onnx", o.onnx_path},
                             {"--calibration_data", o.calibration_data},
                             {"--output", o.output_path}});
  const QuantMode mode = quant_mode_from_name(o.quantize_mode);
  std::optional<CalibrationMethod> method;
  bool awq = false;
  if (mode == QuantMode::kInt4) {
    if (o.calibration_method == "awq_clip") {
      awq = true;
    } else if (o.calibration_method != "rtn") {
      TRT_CHECK_ARG(o.calibration_method == "max" || o.calibration_method == "entropy" ||
                        o.calibration_method == "percentile" || o.calibration_method == "mse" ||
                        o.calibration_method == "auto",
                    "invalid calibration_method '{}' for int4: choose one of rtn, awq_clip",
                    o.calibration_method);
      TRT_LOG_WARN(
          "calibration_method '{}' does not apply to int4 (weight-only, activations stay "
          "float): using rtn; choose rtn or awq_clip",
          o.calibration_method);
    }
  } else {
    method = calibration_method_from_name(o.calibration_method);
  }
  TRT_CHECK_ARG(o.batch_size >= 1, "batch_size must be >= 1, got {}", o.batch_size);
  TRT_CHECK_ARG(o.percentile > 0 && o.percentile <= 100, "percentile must be in (0, 100], got {}",
                o.percentile);
  TRT_CHECK_ARG(o.num_bins >= 256 && o.num_bins <= kMaxHistogramBins,
                "num_bins must be in 256..{}, got {}", kMaxHistogramBins, o.num_bins);
  check_thread_count(o.num_threads);
  TRT_CHECK_ARG(o.block_size >= 2, "block_size must be >= 2, got {}", o.block_size);
  TRT_CHECK_ARG(!o.eval_batches || *o.eval_batches >= 0, "eval_batches must be >= 0, got {}",
                o.eval_batches.value_or(0));
  TRT_CHECK_ARG(
      o.bias_correction == "auto" || o.bias_correction == "on" || o.bias_correction == "off",
      "invalid bias_correction '{}': choose one of auto, on, off", o.bias_correction);
  TRT_CHECK_ARG(
      o.weight_rounding == "auto" || o.weight_rounding == "rtn" || o.weight_rounding == "gptq",
      "invalid weight_rounding '{}': choose one of auto, rtn, gptq", o.weight_rounding);
  TRT_CHECK_ARG(o.high_precision_dtype == "fp32" || o.high_precision_dtype == "fp16",
                "invalid high_precision_dtype '{}': choose one of fp32, fp16",
                o.high_precision_dtype);
  std::error_code ec;
  require_regular_file(o.onnx_path, "ONNX model");
  TRT_CHECK_ARG(!o.output_path.empty(), "output_path is empty");
  const bool have_data = !o.calibration_data.empty();
  TRT_CHECK_ARG(have_data || mode == QuantMode::kInt4,
                "calibration_data is required for {} (a .npy file or an image directory)",
                o.quantize_mode);
  TRT_CHECK_ARG(!have_data || fs::exists(o.calibration_data, ec), "calibration data not found: {}",
                o.calibration_data.string());
  PlacementOptions po;
  po.mode = mode;
  po.op_types_to_quantize = {o.op_types_to_quantize.begin(), o.op_types_to_quantize.end()};
  po.op_types_to_exclude = {o.op_types_to_exclude.begin(), o.op_types_to_exclude.end()};
  po.block_size = o.block_size;
  po.skip_single_row = true;
  for (const auto& r : o.nodes_to_exclude) {
    try {
      po.nodes_to_exclude.emplace_back(r, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      TRT_THROW(ErrorCode::kInvalidArgument, "nodes_to_exclude: invalid regex '{}': {}", r,
                e.what());
    }
  }

  QuantizeResult result;
  ir::Model model = onnx_io::load_model(o.onnx_path);
  if (has_qdq(model.graph)) {
    TRT_LOG_WARN("{} already contains Q/DQ nodes: written unchanged to {}", o.onnx_path.string(),
                 o.output_path.string());
    const std::vector<std::string> ext = onnx_io::external_data_locations(o.onnx_path);
    if (ext.empty()) {
      write_file_atomic(o.output_path, read_file(o.onnx_path));
    } else {
      // The bytes alone would point at data files next to the input. The loaded model (its
      // external data resolved inside the input's folder) is written again with its weights
      // in "<output file name>.data" beside the output: never a file outside that folder.
      onnx_io::save_model(model, o.output_path, {.external_data_threshold = kExternalMinBytes});
      TRT_LOG_INFO("{} keeps its weights in {} external file(s) ({}...): rewritten to {}.data",
                   o.onnx_path.string(), ext.size(), ext.front(),
                   o.output_path.filename().string());
    }
    result.already_quantized = true;
    return result;
  }

  // Prepare: constant folding, BN folding, opset, names, types.
  name_nodes(model.graph);
  model.graph.topological_sort();
  passes::run_pipeline(model.graph, model.opset(), {"conv_fusion", "qdq_fusion"});  // CPU-only ops
  if (size_t n = fold_batch_norm(model.graph))
    TRT_LOG_INFO("folded {} BatchNormalization node(s)", n);
  const bool fp16 = o.high_precision_dtype == "fp16";
  const int64_t opset_needed = std::max<int64_t>(required_opset(mode), fp16 ? 19 : 0);
  if (model.opset() < opset_needed) upgrade_opset(model, opset_needed);
  model.graph.value_info.clear();
  passes::infer_shapes(model.graph, model.opset());
  const ir::Model float_model = model;  // tensors are shared handles: no weight copy
  TRT_LOG_INFO("model prepared (peak RSS {:.0f} MiB)", peak_rss_mib());

  // Data: the calibration batches and the report's (eval_split.h).
  std::optional<BatchSource> data;
  int64_t calib_batches = 0;
  std::vector<int64_t> eval_index;  // the report's batches
  if (have_data) {
    data = load_batches(o, model.graph);
    const EvalSplit split = split_batches(data->num_batches(), data->samples(0, 1), o.eval_batches,
                                          o.max_calibration_batches);
    calib_batches = split.calib_batches;
    eval_index = split.eval;
    if (o.eval_batches && !eval_index.empty() && !split.held_out)
      TRT_LOG_WARN(
          "only {} batch(es) of calibration data: the report evaluates on calibration "
          "batches (not held out)",
          data->num_batches());
    result.preprocessing = data->preprocessing;
    result.calibration_samples = data->samples(0, calib_batches);
    for (int64_t b : eval_index) result.eval_samples += data->samples(b, b + 1);
    result.eval_held_out = split.held_out;
  }
  const auto eval_count = static_cast<int64_t>(eval_index.size());

  // Placement and calibration (the scale table).
  if (o.keep_detection_head_float) {
    result.excluded_detection_head = detection_head_decode_nodes(model.graph);
    po.nodes_excluded_exact.insert(result.excluded_detection_head.begin(),
                                   result.excluded_detection_head.end());
    if (!result.excluded_detection_head.empty())
      TRT_LOG_INFO("kept a detection head's decode in {}: {} node(s) ({}{})",
                   o.high_precision_dtype, result.excluded_detection_head.size(),
                   result.excluded_detection_head.front(),
                   result.excluded_detection_head.size() > 1 ? ", ..." : "");
  }
  Placement placement = place_qdq(model.graph, po);
  ScaleTable table;
  // Bias correction: the per-channel mean of each quantized layer's activation input, measured
  // in the same pass as the calibration statistics (no extra run of the model).
  const bool bias_correction =
      o.bias_correction == "on" || (o.bias_correction == "auto" && mode != QuantMode::kInt4);
  TRT_CHECK_ARG(!bias_correction || have_data || o.bias_correction == "auto",
                "bias_correction needs calibration_data (the mean of each layer's input)");
  std::map<std::string, ChannelStats> input_stats;     // activation -> per-channel moments
  std::map<std::string, std::string> corrected_input;  // node -> its activation input
  if (bias_correction && have_data && calib_batches > 0) {
    std::map<std::string, const ir::Node*> by_name;
    for (const auto& n : model.graph.nodes) by_name[n.name] = &n;
    std::map<std::string, int64_t> axis_of;
    for (const auto& wq : placement.weights) {
      auto it = by_name.find(wq.node);
      if (it == by_name.end()) continue;
      const auto in = bias_correction_input(*it->second, wq.input);
      if (!in) continue;
      auto [a, fresh] = axis_of.emplace(in->first, in->second);
      if (!fresh && a->second != in->second) continue;  // read with two layouts
      if (fresh) input_stats.emplace(in->first, ChannelStats(in->second));
      corrected_input[wq.node] = in->first;
    }
  }
  // GPTQ: E[x x^T] over K of the activation input of each MatMul / Gemm weight use, measured in
  // the same pass.
  TRT_CHECK_ARG(o.weight_rounding != "gptq" || have_data,
                "weight_rounding gptq needs calibration_data (E[x x^T] of each layer's input)");
  const bool gptq = o.weight_rounding == "gptq" || (o.weight_rounding == "auto" && have_data);
  std::map<std::string, HessianStats> hessian_stats;  // activation -> E[x x^T]
  std::map<std::string, std::string> gptq_input;      // node -> its activation input
  if (gptq && have_data && calib_batches > 0) {
    std::map<std::string, const ir::Node*> by_name;
    for (const auto& n : model.graph.nodes) by_name[n.name] = &n;
    for (const auto& wq : placement.weights) {
      auto it = by_name.find(wq.node);
      if (it == by_name.end() || wq.input != 1) continue;
      const ir::Node& n = *it->second;
      const bool matmul =
          n.op_type == "MatMul" || (n.op_type == "Gemm" && n.attr_int("transA", 0) == 0);
      const Tensor* w = model.graph.initializer(wq.tensor);
      if (!matmul || !w || w->rank() != 2 || !n.has_input(0)) continue;
      hessian_stats.try_emplace(n.inputs[0]);
      gptq_input[n.name] = n.inputs[0];
    }
  }
  CalibratorParams cp;
  cp.percentile = o.percentile;
  cp.qmax = quant_mode_qmax(mode);
  cp.fp8 = mode == QuantMode::kFp8;
  const std::set<std::string> softmax = softmax_probability_tensors(model.graph);
  std::map<std::string, TensorStats> kept_stats;  // auto: the statistics the selection reuses
  std::vector<std::map<std::string, TensorStats>> fold_stats;  // auto, cross-fitted: per fold
  bool auto_selected = false;
  SelectionSplit selection;  // auto: the batches the candidates are judged on
  if (have_data && method && *method == CalibrationMethod::kAuto)
    selection = selection_batches(calib_batches, data->samples(0, 1), kAutoSelectionSamples,
                                  kAutoSelectionFolds);
  // Thresholds into the table and the result's calibration fields, with their log lines.
  auto record_thresholds = [&](const ThresholdTable& th, size_t count) {
    for (const auto& [t, a] : th.amax) table.amax[t] = a;
    result.calibration_rejected.insert(result.calibration_rejected.end(), th.rejected.begin(),
                                       th.rejected.end());
    if (*method == CalibrationMethod::kAuto)
      for (const auto& [m, n] : th.methods_used) result.calibration_methods_used[m] += n;
    if (!th.rejected.empty())
      TRT_LOG_WARN(
          "calibration: {} of {} tensor(s) keep their absmax: the {} threshold quantized their "
          "calibration values with over {:g}x absmax's squared error (e.g. {})",
          th.rejected.size(), count, calibration_method_name(*method), kGuardRatio,
          th.rejected.front());
    if (th.by_max)
      TRT_LOG_INFO(
          "calibration: {} Softmax output(s) calibrated by their maximum ({} would clip "
          "the largest probabilities)",
          th.by_max, calibration_method_name(*method));
  };
  // Calibrates `tensors` (streaming over the calibration batches) into the table; with
  // `channels` / `hessians`, also accumulates those tensors' per-channel statistics / E[x x^T]
  // in the same pass.
  // `show_progress`: the main calibration (min_sqnr's small ones are part of its search).
  auto calibrate = [&](const std::vector<std::string>& tensors,
                       std::map<std::string, ChannelStats>* channels = nullptr,
                       std::map<std::string, HessianStats>* hessians = nullptr,
                       bool show_progress = false) {
    std::vector<std::string> streamed = tensors;
    std::set<std::string> listed(tensors.begin(), tensors.end());
    if (channels) {
      for (auto& [x, st] : *channels) {
        if (const Tensor* c = model.graph.initializer(x)) {
          st.add(*c);  // a constant input: its own values, once
        } else if (listed.insert(x).second) {
          streamed.push_back(x);
        }
      }
    }
    if (hessians) {
      for (auto& [x, st] : *hessians) {
        if (const Tensor* c = model.graph.initializer(x)) {
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
        !tensors.empty() && *method == CalibrationMethod::kAuto && !auto_selected;
    std::optional<FoldStats> fit;
    if (selecting && selection.held_out()) fit.emplace(selection, o.num_bins);
    Progress bar("calibration", calib_batches, show_progress && o.progress, "batches");
    const size_t live = stream_tensors(
        model, streamed, calib_batches,
        [&](int64_t i) {
          bar.update(i);  // batches [0, i) are done
          return data->feeds(i);
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
    bar.update(calib_batches);
    const auto t1 = std::chrono::steady_clock::now();
    if (tensors.empty()) return;
    // auto: the first calibration's thresholds are provisional (the per-tensor table) until
    // select_calibration_method has tried every method on the outputs.
    const ThresholdTable th = choose_thresholds(stats, *method, cp, softmax);
    record_thresholds(th, stats.size());
    if (mode == QuantMode::kFp8) add_fp8_ranges(stats, th.amax, result.fp8_range);
    if (selecting) {
      if (fit) fold_stats = fit->take();
      kept_stats = std::move(stats);
    }
    share_scales(model.graph, table);
    TRT_LOG_INFO(
        "calibration: {}{} tensor(s) over {} batch(es) in {:.1f} s (activations alive at most "
        "{:.1f} MiB, peak RSS so far {:.0f} MiB), {} thresholds in {:.1f} s",
        o.calibrate_per_node ? "node by node, " : "", tensors.size(), calib_batches,
        seconds(t0, t1), static_cast<double>(live) / (1 << 20), peak_rss_mib(),
        o.calibration_method, seconds(t1, std::chrono::steady_clock::now()));
  };
  auto uncalibrated = [&](const Placement& p) {
    std::vector<std::string> v;
    for (const auto& [t, uses] : p.activations)
      if (!table.amax.count(t)) v.push_back(t);
    return v;
  };
  calibrate(mode != QuantMode::kInt4 ? uncalibrated(placement) : std::vector<std::string>{},
            input_stats.empty() ? nullptr : &input_stats,
            hessian_stats.empty() ? nullptr : &hessian_stats, /*show_progress=*/true);

  ApplyOptions ao{.mode = mode, .awq_clip = awq};
  ao.gptq = gptq;
  {
    std::map<std::string, std::shared_ptr<const std::vector<float>>> by_input;
    for (auto& [x, st] : hessian_stats)
      if (st.rows() > 0) by_input[x] = std::make_shared<const std::vector<float>>(st.mean_outer());
    hessian_stats.clear();
    for (const auto& [node, x] : gptq_input)
      if (auto h = by_input.find(x); h != by_input.end()) ao.hessian[node] = h->second;
  }
  for (const auto& [node, x] : corrected_input) {
    const ChannelStats& st = input_stats.at(x);
    if (st.rows() > 0) ao.input_mean[node] = st.mean();
  }
  input_stats.clear();
  if (awq && have_data && calib_batches > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    ao.awq_importance =
        awq_importance(model, placement, calib_batches, [&](int64_t i) { return data->feeds(i); },
                       {.num_threads = o.num_threads, .per_node = o.calibrate_per_node});
    TRT_LOG_INFO(
        "awq_clip: activation statistics for {} of {} weight(s) over {} batch(es) in {:.1f} s",
        ao.awq_importance.size(), placement.weights.size(), calib_batches,
        seconds(t0, std::chrono::steady_clock::now()));
  } else if (awq) {
    TRT_LOG_WARN(
        "awq_clip without calibration_data: the clip search cannot weight the error by the "
        "activations and minimises the weight error only");
  }
  // float16 scales: at least float16's smallest normal (qdq.h, ApplyOptions::min_scale).
  if (fp16) ao.min_scale = 6.103515625e-05f;  // 2^-14
  auto build = [&](const Placement& p, ApplyStats* st) {
    ir::Model m = float_model;
    ApplyStats s = apply_qdq(m.graph, p, table, ao);
    if (st) *st = s;
    if (fp16) convert_to_fp16(m);
    return m;
  };
  if (method && *method == CalibrationMethod::kAuto && !kept_stats.empty()) {
    // Every method's table on the same statistics (per fold, without the fold's batches, when
    // cross-fitted), judged by the outputs on the selection batches (never the report's held-out
    // ones); the winner's method then runs on the statistics of every calibration batch.
    const std::vector<int64_t>& picked = selection.batches;
    auto pick = [&](int64_t i) { return data->feeds(picked[static_cast<size_t>(i)]); };
    int64_t samples = 0;
    for (int64_t b : picked) samples += data->samples(b, b + 1);
    if (fold_stats.empty()) fold_stats.push_back(kept_stats);  // in-sample: one table
    for (auto& fs : fold_stats)  // a tensor no fold batch reached (none in practice)
      for (const auto& [t, st] : kept_stats) fs.try_emplace(t, st);
    const auto t0 = std::chrono::steady_clock::now();
    MethodSelection sel = select_calibration_method(
        fold_stats, selection.fold, cp, softmax,
        [&](const std::map<std::string, double>& amax) {
          const ScaleTable saved = table;
          for (const auto& [t, a] : amax) table.amax[t] = a;
          share_scales(model.graph, table);
          ir::Model m = build(placement, nullptr);
          table = saved;
          return m;
        },
        float_model, samples, pick, o.num_threads, o.progress);
    fold_stats.clear();
    result.calibration_method_chosen = sel.name;
    result.auto_selection_samples = samples;
    result.auto_selection_held_out = selection.held_out();
    result.auto_selection_folds = selection.folds;
    result.auto_selection_on_gpu = sel.on_gpu;
    std::string scores;
    for (const auto& sc : sel.scores) {
      result.calibration_method_scores.emplace_back(sc.name, sc.sqnr_db);
      scores += fmt::format("{}{} {:.2f}", scores.empty() ? "" : ", ", sc.name, sc.sqnr_db);
    }
    TRT_LOG_INFO(
        "calibration_method auto: {} (output SQNR dB on {} calibration sample(s), {}: {}; {:.1f} s "
        "on the {})",
        sel.name, samples,
        selection.held_out() ? fmt::format("{} folds, each fitted without its own", selection.folds)
                             : std::string("in-sample"),
        scores, seconds(t0, std::chrono::steady_clock::now()), sel.on_gpu ? "GPU" : "CPU");
    method = sel.method;  // later calibrations (min_sqnr) use the chosen method
    const ThresholdTable th = choose_thresholds(kept_stats, sel.method, cp, softmax);
    // The provisional table's fields give way to the winner's.
    for (const auto& [t, a] : th.amax) table.amax[t] = a;
    result.calibration_rejected = th.rejected;
    result.calibration_methods_used = th.methods_used;
    result.fp8_range.clear();
    if (mode == QuantMode::kFp8) add_fp8_ranges(kept_stats, th.amax, result.fp8_range);
    share_scales(model.graph, table);
    kept_stats.clear();
    auto_selected = true;
  }
  ApplyStats ast;
  ir::Model qmodel = build(placement, &ast);

  // Report (and the sensitivity fallback, which needs it).
  auto eval_feed = [&](int64_t i) { return data->feeds(eval_index[static_cast<size_t>(i)]); };
  auto evaluate = [&](const ir::Model& qm,
                      const std::vector<std::pair<std::string, std::string>>& extra) {
    return compare_models(float_model, qm, extra, eval_count, eval_feed, o.num_threads);
  };
  auto min_output_sqnr = [&](const std::vector<PairMetrics>& ms) {
    double m = std::numeric_limits<double>::infinity();
    for (const auto& x : ms) m = std::min(m, x.sqnr_db);
    return m;
  };
  std::vector<std::pair<std::string, std::string>> output_pairs;
  std::vector<std::string> output_names;
  for (const auto& v : float_model.graph.outputs) {
    output_pairs.emplace_back(v.name, v.name);
    output_names.push_back(v.name);
  }
  std::vector<PairMetrics> metrics;
  std::vector<std::map<std::string, Tensor>> reference;
  if (eval_count > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    reference = run_batches(float_model, output_names, eval_count, eval_feed, o.num_threads);
    // The float model's packed weights (CPU kernels' caches, alive as long as its weights) are
    // not needed again; the Q/DQ model packs its own (ResNet-50: 45 MiB less at the peak).
    cpu::nn::onednn_clear_caches();
    metrics = compare_to_reference(reference, qmodel, output_pairs, eval_feed, o.num_threads);
    TRT_LOG_INFO("report: {} batch(es) through both models in {:.1f} s (peak RSS {:.0f} MiB)",
                 eval_count, seconds(t0, std::chrono::steady_clock::now()), peak_rss_mib());
  }

  if (o.min_sqnr && eval_count > 0 && min_output_sqnr(metrics) < *o.min_sqnr) {
    // Sensitivity, measured: the output SQNR with each quantized node alone back in float (the
    // Q/DQ model with that node's inputs rewired to float, one evaluation per node). A local
    // proxy (the noise a node adds to its own output) misses how that noise propagates: on
    // ViT-B/16 fp8 (random weights), the 12 QKV projections back in float gain 0 dB, the 12
    // MLP fc2 2.1 dB (near-uniform attention averages the per-token noise away); ranked by
    // that proxy, 32 of 72 layers had to stay in float for 25 dB.
    const auto t0 = std::chrono::steady_clock::now();
    const double base = min_output_sqnr(metrics);
    std::vector<std::pair<double, std::string>> order;
    {
      Progress bar("min_sqnr sensitivity", static_cast<int64_t>(placement.quantized_nodes.size()),
                   o.progress, "layers");
      for (const auto& name : placement.quantized_nodes) {
        const auto ms =
            compare_to_reference(reference, with_node_in_float(qmodel, float_model, name),
                                 output_pairs, eval_feed, o.num_threads);
        order.emplace_back(min_output_sqnr(ms), name);
        bar.update(static_cast<int64_t>(order.size()));
      }
    }
    // Largest gain first; ties keep graph order.
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    TRT_LOG_INFO("min_sqnr: sensitivity of {} node(s) measured in {:.1f} s", order.size(),
                 seconds(t0, std::chrono::steady_clock::now()));
    std::set<std::string> excluded = po.nodes_excluded_exact;
    // At most every layer; the search stops as soon as the target is met.
    Progress bar("min_sqnr fallback", static_cast<int64_t>(order.size()), o.progress, "layers");
    for (const auto& [alone, worst] : order) {
      excluded.insert(worst);
      result.excluded_by_fallback.push_back(worst);
      po.nodes_excluded_exact = excluded;
      placement = place_qdq(float_model.graph, po);
      calibrate(uncalibrated(placement));  // e.g. the other branch of a residual Add
      qmodel = build(placement, &ast);
      metrics = compare_to_reference(reference, qmodel, output_pairs, eval_feed, o.num_threads);
      TRT_LOG_INFO(
          "min_sqnr: left {} in high precision (alone: {:+.2f} dB), output SQNR now {:.2f} dB",
          worst, alone - base, min_output_sqnr(metrics));
      if (min_output_sqnr(metrics) >= *o.min_sqnr) break;
      bar.update(static_cast<int64_t>(result.excluded_by_fallback.size()));
    }
    bar.finish(static_cast<int64_t>(result.excluded_by_fallback.size()));
  }
  for (size_t i = 0; i < output_pairs.size() && i < metrics.size(); ++i)
    result.outputs.push_back(
        {output_pairs[i].first, metrics[i].sqnr_db, metrics[i].cosine, metrics[i].max_abs_error});
  if ((o.report_per_tensor || !o.plot.empty()) && eval_count > 0 &&
      !placement.activations.empty()) {
    // The dequantized value each quantized tensor's consumers read, vs the float tensor.
    std::map<std::string, std::string> dq_of;
    for (const auto& n : qmodel.graph.nodes)
      if (n.op_type == "DequantizeLinear" && !n.inputs.empty()) {
        for (const auto& q : qmodel.graph.nodes)
          if (q.op_type == "QuantizeLinear" && q.outputs[0] == n.inputs[0])
            dq_of[q.inputs[0]] = n.outputs[0];
      }
    std::vector<std::pair<std::string, std::string>> pairs;
    std::vector<std::string> nodes;
    for (const auto& [t, uses] : placement.activations)
      if (dq_of.count(t)) {
        pairs.emplace_back(t, dq_of[t]);
        nodes.push_back(uses.empty() ? "" : uses[0].first);
      }
    auto ms = evaluate(qmodel, pairs);
    for (size_t i = 0; i < pairs.size(); ++i) {
      const double a = table.amax[pairs[i].first];
      result.tensors.push_back(
          {pairs[i].first, nodes[i], ms[i].sqnr_db, a, a > 0 ? a / quant_mode_qmax(mode) : 1.0});
    }
  }

  {  // graph order (of the first consumer) for the table and the plot
    std::map<std::string, size_t> pos;
    for (size_t i = 0; i < float_model.graph.nodes.size(); ++i)
      pos[float_model.graph.nodes[i].name] = i;
    std::stable_sort(result.tensors.begin(), result.tensors.end(),
                     [&](const QuantizeTensorMetrics& a, const QuantizeTensorMetrics& b) {
                       return pos[a.node] < pos[b.node];
                     });
  }
  if (!o.plot.empty()) plot_sqnr_png(result.tensors, o.plot);
  result.num_quantized_nodes = static_cast<int64_t>(placement.quantized_nodes.size());
  result.num_qdq_pairs = ast.qdq_pairs;
  result.num_weights_quantized = ast.weights;
  result.num_bias_corrected = ast.bias_corrected;
  result.num_gptq_rounded = ast.gptq_rounded;
  if (ast.scales_raised > 0)
    TRT_LOG_WARN(
        "high_precision_dtype fp16: {} scale(s) below float16's smallest normal ({:.3g}) were "
        "raised to it (their tensors' values are below {:.3g}, e.g. dead channels); fewer "
        "quantization steps cover those values. --high_precision_dtype fp32 keeps exact scales",
        ast.scales_raised, ao.min_scale, ao.min_scale * quant_mode_qmax(mode));
  if (ast.bias_corrected > 0)
    TRT_LOG_INFO("bias correction: {} of {} layer(s) with quantized weights", ast.bias_corrected,
                 ao.input_mean.size());
  result.skipped = placement.skipped;
  qmodel.graph.value_info.clear();
  qmodel.producer_name = "trtutils";
  onnx_io::SaveOptions save;
  if (weight_bytes(qmodel.graph) > kInlineMaxBytes)
    save.external_data_threshold = kExternalMinBytes;
  onnx_io::save_model(qmodel, o.output_path, save);
  if (o.write_report) {
    result.report_path = o.output_path;
    result.report_path += ".report.json";
    write_file_atomic(result.report_path, report_json(o, result, table, quant_mode_qmax(mode)));
  }
  return result;
}

}  // namespace trtutils
