// The re-exec with OMP_WAIT_POLICY=PASSIVE (see wait_policy.h).
#include "wait_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace trtutils::cli {

void reexec_with_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (::setenv("OMP_WAIT_POLICY", "PASSIVE", 0) != 0) return;
  ::execv("/proc/self/exe", argv);
  // Only reached when the exec failed (no /proc): run on, spinning as libgomp does by default.
  ::unsetenv("OMP_WAIT_POLICY");
}

}  // namespace trtutils::cli
