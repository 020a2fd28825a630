// trtutils build --onnx MODEL --output ENGINE [--strongly_typed] [--fp16] [--int8] [--fp8]
//   [--calibration_cache FILE] [--calibration_data calib.npy | --calibration_dir DIR ...]
//   [--layer_precision LAYER:DTYPE ...] [--precision_constraints none|prefer|obey]
//   [--input_tensor_formats [DTYPE:]FORMAT ...] [--output_tensor_formats ...]
//   [--shape NAME:d0,d1,... ...] [--min_shapes/--opt_shapes/--max_shapes NAME:d0,d1,...]
//   [--workspace MIB] [--optimization_level 0-5] [--timing_cache FILE|global] [--cache]
//   [--backend auto|cpu|cuda|tensorrt] [--dry_run [--trt_version X.Y]] [--target_sm N] [--threads
//   N]
// Option-combination errors (the seed's rules) exit with code 2, other errors with 1.
#include <filesystem>

#include "build_flags.h"
#include "commands.h"
#include "trtutils/builder.h"
#include "trtutils/check.h"
#include "trtutils/logging.h"
#include "trtutils/tensorrt.h"

namespace trtutils::cli {

namespace {

void build(BuildFlags& f, const CLI::App* sub) {
  builder::BuildConfig& c = resolve_build_flags(f, sub);
  const auto trt_version = dry_run_trt_version(f);
  if (c.backend == "tensorrt") {
    const builder::BuildResult r =
        builder::build_with_trtexec(f.onnx, f.output, c, f.dry_run, -1, trt_version);
    if (!f.dry_run) fmt::print("built {} with trtexec in {:.1f} s\n", f.output, r.seconds);
    return;
  }
  TRT_CHECK_ARG(!f.dry_run, "--dry_run applies to --backend tensorrt only");
  const builder::BuildResult r = builder::build_engine(f.onnx, f.output, c);
  std::string summary;
  for (const auto& [p, n] : r.layers_per_precision)
    summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, p);
  if (r.from_cache)
    fmt::print("engine {} reused from the engine cache ({:.2f} s)\n", f.output, r.seconds);
  else
    fmt::print("built {}: {} layers ({}) in {:.1f} s\n", f.output, r.num_layers, summary,
               r.seconds);
  print_calibration_notes(r);
}

}  // namespace

void add_build_command(CLI::App& app) {
  auto f = std::make_shared<BuildFlags>();
  CLI::App* sub = app.add_subcommand("build", "Build an engine from an ONNX model");
  sub->add_option("--onnx", f->onnx, "ONNX model (float, or with Q/DQ nodes)")->required();
  sub->add_option("--output", f->output, "engine file to write")->required();
  add_build_flags(sub, *f);
  sub->callback([f, sub] {
    f->config.verbose = log_level() >= LogLevel::kVerbose;
    build(*f, sub);
  });
}

}  // namespace trtutils::cli
