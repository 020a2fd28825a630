// How idle OpenMP threads wait, for the trtutils executable.
//
// libgomp (and oneDNN, which Debian builds on libgomp) lets an idle thread spin for ~300,000
// iterations (a few ms) before it sleeps. On a machine where other processes want the cores
// that spinning takes the CPU from the thread that has work, and --threads 0 (all cores) became
// up to 20x slower than --threads 1 (bench/RESULTS.md, issue 33). Sleeping at once
// (OMP_WAIT_POLICY=PASSIVE) costs a wake-up per parallel region instead, tens of microseconds
// each on a virtual machine: MobileNetV2 at batch 1 on 2 idle cores took 7.1 ms sleeping and
// 4.6-5.3 ms spinning for ~0.1 ms (issue 36). So the executable looks at the machine when it
// starts: with a free core for each of its threads it spins briefly (GOMP_SPINCOUNT=10000),
// otherwise its idle threads sleep at once. libgomp reads both variables in its constructor,
// before main(): a setenv() in main() is too late, and so is one in the executable's
// .preinit_array (glibc's own initializer then resets environ to the original environment
// block before libgomp's runs), hence the re-exec.
#pragma once

#include <string>

namespace trtutils::cli {

// The spin count idle threads get with free cores to spare: ~0.1 ms at libgomp's estimate of
// 100,000 spins per millisecond, enough to bridge one layer's end and the next one's start.
inline constexpr const char* kBriefSpinCount = "10000";

// The choice for `threads` threads (0: all cores) on `cpus` usable cores with `running_elsewhere`
// other runnable threads: "spin" when every thread has a core to itself, else "passive".
std::string choose_openmp_wait(int cpus, int running_elsewhere, int threads);

// The --threads value in argv (0 when absent or unreadable: all cores).
int threads_argument(char** argv);

// Where neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set: sets GOMP_SPINCOUNT=kBriefSpinCount
// or OMP_WAIT_POLICY=PASSIVE (choose_openmp_wait on /proc/stat's procs_running, the fewest of a
// few samples) and re-executes this program (/proc/self/exe, same argv and pid) once, so that
// libgomp starts with it. The variable being set is the guard: the second start sees it and
// returns at once, as does every start where the user chose a policy. Returns (and the process
// runs on with libgomp's default) when the re-exec cannot be done. Call first thing in main(),
// before any thread starts.
void reexec_with_openmp_wait_policy(char** argv);

}  // namespace trtutils::cli
