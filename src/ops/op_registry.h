// Operator schemas: for each ONNX op we know, its shape/type inference. One file per op family
// in src/ops/ registers its ops through a register_*_ops() function listed in op_registry.cpp.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace trtutils::ops {

// What a shape function sees and fills.
struct InferContext {
  const ir::Node& node;
  int64_t opset;
  // Per node input: its type/shape (nullptr when the optional input is omitted).
  std::vector<const ir::ValueInfo*> inputs;
  // Per node input: its value when it is a constant (initializer), else nullptr.
  std::vector<const Tensor*> constants;
  // One per node output, names pre-filled; set dtype and (if known) shape.
  std::vector<ir::ValueInfo> outputs;

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const ir::ValueInfo& input(size_t i) const;  // throws if omitted
  DataType input_dtype(size_t i) const { return input(i).dtype; }
  // Input shape if its rank is known.
  const std::optional<ir::SymShape>& input_shape(size_t i) const { return input(i).shape; }
  const Tensor* constant(size_t i) const { return i < constants.size() ? constants[i] : nullptr; }
  void set_output(size_t i, DataType dtype, std::optional<ir::SymShape> shape) {
    outputs.at(i).dtype = dtype;
    outputs.at(i).shape = std::move(shape);
  }
};

using InferFn = std::function<void(InferContext&)>;

struct OpSchema {
  std::string op_type;
  std::string domain;  // "" for the default domain
  InferFn infer;
};

class OpRegistry {
 public:
  static OpRegistry& instance();  // populated on first use with every family's ops
  void add(OpSchema schema);
  const OpSchema* find(std::string_view domain, std::string_view op_type) const;
  std::vector<std::string> op_types() const;

 private:
  std::vector<OpSchema> schemas_;
};

// Family registration functions (one per file group in src/ops/).
void register_elementwise_ops(OpRegistry& r);
void register_nn_ops(OpRegistry& r);
void register_tensor_ops(OpRegistry& r);
void register_quant_ops(OpRegistry& r);
void register_qlinear_ops(OpRegistry& r);    // com.trtutils::QConv, QGemm, QMatMul
void register_index_ops(OpRegistry& r);      // GatherElements, ScatterElements, RoiAlign, Loop
void register_detection_ops(OpRegistry& r);  // com.trtutils::EfficientNMS

// Common shape helpers.
// Numpy-style multidirectional broadcast; throws Error(kInvalidArgument) naming the node if the
// shapes cannot broadcast.
ir::SymShape broadcast_shapes(const ir::SymShape& a, const ir::SymShape& b, const ir::Node& node);
Shape broadcast_shapes(const Shape& a, const Shape& b, const ir::Node& node);
// Normalises a possibly negative axis into [0, rank); throws naming the node if out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const ir::Node& node);

}  // namespace trtutils::ops
