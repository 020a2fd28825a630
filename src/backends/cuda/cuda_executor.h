// The CUDA backend's entry point: executes an engine's optimized graph on the GPU.
//
// Contract with the engine runtime (src/engine/runtime.cpp):
//   - Every op listed by supported_ops() has a GPU kernel (dtypes per op: float32 and float16 for
//     the float ops; int8/uint8/float8 for Q/DQ and the Q-ops). Nodes whose inputs are all
//     constants are evaluated once at construction (CPU kernels); shape-computing nodes (Shape,
//     Size and nodes reading only such values) run on the host each run, so symbolic dims work.
//   - cuda::device_status() says whether a usable device exists (and why not), without
//     requiring one at link time (every machine builds this code; few have a GPU).
//   - An Executor is built once per ExecutionContext from the engine's ir::Model (nodes in
//     execution order, after the builder's passes: com.trtutils::FusedConv, com.trtutils::QConv /
//     QGemm / QMatMul quantized islands, plain ONNX ops). It uploads weights (in the layout its
//     kernels want), plans device memory, and owns its stream.
//   - run() takes host tensors, returns host tensors; enqueue-style async use comes later.
//   - If and Loop run their bodies on the GPU through nested executors (control_flow.h), the host
//     reading conditions and trip counts: an engine with control flow runs eagerly, never as a
//     CUDA graph. A body no GPU executor can plan runs on the CPU as a whole (a fallback node).
//   - Any node it has no kernel for is an Error(kNotSupported) at construction, naming the node
//     (never a silent wrong answer). Every CUDA / cuDNN / cuBLASLt call is checked with file:line.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/kernel_switches.h"
#include "ir/graph.h"

namespace trtutils::cuda {

class DeviceWeights;

struct DeviceStatus {
  bool usable = false;
  std::string why;  // when not usable: "no CUDA driver", "no CUDA device", ...
  int sm = 0;       // e.g. 90
  std::string name;
  std::string libraries;  // "CUDA runtime 13.0, cuBLASLt 13.0.x, cuDNN 9.19.0" (when built in)
};
// Whether this build has the CUDA backend and a device it can run on. Never throws; the
// result is computed once per process.
DeviceStatus device_status();
// `bytes` of zeroed page-locked host memory (cudaHostAlloc; host<->device copies from it run at
// full PCIe speed and asynchronously), or nullptr when no usable device exists or it fails.
std::shared_ptr<uint8_t> alloc_pinned(size_t bytes);

struct ExecutorOptions {
  bool profile = false;  // per-layer times (CUDA events)
  // Replay runs from a CUDA graph: the first run with new input shapes is eager (planning),
  // the second is captured, later ones launch the graph (no per-node host work). Graphs that
  // cannot be captured (values computed on the host mid-run) stay eager. Ignored with profile.
  bool cuda_graph = false;
  // Float32 convolutions and matrix products may use TF32 tensor cores (TensorRT's default for
  // FP32 layers; ~1e-3 relative error). Off: exact float32 FMA arithmetic.
  bool allow_tf32 = false;
  // Channels-last activations: float16 / bfloat16 convolutions (and float32 ones when
  // allow_tf32) run NHWC on tensor cores with KRSC weights packed at upload; their outputs stay
  // NHWC through pooling, BatchNormalization, activations and elementwise ops (same-layout
  // operands or per-channel / scalar broadcasts); any other reader gets an NCHW copy (converted
  // once per value) and graph outputs are always NCHW. Off: NCHW everywhere.
  bool channels_last = true;
  // ... for convolutions whose batch is at least this. ResNet-50 fp16 on the H200
  // (bench/cuda/nhwc_crossover.sh, GPU compute, NHWC vs NCHW): b1 2.93 vs 1.40 ms, b4 2.95 vs
  // 1.72, b16 4.42 vs 3.72, b64 2.24 vs 6.28 ms: NHWC pays from a batch between 16 and 64.
  // Env TRTUTILS_CUDA_NHWC_MIN_BATCH overrides.
  int64_t channels_last_min_batch = 32;
  int device = 0;  // CUDA device ordinal
  // Same input shapes as the previous run: skip the input copies (the device keeps the previous
  // inputs) and the output copies (run() returns an empty map). For benchmarks only.
  bool no_data_transfers = false;
  // Timing cache file (see TimingChoices in cuda_ops.h): the kernel choices timed on the first
  // eager run are read from it and new ones written back after the run. Empty: none (every
  // choice is timed once per executor).
  std::filesystem::path timing_cache;
  // Nodes without a GPU kernel run on the CPU backend (the builder's --no_fallback turns it off
  // and records that in the engine). Off: such a node is an error at construction.
  bool allow_fallback = true;
  // The kernel switches (kernel_switches.h) in effect while this Executor builds and runs: an
  // engine's recorded ones (the runtime sets use_environment = false), or by default the
  // environment's TRTUTILS_CUDA_* variables (tests and bench tools flip kernels that way).
  KernelSwitches switches{};
  // The engine's device copies of its weights (device_weights.h), shared by every executor
  // given the same object: weights and their packed forms are uploaded once. nullptr: this
  // executor uploads its own.
  std::shared_ptr<DeviceWeights> weights;
  // Kernels chosen by fixed rules instead of timing (cuDNN's algorithm, cuBLASLt's heuristic
  // first candidate, cuDNN rather than the custom alternatives): the same model and inputs give
  // the same bits on every run. For calibration and for scoring quantized candidates, where a
  // timed choice (which varies with load) would change the scales from one run to the next.
  // The timing cache is not used.
  bool deterministic = false;
  // The model is a GPU plan (a GPU engine's "gpu_graph": plan_gpu_graph, run by the builder):
  // the executor runs it as it is. Off: it runs plan_gpu_graph on its own copy (under the
  // switches in effect): models made in code, engines of format 1, mark_all_outputs.
  bool graph_is_fused = false;
  // Kernel choices recorded at build (engine info "gpu_tactics": TimingChoices' what -> choice,
  // see cuda_ops.h): taken as they are, without timing; the timing cache file answers the rest
  // and what neither knows is timed. Ignored when deterministic.
  std::map<std::string, std::string> tactics;
};

// The last run's host-to-device copies, node execution (or graph launch) and device-to-host
// copies, measured with CUDA events on the executor's stream.
struct RunTimes {
  double h2d_ms = 0, compute_ms = 0, d2h_ms = 0;
};

struct LayerTime {
  std::string name, op;
  double total_ms = 0;
  int64_t calls = 0;
};

// "Conv", "com.trtutils::FusedConv", ... (sorted): the ops with a GPU kernel.
std::vector<std::string> supported_ops();

// A node the GPU has no kernel for (or whose kernel refuses its attributes, e.g. a ConvTranspose
// with asymmetric pads), with the reason; it runs on the CPU backend inside the GPU engine
// (per-layer fallback: its inputs are copied to the host, its outputs back to the device when a GPU
// layer reads them).
struct FallbackNode {
  std::string node, op, reason;
};
// Where the nodes of `model` (after the builder's passes) would run. Needs no device (the
// builder plans GPU engines on machines without one); dtype and shape problems that only show
// at run time are not found here.
struct GpuCoverage {
  std::vector<FallbackNode> fallback;    // no GPU kernel, a CPU kernel: runs on the CPU
  std::vector<std::string> unsupported;  // no kernel at all: "Kind 'name' (op X): why"
};
GpuCoverage gpu_coverage(const ir::Model& model);

// What the executor's own fusions (fusion/, run on its private copy of the graph) will
// make of `graph`: for each named node they absorb, the fused op (com.trtutils.cuda::Attention,
// MatMulBias, Gelu or ConvQuantize) and the name of the node it becomes; or an empty op and a
// reason for a node the executor drops (the Casts of a float16 rest run in float32). Empty
// without the CUDA backend.
struct FusedInto {
  std::string op;
  std::string node;
};
std::map<std::string, FusedInto> fusion_plan(const ir::Graph& graph, int64_t opset);

// The graph an Executor runs for `graph`: a copy after the executor's fusions (fusion/pipeline.cpp,
// fuse_for_gpu) unless the kernel switch TRTUTILS_CUDA_FUSION in effect is 0. Needs no device:
// the builder stores it in GPU engines (ExecutorOptions::graph_is_fused at load). Without the
// CUDA backend: `graph` unchanged.
ir::Graph plan_gpu_graph(const ir::Graph& graph, int64_t opset);

// The device, libraries and trtutils version that timed kernel choices hold for (the key prefix
// of timing cache entries, recorded with an engine's tactics): "cuda NVIDIA H200 sm90 (CUDA
// runtime ...) trtutils 0.9.0"; "" without a usable device.
std::string timing_device();

// Device memory the caller owns, for Executor::enqueue: an input's data, dtype and shape, or an
// output buffer of `bytes` bytes (its dtype and shape are written back).
struct DeviceBuffer {
  void* data = nullptr;
  DataType dtype = DataType::kUndefined;
  Shape shape;
  size_t bytes = 0;
};

class Executor {
 public:
  Executor(const ir::Model& model, const ExecutorOptions& options);
  ~Executor();
  // Feeds are checked against the graph inputs (dtype, rank, static dims) like Session::run.
  // One run at a time per Executor (not thread safe).
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds);
  // Asynchronous run on the caller's CUDA stream (`stream` is a cudaStream_t; nullptr = the
  // legacy default stream): ordered after the work already on it, inputs read from and outputs
  // written to the caller's device buffers (every graph output needs one), and `stream` waits
  // for completion
  // through an event: the host does not wait. Input shapes seen for the first time run the
  // planning pass (cudnnFind, cuBLASLt timing: the host blocks once); with cuda_graph the second
  // call with them is captured and later calls replay the graph. An output buffer too small is
  // Error(kInvalidArgument) with nothing written to the caller's buffers. The caller keeps the
  // buffers alive and unchanged until its stream has passed this point. Fills outputs' dtype
  // and shape.
  void enqueue(const std::map<std::string, DeviceBuffer>& inputs,
               std::map<std::string, DeviceBuffer>& outputs, void* stream);
  // One entry per node in execution order (empty unless options.profile); host-run nodes are
  // timed on the host.
  const std::vector<LayerTime>& profile() const;
  uint64_t device_weight_bytes() const;      // initializers (and constants) uploaded
  uint64_t device_activation_bytes() const;  // peak bytes of the activation/workspace pool
  RunTimes last_run_times() const;
  // Per node: "gpu" (a CUDA kernel), "host" (runs on the CPU each run: shape arithmetic),
  // "cpu (fallback)" (no GPU kernel: the CPU backend's) or "constant" (evaluated once at
  // construction).
  std::vector<std::string> node_placement() const;
  // Per node, what computes it (after a run; "not run yet" before): "cuDNN fused" (bias /
  // residual / ReLU inside the cuDNN call), "cuDNN + epilogue", "cuDNN fused NHWC",
  // "cuBLASLt", "cuDNN int8 NHWC", "cuBLASLt int8 (im2col)", "dequantize + cuDNN float32"
  // (Q-op fallback), "CUDA kernel", "CUDA kernel NHWC", "host", "constant".
  // (A node whose output was channels-last in the last run ends with " NHWC".)
  std::vector<std::string> node_kernels() const;
  // NCHW <-> NHWC conversions made in the last (eager or captured) run, graph outputs included.
  int64_t layout_conversions() const;
  // Timed kernel choices taken without timing (from options.tactics or the timing cache), and
  // timed here, so far (each timed choice is written to options.timing_cache when given).
  int64_t timing_cache_hits() const;
  int64_t timing_cache_recorded() const;
  // Every timed kernel choice the runs so far made or took (what -> choice): what the builder
  // records in a GPU engine (info "gpu_tactics") for options.tactics at load. Empty when
  // deterministic.
  std::map<std::string, std::string> timing_decisions() const;

 private:
  friend class SubgraphExecutor;  // a control-flow body (subgraph_executor.h) is an Impl too
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trtutils::cuda
