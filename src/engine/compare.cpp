#include "trtutils/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/check.h"
#include "quantize/report.h"

namespace trtutils::compare {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct StatName {
  ErrorStat stat;
  const char* name;
};
constexpr StatName kStats[] = {{ErrorStat::kElemwise, "elemwise"},
                               {ErrorStat::kMax, "max"},
                               {ErrorStat::kMean, "mean"},
                               {ErrorStat::kMedian, "median"},
                               {ErrorStat::kQuantile, "quantile"}};

Shape squeezed(const Shape& s) {
  Shape r;
  for (int64_t d : s)
    if (d != 1) r.push_back(d);
  return r;
}

// Interpolated q-quantile of v (reordered); v not empty.
double quantile_of(std::vector<double>& v, double q) {
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  const double a = v[lo];
  if (lo + 1 >= v.size()) return a;
  const double b = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
  const double f = pos - static_cast<double>(lo);
  return f == 0 ? a : a + (b - a) * f;
}

ErrorStats stats_of(std::vector<double> v, double q) {
  ErrorStats s;
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) {
    s.max = std::max(s.max, x);
    sum += x;
  }
  s.mean = sum / static_cast<double>(v.size());
  s.quantile = quantile_of(v, q);
  s.median = quantile_of(v, 0.5);
  return s;
}

double picked(const ErrorStats& s, ErrorStat stat) {
  switch (stat) {
    case ErrorStat::kMax:
      return s.max;
    case ErrorStat::kMean:
      return s.mean;
    case ErrorStat::kMedian:
      return s.median;
    default:
      return s.quantile;
  }
}

// The element-wise errors, the mismatch count and the decision.
void measure(const Tensor& a, const Tensor& b, const CompareOptions& o, TensorComparison& c) {
  const std::vector<float> x = a.to_float_vector(), y = b.to_float_vector();
  std::vector<double> abs_err(x.size()), rel_err(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = x[i], got = y[i];
    const bool both_nan = std::isnan(ref) && std::isnan(got);
    // inf == inf: 0; NaN on one side only: +inf (sorts, and fails any tolerance).
    double e = both_nan || ref == got ? 0.0 : std::fabs(ref - got);
    if (std::isnan(e)) e = kInf;
    abs_err[i] = e;
    rel_err[i] = e == 0 ? 0.0 : (ref == 0 ? kInf : e / std::fabs(ref));
    if (!(e <= c.tolerance.atol + c.tolerance.rtol * std::fabs(ref))) ++c.num_mismatched;
  }
  c.abs_error = stats_of(std::move(abs_err), o.error_quantile);
  c.rel_error = stats_of(std::move(rel_err), o.error_quantile);
  quantize::MetricsAccumulator acc;
  acc.add(a, b);
  const quantize::PairMetrics m = acc.result();
  c.sqnr_db = m.sqnr_db;
  c.cosine = m.cosine;
  if (o.check_error_stat == ErrorStat::kElemwise)
    c.pass = c.num_mismatched == 0;
  else
    c.pass = picked(c.abs_error, o.check_error_stat) <= c.tolerance.atol ||
             picked(c.rel_error, o.check_error_stat) <= c.tolerance.rtol;
}

}  // namespace

ErrorStat parse_error_stat(const std::string& text) {
  for (const auto& s : kStats)
    if (text == s.name) return s.stat;
  TRT_THROW(ErrorCode::kInvalidArgument,
            "'{}' is not an error statistic: choose one of elemwise, max, mean, median, quantile",
            text);
}

const char* error_stat_name(ErrorStat stat) {
  for (const auto& s : kStats)
    if (stat == s.stat) return s.name;
  return "?";
}

TensorComparison compare_tensors(const std::string& name, const Tensor& a, const Tensor& b,
                                 const CompareOptions& options) {
  TRT_CHECK_ARG(options.error_quantile >= 0 && options.error_quantile <= 1,
                "error quantile {} is outside 0..1", options.error_quantile);
  TensorComparison c;
  c.name = name;
  c.shape_a = a.shape();
  c.shape_b = b.shape();
  auto it = options.per_name.find(name);
  c.tolerance = it != options.per_name.end() ? it->second : options.tolerance;
  if (squeezed(a.shape()) != squeezed(b.shape())) {
    c.problem = fmt::format("shapes differ: {} vs {}", shape_str(a.shape()), shape_str(b.shape()));
    return c;
  }
  c.num_elements = a.numel();
  if (c.num_elements == 0) {
    c.pass = true;
    c.sqnr_db = kInf;
    c.cosine = 1;
    return c;
  }
  measure(a, b, options, c);
  return c;
}

std::vector<TensorComparison> compare_tensor_maps(const std::map<std::string, Tensor>& a,
                                                  const std::map<std::string, Tensor>& b,
                                                  const CompareOptions& options,
                                                  const std::vector<std::string>& order) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  auto add = [&](const std::string& n) {
    if ((a.count(n) || b.count(n)) && seen.insert(n).second) names.push_back(n);
  };
  for (const auto& n : order) add(n);
  for (const auto& [n, t] : a) add(n);
  for (const auto& [n, t] : b) add(n);
  std::vector<TensorComparison> r;
  for (const auto& n : names) {
    auto ia = a.find(n), ib = b.find(n);
    if (ia != a.end() && ib != b.end()) {
      r.push_back(compare_tensors(n, ia->second, ib->second, options));
      continue;
    }
    TensorComparison c;
    c.name = n;
    c.problem = ia == a.end() ? "only in B" : "only in A";
    r.push_back(std::move(c));
  }
  return r;
}

}  // namespace trtutils::compare
