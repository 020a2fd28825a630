// Q/DQ placement: one handler per op type decides which inputs are quantized. The rules are
// those a TensorRT-style builder fuses: quantized inputs of Conv/ConvTranspose/Gemm/MatMul
// (weights per channel), the residual Add's non-fusing branch, pooling/Resize/Concat inputs
// when their output is quantized anyway (so they run in int8 between quantized layers).
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "core/check.h"
#include "quantize/qdq.h"
#include "trtutils/logging.h"

namespace trtutils::quantize {

QuantMode quant_mode_from_name(const std::string& name) {
  if (name == "int8") return QuantMode::kInt8;
  if (name == "fp8") return QuantMode::kFp8;
  if (name == "int4") return QuantMode::kInt4;
  TRT_THROW(ErrorCode::kInvalidArgument,
            "invalid quantize_mode '{}': choose one of int8, fp8, int4", name);
}

std::string quant_mode_name(QuantMode m) {
  switch (m) {
    case QuantMode::kInt8:
      return "int8";
    case QuantMode::kFp8:
      return "fp8";
    case QuantMode::kInt4:
      return "int4";
  }
  return "?";
}

double quant_mode_qmax(QuantMode m) {
  switch (m) {
    case QuantMode::kInt8:
      return 127;
    case QuantMode::kFp8:
      return 448;
    case QuantMode::kInt4:
      return 7;
  }
  return 127;
}

DataType quant_mode_dtype(QuantMode m) {
  switch (m) {
    case QuantMode::kInt8:
      return DataType::kInt8;
    case QuantMode::kFp8:
      return DataType::kFloat8E4M3FN;
    case QuantMode::kInt4:
      return DataType::kInt4;
  }
  return DataType::kInt8;
}

size_t name_nodes(ir::Graph& g) {
  size_t named = 0;
  std::set<std::string> used;
  for (const auto& n : g.nodes) used.insert(n.name);
  std::unordered_map<std::string, int> counter;
  for (auto& n : g.nodes) {
    if (!n.name.empty()) continue;
    std::string c;
    do {
      c = fmt::format("{}_{}", n.op_type, counter[n.op_type]++);
    } while (used.count(c));
    used.insert(c);
    n.name = c;
    ++named;
  }
  return named;
}

bool has_qdq(const ir::Graph& g) {
  for (const auto& n : g.nodes)
    if (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear" ||
        n.op_type.rfind("QLinear", 0) == 0 || n.op_type == "DynamicQuantizeLinear")
      return true;
  return false;
}

namespace {

const std::set<std::string> kScaleCarriers = {
    "Reshape",  "Transpose", "Flatten",      "Squeeze",      "Unsqueeze", "Slice", "Split",
    "Identity", "MaxPool",   "DepthToSpace", "SpaceToDepth", "Expand",    "Tile"};

struct GraphIndex {
  std::unordered_map<std::string, size_t> producer;                // value -> node index
  std::unordered_map<std::string, std::vector<size_t>> consumers;  // value -> node indices
  std::set<std::string> graph_outputs;
  explicit GraphIndex(const ir::Graph& g) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const auto& o : g.nodes[i].outputs)
        if (!o.empty()) producer[o] = i;
      for (const auto& in : g.nodes[i].inputs)
        if (!in.empty()) consumers[in].push_back(i);
    }
    for (const auto& o : g.outputs) graph_outputs.insert(o.name);
  }
};

bool is_float_activation(const ir::Graph& g, const std::string& v) {
  if (v.empty() || g.is_initializer(v)) return false;
  auto vi = g.find_value_info(v);
  return vi && (vi->dtype == DataType::kFloat32 || vi->dtype == DataType::kFloat16);
}

std::optional<Shape> static_shape(const ir::Graph& g, const std::string& v) {
  if (const Tensor* t = g.initializer(v)) return t->shape();
  auto vi = g.find_value_info(v);
  if (!vi || !vi->shape) return std::nullopt;
  Shape s;
  for (const auto& d : *vi->shape) s.push_back(d.is_static() ? d.value : -1);
  return s;
}

bool is_float_weight(const ir::Graph& g, const std::string& v) {
  const Tensor* t = g.initializer(v);
  return t && t->dtype() == DataType::kFloat32 && t->numel() > 1;
}

}  // namespace

Placement place_qdq(const ir::Graph& g, const PlacementOptions& o) {
  Placement p;
  GraphIndex idx(g);
  const bool forced_list = !o.op_types_to_quantize.empty();
  const bool int4 = o.mode == QuantMode::kInt4;
  const std::set<std::string> defaults =
      int4 ? std::set<std::string>{"MatMul", "Gemm"}
           : std::set<std::string>{"Conv", "ConvTranspose", "Gemm", "MatMul", "Add"};
  const std::set<std::string>& enabled = forced_list ? o.op_types_to_quantize : defaults;
  auto excluded = [&](const ir::Node& n) {
    if (o.op_types_to_exclude.count(n.op_type) || o.nodes_excluded_exact.count(n.name)) return true;
    for (const auto& re : o.nodes_to_exclude)
      if (std::regex_search(n.name, re, std::regex_constants::match_continuous)) return true;
    return false;
  };
  // Activation use (tensor, node, input). Graph outputs are never quantized: a graph output is
  // still produced in float; only the consumer reads the DQ value.
  auto add_act = [&](const std::string& v, const ir::Node& n, size_t i) {
    auto& uses = p.activations[v];
    const std::pair<std::string, size_t> u{n.name, i};
    if (std::find(uses.begin(), uses.end(), u) == uses.end()) uses.push_back(u);
  };
  std::set<std::string> quantized;  // node names
  auto skip = [&](const ir::Node& n, const std::string& why) {
    p.skipped.push_back(fmt::format("{}: {}", n.describe(), why));
  };

  // Pass 1: compute ops.
  for (const auto& n : g.nodes) {
    const std::string& op = n.op_type;
    if (!n.domain.empty() && n.domain != "ai.onnx") continue;
    if (op != "Conv" && op != "ConvTranspose" && op != "Gemm" && op != "MatMul") continue;
    if (!enabled.count(op)) continue;
    if (excluded(n)) {
      skip(n, "excluded");
      continue;
    }
    const bool forced = forced_list || o.nodes_forced_exact.count(n.name) != 0;
    if (op == "Conv" || op == "ConvTranspose") {
      if (!n.has_input(1) || !is_float_weight(g, n.inputs[1]) ||
          !is_float_activation(g, n.inputs[0])) {
        skip(n, "weight is not a float initializer");
        continue;
      }
      const Tensor& w = *g.initializer(n.inputs[1]);
      const int64_t group = n.attr_int("group", 1);
      const int64_t cout = op == "Conv" ? w.dim(0) : w.dim(1) * group;
      const int64_t cin = op == "Conv" ? w.dim(1) * group : w.dim(0);
      if (!forced && (cin < o.min_channels || cout < o.min_channels)) {
        skip(n, fmt::format("{} input / {} output channels (< {})", cin, cout, o.min_channels));
        continue;
      }
      add_act(n.inputs[0], n, 0);
      const int64_t axis = op == "Conv" ? 0 : (group == 1 ? 1 : -1);
      p.weights.push_back({n.name, 1, n.inputs[1], axis, 0});
    } else {  // Gemm, MatMul
      const bool gemm = op == "Gemm";
      const bool trans_a = gemm && n.attr_int("transA", 0) != 0;
      const bool trans_b = gemm && n.attr_int("transB", 0) != 0;
      auto sa = static_shape(g, n.inputs[0]);
      auto sb = static_shape(g, n.inputs[1]);
      // K and N from B (when known): GEMV-shaped products gain nothing from int8.
      int64_t k = -1, nn = -1;
      if (sb && sb->size() >= 2) {
        const size_t r = sb->size();
        k = trans_b ? (*sb)[r - 1] : (*sb)[r - 2];
        nn = trans_b ? (*sb)[r - 2] : (*sb)[r - 1];
      } else if (sb && sb->size() == 1) {
        nn = 1;
      }
      if (sa && sa->size() == 1) k = (*sa)[0];
      if (!forced && (k == 1 || nn == 1)) {
        skip(n, "GEMV-shaped (K or N is 1)");
        continue;
      }
      if (!forced && !int4 && o.skip_single_row && !n.outputs.empty()) {
        auto so = static_shape(g, n.outputs[0]);
        bool one_row = so && !so->empty();
        for (size_t d = 0; one_row && d + 1 < so->size(); ++d) one_row = (*so)[d] == 1;
        if (one_row) {
          skip(n, "GEMV-shaped (a single output row, M = 1)");
          continue;
        }
      }
      const bool a_w = is_float_weight(g, n.inputs[0]);
      const bool b_w = is_float_weight(g, n.inputs[1]);
      const bool a_act = is_float_activation(g, n.inputs[0]);
      const bool b_act = is_float_activation(g, n.inputs[1]);
      if (int4) {
        // Weight-only: B must be a 2-D weight; blocked along K.
        if (!b_w || g.initializer(n.inputs[1])->rank() != 2) {
          skip(n, "int4 needs a 2-D weight as B");
          continue;
        }
        // ONNX blocked Q/DQ allows a partial last block (K not a multiple of block_size).
        const int64_t kaxis = trans_b ? 1 : 0;
        p.weights.push_back({n.name, 1, n.inputs[1], kaxis, o.block_size});
        quantized.insert(n.name);
        p.quantized_nodes.push_back(n.name);
        continue;
      }
      if (!(a_act || a_w) || !(b_act || b_w) || (a_w && b_w) || trans_a) {
        skip(n, "unsupported operand types");
        continue;
      }
      if (a_act) add_act(n.inputs[0], n, 0);
      if (b_act) add_act(n.inputs[1], n, 1);
      if (a_w) p.weights.push_back({n.name, 0, n.inputs[0], -1, 0});
      if (b_w) {
        const Tensor& w = *g.initializer(n.inputs[1]);
        const int64_t axis = w.rank() >= 2 ? (trans_b ? static_cast<int64_t>(w.rank()) - 2
                                                      : static_cast<int64_t>(w.rank()) - 1)
                                           : -1;
        p.weights.push_back({n.name, 1, n.inputs[1], axis, 0});
      }
    }
    quantized.insert(n.name);
    p.quantized_nodes.push_back(n.name);
  }
  if (int4) return p;

  // Pass 2: residual Add. The input produced by a quantized Conv read only by this Add fuses
  // into that Conv (as its epilogue) and stays float; the other input is quantized.
  if (enabled.count("Add")) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const auto& n = g.nodes[i];
      if (n.op_type != "Add" || n.num_inputs() != 2 || excluded(n)) continue;
      if (!is_float_activation(g, n.inputs[0]) || !is_float_activation(g, n.inputs[1])) continue;
      int fused = -1;
      size_t fused_pos = 0;
      for (int k = 0; k < 2; ++k) {
        auto pr = idx.producer.find(n.inputs[k]);
        if (pr == idx.producer.end()) continue;
        const auto& prod = g.nodes[pr->second];
        if (prod.op_type != "Conv" || !quantized.count(prod.name)) continue;
        if (idx.consumers[n.inputs[k]].size() != 1 || idx.graph_outputs.count(n.inputs[k]))
          continue;
        if (fused < 0 || pr->second > fused_pos) {  // the later Conv fuses
          fused = k;
          fused_pos = pr->second;
        }
      }
      if (fused < 0) continue;
      add_act(n.inputs[1 - fused], n, static_cast<size_t>(1 - fused));
      quantized.insert(n.name);
      p.quantized_nodes.push_back(n.name);
    }
  }

  // Pass 3 (backwards): pooling, Resize and Concat whose output is quantized get quantized
  // inputs too, so they run between quantized layers; a fixed point over the graph.
  const std::set<std::string> pass_through = {"MaxPool",       "AveragePool", "GlobalAveragePool",
                                              "GlobalMaxPool", "Resize",      "Concat"};
  for (size_t it = g.nodes.size(); it-- > 0;) {
    const auto& n = g.nodes[it];
    if (!pass_through.count(n.op_type) || excluded(n)) continue;
    if (forced_list && !o.op_types_to_quantize.count(n.op_type)) continue;
    if (n.outputs.empty() || !p.activations.count(n.outputs[0])) continue;
    const size_t count = n.op_type == "Concat" ? n.num_inputs() : 1;
    bool any = false;
    for (size_t k = 0; k < count; ++k) {
      if (!is_float_activation(g, n.inputs[k])) continue;
      add_act(n.inputs[k], n, k);
      any = true;
    }
    if (any && !quantized.count(n.name)) {
      quantized.insert(n.name);
      p.quantized_nodes.push_back(n.name);
    }
  }
  // Graph order for the node list.
  std::unordered_map<std::string, size_t> order;
  for (size_t i = 0; i < g.nodes.size(); ++i) order[g.nodes[i].name] = i;
  std::sort(p.quantized_nodes.begin(), p.quantized_nodes.end(),
            [&](const std::string& a, const std::string& b) { return order[a] < order[b]; });
  return p;
}

std::map<std::string, std::string> scale_groups(const ir::Graph& g) {
  std::unordered_map<std::string, std::string> parent;
  std::function<std::string(const std::string&)> find = [&](const std::string& x) -> std::string {
    auto it = parent.find(x);
    if (it == parent.end() || it->second == x) return x;
    return it->second = find(it->second);
  };
  auto unite = [&](const std::string& a, const std::string& b) {
    const std::string ra = find(a), rb = find(b);
    if (ra != rb) parent[rb] = ra;
  };
  std::set<std::string> members;
  for (const auto& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0].empty()) continue;
    if (kScaleCarriers.count(n.op_type) && n.has_input(0)) {
      for (const auto& out : n.outputs) {
        if (out.empty()) continue;
        if (n.op_type == "MaxPool" && &out != &n.outputs[0]) continue;  // Indices
        unite(n.inputs[0], out);
        members.insert(out);
      }
      members.insert(n.inputs[0]);
    } else if (n.op_type == "Concat") {
      for (const auto& in : n.inputs)
        if (!in.empty() && !g.is_initializer(in)) {
          unite(n.outputs[0], in);
          members.insert(in);
        }
      members.insert(n.outputs[0]);
    }
  }
  std::map<std::string, std::string> groups;
  for (const auto& m : members) groups[m] = find(m);
  return groups;
}

void share_scales(const ir::Graph& g, ScaleTable& table) {
  const auto groups = scale_groups(g);
  std::map<std::string, double> group_amax;
  for (const auto& [t, a] : table.amax) {
    auto it = groups.find(t);
    if (it == groups.end()) continue;
    double& m = group_amax[it->second];
    m = std::max(m, a);
  }
  for (auto& [t, a] : table.amax) {
    auto it = groups.find(t);
    if (it != groups.end()) a = group_amax[it->second];
  }
}

size_t drop_nodes_reading(Placement& p, const std::set<std::string>& tensors) {
  std::set<std::string> drop;
  for (const auto& [t, uses] : p.activations)
    if (tensors.count(t))
      for (const auto& u : uses) drop.insert(u.first);
  Placement kept;
  kept.skipped = p.skipped;
  for (const auto& n : p.quantized_nodes)
    if (!drop.count(n)) kept.quantized_nodes.push_back(n);
  for (const auto& [t, uses] : p.activations) {
    std::vector<std::pair<std::string, size_t>> u2;
    for (const auto& u : uses)
      if (!drop.count(u.first)) u2.push_back(u);
    if (!u2.empty()) kept.activations[t] = u2;
  }
  for (const auto& w : p.weights)
    if (!drop.count(w.node)) kept.weights.push_back(w);
  p = std::move(kept);
  return drop.size();
}

}  // namespace trtutils::quantize
