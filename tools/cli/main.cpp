// trtutils: the command-line front end. One file per subcommand; this file wires them up.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "trtutils/logging.h"
#include "trtutils/status.h"

int main(int argc, char** argv) {
  CLI::App app{"trtutils: ONNX -> reduced-precision engines"};
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
