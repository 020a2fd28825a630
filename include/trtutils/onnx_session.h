// Running an ONNX model directly on the CPU backend, without building an engine: the float
// reference (`trtutils run --onnx`, `benchmark --onnx`, `compare`, `debug_precision`).
//
//   trtutils::OnnxSession session("model.onnx", {.num_threads = 4});
//   std::map<std::string, trtutils::Tensor> out = session.run({{"input", batch}});
//
// Construction loads the model, runs the pass pipeline (shape inference, constant folding,
// dead-code elimination) and resolves a CPU kernel for every node, so that an unsupported op is
// an Error(kNotSupported) naming every such node before any input is seen. run() checks each
// feed's dtype and shape against the model's inputs (symbolic dimensions such as "batch" bound
// consistently across inputs), runs the nodes in order and frees each intermediate after its
// last use. One run() at a time per session; sessions are independent.
//
// Errors (trtutils::Error): what loading an ONNX file throws (kIO: unreadable; kInvalidArgument:
// not an ONNX model or malformed; kNotSupported: opset outside 7..21, unknown dtype), naming the
// file and the tensor or node at fault; kInvalidArgument for num_threads outside 0..kMaxThreads
// (check.h) and, in run(), for an unknown or missing input or a dtype / shape mismatch, naming
// the input, the expected and the given type / shape.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trtutils/dtype.h"
#include "trtutils/engine.h"
#include "trtutils/tensor.h"

namespace trtutils {

// One dimension of a declared shape: a size, or dynamic (value -1) with its symbol, if any.
struct ModelDim {
  int64_t value = -1;   // >= 0: a static size
  std::string param{};  // a dynamic dimension's symbol ("batch"); "" when it has none
  bool is_static() const { return value >= 0; }
};

// An input or output of a model as its graph declares it.
struct ModelTensorInfo {
  std::string name{};
  DataType dtype = DataType::kUndefined;
  std::optional<std::vector<ModelDim>> shape{};  // nullopt: the rank is not declared
};

struct OnnxNodeInfo {
  std::string name{};
  std::string op_type{};
  std::string domain{};  // "" for ONNX's own ops
};

// What an ONNX file declares, as loaded (no passes run; `Constant` nodes become initializers).
struct OnnxModelInfo {
  int64_t opset = 0;                      // of the default domain
  std::vector<ModelTensorInfo> inputs{};  // graph inputs that are not initializers
  std::vector<ModelTensorInfo> outputs{};
  std::vector<OnnxNodeInfo> nodes{};  // the top-level nodes in topological order
};
// Loads `onnx` (errors as OnnxSession's construction).
OnnxModelInfo onnx_model_info(const std::filesystem::path& onnx);

struct OnnxSessionOptions {
  int num_threads = 0;         // CPU threads; 0: all cores
  bool use_reference = false;  // the plain reference kernels only (no oneDNN fast paths)
  bool profile = false;        // time every node (see OnnxSession::profile())
  // Debugging (compare --layerwise): once the passes have run, every node output becomes a
  // model output too, so that marking changes no fusion (a value the passes fused away is not
  // returned). Every intermediate is then kept until run() returns.
  bool mark_all_outputs = false;
};

class OnnxSession {
 public:
  explicit OnnxSession(const std::filesystem::path& onnx, const OnnxSessionOptions& options = {});
  ~OnnxSession();
  OnnxSession(OnnxSession&&) noexcept;
  OnnxSession& operator=(OnnxSession&&) noexcept;

  // After the passes: the inputs a run() needs, and the outputs it returns.
  const std::vector<ModelTensorInfo>& inputs() const;
  const std::vector<ModelTensorInfo>& outputs() const;
  // Every node's outputs, nodes in the order they run (after the passes).
  std::vector<std::string> node_output_names() const;

  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds);
  // One entry per node in execution order, summed over every run() so far (name, op type, time,
  // calls; kernel empty); empty unless OnnxSessionOptions::profile.
  std::vector<LayerTiming> profile() const;
  // Most bytes of activations (inputs, intermediates, outputs) alive at once in any run so far.
  uint64_t peak_activation_bytes() const;
  // Bytes of the model's weights (initializers after constant folding).
  uint64_t weight_bytes() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace trtutils
