// The graph the CUDA executor's fusions rewrite (one file per pattern in this folder, ordered by
// pipeline.cpp), and the matching helpers the patterns share: who reads and who produces each
// value, single-reader checks, scalar constants, the epilogue tails several products take (the
// erf GELU chain, the batch-first grid, the residual Add) and placing a fused node.
//
// A pattern matches from node i, marks the nodes it absorbs in `removed` and puts its fused node
// in the place of the chain's last node (FusionGraph::place), so that every operand the fused
// node reads exists by then. Intermediate values must have one reader (only_reader) and must not
// be graph outputs. Nothing is erased until the pipeline ends: indices stay valid throughout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace trtutils::cuda::fusion {

// The graph being fused, with an index of its values' readers and producers (built once; a
// pattern that moves an output to another node updates `producer`).
struct FusionGraph {
  FusionGraph(ir::Graph& g, int64_t opset);

  ir::Graph& graph;
  int64_t opset;
  std::unordered_map<std::string, std::vector<size_t>> readers;  // value -> reading nodes
  std::unordered_map<std::string, size_t> producer;              // value -> its node
  std::unordered_set<std::string> graph_outputs;
  std::vector<bool> removed;     // nodes absorbed by a fusion (dropped by the pipeline)
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
};

// A node of the ONNX domain ("" or ai.onnx).
bool default_domain(const ir::Node& n);
// An A/B switch read at every call (the tests set and unset them): on unless the variable is 0,
// off or false.
bool switch_on(const char* name);
bool near(float v, double want);
// The other input of a two-input node, given one of them.
const std::string* other(const ir::Node& n, const std::string& v);
// Attributes of a fused node (ir/graph_builder.h makes them).
void set_int(ir::Node& f, const char* name, int64_t v);
void set_float(ir::Node& f, const char* name, float v);
// A Transpose swapping the two leading axes of a rank-3 tensor.
bool swaps_leading(const ir::Node& t);
// An explicit perm of a Transpose (none: the reversal needs the rank; left alone).
std::vector<int64_t> perm_of(const ir::Node& t);

// ---- epilogue tails (MatMulBias, the quantized products) ----
// x -> Div(x, sqrt 2) | Mul(x, 1/sqrt 2) -> Erf -> Add(1) -> Mul(x, .) -> Mul(0.5), starting at
// the Div/Mul node `d` that reads x; fills the chain's nodes and returns the output, or ""
// (gelu.cpp).
std::string match_gelu(const FusionGraph& fg, const std::string& x, std::vector<size_t>& chain);
// y (rows x n) -> Reshape [R0, R1, n] -> Transpose([1, 0, 2]), each read only by the next:
// sets f's y_grid = [R0, R1], appends both nodes to chain and returns the Transpose's output;
// else returns y.
std::string match_grid(const FusionGraph& fg, const std::string& y, int64_t n, ir::Node& f,
                       std::vector<size_t>& chain);
// y -> Add(y, r) (either order) where r has y's shape (both known from shape inference):
// r becomes f's input 3 (the residual, cuBLASLt's C), the Add joins chain; returns its
// output, else y.
std::string match_residual(const FusionGraph& fg, const std::string& y, ir::Node& f,
                           std::vector<size_t>& chain);
// A per-tensor QuantizeLinear reading v (its only reader): saturating, scalar constant scale
// (finite, > 0) and zero point: its index, else SIZE_MAX.
size_t per_tensor_quantizer_of(const FusionGraph& fg, const std::string& v);
// A QGemm with one float output (no y_scale, residual or activation) and none of the
// attributes `also` (epilogue features set by an earlier fusion).
bool float_qgemm(const ir::Node& g, std::initializer_list<const char*> also);
// N, the output columns of a com.trtutils::QGemm with a 2-D constant W, else -1.
int64_t qgemm_columns(const FusionGraph& fg, const ir::Node& g);

// ---- the attention's operands (attention.cpp; the Q/DQ attention reuses them) ----
// A Mul / Div of v by a scalar constant (v * c, c * v, v / c) as the factor, else NaN.
float scalar_factor(const FusionGraph& fg, const ir::Node& n, const std::string& v);
// Walks back from operand v of the attention through scalar Mul / Div (folded into scale)
// and up to four Transposes / Reshapes (constant shape), each read only by the next; marks
// them in `chain`. Returns the source; `view` gets the view ops from the source on, encoded
// as in ops_attention.cpp: {0, rank, perm...} or {1 + allowzero, rank, shape...}.
std::string operand_source(const FusionGraph& fg, std::string v, float& scale,
                           std::vector<int64_t>& view, std::vector<size_t>& chain,
                           bool allow_scale);
// scores -> Mul / Div by scalars (their product into scale) -> Softmax over the last axis,
// each read only by the next: the Softmax's index (the chain extended), else SIZE_MAX.
size_t scores_softmax(const FusionGraph& fg, std::string x, float& scale,
                      std::vector<size_t>& chain);
// The fused attention node (op) replacing first .. second: the operands and their views, and
// a Transpose reading second's output absorbed as perm_o (appended to chain, which then ends
// with the node the fused one replaces).
ir::Node attention_node(const FusionGraph& fg, const char* op, const ir::Node& first,
                        const ir::Node& second, const std::vector<std::string>& operands,
                        const std::vector<std::vector<int64_t>>& views, std::vector<size_t>& chain);

}  // namespace trtutils::cuda::fusion
