// trtutils inspect --engine ENGINE [--json]: the engine's target, IO bindings (with profiles
// and formats), memory, and its layer table (layer, op, precision, device, kernel/tactic,
// shapes) with a count per precision.
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "trtutils/check.h"
#include "trtutils/engine.h"

namespace trtutils::cli {

namespace {

struct InspectOptions {
  std::string engine;
  bool json = false;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v)
    if (!x.empty()) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string dims(const EngineTensorInfo& t) {
  std::string s = "[";
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (d) s += ", ";
    s += t.shape[d] >= 0
             ? std::to_string(t.shape[d])
             : (d < t.dim_names.size() && !t.dim_names[d].empty() ? t.dim_names[d] : "?");
  }
  return s + "]";
}

void inspect(const InspectOptions& o) {
  auto engine = Engine::load(o.engine, {.backend = "cpu"});
  const nlohmann::json info = nlohmann::json::parse(engine->info_json());
  std::map<std::string, int64_t> per_precision;
  for (const auto& l : engine->layers()) ++per_precision[l.precision];
  if (o.json) {
    nlohmann::json j;
    j["engine"] = o.engine;
    j["backend"] = engine->backend();
    j["target_sm"] = engine->target_sm();
    j["strongly_typed"] = engine->strongly_typed();
    j["weight_bytes"] = engine->weight_bytes();
    j["activation_arena_bytes"] = engine->activation_arena_bytes();
    auto io = [](const std::vector<EngineTensorInfo>& v) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& t : v)
        a.push_back({{"name", t.name},
                     {"dtype", std::string(dtype_name(t.dtype))},
                     {"shape", t.shape},
                     {"format", t.format},
                     {"min", t.min_shape},
                     {"opt", t.opt_shape},
                     {"max", t.max_shape}});
      return a;
    };
    j["inputs"] = io(engine->inputs());
    j["outputs"] = io(engine->outputs());
    j["layers_per_precision"] = per_precision;
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& l : engine->layers())
      layers.push_back({{"index", l.index},
                        {"name", l.name},
                        {"op", l.op},
                        {"precision", l.precision},
                        {"device", l.device},
                        {"kernel", l.kernel},
                        {"tactic", l.tactic},
                        {"inputs", l.inputs},
                        {"outputs", l.outputs},
                        {"input_shapes", l.input_shapes},
                        {"output_shapes", l.output_shapes}});
    j["layers"] = layers;
    j["build"] = info;
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  fmt::print("engine: {}\n", o.engine);
  fmt::print("backend: {} (target SM {}), runs here on: {}\n", engine->backend(),
             engine->target_sm(), engine->runtime_backend());
  fmt::print("typing: {}\n", engine->strongly_typed() ? "strongly typed" : "weakly typed");
  if (info.contains("gpu_switches") && !info["gpu_switches"].empty()) {
    std::string sw;
    for (const auto& [k, v] : info["gpu_switches"].items())
      sw += fmt::format(" {}={}", k, v.get<std::string>());
    fmt::print("GPU kernel switches (recorded at build):{}\n", sw);
  }
  if (info.contains("calibration") && info["calibration"].value("source", "none") != "none")
    fmt::print("calibration: {}\n", info["calibration"].dump());
  fmt::print("memory: weights {:.2f} MiB, activation arena {:.2f} MiB\n",
             static_cast<double>(engine->weight_bytes()) / (1 << 20),
             static_cast<double>(engine->activation_arena_bytes()) / (1 << 20));
  for (const auto* list : {&engine->inputs(), &engine->outputs()}) {
    const bool in = list == &engine->inputs();
    for (const auto& t : *list) {
      fmt::print("{} '{}': {} {} {}", in ? "input" : "output", t.name, dtype_name(t.dtype), dims(t),
                 t.format);
      if (!t.min_shape.empty())
        fmt::print(" profile min {} opt {} max {}", shape_str(t.min_shape), shape_str(t.opt_shape),
                   shape_str(t.max_shape));
      fmt::print("\n");
    }
  }
  std::string counts;
  for (const auto& [p, n] : per_precision)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, p);
  fmt::print("layers: {} ({})\n", engine->layers().size(), counts);
  fmt::print("{:>4}  {:<36} {:<24} {:<9} {:<6} {:<28} {}\n", "#", "layer", "op", "precision",
             "device", "kernel", "shapes (inputs -> outputs)");
  for (const auto& l : engine->layers()) {
    std::string name = l.name.size() > 36 ? l.name.substr(0, 33) + "..." : l.name;
    std::string kernel = l.kernel + (l.tactic.empty() ? "" : "/" + l.tactic);
    fmt::print("{:>4}  {:<36} {:<24} {:<9} {:<6} {:<28} {} -> {}\n", l.index, name, l.op,
               l.precision, l.device, kernel, join(l.input_shapes), join(l.output_shapes));
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Show an engine's bindings and layers");
  sub->add_option("--engine", o->engine, "engine file")->required();
  sub->add_flag("--json", o->json, "print everything as JSON");
  sub->callback([o] { inspect(*o); });
}

}  // namespace trtutils::cli
