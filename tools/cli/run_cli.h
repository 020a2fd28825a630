// The whole CLI as one call, for main() and for `python -m trtutils` (python/src/cli.cpp): parses
// argv (argv[0] is the program name), runs the subcommand and turns every error into one
// "error: ..." line on stderr. Returns the exit code: 0, 1 (a failure), 2 (a usage error or a
// rejected option combination, as argparse and the seed's ValueError).
#pragma once

namespace trtutils::cli {

int run_cli(int argc, const char* const* argv);

}  // namespace trtutils::cli
