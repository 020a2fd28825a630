// The graph the CUDA executor's fusions rewrite (one file per pattern in this folder, ordered by
// pipeline.cpp), and the matching helpers the patterns share (the graph index itself and the GELU
// and residual tails are passes/fusion_graph.h): who reads and who produces each
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
#include "passes/fusion_graph.h"

namespace trtutils::cuda::fusion {

// The graph index and the GELU / residual tails are the passes' (passes/fusion_graph.h), shared
// with the CPU plan's matmul_fusion.
using passes::FusionGraph;
using passes::match_gelu;
using passes::match_residual;
using passes::near;
using passes::other;

// A node of the ONNX domain ("" or ai.onnx).
bool default_domain(const ir::Node& n);
// An A/B switch read at every call (the tests set and unset them): on unless the variable is 0,
// off or false.
bool switch_on(const char* name);
// Attributes of a fused node (ir/graph_builder.h makes them).
void set_int(ir::Node& f, const char* name, int64_t v);
void set_float(ir::Node& f, const char* name, float v);
// A Transpose swapping the two leading axes of a rank-3 tensor.
bool swaps_leading(const ir::Node& t);
// An explicit perm of a Transpose (none: the reversal needs the rank; left alone).
std::vector<int64_t> perm_of(const ir::Node& t);

// ---- epilogue tails (MatMulBias, the quantized products) ----
// y (rows x n) -> Reshape [R0, R1, n] -> Transpose([1, 0, 2]), each read only by the next:
// sets f's y_grid = [R0, R1], appends both nodes to chain and returns the Transpose's output;
// else returns y.
std::string match_grid(const FusionGraph& fg, const std::string& y, int64_t n, ir::Node& f,
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
