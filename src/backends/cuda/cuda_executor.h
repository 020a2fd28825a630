// The CUDA backend's entry point: executes an engine's optimized graph on the GPU.
//
// Contract with the engine runtime (src/engine/runtime.cpp):
//   - cuda::device_status() says whether a usable device exists (and why not), without
//     requiring one at link time (every machine builds this code; few have a GPU).
//   - An Executor is built once per ExecutionContext from the engine's ir::Model (nodes in
//     execution order, after the builder's passes: com.trtutils::FusedConv, com.trtutils::QConv /
//     QGemm / QMatMul quantized islands, plain ONNX ops). It uploads weights (in the layout its
//     kernels want), plans device memory, and owns its stream.
//   - run() takes host tensors, returns host tensors; enqueue-style async use comes later.
//   - Any node it has no kernel for is an Error(kNotSupported) at construction, naming the node
//     (never a silent wrong answer). Every CUDA / cuDNN / cuBLASLt call is checked with file:line.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace trtutils::cuda {

struct DeviceStatus {
  bool usable = false;
  std::string why;  // when not usable: "no CUDA driver", "no CUDA device", ...
  int sm = 0;       // e.g. 90
  std::string name;
};
// Whether this build has the CUDA backend and a device it can run on.
DeviceStatus device_status();

struct ExecutorOptions {
  bool profile = false;     // per-layer times (CUDA events)
  bool cuda_graph = false;  // capture the whole run in a CUDA graph (static shapes)
};

struct LayerTime {
  std::string name, op;
  double total_ms = 0;
  int64_t calls = 0;
};

class Executor {
 public:
  Executor(const ir::Model& model, const ExecutorOptions& options);
  ~Executor();
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds);
  const std::vector<LayerTime>& profile() const;
  uint64_t device_weight_bytes() const;
  uint64_t device_activation_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trtutils::cuda
