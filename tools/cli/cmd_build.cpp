// trtutils build --onnx MODEL --output ENGINE [--strongly_typed] [--fp16] [--int8] [--fp8]
//   [--calibration_cache FILE] [--calibration_data calib.npy | --calibration_dir DIR ...]
//   [--layer_precision LAYER:DTYPE ...] [--precision_constraints none|prefer|obey]
//   [--input_tensor_formats [DTYPE:]FORMAT ...] [--output_tensor_formats ...]
//   [--shape NAME:d0,d1,... ...] [--min_shapes/--opt_shapes/--max_shapes NAME:d0,d1,...]
//   [--workspace MIB] [--optimization_level 0-5] [--timing_cache FILE|global] [--cache]
//   [--backend auto|cpu|cuda] [--target_sm N] [--threads N]
// Option-combination errors (the seed's rules) exit with code 2, other errors with 1.
#include <filesystem>

#include "batcher_flags.h"
#include "commands.h"
#include "core/check.h"
#include "flag_ranges.h"
#include "tensorrt/trtexec.h"
#include "trtutils/builder.h"
#include "trtutils/logging.h"

namespace trtutils::cli {

namespace {

struct BuildFlags {
  std::string onnx, output;
  builder::BuildConfig config;
  std::string calibration_cache, calibration_data, timing_cache;
  BatcherFlags batcher;
  std::vector<std::string> layer_precision, input_formats, output_formats;
  std::vector<std::string> shapes, min_shapes, opt_shapes, max_shapes;
  uint64_t workspace_mib = 0;
  bool dry_run = false;
};

DataType precision_from_name(const std::string& s, const std::string& spec) {
  if (s == "fp32" || s == "float32") return DataType::kFloat32;
  if (s == "fp16" || s == "float16") return DataType::kFloat16;
  if (s == "int8") return DataType::kInt8;
  if (s == "fp8") return DataType::kFloat8E4M3FN;
  TRT_THROW(ErrorCode::kInvalidArgument,
            "--layer_precision '{}': '{}' is not a precision; choose one of fp32, fp16, int8, fp8",
            spec, s);
}

void build(BuildFlags& f, const CLI::App* sub) {
  builder::BuildConfig& c = f.config;
  c.calibration_cache = f.calibration_cache;
  c.calibration_data = f.calibration_data;
  c.timing_cache = f.timing_cache;
  c.workspace = f.workspace_mib << 20;
  if (!f.batcher.calibration_dir.empty()) {
    TRT_CHECK_ARG(f.calibration_data.empty(),
                  "give either --calibration_data or --calibration_dir, not both");
    c.data_batcher = to_batcher_options(f.batcher, sub);
  }
  c.num_threads = f.batcher.threads;
  for (const auto& spec : f.layer_precision) {
    const auto colon = spec.rfind(':');
    TRT_CHECK_ARG(colon != std::string::npos && colon > 0,
                  "--layer_precision '{}': expected LAYER:DTYPE (layer name or index)", spec);
    c.layer_precision.emplace_back(spec.substr(0, colon),
                                   precision_from_name(spec.substr(colon + 1), spec));
  }
  for (const auto& s : f.input_formats)
    c.input_tensor_formats.push_back(builder::parse_tensor_format(s));
  for (const auto& s : f.output_formats)
    c.output_tensor_formats.push_back(builder::parse_tensor_format(s));
  auto shapes = [](const std::vector<std::string>& specs, const char* flag) {
    std::map<std::string, Shape> m;
    for (const auto& s : specs) {
      // One NAME:dims per flag, or a trtexec-style list "a:1x3x8x8,b:1x4": a comma-separated
      // piece with a ':' starts the next input, one without continues the dims.
      std::vector<std::string> items;
      size_t pos = 0;
      while (pos <= s.size()) {
        const size_t next = std::min(s.find(',', pos), s.size());
        const std::string piece = s.substr(pos, next - pos);
        if (items.empty() || piece.find(':') != std::string::npos)
          items.push_back(piece);
        else
          items.back() += "," + piece;
        pos = next + 1;
      }
      for (const auto& one : items) {
        auto [name, shape] = parse_shape_spec(one, flag);
        TRT_CHECK_ARG(!m.count(name), "{}: input '{}' is given twice", flag, name);
        m[name] = shape;
      }
    }
    return m;
  };
  c.shapes = shapes(f.shapes, "--shape");
  c.min_shapes = shapes(f.min_shapes, "--min_shapes");
  c.opt_shapes = shapes(f.opt_shapes, "--opt_shapes");
  c.max_shapes = shapes(f.max_shapes, "--max_shapes");
  if (c.backend == "tensorrt") {
    const builder::BuildResult r = builder::build_with_trtexec(f.onnx, f.output, c, f.dry_run);
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
  if (!r.calibration_cache_written.empty())
    fmt::print("calibration cache written to {}\n", r.calibration_cache_written.string());
}

}  // namespace

void add_build_command(CLI::App& app) {
  auto f = std::make_shared<BuildFlags>();
  CLI::App* sub = app.add_subcommand("build", "Build an engine from an ONNX model");
  sub->add_option("--onnx", f->onnx, "ONNX model (float, or with Q/DQ nodes)")->required();
  sub->add_option("--output", f->output, "engine file to write")->required();
  sub->add_flag("--strongly_typed", f->config.strongly_typed,
                "take every precision from the graph (input dtypes, casts, Q/DQ)");
  sub->add_flag("--fp16", f->config.fp16, "allow FP16 layers (weakly typed)");
  sub->add_flag("--int8", f->config.int8, "allow INT8 layers (weakly typed; needs scales)");
  sub->add_flag("--fp8", f->config.fp8, "allow FP8 layers (weakly typed)");
  sub->add_flag("!--no_tf32", f->config.tf32,
                "FP32 layers on the GPU use exact FP32 arithmetic instead of TF32 tensor cores");
  sub->add_option("--calibration_cache", f->calibration_cache,
                  "TensorRT calibration cache: read if it exists, else written after calibrating");
  sub->add_option("--calibration_data", f->calibration_data,
                  ".npy of calibration samples (first axis), for weakly-typed INT8");
  add_batcher_flags(sub, f->batcher, /*required=*/false);
  add_ranged(sub, "--calibration_batch_size", f->config.calibration_batch_size,
             "samples per calibration batch (--calibration_data)", int64_t{1}, kMaxBatch);
  sub->add_option("--calibration_algorithm", f->config.calibration_algorithm,
                  "entropy (EntropyCalibration2) or minmax")
      ->capture_default_str();
  sub->add_option("--layer_precision", f->layer_precision,
                  "LAYER:DTYPE (layer name or index; fp32, fp16, int8, fp8), repeatable");
  sub->add_option("--precision_constraints", f->config.precision_constraints,
                  "none, prefer or obey (how --layer_precision is applied)")
      ->capture_default_str();
  sub->add_option("--input_tensor_formats", f->input_formats,
                  "[DTYPE:]FORMAT per input (LINEAR, HWC, ...)");
  sub->add_option("--output_tensor_formats", f->output_formats,
                  "[DTYPE:]FORMAT per output (LINEAR, HWC, ...)");
  sub->add_option("--shape", f->shapes, "NAME:d0,d1,... fixed input shape, repeatable");
  sub->add_option("--min_shapes", f->min_shapes, "NAME:d0,d1,... profile minimum");
  sub->add_option("--opt_shapes", f->opt_shapes, "NAME:d0,d1,... profile optimum");
  sub->add_option("--max_shapes", f->max_shapes, "NAME:d0,d1,... profile maximum");
  add_ranged(sub, "--workspace", f->workspace_mib, "scratch memory limit in MiB (0: none)",
             uint64_t{0}, uint64_t{1} << 30);
  add_ranged(sub, "--optimization_level", f->config.optimization_level,
             "builder optimization level", 0, 5);
  sub->add_option("--timing_cache", f->timing_cache, "timing cache file, or 'global'");
  sub->add_flag("--cache", f->config.cache,
                "reuse an engine built from the same model and options (~/.cache/trtutils)");
  sub->add_option("--backend", f->config.backend,
                  "auto, cpu, cuda, or tensorrt (build with the installed TensorRT's trtexec)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "tensorrt"}))
      ->capture_default_str();
  sub->add_flag("--dry_run", f->dry_run, "--backend tensorrt: print the trtexec command only");
  add_ranged(sub, "--target_sm", f->config.target_sm,
             "build for this GPU architecture (e.g. 90, 100) instead of the local one (0: local)",
             0, 999);
  sub->add_flag("--no_fallback", f->config.no_fallback,
                "GPU engines: refuse a model with a layer no GPU kernel runs, instead of running "
                "that layer on the CPU");
  sub->callback([f, sub] {
    f->config.verbose = log_level() >= LogLevel::kVerbose;
    build(*f, sub);
  });
}

}  // namespace trtutils::cli
