// The engine builder's flags (builder::BuildConfig), shared by build and build_yolo: the names
// are the Python original's build keyword arguments.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "batcher_flags.h"
#include "trtutils/builder.h"
#include "trtutils/tensorrt.h"

namespace trtutils::cli {

struct BuildFlags {
  std::string onnx, output;  // declared by each command
  builder::BuildConfig config;
  std::string calibration_cache, calibration_data, timing_cache;
  BatcherFlags batcher;
  std::vector<std::string> layer_precision, input_formats, output_formats;
  std::vector<std::string> shapes, min_shapes, opt_shapes, max_shapes;
  std::vector<std::string> gpu_switches;  // NAME=VALUE
  uint64_t workspace_mib = 0;
  bool dry_run = false;
  std::string trt_version;  // --trt_version X.Y (--backend tensorrt --dry_run)
};

// Registers every build flag on `sub` (--strongly_typed ... --target_sm, --dry_run; not --onnx
// and --output, which each command declares itself).
void add_build_flags(CLI::App* sub, BuildFlags& f);
// Checks the parsed text flags (messages name the flag) and completes f.config with them.
builder::BuildConfig& resolve_build_flags(BuildFlags& f, const CLI::App* sub);
// The calibration lines of a build's output (build, build_yolo, build_dla): the images'
// preprocessing and the calibration cache written, where there are.
void print_calibration_notes(const builder::BuildResult& r);
// --trt_version X.Y (build, build_yolo, build_dla): the TensorRT version a dry run prints the
// trtexec command for.
void add_trt_version_flag(CLI::App* sub, std::string& trt_version);
// --trt_version as a version (nullopt when not given); Error(kInvalidArgument) for a malformed
// one, Error(kConfig) without --backend tensorrt --dry_run.
std::optional<tensorrt::TrtVersion> dry_run_trt_version(const std::string& trt_version,
                                                        const std::string& backend, bool dry_run);
inline std::optional<tensorrt::TrtVersion> dry_run_trt_version(const BuildFlags& f) {
  return dry_run_trt_version(f.trt_version, f.config.backend, f.dry_run);
}

}  // namespace trtutils::cli
