// trtutils compare A B [--a_backend ...] [--input NAME=FILE.npy ...] [--seed N] [--atol ...]
//                      [--rtol ...] [--check_error_stat ...] [--layerwise [--plot FILE.png]]
//                      [--json FILE] [--save_outputs DIR]
// Runs two sides (engine, ONNX model, or saved outputs) on the same inputs and compares their
// outputs, as `polygraphy run --trt --onnxrt` does. Exit code 0: every output within the
// tolerance; 1: one is not (or an error); 2: a usage error.
#include <algorithm>
#include <filesystem>
#include <optional>

#include "commands.h"
#include "compare_flags.h"
#include "compare_layers.h"
#include "compare_report.h"
#include "compare_side.h"
#include "flag_ranges.h"
#include "trtutils/check.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"
#include "trtutils/npy.h"

namespace trtutils::cli {

namespace {

namespace fs = std::filesystem;

struct CompareCli {
  std::vector<std::string> sides;
  std::string a_backend = "auto", b_backend = "auto";
  InputFlags in;
  ToleranceFlags tol;
  bool layerwise = false;
  std::string plot, json, save_outputs;
  int threads = 0;
};

// A saved-outputs side holds <sanitized name>.npy: its tensors take the other side's names.
std::map<std::string, Tensor> renamed_like(std::map<std::string, Tensor> saved,
                                           const std::vector<std::string>& names) {
  std::map<std::string, Tensor> r;
  for (const auto& n : names) {
    auto it = saved.find(sanitize_file_name(n));
    if (it != saved.end()) r[n] = it->second;
  }
  for (const auto& [file, t] : saved)
    if (std::none_of(names.begin(), names.end(),
                     [&](const std::string& n) { return sanitize_file_name(n) == file; }))
      TRT_LOG_INFO("saved output '{}.npy' is not an output of the other side: ignored", file);
  return r;
}

void save_compare_side(const fs::path& dir, const std::map<std::string, Tensor>& outputs) {
  fs::create_directories(dir);
  for (const auto& [name, t] : outputs) npy_save(dir / (sanitize_file_name(name) + ".npy"), t);
  fmt::print("saved {} outputs in {}\n", outputs.size(), dir.string());
}

std::map<std::string, Tensor> compare_feeds_for(const CompareSide& a, const CompareSide& b,
                                                const InputFlags& f) {
  const CompareSide* model = !a.is_saved() ? &a : (!b.is_saved() ? &b : nullptr);
  if (!model) return {};
  const CompareSide* other = model == &a ? &b : &a;
  if (!other->is_saved())
    for (const auto& v : other->inputs())
      TRT_CHECK_ARG(std::any_of(model->inputs().begin(), model->inputs().end(),
                                [&](const ModelTensorInfo& w) { return w.name == v.name; }),
                    "side B's input '{}' is not an input of side A: both sides must take the "
                    "same inputs",
                    v.name);
  return make_compare_feeds(model->inputs(), f);
}

void check_compare_flags(const CompareCli& o) {
  TRT_CHECK(o.sides.size() == 2, ErrorCode::kConfig,
            "give two sides: trtutils compare A B (engine files, ONNX models or folders of "
            "saved outputs)");
  TRT_CHECK(o.plot.empty() || o.layerwise, ErrorCode::kConfig,
            "--plot draws the layerwise SQNR: add --layerwise");
  for (const auto& [flag, path] : {std::pair{"--json", o.json}, std::pair{"--plot", o.plot}})
    if (!path.empty())
      check_output_is_not_input(flag, path, {{"A", o.sides[0]}, {"B", o.sides[1]}});
}

void write_compare_json(const CompareCli& o, const CompareSide& a, const CompareSide& b,
                        const compare::CompareOptions& opts,
                        const std::vector<compare::TensorComparison>& results,
                        const LayerwiseResult* layers, bool pass) {
  nlohmann::json outs = nlohmann::json::array();
  for (const auto& c : results) outs.push_back(comparison_json(c));
  nlohmann::json j = {{"a", a.describe()},
                      {"b", b.describe()},
                      {"check_error_stat", compare::error_stat_name(opts.check_error_stat)},
                      {"error_quantile", opts.error_quantile},
                      {"outputs", outs},
                      {"pass", pass}};
  if (layers) j["layerwise"] = layerwise_json(*layers);
  write_file_atomic(o.json, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  fmt::print("figures written to {}\n", o.json);
}

void run_compare(const CompareCli& o) {
  check_compare_flags(o);
  const compare::CompareOptions opts = resolve_tolerance_flags(o.tol);
  ScratchDir scratch("compare");
  const CompareSide a("A", o.sides[0], o.a_backend, o.threads, scratch.path());
  const CompareSide b("B", o.sides[1], o.b_backend, o.threads, scratch.path());
  fmt::print("A: {}\nB: {}\n", a.describe(), b.describe());
  const auto feeds = compare_feeds_for(a, b, o.in);
  // The final outputs come from normal runs: nothing marked, the fusions the engines have.
  auto ra = a.run(feeds), rb = b.run(feeds);
  if (a.is_saved() && !b.is_saved()) ra = renamed_like(std::move(ra), b.output_names());
  if (b.is_saved() && !a.is_saved()) rb = renamed_like(std::move(rb), a.output_names());
  const auto results = compare::compare_tensor_maps(ra, rb, opts, a.output_names());
  print_comparisons(results, opts);
  std::optional<LayerwiseResult> layers;
  if (o.layerwise) {
    layers = compare_layers(a, b, feeds, opts);
    print_layerwise(*layers);
    if (!o.plot.empty()) {
      compare::plot_sqnr_png(layers->tensors, o.plot, "Layerwise SQNR (dB), B against A");
      fmt::print("plot written to {}\n", o.plot);
    }
  }
  if (!o.save_outputs.empty()) {
    save_compare_side(fs::path(o.save_outputs) / "a", ra);
    save_compare_side(fs::path(o.save_outputs) / "b", rb);
  }
  const auto failed = std::count_if(results.begin(), results.end(),
                                    [](const compare::TensorComparison& c) { return !c.pass; });
  if (!o.json.empty())
    write_compare_json(o, a, b, opts, results, layers ? &*layers : nullptr, !failed);
  TRT_CHECK(failed == 0, ErrorCode::kOutOfRange,
            "{} of {} outputs are outside the tolerance (FAIL above); --atol / --rtol "
            "(NAME:VALUE for one output) or --check_error_stat loosen it{}",
            failed, results.size(), o.layerwise ? "" : ", --layerwise finds the first bad layer");
  fmt::print("PASS: all {} outputs within the tolerance\n", results.size());
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareCli>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Run two sides on the same inputs and compare their outputs (exit code 1 when one is "
      "outside the tolerance). A side is an engine file, an ONNX model (.onnx) or a folder of "
      "saved <output name>.npy files; A is the reference. --layerwise marks every layer output "
      "in a separate run of each side (the PASS/FAIL of the outputs always comes from normal, "
      "unmarked runs) and compares the tensors both expose, matching names (a Q/DQ model's "
      "<T>_dequantized matches T); tensors a fused engine does not expose are skipped and "
      "counted. Engines are marked after their fusions, so on the CPU the marked run computes "
      "the same layers");
  sub->add_option("sides", o->sides, "A B: engine, .onnx or folder of saved outputs")->expected(2);
  for (auto [flag, value] :
       {std::pair{"--a_backend", &o->a_backend}, std::pair{"--b_backend", &o->b_backend}})
    sub->add_option(flag, *value,
                    "backend of that side: auto, cpu, cuda (an ONNX model on cuda is built into "
                    "an fp32 engine first)")
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
        ->capture_default_str();
  add_input_flags(sub, o->in);
  add_tolerance_flags(sub, o->tol);
  sub->add_flag("--layerwise", o->layerwise,
                "also compare every layer output both sides expose, in topological order, and "
                "name the first one outside the tolerance");
  sub->add_option("--plot", o->plot, "with --layerwise: PNG chart of the per-layer SQNR");
  sub->add_option("--json", o->json, "write every figure as JSON");
  sub->add_option("--save_outputs", o->save_outputs,
                  "write each side's outputs as DIR/a/<name>.npy and DIR/b/<name>.npy");
  add_threads_flag(sub, o->threads, "CPU threads");
  sub->callback([o] { run_compare(*o); });
}

}  // namespace trtutils::cli
