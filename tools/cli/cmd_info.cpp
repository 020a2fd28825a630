// trtutils info [--json]: version, CPU, GPU (with SM version) and the platform flags.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "trtutils/platform.h"

namespace trtutils::cli {

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
                          {"IS_BLACKWELL", p.is_blackwell},
                          {"STRONGLY_TYPED_SUPPORTED", p.strongly_typed_supported},
                          {"backends", {"cpu"}}};
      fmt::print("{}\n", j.dump(2));
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
    fmt::print("Jetson: {}\n", p.is_jetson ? "yes" : "no");
    fmt::print("Backends: cpu{}\n",
               p.cuda_toolkit_at_build
                   ? " (CUDA toolkit present at build; CUDA backend not built yet)"
                   : "");
    fmt::print("IS_BLACKWELL: {}\n", p.is_blackwell ? "True" : "False");
    fmt::print("STRONGLY_TYPED_SUPPORTED: {}\n", p.strongly_typed_supported ? "True" : "False");
  });
}

}  // namespace trtutils::cli
