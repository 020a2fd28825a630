// Per-layer precision: the user's layer_precision constraints resolved against the model, and
// the precision each built layer runs at (what inspect shows).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "engine/engine_file.h"
#include "ir/graph.h"
#include "trtutils/builder.h"

namespace trtutils::precision {

struct LayerPrecisionPlan {
  std::set<std::string> forced_fp32;  // node names
  std::set<std::string> forced_fp16;
  std::set<std::string> forced_int8;  // int8 or fp8: a quantized kernel
  // fp32/fp16 layers: never given Q/DQ by weakly-typed quantization.
  std::set<std::string> excluded_from_quantization;
};

// Resolves config.layer_precision (node index in `original_nodes` order, or node name) when
// precision_constraints is prefer/obey; an unknown layer is Error(kInvalidArgument) naming it.
// fp16 layers with fp16 not allowed (--fp16 off) are kept, with a warning (TensorRT obeys them
// too). Appends warnings.
LayerPrecisionPlan resolve_layer_constraints(const builder::BuildConfig& config,
                                             const ir::Graph& graph,
                                             const std::vector<std::string>& original_nodes,
                                             std::vector<std::string>& warnings);

// The precision and kernel of a built node: quantized islands (com.trtutils Q* ops) by their
// quantized input type, QuantizeLinear / DequantizeLinear by their quantized type, other nodes
// by their first output's type (fp32, fp16, ...; int64 for shape arithmetic).
engine::LayerRecord describe_layer(const ir::Graph& graph, const ir::Node& node);

}  // namespace trtutils::precision
