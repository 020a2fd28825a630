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
#include "passes/passes.h"

namespace trtutils::cuda::fusion {

bool default_domain(const ir::Node& n) {
  return passes::is_default_domain(n);
}

bool switch_on(const char* name) {
  return kernel_switch(name, true);
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
