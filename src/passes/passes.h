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

// Rewrites, on float32 values, Conv -> [Add(residual)] -> [activation] into one node
// com.trtutils::FusedConv computing Y = act(conv(X, W) + B + Residual):
//   inputs X, W, [B], [Residual] (Residual: same shape as Y, read only);
//   attributes: the Conv's, plus "activation" (string: Relu, Clip, LeakyRelu, Sigmoid,
//   HardSwish; absent = none) and "activation_params" (floats: Clip [min, max], LeakyRelu
//   [alpha]; infinities for an absent Clip bound).
// Only activations with an exact oneDNN eltwise post-op are fused, only when every value fused
// away has exactly one reader and is not a graph output, and only for an Add whose other input
// has the Conv output's shape (no broadcasting; dims static or equal symbols). Needs shape
// inference first (dtypes and shapes come from value_info). The fused node takes the position of
// the pattern's last node. Returns the number of Conv nodes fused.
size_t fuse_convolutions(ir::Graph& graph, int64_t opset);

// Runs the standard pipeline: shape inference, constant folding (to a fixed point, so that
// Shape-driven subgraphs disappear when shapes are static), conv fusion, dead-code elimination.
// `disabled` names passes to skip: "constant_folding", "conv_fusion", "dead_code_elimination".
// The environment variable TRTUTILS_DISABLE_PASSES (comma-separated names) adds to it.
// Tools that rewrite and save models (e.g. the quantizer) should disable "conv_fusion": its
// FusedConv nodes are for execution on our CPU backend only.
void run_pipeline(ir::Graph& graph, int64_t opset, const std::set<std::string>& disabled = {});

}  // namespace trtutils::passes
