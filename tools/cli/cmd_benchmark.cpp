// trtutils benchmark (--engine ENGINE | --onnx MODEL) [--iterations N] [--warmup_iterations N]
//                    [--threads N] [--profile] [--json FILE] [--plot FILE.png]
// Measures like trtexec: warm-up iterations first (untimed), then per-iteration latency
// (enqueue to outputs ready) with min/mean/median/p90/p95/p99/max, throughput from the total
// wall time of the timed iterations, and the split of each iteration into host-to-device
// copies, compute and device-to-host copies (CUDA events on the GPU; the CPU backend copies
// nothing and reports 0). Like trtexec's "GPU Compute Time", the compute part has its own
// percentiles and throughput; --no_data_transfers (trtexec's --noDataTransfers) leaves the
// inputs on the device and the outputs there, so the wall-clock figures are the compute alone.
// A p99 over twice the median gets a warning naming the likely causes (stats.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "flag_ranges.h"
#include "stats.h"
#include "trtutils/check.h"
#include "trtutils/engine.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"
#include "trtutils/onnx_session.h"
#include "trtutils/plot.h"

namespace trtutils::cli {

namespace {
struct BenchOptions {
  std::string onnx;
  std::string engine;
  std::string backend = "auto";
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  int iterations = 10;
  double duration = 0;  // seconds: the timed iterations go on at least this long
  int warmup = 2;
  int threads = 0;
  uint64_t seed = 0;
  std::string json;
  std::string plot;
  bool profile = false;
  bool cuda_graph = true;
  bool no_data_transfers = false;
  std::string timing_cache;
};

struct LayerTime {
  std::string name, op;
  double ms = 0;       // per timed iteration
  std::string kernel;  // GPU engines: what ran the layer
};

// Per-op-type and top per-layer times of the timed iterations (warm-up subtracted).
nlohmann::json print_profile(const std::vector<LayerTime>& layers_in) {
  std::map<std::string, double> by_type;
  double total = 0;
  for (const auto& l : layers_in) {
    by_type[l.op] += l.ms;
    total += l.ms;
  }
  std::vector<std::pair<double, std::string>> types;
  for (const auto& [t, ms] : by_type) types.emplace_back(ms, t);
  std::sort(types.rbegin(), types.rend());
  fmt::print("profile: {:.3f} ms per iteration in {} layers\n", total, layers_in.size());
  for (const auto& [ms, t] : types)
    fmt::print("  {:<28} {:9.3f} ms {:5.1f}%\n", t, ms, total > 0 ? 100 * ms / total : 0.0);
  std::vector<size_t> order(layers_in.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return layers_in[a].ms > layers_in[b].ms; });
  fmt::print("slowest layers:\n");
  for (size_t k = 0; k < order.size() && k < 10; ++k)
    fmt::print("  {:<40} {:<22} {:9.3f} ms  {}\n", layers_in[order[k]].name, layers_in[order[k]].op,
               layers_in[order[k]].ms, layers_in[order[k]].kernel);
  nlohmann::json j = nlohmann::json::array();
  for (const auto& l : layers_in) {
    nlohmann::json e = {{"name", l.name}, {"op", l.op}, {"ms", l.ms}};
    if (!l.kernel.empty()) e["kernel"] = l.kernel;
    j.push_back(std::move(e));
  }
  return j;
}

void bench(const BenchOptions& o) {
  TRT_CHECK_ARG(o.iterations >= 1, "--iterations must be at least 1, got {}", o.iterations);
  TRT_CHECK_ARG(o.warmup >= 0, "--warmup_iterations must be at least 0, got {}", o.warmup);
  TRT_CHECK_ARG(std::isfinite(o.duration) && o.duration >= 0,
                "--duration must be a number of seconds >= 0, got {}", o.duration);
  TRT_CHECK_ARG(o.onnx.empty() != o.engine.empty(), "give exactly one of --engine and --onnx");
  for (const auto& [flag, path] : {std::pair{"--json", o.json}, std::pair{"--plot", o.plot}})
    check_output_is_not_an_input(flag, path, o.engine.empty() ? "--onnx" : "--engine",
                                 o.engine.empty() ? o.onnx : o.engine, o.inputs);
  std::function<void()> run_once;
  std::function<std::vector<LayerTime>()> layer_times;
  std::map<std::string, Tensor> feeds;
  std::string backend = "cpu", what;
  std::unique_ptr<OnnxSession> session;
  std::shared_ptr<Engine> engine;
  std::unique_ptr<ExecutionContext> ctx;
  if (!o.engine.empty()) {
    engine = Engine::load(o.engine, {.backend = o.backend});
    ctx = engine->create_execution_context({.num_threads = o.threads,
                                            .profile = o.profile,
                                            .cuda_graph = o.cuda_graph,
                                            .no_data_transfers = o.no_data_transfers,
                                            .timing_cache = o.timing_cache});
    feeds = make_feeds(with_shapes(engine_inputs(*engine), o.shapes), o.inputs, o.seed);
    // GPU: the feeds in page-locked memory, as trtexec's host buffers are.
    for (auto& [name, t] : feeds) {
      Tensor pinned = allocate_host_tensor(t.dtype(), t.shape());
      if (t.nbytes()) std::memcpy(pinned.raw(), t.raw(), t.nbytes());
      t = pinned;
    }
    run_once = [&] { ctx->execute(feeds); };
    layer_times = [&] {
      std::vector<LayerTime> v;
      for (const auto& p : ctx->profile()) v.push_back({p.name, p.op, p.total_ms, p.kernel});
      return v;
    };
    backend = engine->runtime_backend();
    what = o.engine;
    const auto info = nlohmann::json::parse(engine->info_json());
    if (info.contains("dla") && info["dla"].value("emulated", false))
      backend += " (DLA layers emulated: not DLA timings)";
  } else {
    session = std::make_unique<OnnxSession>(
        o.onnx, OnnxSessionOptions{.num_threads = o.threads, .profile = o.profile});
    feeds = make_feeds(with_shapes(session->inputs(), o.shapes), o.inputs, o.seed);
    run_once = [&] { session->run(feeds); };
    layer_times = [&] {
      std::vector<LayerTime> v;
      for (const auto& p : session->profile()) v.push_back({p.name, p.op, p.total_ms, {}});
      return v;
    };
    what = o.onnx;
  }
  const int64_t batch =
      feeds.empty() || feeds.begin()->second.rank() == 0 ? 1 : feeds.begin()->second.dim(0);
  for (int i = 0; i < o.warmup; ++i) run_once();
  const std::vector<LayerTime> warm = o.profile ? layer_times() : std::vector<LayerTime>{};
  std::vector<double> ms, h2d, compute, d2h;
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // --iterations, and on until --duration has passed (trtexec's rule).
  for (int i = 0; i < o.iterations || (elapsed_s() < o.duration && i < kMaxIterations); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run_once();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    const IoTimes t = ctx ? ctx->last_io_times() : IoTimes{0, ms.back(), 0};
    h2d.push_back(t.h2d_ms);
    compute.push_back(t.compute_ms);
    d2h.push_back(t.d2h_ms);
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double mean = 0;
  for (double v : ms) mean += v;
  mean /= static_cast<double>(ms.size());
  const double median = percentile(ms, 50);
  const int iterations = static_cast<int>(ms.size());
  const double qps = static_cast<double>(iterations) / wall_s;
  fmt::print("model: {}\n", what);
  fmt::print("backend: {}, threads: {}, iterations: {}, warmup iterations: {}, batch: {}\n",
             backend, o.threads > 0 ? std::to_string(o.threads) : "all", iterations, o.warmup,
             batch);
  fmt::print("throughput: {:.2f} qps ({:.2f} samples/s)\n", qps, qps * static_cast<double>(batch));
  fmt::print(
      "latency (ms): min {:.3f}, mean {:.3f}, median {:.3f}, p90 {:.3f}, p95 {:.3f}, p99 {:.3f}, "
      "max {:.3f}\n",
      *std::min_element(ms.begin(), ms.end()), mean, median, percentile(ms, 90), percentile(ms, 95),
      percentile(ms, 99), *std::max_element(ms.begin(), ms.end()));
  if (const std::string w = unsteady_latency_warning(median, percentile(ms, 99), o.threads);
      !w.empty())
    TRT_LOG_WARN("{}", w);
  const bool gpu = backend.rfind("cuda", 0) == 0;
  fmt::print("split (median ms): host-to-device {:.3f}, compute {:.3f}, device-to-host {:.3f}{}\n",
             percentile(h2d, 50), percentile(compute, 50), percentile(d2h, 50),
             gpu ? (o.no_data_transfers ? " (--no_data_transfers: inputs and outputs stay on the "
                                          "device)"
                                        : " (CUDA events)")
                 : " (the cpu backend copies nothing)");
  const double compute_median = percentile(compute, 50);
  if (gpu)
    fmt::print(
        "GPU compute (ms): min {:.3f}, median {:.3f}, p90 {:.3f}, p99 {:.3f}, max {:.3f}; "
        "throughput at the median compute time: {:.2f} samples/s\n",
        *std::min_element(compute.begin(), compute.end()), compute_median, percentile(compute, 90),
        percentile(compute, 99), *std::max_element(compute.begin(), compute.end()),
        compute_median > 0 ? 1000.0 * static_cast<double>(batch) / compute_median : 0.0);
  if (ctx)
    fmt::print("memory: weights {:.1f} MiB, activation peak {:.1f} MiB ({})\n",
               static_cast<double>(ctx->weight_bytes()) / (1 << 20),
               static_cast<double>(ctx->peak_activation_bytes()) / (1 << 20),
               gpu ? "device" : "host");
  nlohmann::json layers_json;
  if (o.profile) {
    std::vector<LayerTime> now = layer_times();
    for (size_t i = 0; i < now.size(); ++i)
      now[i].ms = (now[i].ms - (i < warm.size() ? warm[i].ms : 0.0)) / iterations;
    layers_json = print_profile(now);
  }
  if (!o.plot.empty()) {
    plot_latency_histogram_png(ms, o.plot, "Latency per iteration (ms): " + what);
    fmt::print("latency histogram written to {}\n", o.plot);
  }
  if (!o.json.empty()) {
    nlohmann::json j = {{"model", what},
                        {"backend", backend},
                        {"threads", o.threads},
                        {"batch", batch},
                        {"iterations", iterations},
                        {"warmup_iterations", o.warmup},
                        {"throughput_qps", qps},
                        {"throughput_samples_per_s", qps * static_cast<double>(batch)},
                        {"latency_ms", ms},
                        {"min_ms", *std::min_element(ms.begin(), ms.end())},
                        {"mean_ms", mean},
                        {"median_ms", median},
                        {"p90_ms", percentile(ms, 90)},
                        {"p95_ms", percentile(ms, 95)},
                        {"p99_ms", percentile(ms, 99)},
                        {"max_ms", *std::max_element(ms.begin(), ms.end())},
                        {"h2d_ms", percentile(h2d, 50)},
                        {"compute_ms", compute_median},
                        {"d2h_ms", percentile(d2h, 50)},
                        {"compute_ms_per_iteration", compute},
                        {"no_data_transfers", o.no_data_transfers}};
    if (ctx) {
      j["weight_bytes"] = ctx->weight_bytes();
      j["peak_activation_bytes"] = ctx->peak_activation_bytes();
    }
    if (o.profile) j["layers"] = layers_json;
    write_file_atomic(o.json,
                      j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
}
}  // namespace

void add_benchmark_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand(
      "benchmark", "Measure latency and throughput of an engine (or an ONNX model), like trtexec");
  auto* eng = sub->add_option("--engine", o->engine, "engine file (from `trtutils build`)");
  sub->add_option("--onnx", o->onnx, "ONNX model, run directly on the CPU backend")->excludes(eng);
  sub->add_option("--backend", o->backend, "engine runtime: auto, cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  sub->add_option("--input", o->inputs, "NAME=FILE.npy (default: random data)");
  add_ranged(sub, "--iterations", o->iterations, "timed iterations", 1, kMaxIterations);
  sub->add_option("--duration", o->duration,
                  "seconds: go on with timed iterations until this much time has passed (at "
                  "least --iterations)")
      ->check(CLI::Range(0.0, 86400.0));
  sub->add_option("--shapes", o->shapes,
                  "NAME:1x3x224x224: the shape of a dynamic input's random data (repeatable)");
  add_ranged(sub, "--warmup_iterations,--warmup", o->warmup, "untimed warm-up iterations", 0,
             kMaxWarmup);
  add_threads_flag(sub, o->threads, "CPU threads");
  add_seed_flag(sub, o->seed);
  sub->add_option("--json", o->json, "also write the timings (and --profile layers) as JSON");
  sub->add_option("--plot", o->plot, "write a PNG histogram of the latencies");
  sub->add_flag("--profile", o->profile, "print time per op type and the slowest layers");
  sub->add_flag("--cuda_graph,!--no_cuda_graph", o->cuda_graph,
                "CUDA engines with static shapes: replay a captured CUDA graph (default on)");
  sub->add_flag("--no_data_transfers", o->no_data_transfers,
                "CUDA engines: no host<->device copies after the first iteration (inputs stay on "
                "the device, outputs are not read back), like trtexec --noDataTransfers");
  sub->add_option("--timing_cache", o->timing_cache,
                  "CUDA engines: timing cache file (or 'global') for the kernel choices the engine "
                  "does not carry, timed on the first run (read, and written back when something "
                  "new was timed)");
  sub->callback([o] { bench(*o); });
}

}  // namespace trtutils::cli
