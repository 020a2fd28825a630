// trtutils: the command-line front end. One file per subcommand (app.cpp wires them up);
// run_cli.cpp turns every error into one message on stderr and a non-zero exit code.
#include "run_cli.h"
#include "trtutils/file_util.h"
#include "wait_policy.h"

int main(int argc, char** argv) {
  trtutils::cli::reexec_with_openmp_wait_policy(argv);  // returns at once on the second start
  trtutils::install_interrupt_cleanup();  // SIGINT/SIGTERM: no temporary or partial output left
  return trtutils::cli::run_cli(argc, argv);
}
