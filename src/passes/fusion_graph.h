// The graph a fusion rewrites, for every backend's fusions (the CPU plan's matmul_fusion, the
// CUDA executor's patterns in backends/cuda/fusion/), and the matching helpers they share: who
// reads and who produces each value, single-reader checks, scalar constants, and the tails a
// product takes into its epilogue (the exporters' erf GELU chain, a residual Add).
//
// A pattern matches from node i, marks the nodes it absorbs in `removed` and puts its fused node
// in the place of the chain's last node (FusionGraph::place), so that every operand the fused
// node reads exists by then. Intermediate values must have one reader (only_reader) and must not
// be graph outputs. Nothing is erased until the caller ends: indices stay valid throughout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace trtutils::passes {

// The graph being fused, with an index of its values' readers and producers (built once; a
// pattern that moves an output to another node updates `producer`).
struct FusionGraph {
  FusionGraph(ir::Graph& g, int64_t opset);

  ir::Graph& graph;
  int64_t opset;
  std::unordered_map<std::string, std::vector<size_t>> readers;  // value -> reading nodes
  std::unordered_map<std::string, size_t> producer;              // value -> its node
  std::unordered_set<std::string> graph_outputs;
  std::vector<bool> removed;     // nodes absorbed by a fusion (dropped at the end)
  size_t last_fused = SIZE_MAX;  // where the last fusion put its node

  // The single reader of value v (not a graph output), or SIZE_MAX.
  size_t only_reader(const std::string& v) const;
  // The one float value of an initializer, or NaN.
  float scalar(const std::string& v) const;
  // The shape of value v from the value infos, the graph inputs or the initializers.
  std::optional<ir::SymShape> shape_of(const std::string& v) const;
  // The rank of value v from the graph's value infos, or -1.
  int64_t rank_of(const std::string& v) const;
  // The static shape of value v (every dim known and positive), else empty.
  std::vector<int64_t> static_shape(const std::string& v) const;
  size_t index_of(const ir::Node& n) const;
  // Removes the chain's nodes and puts f in the place of its last one (every operand exists by
  // then); returns 1 (one fusion).
  size_t place(ir::Node f, const std::vector<size_t>& chain);
  // Drops the removed nodes (the fused ones stay in their places).
  void erase_removed();
};

// |v - want| within 1e-3 of want.
bool near(float v, double want);
// The other input of a two-input node, given one of them.
const std::string* other(const ir::Node& n, const std::string& v);

// x -> Div(x, sqrt 2) | Mul(x, 1/sqrt 2) -> Erf -> Add(1) -> Mul(x, .) -> Mul(0.5), as torch
// exports nn.GELU(), x read by the Div / Mul and the Mul only: fills chain with the five nodes
// and returns the chain's output, or "".
std::string match_gelu(const FusionGraph& fg, const std::string& x, std::vector<size_t>& chain);
// y -> Add(y, r) (either order) where r has y's shape (both known from shape inference, dims
// static or named): r becomes f's next input (the residual), the Add joins chain; returns its
// output, else y.
std::string match_residual(const FusionGraph& fg, const std::string& y, ir::Node& f,
                           std::vector<size_t>& chain);

}  // namespace trtutils::passes
