// trtutils run --onnx MODEL [--input NAME=FILE.npy ...] --output_dir DIR [--seed N] [--threads N]
#include <chrono>
#include <filesystem>
#include <fstream>

#include "commands.h"
#include "core/check.h"
#include "engine/session.h"
#include "trtutils/logging.h"
#include "trtutils/npy.h"

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
  std::vector<std::string> inputs;
  std::string output_dir = ".";
  uint64_t seed = 0;
  int threads = 0;
  bool reference = false;
};

void run(const RunOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  TRT_CHECK_ARG(fs::is_directory(o.output_dir, ec) || fs::create_directories(o.output_dir, ec),
                "--output_dir '{}' cannot be created: {}", o.output_dir, ec.message());
  Session session =
      Session::from_file(o.onnx, {.num_threads = o.threads, .use_reference = o.reference});
  TRT_LOG_INFO("model loaded: RSS {:.1f} MiB (peak {:.1f} MiB)", proc_status_mib("VmRSS"),
               proc_status_mib("VmHWM"));
  auto feeds = make_feeds(session, o.inputs, o.seed);
  const auto t0 = std::chrono::steady_clock::now();
  auto outputs = session.run(feeds);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& [name, t] : outputs) {
    const fs::path path = fs::path(o.output_dir) / (sanitize_file_name(name) + ".npy");
    npy_save(path, t);
    fmt::print("output '{}': {} {} -> {}\n", name, dtype_name(t.dtype()), shape_str(t.shape()),
               path.string());
  }
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
      app.add_subcommand("run", "Run an ONNX model on the CPU backend, write outputs as .npy");
  sub->add_option("--onnx", o->onnx, "ONNX model to run")->required();
  sub->add_option("--input", o->inputs,
                  "NAME=FILE.npy for each input (one input may be left out: it gets random data)");
  sub->add_option("--output_dir", o->output_dir, "folder for <output name>.npy files")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "seed of the random input data")->capture_default_str();
  sub->add_option("--threads", o->threads, "CPU threads (0: all cores)")->capture_default_str();
  sub->add_flag("--reference", o->reference, "use the plain reference kernels only");
  sub->callback([o] { run(*o); });
}

}  // namespace trtutils::cli
