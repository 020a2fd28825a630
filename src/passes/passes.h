// Graph passes that run on the IR before execution. Each pass is its own file; the pipeline
// (pipeline.cpp) orders them and can switch any off by name.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace trtutils::passes {

struct ShapeInferenceOptions {
  // strict: an op's shape function error is fatal (a graph that cannot be valid). Otherwise the
  // value is left with unknown shape and the error is logged at verbose level.
  bool strict = false;
};
// Fills graph.value_info with dtype/shape for every node output the op schemas can infer.
// Returns the number of values whose type or shape became known.
size_t infer_shapes(ir::Graph& graph, int64_t opset, const ShapeInferenceOptions& options = {});

struct ConstantFoldingOptions {
  // Ops never folded: Q/DQ stay so that quantized islands remain visible to the builder.
  std::set<std::string> keep_ops = {"QuantizeLinear", "DequantizeLinear"};
  // Outputs bigger than this are not materialised (they would bloat the model).
  size_t max_output_bytes = size_t{64} << 20;
};
// Evaluates every node whose inputs are all initializers (and Shape/Size of values whose shape
// is static), replacing it by initializers. Returns the number of nodes removed.
size_t fold_constants(ir::Graph& graph, int64_t opset, const ConstantFoldingOptions& options = {});

// Runs the standard pipeline: shape inference, constant folding (to a fixed point, so that
// Shape-driven subgraphs disappear when shapes are static), dead-code elimination.
// `disabled` names passes to skip: "constant_folding", "dead_code_elimination".
void run_pipeline(ir::Graph& graph, int64_t opset, const std::set<std::string>& disabled = {});

}  // namespace trtutils::passes
