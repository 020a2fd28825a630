// trtutils: the command-line front end. One file per subcommand (app.cpp wires them up); this
// file turns every error into one message on stderr and a non-zero exit code.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <new>

#include "commands.h"
#include "trtutils/file_util.h"
#include "trtutils/status.h"

int main(int argc, char** argv) {
  using namespace trtutils;
  install_interrupt_cleanup();  // SIGINT/SIGTERM: no temporary or partial output left behind
  const std::unique_ptr<CLI::App> app = cli::make_app();
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app->exit(e);  // --help, --version
    // One line, as every other error (CLI11 writes two, and quotes arguments unescaped), and
    // exit code 2 for a usage error, as the Python original's argparse does.
    std::string where = "trtutils";
    for (const CLI::App* sub = app.get(); !sub->get_subcommands().empty();) {
      sub = sub->get_subcommands().front();
      where += " " + sub->get_name();
    }
    std::fprintf(stderr, "error: %s (see `%s --help`)\n",
                 escape_control_characters(e.what()).c_str(), where.c_str());
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
