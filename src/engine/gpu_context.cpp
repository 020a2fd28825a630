#include "engine/gpu_context.h"

#include "engine/session.h"
#include "engine/tactics.h"
#include "trtutils/logging.h"

namespace trtutils::engine {

namespace {

// Recorded choices were timed on the device the builder ran on; another one of the same SM
// takes them as they are (a recorded cuBLASLt candidate it does not offer is timed again).
void note_tactic_device(const nlohmann::json& tactics) {
  const std::string built = tactics.value("device", "");
  const std::string here = cuda::timing_device();
  if (!built.empty() && built != here)
    TRT_LOG_INFO("GPU tactics were timed on '{}', this is '{}': running them as recorded", built,
                 here);
}

}  // namespace

std::map<std::string, std::string> recorded_gpu_tactics(const nlohmann::json& info) {
  std::map<std::string, std::string> r;
  auto t = info.find("gpu_tactics");
  if (t == info.end() || !t->contains("choices")) return r;
  for (const auto& [what, choice] : (*t)["choices"].items()) r[what] = choice.get<std::string>();
  return r;
}

GpuExecutorPlan gpu_executor_plan(const EngineData& engine, const ContextOptions& context) {
  const nlohmann::json& info = engine.info;
  GpuExecutorPlan p{engine.model, {}};
  cuda::ExecutorOptions& eo = p.options;
  eo.profile = context.profile;
  eo.no_data_transfers = context.no_data_transfers;
  eo.allow_tf32 = info.value("tf32", false);
  eo.allow_fallback = !info.value("no_fallback", false);
  // Exactly the kernel switches the builder recorded: the environment changes nothing.
  eo.switches.use_environment = false;
  if (auto it = info.find("gpu_switches"); it != info.end())
    eo.switches.values = it->get<std::map<std::string, std::string, std::less<>>>();
  if (!context.timing_cache.empty())
    eo.timing_cache = context.timing_cache == "global"
                          ? global_timing_cache_path()
                          : std::filesystem::path(context.timing_cache);
  if (context.mark_all_outputs) {
    mark_every_node_output(p.model.graph);
  } else if (engine.gpu) {
    p.model.graph = engine.gpu->graph;
    eo.graph_is_fused = true;
    eo.tactics = recorded_gpu_tactics(info);
    if (!eo.tactics.empty()) note_tactic_device(info["gpu_tactics"]);
  }
  return p;
}

}  // namespace trtutils::engine
