// Comparing two sets of named tensors (e.g. an engine's outputs against an ONNX model's), as
// `trtutils compare` and polygraphy's comparator do: per tensor the absolute and relative error
// (max, mean, median, a quantile), SQNR and cosine similarity, and PASS/FAIL under tolerances.
//
//   trtutils::compare::CompareOptions o;
//   o.tolerance = {.atol = 1e-3, .rtol = 1e-3};
//   o.per_name["logits"] = {.atol = 1e-2, .rtol = 1e-2};
//   for (const auto& c : trtutils::compare::compare_tensor_maps(reference, test, o))
//     if (!c.pass) ...;
//
// Side A is the reference: relative errors are |a - b| / |a| (0 where both are 0, +inf where
// only a is). SQNR is 10 log10(sum a^2 / sum (a - b)^2) dB (+inf when equal), the definition of
// the quantize report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "trtutils/tensor.h"

namespace trtutils::compare {

// How the error decides PASS (polygraphy's --check-error-stat):
//   elemwise  every element satisfies |a - b| <= atol + rtol * |a| (numpy.isclose)
//   max, mean, median, quantile   that statistic of the absolute error is <= atol, or that of
//             the relative error is <= rtol
enum class ErrorStat { kElemwise, kMax, kMean, kMedian, kQuantile };
// "elemwise", "max", "mean", "median", "quantile"; Error(kInvalidArgument) listing them.
ErrorStat parse_error_stat(const std::string& text);
const char* error_stat_name(ErrorStat stat);

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
};

struct CompareOptions {
  Tolerance tolerance;                        // for every tensor not in per_name
  std::map<std::string, Tolerance> per_name;  // by tensor name
  ErrorStat check_error_stat = ErrorStat::kElemwise;
  double error_quantile = 0.99;  // for kQuantile, and the reported quantile figures (0..1)
};

struct ErrorStats {
  double max = 0, mean = 0, median = 0, quantile = 0;
};

struct TensorComparison {
  std::string name;
  Shape shape_a, shape_b;
  // Empty when compared; otherwise why not ("only in A", "shape [2] vs [3]"): then pass = false.
  std::string problem;
  int64_t num_elements = 0;
  int64_t num_mismatched = 0;  // elements outside atol + rtol * |a| (NaN on one side counts)
  ErrorStats abs_error, rel_error;
  double sqnr_db = 0;
  double cosine = 0;
  Tolerance tolerance;  // the one applied
  bool pass = false;
};

// The tolerance options apply to `name`'s entry of options.per_name, else options.tolerance.
// Tensors of any numeric dtype are compared as values; the shapes must be equal up to dims of
// size 1 ([1, 10] vs [10]).
TensorComparison compare_tensors(const std::string& name, const Tensor& a, const Tensor& b,
                                 const CompareOptions& options);

// Every name in `a` or `b`, in `order` (names in it first, then the rest by name); a name on
// one side only fails with its problem set.
std::vector<TensorComparison> compare_tensor_maps(const std::map<std::string, Tensor>& a,
                                                  const std::map<std::string, Tensor>& b,
                                                  const CompareOptions& options,
                                                  const std::vector<std::string>& order = {});

// A PNG bar chart (written atomically) of the SQNR of each comparison in the given order (e.g.
// layer by layer): green when it passes, red when it fails, the first failing one named in the
// subtitle. Error(kIO) naming the path when it cannot be written.
void plot_sqnr_png(const std::vector<TensorComparison>& comparisons,
                   const std::filesystem::path& path, const std::string& title);

}  // namespace trtutils::compare
