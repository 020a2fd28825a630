// trtutils debug_precision --onnx MODEL (--int8 | --fp16) [--calibration_data calib.npy]
//                          [--calibration_cache FILE] [--input ...] [--seed N]
//                          [--atol ... --rtol ... | --min_sqnr DB]
// Like `polygraphy debug precision`: bisects which layers of a weakly typed reduced-precision
// build must stay in fp32 for its outputs to meet a tolerance against the float ONNX model, and
// prints the `--layer_precision NAME:fp32` entries for `trtutils build` (and the same nodes as
// `--nodes_to_exclude` for `trtutils quantize`).
//
// Why weakly typed builds: `build` already keeps layers in fp32 by name (--layer_precision,
// --precision_constraints obey) and reuses a calibration cache, so each bisection step is one
// build from the cache, without calibrating again; and the candidates are the engine's own
// reduced-precision layers. A Q/DQ model would have to be re-quantized (re-calibrated) per step.
#include <optional>
#include <set>

#include "commands.h"
#include "compare_flags.h"
#include "compare_report.h"
#include "compare_side.h"
#include "flag_ranges.h"
#include "trtutils/builder.h"
#include "trtutils/check.h"
#include "trtutils/logging.h"
#include "trtutils/onnx_session.h"

namespace trtutils::cli {

namespace {

namespace fs = std::filesystem;

struct DebugPrecisionCli {
  std::string onnx, calibration_data, calibration_cache, backend = "cpu";
  bool int8 = false, fp16 = false;
  int64_t calibration_batch_size = 8;
  InputFlags in;
  ToleranceFlags tol;
  std::optional<double> min_sqnr;
  int threads = 0;
};

// Builds and checks engines with a given set of layers forced to fp32.
class Prober {
 public:
  Prober(const DebugPrecisionCli& o, const fs::path& scratch)
      : o_(o), scratch_(scratch), options_(resolve_tolerance_flags(o.tol)) {
    OnnxSession ref(o.onnx, {.num_threads = o.threads});
    feeds_ = make_compare_feeds(ref.inputs(), o.in);
    reference_ = ref.run(feeds_);
    cache_ =
        o.calibration_cache.empty() ? scratch / "calibration.cache" : fs::path(o.calibration_cache);
  }

  // Whether keeping `fp32` in fp32 meets the target; prints one progress line.
  bool passes(const std::vector<std::string>& fp32, const std::string& what) {
    const fs::path engine = scratch_ / fmt::format("step{}.engine", step_);
    builder::build_engine(o_.onnx, engine, config(fp32));
    std::shared_ptr<Engine> e = Engine::load(engine, {.backend = o_.backend});
    if (candidates_.empty() && fp32.empty()) collect_candidates(*e);
    const auto out = e->create_execution_context({.num_threads = o_.threads})->execute(feeds_);
    fs::remove(engine);
    const auto results = compare::compare_tensor_maps(reference_, out, options_);
    const bool ok = judge(results);
    fmt::print("step {}: {} of {} layers in fp32 ({}): {} ({})\n", ++step_, fp32.size(),
               candidates_.size(), what, ok ? "PASS" : "FAIL", worst_figures(results));
    std::fflush(stdout);
    return ok;
  }

  const std::vector<std::string>& candidates() const { return candidates_; }

 private:
  builder::BuildConfig config(const std::vector<std::string>& fp32) const {
    builder::BuildConfig c;
    c.int8 = o_.int8;
    c.fp16 = o_.fp16;
    c.calibration_cache = cache_;
    // The first build calibrates (when the cache is not there yet) and writes the cache.
    if (!fs::exists(cache_)) c.calibration_data = o_.calibration_data;
    c.calibration_batch_size = o_.calibration_batch_size;
    for (const auto& n : fp32) c.layer_precision.emplace_back(n, DataType::kFloat32);
    c.precision_constraints = fp32.empty() ? "none" : "obey";
    c.backend = o_.backend;
    c.num_threads = o_.threads;
    return c;
  }

  // The reduced-precision layers of the first (nothing forced) engine that are ONNX nodes.
  void collect_candidates(const Engine& e) {
    std::set<std::string> nodes;
    for (const auto& n : onnx_model_info(o_.onnx).nodes) nodes.insert(n.name);
    for (const auto& l : e.layers())
      if ((l.precision == "int8" || l.precision == "fp16" || l.precision == "fp8") &&
          nodes.count(l.name))
        candidates_.push_back(l.name);
  }

  bool judge(const std::vector<compare::TensorComparison>& results) const {
    for (const auto& c : results)
      if (o_.min_sqnr ? !(c.problem.empty() && c.sqnr_db >= *o_.min_sqnr) : !c.pass) return false;
    return true;
  }

  static std::string worst_figures(const std::vector<compare::TensorComparison>& results) {
    const compare::TensorComparison* worst = nullptr;
    for (const auto& c : results)
      if (!worst || c.sqnr_db < worst->sqnr_db) worst = &c;
    return worst ? fmt::format("'{}': {}", worst->name, short_figures(*worst)) : "no outputs";
  }

  const DebugPrecisionCli& o_;
  fs::path scratch_;
  compare::CompareOptions options_;
  std::map<std::string, Tensor> feeds_, reference_;
  fs::path cache_;
  std::vector<std::string> candidates_;
  int step_ = 0;
};

std::vector<std::string> with_layers(std::vector<std::string> v,
                                     const std::vector<std::string>& more) {
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

// The fewest leading candidates (in [0, hi)) that, in fp32 with `kept`, pass; hi when the
// candidates before hi are all needed. Assumes more fp32 layers never hurt (bisection).
size_t shortest_passing_prefix(Prober& p, const std::vector<std::string>& kept, size_t hi) {
  const auto& c = p.candidates();
  size_t lo = 0;  // prefix lo fails (known for 0), prefix hi passes
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    const std::vector<std::string> prefix(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(mid));
    if (p.passes(with_layers(kept, prefix), fmt::format("the first {} candidates", mid)))
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

// Layers that must stay in fp32: the last layer of the shortest passing prefix is needed; it is
// kept, and the search repeats on the layers before it until the kept ones pass alone.
std::vector<std::string> bisect(Prober& p) {
  std::vector<std::string> kept;
  size_t hi = p.candidates().size();
  while (hi > 0) {
    const size_t n = shortest_passing_prefix(p, kept, hi);
    kept.push_back(p.candidates()[n - 1]);
    fmt::print("  needs fp32: {}\n", kept.back());
    hi = n - 1;
    if (hi == 0 || p.passes(kept, "the layers found so far")) break;
  }
  return kept;
}

std::string shell_quoted(const std::string& s) {
  if (s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_/.:-") ==
      std::string::npos)
    return s;
  std::string r = "'";
  for (char ch : s) r += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return r + "'";
}

std::string regex_escaped(const std::string& s) {
  std::string r = "^";
  for (char ch : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(ch) != std::string_view::npos) r += '\\';
    r += ch;
  }
  return r + "$";
}

void print_precision_result(const std::vector<std::string>& kept, size_t candidates) {
  fmt::print("result: {} of {} reduced-precision layers must stay in fp32{}\n", kept.size(),
             candidates, kept.empty() ? "" : ":");
  if (kept.empty()) return;
  std::string lp, ex;
  for (const auto& n : kept) {
    lp += " --layer_precision " + shell_quoted(n + ":fp32");
    ex += " " + shell_quoted(regex_escaped(n));
  }
  fmt::print(
      "for `trtutils build` (weakly typed, as tested here):\n "
      "{} --precision_constraints obey\n",
      lp);
  fmt::print(
      "for `trtutils quantize` (the same ONNX nodes; its own calibration, not tested "
      "here):\n  --nodes_to_exclude{}\n",
      ex);
}

void run_debug_precision(const DebugPrecisionCli& o) {
  TRT_CHECK(o.int8 || o.fp16, ErrorCode::kConfig,
            "give the reduced precision to debug: --int8 (with --calibration_data or "
            "--calibration_cache) or --fp16");
  TRT_CHECK(!o.int8 || !o.calibration_data.empty() || fs::exists(o.calibration_cache),
            ErrorCode::kConfig,
            "--int8 needs INT8 scales: give --calibration_data calib.npy (or an existing "
            "--calibration_cache)");
  TRT_CHECK(!o.min_sqnr || (o.tol.atol.empty() && o.tol.rtol.empty()), ErrorCode::kConfig,
            "give either --min_sqnr or --atol / --rtol, not both");
  ScratchDir scratch("debug_precision");
  Prober p(o, scratch.path());
  if (p.passes({}, "none")) {
    fmt::print("the build meets the target with every layer in reduced precision\n");
    print_precision_result({}, p.candidates().size());
    return;
  }
  TRT_CHECK(!p.candidates().empty(), ErrorCode::kInvalidArgument,
            "the build fails the target but has no reduced-precision layer to keep in fp32");
  TRT_CHECK(p.passes(p.candidates(), "all"), ErrorCode::kOutOfRange,
            "even with every reduced-precision layer in fp32 the outputs miss the target: "
            "loosen --atol / --rtol / --min_sqnr (check `trtutils compare` of the fp32 build)");
  print_precision_result(bisect(p), p.candidates().size());
}

}  // namespace

void add_debug_precision_command(CLI::App& app) {
  auto o = std::make_shared<DebugPrecisionCli>();
  CLI::App* sub = app.add_subcommand(
      "debug_precision",
      "Find the layers that must stay in fp32 for a weakly typed --int8 / --fp16 build to meet "
      "a tolerance against the float ONNX model (bisection over the engine's reduced-precision "
      "layers in topological order; one build per step from one calibration cache); prints "
      "the --layer_precision entries for build and --nodes_to_exclude for quantize");
  sub->add_option("--onnx", o->onnx, "the float ONNX model")->required();
  sub->add_flag("--int8", o->int8, "debug an INT8 build");
  sub->add_flag("--fp16", o->fp16, "debug an FP16 build (also allowed with --int8)");
  sub->add_option("--calibration_data", o->calibration_data,
                  ".npy of calibration samples (first axis) for the INT8 scales");
  sub->add_option("--calibration_cache", o->calibration_cache,
                  "TensorRT calibration cache: read when it exists, else written after "
                  "calibrating");
  add_ranged(sub, "--calibration_batch_size", o->calibration_batch_size,
             "samples per calibration batch", int64_t{1}, kMaxBatch);
  sub->add_option("--backend", o->backend, "backend the engines are built for and run on")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  add_input_flags(sub, o->in);
  add_tolerance_flags(sub, o->tol);
  sub->add_option("--min_sqnr", o->min_sqnr,
                  "instead of --atol / --rtol: every output's SQNR against the float model must "
                  "be at least this (dB)")
      ->check(in_range(-1000.0, 1000.0));
  add_threads_flag(sub, o->threads, "CPU threads");
  sub->callback([o] { run_debug_precision(*o); });
}

}  // namespace trtutils::cli
