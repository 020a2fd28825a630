// CPU kernels. Every op has a plain reference kernel; heavy ops (Conv, ConvTranspose, Gemm,
// MatMul) also have a fast path through oneDNN that is checked against the reference.
// A kernel reads its inputs, computes its output shapes itself (they may depend on input
// values) and allocates its outputs.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace trtutils::cpu {

struct KernelContext {
  const ir::Node& node;
  int64_t opset;
  std::vector<const Tensor*> inputs;  // nullptr for an omitted optional input
  std::vector<Tensor> outputs;        // sized to node.outputs; the kernel assigns each
  bool use_reference = false;         // run the plain reference even where a fast path exists
  // Per input: true when it is a constant (initializer) whose buffer lives across runs, so a
  // fast path may cache work derived from it (packed weights). Empty = all inputs constant.
  std::vector<bool> constant_inputs;
  // Per input: true when the caller gives its buffer up (the session: this node is the value's
  // last reader, no other tensor shares the buffer, it is no graph input or output), so a kernel
  // may write an output into it in place. Empty = none.
  std::vector<bool> donated_inputs;

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const Tensor& input(size_t i) const;  // throws Error(kInvalidArgument) naming the node if omitted
  bool input_is_constant(size_t i) const {
    return constant_inputs.empty() || (i < constant_inputs.size() && constant_inputs[i]);
  }
  bool input_is_donated(size_t i) const {
    return i < donated_inputs.size() && donated_inputs[i] && has_input(i);
  }
  // Allocates output i with the given dtype/shape and returns it.
  Tensor& make_output(size_t i, DataType dtype, Shape shape);
};

using KernelFn = std::function<void(KernelContext&)>;

struct KernelDef {
  std::string op_type;
  std::string domain;  // "" for the default domain
  KernelFn fn;
};

class KernelRegistry {
 public:
  static KernelRegistry& instance();
  void add(KernelDef def);
  const KernelDef* find(std::string_view domain, std::string_view op_type) const;
  std::vector<std::string> op_types() const;

 private:
  std::vector<KernelDef> kernels_;
};

void register_elementwise_kernels(KernelRegistry& r);
void register_nn_kernels(KernelRegistry& r);
void register_tensor_kernels(KernelRegistry& r);
void register_quant_kernels(KernelRegistry& r);
void register_qlinear_kernels(KernelRegistry& r);  // com.trtutils::QConv, QGemm, QMatMul
void register_index_kernels(KernelRegistry& r);    // GatherElements, ScatterElements, RoiAlign
void register_nms_kernels(KernelRegistry& r);      // com.trtutils::EfficientNMS

// Runs one node on the CPU: looks up the kernel (Error(kNotSupported) naming node and op if
// none) and executes it. Errors from the kernel are rethrown with the node named.
// constant_inputs, donated_inputs: see KernelContext.
std::vector<Tensor> run_node(const ir::Node& node, int64_t opset,
                             const std::vector<const Tensor*>& inputs, bool use_reference = false,
                             std::vector<bool> constant_inputs = {},
                             std::vector<bool> donated_inputs = {});

}  // namespace trtutils::cpu
