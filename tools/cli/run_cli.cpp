// run_cli: parse, run, and one message per error (see run_cli.h).
#include "run_cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <new>

#include "commands.h"
#include "parse_messages.h"
#include "trtutils/status.h"

namespace trtutils::cli {

namespace {

int run_parsed(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, as every other error (CLI11 writes two, and quotes arguments unescaped), and
    // exit code 2 for a usage error, as the Python original's argparse does; unknown names get
    // a suggestion (parse_messages.h).
    std::string where = "trtutils";
    for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
      sub = sub->get_subcommands().front();
      where += " " + sub->get_name();
    }
    const std::string message = parse_error_message(app, e, argc, argv);
    std::fprintf(stderr, "error: %s (see `%s --help`)\n",
                 escape_control_characters(message).c_str(), where.c_str());
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return e.code() == ErrorCode::kConfig ? 2 : 1;  // 2: a rejected option combination
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int run_cli(int argc, const char* const* argv) {
  const std::unique_ptr<CLI::App> app = make_app();
  const int code = run_parsed(*app, argc, argv);
  // An embedding process (Python) has its own buffered streams: ours are complete on return.
  std::fflush(stdout);
  std::fflush(stderr);
  return code;
}

}  // namespace trtutils::cli
