// trtutils build_dla --onnx MODEL --output ENGINE [--dla_core 0|1] [--strongly_typed]
//   [--max_chunks N] [--min_layers N] [--target_sm 87] [--int8] [--fp16] [--fp8]
//   [--calibration_cache FILE] [--calibration_data calib.npy | --calibration_dir DIR ...]
//   [--shape NAME:d0,d1,...] [--backend cpu|tensorrt] [--dry_run [--trt_version X.Y]]
//   [--threads N]
// A DLA engine for Jetson Orin (include/trtutils/dla.h). Option-combination errors exit with 2.
#include <fmt/format.h>

#include "batcher_flags.h"
#include "build_flags.h"
#include "commands.h"
#include "flag_ranges.h"
#include "trtutils/check.h"
#include "trtutils/dla.h"
#include "trtutils/logging.h"

namespace trtutils::cli {

namespace {

struct BuildDlaFlags {
  std::string onnx, output;
  builder::DlaConfig config;
  std::string calibration_cache, calibration_data, timing_cache;
  BatcherFlags batcher;
  std::vector<std::string> shapes;
  std::string trt_version;  // --trt_version X.Y (--backend tensorrt --dry_run)
};

void build_dla(BuildDlaFlags& f, const CLI::App* sub) {
  builder::BuildConfig& c = f.config.build;
  c.calibration_cache = f.calibration_cache;
  c.calibration_data = f.calibration_data;
  c.timing_cache = f.timing_cache;
  if (!f.batcher.calibration_dir.empty()) {
    TRT_CHECK_ARG(f.calibration_data.empty(),
                  "give either --calibration_data or --calibration_dir, not both");
    c.data_batcher = to_batcher_options(f.batcher, sub);
  }
  c.num_threads = f.batcher.threads;
  c.progress = true;
  for (const auto& s : f.shapes) {
    auto [name, shape] = parse_shape_spec(s, "--shape");
    TRT_CHECK_ARG(!c.shapes.count(name), "--shape: input '{}' is given twice", name);
    c.shapes[name] = shape;
  }
  f.config.trt_version = dry_run_trt_version(f.trt_version, c.backend, f.config.dry_run);
  const builder::DlaBuildResult r = builder::build_dla_engine(f.onnx, f.output, f.config);
  if (f.config.dry_run) return;  // the command was printed
  if (c.backend == "tensorrt") {
    fmt::print("built {} with trtexec (DLA core {}) in {:.1f} s\n", f.output, f.config.dla_core,
               r.build.seconds);
    return;
  }
  std::string chunks;
  for (const auto& ch : r.chunks)
    chunks += fmt::format("{}#{}-#{} ({} layers)", chunks.empty() ? "" : ", ", ch.begin, ch.end - 1,
                          ch.layers());
  fmt::print("built {}: {} layers, {} on DLA core {} (emulated), {} GPU-side; chunks: {}\n",
             f.output, r.build.num_layers, r.dla_layers, f.config.dla_core, r.other_layers,
             chunks.empty() ? "none" : chunks);
  print_calibration_notes(r.build);
}

}  // namespace

void add_build_dla_command(CLI::App& app) {
  auto f = std::make_shared<BuildDlaFlags>();
  CLI::App* sub =
      app.add_subcommand("build_dla", "Build an engine for Jetson Orin's DLA (GPU fallback)");
  sub->add_option("--onnx", f->onnx, "ONNX model")->required();
  sub->add_option("--output", f->output, "engine file to write")->required();
  add_ranged(sub, "--dla_core", f->config.dla_core, "DLA core (Orin: 0 or 1)", 0, 1);
  add_dla_chunk_flags(sub, f->config.max_chunks, f->config.min_layers,
                      "DLA chunks to place at most", "smallest chunk placed on DLA");
  sub->add_flag("--strongly_typed", f->config.build.strongly_typed,
                "precision from the graph (Q/DQ for INT8); no calibration, no fp8");
  sub->add_flag("--fp16", f->config.build.fp16, "allow FP16 (always on for weakly typed DLA)");
  sub->add_flag("--int8", f->config.build.int8, "allow INT8 (weakly typed; needs scales)");
  sub->add_flag("--fp8", f->config.build.fp8, "rejected: the DLA has no FP8");
  sub->add_option("--calibration_cache", f->calibration_cache,
                  "TensorRT calibration cache: read if it exists, else written after calibrating");
  sub->add_option("--calibration_data", f->calibration_data,
                  ".npy of calibration samples (first axis), for weakly-typed INT8");
  add_batcher_flags(sub, f->batcher, /*required=*/false);
  add_ranged(sub, "--calibration_batch_size", f->config.build.calibration_batch_size,
             "samples per calibration batch (--calibration_data)", int64_t{1}, kMaxBatch);
  sub->add_option("--shape", f->shapes,
                  "NAME:d0,d1,... fixed input shape (DLA has no dynamic "
                  "shapes), repeatable");
  add_ranged(sub, "--target_sm", f->config.build.target_sm,
             "build for this GPU (87: Jetson Orin) instead of the local one (0: local)", 0, 999);
  sub->add_option("--timing_cache", f->timing_cache, "timing cache file, or 'global'");
  add_ranged(sub, "--optimization_level", f->config.build.optimization_level,
             "builder optimization level", 0, 5);
  sub->add_option("--backend", f->config.build.backend,
                  "cpu (DLA layers emulated) or tensorrt (trtexec --useDLACore)")
      ->capture_default_str();
  sub->add_flag("--dry_run", f->config.dry_run,
                "--backend tensorrt: print the trtexec command, run nothing");
  add_trt_version_flag(sub, f->trt_version);
  sub->callback([f, sub] {
    f->config.build.verbose = log_level() >= LogLevel::kVerbose;
    build_dla(*f, sub);
  });
}

}  // namespace trtutils::cli
