// trtutils: the command-line front end. One file per subcommand; this file wires them up and
// turns every error into one message on stderr and a non-zero exit code.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <new>

#include "commands.h"
#include "trtutils/logging.h"
#include "trtutils/status.h"

int main(int argc, char** argv) {
  using namespace trtutils;
  CLI::App app{"trtutils: ONNX models to fast reduced-precision engines"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("trtutils ") + TRTUTILS_VERSION);
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "more log output (repeat for more)");
  app.add_flag("-q,--quiet", quiet, "errors only");
  app.parse_complete_callback([&] {
    set_log_level(quiet ? LogLevel::kError
                        : static_cast<LogLevel>(
                              std::min(1 + verbosity, static_cast<int>(LogLevel::kVerbose))));
  });
  cli::add_run_command(app);
  cli::add_benchmark_command(app);
  cli::add_info_command(app);
  cli::add_generate_calibration_command(app);
  cli::add_quantize_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
