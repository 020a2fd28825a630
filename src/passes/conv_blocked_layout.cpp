// Blocked layout (CPU plan): float32 2-D convolutions and the pooling and squeeze-excitation
// nodes between them pass [N, C / 16, H, W, 16] tensors (ops/blocked_layout.h), oneDNN's nChw16c,
// from one primitive to the next. oneDNN's kernels on that layout stream memory-bound layers
// (pointwise and depthwise convolutions at 56-112 px, batch 8) 1.3-1.7x faster than its
// channels-last ones, and as fast elsewhere (bench/RESULTS.md, issue 36). Only the chain's
// boundaries convert: a first convolution of at most 4 channels reads its plain input itself,
// other entries go through ToBlocked, and readers that need the plain tensor get FromBlocked
// (dropped by dead-code elimination when nobody reads it). Channel concatenations of blocked
// values whose channel counts are multiples of 16 stay blocked. Q/DQ graphs with channels-last int8
// chains (qdq_channels_last) keep the channels-last pass (conv_layout.cpp) instead.
#include <unordered_map>

#include "ir/graph_builder.h"
#include "ops/blocked_layout.h"
#include "passes/graph_facts.h"
#include "passes/layout_rewrite.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

namespace {

constexpr const char* kDomain = "com.trtutils";
constexpr int64_t kMaxPlainInputChannels = 4;  // oneDNN's "first convolution" kernels

// v's shape when it is [N, C, H, W] with C static (the blocked layout pads C to 16 lanes).
std::optional<ir::SymShape> image_shape(const ir::Graph& g, const std::string& v) {
  auto s = static_or_named(g, v);
  if (!s || s->size() != 4 || !(*s)[1].is_static() || dtype_of(g, v) != DataType::kFloat32)
    return std::nullopt;
  return s;
}

bool untouched(const ir::Node& n) {
  return n.attr_int("channels_last", 0) == 0 && n.attr_int("blocked", 0) == 0;
}

// A float32 2-D Conv or FusedConv with constant weights.
bool conv_candidate(const ir::Graph& g, const ir::Node& n) {
  const bool conv = is_default_domain(n) && n.op_type == "Conv";
  const bool fused = n.domain == kDomain && n.op_type == "FusedConv";
  if (!(conv || fused) || n.outputs.size() != 1 || n.outputs[0].empty() || !n.has_input(0) ||
      !n.has_input(1) || !untouched(n) || !g.is_initializer(n.inputs[1]) ||
      dtype_of(g, n.inputs[1]) != DataType::kFloat32 || !image_shape(g, n.inputs[0]) ||
      !image_shape(g, n.outputs[0]))
    return false;
  return !(n.inputs.size() > 3 && !n.inputs[3].empty()) || image_shape(g, n.inputs[3]);
}

// BatchNormalization (inference) with constant per-channel parameters, Y alone.
bool batch_norm_candidate(const ir::Graph& g, const ir::Node& n) {
  if (n.op_type != "BatchNormalization" || n.inputs.size() != 5 ||
      n.attr_int("training_mode", 0) != 0)
    return false;
  const int64_t c = (*image_shape(g, n.inputs[0]))[1].value;
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* t = g.initializer(n.inputs[i]);
    if (!t || t->numel() != c) return false;
  }
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (!n.outputs[o].empty()) return false;
  return true;
}

// MaxPool without Indices, SqueezeExcite, GlobalAveragePool / GlobalMaxPool, BatchNormalization
// and Relu (zero stays zero in the padding lanes) on [N, C, H, W].
bool per_channel_candidate(const ir::Graph& g, const ir::Node& n) {
  const bool pool =
      is_default_domain(n) &&
      (n.op_type == "MaxPool" || n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool" ||
       n.op_type == "Relu" || n.op_type == "BatchNormalization");
  const bool se = n.domain == kDomain && n.op_type == "SqueezeExcite";
  if (!(pool || se) || n.outputs.empty() || n.outputs[0].empty() || !n.has_input(0) ||
      !untouched(n) || !image_shape(g, n.inputs[0]))
    return false;
  // A blocked output needs its shape (the global pools write theirs plain).
  const bool global = n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool";
  if (!global && !image_shape(g, n.outputs[0])) return false;
  if (n.op_type == "BatchNormalization") return batch_norm_candidate(g, n);
  return n.outputs.size() == 1 || n.outputs[1].empty();  // MaxPool: no Indices
}

bool has_channels_last_chains(const ir::Graph& g) {
  for (const auto& n : g.nodes)
    if (n.attr_int("channels_last", 0) != 0) return true;
  return false;
}

class Rewriter {
 public:
  explicit Rewriter(ir::Graph& g) : g_(g), fresh_(g) {}

  // The blocked twin of plain value v (made by ToBlocked unless a converted node wrote one).
  std::string blocked(const std::string& v) {
    if (auto it = twin_.find(v); it != twin_.end()) return it->second;
    const ir::SymShape s = *image_shape(g_, v);
    const std::string out = fresh_(v + "_blocked");
    nodes_.push_back(node("ToBlocked", v, out, {}));
    g_.value_info[out] = ir::ValueInfo{out, DataType::kFloat32, ops::blocked_shape(s), {}};
    twin_[v] = out;
    return out;
  }
  bool has_twin(const std::string& v) const { return twin_.count(v) != 0; }

  // n (its inputs already blocked) writes the blocked twin of its output Y; Y itself comes from
  // FromBlocked for plain readers. `plain_out`: n writes Y plain (the global pools).
  void emit(ir::Node n, bool plain_out) {
    n.attributes["blocked"] = ir::attr_int("blocked", 1);
    if (plain_out) {
      nodes_.push_back(std::move(n));
      return;
    }
    const std::string y = n.outputs[0];
    const ir::SymShape ys = *image_shape(g_, y);
    const std::string y_blk = fresh_(y + "_blocked");
    n.outputs[0] = y_blk;
    g_.value_info[y_blk] = ir::ValueInfo{y_blk, DataType::kFloat32, ops::blocked_shape(ys), {}};
    twin_[y] = y_blk;
    nodes_.push_back(std::move(n));
    nodes_.push_back(node("FromBlocked", y_blk, y, {ir::attr_int("channels", ys[1].value)}));
  }
  void keep(ir::Node n) { nodes_.push_back(std::move(n)); }
  std::vector<ir::Node> take() { return std::move(nodes_); }

 private:
  ir::Node node(const char* op, const std::string& in, const std::string& out,
                std::vector<ir::Attribute> attrs) {
    ir::Node t;
    t.name = fresh_(out);
    t.op_type = op;
    t.domain = kDomain;
    t.inputs = {in};
    t.outputs = {out};
    for (auto& a : attrs) t.attributes[a.name] = std::move(a);
    return t;
  }

  ir::Graph& g_;
  FreshNames fresh_;
  std::unordered_map<std::string, std::string> twin_;  // plain value -> its blocked twin
  std::vector<ir::Node> nodes_;
};

// Readers of each value (nullptr: a graph output), taken before the pass moves any node.
using Readers = std::unordered_map<std::string, std::vector<const ir::Node*>>;

// A Concat of [N, C_i, H, W] float32 values along the channels, every C_i a multiple of 16, at
// least one input already blocked and every reader of the result a node that reads blocked
// tensors (a convolution or per-channel candidate): the blocked tensors concatenate along their
// block axis (Inception's branch concatenations, YOLO's C2f / C3 blocks). Where a plain reader
// follows (DenseNet's BatchNormalization + Relu after each concatenation) the whole concatenation
// would be converted back each time: such a Concat stays plain.
bool concat_candidate(const ir::Graph& g, const ir::Node& n, const Rewriter& rw,
                      const Readers& readers) {
  if (!is_default_domain(n) || n.op_type != "Concat" || n.outputs.size() != 1 || n.inputs.empty() ||
      !untouched(n) || !image_shape(g, n.outputs[0]))
    return false;
  const auto r = readers.find(n.outputs[0]);
  if (r == readers.end()) return false;
  for (const ir::Node* reader : r->second)
    if (!reader || (!conv_candidate(g, *reader) && !per_channel_candidate(g, *reader)))
      return false;
  const int64_t axis = n.attr_int("axis", 0);
  if (axis != 1 && axis != -3) return false;
  bool any_blocked = false;
  for (const std::string& in : n.inputs) {
    const auto s = in.empty() ? std::nullopt : image_shape(g, in);
    if (!s || (*s)[1].value % ops::kChannelBlock != 0) return false;
    any_blocked = any_blocked || rw.has_twin(in);
  }
  return any_blocked;
}

}  // namespace

size_t conv_blocked_layout(ir::Graph& g) {
  if (has_channels_last_chains(g)) return 0;
  Readers readers;
  for (const ir::Node& n : g.nodes)
    for (const std::string& in : n.inputs) readers[in].push_back(&n);
  for (const auto& o : g.outputs) readers[o.name].push_back(nullptr);
  Rewriter rw(g);
  size_t converted = 0;
  for (ir::Node& n : g.nodes) {
    if (per_channel_candidate(g, n) && rw.has_twin(n.inputs[0])) {
      const bool global = n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool";
      if (global)
        n.attributes["channels"] =
            ir::attr_int("channels", (*image_shape(g, n.inputs[0]))[1].value);
      n.inputs[0] = rw.blocked(n.inputs[0]);
      n.outputs.resize(1);
      rw.emit(std::move(n), global);
      continue;
    }
    if (concat_candidate(g, n, rw, readers)) {
      for (std::string& in : n.inputs) in = rw.blocked(in);
      n.attributes["axis"] = ir::attr_int("axis", 1);
      rw.emit(std::move(n), false);
      continue;
    }
    if (!conv_candidate(g, n)) {
      rw.keep(std::move(n));
      continue;
    }
    if (n.op_type == "Conv") {  // a FusedConv without residual or activation is a Conv
      n.op_type = "FusedConv";
      n.domain = kDomain;
    }
    if (!rw.has_twin(n.inputs[0]) &&
        (*image_shape(g, n.inputs[0]))[1].value <= kMaxPlainInputChannels)
      n.attributes["plain_input"] = ir::attr_int("plain_input", 1);
    else
      n.inputs[0] = rw.blocked(n.inputs[0]);
    if (n.inputs.size() > 3 && !n.inputs[3].empty()) n.inputs[3] = rw.blocked(n.inputs[3]);
    rw.emit(std::move(n), false);
    ++converted;
  }
  g.nodes = rw.take();
  if (converted) TRT_LOG_VERBOSE("blocked layout: {} convolution(s) run blocked", converted);
  return converted;
}

}  // namespace trtutils::passes
