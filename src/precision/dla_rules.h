// Which layers of a graph can run on NVIDIA's DLA 2.0 (Jetson Orin, SM 87), statically, from
// NVIDIA's published restrictions. One table (dla_rule_table(), dla_rules.cpp) holds every rule:
// its id, the ops it concerns, the limit and where NVIDIA states it. dla_verdict() checks a node
// of an IR graph against the rules and names the first one it breaks.
//
// The graph is checked as TensorRT's ONNX parser would see it: ONNX ops (Conv, MaxPool, Relu,
// ...), plus our builder's fused kinds (com.trtutils FusedConv / QConv / QGemm) so that a built
// engine's graph can be checked too. Shapes come from value_info (run shape inference first);
// a value whose shape is not static fails "general.static" (DLA has no dynamic dimensions).
// Precision: FP32 float layers pass (a weakly-typed DLA build runs them in FP16 or INT8); only
// non-float compute (int32/int64/bool tensors), FP8, BF16 and INT4 fail "general.precision".
//
// Chunks: the contiguous runs of DLA-able nodes in the graph's (topological) node order, which
// is how a build with GPU fallback splits the network into DLA loadables.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace trtutils::precision {

// One published restriction.
struct DlaRule {
  std::string_view id;      // "conv.kernel"
  std::string_view ops;     // the ONNX ops it concerns: "Conv, FusedConv, QConv"
  std::string_view limit;   // "kernel height and width in [1, 32]"
  std::string_view source;  // where NVIDIA says so
};
// Every rule dla_verdict() applies, in the order it applies them.
const std::vector<DlaRule>& dla_rule_table();
// The rule with this id; nullptr if there is none.
const DlaRule* find_dla_rule(std::string_view id);

struct DlaVerdict {
  bool ok = false;
  std::string rule;    // the failed rule's id ("" when ok)
  std::string detail;  // what about the node broke it, e.g. "kernel 7x64 (limit [1, 32])"
};

// The verdict for one node of `graph` (which must have value_info for its values).
DlaVerdict dla_verdict(const ir::Graph& graph, const ir::Node& node);
// One verdict per graph.nodes entry.
std::vector<DlaVerdict> dla_verdicts(const ir::Graph& graph);

// A contiguous run of DLA-able nodes: graph.nodes[begin, end).
struct DlaChunk {
  size_t begin = 0;
  size_t end = 0;
  std::vector<std::string> nodes;  // their names
  size_t size() const { return end - begin; }
};
// The maximal runs of ok verdicts, in node order. verdicts.size() must equal graph.nodes.size().
std::vector<DlaChunk> dla_chunks(const ir::Graph& graph, const std::vector<DlaVerdict>& verdicts);

// The chunks a DLA build puts on the DLA: every node when one chunk covers all num_nodes;
// otherwise the largest chunks of at least min_layers nodes, at most max_chunks of them (ties:
// the earlier chunk), returned in node order; none when no chunk qualifies.
std::vector<DlaChunk> select_dla_chunks(const std::vector<DlaChunk>& chunks, size_t num_nodes,
                                        int max_chunks, int min_layers);

}  // namespace trtutils::precision
