// The trtutils command line: global flags and every subcommand, wired up but not parsed. Kept
// apart from main() so that the argument parser can be exercised on its own (tests/fuzz).
#include <algorithm>
#include <memory>

#include "commands.h"
#include "trtutils/logging.h"

namespace trtutils::cli {

std::unique_ptr<CLI::App> make_app(bool run_commands) {
  auto app = std::make_unique<CLI::App>("trtutils: ONNX models to fast reduced-precision engines");
  app->require_subcommand(1);
  app->set_version_flag("--version", std::string("trtutils ") + TRTUTILS_VERSION);
  struct Verbosity {
    int verbose = 0;
    bool quiet = false;
    std::string max_memory;
  };
  auto v = std::make_shared<Verbosity>();
  app->add_flag("-v,--verbose", v->verbose, "more log output (repeat for more)");
  app->add_flag("-q,--quiet", v->quiet, "errors only");
  app->add_option("--max_memory", v->max_memory,
                  "refuse any tensor or model larger than this (e.g. 512M, 8G; default: physical "
                  "memory)");
  // -v, -q and --max_memory also after the subcommand (`trtutils run ... -v`): a subcommand hands
  // the flags it does not know to the app. Set before any subcommand is added (they inherit it).
  app->fallthrough();
  app->footer(
      "-v, -q and --max_memory go before or after the subcommand (`trtutils run ... -v`); "
      "`trtutils --help` lists them.");  // every subcommand's help inherits it
  app->parse_complete_callback([v, run_commands] {
    if (!v->max_memory.empty()) set_memory_limit(parse_byte_size(v->max_memory, "--max_memory"));
    // --verbose=N takes any int: clamp before adding (1 + INT_MAX overflowed: cli_fuzz).
    const int extra = std::clamp(v->verbose, 0, static_cast<int>(LogLevel::kVerbose) - 1);
    set_log_level(v->quiet ? LogLevel::kError : static_cast<LogLevel>(1 + extra));
    // Runs before any subcommand's callback: stop here, with the command line fully checked.
    if (!run_commands) throw CLI::Success();
  });
  add_run_command(*app);
  add_benchmark_command(*app);
  add_info_command(*app);
  add_generate_calibration_command(*app);
  add_quantize_command(*app);
  add_build_command(*app);
  add_build_yolo_command(*app);
  add_inspect_command(*app);
  add_can_run_on_dla_command(*app);
  add_build_dla_command(*app);
  add_calib_to_qdq_command(*app);
  add_detect_command(*app);
  add_classify_command(*app);
  add_compare_command(*app);
  add_debug_precision_command(*app);
  return app;
}

}  // namespace trtutils::cli
