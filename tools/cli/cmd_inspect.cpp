// trtutils inspect --engine ENGINE [--wide] [--json]: the versions (this trtutils, the engine
// file format, the trtutils that wrote it), the engine's target, IO bindings (with profiles and
// formats), memory, and its layer table with a count per precision (GPU engines: the stored GPU
// plan's layers, whether its kernel choices were timed at build). The table is narrow by
// default (layer names whole, for --layer_precision); --wide adds kernels and shapes; --json is
// engine_inspect_json(), which the Python inspect_engine returns too.
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "inspect_table.h"
#include "trtutils/check.h"
#include "trtutils/engine.h"
#include "trtutils/engine_inspect.h"

namespace trtutils::cli {

namespace {

struct InspectOptions {
  std::string engine;
  bool wide = false;
  bool json = false;
};

std::string inspect_dims(const EngineTensorInfo& t) {
  std::string s = "[";
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (d) s += ", ";
    s += t.shape[d] >= 0
             ? std::to_string(t.shape[d])
             : (d < t.dim_names.size() && !t.dim_names[d].empty() ? t.dim_names[d] : "?");
  }
  return s + "]";
}

void inspect_print_versions(const Engine& engine) {
  fmt::print("trtutils: {}; engine file format version {} (written by {})\n", library_version(),
             engine.format_version(), engine.producer().empty() ? "?" : engine.producer());
}

// Whether the GPU layers below are the stored plan and whether their kernel choices were timed.
void inspect_print_gpu_plan(const Engine& engine, const nlohmann::json& info) {
  if (!engine.has_gpu_plan()) {
    fmt::print(
        "GPU plan: not stored (engine format {}): the CUDA executor fuses and times at "
        "load\n",
        engine.format_version());
    return;
  }
  const nlohmann::json t = info.value("gpu_tactics", nlohmann::json::object());
  if (t.value("state", "") == "timed")
    fmt::print("GPU plan: stored; tactics timed at build on {} ({} kernel choices)\n",
               t.value("device", "?"), t.value("choices", nlohmann::json::object()).size());
  else
    fmt::print("GPU plan: stored; tactics untimed (timed on first load): {}\n",
               t.value("why", "?"));
}

void inspect_print_build(const Engine& engine) {
  const nlohmann::json info = nlohmann::json::parse(engine.info_json());
  fmt::print("backend: {} (target SM {}), runs here on: {}\n", engine.backend(), engine.target_sm(),
             engine.runtime_backend());
  fmt::print("typing: {}\n", engine.strongly_typed() ? "strongly typed" : "weakly typed");
  if (info.contains("gpu_switches") && !info["gpu_switches"].empty()) {
    std::string sw;
    for (const auto& [k, v] : info["gpu_switches"].items())
      sw += fmt::format(" {}={}", k, v.get<std::string>());
    fmt::print("GPU kernel switches (recorded at build):{}\n", sw);
  }
  if (engine.backend() == "cuda") inspect_print_gpu_plan(engine, info);
  if (info.contains("calibration") && info["calibration"].value("source", "none") != "none")
    fmt::print("calibration: {}\n", info["calibration"].dump());
  fmt::print("memory: weights {:.2f} MiB, activation arena {:.2f} MiB\n",
             static_cast<double>(engine.weight_bytes()) / (1 << 20),
             static_cast<double>(engine.activation_arena_bytes()) / (1 << 20));
}

void inspect_print_bindings(const Engine& engine) {
  for (const auto* list : {&engine.inputs(), &engine.outputs()}) {
    const bool in = list == &engine.inputs();
    for (const auto& t : *list) {
      fmt::print("{} '{}': {} {} {}", in ? "input" : "output", t.name, dtype_name(t.dtype),
                 inspect_dims(t), t.format);
      if (!t.min_shape.empty())
        fmt::print(" profile min {} opt {} max {}", shape_str(t.min_shape), shape_str(t.opt_shape),
                   shape_str(t.max_shape));
      fmt::print("\n");
    }
  }
}

void inspect_print_layers(const Engine& engine, bool wide) {
  std::map<std::string, int64_t> per_precision;
  for (const auto& l : engine.layers()) ++per_precision[l.precision];
  std::string counts;
  for (const auto& [p, n] : per_precision)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, p);
  fmt::print("layers: {} ({}){}\n", engine.layers().size(), counts,
             wide ? "" : "; kernels, tactics and shapes: --wide or --json");
  fmt::print("{}",
             wide ? inspect_wide_table(engine.layers()) : inspect_narrow_table(engine.layers()));
}

void inspect(const InspectOptions& o) {
  auto engine = Engine::load(o.engine, {.backend = "cpu"});
  if (o.json) {
    fmt::print("{}\n", engine_inspect_json(*engine));
    return;
  }
  fmt::print("engine: {}\n", o.engine);
  inspect_print_versions(*engine);
  inspect_print_build(*engine);
  inspect_print_bindings(*engine);
  inspect_print_layers(*engine, o.wide);
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Show an engine's bindings and layers");
  sub->add_option("--engine", o->engine, "engine file")->required();
  sub->add_flag("--wide", o->wide,
                "the full layer table: also kernel/tactic and shapes (about 200 columns)");
  sub->add_flag("--json", o->json, "print everything as JSON");
  sub->callback([o] { inspect(*o); });
}

}  // namespace trtutils::cli
