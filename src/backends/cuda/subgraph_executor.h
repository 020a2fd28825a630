// Internal to the CUDA backend: a control-flow body (an If branch, a Loop body) planned and run
// by the executor machinery of a whole graph, nested in the executor that holds the If / Loop.
//
//   - The body becomes a model of its own (make_body_model): the values it reads from the
//     enclosing scope that the parent knows as constants become its initializers (its GPU ops'
//     factories see them as weights, as at the top level); the others become graph inputs after
//     the body's own, bound at run time to the parent's values (device or host: no copies).
//   - Its nodes are placed as the top level's are (constant / host / gpu / per-node CPU fallback
//     under the parent's allow_fallback); values the parent computes on the host (shape
//     arithmetic) and the Loop's iteration number and condition stay host values, so that shape
//     arithmetic inside the body stays on the host too. A body's own If / Loop nests again.
//   - It runs on the caller's RunContext: the parent's stream, allocator, cuDNN / cuBLASLt handles
//     and timing cache (it creates none of its own); no profile, no CUDA graph (the If / Loop op
//     refuses capture: the host reads the condition).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops.h"

namespace trtutils::cuda {

// What a body may read from the graph around it, as that graph's planner knows it.
struct OuterScope {
  // A constant's value (initializer or folded at construction), else nullptr.
  std::function<const Tensor*(const std::string&)> constant;
  // Whether the value is computed on the host every run (Shape, Size and what reads only them).
  std::function<bool(const std::string&)> on_host;
  // The value's type and shape where the enclosing graph knows them.
  std::function<std::optional<ir::ValueInfo>(const std::string&)> info;
};

// A body as a model: the body's inputs, then `outer_inputs` (the enclosing values it reads that
// are not constants, sorted); host_inputs: the inputs known on the host at every run.
struct BodyModel {
  ir::Model model;
  std::vector<std::string> outer_inputs;
  std::set<std::string> host_inputs;
};
// `host_formals`: body inputs (by position) the caller always binds to host values (the Loop's
// iteration number and condition).
BodyModel make_body_model(const ir::Graph& body, const std::vector<ir::OpsetImport>& opsets,
                          const OuterScope& outer, const std::vector<size_t>& host_formals);

// The options of a nested executor: the parent's, without profiling, CUDA graphs, a timing cache
// file of its own or data-transfer shortcuts (the parent's RunContext brings its timing cache).
ExecutorOptions body_options(const ExecutorOptions& parent);

// Where the nodes of a body model would run (gpu_coverage with `host_inputs` known on the host).
GpuCoverage gpu_coverage(const ir::Model& model, const std::set<std::string>& host_inputs);

// A planned body. Implemented in cuda_executor.cpp: it is an Executor::Impl without device
// resources of its own.
class SubgraphExecutor {
 public:
  // Plans the body (make_body_model, body_options). Error(kNotSupported) naming the nodes that
  // cannot run: without a kernel on any backend, or, without options.allow_fallback, without a
  // GPU kernel.
  SubgraphExecutor(const ir::Graph& body, const std::vector<ir::OpsetImport>& opsets,
                   const ExecutorOptions& options, const OuterScope& outer,
                   const std::vector<size_t>& host_formals = {});
  ~SubgraphExecutor();
  SubgraphExecutor(const SubgraphExecutor&) = delete;
  SubgraphExecutor& operator=(const SubgraphExecutor&) = delete;
  // The enclosing values run() takes after the body's own inputs, in this order.
  const std::vector<std::string>& outer_inputs() const { return outer_inputs_; }
  // Runs the body on ctx (its stream, allocator, handles): `inputs` are the body's inputs then
  // the outer_inputs() values, shared with the caller (never written). Returns the body's
  // outputs in order, channels-first, on the device and / or the host; none is a constant.
  std::vector<Value> run(RunContext& ctx, const std::vector<Value>& inputs);
  // Per body node, as Executor::node_placement().
  std::vector<std::string> node_placement() const;

 private:
  std::vector<std::string> outer_inputs_;
  std::unique_ptr<Executor::Impl> impl_;
};

}  // namespace trtutils::cuda
