#include "quantize/calibration.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/check.h"
#include "engine/session.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

CalibrationMethod calibration_method_from_name(const std::string& name) {
  if (name == "max") return CalibrationMethod::kMax;
  if (name == "entropy") return CalibrationMethod::kEntropy;
  if (name == "percentile") return CalibrationMethod::kPercentile;
  if (name == "mse") return CalibrationMethod::kMse;
  TRT_THROW(ErrorCode::kInvalidArgument,
            "invalid calibration_method '{}': choose one of max, entropy, percentile, mse", name);
}

std::string calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::kMax:
      return "max";
    case CalibrationMethod::kEntropy:
      return "entropy";
    case CalibrationMethod::kPercentile:
      return "percentile";
    case CalibrationMethod::kMse:
      return "mse";
  }
  return "?";
}

void TensorStats::add(const Tensor& t) {
  if (t.dtype() == DataType::kFloat32) {
    add(t.data<float>(), t.numel());
    return;
  }
  std::vector<float> v = t.to_float_vector();
  add(v.data(), static_cast<int64_t>(v.size()));
}

void TensorStats::add(const float* x, int64_t n) {
  if (n == 0) return;
  double m = 0;
#pragma omp parallel for reduction(max : m) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double a = std::fabs(static_cast<double>(x[i]));
    if (a > m && std::isfinite(a)) m = a;
  }
  absmax_ = std::max(absmax_, m);
  if (m > range_) rebin(m);
  const int64_t nb = static_cast<int64_t>(hist_.size());
  count_ += n;
  if (range_ == 0) {  // all zeros so far
    hist_[0] += static_cast<double>(n);
    return;
  }
  const double inv_w = static_cast<double>(nb) / range_;
  const int nt = n < (1 << 16) ? 1 : omp_get_max_threads();
  std::vector<std::vector<double>> local(nt, std::vector<double>(nb, 0.0));
#pragma omp parallel num_threads(nt)
  {
    std::vector<double>& h = local[omp_get_thread_num()];
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const double a = std::fabs(static_cast<double>(x[i]));
      if (!std::isfinite(a)) continue;
      const int64_t b = std::min<int64_t>(nb - 1, static_cast<int64_t>(a * inv_w));
      h[b] += 1;
    }
  }
  for (const auto& h : local)
    for (int64_t b = 0; b < nb; ++b) hist_[b] += h[b];
}

void TensorStats::rebin(double new_range) {
  const int64_t nb = static_cast<int64_t>(hist_.size());
  if (range_ == 0) {  // every previous value was 0: it stays in bin 0
    range_ = new_range;
    return;
  }
  std::vector<double> h(nb, 0.0);
  const double w1 = range_ / static_cast<double>(nb), w2 = new_range / static_cast<double>(nb);
  for (int64_t j = 0; j < nb; ++j) {
    if (hist_[j] == 0) continue;
    const double lo = static_cast<double>(j) * w1, hi = lo + w1;
    const int64_t k = std::min<int64_t>(nb - 1, static_cast<int64_t>(lo / w2));
    const double boundary = static_cast<double>(k + 1) * w2;
    if (hi <= boundary || k == nb - 1) {
      h[k] += hist_[j];
    } else {  // w2 >= w1: an old bin overlaps at most two new ones
      const double f = (boundary - lo) / w1;
      h[k] += hist_[j] * f;
      h[k + 1] += hist_[j] * (1 - f);
    }
  }
  hist_ = std::move(h);
  range_ = new_range;
}

namespace {

double amax_percentile(const TensorStats& s, double p) {
  const auto& h = s.histogram();
  double total = 0;
  for (double c : h) total += c;
  const double target = total * p / 100.0;
  const double w = s.range() / static_cast<double>(h.size());
  double cum = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    cum += h[i];
    if (cum >= target) return std::min(s.absmax(), static_cast<double>(i + 1) * w);
  }
  return s.absmax();
}

// Squared error of quantizing v with threshold t (scale t / qmax).
inline double quant_error(double v, double t, const CalibratorParams& p) {
  if (v >= t) return (v - t) * (v - t);
  const double s = t / p.qmax;
  double q;
  if (p.fp8) {
    q = static_cast<double>(e4m3fn_to_float(float_to_e4m3fn(static_cast<float>(v / s)))) * s;
  } else {
    q = std::nearbyint(v / s) * s;
  }
  return (v - q) * (v - q);
}

double amax_mse(const TensorStats& s, const CalibratorParams& p) {
  const auto& h = s.histogram();
  const int64_t nb = static_cast<int64_t>(h.size());
  const double w = s.range() / static_cast<double>(nb);
  // Candidate thresholds: bin edges, at most ~512 of them; each bin is sampled at 4 points
  // (a bin centre alone makes the rounding error of narrow distributions jumpy).
  const int64_t stride = std::max<int64_t>(1, nb / 512);
  std::vector<int64_t> cands;
  for (int64_t i = stride - 1; i < nb; i += stride) cands.push_back(i);
  if (cands.empty() || cands.back() != nb - 1) cands.push_back(nb - 1);
  std::vector<double> err(cands.size(), 0.0);
#pragma omp parallel for schedule(dynamic, 8)
  for (size_t c = 0; c < cands.size(); ++c) {
    const double t = static_cast<double>(cands[c] + 1) * w;
    double e = 0;
    for (int64_t j = 0; j < nb; ++j) {
      if (h[j] == 0) continue;
      double ej = 0;
      for (int k = 0; k < 4; ++k)
        ej += quant_error((static_cast<double>(j) + (k + 0.5) / 4) * w, t, p);
      e += h[j] * ej / 4;
    }
    err[c] = e;
  }
  const size_t best = static_cast<size_t>(std::min_element(err.begin(), err.end()) - err.begin());
  return std::min(s.absmax(), static_cast<double>(cands[best] + 1) * w);
}

double amax_entropy(const TensorStats& s, const CalibratorParams& p) {
  std::vector<double> h = s.histogram();
  const int64_t nb = static_cast<int64_t>(h.size());
  const int64_t nq = p.num_quant_bins;
  if (nb <= nq) return s.absmax();
  // The spike of exact zeros (ReLU outputs, padding) says nothing about the range: bin 0 takes
  // bin 1's count, as TensorRT's calibrator does.
  h[0] = h[1];
  const double w = s.range() / static_cast<double>(nb);
  std::vector<double> suffix(nb + 1, 0.0);
  for (int64_t j = nb - 1; j >= 0; --j) suffix[j] = suffix[j + 1] + h[j];
  std::vector<double> kl(nb + 1, std::numeric_limits<double>::infinity());
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = nq; i <= nb; ++i) {
    // P: hist[0:i] with the outliers clipped into its last bin. Q: hist[0:i] merged into nq
    // equal-width groups, each group's count spread evenly over its non-empty bins.
    std::vector<double> q(i, 0.0);
    std::vector<double> group_sum(nq, 0.0), group_n(nq, 0.0);
    std::vector<int64_t> group(i);
    for (int64_t j = 0; j < i; ++j) {
      group[j] = std::min<int64_t>(nq - 1, j * nq / i);
      if (h[j] != 0) {
        group_sum[group[j]] += h[j];
        group_n[group[j]] += 1;
      }
    }
    double qs = 0;
    for (int64_t j = 0; j < i; ++j)
      if (h[j] != 0) {
        q[j] = group_sum[group[j]] / group_n[group[j]];
        qs += q[j];
      }
    const double ps = suffix[0];
    if (ps <= 0 || qs <= 0) continue;
    double d = 0;
    for (int64_t j = 0; j < i; ++j) {
      const double pj = (j == i - 1 ? h[j] + suffix[i] : h[j]) / ps;
      if (pj <= 0) continue;
      const double qj = q[j] / qs;
      if (qj <= 0) {
        d = std::numeric_limits<double>::infinity();
        break;
      }
      d += pj * std::log(pj / qj);
    }
    kl[i] = d;
  }
  // The last minimum: on ties the wider range.
  int64_t best = nb;
  for (int64_t i = nq; i <= nb; ++i)
    if (kl[i] <= kl[best]) best = i;
  return std::min(s.absmax(), static_cast<double>(best) * w);
}

}  // namespace

double compute_amax(const TensorStats& s, CalibrationMethod method, const CalibratorParams& p) {
  if (s.absmax() == 0) return 0;
  switch (method) {
    case CalibrationMethod::kMax:
      return s.absmax();
    case CalibrationMethod::kPercentile:
      return amax_percentile(s, p.percentile);
    case CalibrationMethod::kMse:
      return amax_mse(s, p);
    case CalibrationMethod::kEntropy:
      return amax_entropy(s, p);
  }
  return s.absmax();
}

std::map<std::string, TensorStats> collect_stats(const ir::Model& model,
                                                 const std::vector<std::string>& tensors,
                                                 int64_t num_batches, const BatchFn& feed_batch,
                                                 int64_t num_bins, int num_threads) {
  ir::Model m = model;
  std::set<std::string> graph_inputs, outputs;
  for (const auto& v : m.graph.inputs) graph_inputs.insert(v.name);
  for (const auto& v : m.graph.outputs) outputs.insert(v.name);
  for (const auto& t : tensors) {
    if (graph_inputs.count(t) || outputs.count(t)) continue;
    ir::ValueInfo vi;
    vi.name = t;
    if (auto known = m.graph.find_value_info(t)) vi = *known;
    m.graph.outputs.push_back(vi);
    outputs.insert(t);
  }
  Session session(std::move(m), {.num_threads = num_threads});
  std::map<std::string, TensorStats> stats;
  for (const auto& t : tensors) stats.emplace(t, TensorStats(num_bins));
  for (int64_t b = 0; b < num_batches; ++b) {
    auto feeds = feed_batch(b);
    auto outs = session.run(feeds);
    for (auto& [name, st] : stats) {
      auto it = outs.find(name);
      if (it != outs.end()) {
        st.add(it->second);
        continue;
      }
      auto f = feeds.find(name);
      TRT_CHECK(f != feeds.end(), ErrorCode::kInternal, "calibration: tensor '{}' was not computed",
                name);
      st.add(f->second);
    }
    TRT_LOG_VERBOSE("calibration batch {}/{}", b + 1, num_batches);
  }
  return stats;
}

}  // namespace trtutils::quantize
