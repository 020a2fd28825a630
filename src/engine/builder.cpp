// build_engine: parse -> validate config -> IO shapes / formats -> precision (Q/DQ from the
// graph, or from calibration scales when weakly typed) -> graph passes -> layer records ->
// memory plan -> serialize (atomically).
#include "trtutils/builder.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "backends/cpu/nn_kernels.h"
#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/kernel_switches.h"
#include "core/check.h"
#include "core/progress.h"
#include "engine/build_stages.h"
#include "engine/calibration_images.h"
#include "engine/engine_file.h"
#include "engine/memory_plan.h"
#include "engine/session.h"
#include "engine/tactics.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "precision/calibration_cache.h"
#include "precision/layer_precision.h"
#include "quantize/calibration.h"
#include "quantize/qdq.h"
#include "tensorrt/trtexec.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"
#include "trtutils/npy.h"
#include "trtutils/platform.h"

namespace trtutils::builder {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string dtype_short(DataType d) {
  switch (d) {
    case DataType::kFloat32:
      return "fp32";
    case DataType::kFloat16:
      return "fp16";
    case DataType::kInt8:
      return "int8";
    case DataType::kFloat8E4M3FN:
      return "fp8";
    default:
      return std::string(dtype_name(d));
  }
}

json shape_json(const Shape& s) {
  return json(s);
}

json config_json(const BuildConfig& c) {
  json lp = json::array();
  for (const auto& [l, d] : c.layer_precision)
    lp.push_back({{"layer", l}, {"dtype", dtype_short(d)}});
  auto formats = [](const std::vector<TensorFormat>& v) {
    json a = json::array();
    for (const auto& f : v)
      a.push_back((f.dtype == DataType::kUndefined ? "" : dtype_short(f.dtype) + ":") + f.format);
    return a;
  };
  auto shapes = [](const std::map<std::string, Shape>& m) {
    json o = json::object();
    for (const auto& [k, v] : m) o[k] = v;
    return o;
  };
  json j{{"strongly_typed", c.strongly_typed},
         {"fp16", c.fp16},
         {"int8", c.int8},
         {"fp8", c.fp8},
         {"calibration_cache", c.calibration_cache.string()},
         {"calibration_data", c.calibration_data.string()},
         {"data_batcher", c.data_batcher.has_value()},
         {"calibration_batch_size", c.calibration_batch_size},
         {"calibration_algorithm", c.calibration_algorithm},
         {"layer_precision", lp},
         {"precision_constraints", c.precision_constraints},
         {"input_tensor_formats", formats(c.input_tensor_formats)},
         {"output_tensor_formats", formats(c.output_tensor_formats)},
         {"shapes", shapes(c.shapes)},
         {"min_shapes", shapes(c.min_shapes)},
         {"opt_shapes", shapes(c.opt_shapes)},
         {"max_shapes", shapes(c.max_shapes)},
         {"workspace", c.workspace},
         {"optimization_level", c.optimization_level},
         {"no_fallback", c.no_fallback},
         {"allow_float_fallback", c.allow_float_fallback},
         {"gpu_switches", c.gpu_switches}};
  if (c.data_batcher) {
    const auto& b = *c.data_batcher;
    j["data_batcher"] = {{"image_dir", b.image_dir.string()},
                         {"shape", b.shape},
                         {"batch_size", b.batch_size},
                         {"order", std::string(data_order_name(b.order))},
                         {"resize_method", std::string(resize_method_name(b.resize_method))},
                         {"max_images", b.max_images.value_or(0)},
                         {"preprocessing", preprocessing_summary(b)}};
  }
  return j;
}

std::string hex64(uint64_t v) {
  return fmt::format("{:016x}", v);
}

fs::path cache_dir() {
  if (const char* d = std::getenv("TRTUTILS_CACHE_DIR"); d && *d) return fs::path(d);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "trtutils";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "trtutils";
  return fs::temp_directory_path() / "trtutils-cache";
}

// ---- IO shapes ----

void apply_fixed_shapes(ir::Graph& g, const std::map<std::string, Shape>& shapes,
                        const char* flag) {
  for (const auto& [name, shape] : shapes) {
    auto it = std::find_if(g.inputs.begin(), g.inputs.end(),
                           [&name = name](const ir::ValueInfo& v) { return v.name == name; });
    if (it == g.inputs.end()) {
      std::string names;
      for (const auto& v : g.inputs) names += (names.empty() ? "'" : ", '") + v.name + "'";
      TRT_THROW(ErrorCode::kInvalidArgument, "{}: the model has no input '{}'; its inputs are {}",
                flag, name, names);
    }
    if (it->shape) {
      const ir::SymShape& s = *it->shape;
      TRT_CHECK_ARG(s.size() == shape.size(), "{}: input '{}' has rank {} ({}), got {}", flag, name,
                    s.size(), ir::sym_shape_str(s), shape_str(shape));
      for (size_t d = 0; d < s.size(); ++d)
        TRT_CHECK_ARG(!s[d].is_static() || s[d].value == shape[d],
                      "{}: input '{}' has a fixed dimension {} = {}, got {}", flag, name, d,
                      s[d].value, shape_str(shape));
    }
    for (int64_t d : shape)
      TRT_CHECK_ARG(d >= 1, "{}: input '{}': dimensions must be >= 1, got {}", flag, name,
                    shape_str(shape));
  }
}

// ---- GPU kernel switches ----

// The switches a GPU engine records (backends/cuda/kernel_switches.h): TRTUTILS_CUDA_* set now,
// then config.gpu_switches (NAME or TRTUTILS_CUDA_NAME), which win. Unknown names from the
// config are errors, from the environment warnings.
cuda::KernelSwitches recorded_gpu_switches(const BuildConfig& c, BuildResult& result) {
  const auto& known = cuda::known_switches();
  const auto is_known = [&](const std::string& n) {
    return std::binary_search(known.begin(), known.end(), n);
  };
  cuda::KernelSwitches s;
  s.use_environment = false;
  for (const auto& [name, value] : cuda::switches_from_environment().values) {
    if (is_known(name)) {
      s.values[name] = value;
      continue;
    }
    result.warnings.push_back(fmt::format("{} is set but is no kernel switch: ignored", name));
    TRT_LOG_WARN("{}", result.warnings.back());
  }
  for (const auto& [key, value] : c.gpu_switches) {
    const std::string name = key.rfind("TRTUTILS_CUDA_", 0) == 0 ? key : "TRTUTILS_CUDA_" + key;
    if (!is_known(name)) {
      std::string names;
      for (const auto& k : known) names += (names.empty() ? "" : ", ") + k.substr(14);
      TRT_THROW(ErrorCode::kInvalidArgument, "gpu switch '{}' is unknown; the switches are: {}",
                key, names);
    }
    s.values[name] = value;
  }
  if (!s.values.empty()) {
    std::string list;
    for (const auto& [n, v] : s.values) list += fmt::format(" {}={}", n, v);
    TRT_LOG_INFO("GPU kernel switches recorded in the engine:{}", list);
  }
  return s;
}

// ---- fp16 layers (weakly typed, forced): inputs cast to fp16, weights stored fp16, outputs
// computed in fp16 and cast back, as TensorRT runs an FP16 layer between FP32 neighbours.
void make_fp16_layer(ir::Graph& g, size_t idx) {
  ir::Node node = g.nodes[idx];
  std::vector<ir::Node> before, after;
  for (auto& in : node.inputs) {
    if (in.empty()) continue;
    if (const Tensor* t = g.initializer(in)) {
      if (t->dtype() != DataType::kFloat32) continue;
      const std::string name = g.unique_name(in + "_fp16");
      std::vector<float> v = t->to_float_vector();
      Tensor h(DataType::kFloat16, t->shape());
      for (size_t k = 0; k < v.size(); ++k) h.data<half>()[k] = float_to_half(v[k]);
      g.initializers[name] = h;
      in = name;
      continue;
    }
    auto vi = g.find_value_info(in);
    if (!vi || vi->dtype != DataType::kFloat32) continue;
    ir::Node cast;
    cast.op_type = "Cast";
    cast.name = g.unique_name(node.name + "_to_fp16");
    cast.inputs = {in};
    cast.outputs = {g.unique_name(in + "_fp16")};
    cast.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat16));
    in = cast.outputs[0];
    before.push_back(cast);
  }
  for (auto& o : node.outputs) {
    if (o.empty()) continue;
    auto vi = g.find_value_info(o);
    if (!vi || vi->dtype != DataType::kFloat32) continue;
    ir::Node cast;
    cast.op_type = "Cast";
    cast.name = g.unique_name(node.name + "_to_fp32");
    const std::string h = g.unique_name(o + "_fp16");
    cast.inputs = {h};
    cast.outputs = {o};
    cast.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat32));
    o = h;
    after.push_back(cast);
  }
  std::vector<ir::Node> seq = before;
  seq.push_back(node);
  seq.insert(seq.end(), after.begin(), after.end());
  g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(idx));
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(idx), seq.begin(), seq.end());
}

// ---- IO formats: HWC-like formats and IO dtypes become nodes at the engine boundary ----

void apply_io_formats(ir::Graph& g, const BuildConfig& c, json& io) {
  auto check_count = [&](const std::vector<TensorFormat>& f, size_t n, const char* what) {
    TRT_CHECK_ARG(f.empty() || f.size() == n, "{}: {} format(s) given for {} {}", what, f.size(), n,
                  std::string(what).find("input") == 0 ? "inputs" : "outputs");
  };
  check_count(c.input_tensor_formats, g.inputs.size(), "input_tensor_formats");
  check_count(c.output_tensor_formats, g.outputs.size(), "output_tensor_formats");
  auto supported = [](const std::string& f) { return f == "LINEAR" || f == "HWC"; };
  for (size_t i = 0; i < c.input_tensor_formats.size(); ++i) {
    TensorFormat f = c.input_tensor_formats[i];
    if (c.strongly_typed) f.dtype = DataType::kUndefined;
    ir::ValueInfo& v = g.inputs[i];
    TRT_CHECK(supported(f.format), ErrorCode::kNotSupported,
              "input '{}': tensor format {} is not supported by the cpu backend; use LINEAR or HWC",
              v.name, f.format);
    io["inputs"][i]["format"] = f.format;
    const bool relayout = f.format == "HWC";
    const bool recast = f.dtype != DataType::kUndefined && f.dtype != v.dtype;
    if (!relayout && !recast) continue;
    if (relayout)
      TRT_CHECK_ARG(v.shape && v.shape->size() == 4, "input '{}': format HWC needs a 4-D input",
                    v.name);
    // The graph input keeps its name (now in the IO dtype / layout): its readers read an
    // internal value computed by boundary nodes: input -> [Cast] -> [Transpose] -> internal.
    const std::string old = v.name;
    const std::string internal = g.unique_name(old + "_linear");
    for (auto& n : g.nodes)
      for (auto& in : n.inputs)
        if (in == old) in = internal;
    std::vector<ir::Node> nodes;
    std::string cur = old;
    if (recast) {
      ir::Node cast;
      cast.op_type = "Cast";
      cast.name = g.unique_name(old + "_io_cast");
      cast.inputs = {cur};
      cast.outputs = {relayout ? g.unique_name(old + "_io_cast_out") : internal};
      cast.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(v.dtype));
      cur = cast.outputs[0];
      nodes.push_back(cast);
    }
    if (relayout) {
      ir::Node tr;
      tr.op_type = "Transpose";
      tr.name = g.unique_name(old + "_io_nhwc_to_nchw");
      tr.inputs = {cur};
      tr.outputs = {internal};
      tr.attributes["perm"] = ir::attr_ints("perm", {0, 3, 1, 2});
      nodes.push_back(tr);
      const ir::SymShape s = *v.shape;
      v.shape = ir::SymShape{s[0], s[2], s[3], s[1]};
    }
    if (recast) v.dtype = f.dtype;
    g.nodes.insert(g.nodes.begin(), nodes.begin(), nodes.end());
  }
  for (size_t i = 0; i < c.output_tensor_formats.size(); ++i) {
    TensorFormat f = c.output_tensor_formats[i];
    if (c.strongly_typed) f.dtype = DataType::kUndefined;
    ir::ValueInfo& v = g.outputs[i];
    TRT_CHECK(supported(f.format), ErrorCode::kNotSupported,
              "output '{}': tensor format {} is not supported by the cpu backend; use LINEAR or "
              "HWC",
              v.name, f.format);
    io["outputs"][i]["format"] = f.format;
    const bool relayout = f.format == "HWC";
    const bool recast = f.dtype != DataType::kUndefined && f.dtype != v.dtype;
    if (!relayout && !recast) continue;
    if (relayout)
      TRT_CHECK_ARG(v.shape && v.shape->size() == 4, "output '{}': format HWC needs a 4-D output",
                    v.name);
    // The producer writes an internal name; boundary nodes produce the output's name.
    const std::string old = v.name;
    const std::string internal = g.unique_name(old + "_linear");
    for (auto& n : g.nodes) {
      for (auto& o : n.outputs)
        if (o == old) o = internal;
      for (auto& in : n.inputs)
        if (in == old) in = internal;
    }
    std::string cur = internal;
    if (relayout) {
      ir::Node tr;
      tr.op_type = "Transpose";
      tr.name = g.unique_name(old + "_io_nchw_to_nhwc");
      tr.inputs = {cur};
      tr.outputs = {recast ? g.unique_name(old + "_nhwc") : old};
      tr.attributes["perm"] = ir::attr_ints("perm", {0, 2, 3, 1});
      cur = tr.outputs[0];
      g.nodes.push_back(tr);
      const ir::SymShape s = *v.shape;
      v.shape = ir::SymShape{s[0], s[2], s[3], s[1]};
    }
    if (recast) {
      ir::Node cast;
      cast.op_type = "Cast";
      cast.name = g.unique_name(old + "_io_cast");
      cast.inputs = {cur};
      cast.outputs = {old};
      cast.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(f.dtype));
      g.nodes.push_back(cast);
      v.dtype = f.dtype;
    }
  }
}

// build --int8 of a float model with nothing to calibrate from would give an engine without one
// INT8 layer (TensorRT only warns; users lose hours to it): an error unless allow_float_fallback.
// A Q/DQ model (or allow_float_fallback) builds, with a warning.
void require_int8_scales(const BuildConfig& c, bool explicit_qdq, BuildResult& result) {
  if (!c.int8 || c.strongly_typed || has_calibration(c)) return;
  TRT_CHECK(explicit_qdq || c.allow_float_fallback, ErrorCode::kConfig,
            "int8 is enabled but neither calibration_cache nor calibration data was given, and "
            "the model has no Q/DQ nodes: no layer could run in INT8 and the engine would be all "
            "float. Give calibration data (--calibration_data, --calibration_dir or "
            "--calibration_cache), or quantize the model first (`trtutils quantize`, then `build "
            "--strongly_typed`), or pass --allow_float_fallback (Python: "
            "allow_float_fallback=True) to build it anyway.");
  result.warnings.push_back(
      "int8 is enabled but neither calibration_cache nor calibration data was given: layers "
      "without Q/DQ scales cannot run in INT8 and stay in higher precision");
  TRT_LOG_WARN("{}", result.warnings.back());
}

// One build's state, passed through the stages of build_engine in order.
struct BuildRun {
  BuildRun(const fs::path& onnx_path, const fs::path& output_path, const BuildConfig& config)
      : onnx(onnx_path), output(output_path), c(config) {}
  const fs::path onnx, output;
  BuildConfig c;  // with the images fitted to the model (data_batcher)
  std::chrono::steady_clock::time_point t_start = std::chrono::steady_clock::now();
  BuildResult result;
  std::optional<ir::Model> loaded;  // loaded early when the images need the model
  // Target.
  std::string backend;
  int target_sm = 0, engine_sm = 0;
  cuda::KernelSwitches switches{{}, false};
  // Cache.
  json cfg_json;
  fs::path cached;
  // The model and what the stages decide.
  ir::Model model;
  std::vector<std::string> original_nodes;
  json io{{"inputs", json::array()}, {"outputs", json::array()}};
  bool explicit_qdq = false;
  precision::LayerPrecisionPlan plan;
  json calib_info, tactic_info, gpu_tactics;
  std::map<std::string, Shape> plan_shapes;
  engine::EngineData ed;
  engine::MemoryPlan mem;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The backend and the GPU the engine is for (--backend auto: cuda where a GPU is usable).
void resolve_target(BuildRun& r) {
  const PlatformInfo& p = platform_info();
  const int local_sm = p.gpu_count > 0 ? p.gpu.sm_major * 10 + p.gpu.sm_minor : 0;
  r.target_sm = r.c.target_sm > 0 ? r.c.target_sm : local_sm;
  r.result.warnings = validate_build_config(r.c, r.target_sm);
  const cuda::DeviceStatus dev = cuda::device_status();
  r.backend = r.c.backend == "auto" ? (dev.usable ? "cuda" : "cpu") : r.c.backend;
  if (r.backend != "cuda") return;
  TRT_CHECK(!cuda::supported_ops().empty(), ErrorCode::kNotSupported,
            "this trtutils was built without the CUDA backend (no CUDA toolkit at build time): "
            "build with --backend cpu");
  r.engine_sm = r.c.target_sm > 0 ? r.c.target_sm : dev.sm;
  TRT_CHECK(r.engine_sm > 0, ErrorCode::kInvalidArgument,
            "--backend cuda: no GPU here ({}); give the target GPU with --target_sm (e.g. 90)",
            dev.why);
}

// Engine cache: same model bytes + config + target -> the same engine. True on a hit (written to
// the output); else r.cached is where the new engine is stored.
bool reuse_cached_engine(BuildRun& r) {
  if (!r.c.cache) return false;
  const PlatformInfo& p = platform_info();
  std::error_code ec;
  const std::string bytes = read_file(r.onnx);
  std::string calib_bytes;
  if (!r.c.calibration_cache.empty() && fs::exists(r.c.calibration_cache, ec))
    calib_bytes = read_file(r.c.calibration_cache);
  const std::string key_text = r.cfg_json.dump(-1, ' ', false, json::error_handler_t::replace) +
                               "|" + r.backend + "|" + json(r.switches.values).dump() + "|" +
                               std::to_string(r.target_sm) + "|" + TRTUTILS_VERSION + "|" +
                               p.cpu_model + "|" + cuda::timing_device();
  uint64_t h = engine::checksum64(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  h = engine::checksum64(reinterpret_cast<const uint8_t*>(key_text.data()), key_text.size(), h);
  h = engine::checksum64(reinterpret_cast<const uint8_t*>(calib_bytes.data()), calib_bytes.size(),
                         h);
  r.cached = cache_dir() / "engines" / (hex64(h) + ".engine");
  if (!fs::is_regular_file(r.cached, ec)) return false;
  try {
    (void)engine::read_engine_file(r.cached);  // validates (checksum) before reuse
    write_file_atomic(r.output, read_file(r.cached));
    TRT_LOG_INFO("engine cache hit: {} -> {}", r.cached.string(), r.output.string());
    r.result.from_cache = true;
    r.result.seconds = seconds_since(r.t_start);
    return true;
  } catch (const Error& e) {
    TRT_LOG_WARN("ignoring a bad cached engine {}: {}", r.cached.string(), e.what());
    return false;
  }
}

// --min_shapes / --opt_shapes / --max_shapes: checked (all three, min <= opt <= max) and
// recorded in the IO table.
void apply_profile(BuildRun& r) {
  const BuildConfig& c = r.c;
  ir::Graph& g = r.model.graph;
  if (c.min_shapes.empty() && c.opt_shapes.empty() && c.max_shapes.empty()) return;
  apply_fixed_shapes(g, c.min_shapes, "--min_shapes");
  apply_fixed_shapes(g, c.opt_shapes, "--opt_shapes");
  apply_fixed_shapes(g, c.max_shapes, "--max_shapes");
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const std::string& n = g.inputs[i].name;
    const bool any = c.min_shapes.count(n) || c.opt_shapes.count(n) || c.max_shapes.count(n);
    if (!any) continue;
    TRT_CHECK_ARG(c.min_shapes.count(n) && c.opt_shapes.count(n) && c.max_shapes.count(n),
                  "input '{}': give --min_shapes, --opt_shapes and --max_shapes together", n);
    const Shape &mn = c.min_shapes.at(n), &op = c.opt_shapes.at(n), &mx = c.max_shapes.at(n);
    for (size_t d = 0; d < mn.size(); ++d)
      TRT_CHECK_ARG(mn[d] <= op[d] && op[d] <= mx[d],
                    "input '{}': the profile needs min <= opt <= max in every dimension, got "
                    "min {}, opt {}, max {}",
                    n, shape_str(mn), shape_str(op), shape_str(mx));
    r.io["inputs"][i]["min"] = shape_json(mn);
    r.io["inputs"][i]["opt"] = shape_json(op);
    r.io["inputs"][i]["max"] = shape_json(mx);
  }
}

// [1/6] The model, its node names, fixed shapes and the optimization profile.
void load_stage(BuildRun& r) {
  TRT_LOG_INFO("[1/6] loading {}", r.onnx.string());
  r.model = r.loaded ? std::move(*r.loaded) : onnx_io::load_model(r.onnx);
  ir::Graph& g = r.model.graph;
  quantize::name_nodes(g);
  g.topological_sort();
  for (const auto& n : g.nodes) r.original_nodes.push_back(n.name);
  apply_fixed_shapes(g, r.c.shapes, "--shape");
  for (auto& v : g.inputs) {
    auto it = r.c.shapes.find(v.name);
    if (it != r.c.shapes.end()) v.shape = ir::sym_shape_from_static(it->second);
  }
  for (const auto& v : g.inputs) r.io["inputs"].push_back({{"name", v.name}, {"format", "LINEAR"}});
  for (const auto& v : g.outputs)
    r.io["outputs"].push_back({{"name", v.name}, {"format", "LINEAR"}});
  apply_profile(r);
}

// [2/6] Per-layer precision: from the graph (strongly typed) or from the flags and the
// calibration scales (weakly typed); GPU engines fold BatchNormalization and go FP16 if allowed.
void precision_stage(BuildRun& r) {
  const BuildConfig& c = r.c;
  ir::Graph& g = r.model.graph;
  TRT_LOG_INFO("[2/6] resolving precision ({})",
               c.strongly_typed ? "strongly typed: from the graph" : "weakly typed");
  r.explicit_qdq = quantize::has_qdq(g);
  require_int8_scales(c, r.explicit_qdq, r.result);
  r.plan = precision::resolve_layer_constraints(c, g, r.original_nodes, r.result.warnings);
  r.calib_info = quantize_weakly_typed(r.model, c, r.plan, r.explicit_qdq, r.output, r.result);
  // GPU engines: a BatchNormalization after a Conv folds into the Conv's weights (as TensorRT
  // does), so that conv fusion sees Conv -> activation; in float32, before any fp16 conversion.
  if (r.backend == "cuda") quantize::fold_batch_norm(g);
  // FP16 allowed on the GPU: every float layer runs in FP16 (faster there than FP32; IO stays
  // FP32), as TensorRT picks FP16 kernels when they win. On the CPU FP32 kernels are faster.
  // Conv fusion (graph passes, below) then fuses the fp16 Conv -> Add -> activation chains.
  if (r.backend != "cuda" || c.strongly_typed || !c.fp16) return;
  try {
    if (r.model.opset() < 19) quantize::upgrade_opset(r.model, 19);
    g.value_info.clear();
    passes::infer_shapes(g, r.model.opset());
    quantize::convert_to_fp16(r.model);
  } catch (const Error& e) {
    r.result.warnings.push_back(std::string("fp16 conversion skipped: ") + e.what());
    TRT_LOG_WARN("{}", r.result.warnings.back());
  }
}

// [3/6] IO formats (boundary nodes), forced FP16 layers, the graph passes and the backend's
// layout passes; then what the runtime would refuse is refused now.
void passes_stage(BuildRun& r) {
  ir::Graph& g = r.model.graph;
  const int64_t opset = r.model.opset();
  apply_io_formats(g, r.c, r.io);
  TRT_LOG_INFO("[3/6] graph passes");
  g.topological_sort();
  g.value_info.clear();
  passes::infer_shapes(g, opset);
  // FP16 layers (forced) are wrapped before fusion so that fusion sees their real types.
  if (!r.plan.forced_fp16.empty()) {
    for (const auto& name : r.plan.forced_fp16) {
      auto it = std::find_if(g.nodes.begin(), g.nodes.end(),
                             [&](const ir::Node& n) { return n.name == name; });
      if (it != g.nodes.end()) make_fp16_layer(g, static_cast<size_t>(it - g.nodes.begin()));
    }
    g.value_info.clear();
    passes::infer_shapes(g, opset);
  }
  passes::run_pipeline(g, opset);
  if (r.backend == "cpu")
    passes::run_cpu_layout_pipeline(
        g, {}, {cpu::nn::pointwise_depthwise_native, cpu::nn::permuted_matmul_native});
  g.value_info.clear();
  // Refuse now what the runtime would refuse at load or at the first run: an op without a
  // kernel, a node whose type/shape inference fails on known inputs (Reshape to a dim of -2,
  // MatMul of float32 and int64, ...).
  check_cpu_kernels(g);
  passes::infer_shapes(g, opset, {.strict = true});
}

// [4/6] Kernels: the fastest variant per layer, timed on the planned shapes (dynamic inputs
// without a profile are planned at 1 for each symbolic dimension); GPU engines get the plan the
// executor runs, fused and (with the GPU here) timed now.
void kernels_stage(BuildRun& r) {
  r.plan_shapes = r.c.opt_shapes;
  for (const auto& v : r.model.graph.inputs) {
    if (r.plan_shapes.count(v.name) || !v.shape) continue;
    Shape s;
    for (const auto& d : *v.shape) s.push_back(d.is_static() ? d.value : 1);
    r.plan_shapes[v.name] = s;
  }
  r.tactic_info = choose_tactics(r.model, r.c, r.backend, r.plan_shapes);
  TRT_LOG_INFO("[4/6] selecting kernels");
  r.ed.layers = layer_records(r.model, r.c, r.backend, r.result);
  if (r.backend == "cuda")
    r.ed.gpu =
        plan_gpu(r.model, r.c, r.switches, r.engine_sm, r.plan_shapes, r.gpu_tactics, r.result);
}

// [5/6] The activation memory plan at the opt (or static) shapes, and the engine's info table.
void memory_stage(BuildRun& r) {
  TRT_LOG_INFO("[5/6] planning activation memory");
  r.mem = engine::plan_memory(r.model, r.plan_shapes);
  const bool cuda = r.backend == "cuda";
  r.ed.model = std::move(r.model);
  r.ed.info = {{"backend", r.backend},
               {"target_sm", cuda ? r.engine_sm : 0},
               {"tf32", r.c.tf32},
               {"no_fallback", r.c.no_fallback},
               {"gpu_switches", r.switches.values},
               {"fallback_layers", r.result.fallback_layers},
               {"strongly_typed", r.c.strongly_typed},
               {"explicit_quantization", r.explicit_qdq},
               {"build_config", r.cfg_json},
               {"io", r.io},
               {"calibration", r.calib_info},
               {"memory",
                {{"weight_bytes", r.mem.weight_bytes},
                 {"activation_arena_bytes", r.mem.arena_bytes},
                 {"activation_sum_bytes", r.mem.sum_bytes},
                 {"planned_values", r.mem.planned_values},
                 {"plan_shapes", r.plan_shapes},
                 {"unplanned_values", r.mem.unplanned_values}}},
               {"tactics", r.tactic_info},
               {"warnings", r.result.warnings},
               {"source_model", r.onnx.filename().string()},
               {"built_on", platform_info().cpu_model}};
  if (cuda) r.ed.info["gpu_tactics"] = r.gpu_tactics;
}

// [6/6] Serialized, read back as `run` reads it (checksum, sections, graph order, every output
// computed: what the reader would refuse is refused now, blaming the model, and no such engine
// is written), written atomically and stored in the cache.
void write_stage(BuildRun& r) {
  TRT_LOG_INFO("[6/6] writing {}", r.output.string());
  const std::string bytes = engine::serialize_engine(r.ed);
  try {
    const std::shared_ptr<uint8_t> view(
        std::shared_ptr<void>(), reinterpret_cast<uint8_t*>(const_cast<char*>(bytes.data())));
    (void)engine::deserialize_engine(view, bytes.size(), r.output.string());
  } catch (const Error& e) {
    TRT_THROW(ErrorCode::kInvalidArgument, "'{}' cannot be built: the engine would not load: {}",
              r.onnx.string(), e.what());
  }
  write_file_atomic(r.output, bytes);
  if (!r.c.cache || r.cached.empty()) return;
  try {
    std::error_code ec;
    fs::create_directories(r.cached.parent_path(), ec);
    write_file_atomic(r.cached, bytes);
  } catch (const Error& e) {
    TRT_LOG_WARN("could not store the engine in the cache: {}", e.what());
  }
}

}  // namespace

BuildResult build_engine(const fs::path& onnx, const fs::path& output, const BuildConfig& config) {
  check_output_is_not_input(
      "--output", output,
      {{"--onnx", onnx},
       {"--calibration_data", config.calibration_data},
       {"--calibration_cache", config.calibration_cache},
       {"--timing_cache",
        config.timing_cache == "global" ? fs::path() : fs::path(config.timing_cache)}});
  if (config.backend == "tensorrt")  // TensorRT itself, through trtexec (src/tensorrt)
    return build_with_trtexec(onnx, output, config, /*dry_run=*/false);
  BuildRun r(onnx, output, config);
  // The engine records the images' preprocessing as applied (shape and dtype from the model):
  // loaded before the cache key is made when the images take their shape or dtype from it (the
  // build below uses this load).
  if (r.c.data_batcher && images_need_model(*r.c.data_batcher)) {
    require_regular_file(onnx, "ONNX model");
    r.loaded = onnx_io::load_model(onnx);
    r.c.data_batcher = images_fitted_to_model(*r.c.data_batcher, r.loaded->graph);
  }
  r.t_start = std::chrono::steady_clock::now();
  r.result.engine_path = output;
  resolve_target(r);
  // GPU engines run with the kernel switches of their build wherever they are loaded; the
  // builder's own GPU planning (coverage, fusions) sees the same ones.
  if (r.backend == "cuda") r.switches = recorded_gpu_switches(r.c, r.result);
  const cuda::SwitchScope switch_scope(&r.switches);

  std::error_code ec;
  require_regular_file(onnx, "ONNX model");
  TRT_CHECK_ARG(!output.empty(), "the output engine path is empty");
  const fs::path out_dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  TRT_CHECK_ARG(fs::is_directory(out_dir, ec), "output folder {} does not exist", out_dir.string());
  r.cfg_json = config_json(r.c);
  if (reuse_cached_engine(r)) return r.result;

  load_stage(r);
  precision_stage(r);
  passes_stage(r);
  kernels_stage(r);
  memory_stage(r);
  write_stage(r);

  r.result.seconds = seconds_since(r.t_start);
  std::string summary;
  for (const auto& [prec, n] : r.result.layers_per_precision)
    summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, prec);
  TRT_LOG_INFO("built {} layers ({}) in {:.1f} s", r.result.num_layers, summary, r.result.seconds);
  return r.result;
}

}  // namespace trtutils::builder
