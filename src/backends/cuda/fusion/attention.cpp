// The float attention, MatMul(Q, KT) -> scalings -> Softmax -> MatMul(., V), into
// com.trtutils.cuda::Attention (patterns.h), and the operand walks the Q/DQ attention
// (attention_q.cpp) shares: scalar Mul / Div folded into the scale, Transposes / Reshapes
// absorbed as views.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/patterns.h"
#include "ir/graph_builder.h"

namespace trtutils::cuda::fusion {

float scalar_factor(const FusionGraph& fg, const ir::Node& n, const std::string& v) {
  if (!default_domain(n) || n.inputs.size() != 2 || n.outputs.size() != 1) return NAN;
  if (n.op_type == "Mul") {
    const std::string* c = other(n, v);
    return c ? fg.scalar(*c) : NAN;
  }
  if (n.op_type == "Div" && n.inputs[0] == v) {
    const float c = fg.scalar(n.inputs[1]);
    return c != 0.0f ? 1.0f / c : NAN;
  }
  return NAN;
}

std::string operand_source(const FusionGraph& fg, std::string v, float& scale,
                           std::vector<int64_t>& view, std::vector<size_t>& chain,
                           bool allow_scale) {
  std::vector<std::vector<int64_t>> ops;  // nearest the MatMul first
  for (int guard = 0; guard < 8; ++guard) {
    auto it = fg.producer.find(v);
    if (it == fg.producer.end() || fg.removed[it->second] || fg.only_reader(v) == SIZE_MAX) break;
    const ir::Node& n = fg.graph.nodes[it->second];
    if (!default_domain(n) || n.outputs.size() != 1) break;
    if (allow_scale && (n.op_type == "Mul" || n.op_type == "Div") && n.inputs.size() == 2) {
      const std::string& x =
          n.op_type == "Div" || !fg.graph.initializer(n.inputs[0]) ? n.inputs[0] : n.inputs[1];
      const float f = scalar_factor(fg, n, x);
      if (std::isnan(f) || fg.graph.initializer(x)) break;
      scale *= f;
      chain.push_back(it->second);
      v = x;
      continue;
    }
    if (ops.size() >= 4) break;
    if (n.op_type == "Transpose" && n.inputs.size() == 1) {
      const auto perm = perm_of(n);
      if (perm.empty()) break;
      std::vector<int64_t> op{0, static_cast<int64_t>(perm.size())};
      op.insert(op.end(), perm.begin(), perm.end());
      ops.push_back(std::move(op));
    } else if (n.op_type == "Reshape" && n.inputs.size() == 2) {
      const Tensor* shape = fg.graph.initializer(n.inputs[1]);
      if (!shape || shape->dtype() != DataType::kInt64 || shape->rank() != 1) break;
      std::vector<int64_t> op{1 + n.attr_int("allowzero", 0), shape->numel()};
      for (int64_t i = 0; i < shape->numel(); ++i) op.push_back(shape->data<int64_t>()[i]);
      ops.push_back(std::move(op));
    } else {
      break;
    }
    chain.push_back(it->second);
    v = n.inputs[0];
  }
  for (size_t i = ops.size(); i-- > 0;) view.insert(view.end(), ops[i].begin(), ops[i].end());
  return v;
}

size_t scores_softmax(const FusionGraph& fg, std::string x, float& scale,
                      std::vector<size_t>& chain) {
  size_t r = fg.only_reader(x);
  for (int guard = 0; guard < 4 && r != SIZE_MAX; ++guard) {
    const float f = scalar_factor(fg, fg.graph.nodes[r], x);
    if (std::isnan(f)) break;
    scale *= f;
    chain.push_back(r);
    x = fg.graph.nodes[r].outputs[0];
    r = fg.only_reader(x);
  }
  if (r == SIZE_MAX || std::isnan(scale) || std::isinf(scale)) return SIZE_MAX;
  const ir::Node& sm = fg.graph.nodes[r];
  if (sm.op_type != "Softmax" || !default_domain(sm) || sm.outputs.size() != 1) return SIZE_MAX;
  const auto ax = sm.attributes.find("axis");
  const int64_t axis = ax != sm.attributes.end() ? ax->second.i : (fg.opset >= 13 ? -1 : 1);
  const int64_t rank = fg.rank_of(x);
  // The last axis: -1 or rank - 1 (before opset 13 the softmax coerced to 2-D at that axis
  // is the same).
  if (axis != -1 && !(rank > 0 && axis == rank - 1)) return SIZE_MAX;
  chain.push_back(r);
  return r;
}

ir::Node attention_node(const FusionGraph& fg, const char* op, const ir::Node& first,
                        const ir::Node& second, const std::vector<std::string>& operands,
                        const std::vector<std::vector<int64_t>>& views,
                        std::vector<size_t>& chain) {
  ir::Node f;
  f.name = second.name.empty() ? first.name : second.name;
  f.op_type = op;
  f.domain = kGpuDomain;
  f.inputs = operands;
  std::string out = second.outputs[0];
  std::vector<int64_t> po;
  const size_t t = fg.only_reader(out);
  if (t != SIZE_MAX && fg.graph.nodes[t].op_type == "Transpose" &&
      default_domain(fg.graph.nodes[t]) && fg.graph.nodes[t].outputs.size() == 1 &&
      !perm_of(fg.graph.nodes[t]).empty()) {
    po = perm_of(fg.graph.nodes[t]);
    out = fg.graph.nodes[t].outputs[0];
  }
  f.outputs = {out};
  const char* names[4] = {"view_q", "view_k", "view_v", "perm_o"};
  for (size_t i = 0; i < 4; ++i) {
    const std::vector<int64_t>& p = i < 3 ? views.at(i) : po;
    if (!p.empty()) f.attributes[names[i]] = ir::attr_ints(names[i], p);
  }
  // The chain's last entry is the node the fused one replaces: second, or the Transpose.
  auto pos = std::find(chain.begin(), chain.end(), fg.index_of(second));
  if (pos != chain.end()) chain.erase(pos);
  chain.push_back(fg.index_of(second));
  if (!po.empty()) chain.push_back(t);
  return f;
}

size_t fuse_attention(FusionGraph& fg, size_t i) {
  const ir::Node& mm1 = fg.graph.nodes[i];
  if (mm1.inputs.size() != 2 || mm1.outputs.size() != 1) return 0;
  std::vector<size_t> chain{i};
  float scale = 1.0f;
  const size_t r = scores_softmax(fg, mm1.outputs[0], scale, chain);
  if (r == SIZE_MAX) return 0;
  const ir::Node& sm = fg.graph.nodes[r];
  const size_t mm2 = fg.only_reader(sm.outputs[0]);
  if (mm2 == SIZE_MAX || fg.graph.nodes[mm2].op_type != "MatMul" ||
      !default_domain(fg.graph.nodes[mm2]) || fg.graph.nodes[mm2].inputs.size() != 2 ||
      fg.graph.nodes[mm2].inputs[0] != sm.outputs[0])
    return 0;
  chain.push_back(mm2);
  // Operands, through their scalings and Transposes.
  std::vector<int64_t> vq, vk, vv;
  const std::string q = operand_source(fg, mm1.inputs[0], scale, vq, chain, true);
  const std::string kt = operand_source(fg, mm1.inputs[1], scale, vk, chain, true);
  const std::string v = operand_source(fg, fg.graph.nodes[mm2].inputs[1], scale, vv, chain, false);
  if (std::isnan(scale) || std::isinf(scale)) return 0;
  ir::Node f =
      attention_node(fg, "Attention", mm1, fg.graph.nodes[mm2], {q, kt, v}, {vq, vk, vv}, chain);
  set_float(f, "scale", scale);
  return fg.place(std::move(f), chain);
}

}  // namespace trtutils::cuda::fusion
