// compare / debug_precision output: the per-output figures as text and as JSON, and the
// layer-by-layer table of --layerwise.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trtutils/compare.h"

namespace trtutils::cli {

// Layer-by-layer figures of a marked run of both sides.
struct LayerwiseResult {
  std::vector<compare::TensorComparison> tensors;  // A's topological order
  int64_t skipped = 0;  // A's float layer outputs that B does not expose (fused or renamed)
  const compare::TensorComparison* first_failing() const;
};

// Per output: PASS/FAIL with the tolerance, abs / rel error (max, mean, median, quantile),
// SQNR and cosine.
void print_comparisons(const std::vector<compare::TensorComparison>& results,
                       const compare::CompareOptions& options);
void print_layerwise(const LayerwiseResult& layers);
// A one-line summary of a comparison for progress lines: "SQNR 31.2 dB, max abs 0.01".
std::string short_figures(const compare::TensorComparison& c);

// Non-finite figures are written as the strings "inf", "-inf", "nan" (JSON has no such numbers).
nlohmann::json comparison_json(const compare::TensorComparison& c);
nlohmann::json layerwise_json(const LayerwiseResult& layers);

}  // namespace trtutils::cli
