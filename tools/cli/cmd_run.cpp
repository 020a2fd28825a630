// trtutils run (--engine ENGINE | --onnx MODEL) [--input NAME=FILE.npy ...] --output_dir DIR
//              [--seed N] [--threads N] [--timing_cache FILE|global]
#include <chrono>
#include <filesystem>
#include <fstream>

#include "commands.h"
#include "flag_ranges.h"
#include "trtutils/check.h"
#include "trtutils/engine.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"
#include "trtutils/npy.h"
#include "trtutils/onnx_session.h"

namespace trtutils::cli {

namespace {
// "VmRSS"/"VmHWM" of this process in MiB (0 if unknown), for -v diagnostics.
double proc_status_mib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(line.find(':') + 1)) / 1024.0;
  return 0;
}

struct RunOptions {
  std::string onnx;
  std::string engine;
  std::string backend = "auto";
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  std::string output_dir = ".";
  uint64_t seed = 0;
  int threads = 0;
  bool reference = false;
  std::string timing_cache;
};

// <output_dir>/<output name>.npy per output. None may be one of the command's input files
// (refused before the model runs).
std::map<std::string, std::filesystem::path> output_paths(const RunOptions& o,
                                                          const std::vector<std::string>& names) {
  std::map<std::string, std::filesystem::path> paths;
  for (const auto& name : names) {
    const auto path = std::filesystem::path(o.output_dir) / (sanitize_file_name(name) + ".npy");
    check_output_is_not_an_input("--output_dir", path, o.engine.empty() ? "--onnx" : "--engine",
                                 o.engine.empty() ? o.onnx : o.engine, o.inputs);
    paths[name] = path;
  }
  return paths;
}

void write_outputs(const std::map<std::string, Tensor>& outputs,
                   const std::map<std::string, std::filesystem::path>& paths) {
  for (const auto& [name, t] : outputs) {
    const auto& path = paths.at(name);
    npy_save(path, t);
    fmt::print("output '{}': {} {} -> {}\n", name, dtype_name(t.dtype()), shape_str(t.shape()),
               path.string());
  }
}

void run(const RunOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  TRT_CHECK_ARG(fs::is_directory(o.output_dir, ec) || fs::create_directories(o.output_dir, ec),
                "--output_dir '{}' cannot be created: {}", o.output_dir, ec.message());
  TRT_CHECK_ARG(o.onnx.empty() != o.engine.empty(), "give exactly one of --engine and --onnx");
  if (!o.engine.empty()) {
    auto engine = Engine::load(o.engine, {.backend = o.backend});
    auto ctx = engine->create_execution_context(
        {.num_threads = o.threads, .timing_cache = o.timing_cache});
    std::vector<std::string> names;
    for (const auto& out : engine->outputs()) names.push_back(out.name);
    const auto paths = output_paths(o, names);
    auto feeds = make_feeds(with_shapes(engine_inputs(*engine), o.shapes), o.inputs, o.seed);
    const auto t0 = std::chrono::steady_clock::now();
    auto outputs = ctx->execute(feeds);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    write_outputs(outputs, paths);
    fmt::print("ran in {:.2f} ms on {} (weights {:.1f} MiB, peak activations {:.1f} MiB)\n", ms,
               engine->runtime_backend(), static_cast<double>(engine->weight_bytes()) / (1 << 20),
               static_cast<double>(ctx->peak_activation_bytes()) / (1 << 20));
    return;
  }
  OnnxSession session(o.onnx, {.num_threads = o.threads, .use_reference = o.reference});
  TRT_LOG_INFO("model loaded: RSS {:.1f} MiB (peak {:.1f} MiB)", proc_status_mib("VmRSS"),
               proc_status_mib("VmHWM"));
  std::vector<std::string> names;
  for (const auto& out : session.outputs()) names.push_back(out.name);
  const auto paths = output_paths(o, names);
  auto feeds = make_feeds(with_shapes(session.inputs(), o.shapes), o.inputs, o.seed);
  const auto t0 = std::chrono::steady_clock::now();
  auto outputs = session.run(feeds);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  write_outputs(outputs, paths);
  TRT_LOG_INFO("after the run: RSS {:.1f} MiB (peak {:.1f} MiB)", proc_status_mib("VmRSS"),
               proc_status_mib("VmHWM"));
  fmt::print("ran in {:.2f} ms (weights {:.1f} MiB, peak activations {:.1f} MiB)\n", ms,
             static_cast<double>(session.weight_bytes()) / (1 << 20),
             static_cast<double>(session.peak_activation_bytes()) / (1 << 20));
}
}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub =
      app.add_subcommand("run", "Run an engine (or an ONNX model), write outputs as .npy");
  auto* eng = sub->add_option("--engine", o->engine, "engine file (from `trtutils build`)");
  sub->add_option("--onnx", o->onnx, "ONNX model to run directly on the CPU backend")
      ->excludes(eng);
  sub->add_option("--backend", o->backend, "engine runtime: auto, cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  sub->add_option("--shapes", o->shapes,
                  "NAME:1x3x224x224: the shape of a dynamic input's random data (repeatable)");
  sub->add_option("--input", o->inputs,
                  "NAME=FILE.npy for each input (one input may be left out: it gets random data)");
  sub->add_option("--output_dir", o->output_dir, "folder for <output name>.npy files")
      ->capture_default_str();
  add_seed_flag(sub, o->seed);
  add_threads_flag(sub, o->threads, "CPU threads");
  sub->add_flag("--reference", o->reference, "use the plain reference kernels only");
  sub->add_option("--timing_cache", o->timing_cache,
                  "CUDA engines: timing cache file (or 'global') for the kernel choices the engine "
                  "does not carry, timed on the first run (read, and written back when something "
                  "new was timed)");
  sub->callback([o] { run(*o); });
}

}  // namespace trtutils::cli
