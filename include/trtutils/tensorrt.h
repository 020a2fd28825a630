// The TensorRT hand-off: build with NVIDIA's trtexec where TensorRT is installed (the CLI's
// `--backend tensorrt`), or print the trtexec command that would (a dry run).
//
//   // The command TensorRT 8.6's trtexec would run, printed; nothing is run or written.
//   const trtutils::tensorrt::TrtVersion trt86{8, 6};
//   trtutils::builder::build_with_trtexec("model.onnx", "model.engine", {.fp16 = true},
//                                         /*dry_run=*/true, -1, trt86);
//
// trtexec is looked for on PATH, then in /usr/src/tensorrt/bin, then in $TENSORRT_ROOT/bin. The
// BuildConfig maps to the flags of that trtexec's TensorRT version (8.6, 9.x, 10.x, 11.x: the
// flags and what each version accepts differ; src/tensorrt/trtexec.h has the table), and what
// a version cannot do is an Error before anything runs (kConfig for the seed's rules and what
// TensorRT 11 dropped, kNotSupported for what that TensorRT lacks, e.g. strong typing before
// 10.1 or DLA in 10.8 - 11.4.0).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "trtutils/builder.h"

namespace trtutils::tensorrt {

struct TrtVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  bool known() const { return major > 0; }
  bool at_least(int ma, int mi) const { return major > ma || (major == ma && minor >= mi); }
  std::string str() const;  // "10.3.0"
};

// The version a dry run maps the flags for when no trtexec is installed and none is given:
// TensorRT 10.3 (JetPack 6's, and the calibration cache's default).
inline constexpr TrtVersion kDefaultDryRunVersion{10, 3, 0};
// "X.Y" or "X.Y.Z" (digits only) -> the version; unknown (major 0) for anything else.
TrtVersion parse_trt_version_arg(std::string_view text);

// The trtexec executable, if any (see the search order above).
std::optional<std::filesystem::path> find_trtexec();
// Runs `<trtexec> --help` and reads its banner ("&&&& RUNNING TensorRT.trtexec [TensorRT
// v100300]"); Error(kNotSupported) if no version can be read from its output.
TrtVersion query_trtexec_version(const std::filesystem::path& trtexec);

}  // namespace trtutils::tensorrt

namespace trtutils::builder {

// `--backend tensorrt`: validates the config (the seed's rules), finds trtexec, reads its
// version, maps the flags and runs it, streaming its output to the log; the engine is written to
// a temporary file and renamed to `output` on success (nothing is left on failure). dry_run:
// prints the exact command on stdout and runs nothing (no engine; engine_path empty): the
// command for `trt_version` when given (no trtexec is looked for, the command names plain
// `trtexec`), else for the installed trtexec, else (none found; a warning says so) for
// kDefaultDryRunVersion. trt_version without dry_run: Error(kInvalidArgument).
// dla_core >= 0 adds the DLA flags (--useDLACore=N --allowGPUFallback). Error(kNotSupported)
// when a build finds no trtexec.
BuildResult build_with_trtexec(const std::filesystem::path& onnx,
                               const std::filesystem::path& output, const BuildConfig& config,
                               bool dry_run, int dla_core = -1,
                               std::optional<tensorrt::TrtVersion> trt_version = std::nullopt);

}  // namespace trtutils::builder
