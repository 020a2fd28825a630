#include "trtutils/engine_inspect.h"

#include <map>
#include <nlohmann/json.hpp>

namespace trtutils {

namespace {

using nlohmann::json;

json tensor_list_json(const std::vector<EngineTensorInfo>& tensors) {
  json a = json::array();
  for (const auto& t : tensors)
    a.push_back({{"name", t.name},
                 {"dtype", std::string(dtype_name(t.dtype))},
                 {"shape", t.shape},
                 {"format", t.format},
                 {"min", t.min_shape},
                 {"opt", t.opt_shape},
                 {"max", t.max_shape}});
  return a;
}

json layer_list_json(const std::vector<EngineLayerInfo>& layers) {
  json a = json::array();
  for (const auto& l : layers)
    a.push_back({{"index", l.index},
                 {"name", l.name},
                 {"op", l.op},
                 {"precision", l.precision},
                 {"device", l.device},
                 {"kernel", l.kernel},
                 {"tactic", l.tactic},
                 {"layout", l.layout},
                 {"inputs", l.inputs},
                 {"outputs", l.outputs},
                 {"input_shapes", l.input_shapes},
                 {"output_shapes", l.output_shapes}});
  return a;
}

// GPU engines: where the layer table comes from and whether its kernel choices were timed.
json gpu_plan_json(const Engine& engine, const json& info) {
  const json tactics = info.value("gpu_tactics", json::object());
  const bool timed = tactics.value("state", "") == "timed";
  return {{"stored", engine.has_gpu_plan()},
          {"layers", engine.has_gpu_plan() ? "gpu_graph (as stored at build)"
                                           : "graph (fused by the CUDA executor at load)"},
          {"tactics", timed ? "timed at build" : "untimed (timed on first load)"},
          {"timed_choices", timed ? tactics.value("choices", json::object()).size() : 0},
          {"timed_on", tactics.value("device", "")}};
}

}  // namespace

const char* library_version() {
  return TRTUTILS_VERSION;
}

std::string engine_inspect_json(const Engine& engine) {
  std::map<std::string, int64_t> per_precision;
  for (const auto& l : engine.layers()) ++per_precision[l.precision];
  json j;
  j["engine"] = engine.path().string();
  j["trtutils_version"] = library_version();
  j["engine_format_version"] = engine.format_version();
  j["engine_producer"] = engine.producer();
  j["backend"] = engine.backend();
  j["target_sm"] = engine.target_sm();
  j["strongly_typed"] = engine.strongly_typed();
  j["weight_bytes"] = engine.weight_bytes();
  j["activation_arena_bytes"] = engine.activation_arena_bytes();
  j["inputs"] = tensor_list_json(engine.inputs());
  j["outputs"] = tensor_list_json(engine.outputs());
  j["layers_per_precision"] = per_precision;
  j["layers"] = layer_list_json(engine.layers());
  j["build"] = json::parse(engine.info_json());
  if (engine.backend() == "cuda") j["gpu_plan"] = gpu_plan_json(engine, j["build"]);
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace trtutils
