// The build flags (tools/cli/build_flags.h), moved here from cmd_build.cpp so that build_yolo
// declares and reads them with the same code.
#include "build_flags.h"

#include <algorithm>
#include <map>

#include "commands.h"
#include "flag_ranges.h"
#include "trtutils/check.h"

namespace trtutils::cli {

namespace {

DataType precision_from_name(const std::string& s, const std::string& spec) {
  if (s == "fp32" || s == "float32") return DataType::kFloat32;
  if (s == "fp16" || s == "float16") return DataType::kFloat16;
  if (s == "int8") return DataType::kInt8;
  if (s == "fp8") return DataType::kFloat8E4M3FN;
  TRT_THROW(ErrorCode::kInvalidArgument,
            "--layer_precision '{}': '{}' is not a precision; choose one of fp32, fp16, int8, fp8",
            spec, s);
}

}  // namespace

builder::BuildConfig& resolve_build_flags(BuildFlags& f, const CLI::App* sub) {
  builder::BuildConfig& c = f.config;
  c.calibration_cache = f.calibration_cache;
  c.calibration_data = f.calibration_data;
  c.timing_cache = f.timing_cache;
  c.workspace = f.workspace_mib << 20;
  for (const auto& kv : f.gpu_switches) {
    const size_t eq = kv.find('=');
    TRT_CHECK_ARG(eq != std::string::npos && eq > 0,
                  "--gpu_switch '{}': expected NAME=VALUE (e.g. FUSION=0)", kv);
    c.gpu_switches[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!f.batcher.calibration_dir.empty()) {
    TRT_CHECK_ARG(f.calibration_data.empty(),
                  "give either --calibration_data or --calibration_dir, not both");
    c.data_batcher = to_batcher_options(f.batcher, sub);
  }
  c.num_threads = f.batcher.threads;
  c.progress = true;
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
  return c;
}

void print_calibration_notes(const builder::BuildResult& r) {
  if (!r.calibration_preprocessing.empty())
    fmt::print("calibration preprocessing: {}\n", r.calibration_preprocessing);
  if (!r.calibration_cache_written.empty())
    fmt::print("calibration cache written to {}\n", r.calibration_cache_written.string());
}

std::optional<tensorrt::TrtVersion> dry_run_trt_version(const std::string& trt_version,
                                                        const std::string& backend, bool dry_run) {
  if (trt_version.empty()) return std::nullopt;
  TRT_CHECK(backend == "tensorrt" && dry_run, ErrorCode::kConfig,
            "--trt_version applies to --backend tensorrt --dry_run (a build runs the installed "
            "trtexec and reads its version)");
  const tensorrt::TrtVersion v = tensorrt::parse_trt_version_arg(trt_version);
  TRT_CHECK_ARG(v.known(),
                "--trt_version '{}': expected a TensorRT version X.Y or X.Y.Z, e.g. 10.3",
                trt_version);
  return v;
}

void add_trt_version_flag(CLI::App* sub, std::string& trt_version) {
  sub->add_option("--trt_version", trt_version,
                  "--backend tensorrt --dry_run: print the trtexec command for this TensorRT "
                  "version (X.Y, e.g. 8.6, 10.3, 11.0: the flags differ between them) instead of "
                  "the installed trtexec's; without a trtexec on this machine the default is " +
                      tensorrt::kDefaultDryRunVersion.str());
}

void add_build_flags(CLI::App* sub, BuildFlags& f) {
  sub->add_flag("--strongly_typed", f.config.strongly_typed,
                "take every precision from the graph (input dtypes, casts, Q/DQ)");
  sub->add_flag("--fp16", f.config.fp16, "allow FP16 layers (weakly typed)");
  sub->add_flag("--int8", f.config.int8, "allow INT8 layers (weakly typed; needs scales)");
  sub->add_flag("--fp8", f.config.fp8, "allow FP8 layers (weakly typed)");
  sub->add_flag("!--no_tf32", f.config.tf32,
                "FP32 layers on the GPU use exact FP32 arithmetic instead of TF32 tensor cores");
  sub->add_option("--calibration_cache", f.calibration_cache,
                  "TensorRT calibration cache: read if it exists, else written after calibrating");
  sub->add_option("--calibration_data", f.calibration_data,
                  ".npy of calibration samples (first axis), for weakly-typed INT8");
  add_batcher_flags(sub, f.batcher, /*required=*/false);
  add_ranged(sub, "--calibration_batch_size", f.config.calibration_batch_size,
             "samples per calibration batch (--calibration_data)", int64_t{1}, kMaxBatch);
  sub->add_option("--calibration_algorithm", f.config.calibration_algorithm,
                  "entropy (EntropyCalibration2) or minmax")
      ->capture_default_str();
  sub->add_option("--layer_precision", f.layer_precision,
                  "LAYER:DTYPE (layer name or index; fp32, fp16, int8, fp8), repeatable");
  sub->add_option("--precision_constraints", f.config.precision_constraints,
                  "none, prefer or obey (how --layer_precision is applied)")
      ->capture_default_str();
  sub->add_option("--input_tensor_formats", f.input_formats,
                  "[DTYPE:]FORMAT per input (LINEAR, HWC, ...)");
  sub->add_option("--output_tensor_formats", f.output_formats,
                  "[DTYPE:]FORMAT per output (LINEAR, HWC, ...)");
  sub->add_option("--shape", f.shapes, "NAME:d0,d1,... fixed input shape, repeatable");
  sub->add_option("--min_shapes", f.min_shapes, "NAME:d0,d1,... profile minimum");
  sub->add_option("--opt_shapes", f.opt_shapes, "NAME:d0,d1,... profile optimum");
  sub->add_option("--max_shapes", f.max_shapes, "NAME:d0,d1,... profile maximum");
  add_ranged(sub, "--workspace", f.workspace_mib, "scratch memory limit in MiB (0: none)",
             uint64_t{0}, uint64_t{1} << 30);
  add_ranged(sub, "--optimization_level", f.config.optimization_level, "builder optimization level",
             0, 5);
  sub->add_option(
      "--timing_cache", f.timing_cache,
      "timing cache file, or 'global' (CPU tactics; GPU kernel choices timed at build)");
  sub->add_flag("--cache", f.config.cache,
                "reuse an engine built from the same model and options (~/.cache/trtutils)");
  sub->add_option("--backend", f.config.backend,
                  "auto, cpu, cuda, or tensorrt (build with the installed TensorRT's trtexec)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "tensorrt"}))
      ->capture_default_str();
  sub->add_flag("--dry_run", f.dry_run, "--backend tensorrt: print the trtexec command only");
  add_trt_version_flag(sub, f.trt_version);
  add_ranged(sub, "--target_sm", f.config.target_sm,
             "build for this GPU architecture (e.g. 90, 100) instead of the local one (0: local); "
             "without that GPU here its kernel choices are timed on the engine's first load",
             0, 999);
  sub->add_flag("--no_fallback", f.config.no_fallback,
                "GPU engines: refuse a model with a layer no GPU kernel runs, instead of running "
                "that layer on the CPU");
  sub->add_flag("--allow_float_fallback", f.config.allow_float_fallback,
                "--int8 without calibration data on a model without Q/DQ nodes: build the (all "
                "float) engine anyway instead of refusing");
  sub->add_option("--gpu_switch", f.gpu_switches,
                  "GPU engines: NAME=VALUE kernel switch recorded in the engine (e.g. FUSION=0, "
                  "IGEMM=force; repeatable; TRTUTILS_CUDA_* variables set at build time are "
                  "recorded too)");
}

}  // namespace trtutils::cli
