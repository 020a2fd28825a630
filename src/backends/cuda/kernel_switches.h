// The CUDA backend's kernel switches: the A/B options of its kernels and fusions
// (TRTUTILS_CUDA_FUSION=0, TRTUTILS_CUDA_IGEMM=force, TRTUTILS_CUDA_NHWC_MIN_BATCH=16, ...),
// which used to be read from the environment whenever an engine was loaded, so that the same
// engine file ran different kernels on different machines or shells.
//
// Now the builder records them in a GPU engine (its info "gpu_switches": the TRTUTILS_CUDA_*
// variables set at build time and `build --gpu_switch NAME=VALUE`), and the runtime executes an
// engine with exactly those: the environment at load and run time changes nothing. An Executor
// made directly from a model (tests, bench tools) reads the environment, as before, unless its
// options say otherwise.
//
// Code asks for a switch by its variable name; the answer comes from the switches of the
// Executor (or builder step) running on this thread, set by a SwitchScope. Plain C++ (no
// trtutils headers), so that the .cu launchers may ask too.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace trtutils::cuda {

struct KernelSwitches {
  // "TRTUTILS_CUDA_FUSION" -> "0": switches whose value is fixed (looked up without a copy of
  // the name: some launchers ask at every launch).
  std::map<std::string, std::string, std::less<>> values;
  // For names not in `values`: the environment (true), or the default (false: engines).
  bool use_environment = true;
};

// Sets the switches in effect on this thread until destroyed (then the previous ones again).
class SwitchScope {
 public:
  explicit SwitchScope(const KernelSwitches* switches);
  ~SwitchScope();
  SwitchScope(const SwitchScope&) = delete;
  SwitchScope& operator=(const SwitchScope&) = delete;

 private:
  const KernelSwitches* previous_;
};

// The value of switch `name` ("TRTUTILS_CUDA_WGMMA") in effect: the scope's fixed value, else
// the environment's (when the scope reads it, or outside any scope), else nullptr (the
// default). The pointer stays valid while the scope's switches live.
const char* switch_value(const char* name);

// Every TRTUTILS_CUDA_* variable of the environment but the build's TRTUTILS_CUDA_ARCHS, the
// debugging TRTUTILS_CUDA_SYNC and the bench tools' MODELS / REPORT (known or not: the builder
// warns about names that are no switch).
KernelSwitches switches_from_environment();

// The names of the kernel switches the backend reads ("TRTUTILS_CUDA_FUSION", ...), sorted.
const std::vector<std::string>& known_switches();

}  // namespace trtutils::cuda
