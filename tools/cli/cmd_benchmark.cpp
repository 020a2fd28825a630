// trtutils benchmark --onnx MODEL [--iterations N] [--warmup N] [--threads N]: latency like
// trtexec reports it (min/mean/median/percentiles over timed iterations after warm-up).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/check.h"
#include "engine/session.h"
#include "trtutils/logging.h"

namespace trtutils::cli {

namespace {
struct BenchOptions {
  std::string onnx;
  std::vector<std::string> inputs;
  int iterations = 10;
  int warmup = 2;
  int threads = 0;
  uint64_t seed = 0;
  std::string json;
  bool profile = false;
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// Per-op-type and top per-layer times of the timed iterations (warm-up subtracted).
void print_profile(const std::vector<NodeProfile>& now, const std::vector<NodeProfile>& warm,
                   int iterations) {
  std::map<std::string, double> by_type;
  std::vector<std::pair<double, size_t>> layers;
  double total = 0;
  for (size_t i = 0; i < now.size(); ++i) {
    const double ms = (now[i].total_ms - warm[i].total_ms) / iterations;
    by_type[now[i].op_type] += ms;
    layers.emplace_back(ms, i);
    total += ms;
  }
  std::vector<std::pair<double, std::string>> types;
  for (const auto& [t, ms] : by_type) types.emplace_back(ms, t);
  std::sort(types.rbegin(), types.rend());
  fmt::print("profile: {:.3f} ms per iteration in {} layers\n", total, now.size());
  for (const auto& [ms, t] : types)
    fmt::print("  {:<24} {:9.3f} ms {:5.1f}%\n", t, ms, 100 * ms / total);
  std::sort(layers.rbegin(), layers.rend());
  fmt::print("slowest layers:\n");
  for (size_t k = 0; k < layers.size() && k < 10; ++k)
    fmt::print("  {:<40} {:<12} {:9.3f} ms\n", now[layers[k].second].name,
               now[layers[k].second].op_type, layers[k].first);
}

void bench(const BenchOptions& o) {
  TRT_CHECK_ARG(o.iterations >= 1, "--iterations must be at least 1, got {}", o.iterations);
  TRT_CHECK_ARG(o.warmup >= 0, "--warmup must be at least 0, got {}", o.warmup);
  Session session = Session::from_file(o.onnx, {.num_threads = o.threads, .profile = o.profile});
  auto feeds = make_feeds(session, o.inputs, o.seed);
  const int64_t batch =
      feeds.empty() || feeds.begin()->second.rank() == 0 ? 1 : feeds.begin()->second.dim(0);
  for (int i = 0; i < o.warmup; ++i) session.run(feeds);
  std::vector<NodeProfile> warm = session.profile();
  std::vector<double> ms;
  for (int i = 0; i < o.iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    session.run(feeds);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  double mean = 0;
  for (double v : ms) mean += v;
  mean /= static_cast<double>(ms.size());
  const double median = percentile(ms, 50);
  fmt::print("backend: cpu, threads: {}, iterations: {}, warmup: {}, batch: {}\n",
             o.threads > 0 ? std::to_string(o.threads) : "all", o.iterations, o.warmup, batch);
  fmt::print(
      "latency (ms): min {:.3f}, mean {:.3f}, median {:.3f}, p90 {:.3f}, p95 {:.3f}, p99 {:.3f}, "
      "max {:.3f}\n",
      *std::min_element(ms.begin(), ms.end()), mean, median, percentile(ms, 90), percentile(ms, 95),
      percentile(ms, 99), *std::max_element(ms.begin(), ms.end()));
  fmt::print("throughput: {:.2f} inferences/s ({:.2f} samples/s)\n", 1000.0 / median,
             1000.0 * static_cast<double>(batch) / median);
  if (o.profile) print_profile(session.profile(), warm, o.iterations);
  if (!o.json.empty()) {
    nlohmann::json j = {{"model", o.onnx},
                        {"backend", "cpu"},
                        {"threads", o.threads},
                        {"batch", batch},
                        {"latency_ms", ms},
                        {"median_ms", median},
                        {"mean_ms", mean},
                        {"p90_ms", percentile(ms, 90)},
                        {"p99_ms", percentile(ms, 99)}};
    std::ofstream(o.json) << j.dump(2) << "\n";
  }
}
}  // namespace

void add_benchmark_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand("benchmark", "Measure latency and throughput of a model");
  sub->add_option("--onnx", o->onnx, "ONNX model")->required();
  sub->add_option("--input", o->inputs, "NAME=FILE.npy (default: random data)");
  sub->add_option("--iterations", o->iterations, "timed iterations")->capture_default_str();
  sub->add_option("--warmup", o->warmup, "untimed warm-up iterations")->capture_default_str();
  sub->add_option("--threads", o->threads, "CPU threads (0: all cores)")->capture_default_str();
  sub->add_option("--seed", o->seed, "seed of the random input data")->capture_default_str();
  sub->add_option("--json", o->json, "also write the timings to this JSON file");
  sub->add_flag("--profile", o->profile, "print time per op type and the slowest layers");
  sub->callback([o] { bench(*o); });
}

}  // namespace trtutils::cli
