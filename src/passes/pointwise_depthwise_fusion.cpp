// Pointwise + depthwise fusion (CPU plan, after the blocked layout): an inverted residual block's
// expansion (a 1x1 FusedConv) and the depthwise FusedConv that alone reads its output become
// one com.trtutils::PointwiseDepthwise node (ops/pointwise_depthwise.h), whose kernel never
// writes the expanded tensor to memory. Only the geometry oneDNN fuses (3x3 depthwise, padding
// 1, stride 1 or 2) and activations it runs in the fused kernel (not Silu, which the plain
// FusedConv runs as its own fast pass).
#include <unordered_map>

#include "ops/pointwise_depthwise.h"
#include "passes/graph_facts.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

// A blocked float32 FusedConv with constant 4-D weights (returned), no residual, explicit padding,
// an activation other than Silu.
const Tensor* blocked_conv_weights(const ir::Graph& g, const ir::Node& n) {
  if (n.domain != "com.trtutils" || n.op_type != "FusedConv" || n.attr_int("blocked", 0) == 0 ||
      n.outputs.size() != 1 || n.inputs.size() > 3 || n.inputs.size() < 2 ||
      n.attr_string("auto_pad", "NOTSET") != "NOTSET" || n.attr_string("activation", "") == "Silu")
    return nullptr;
  const Tensor* w = g.initializer(n.inputs[1]);
  if (!w || w->dtype() != DataType::kFloat32 || w->rank() != 4) return nullptr;
  if (n.has_input(2)) {
    const Tensor* b = g.initializer(n.inputs[2]);
    if (!b || b->dtype() != DataType::kFloat32 || b->numel() != w->dim(0)) return nullptr;
  }
  return w;
}

// The expansion: 1x1, stride 1, no padding, ungrouped, reading a blocked tensor.
bool pointwise(const ir::Graph& g, const ir::Node& n) {
  const Tensor* w = blocked_conv_weights(g, n);
  return w && w->dim(2) == 1 && w->dim(3) == 1 && n.attr_int("plain_input", 0) == 0 &&
         n.attr_int("group", 1) == 1 && all_equal(n.attr_ints("strides", {}), 1) &&
         all_equal(n.attr_ints("pads", {}), 0);
}

// The depthwise convolution of `channels` channels oneDNN can fuse.
bool depthwise(const ir::Graph& g, const ir::Node& n, int64_t channels) {
  const Tensor* w = blocked_conv_weights(g, n);
  if (!w || w->dim(0) != channels || w->dim(1) != 1 || w->dim(2) != 3 || w->dim(3) != 3 ||
      n.attr_int("group", 1) != channels || !all_equal(n.attr_ints("dilations", {}), 1) ||
      n.attr_ints("pads", {}) != std::vector<int64_t>{1, 1, 1, 1})
    return false;
  const std::vector<int64_t> s = n.attr_ints("strides", {1, 1});
  return s.size() == 2 && s[0] == s[1] && (s[0] == 1 || s[0] == 2);
}

}  // namespace

size_t fuse_pointwise_depthwise(
    ir::Graph& g, const std::function<bool(const ir::Graph&, const ir::Node&)>& keep) {
  std::unordered_map<std::string, int> uses;
  count_uses(g, uses);
  for (const auto& o : g.outputs) uses[o.name] += 2;  // never fused away
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& o : g.nodes[i].outputs) producer[o] = i;
  std::unordered_map<size_t, ir::Node> replacement;
  std::vector<bool> removed(g.nodes.size(), false);
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const ir::Node& dw = g.nodes[j];
    if (dw.inputs.empty()) continue;
    const auto p = producer.find(dw.inputs[0]);
    if (p == producer.end() || removed[p->second] || replacement.count(p->second)) continue;
    const ir::Node& pw = g.nodes[p->second];
    if (uses[dw.inputs[0]] != 1 || !pointwise(g, pw) ||
        !depthwise(g, dw, g.initializer(pw.inputs[1])->dim(0)))
      continue;
    ir::Node fused = ops::join_pointwise_depthwise(pw, dw);
    if (keep && !keep(g, fused)) continue;
    replacement.emplace(j, std::move(fused));
    removed[p->second] = true;
  }
  const size_t fused = replacement.size();
  if (fused) {
    splice_nodes(g, replacement, removed);
    TRT_LOG_VERBOSE("pointwise + depthwise fusion: {} pair(s)", fused);
  }
  return fused;
}

}  // namespace trtutils::passes
