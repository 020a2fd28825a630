// The layer table of build_engine: per layer its precision, device and kernel as the runtime
// will run it (GPU engines: the CUDA executor's fusions, the layers that fall back to the CPU),
// and the CPU tactics timed at build time.
#include <nlohmann/json.hpp>
#include <set>

#include "backends/cuda/cuda_executor.h"
#include "core/check.h"
#include "engine/build_stages.h"
#include "engine/tactics.h"
#include "trtutils/logging.h"
#include "trtutils/platform.h"

namespace trtutils::builder {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// GPU engines: the layers no GPU kernel runs (they run on the CPU backend inside the engine,
// as TensorRT's builder and ONNX Runtime's CUDA provider fall back), warned about by name; with
// no_fallback, an error listing them. A node with no kernel at all is refused either way.
std::map<std::string, cuda::FallbackNode> plan_gpu_fallback(const ir::Model& model,
                                                            const BuildConfig& c,
                                                            BuildResult& result) {
  const cuda::GpuCoverage cov = cuda::gpu_coverage(model);
  std::string list;
  for (const auto& u : cov.unsupported) list += "\n  " + u;
  TRT_CHECK(cov.unsupported.empty(), ErrorCode::kNotSupported,
            "{} node(s) have no kernel on any backend:{}", cov.unsupported.size(), list);
  std::map<std::string, cuda::FallbackNode> by_name;
  std::map<std::string, int64_t> per_op;
  for (const auto& f : cov.fallback) {
    by_name[f.node] = f;
    ++per_op[f.op];
    result.fallback_layers.push_back(fmt::format("{} ({}): {}", f.node, f.op, f.reason));
    list += "\n  " + result.fallback_layers.back();
  }
  if (cov.fallback.empty()) return by_name;
  TRT_CHECK(!c.no_fallback, ErrorCode::kNotSupported,
            "--no_fallback: {} layer(s) have no GPU kernel:{}\nbuild without --no_fallback to "
            "run them on the CPU inside the engine, or use --backend cpu",
            cov.fallback.size(), list);
  std::string ops;
  for (const auto& [op, n] : per_op) ops += fmt::format("{}{} x{}", ops.empty() ? "" : ", ", op, n);
  result.warnings.push_back(
      fmt::format("{} layer(s) have no GPU kernel and run on the CPU inside the engine ({}); "
                  "`trtutils inspect` lists them (device: cpu (fallback)), --no_fallback refuses "
                  "them",
                  cov.fallback.size(), ops));
  TRT_LOG_WARN("{}", result.warnings.back());
  for (const auto& l : result.fallback_layers) TRT_LOG_WARN("  fallback: {}", l);
  return by_name;
}

}  // namespace

// What the CUDA executor will run a layer with (inspect's kernel column for GPU engines),
// predicted from the op, dtypes and groups by the executor's own rules (src/backends/cuda):
// quantized convolutions and products go through cuBLASLt on int8 / fp8 (the depthwise int8
// ones through our kernel), grouped ones and QMatMul through dequantize + float32.
std::string cuda_kernel_label(const ir::Graph& g, const ir::Node& n) {
  auto dtype_of = [&](size_t i) {
    if (!n.has_input(i)) return DataType::kUndefined;
    if (const Tensor* t = g.initializer(n.inputs[i])) return t->dtype();
    const auto vi = g.find_value_info(n.inputs[i]);
    return vi ? vi->dtype : DataType::kUndefined;
  };
  const bool q = n.domain == "com.trtutils";
  const std::string& op = n.op_type;
  if (q && (op == "QConv" || op == "QGemm")) {
    const DataType x = dtype_of(0), w = dtype_of(3);
    const bool int8 = (x == DataType::kInt8 || x == DataType::kUInt8) && w == DataType::kInt8;
    const bool fp8 = (x == DataType::kFloat8E4M3FN || x == DataType::kFloat8E5M2) &&
                     (w == DataType::kFloat8E4M3FN || w == DataType::kFloat8E5M2);
    const int64_t group = op == "QConv" ? n.attr_int("group", 1) : 1;
    if (group > 1) {
      const Tensor* wt = n.has_input(3) ? g.initializer(n.inputs[3]) : nullptr;
      const bool depthwise = wt && wt->rank() == 4 && wt->dim(1) == 1 && wt->dim(0) == group;
      if (int8 && depthwise && n.attr_int("channels_last", 0) != 0)
        return "cuda." + op + " (int8 depthwise)";
      return "cudnn." + op + " (dequantized float32)";
    }
    if (int8) return "cublasLt." + op + " (int8)";
    if (fp8) return "cublasLt." + op + " (fp8)";
    return (op == "QConv" ? "cudnn." : "cublasLt.") + op + " (dequantized float32)";
  }
  if (q && op == "QMatMul") return "cublasLt.QMatMul (dequantized float32)";
  if (n.domain.empty() && (op == "If" || op == "Loop"))  // control_flow.h
    return "cuda." + op + " (host-driven, bodies on the GPU)";
  static const std::set<std::string> kCudnn = {"Conv", "FusedConv", "ConvTranspose"};
  static const std::set<std::string> kLt = {"Gemm", "MatMul", "MatMulBias"};
  return (kCudnn.count(op) ? "cudnn." : kLt.count(op) ? "cublasLt." : "cuda.") + op;
}

json choose_tactics(ir::Model& model, const BuildConfig& c, const std::string& backend,
                    const std::map<std::string, Shape>& plan_shapes) {
  const PlatformInfo& p = platform_info();
  json tactic_info{{"optimization_level", c.optimization_level}};
  if (backend == "cuda") {
    tactic_info["note"] =
        "GPU kernel choices: see gpu_tactics (timed at build on the target GPU, else at the first "
        "load); cuDNN's own algorithm search runs once per shape at load";
  } else if (c.optimization_level >= 3) {
    const fs::path tc_path =
        c.timing_cache == "global" ? engine::global_timing_cache_path() : c.timing_cache;
    engine::TimingCache tc =
        tc_path.empty() ? engine::TimingCache() : engine::TimingCache::load(tc_path);
    const auto ts =
        engine::select_tactics(model, plan_shapes, tc, "cpu:" + p.cpu_model, c.num_threads);
    if (!tc_path.empty() && tc.dirty()) tc.save(tc_path);
    tactic_info["layers_timed"] = ts.layers_timed;
    tactic_info["timing_cache_hits"] = ts.cache_hits;
    if (!tc_path.empty()) tactic_info["timing_cache"] = tc_path.string();
    TRT_LOG_INFO("tactics: {} layer(s) timed, {} from the timing cache", ts.layers_timed,
                 ts.cache_hits);
  }
  return tactic_info;
}

std::vector<engine::LayerRecord> layer_records(const ir::Model& model, const BuildConfig& c,
                                               const std::string& backend, BuildResult& result) {
  const ir::Graph& g = model.graph;
  std::vector<engine::LayerRecord> layers;
  const std::map<std::string, cuda::FallbackNode> fallback =
      backend == "cuda" ? plan_gpu_fallback(model, c, result)
                        : std::map<std::string, cuda::FallbackNode>{};
  // The CUDA executor's own fusions (attention, MatMul + bias / GELU / residual) as they will
  // run: the absorbed layers name the fused op and the node it becomes.
  const auto fused = backend == "cuda" ? cuda::fusion_plan(g, model.opset())
                                       : std::map<std::string, cuda::FusedInto>{};
  for (const auto& n : g.nodes) {
    engine::LayerRecord r = precision::describe_layer(g, n);
    r.device = "cpu";
    if (backend == "cuda") {
      r.device = "gpu";
      r.kernel = cuda_kernel_label(g, n);
      if (auto fb = fallback.find(n.name); fb != fallback.end() && !fused.count(n.name)) {
        r.device = "cpu (fallback)";
        r.kernel = "cpu." + fb->second.op + " (fallback: " + fb->second.reason + ")";
      }
      auto f = fused.find(n.name);
      if (f != fused.end())
        r.kernel = f->second.op.empty()
                       ? "removed: " + f->second.node
                       : "fused: cuda." + f->second.op + " (" + f->second.node + ")";
    }
    r.tactic = n.attr_string("tactic", "");
    layers.push_back(r);
    ++result.layers_per_precision[r.precision];
  }
  result.num_layers = static_cast<int64_t>(g.nodes.size());
  return layers;
}

}  // namespace trtutils::builder
