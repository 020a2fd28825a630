// The shared part of the CUDA executor's fusions (fusion_graph.h): the graph's reader and
// producer index, the single-reader and constant checks, and the epilogue tails that several
// products take (the grid and the residual; the GELU chain is in gelu.cpp).
#include "backends/cuda/fusion/fusion_graph.h"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "ir/graph_builder.h"
#include "ops/qlinear_ops.h"

namespace trtutils::cuda::fusion {

bool default_domain(const ir::Node& n) {
  return n.domain.empty() || n.domain == "ai.onnx";
}

bool switch_on(const char* name) {
  return kernel_switch(name, true);
}

FusionGraph::FusionGraph(ir::Graph& g, int64_t opset) : graph(g), opset(opset) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const auto& in : graph.nodes[i].inputs)
      if (!in.empty()) readers[in].push_back(i);
    for (const auto& in : graph.nodes[i].implicit_inputs())  // an If / Loop body reads it
      readers[in].push_back(i);
    for (const auto& o : graph.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  }
  for (const auto& o : graph.outputs) graph_outputs.insert(o.name);
  removed.assign(graph.nodes.size(), false);
}

size_t FusionGraph::only_reader(const std::string& v) const {
  if (graph_outputs.count(v)) return SIZE_MAX;
  auto it = readers.find(v);
  if (it == readers.end() || it->second.size() != 1) return SIZE_MAX;
  return removed[it->second[0]] ? SIZE_MAX : it->second[0];
}

float FusionGraph::scalar(const std::string& v) const {
  const Tensor* t = graph.initializer(v);
  if (!t || t->numel() != 1) return NAN;
  if (t->dtype() != DataType::kFloat32 && t->dtype() != DataType::kFloat16 &&
      t->dtype() != DataType::kBFloat16)
    return NAN;
  return static_cast<float>(t->at_double(0));
}

std::optional<ir::SymShape> FusionGraph::shape_of(const std::string& v) const {
  auto it = graph.value_info.find(v);
  if (it != graph.value_info.end()) return it->second.shape;
  for (const auto& in : graph.inputs)
    if (in.name == v) return in.shape;
  if (const Tensor* t = graph.initializer(v)) return ir::sym_shape_from_static(t->shape());
  return std::nullopt;
}

int64_t FusionGraph::rank_of(const std::string& v) const {
  const auto s = shape_of(v);
  return s ? static_cast<int64_t>(s->size()) : -1;
}

std::vector<int64_t> FusionGraph::static_shape(const std::string& v) const {
  const auto s = shape_of(v);
  std::vector<int64_t> r;
  if (!s) return r;
  for (const ir::Dim& d : *s) {
    if (!d.is_static() || d.value <= 0) return {};
    r.push_back(d.value);
  }
  return r;
}

size_t FusionGraph::index_of(const ir::Node& n) const {
  return static_cast<size_t>(&n - graph.nodes.data());
}

size_t FusionGraph::place(ir::Node f, const std::vector<size_t>& chain) {
  const size_t last = chain.back();
  for (size_t c : chain) removed[c] = true;
  graph.nodes[last] = std::move(f);
  removed[last] = false;
  last_fused = last;
  return 1;
}

bool near(float v, double want) {
  return std::fabs(v - want) <= 1e-3 * std::fabs(want);
}

const std::string* other(const ir::Node& n, const std::string& v) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == v) return &n.inputs[1];
  if (n.inputs[1] == v) return &n.inputs[0];
  return nullptr;
}

void set_int(ir::Node& f, const char* name, int64_t v) {
  f.attributes[name] = ir::attr_int(name, v);
}

void set_float(ir::Node& f, const char* name, float v) {
  f.attributes[name] = ir::attr_float(name, v);
}

bool swaps_leading(const ir::Node& t) {
  if (t.op_type != "Transpose" || !default_domain(t) || t.inputs.size() != 1 ||
      t.outputs.size() != 1)
    return false;
  return perm_of(t) == std::vector<int64_t>{1, 0, 2};
}

std::vector<int64_t> perm_of(const ir::Node& t) {
  auto it = t.attributes.find("perm");
  if (it == t.attributes.end()) return {};
  return it->second.ints;
}

std::string match_grid(const FusionGraph& fg, const std::string& y, int64_t n, ir::Node& f,
                       std::vector<size_t>& chain) {
  const size_t r = fg.only_reader(y);
  if (r == SIZE_MAX) return y;
  const ir::Node& rs = fg.graph.nodes[r];
  if (rs.op_type != "Reshape" || !default_domain(rs) || rs.inputs.size() != 2 ||
      rs.inputs[0] != y || rs.outputs.size() != 1 || rs.attr_int("allowzero", 0) != 0)
    return y;
  const Tensor* shape = fg.graph.initializer(rs.inputs[1]);
  if (!shape || shape->dtype() != DataType::kInt64 || shape->numel() != 3) return y;
  const int64_t* v = shape->data<int64_t>();
  // Grid sizes positive or one -1; the last axis the product's n columns.
  if (v[2] != n || v[0] == 0 || v[1] == 0 || v[0] < -1 || v[1] < -1 || (v[0] < 0 && v[1] < 0))
    return y;
  const size_t t = fg.only_reader(rs.outputs[0]);
  if (t == SIZE_MAX || !swaps_leading(fg.graph.nodes[t])) return y;
  f.attributes["y_grid"] = ir::attr_ints("y_grid", {v[0], v[1]});
  chain.push_back(r);
  chain.push_back(t);
  return fg.graph.nodes[t].outputs[0];
}

std::string match_residual(const FusionGraph& fg, const std::string& y, ir::Node& f,
                           std::vector<size_t>& chain) {
  const size_t r = fg.only_reader(y);
  if (r == SIZE_MAX) return y;
  const ir::Node& add = fg.graph.nodes[r];
  if (add.op_type != "Add" || !default_domain(add) || add.outputs.size() != 1) return y;
  const std::string* res = other(add, y);
  if (!res || *res == y) return y;
  const auto ys = fg.shape_of(y), rs = fg.shape_of(*res);
  if (!ys || !rs || *ys != *rs) return y;
  for (const ir::Dim& d : *ys)  // unknown dims could differ at run time
    if (!d.is_static() && d.param.empty()) return y;
  f.inputs.push_back(*res);
  chain.push_back(r);
  return add.outputs[0];
}

size_t per_tensor_quantizer_of(const FusionGraph& fg, const std::string& v) {
  const size_t qi = fg.only_reader(v);
  if (qi == SIZE_MAX) return SIZE_MAX;
  const ir::Node& q = fg.graph.nodes[qi];
  if (q.op_type != "QuantizeLinear" || !default_domain(q) || q.inputs.size() != 3 ||
      q.inputs[0] != v || q.outputs.size() != 1 || q.attr_int("saturate", 1) != 1)
    return SIZE_MAX;
  const float s = fg.scalar(q.inputs[1]);
  const Tensor* zp = fg.graph.initializer(q.inputs[2]);
  if (!(s > 0.0f) || std::isinf(s) || !zp || zp->numel() != 1) return SIZE_MAX;
  return qi;
}

bool float_qgemm(const ir::Node& g, std::initializer_list<const char*> also) {
  if (g.outputs.size() != 1 || g.inputs.size() > ops::qlinear::kYScale ||
      g.attributes.count("activation"))
    return false;
  for (const char* a : also)
    if (g.attributes.count(a)) return false;
  return true;
}

int64_t qgemm_columns(const FusionGraph& fg, const ir::Node& g) {
  const Tensor* w = g.inputs.size() > ops::qlinear::kW
                        ? fg.graph.initializer(g.inputs[ops::qlinear::kW])
                        : nullptr;
  if (!w || w->rank() != 2) return -1;
  return g.attr_int("transB", 0) != 0 ? w->dim(0) : w->dim(1);
}

}  // namespace trtutils::cuda::fusion
