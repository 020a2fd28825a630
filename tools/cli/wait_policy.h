// OpenMP idle threads that sleep instead of spinning, for the trtutils executable.
//
// libgomp (and oneDNN, which Debian builds on libgomp) lets an idle thread spin for ~300,000
// iterations (a few ms) before it sleeps. On a machine where other processes want the cores
// that spinning takes the CPU from the thread that has work, and --threads 0 (all cores) became
// up to 20x slower than --threads 1 (bench/RESULTS.md, issue 33). OMP_WAIT_POLICY=PASSIVE makes
// idle threads sleep at once, but libgomp reads it in its constructor, before main(): a setenv()
// in main() is too late, and so is one in the executable's .preinit_array (glibc's own
// initializer then resets environ to the original environment block before libgomp's runs).
#pragma once

namespace trtutils::cli {

// Where neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set: sets OMP_WAIT_POLICY=PASSIVE and
// re-executes this program (/proc/self/exe, same argv and pid) once, so that libgomp starts with
// it. The variable being set is the guard: the second start sees it and returns at once, as does
// every start where the user chose a policy. Returns (and the process runs on with libgomp's
// default) when the re-exec cannot be done. Call first thing in main(), before any thread starts.
void reexec_with_passive_openmp_wait(char** argv);

}  // namespace trtutils::cli
