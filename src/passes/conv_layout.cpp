// Conv layout (CPU plan): float32 convolutions run channels-last, so that chains of them pass
// [N, H, W, C] tensors from one oneDNN primitive to the next with no reorder in between. Per
// layer, the NCHW <-> blocked/NHWC reorders (src, dst and residual) cost about as much memory
// traffic as a pointwise convolution's own reads and writes; here only the chain's boundaries
// transpose. The same scheme as qdq_channels_last (qdq_fusion.cpp) for the int8 QConv.
#include <unordered_set>

#include "ir/graph_builder.h"
#include "passes/layout_perms.h"
#include "passes/layout_rewrite.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

namespace {

constexpr const char* kDomain = "com.trtutils";

DataType dtype_of(const ir::Graph& g, const std::string& v) {
  const auto info = g.find_value_info(v);
  return info ? info->dtype : DataType::kUndefined;
}

// A float32 Conv or FusedConv with constant weights that the channels-last kernel runs.
bool candidate(const ir::Graph& g, const ir::Node& n) {
  const bool conv = is_default_domain(n) && n.op_type == "Conv";
  const bool fused = n.domain == kDomain && n.op_type == "FusedConv";
  if (!(conv || fused) || n.outputs.size() != 1 || n.outputs[0].empty() || !n.has_input(0) ||
      !n.has_input(1) || n.attr_int("channels_last", 0) != 0 || n.attr_int("blocked", 0) != 0)
    return false;
  if (!g.is_initializer(n.inputs[1])) return false;
  const auto xs = static_or_named(g, n.inputs[0]);
  const auto ys = static_or_named(g, n.outputs[0]);
  if (!xs || !ys || xs->size() < 3 || xs->size() > 5 || ys->size() != xs->size()) return false;
  for (const std::string& v : {n.inputs[0], n.inputs[1], n.outputs[0]})
    if (dtype_of(g, v) != DataType::kFloat32) return false;
  if (n.inputs.size() > 3 && !n.inputs[3].empty()) {
    const auto rs = static_or_named(g, n.inputs[3]);
    if (!rs || rs->size() != ys->size() || dtype_of(g, n.inputs[3]) != DataType::kFloat32)
      return false;
  }
  return true;
}

// A float32 MaxPool without Indices (the channels-last CPU kernel's case).
bool max_pool_candidate(const ir::Graph& g, const ir::Node& n) {
  if (!is_default_domain(n) || n.op_type != "MaxPool" || n.outputs.empty() ||
      n.outputs[0].empty() || !n.has_input(0) || n.attr_int("channels_last", 0) != 0 ||
      n.attr_int("blocked", 0) != 0)
    return false;
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) return false;
  const auto xs = static_or_named(g, n.inputs[0]);
  const auto ys = static_or_named(g, n.outputs[0]);
  return xs && ys && xs->size() >= 3 && xs->size() <= 5 && ys->size() == xs->size() &&
         dtype_of(g, n.inputs[0]) == DataType::kFloat32;
}

// A float32 SqueezeExcite (se_fusion): per-channel work that runs on either layout.
bool squeeze_excite_candidate(const ir::Graph& g, const ir::Node& n) {
  if (n.domain != kDomain || n.op_type != "SqueezeExcite" || n.outputs.size() != 1 ||
      !n.has_input(0) || n.attr_int("channels_last", 0) != 0)
    return false;
  const auto xs = static_or_named(g, n.inputs[0]);
  const auto ys = static_or_named(g, n.outputs[0]);
  return xs && ys && xs->size() == 4 && ys == xs && dtype_of(g, n.inputs[0]) == DataType::kFloat32;
}

// A float32 GlobalAveragePool / GlobalMaxPool: it reads the channels-last twin and writes the
// NCHW-shaped [N, C, 1...] itself (the same bytes), so the chain's end needs no Transpose.
bool global_pool_candidate(const ir::Graph& g, const ir::Node& n) {
  if (!is_default_domain(n) || (n.op_type != "GlobalAveragePool" && n.op_type != "GlobalMaxPool") ||
      n.outputs.size() != 1 || !n.has_input(0) || n.attr_int("channels_last", 0) != 0)
    return false;
  const auto xs = static_or_named(g, n.inputs[0]);
  return xs && xs->size() >= 3 && xs->size() <= 5 && dtype_of(g, n.inputs[0]) == DataType::kFloat32;
}

// A per-tensor QuantizeLinear / DequantizeLinear (scalar scale and zero point): elementwise, so
// it runs on a channels-last twin as is. Between int8 QConv chains (EfficientNet's SiLU outputs,
// quantized, read by a float squeeze-excitation block) it keeps the chain channels-last instead
// of transposing the tensor to NCHW and back around it.
bool per_tensor_qdq_candidate(const ir::Graph& g, const ir::Node& n) {
  if (!is_default_domain(n) || (n.op_type != "QuantizeLinear" && n.op_type != "DequantizeLinear") ||
      n.outputs.size() != 1 || n.outputs[0].empty() || !n.has_input(0) || !n.has_input(1) ||
      n.attr_int("block_size", 0) != 0)
    return false;
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const Tensor* t = n.inputs[i].empty() ? nullptr : g.initializer(n.inputs[i]);
    if (!n.inputs[i].empty() && (!t || t->numel() != 1)) return false;
  }
  const auto ys = static_or_named(g, n.outputs[0]);
  return ys && ys->size() >= 3 && ys->size() <= 5 &&
         dtype_of(g, n.outputs[0]) != DataType::kUndefined;
}

// An elementwise Add / Sub / Mul / Div (or a unary activation) whose tensor inputs all have
// channels-last twins of the output's rank, the others scalar constants: broadcasting commutes
// with permuting every operand's axes the same way, so it runs on the twins (a quantized
// squeeze-excitation block's Mul(gate, X) between int8 convolutions).
bool elementwise_candidate(const ir::Graph& g, const ir::Node& n,
                           const std::unordered_map<std::string, std::string>& last_of) {
  static const std::unordered_set<std::string> kOps = {
      "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish"};
  if (!is_default_domain(n) || !kOps.count(n.op_type) || n.outputs.size() != 1 ||
      n.outputs[0].empty() || n.inputs.empty())
    return false;
  const auto ys = static_or_named(g, n.outputs[0]);
  if (!ys || ys->size() < 3 || ys->size() > 5 || dtype_of(g, n.outputs[0]) == DataType::kUndefined)
    return false;
  bool any = false;
  for (const std::string& in : n.inputs) {
    const Tensor* t = in.empty() ? nullptr : g.initializer(in);
    if (t && t->numel() == 1) continue;
    const auto xs = in.empty() ? std::nullopt : static_or_named(g, in);
    if (!last_of.count(in) || !xs || xs->size() != ys->size()) return false;
    any = true;
  }
  return any;
}

}  // namespace

size_t conv_channels_last(ir::Graph& g) {
  // value (NCHW) -> the same data as [N, spatial..., C], made by a converted conv or a Transpose
  std::unordered_map<std::string, std::string> last_of;
  std::vector<ir::Node> nodes;
  nodes.reserve(g.nodes.size());
  size_t converted = 0;
  FreshNames fresh(g);
  auto transpose = [&](const std::string& in, const std::string& out,
                       const std::vector<int64_t>& perm) {
    ir::Node t;
    t.name = fresh(out);
    t.op_type = "Transpose";
    t.inputs = {in};
    t.outputs = {out};
    t.attributes["perm"] = ir::attr_ints("perm", perm);
    return t;
  };
  auto last = [&](const std::string& v, const ir::SymShape& shape) {
    if (auto it = last_of.find(v); it != last_of.end()) return it->second;
    const std::string out = fresh(v + "_nhwc");
    nodes.push_back(transpose(v, out, to_last_perm(shape.size())));
    g.value_info[out] =
        ir::ValueInfo{out, DataType::kFloat32, permuted(shape, to_last_perm(shape.size())), {}};
    last_of[v] = out;
    return out;
  };
  // n (a convolution or MaxPool reading channels-last) writes a channels-last twin of its
  // output Y (shape ys); Y itself, for readers that need NCHW, comes from a Transpose that
  // dead-code elimination drops when nobody reads it. `mark`: n's kernel needs the
  // "channels_last" attribute (elementwise Q/DQ nodes do not; their twin keeps Y's dtype).
  auto emit_channels_last = [&](ir::Node n, const ir::SymShape& ys, bool mark = true) {
    const std::string y = n.outputs[0];
    const std::string y_last = fresh(y + "_nhwc");
    const DataType dt = mark ? DataType::kFloat32 : dtype_of(g, y);
    n.outputs[0] = y_last;
    if (mark) n.attributes["channels_last"] = ir::attr_int("channels_last", 1);
    g.value_info[y_last] = ir::ValueInfo{y_last, dt, permuted(ys, to_last_perm(ys.size())), {}};
    last_of[y] = y_last;
    nodes.push_back(std::move(n));
    nodes.push_back(transpose(y_last, y, to_first_perm(ys.size())));
  };
  // A Transpose to channels-last of a value that has a twin already (qdq_channels_last's, before
  // a QConv, of a Q/DQ node now run channels-last) is dropped: its readers read the twin. Not
  // when a graph output or a subgraph (implicitly) reads it.
  std::unordered_map<std::string, std::string> alias;
  std::unordered_set<std::string> kept_names;
  for (const auto& o : g.outputs) kept_names.insert(o.name);
  for (const auto& n : g.nodes)
    for (auto& v : n.implicit_inputs()) kept_names.insert(std::move(v));
  for (ir::Node& n : g.nodes) {
    for (std::string& in : n.inputs)
      if (auto a = alias.find(in); a != alias.end()) in = a->second;
    // Twins that already exist (the int8 QConv chains' Transposes, qdq_channels_last).
    if (n.op_type == "Transpose" && is_default_domain(n) && n.inputs.size() == 1 &&
        n.outputs.size() == 1) {
      const auto perm = n.attr_ints("perm", {});
      if (perm.size() >= 3 && perm == to_last_perm(perm.size()) && last_of.count(n.inputs[0]) &&
          !kept_names.count(n.outputs[0])) {
        alias[n.outputs[0]] = last_of.at(n.inputs[0]);
        continue;
      }
      if (perm.size() >= 3 && perm == to_last_perm(perm.size()))
        last_of.emplace(n.inputs[0], n.outputs[0]);
      if (perm.size() >= 3 && perm == to_first_perm(perm.size()))  // both for rank 3
        last_of.emplace(n.outputs[0], n.inputs[0]);
    }
    // A MaxPool between converted convolutions (ResNet's stem) joins the chain: its input
    // already has a twin, and the pooled tensor is a quarter of the stem's output.
    if (max_pool_candidate(g, n) && last_of.count(n.inputs[0])) {
      const ir::SymShape ys = *static_or_named(g, n.outputs[0]);
      n.inputs[0] = last_of.at(n.inputs[0]);
      n.outputs.resize(1);
      emit_channels_last(std::move(n), ys);
      continue;
    }
    // A squeeze-excitation block inside a chain (EfficientNet's, between the depthwise and the
    // projecting convolution) keeps it channels-last.
    if (squeeze_excite_candidate(g, n) && last_of.count(n.inputs[0])) {
      const ir::SymShape ys = *static_or_named(g, n.outputs[0]);
      n.inputs[0] = last_of.at(n.inputs[0]);
      emit_channels_last(std::move(n), ys);
      continue;
    }
    if ((per_tensor_qdq_candidate(g, n) && last_of.count(n.inputs[0])) ||
        elementwise_candidate(g, n, last_of)) {
      const ir::SymShape ys = *static_or_named(g, n.outputs[0]);
      for (std::string& in : n.inputs)
        if (auto t = last_of.find(in); t != last_of.end()) in = t->second;
      emit_channels_last(std::move(n), ys, /*mark=*/false);
      ++converted;  // so that dead-code elimination drops the Transposes back
      continue;
    }
    if (global_pool_candidate(g, n) && last_of.count(n.inputs[0])) {
      n.inputs[0] = last_of.at(n.inputs[0]);
      n.attributes["channels_last"] = ir::attr_int("channels_last", 1);
      nodes.push_back(std::move(n));
      continue;
    }
    if (!candidate(g, n)) {
      nodes.push_back(std::move(n));
      continue;
    }
    const ir::SymShape xs = *static_or_named(g, n.inputs[0]);
    const ir::SymShape ys = *static_or_named(g, n.outputs[0]);
    if (n.op_type == "Conv") {  // a FusedConv without residual or activation is a Conv
      n.op_type = "FusedConv";
      n.domain = kDomain;
    }
    n.inputs[0] = last(n.inputs[0], xs);
    if (n.inputs.size() > 3 && !n.inputs[3].empty())
      n.inputs[3] = last(n.inputs[3], *static_or_named(g, n.inputs[3]));
    emit_channels_last(std::move(n), ys);
    ++converted;
  }
  g.nodes = std::move(nodes);
  if (converted) TRT_LOG_VERBOSE("conv layout: {} convolution(s) run channels-last", converted);
  return converted;
}

}  // namespace trtutils::passes
