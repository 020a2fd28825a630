// trtexec discovery, version, flag mapping and the run (see trtexec.h for the rules).
// Flag names and grammars follow samples/common/sampleOptions.cpp of TensorRT 8.6.1, 10.7 and
// the 11.x main branch (NVIDIA/TensorRT on GitHub).
#include "tensorrt/trtexec.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>

#include "core/check.h"
#include "onnx/onnx_io.h"
#include "quantize/qdq.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"
#include "trtutils/platform.h"

namespace trtutils::tensorrt {

namespace fs = std::filesystem;

std::string TrtVersion::str() const {
  return fmt::format("{}.{}.{}", major, minor, patch);
}

TrtVersion decode_trt_version(int64_t e) {
  TrtVersion v;
  if (e >= 100000) {
    v.major = static_cast<int>(e / 10000);
    v.minor = static_cast<int>((e / 100) % 100);
    v.patch = static_cast<int>(e % 100);
  } else if (e >= 1000) {
    v.major = static_cast<int>(e / 1000);
    v.minor = static_cast<int>((e / 100) % 10);
    v.patch = static_cast<int>(e % 100);
  }
  return v;
}

TrtVersion parse_trt_version(std::string_view text) {
  const std::string s(text);
  std::smatch m;
  static const std::regex kBanner(R"(TensorRT v(\d{4,8}))");
  if (std::regex_search(s, m, kBanner)) return decode_trt_version(std::stoll(m[1].str()));
  static const std::regex kDotted(R"((?:TensorRT version:?\s*|^\s*)(\d+)\.(\d+)(?:\.(\d+))?)");
  if (std::regex_search(s, m, kDotted)) {
    TrtVersion v;
    v.major = std::stoi(m[1].str());
    v.minor = std::stoi(m[2].str());
    v.patch = m[3].matched ? std::stoi(m[3].str()) : 0;
    return v;
  }
  return {};
}

TrtVersion parse_trt_version_arg(std::string_view text) {
  static const std::regex kVersion(R"((\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(text.begin(), text.end(), m, kVersion)) return {};
  return {std::stoi(m[1].str()), std::stoi(m[2].str()), m[3].matched ? std::stoi(m[3].str()) : 0};
}

namespace {

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

struct Output {
  int exit_code = -1;
  std::string text;
};

// Runs `command` through the shell with stderr merged; each line goes to `on_line`.
template <typename F>
Output run_shell(const std::string& command, F on_line) {
  Output out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  TRT_CHECK(p, ErrorCode::kIO, "could not run: {}", command);
  std::array<char, 4096> buf;
  std::string line;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) {
    for (size_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        on_line(line);
        out.text += line + "\n";
        line.clear();
      } else {
        line += buf[i];
      }
    }
    // Keep the last 4 MiB: error lines are at the end.
    if (out.text.size() > (size_t{8} << 20)) out.text.erase(0, out.text.size() - (size_t{4} << 20));
  }
  if (!line.empty()) {
    on_line(line);
    out.text += line + "\n";
  }
  const int status = ::pclose(p);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string io_format(const builder::TensorFormat& f, const TrtVersion& v, const char* which) {
  static const std::vector<std::pair<std::string, std::string>> kFormats = {
      {"LINEAR", "chw"},  {"CHW2", "chw2"},   {"CHW4", "chw4"},
      {"CHW16", "chw16"}, {"CHW32", "chw32"}, {"HWC", "hwc"},
      {"HWC8", "hwc8"},   {"HWC16", "hwc16"}, {"DHWC8", "dhwc8"}};
  auto it = std::find_if(kFormats.begin(), kFormats.end(),
                         [&](const auto& p) { return p.first == f.format; });
  TRT_CHECK_ARG(it != kFormats.end(), "{}: unknown tensor format '{}'", which, f.format);
  TRT_CHECK(it->second != "hwc16" || v.major >= 11, ErrorCode::kNotSupported,
            "{}: TensorRT {}'s trtexec has no hwc16 IO format (11.x has)", which, v.str());
  if (v.major >= 11) {
    TRT_CHECK(f.dtype == DataType::kUndefined, ErrorCode::kConfig,
              "{}: TensorRT {} dropped weak typing: IO formats take no dtype there (IO types come "
              "from the ONNX graph); give the format alone, e.g. HWC",
              which, v.str());
    return it->second;
  }
  std::string dt;
  switch (f.dtype) {
    case DataType::kUndefined:
    case DataType::kFloat32:
      dt = "fp32";
      break;
    case DataType::kFloat16:
      dt = "fp16";
      break;
    case DataType::kInt8:
      dt = "int8";
      break;
    case DataType::kUInt8:
      dt = "uint8";
      break;
    case DataType::kInt32:
      dt = "int32";
      break;
    case DataType::kBool:
      dt = "bool";
      break;
    default:
      TRT_THROW(ErrorCode::kNotSupported, "{}: trtexec has no {} IO type", which,
                dtype_name(f.dtype));
  }
  return dt + ":" + it->second;
}

std::string shape_spec(const std::map<std::string, Shape>& m) {
  std::vector<std::string> items;
  for (const auto& [name, shape] : m) {
    std::string dims;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i) dims += 'x';
      dims += std::to_string(shape[i]);
    }
    // trtexec takes 'quoted' names when they contain its separators.
    const bool quote = name.find_first_of(":,") != std::string::npos;
    items.push_back((quote ? "'" + name + "'" : name) + ":" + dims);
  }
  return join(items, ",");
}

fs::path cache_dir() {
  if (const char* d = std::getenv("TRTUTILS_CACHE_DIR"); d && *d) return fs::path(d);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "trtutils";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "trtutils";
  return fs::temp_directory_path() / "trtutils-cache";
}

bool dla_supported(const TrtVersion& v) {
  if (v.major == 10) return v.minor <= 7;
  if (v.major == 11) return v.minor > 4 || (v.minor == 4 && v.patch >= 1);
  return v.major < 10 || v.major > 11;
}

}  // namespace

std::optional<fs::path> find_trtexec() {
  if (const char* path = std::getenv("PATH"); path && *path) {
    std::string_view rest(path);
    while (true) {
      const size_t c = rest.find(':');
      const std::string dir(rest.substr(0, c));
      if (!dir.empty() && executable(fs::path(dir) / "trtexec")) return fs::path(dir) / "trtexec";
      if (c == std::string_view::npos) break;
      rest.remove_prefix(c + 1);
    }
  }
  if (executable("/usr/src/tensorrt/bin/trtexec")) return fs::path("/usr/src/tensorrt/bin/trtexec");
  if (const char* root = std::getenv("TENSORRT_ROOT"); root && *root) {
    const fs::path p = fs::path(root) / "bin" / "trtexec";
    if (executable(p)) return p;
  }
  return std::nullopt;
}

TrtVersion query_trtexec_version(const fs::path& trtexec) {
  const Output out = run_shell(shell_command(trtexec, {"--help"}), [](const std::string&) {});
  const TrtVersion v = parse_trt_version(out.text);
  TRT_CHECK(v.known(), ErrorCode::kNotSupported,
            "could not read the TensorRT version from `{} --help` (exit {}); its output starts: {}",
            trtexec.string(), out.exit_code, out.text.substr(0, 300));
  return v;
}

std::string shell_command(const fs::path& exe, const std::vector<std::string>& args) {
  auto quote = [](const std::string& s) {
    static const std::regex kSafe(R"([A-Za-z0-9_@%+=:,./-]+)");
    if (!s.empty() && std::regex_match(s, kSafe)) return s;
    std::string q = "'";
    for (char ch : s) {
      if (ch == '\'')
        q += "'\\''";
      else
        q += ch;
    }
    q += '\'';
    return q;
  };
  std::string cmd = quote(exe.string());
  for (const auto& a : args) {
    cmd += ' ';
    cmd += quote(a);
  }
  return cmd;
}

TrtexecCommand trtexec_args(const fs::path& onnx, const fs::path& output,
                            const builder::BuildConfig& c, const TrtVersion& v,
                            const TrtexecOptions& o) {
  TRT_CHECK(v.known(), ErrorCode::kNotSupported, "the installed TensorRT version is unknown");
  TRT_CHECK(v.at_least(8, 6), ErrorCode::kNotSupported,
            "TensorRT {} is older than 8.6, the oldest release whose trtexec flags trtutils maps",
            v.str());
  TrtexecCommand cmd;
  auto& a = cmd.args;
  auto warn = [&](std::string w) {
    TRT_LOG_WARN("{}", w);
    cmd.warnings.push_back(std::move(w));
  };
  const bool v11 = v.major >= 11;
  const bool calibration = builder::has_calibration(c);
  a.push_back("--onnx=" + onnx.string());
  a.push_back("--saveEngine=" + output.string());

  if (v11) {
    std::vector<std::string> weak;
    if (c.fp16) weak.push_back("fp16");
    if (c.int8) weak.push_back("int8");
    if (c.fp8) weak.push_back("fp8");
    if (calibration) weak.push_back("calibration");
    if (!c.layer_precision.empty()) weak.push_back("layer_precision");
    if (c.precision_constraints != "none")
      weak.push_back("precision_constraints=" + c.precision_constraints);
    TRT_CHECK(weak.empty(), ErrorCode::kConfig,
              "TensorRT {} dropped weak typing (11.0 removed the FP16/INT8/FP8 builder flags, INT8 "
              "calibrators and precision constraints): {} cannot be passed to it. Every network is "
              "strongly typed there, its precision comes from the ONNX graph: quantize to a Q/DQ "
              "model (`trtutils quantize`, or `trtutils calib_to_qdq` for an existing calibration "
              "cache) or convert it to FP16 types, then build with strongly_typed=True and no "
              "precision flags.",
              v.str(), join(weak, ", "));
    if (!c.strongly_typed)
      warn(
          fmt::format("TensorRT {} builds every network strongly typed: precision comes from the "
                      "ONNX graph",
                      v.str()));
  } else {
    if (c.strongly_typed) {
      TRT_CHECK(v.at_least(10, 1), ErrorCode::kNotSupported,
                "Installed TensorRT does not support strongly-typed networks (TensorRT {}; "
                "strongly-typed builds need TensorRT 10.1 or newer).",
                v.str());
      a.push_back("--stronglyTyped");
    }
    if (c.fp16) a.push_back("--fp16");
    if (c.int8) a.push_back("--int8");
    if (c.fp8) a.push_back("--fp8");
    TRT_CHECK(c.calibration_data.empty() && !c.data_batcher, ErrorCode::kNotSupported,
              "trtexec cannot calibrate from calibration data, it only reads a calibration cache "
              "(--calib): create one first with `trtutils build --backend cpu --int8 "
              "--calibration_data ... --calibration_cache CACHE` (TensorRT's cache format), then "
              "pass calibration_cache=CACHE");
    if (!c.calibration_cache.empty()) {
      std::error_code ec;
      TRT_CHECK_ARG(fs::is_regular_file(c.calibration_cache, ec),
                    "calibration cache not found: {} (trtexec reads caches, it cannot write one)",
                    c.calibration_cache.string());
      if (!c.int8)
        warn("calibration_cache without int8: trtexec reads it but builds no INT8 layer");
      a.push_back("--calib=" + c.calibration_cache.string());
    } else if (c.int8 && !c.strongly_typed) {
      warn(
          "int8 without a calibration cache: trtexec uses placeholder dynamic ranges, so the "
          "engine's accuracy is meaningless (performance only)");
    }
    if (c.precision_constraints != "none")
      a.push_back("--precisionConstraints=" + c.precision_constraints);
    if (!c.layer_precision.empty() && c.precision_constraints != "none") {
      std::vector<std::string> specs;
      for (const auto& [layer, dt] : c.layer_precision) {
        std::string name = layer;
        int64_t index = -1;
        const auto [ptr, ec] = std::from_chars(layer.data(), layer.data() + layer.size(), index);
        if (ec == std::errc() && ptr == layer.data() + layer.size()) {
          TRT_CHECK_ARG(index >= 0 && static_cast<size_t>(index) < o.layer_names.size(),
                        "layer_precision: layer index {} cannot be given to trtexec (the model has "
                        "{} layers); use the layer's name",
                        index, o.layer_names.size());
          name = o.layer_names[static_cast<size_t>(index)];
        }
        std::string p;
        switch (dt) {
          case DataType::kFloat32:
            p = "fp32";
            break;
          case DataType::kFloat16:
            p = "fp16";
            break;
          case DataType::kInt8:
            p = "int8";
            break;
          default:
            TRT_THROW(ErrorCode::kNotSupported,
                      "layer_precision '{}': trtexec's --layerPrecisions takes fp32, fp16 or int8, "
                      "not {}",
                      layer, dtype_name(dt));
        }
        specs.push_back(name + ":" + p);
      }
      a.push_back("--layerPrecisions=" + join(specs, ","));
    }
  }

  std::vector<std::string> ins, outs;
  for (const auto& f : c.input_tensor_formats)
    ins.push_back(io_format(f, v, "input_tensor_formats"));
  for (const auto& f : c.output_tensor_formats)
    outs.push_back(io_format(f, v, "output_tensor_formats"));
  if (!ins.empty()) a.push_back("--inputIOFormats=" + join(ins, ","));
  if (!outs.empty()) a.push_back("--outputIOFormats=" + join(outs, ","));

  std::map<std::string, Shape> mn = c.min_shapes, op = c.opt_shapes, mx = c.max_shapes;
  for (const auto& [name, s] : c.shapes) mn[name] = op[name] = mx[name] = s;
  if (!mn.empty()) a.push_back("--minShapes=" + shape_spec(mn));
  if (!op.empty()) a.push_back("--optShapes=" + shape_spec(op));
  if (!mx.empty()) a.push_back("--maxShapes=" + shape_spec(mx));

  if (!c.timing_cache.empty()) {
    const fs::path tc = c.timing_cache == "global"
                            ? cache_dir() / fmt::format("tensorrt-{}.timing.cache", v.str())
                            : c.timing_cache;
    a.push_back("--timingCacheFile=" + tc.string());
  }
  a.push_back(fmt::format("--builderOptimizationLevel={}", c.optimization_level));
  if (c.workspace > 0)
    a.push_back(fmt::format("--memPoolSize=workspace:{}", (c.workspace + (1u << 20) - 1) >> 20));

  if (o.dla_core >= 0) {
    TRT_CHECK(dla_supported(v), ErrorCode::kNotSupported,
              "TensorRT {} has no DLA support on Jetson: TensorRT 10.7 was the last 10.x release "
              "with DLA, and 11.x brings it back on Jetson AGX Orin from 11.4.1 (JetPack 7.2.2). "
              "Use a TensorRT with DLA, or build with --backend cpu (DLA layers emulated)",
              v.str());
    a.push_back(fmt::format("--useDLACore={}", o.dla_core));
    a.push_back("--allowGPUFallback");
  }
  if (c.target_sm > 0)
    warn(fmt::format("trtexec builds for the GPU it runs on: target_sm {} is not passed to it",
                     c.target_sm));
  if (c.verbose) a.push_back("--verbose");
  a.push_back("--skipInference");
  return cmd;
}

void check_trtexec_result(int exit_code, const std::string& output, const builder::BuildConfig& c) {
  if (exit_code == 0) return;
  if (output.find("Error Code 9") != std::string::npos && c.int8 && c.fp8)
    TRT_THROW(ErrorCode::kConfig,
              "INT8+FP8 mixed precision on Blackwell requires strongly_typed=True (trtexec failed "
              "with Error Code 9): re-export the ONNX with Q/DQ nodes (trtutils quantize, modelopt "
              "or similar), then pass strongly_typed=True and drop the int8/fp8 flags.");
  std::vector<std::string> errors;
  size_t pos = 0;
  while (pos < output.size()) {
    const size_t e = std::min(output.find('\n', pos), output.size());
    const std::string line = output.substr(pos, e - pos);
    if (line.find("[E]") != std::string::npos || line.find("Error") != std::string::npos)
      errors.push_back(line);
    pos = e + 1;
  }
  if (errors.size() > 8) errors.erase(errors.begin(), errors.end() - 8);
  TRT_THROW(ErrorCode::kNotSupported, "trtexec failed (exit {}){}{}", exit_code,
            errors.empty() ? "" : ":\n  ", join(errors, "\n  "));
}

}  // namespace trtutils::tensorrt

namespace trtutils::builder {

namespace {

struct TrtexecChoice {
  std::filesystem::path exe;
  tensorrt::TrtVersion version;
};

// The trtexec to run or, for a dry run, to print (see build_with_trtexec).
TrtexecChoice choose_trtexec(bool dry_run, const std::optional<tensorrt::TrtVersion>& given) {
  TRT_CHECK_ARG(!given || dry_run,
                "a TensorRT version (--trt_version) applies to a dry run only: a build runs the "
                "installed trtexec and reads its version");
  if (given) return {"trtexec", *given};
  const auto exe = tensorrt::find_trtexec();
  if (!exe && dry_run) {
    TRT_LOG_WARN(
        "trtexec not found (PATH, /usr/src/tensorrt/bin, $TENSORRT_ROOT/bin): the command "
        "printed is for TensorRT {}; give --trt_version X.Y for another version",
        tensorrt::kDefaultDryRunVersion.str());
    return {"trtexec", tensorrt::kDefaultDryRunVersion};
  }
  TRT_CHECK(exe.has_value(), ErrorCode::kNotSupported,
            "--backend tensorrt: trtexec not found (searched PATH, /usr/src/tensorrt/bin and "
            "$TENSORRT_ROOT/bin); install TensorRT or set TENSORRT_ROOT, or build with --backend "
            "cpu");
  const tensorrt::TrtVersion version = tensorrt::query_trtexec_version(*exe);
  TRT_LOG_INFO("trtexec {} (TensorRT {})", exe->string(), version.str());
  return {*exe, version};
}

}  // namespace

BuildResult build_with_trtexec(const std::filesystem::path& onnx,
                               const std::filesystem::path& output, const BuildConfig& config,
                               bool dry_run, int dla_core,
                               std::optional<tensorrt::TrtVersion> trt_version) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  BuildResult result;
  BuildConfig vc = config;
  vc.backend = "auto";  // validate_build_config knows our backends only
  const PlatformInfo& p = platform_info();
  const int local_sm = p.gpu_count > 0 ? p.gpu.sm_major * 10 + p.gpu.sm_minor : 0;
  result.warnings = validate_build_config(vc, config.target_sm > 0 ? config.target_sm : local_sm);

  const auto [exe, version] = choose_trtexec(dry_run, trt_version);

  tensorrt::TrtexecOptions o;
  o.dla_core = dla_core;
  const bool by_index =
      std::any_of(config.layer_precision.begin(), config.layer_precision.end(), [](const auto& lp) {
        return !lp.first.empty() && std::all_of(lp.first.begin(), lp.first.end(), [](char ch) {
          return std::isdigit(static_cast<unsigned char>(ch));
        });
      });
  if (by_index && fs::is_regular_file(onnx)) {
    ir::Model m = onnx_io::load_model(onnx);
    quantize::name_nodes(m.graph);
    m.graph.topological_sort();
    for (const auto& n : m.graph.nodes) o.layer_names.push_back(n.name);
  }
  const fs::path tmp =
      dry_run ? output : fs::path(output.string() + ".tmp-trtexec-" + std::to_string(::getpid()));
  tensorrt::TrtexecCommand cmd = tensorrt::trtexec_args(onnx, tmp, config, version, o);
  result.warnings.insert(result.warnings.end(), cmd.warnings.begin(), cmd.warnings.end());
  const std::string command = tensorrt::shell_command(exe, cmd.args);
  if (dry_run) {
    fmt::print("{}\n", command);
    std::fflush(stdout);
    return result;
  }
  std::error_code ec;
  require_regular_file(onnx, "ONNX model");
  const fs::path out_dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  TRT_CHECK_ARG(fs::is_directory(out_dir, ec), "output folder {} does not exist", out_dir.string());

  TRT_LOG_INFO("running {}", command);
  const int slot = register_temp_file(tmp);
  tensorrt::Output out;
  try {
    out = tensorrt::run_shell(command, [&](const std::string& line) {
      if (line.find("[E]") != std::string::npos)
        TRT_LOG_ERROR("trtexec | {}", line);
      else if (line.find("[W]") != std::string::npos)
        TRT_LOG_WARN("trtexec | {}", line);
      else
        TRT_LOG_INFO("trtexec | {}", line);
    });
    tensorrt::check_trtexec_result(out.exit_code, out.text, config);
    TRT_CHECK(fs::is_regular_file(tmp, ec), ErrorCode::kNotSupported,
              "trtexec succeeded but wrote no engine at {}", tmp.string());
    fs::rename(tmp, output);
  } catch (...) {
    fs::remove(tmp, ec);
    unregister_temp_file(slot);
    throw;
  }
  unregister_temp_file(slot);
  result.engine_path = output;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  TRT_LOG_INFO("trtexec built {} in {:.1f} s", output.string(), result.seconds);
  return result;
}

}  // namespace trtutils::builder
