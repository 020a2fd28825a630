// trtutils info [--json]: version, CPU, GPU (with SM version) and the platform flags.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "trtutils/platform.h"

namespace trtutils::cli {

namespace {
// Each backend: usable here, STRONGLY_TYPED_SUPPORTED, and what was found.
nlohmann::json backends_json() {
  nlohmann::json a = nlohmann::json::array();
  for (const BackendInfo& b : backend_info()) {
    nlohmann::json j = {{"name", b.name},
                        {"usable", b.usable},
                        {"strongly_typed_supported", b.strongly_typed_supported}};
    if (!b.detail.empty()) j["detail"] = b.detail;
    a.push_back(std::move(j));
  }
  return a;
}
}  // namespace

void add_info_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* sub =
      app.add_subcommand("info", "Show the version, the hardware and the platform flags");
  sub->add_flag("--json", *json, "print as JSON");
  sub->callback([json] {
    const PlatformInfo& p = platform_info();
    const bool gpu = p.gpu_count > 0;
    const std::string sm = gpu ? fmt::format("{}.{}", p.gpu.sm_major, p.gpu.sm_minor) : "";
    if (*json) {
      nlohmann::json j = {{"version", p.version},
                          {"cpu", p.cpu_model},
                          {"cpu_cores", p.cpu_cores},
                          {"gpu_count", p.gpu_count},
                          {"gpu", gpu ? nlohmann::json{{"name", p.gpu.name},
                                                       {"sm", sm},
                                                       {"memory_bytes", p.gpu.total_memory_bytes}}
                                      : nlohmann::json(nullptr)},
                          {"is_jetson", p.is_jetson},
                          {"board_model", p.board_model},
                          {"IS_BLACKWELL", p.is_blackwell},
                          {"STRONGLY_TYPED_SUPPORTED", p.strongly_typed_supported},
                          {"backends", backends_json()}};
      fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
      return;
    }
    fmt::print("trtutils {}\n", p.version);
    fmt::print("CPU: {} ({} cores)\n", p.cpu_model, p.cpu_cores);
    if (gpu) {
      fmt::print("GPU: {} (SM {}, {:.1f} GiB), {} device(s)\n", p.gpu.name, sm,
                 static_cast<double>(p.gpu.total_memory_bytes) / (1 << 30), p.gpu_count);
    } else {
      fmt::print("GPU: none ({})\n", p.gpu_status);
    }
    fmt::print("Jetson: {}{}\n", p.is_jetson ? "yes" : "no",
               p.board_model.empty() ? "" : " (" + p.board_model + ")");
    for (const auto& b : backends_json())
      fmt::print("backend {}: {} (STRONGLY_TYPED_SUPPORTED: {}){}\n", b["name"].get<std::string>(),
                 b["usable"].get<bool>() ? "usable" : "not usable",
                 b["strongly_typed_supported"].get<bool>() ? "True" : "False",
                 b.value("detail", "").empty() ? "" : " - " + b.value("detail", ""));
    fmt::print("IS_BLACKWELL: {}\n", p.is_blackwell ? "True" : "False");
    fmt::print("STRONGLY_TYPED_SUPPORTED: {}\n", p.strongly_typed_supported ? "True" : "False");
  });
}

}  // namespace trtutils::cli
