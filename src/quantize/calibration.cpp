#include "quantize/calibration.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "backends/cpu/kernel_registry.h"
#include "backends/cuda/cuda_executor.h"
#include "core/check.h"
#include "engine/session.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

CalibrationMethod calibration_method_from_name(const std::string& name) {
  if (name == "max") return CalibrationMethod::kMax;
  if (name == "entropy") return CalibrationMethod::kEntropy;
  if (name == "percentile") return CalibrationMethod::kPercentile;
  if (name == "mse") return CalibrationMethod::kMse;
  if (name == "auto") return CalibrationMethod::kAuto;
  TRT_THROW(ErrorCode::kInvalidArgument,
            "invalid calibration_method '{}': choose one of max, entropy, percentile, mse, auto",
            name);
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
    case CalibrationMethod::kAuto:
      return "auto";
  }
  return "?";
}

namespace {

// t's values as float32: its own data, or a converted copy kept in tmp.
const float* float_values(const Tensor& t, std::vector<float>& tmp) {
  if (t.dtype() == DataType::kFloat32) return t.data<float>();
  tmp = t.to_float_vector();
  return tmp.data();
}

}  // namespace

void check_calibration_values(const Tensor& batch, const std::string& source,
                              int64_t first_sample) {
  if (!dtype_is_float(batch.dtype()) || batch.numel() == 0) return;
  std::vector<float> tmp;
  const float* v = float_values(batch, tmp);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < batch.numel(); ++i)
    if (!std::isfinite(v[i])) {
      if (first < 0) first = i;
      ++bad;
    }
  if (bad == 0) return;
  const int64_t per_sample = batch.numel() / std::max<int64_t>(1, batch.rank() ? batch.dim(0) : 1);
  TRT_THROW(ErrorCode::kInvalidArgument,
            "calibration data {}: sample {} holds {} ({} of the {} values of samples {}..{} are "
            "NaN or infinite); calibration needs finite data",
            source, first_sample + first / std::max<int64_t>(1, per_sample),
            std::isnan(v[first]) ? "NaN" : "an infinity", bad, batch.numel(), first_sample,
            first_sample + (batch.rank() ? batch.dim(0) : 1) - 1);
}

void TensorStats::add(const Tensor& t) {
  std::vector<float> tmp;
  add(float_values(t, tmp), t.numel());
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
  std::vector<std::vector<double>> local_log(nt, std::vector<double>(kLogBuckets, 0.0));
#pragma omp parallel num_threads(nt)
  {
    std::vector<double>& h = local[omp_get_thread_num()];
    std::vector<double>& lh = local_log[omp_get_thread_num()];
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const double a = std::fabs(static_cast<double>(x[i]));
      if (!std::isfinite(a)) continue;
      const int64_t b = std::min<int64_t>(nb - 1, static_cast<int64_t>(a * inv_w));
      h[b] += 1;
      uint32_t bits;
      std::memcpy(&bits, &x[i], sizeof bits);
      lh[(bits >> 21) & 0x3ffu] += 1;
    }
  }
  for (int t = 0; t < nt; ++t) {
    for (int64_t b = 0; b < nb; ++b) hist_[b] += local[t][b];
    for (int b = 0; b < kLogBuckets; ++b) log_hist_[b] += local_log[t][b];
  }
}

E4m3Range e4m3_range(const TensorStats& s, double amax) {
  E4m3Range r;
  const auto& h = s.log_histogram();
  double nonzero = 0;
  for (int k = 4; k < TensorStats::kLogBuckets; ++k) nonzero += h[k];
  if (nonzero == 0 || !(amax > 0)) return r;
  const double scale = amax / 448.0;
  for (int k = 4; k < TensorStats::kLogBuckets; ++k) {
    if (h[k] == 0) continue;
    // The bucket's middle: 2^(e - 127) * (1 + (m + 0.5) / 4).
    const double v = std::ldexp(1.0 + ((k & 3) + 0.5) / 4.0, (k >> 2) - 127) / scale;
    if (v < 0x1p-6) r.below_normal += h[k];
    if (v < 0x1p-10) r.flushed += h[k];
  }
  // Clipped: from the linear histogram (its bins are narrow near amax); a bin straddling amax
  // counts in proportion.
  const auto& lin = s.histogram();
  const double w = s.range() / static_cast<double>(lin.size());
  for (size_t j = 0; j < lin.size() && w > 0; ++j) {
    const double lo = static_cast<double>(j) * w;
    if (lo + w > amax) r.clipped += lin[j] * std::min(1.0, (lo + w - amax) / w);
  }
  r.below_normal /= nonzero;
  r.flushed /= nonzero;
  r.clipped /= nonzero;
  return r;
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

// Total squared error over the histogram (counts times the error at 4 points of each bin: a
// bin centre alone makes the rounding error of narrow distributions jumpy).
double histogram_error(const std::vector<double>& h, double w, double t,
                       const CalibratorParams& p) {
  double e = 0;
  for (size_t j = 0; j < h.size(); ++j) {
    if (h[j] == 0) continue;
    double ej = 0;
    for (int k = 0; k < 4; ++k)
      ej += quant_error((static_cast<double>(j) + (k + 0.5) / 4) * w, t, p);
    e += h[j] * ej / 4;
  }
  return e;
}

double amax_mse(const TensorStats& s, const CalibratorParams& p) {
  const auto& h = s.histogram();
  const int64_t nb = static_cast<int64_t>(h.size());
  const double w = s.range() / static_cast<double>(nb);
  // Candidate thresholds: bin edges, at most ~512 of them.
  const int64_t stride = std::max<int64_t>(1, nb / 512);
  std::vector<int64_t> cands;
  for (int64_t i = stride - 1; i < nb; i += stride) cands.push_back(i);
  if (cands.empty() || cands.back() != nb - 1) cands.push_back(nb - 1);
  std::vector<double> err(cands.size(), 0.0);
#pragma omp parallel for schedule(dynamic, 8)
  for (size_t c = 0; c < cands.size(); ++c)
    err[c] = histogram_error(h, w, static_cast<double>(cands[c] + 1) * w, p);
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
  // KL compares the shapes of the two distributions, not the size of the errors: clipping a
  // tail of 0.6% of the values into one bin costs it little, though those values lose up to 2/3
  // of their magnitude (MobileNetV2's first ReLU6 outputs, uniform-noise calibration: KL's
  // minimum at 1/3 of the range, 55x absmax's squared error, the model 4 dB worse). So the
  // search keeps only thresholds whose quantization error on the histogram is within
  // kEntropyErrorRatio of absmax's, and among them takes the smallest KL (on ties the wider
  // range).
  std::vector<int64_t> order;
  for (int64_t i = nq; i <= nb; ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return kl[a] < kl[b] || (kl[a] == kl[b] && a > b);
  });
  const double limit = kEntropyErrorRatio * histogram_error(s.histogram(), w, s.absmax(), p);
  for (const int64_t i : order) {
    const double t = std::min(s.absmax(), static_cast<double>(i) * w);
    if (histogram_error(s.histogram(), w, t, p) <= limit) return t;
  }
  return s.absmax();
}

}  // namespace

std::set<std::string> softmax_probability_tensors(const ir::Graph& g) {
  static const std::set<std::string> keep = {"Identity", "Dropout", "Reshape",  "Transpose",
                                             "Flatten",  "Squeeze", "Unsqueeze"};
  std::set<std::string> out;
  for (const ir::Node& n : g.nodes) {  // topological order
    if (!(n.domain.empty() || n.domain == "ai.onnx") || n.outputs.empty()) continue;
    if (n.op_type == "Softmax" ||
        (keep.count(n.op_type) && n.has_input(0) && out.count(n.inputs[0]))) {
      out.insert(n.outputs[0]);
    }
  }
  return out;
}

double threshold_error(const TensorStats& s, double t, const CalibratorParams& p) {
  const auto& h = s.histogram();
  double n = 0;
  for (double c : h) n += c;
  if (n == 0 || s.range() == 0) return 0;
  return histogram_error(h, s.range() / static_cast<double>(h.size()), t, p) / n;
}

namespace {
double method_amax(const TensorStats& s, CalibrationMethod method, const CalibratorParams& p) {
  switch (method) {
    case CalibrationMethod::kPercentile:
      return amax_percentile(s, p.percentile);
    case CalibrationMethod::kMse:
      return amax_mse(s, p);
    case CalibrationMethod::kEntropy:
      return amax_entropy(s, p);
    case CalibrationMethod::kMax:
    case CalibrationMethod::kAuto:
      break;
  }
  return s.absmax();
}
}  // namespace

AmaxChoice choose_amax(const TensorStats& s, CalibrationMethod method, const CalibratorParams& p) {
  AmaxChoice c{.amax = s.absmax(), .method = CalibrationMethod::kMax};
  if (s.absmax() == 0 || method == CalibrationMethod::kMax) return c;
  const double max_error = threshold_error(s, s.absmax(), p);
  if (method == CalibrationMethod::kAuto) {
    double best = max_error;
    for (const auto m :
         {CalibrationMethod::kEntropy, CalibrationMethod::kPercentile, CalibrationMethod::kMse}) {
      const double t = method_amax(s, m, p), e = threshold_error(s, t, p);
      if (e < best) c = {.amax = t, .method = m}, best = e;
    }
    c.error_ratio = max_error > 0 ? best / max_error : 1;
    return c;
  }
  const double t = method_amax(s, method, p), e = threshold_error(s, t, p);
  c.error_ratio = max_error > 0 ? e / max_error : 1;
  c.rejected = c.error_ratio > kGuardRatio;
  if (!c.rejected) c = {.amax = t, .method = method, .error_ratio = c.error_ratio};
  return c;
}

ThresholdTable choose_thresholds(const std::map<std::string, TensorStats>& stats,
                                 CalibrationMethod method, const CalibratorParams& p,
                                 const std::set<std::string>& by_max) {
  ThresholdTable r;
  for (const auto& [t, s] : stats) {
    const bool m = method != CalibrationMethod::kMax && by_max.count(t);
    r.by_max += m;
    const AmaxChoice c = choose_amax(s, m ? CalibrationMethod::kMax : method, p);
    r.amax[t] = c.amax;
    if (c.rejected) r.rejected.push_back(fmt::format("{}: {:.1f}x", t, c.error_ratio));
    ++r.methods_used[calibration_method_name(c.method)];
  }
  return r;
}

double compute_amax(const TensorStats& s, CalibrationMethod method, const CalibratorParams& p) {
  if (s.absmax() == 0) return 0;
  return method == CalibrationMethod::kAuto ? choose_amax(s, method, p).amax
                                            : method_amax(s, method, p);
}

void ChannelStats::add(const Tensor& t) {
  if (t.numel() == 0) return;
  const int64_t rank = static_cast<int64_t>(t.rank());
  const int64_t axis = axis_ < 0 ? axis_ + std::max<int64_t>(rank, 1) : axis_;
  TRT_CHECK_ARG(axis >= 0 && axis < std::max<int64_t>(rank, 1),
                "channel statistics: axis {} is out of range for a tensor of shape {}", axis_,
                shape_str(t.shape()));
  const int64_t c = rank == 0 ? 1 : t.dim(static_cast<size_t>(axis));
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= t.dim(static_cast<size_t>(d));
  const int64_t outer = t.numel() / (c * inner);
  if (sum_sq_.empty()) {
    sum_sq_.assign(static_cast<size_t>(c), 0.0);
    sum_.assign(static_cast<size_t>(c), 0.0);
  }
  TRT_CHECK_ARG(static_cast<int64_t>(sum_sq_.size()) == c,
                "channel statistics: {} channels along axis {}, earlier batches had {}", c, axis,
                sum_sq_.size());
  std::vector<float> tmp;
  const float* x = float_values(t, tmp);
  // Channels split over threads: each sums its own channels over all rows (no reduction).
#pragma omp parallel for schedule(static) if (t.numel() >= (1 << 16))
  for (int64_t k = 0; k < c; ++k) {
    double acc = 0, acc1 = 0;
    for (int64_t o = 0; o < outer; ++o) {
      const float* p = x + (o * c + k) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const double v = p[i];
        if (std::isfinite(v)) {
          acc += v * v;
          acc1 += v;
        }
      }
    }
    sum_sq_[static_cast<size_t>(k)] += acc;
    sum_[static_cast<size_t>(k)] += acc1;
  }
  rows_ += outer * inner;
}

std::vector<double> ChannelStats::mean() const {
  std::vector<double> m(sum_.size(), 0.0);
  if (rows_ > 0)
    for (size_t k = 0; k < m.size(); ++k) m[k] = sum_[k] / static_cast<double>(rows_);
  return m;
}

void HessianStats::add(const Tensor& t) {
  if (t.numel() == 0) return;
  const int64_t k = t.rank() == 0 ? 1 : t.dim(t.rank() - 1);
  if (k_ == 0) {
    k_ = k;
    sum_.assign(static_cast<size_t>(k * k), 0.0f);
  }
  TRT_CHECK_ARG(k == k_,
                "Hessian statistics: {} values along the last axis, earlier batches had {}", k, k_);
  const int64_t rows = t.numel() / k;
  std::vector<float> tmp;
  const float* x = float_values(t, tmp);
  bool finite = true;
  for (int64_t i = 0; i < t.numel() && finite; ++i) finite = std::isfinite(x[i]);
  if (!finite) {
    if (tmp.empty()) tmp.assign(x, x + t.numel());
    for (float& v : tmp)
      if (!std::isfinite(v)) v = 0.0f;
    x = tmp.data();
  }
  // sum += X^T X (row-major: op(A) = X^T is K x rows).
  const dnnl_status_t st = dnnl_sgemm('T', 'N', k, k, rows, 1.0f, x, k, x, k, 1.0f, sum_.data(), k);
  TRT_CHECK(st == dnnl_success, ErrorCode::kInternal, "Hessian statistics: sgemm failed ({})",
            static_cast<int>(st));
  rows_ += rows;
}

std::vector<float> HessianStats::mean_outer() const {
  std::vector<float> r = sum_;
  if (rows_ > 0)
    for (float& v : r) v = static_cast<float>(static_cast<double>(v) / static_cast<double>(rows_));
  return r;
}

std::vector<double> ChannelStats::mean_square() const {
  std::vector<double> m(sum_sq_.size(), 0.0);
  if (rows_ > 0)
    for (size_t k = 0; k < m.size(); ++k) m[k] = sum_sq_[k] / static_cast<double>(rows_);
  return m;
}

namespace {

// Node-by-node execution of a prepared graph (see stream_tensors, per_node): the loop of
// Session::run, with each wanted tensor visited as soon as it exists and nothing kept alive
// past its last reader.
size_t run_per_node(const Session& session, const std::set<std::string>& wanted,
                    int64_t num_batches, const BatchFn& feed_batch, int num_threads,
                    const TensorVisitor& visit) {
  size_t peak = 0;
  auto note_live = [&peak](const std::unordered_map<std::string, Tensor>& env) {
    std::unordered_set<const void*> seen;  // views of one buffer counted once
    size_t live = 0;
    for (const auto& [name, t] : env)
      if (seen.insert(t.raw()).second) live += t.nbytes();
    peak = std::max(peak, live);
  };
  const ir::Graph& g = session.model().graph;
  const int64_t opset = session.model().opset();
  std::unordered_map<std::string, size_t> last;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& in : g.nodes[i].inputs)
      if (!in.empty() && !g.is_initializer(in)) last[in] = i;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty() && !last.count(o)) last[o] = i;
  std::vector<std::vector<std::string>> dead_after(g.nodes.size());
  for (const auto& [name, i] : last) dead_after[i].push_back(name);
  std::set<std::string> graph_inputs;
  for (const auto& v : g.inputs) graph_inputs.insert(v.name);
  // Wanted tensors that no node computes: constants (folded by the Session's passes) or inputs.
  std::vector<std::string> constants;
  std::set<std::string> produced;
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs) produced.insert(o);
  for (const auto& t : wanted) {
    if (produced.count(t) || graph_inputs.count(t)) continue;
    TRT_CHECK(g.is_initializer(t), ErrorCode::kInternal, "calibration: tensor '{}' is not computed",
              t);
    constants.push_back(t);
  }
  for (int64_t b = 0; b < num_batches; ++b) {
    if (num_threads > 0) omp_set_num_threads(num_threads);
    std::unordered_map<std::string, Tensor> env;
    {
      auto feeds = feed_batch(b);  // moved into env: an input is freed after its last reader
      for (const auto& v : g.inputs) {
        auto it = feeds.find(v.name);
        TRT_CHECK(it != feeds.end(), ErrorCode::kInvalidArgument, "input '{}' is not given",
                  v.name);
        TRT_CHECK(v.dtype == DataType::kUndefined || it->second.dtype() == v.dtype,
                  ErrorCode::kInvalidArgument, "input '{}' must be {}, got {}", v.name,
                  dtype_name(v.dtype), dtype_name(it->second.dtype()));
        if (wanted.count(v.name)) visit(v.name, it->second);
        if (last.count(v.name)) env.emplace(v.name, std::move(it->second));
      }
    }
    for (const auto& t : constants) visit(t, *g.initializer(t));
    std::vector<const Tensor*> inputs;
    std::vector<bool> constant;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ir::Node& node = g.nodes[i];
      inputs.clear();
      constant.assign(node.inputs.size(), false);
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const std::string& in = node.inputs[k];
        if (in.empty()) {
          inputs.push_back(nullptr);
        } else if (const Tensor* t = g.initializer(in)) {
          inputs.push_back(t);
          constant[k] = true;
        } else {
          auto it = env.find(in);
          TRT_CHECK(it != env.end(), ErrorCode::kInternal, "{}: input '{}' was not computed",
                    node.describe(), in);
          inputs.push_back(&it->second);
        }
      }
      std::vector<Tensor> outs = cpu::run_node(node, opset, inputs, false, constant);
      for (size_t k = 0; k < outs.size() && k < node.outputs.size(); ++k) {
        const std::string& o = node.outputs[k];
        if (o.empty()) continue;
        if (wanted.count(o)) visit(o, outs[k]);
        env[o] = std::move(outs[k]);
      }
      outs.clear();
      note_live(env);
      for (const auto& dead : dead_after[i]) env.erase(dead);
    }
    TRT_LOG_VERBOSE("calibration batch {}/{} (per node)", b + 1, num_batches);
  }
  return peak;
}

// Visits each wanted tensor of one batch: from the run's outputs, or a graph input from the feeds.
void visit_batch(const std::set<std::string>& wanted, const std::map<std::string, Tensor>& outs,
                 const std::map<std::string, Tensor>& feeds, const TensorVisitor& visit) {
  for (const auto& name : wanted) {
    auto it = outs.find(name);
    if (it != outs.end()) {
      visit(name, it->second);
      continue;
    }
    auto f = feeds.find(name);
    TRT_CHECK(f != feeds.end(), ErrorCode::kInternal, "calibration: tensor '{}' was not computed",
              name);
    visit(name, f->second);
  }
}

// The batches on the GPU (the CUDA executor, float32 with TF32 off, deterministic kernel
// choices, the same optimized graph as the Session's), when one is usable and the model has CUDA
// kernels for every op; std::nullopt when it cannot (then the CPU runs them).
// TRTUTILS_CALIBRATION_DEVICE=cpu keeps the CPU.
std::optional<size_t> stream_on_gpu(ir::Model m, const std::set<std::string>& wanted,
                                    int64_t num_batches, const BatchFn& feed_batch,
                                    const TensorVisitor& visit) {
  const char* env = std::getenv("TRTUTILS_CALIBRATION_DEVICE");
  if (env && std::string(env) == "cpu") return std::nullopt;
  if (!cuda::device_status().usable || num_batches <= 0) return std::nullopt;
  passes::run_pipeline(m.graph, m.opset());
  std::unique_ptr<cuda::Executor> ex;
  std::map<std::string, Tensor> first_feeds, first;
  try {
    // Deterministic kernels: timed choices vary with load, and with them the statistics (93 of
    // MobileNetV3's 388 initializers differed between two identical runs before).
    cuda::ExecutorOptions options;
    options.deterministic = true;
    ex = std::make_unique<cuda::Executor>(m, options);
    first_feeds = feed_batch(0);
    first = ex->run(first_feeds);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotSupported) throw;
    TRT_LOG_INFO("calibration runs on the CPU: {}", e.what());
    return std::nullopt;
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < num_batches; ++b) {
    const auto feeds = b == 0 ? std::move(first_feeds) : feed_batch(b);
    const auto outs = b == 0 ? std::move(first) : ex->run(feeds);
    visit_batch(wanted, outs, feeds, visit);
    TRT_LOG_VERBOSE("calibration batch {}/{} (GPU)", b + 1, num_batches);
  }
  TRT_LOG_INFO("calibration: {} batch(es) on the GPU ({}) in {:.1f} s", num_batches,
               cuda::device_status().name,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return static_cast<size_t>(ex->device_activation_bytes());
}

}  // namespace

size_t stream_tensors(const ir::Model& model, const std::vector<std::string>& tensors,
                      int64_t num_batches, const BatchFn& feed_batch, const StreamOptions& options,
                      const TensorVisitor& visit) {
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
  const std::set<std::string> wanted(tensors.begin(), tensors.end());
  if (!options.per_node && options.allow_gpu) {
    if (auto peak = stream_on_gpu(m, wanted, num_batches, feed_batch, visit)) return *peak;
  }
  Session session(std::move(m), {.num_threads = options.num_threads});
  if (options.per_node)
    return run_per_node(session, wanted, num_batches, feed_batch, options.num_threads, visit);
  for (int64_t b = 0; b < num_batches; ++b) {
    const auto feeds = feed_batch(b);
    visit_batch(wanted, session.run(feeds), feeds, visit);
    TRT_LOG_VERBOSE("calibration batch {}/{}", b + 1, num_batches);
  }
  return session.peak_activation_bytes();
}

std::map<std::string, TensorStats> collect_stats(const ir::Model& model,
                                                 const std::vector<std::string>& tensors,
                                                 int64_t num_batches, const BatchFn& feed_batch,
                                                 int64_t num_bins, int num_threads, bool per_node,
                                                 size_t* peak_activation_bytes) {
  std::map<std::string, TensorStats> stats;
  for (const auto& t : tensors) stats.emplace(t, TensorStats(num_bins));
  const size_t peak = stream_tensors(
      model, tensors, num_batches, feed_batch, {.num_threads = num_threads, .per_node = per_node},
      [&](const std::string& name, const Tensor& t) { stats.at(name).add(t); });
  if (peak_activation_bytes) *peak_activation_bytes = peak;
  return stats;
}

}  // namespace trtutils::quantize
