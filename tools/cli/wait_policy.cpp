// The re-exec with an OpenMP wait policy chosen from the machine's load (see wait_policy.h).
#include "wait_policy.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace trtutils::cli {
namespace {

int usable_cpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Runnable threads on the machine right now, this one included (-1 when /proc is unreadable).
int procs_running() {
  std::ifstream stat("/proc/stat");
  std::string key;
  long value = 0;
  while (stat >> key) {
    if (key == "procs_running" && stat >> value) return static_cast<int>(value);
    stat.ignore(1 << 20, '\n');
  }
  return -1;
}

// Other runnable threads: the fewest of five samples 1 ms apart, less this one. The fewest, since
// a process that competes for the cores runs in every sample, while the commands of a shell
// pipeline started with this one (`trtutils ... | grep`) run only while they start.
int running_elsewhere() {
  int fewest = -1;
  for (int i = 0; i < 5; ++i) {
    if (i) ::usleep(1000);
    const int n = procs_running();
    if (n < 0) return -1;
    fewest = fewest < 0 ? n : std::min(fewest, n);
  }
  return std::max(0, fewest - 1);
}

}  // namespace

std::string choose_openmp_wait(int cpus, int running_elsewhere, int threads) {
  if (cpus < 1 || running_elsewhere < 0) return "passive";  // nothing known: the safe choice
  const int ours = threads <= 0 ? cpus : std::min(threads, cpus);
  return running_elsewhere + ours <= cpus ? "spin" : "passive";
}

int threads_argument(char** argv) {
  for (int i = 1; argv[i]; ++i) {
    const char* value = nullptr;
    if (std::strcmp(argv[i], "--threads") == 0)
      value = argv[i + 1];
    else if (std::strncmp(argv[i], "--threads=", 10) == 0)
      value = argv[i] + 10;
    if (!value) continue;
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    return end != value && *end == '\0' && n > 0 && n < 1 << 20 ? static_cast<int>(n) : 0;
  }
  return 0;
}

void reexec_with_openmp_wait_policy(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  const bool spin =
      choose_openmp_wait(usable_cpus(), running_elsewhere(), threads_argument(argv)) == "spin";
  const char* name = spin ? "GOMP_SPINCOUNT" : "OMP_WAIT_POLICY";
  if (::setenv(name, spin ? kBriefSpinCount : "PASSIVE", 0) != 0) return;
  ::execv("/proc/self/exe", argv);
  // Only reached when the exec failed (no /proc): run on, spinning as libgomp does by default.
  ::unsetenv(name);
}

}  // namespace trtutils::cli
