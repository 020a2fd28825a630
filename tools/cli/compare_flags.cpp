#include "compare_flags.h"

#include <cmath>
#include <filesystem>

#include "commands.h"
#include "flag_ranges.h"
#include "trtutils/check.h"
#include "trtutils/logging.h"
#include "trtutils/npy.h"

namespace trtutils::cli {

namespace {

double parse_tolerance(const std::string& text, const std::string& spec, const char* flag) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  TRT_CHECK_ARG(!text.empty() && end == text.c_str() + text.size() && std::isfinite(v) && v >= 0,
                "{} '{}': expected a number >= 0 (e.g. {} 1e-3) or NAME:VALUE for one output", flag,
                spec, flag);
  return v;
}

struct ToleranceSpec {
  std::string name;  // empty: the default
  double value = 0;
};

// VALUE or NAME:VALUE (the last ':' splits, so names may hold ':').
ToleranceSpec parse_tolerance_spec(const std::string& spec, const char* flag) {
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos) return {"", parse_tolerance(spec, spec, flag)};
  TRT_CHECK_ARG(colon > 0, "{} '{}': the tensor name before ':' is empty", flag, spec);
  return {spec.substr(0, colon), parse_tolerance(spec.substr(colon + 1), spec, flag)};
}

// Defaults first, then per-name entries, which start from the defaults.
void apply_tolerances(const std::vector<std::string>& specs, const char* flag,
                      double compare::Tolerance::*field, compare::CompareOptions& o, bool named) {
  for (const auto& spec : specs) {
    const ToleranceSpec t = parse_tolerance_spec(spec, flag);
    if (t.name.empty() == named) continue;
    if (!named) {
      o.tolerance.*field = t.value;
      continue;
    }
    auto [it, fresh] = o.per_name.try_emplace(t.name, o.tolerance);
    it->second.*field = t.value;
  }
}

ModelTensorInfo with_given_shape(ModelTensorInfo v, const std::map<std::string, Shape>& shapes) {
  auto it = shapes.find(v.name);
  if (it != shapes.end()) {
    std::vector<ModelDim> s;
    for (int64_t d : it->second) s.push_back({.value = d});
    v.shape = s;
    return v;
  }
  TRT_CHECK_ARG(v.shape.has_value(),
                "input '{}' has no declared shape: give --shapes {}:DIMS "
                "(e.g. 1x3x224x224) or --input {}=FILE.npy",
                v.name, v.name, v.name);
  for (const auto& d : *v.shape)
    TRT_CHECK_ARG(d.is_static(),
                  "input '{}' has a dynamic dimension ('{}'): give its shape with --shapes "
                  "{}:DIMS (e.g. 1x3x224x224) or the data with --input {}=FILE.npy",
                  v.name, d.param.empty() ? "?" : d.param, v.name, v.name);
  return v;
}

std::map<std::string, std::string> given_input_files(const std::vector<ModelTensorInfo>& inputs,
                                                     const InputFlags& f) {
  std::map<std::string, std::string> files;
  for (const auto& spec : f.inputs) {
    const auto eq = spec.find('=');
    TRT_CHECK_ARG(eq != std::string::npos || inputs.size() == 1,
                  "--input '{}': the model has {} inputs, so give each as NAME=FILE.npy", spec,
                  inputs.size());
    const std::string name = eq == std::string::npos ? inputs[0].name : spec.substr(0, eq);
    TRT_CHECK_ARG(!files.count(name), "--input '{}' is given twice", name);
    files[name] = eq == std::string::npos ? spec : spec.substr(eq + 1);
  }
  return files;
}

}  // namespace

void add_tolerance_flags(CLI::App* sub, ToleranceFlags& f) {
  sub->add_option("--atol", f.atol,
                  "absolute tolerance: VALUE for every output, NAME:VALUE for one (repeatable; "
                  "default 1e-5)");
  sub->add_option("--rtol", f.rtol,
                  "relative tolerance |a - b| / |a|: VALUE or NAME:VALUE (default 1e-5)");
  sub->add_option("--check_error_stat", f.check_error_stat,
                  "what must be within the tolerance: elemwise (every element: |a - b| <= atol "
                  "+ rtol |a|), or the max, mean, median or quantile of the abs error <= atol "
                  "or of the rel error <= rtol")
      ->check(CLI::IsMember({"elemwise", "max", "mean", "median", "quantile"}))
      ->capture_default_str();
  add_ranged(sub, "--error_quantile", f.error_quantile,
             "the quantile reported, and checked with --check_error_stat quantile", 0.0, 1.0);
}

compare::CompareOptions resolve_tolerance_flags(const ToleranceFlags& f) {
  using compare::Tolerance;
  compare::CompareOptions o;
  o.check_error_stat = compare::parse_error_stat(f.check_error_stat);
  o.error_quantile = f.error_quantile;
  for (const bool named : {false, true}) {
    apply_tolerances(f.atol, "--atol", &Tolerance::atol, o, named);
    apply_tolerances(f.rtol, "--rtol", &Tolerance::rtol, o, named);
  }
  return o;
}

void add_input_flags(CLI::App* sub, InputFlags& f) {
  sub->add_option("--input", f.inputs,
                  "NAME=FILE.npy for an input (FILE.npy for a single-input model); inputs not "
                  "given get seeded random data");
  sub->add_option("--input_dir", f.input_dir, "folder of <input name>.npy files");
  add_seed_flag(sub, f.seed);
  sub->add_option("--shapes", f.shapes,
                  "NAME:1x3x224x224: the shape of a dynamic input's random data");
}

std::map<std::string, Tensor> make_compare_feeds(const std::vector<ModelTensorInfo>& inputs,
                                                 const InputFlags& f) {
  std::map<std::string, Shape> shapes;
  for (const auto& spec : f.shapes) shapes.insert(parse_shape_spec(spec, "--shapes"));
  std::map<std::string, std::string> files = given_input_files(inputs, f);
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ModelTensorInfo& v = inputs[i];
    const auto dir_file =
        std::filesystem::path(f.input_dir) / (sanitize_file_name(v.name) + ".npy");
    if (!files.count(v.name) && !f.input_dir.empty() && std::filesystem::exists(dir_file))
      files[v.name] = dir_file.string();
    if (auto it = files.find(v.name); it != files.end()) {
      try {
        feeds[v.name] = npy_load(it->second);
      } catch (const Error& e) {
        throw Error(e.code(), fmt::format("--input {}: {}", v.name, e.what()));
      }
      files.erase(it);
      continue;
    }
    feeds[v.name] = random_input(with_given_shape(v, shapes), f.seed + i);
    TRT_LOG_INFO("input '{}': random data {} (seed {})", v.name, shape_str(feeds[v.name].shape()),
                 f.seed + i);
  }
  TRT_CHECK_ARG(files.empty(), "--input '{}': the model has no input of that name",
                files.empty() ? "" : files.begin()->first);
  return feeds;
}

}  // namespace trtutils::cli
