// What the fusion passes ask of a graph before they rewrite it: how often each value is read,
// which dtype and shape it has. Shared by conv_fusion, qdq_fusion and matmul_fusion.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace trtutils::passes {

// Adds the reads of every value to `uses`: node inputs (each occurrence) in the graph and,
// recursively, in subgraph attributes (a subgraph may read outer values implicitly; its outputs
// count as reads too).
void count_uses(const ir::Graph& g, std::unordered_map<std::string, int>& uses);

// The dtype of an initializer or of a value in value_info, else kUndefined.
DataType dtype_of(const ir::Graph& g, const std::string& v);

// The shape of an initializer, or of a value whose every dim is known or a named symbol (equal
// names are equal sizes at run time; kernels re-check shapes anyway); else nullopt.
std::optional<ir::SymShape> known_shape(const ir::Graph& g, const std::string& v);

// The float dtype of a value (float32, float16 or bfloat16), or kUndefined.
DataType float_dtype(const ir::Graph& g, const std::string& v);

// The permutation of Transpose node n (its perm, or the reversed axes when absent) with negative
// axes normalized, for an input of known rank; empty when n is no single-output default-domain
// Transpose, the rank is unknown or the perm is not one of the input's axes.
std::vector<int64_t> transpose_perm_of(const ir::Graph& g, const ir::Node& n);

}  // namespace trtutils::passes
