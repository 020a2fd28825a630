#include "compare_report.h"

#include <fmt/format.h>

#include <cmath>

namespace trtutils::cli {

namespace {

nlohmann::json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

nlohmann::json error_stats_json(const compare::ErrorStats& s) {
  return {{"max", json_number(s.max)},
          {"mean", json_number(s.mean)},
          {"median", json_number(s.median)},
          {"quantile", json_number(s.quantile)}};
}

std::string error_stats_line(const compare::ErrorStats& s, double q) {
  return fmt::format("max {:.4g}  mean {:.4g}  median {:.4g}  p{:g} {:.4g}", s.max, s.mean,
                     s.median, q * 100, s.quantile);
}

}  // namespace

const compare::TensorComparison* LayerwiseResult::first_failing() const {
  for (const auto& t : tensors)
    if (!t.pass) return &t;
  return nullptr;
}

std::string short_figures(const compare::TensorComparison& c) {
  if (!c.problem.empty()) return c.problem;
  return fmt::format("SQNR {:.1f} dB, cosine {:.6f}, max abs {:.4g}, max rel {:.4g}", c.sqnr_db,
                     c.cosine, c.abs_error.max, c.rel_error.max);
}

void print_comparisons(const std::vector<compare::TensorComparison>& results,
                       const compare::CompareOptions& options) {
  for (const auto& c : results) {
    fmt::print("output '{}' {}: {}", c.name, shape_str(c.shape_a), c.pass ? "PASS" : "FAIL");
    if (!c.problem.empty()) {
      fmt::print(" ({})\n", c.problem);
      continue;
    }
    fmt::print(" ({}, atol {:g}, rtol {:g}; {} of {} elements outside atol + rtol |a|)\n",
               compare::error_stat_name(options.check_error_stat), c.tolerance.atol,
               c.tolerance.rtol, c.num_mismatched, c.num_elements);
    fmt::print("  abs error  {}\n", error_stats_line(c.abs_error, options.error_quantile));
    fmt::print("  rel error  {}\n", error_stats_line(c.rel_error, options.error_quantile));
    fmt::print("  SQNR {:.2f} dB  cosine {:.6f}\n", c.sqnr_db, c.cosine);
  }
}

void print_layerwise(const LayerwiseResult& layers) {
  fmt::print(
      "layerwise ({} tensors compared; {} of A's layer outputs skipped: B does not expose "
      "them, fused or renamed)\n",
      layers.tensors.size(), layers.skipped);
  fmt::print("  {:>4}  {:>9}  {:>9}  {:>10}  {:>10}  {:<6}  {}\n", "#", "SQNR dB", "cosine",
             "max abs", "max rel", "result", "tensor");
  for (size_t i = 0; i < layers.tensors.size(); ++i) {
    const auto& t = layers.tensors[i];
    fmt::print("  {:>4}  {:>9.2f}  {:>9.6f}  {:>10.4g}  {:>10.4g}  {:<6}  {}{}\n", i + 1, t.sqnr_db,
               t.cosine, t.abs_error.max, t.rel_error.max, t.pass ? "PASS" : "FAIL", t.name,
               t.problem.empty() ? "" : " (" + t.problem + ")");
  }
  if (const auto* bad = layers.first_failing())
    fmt::print("first layer outside the tolerance: {} ({})\n", bad->name, short_figures(*bad));
  else
    fmt::print("every compared layer is within the tolerance\n");
}

nlohmann::json comparison_json(const compare::TensorComparison& c) {
  nlohmann::json j = {{"name", c.name},           {"pass", c.pass},
                      {"shape_a", c.shape_a},     {"shape_b", c.shape_b},
                      {"atol", c.tolerance.atol}, {"rtol", c.tolerance.rtol}};
  if (!c.problem.empty()) {
    j["problem"] = c.problem;
    return j;
  }
  j["elements"] = c.num_elements;
  j["mismatched"] = c.num_mismatched;
  j["abs_error"] = error_stats_json(c.abs_error);
  j["rel_error"] = error_stats_json(c.rel_error);
  j["sqnr_db"] = json_number(c.sqnr_db);
  j["cosine"] = json_number(c.cosine);
  return j;
}

nlohmann::json layerwise_json(const LayerwiseResult& layers) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : layers.tensors) tensors.push_back(comparison_json(t));
  const auto* bad = layers.first_failing();
  return {{"tensors", tensors},
          {"skipped", layers.skipped},
          {"first_failing", bad ? nlohmann::json(bad->name) : nlohmann::json(nullptr)}};
}

}  // namespace trtutils::cli
