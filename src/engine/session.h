// Session: runs an ONNX model (IR) on the CPU backend. Construction validates the graph, runs
// the pass pipeline (shape inference, constant folding, dead-code elimination) and resolves a
// kernel for every node, so that unsupported ops are reported before any input is seen.
// run() checks each feed's dtype and shape against the graph inputs (binding symbolic dims such
// as "batch" consistently across inputs), executes nodes in order and frees every intermediate
// tensor after its last use. A Session may be run from one thread at a time.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace trtutils {

class TensorPool;

struct SessionOptions {
  int num_threads = 0;         // 0: OpenMP's default (all cores)
  bool use_reference = false;  // plain reference kernels only (no oneDNN fast paths)
  bool fold_constants = true;  // run the constant-folding pass at construction
  bool profile = false;        // time every node (see Session::profile())
  // Run the pass pipeline at construction; false for graphs already optimized (engines).
  bool run_passes = true;
  // Debugging (compare --layerwise): once the passes have run, every node output becomes a graph
  // output too (mark_every_node_output), so that marking changes no fusion: a value the passes
  // fused away is not returned. Every intermediate is kept until the run ends.
  bool mark_all_outputs = false;
};

// Appends every top-level node output that is not yet a graph output (or input) to the graph's
// outputs, in node order.
void mark_every_node_output(ir::Graph& graph);

// Time spent per node over all run() calls since construction (profile = true).
struct NodeProfile {
  std::string name;
  std::string op_type;
  double total_ms = 0;
  int64_t calls = 0;
};

// Throws Error(kNotSupported) naming every node of `graph` that no CPU kernel runs (one line).
void check_cpu_kernels(const ir::Graph& graph);

// If and Loop: the nodes whose subgraphs the session runs itself.
bool is_control_flow(const ir::Node& node);
// Runs an If or Loop node on the CPU: the condition picks the branch (If), or the body runs
// while the trip count and condition allow (Loop); their nodes (nested control flow included)
// run with the CPU kernels, reading the enclosing scope's values through `outer` (nullptr: not
// computed). The GPU executor runs control flow this way, with the values it downloads.
std::vector<Tensor> run_control_flow_on_cpu(
    const ir::Node& node, int64_t opset,
    const std::function<const Tensor*(const std::string&)>& outer);

class Session {
 public:
  explicit Session(ir::Model model, SessionOptions options = {});
  static Session from_file(const std::filesystem::path& onnx, SessionOptions options = {});

  const std::vector<ir::ValueInfo>& inputs() const { return model_.graph.inputs; }
  const std::vector<ir::ValueInfo>& outputs() const { return model_.graph.outputs; }
  const ir::Model& model() const { return model_; }

  // Throws Error(kInvalidArgument) for unknown/missing inputs or a dtype/shape mismatch, naming
  // the input, the expected and the given type/shape.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds);
  // One entry per node in execution order; empty unless SessionOptions::profile.
  const std::vector<NodeProfile>& profile() const { return profile_; }
  // Most bytes of activations (inputs, intermediates, outputs) alive at once in any run so far.
  size_t peak_activation_bytes() const { return peak_activation_bytes_; }
  // Bytes of the model's weights (initializers after constant folding).
  size_t weight_bytes() const;

 private:
  void check_feeds(const std::map<std::string, Tensor>& feeds) const;

  // Destroyed last: then releases the CPU kernels' cached packed weights whose weights buffers
  // went with this session's model (cpu::nn::onednn_release_stale).
  struct ReleaseStaleCaches {
    ReleaseStaleCaches() = default;
    ReleaseStaleCaches(const ReleaseStaleCaches&) = default;
    ReleaseStaleCaches& operator=(const ReleaseStaleCaches&) = default;
    ~ReleaseStaleCaches();
  } release_stale_caches_;
  ir::Model model_;
  SessionOptions options_;
  int64_t opset_ = 0;
  // last_use_[i]: values whose last reader is node i (freed right after it runs).
  std::vector<std::vector<std::string>> last_use_;
  std::vector<NodeProfile> profile_;
  size_t peak_activation_bytes_ = 0;
  // The tensors run() allocates come from here: repeated runs reuse the same pages (see
  // core/tensor_pool.h). Shared by copies of the session; outlives it while its tensors do.
  std::shared_ptr<TensorPool> pool_;
};

}  // namespace trtutils
