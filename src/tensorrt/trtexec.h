// The TensorRT hand-off: build with NVIDIA's trtexec where TensorRT is installed. The public
// part (TrtVersion, find_trtexec, query_trtexec_version, build_with_trtexec) is
// include/trtutils/tensorrt.h; this header adds the flag mapping and its helpers.
//
//   find_trtexec()          PATH, then /usr/src/tensorrt/bin, then $TENSORRT_ROOT/bin
//   query_trtexec_version() runs `trtexec --help` and reads its banner
//                           ("&&&& RUNNING TensorRT.trtexec [TensorRT v100300] ...")
//   trtexec_args()          a BuildConfig (+ DLA options) -> trtexec's flags for that version
//   build_with_trtexec()    all of it, streaming trtexec's output (the `--backend tensorrt` path)
//
// Flag mapping (TensorRT 8.6, 9.x, 10.x, 11.x):
//   --onnx --saveEngine --skipInference (always); --verbose (config.verbose)
//   strongly_typed        --stronglyTyped (10.1+; older: Error(kNotSupported) "Installed TensorRT
//                         does not support strongly-typed networks"); 11.x: nothing (every
//                         network is strongly typed there and the flag is a deprecated no-op)
//   fp16 / int8 / fp8     --fp16 / --int8 / --fp8 (8.6 - 10.x); 11.x removed weak typing:
//                         Error(kConfig) explaining it, as for calibration and layer precision
//   calibration_cache     --calib=FILE (must exist: trtexec reads caches, it cannot calibrate);
//                         calibration_data / data_batcher: Error(kNotSupported) with the way out
//   layer_precision       --layerPrecisions=name:fp32|fp16|int8,... (indices resolved to node
//                         names through `layer_names`) with --precisionConstraints=prefer|obey
//   tensor formats        --inputIOFormats / --outputIOFormats: "fp16:chw,int8:hwc" (8.6 - 10.x;
//                         a format without dtype gets fp32); 11.x formats only ("chw,hwc"), a
//                         dtype is Error(kConfig) (IO types come from the graph)
//   shapes                --minShapes / --optShapes / --maxShapes (fixed shapes: all three equal)
//   timing_cache          --timingCacheFile=FILE ("global": ~/.cache/trtutils/
//                         tensorrt-<version>.timing.cache, TensorRT's own format)
//   optimization_level    --builderOptimizationLevel=N
//   workspace             --memPoolSize=workspace:<MiB> (rounded up)
//   DLA (dla_core >= 0)   --useDLACore=N --allowGPUFallback; refused (kNotSupported) where that
//                         TensorRT has no DLA: 10.8 - 11.4.0 (10.7 was the last 10.x with DLA;
//                         11.4.1 brings it back on Orin with JetPack 7.2.2)
// trtexec's "Error Code 9" with int8 + fp8 becomes the seed's INT8+FP8 Blackwell message.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trtutils/builder.h"
#include "trtutils/tensorrt.h"

namespace trtutils::tensorrt {

// NV_TENSORRT_VERSION as banners print it: 8601 -> 8.6.1 (major * 1000 + minor * 100 + patch
// before 10), 100300 -> 10.3.0 (major * 10000 + minor * 100 + patch from 10 on).
TrtVersion decode_trt_version(int64_t encoded);
// Finds "[TensorRT v100300]" / "TensorRT v8601", or "TensorRT version: 10.3.0", or a plain
// "10.3.0" / "10.3" in `text`; unknown (major 0) if none.
TrtVersion parse_trt_version(std::string_view text);

struct TrtexecOptions {
  int dla_core = -1;  // >= 0: --useDLACore=N --allowGPUFallback
  // Node names in the builder's order, to resolve layer_precision given by index.
  std::vector<std::string> layer_names{};
};

struct TrtexecCommand {
  std::vector<std::string> args;  // without the executable
  std::vector<std::string> warnings;
};

// The flags for `version` (rules above). Throws Error(kConfig / kNotSupported /
// kInvalidArgument) without running anything.
TrtexecCommand trtexec_args(const std::filesystem::path& onnx, const std::filesystem::path& output,
                            const builder::BuildConfig& config, const TrtVersion& version,
                            const TrtexecOptions& options = {});

// One shell-safe command line ('...' quoting where needed).
std::string shell_command(const std::filesystem::path& exe, const std::vector<std::string>& args);

// trtexec's output (stdout + stderr) and exit status -> Error, or nothing when it succeeded:
// "Error Code 9" with int8 + fp8 -> Error(kConfig) with the seed's INT8+FP8 Blackwell message;
// any other failure -> Error(kNotSupported) quoting trtexec's error lines.
void check_trtexec_result(int exit_code, const std::string& output,
                          const builder::BuildConfig& config);

}  // namespace trtutils::tensorrt
