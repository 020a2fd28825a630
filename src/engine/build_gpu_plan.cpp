// A GPU engine's GPU plan (build_stages.h, plan_gpu): the executor's fusions made here, its layer
// table, and the kernel choices timed once on the target GPU when it is here (TensorRT's builder
// times its tactics the same way: on the device, at the profile's opt shapes).
#include <random>

#include "backends/cuda/cuda_executor.h"
#include "core/check.h"
#include "engine/build_stages.h"
#include "engine/tactics.h"
#include "precision/layer_precision.h"
#include "trtutils/logging.h"

namespace trtutils::builder {

namespace {

using nlohmann::json;

constexpr const char* kUntimed = "untimed (timed on first load)";

// What the planning run saw, per node of the GPU graph and in all.
struct PlanRun {
  std::vector<std::string> placement, kernels;
  std::map<std::string, std::string> choices;
};

// Float inputs uniform in [-1, 1); integer and bool ones zero (indices stay in range).
Tensor planning_input(const ir::ValueInfo& v, const Shape& shape, std::mt19937& rng) {
  Tensor t(v.dtype, shape);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (v.dtype == DataType::kFloat32)
      t.data<float>()[i] = u(rng);
    else if (v.dtype == DataType::kFloat16)
      t.data<half>()[i] = float_to_half(u(rng));
    else if (v.dtype == DataType::kBFloat16)
      t.data<bfloat16>()[i] = float_to_bfloat16(u(rng));
  }
  return t;
}

std::map<std::string, Tensor> planning_inputs(const ir::Graph& g,
                                              const std::map<std::string, Shape>& shapes) {
  std::mt19937 rng(29);
  std::map<std::string, Tensor> feeds;
  for (const auto& in : g.inputs) {
    if (g.is_initializer(in.name)) continue;
    auto it = shapes.find(in.name);
    TRT_CHECK(it != shapes.end(), ErrorCode::kNotSupported,
              "input '{}' has no shape to plan at (its rank is unknown)", in.name);
    feeds[in.name] = planning_input(in, it->second, rng);
  }
  return feeds;
}

// The executor's planning pass, as a load runs it: the GPU graph as it is, the recorded
// switches, the engine's TF32 and fallback settings, the build's timing cache.
PlanRun run_planning(const ir::Model& gpu_model, const BuildConfig& c,
                     const cuda::KernelSwitches& switches,
                     const std::map<std::string, Shape>& shapes) {
  cuda::ExecutorOptions eo;
  eo.allow_tf32 = c.tf32;
  eo.allow_fallback = !c.no_fallback;
  eo.switches = switches;
  eo.graph_is_fused = true;
  if (!c.timing_cache.empty())
    eo.timing_cache =
        c.timing_cache == "global" ? engine::global_timing_cache_path() : c.timing_cache;
  cuda::Executor ex(gpu_model, eo);
  (void)ex.run(planning_inputs(gpu_model.graph, shapes));
  return {ex.node_placement(), ex.node_kernels(), ex.timing_decisions()};
}

// Why the choices cannot be timed here ("" when they can).
std::string why_untimed(const BuildConfig& c, int engine_sm) {
  const cuda::DeviceStatus dev = cuda::device_status();
  if (!dev.usable) return fmt::format("no GPU here ({}): built for SM {}", dev.why, engine_sm);
  if (dev.sm != engine_sm)
    return fmt::format("built for SM {} on an SM {} GPU ({})", engine_sm, dev.sm, dev.name);
  if (c.optimization_level == 0) return "optimization level 0";
  return "";
}

std::string output_layout(const ir::Graph& g, const ir::Node& n, const std::string& kernel) {
  if (kernel.find("NHWC") != std::string::npos) return "NHWC";
  if (n.outputs.empty()) return "";
  const auto vi = g.find_value_info(n.outputs[0]);
  return vi && vi->shape && vi->shape->size() == 4 ? "NCHW" : "";
}

// One record per GPU layer: as the planning run placed and ran it, or (untimed) as the
// executor's rules predict it (device gpu or cpu (fallback), kernel from the op).
std::vector<engine::LayerRecord> gpu_layer_records(const ir::Model& gm,
                                                   const std::optional<PlanRun>& run) {
  const ir::Graph& g = gm.graph;
  const cuda::GpuCoverage cov = cuda::gpu_coverage(gm);
  std::string list;
  for (const auto& u : cov.unsupported) list += "\n  " + u;
  TRT_CHECK(cov.unsupported.empty(), ErrorCode::kInternal,
            "the GPU plan has {} layer(s) without a kernel:{}", cov.unsupported.size(), list);
  std::map<std::string, const cuda::FallbackNode*> fallback;
  for (const auto& f : cov.fallback) fallback[f.node] = &f;
  std::vector<engine::LayerRecord> layers;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    engine::LayerRecord r = precision::describe_layer(g, n);
    if (run) {
      r.device = run->placement.at(i);
      r.kernel = run->kernels.at(i);
      if (r.device == "gpu") r.layout = output_layout(g, n, r.kernel);
    } else if (auto f = fallback.find(n.name); f != fallback.end()) {
      r.device = "cpu (fallback)";
      r.kernel = "cpu." + f->second->op + " (fallback: " + f->second->reason + ")";
    } else {
      r.device = "gpu";
      r.kernel = cuda_kernel_label(g, n);
      r.tactic = kUntimed;
    }
    layers.push_back(std::move(r));
  }
  return layers;
}

}  // namespace

engine::GpuPlanData plan_gpu(const ir::Model& model, const BuildConfig& c,
                             const cuda::KernelSwitches& switches, int engine_sm,
                             const std::map<std::string, Shape>& plan_shapes, json& tactics,
                             BuildResult& result) {
  ir::Model gm = model;
  gm.graph = cuda::plan_gpu_graph(model.graph, model.opset());
  std::string why = why_untimed(c, engine_sm);
  std::optional<PlanRun> run;
  if (why.empty()) {
    try {
      run = run_planning(gm, c, switches, plan_shapes);
    } catch (const Error& e) {
      why = std::string("the planning run failed: ") + e.what();
      result.warnings.push_back("GPU tactics not timed at build, " + why);
      TRT_LOG_WARN("{}", result.warnings.back());
    }
  }
  if (run) {
    tactics = {{"state", "timed"},
               {"device", cuda::timing_device()},
               {"shapes", plan_shapes},
               {"choices", run->choices}};
    TRT_LOG_INFO("GPU tactics: {} kernel choice(s) timed at the opt shapes on {}",
                 run->choices.size(), cuda::device_status().name);
  } else {
    tactics = {{"state", "untimed"}, {"why", why}, {"note", kUntimed}};
    TRT_LOG_INFO("GPU tactics: {} ({})", kUntimed, why);
  }
  return {gm.graph, gpu_layer_records(gm, run)};
}

}  // namespace trtutils::builder
