// The runtime: an engine file -> Engine (immutable, shareable) -> ExecutionContexts (one per
// thread or stream) that bind inputs by name and execute.
//
//   auto engine = trtutils::Engine::load("model.engine");
//   auto ctx = engine->create_execution_context();
//   std::map<std::string, trtutils::Tensor> out = ctx->execute({{"input", batch}});
//
// An Engine may be used by any number of contexts on any threads at once; one context runs one
// execute() at a time. Loading refuses a file that is not a trtutils engine, has another format
// version, is truncated or corrupted (checksum), or was built for a backend / GPU that is not
// the one asked for; the CPU backend runs every engine (it is the reference).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trtutils/dtype.h"
#include "trtutils/tensor.h"

namespace trtutils {

struct EngineTensorInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> shape;             // -1 for a dynamic dimension
  std::vector<std::string> dim_names;     // symbol of each dynamic dimension ("" if none)
  Shape min_shape, opt_shape, max_shape;  // the optimization profile (empty: static / none)
  std::string format = "LINEAR";
};

struct EngineLayerInfo {
  int64_t index = 0;
  std::string name;
  std::string op;         // op type ("com.trtutils::QConv" for our fused kinds)
  std::string precision;  // fp32, fp16, int8, fp8, ... (int64 etc. for shape layers)
  // cpu, gpu, dla, ...; GPU engines: gpu, "cpu (fallback)", host (shape arithmetic), constant
  std::string device;
  std::string kernel;
  std::string tactic;  // GPU engines built without their GPU: "untimed (timed on first load)"
  std::string layout;  // GPU layers: NCHW / NHWC of the output at the opt shapes ("" = not known)
  std::vector<std::string> inputs, outputs;
  std::vector<std::string> input_shapes, output_shapes;  // "[8, 64, 56, 56]", "?" when unknown
};

struct EngineLoadOptions {
  std::string backend = "auto";  // "cpu" | "cuda" | "auto": the engine's own backend if usable
};

struct ContextOptions {
  int num_threads = 0;   // CPU threads; 0: all cores
  bool profile = false;  // time every layer (see ExecutionContext::profile())
  // CUDA runtime: capture each run in a CUDA graph and replay it (static input shapes only;
  // ignored otherwise and on the CPU).
  bool cuda_graph = true;
  // CUDA runtime, for benchmarks (trtexec's --noDataTransfers): when an execute() has the same
  // input shapes as the previous one, its inputs are not copied to the device again (the device
  // keeps the previous ones) and the outputs are not copied back: execute() returns an empty map.
  bool no_data_transfers = false;
  // CUDA runtime: timing cache file ("global": $TRTUTILS_CACHE_DIR or ~/.cache/trtutils, then
  // timing.cache; the file `build --timing_cache` uses). A GPU engine built on its GPU carries
  // its kernel choices (implicit GEMM or cuBLASLt, custom convolutions or cuDNN, cuBLASLt's
  // algorithms), timed at build at the opt shapes, and takes them as they are; the choices it
  // lacks (an engine built with --target_sm, other shapes) the first run times, reading them
  // from this file and writing new ones back, so that later contexts and processes run the same
  // kernels without timing them. Empty: none. Ignored on the CPU (its tactics are chosen at
  // build time).
  std::string timing_cache{};
  // Debugging (`trtutils compare --layerwise`): execute() also returns every layer's output, by
  // its tensor name. The engine's layers are already fused, so on the CPU this changes nothing
  // that runs; the CUDA runtime runs the plain graph instead of the stored GPU plan (whose fused
  // layers no longer compute most of those tensors) and fuses it at load, keeping each marked
  // tensor, so there a marked run may fuse less than an unmarked one. All intermediates stay
  // alive until execute() returns.
  bool mark_all_outputs = false;
};

// The last execute()'s split (CUDA events on the GPU; on the CPU everything is compute).
struct IoTimes {
  double h2d_ms = 0, compute_ms = 0, d2h_ms = 0;
};

// Device memory the caller owns (ExecutionContext::enqueue): an input's pointer, dtype and
// shape, or an output buffer of `bytes` bytes whose dtype and shape enqueue writes back.
struct DeviceBuffer {
  void* data = nullptr;
  DataType dtype = DataType::kUndefined;
  Shape shape;
  size_t bytes = 0;
};

struct LayerTiming {
  std::string name;
  std::string op;
  double total_ms = 0;
  int64_t calls = 0;
  std::string kernel;  // what ran it on the GPU ("cuDNN fused NHWC", ...); empty on the CPU
};

class ExecutionContext;

class Engine {
 public:
  static std::shared_ptr<Engine> load(const std::filesystem::path& path,
                                      const EngineLoadOptions& options = {});
  ~Engine();

  const std::vector<EngineTensorInfo>& inputs() const;
  const std::vector<EngineTensorInfo>& outputs() const;
  // The layers as the engine's own backend runs them: for a GPU engine the stored GPU plan
  // (fused layers, as `benchmark --profile` names them), whichever backend runs it here; for a
  // GPU engine of format 1 (no stored plan) the graph the GPU fuses at load.
  const std::vector<EngineLayerInfo>& layers() const;
  // A GPU engine that stores its GPU plan (format >= 2): loading runs it, deciding nothing again.
  bool has_gpu_plan() const;
  std::string backend() const;          // the backend it was built for
  std::string runtime_backend() const;  // the backend that executes it here
  int target_sm() const;                // 0 for CPU engines
  bool strongly_typed() const;
  uint64_t weight_bytes() const;
  // Device memory holding the weights of this engine's GPU contexts: every context shares one
  // copy (and the packed forms its kernels use), as TensorRT's contexts do. 0 before the first
  // GPU context, and for engines that run on the CPU.
  uint64_t device_weight_bytes() const;
  uint64_t activation_arena_bytes() const;  // planned by liveness at the opt/static shapes
  std::string info_json() const;            // everything the builder recorded (JSON text)
  uint32_t format_version() const;          // the engine file format version it was read from
  std::string producer() const;             // "trtutils <version>" that wrote it ("" if unknown)
  std::filesystem::path path() const;

  std::unique_ptr<ExecutionContext> create_execution_context(
      const ContextOptions& options = {}) const;

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// A zero-filled host tensor in page-locked memory when a CUDA device is usable (copies to and
// from the GPU run faster and overlap), else an ordinary tensor. For feeds reused many times.
Tensor allocate_host_tensor(DataType dtype, Shape shape);

class ExecutionContext {
 public:
  ~ExecutionContext();
  // Checks every input against the engine (name, dtype, shape within the profile) and runs.
  // Throws Error(kInvalidArgument) naming the input and the expected dtype / shape.
  std::map<std::string, Tensor> execute(const std::map<std::string, Tensor>& inputs);
  const std::vector<LayerTiming>& profile() const;
  // Most bytes of activations alive at once in any execute() so far.
  uint64_t peak_activation_bytes() const;
  // Bytes of weights this context uses (device copies on the GPU backend, shared with the
  // engine's other contexts: Engine::device_weight_bytes() counts them once).
  uint64_t weight_bytes() const;
  IoTimes last_io_times() const;
  // TensorRT's enqueueV3 counterpart for engines that run on the GPU: inputs and outputs in
  // device memory, work ordered on the caller's CUDA stream (`cuda_stream` is a cudaStream_t;
  // nullptr = the legacy default stream) and no host wait: synchronise that stream (or an event
  // recorded on it) before reading the outputs. The first call with new input shapes plans
  // (the host blocks once); later ones replay a CUDA graph. Inputs are checked like execute()'s;
  // every output needs a buffer (too small: Error(kInvalidArgument), nothing written). One call
  // at a time per context (other contexts of the engine run concurrently). Error(kNotSupported)
  // on the CPU backend: use execute().
  void enqueue(const std::map<std::string, DeviceBuffer>& inputs,
               std::map<std::string, DeviceBuffer>& outputs, void* cuda_stream);

  struct Impl;
  explicit ExecutionContext(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace trtutils
