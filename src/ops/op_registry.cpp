#include "ops/op_registry.h"

#include <algorithm>

#include "core/check.h"

namespace trtutils::ops {

namespace {
bool same_domain(std::string_view a, std::string_view b) {
  auto norm = [](std::string_view d) { return d == "ai.onnx" ? std::string_view{} : d; };
  return norm(a) == norm(b);
}
}  // namespace

OpRegistry& OpRegistry::instance() {
  static OpRegistry* r = [] {
    auto* reg = new OpRegistry();
    register_elementwise_ops(*reg);
    register_nn_ops(*reg);
    register_tensor_ops(*reg);
    register_quant_ops(*reg);
    register_qlinear_ops(*reg);
    register_index_ops(*reg);
    register_detection_ops(*reg);
    return reg;
  }();
  return *r;
}

void OpRegistry::add(OpSchema schema) {
  schemas_.push_back(std::move(schema));
}

const OpSchema* OpRegistry::find(std::string_view domain, std::string_view op_type) const {
  for (const auto& s : schemas_)
    if (s.op_type == op_type && same_domain(s.domain, domain)) return &s;
  return nullptr;
}

std::vector<std::string> OpRegistry::op_types() const {
  std::vector<std::string> v;
  for (const auto& s : schemas_) v.push_back(s.op_type);
  std::sort(v.begin(), v.end());
  return v;
}

const ir::ValueInfo& InferContext::input(size_t i) const {
  TRT_CHECK(has_input(i), ErrorCode::kInvalidArgument, "{}: required input {} is missing",
            node.describe(), i);
  return *inputs[i];
}

int64_t normalize_axis(int64_t axis, int64_t rank, const ir::Node& node) {
  // An axis indexes a dimension: a scalar has none (its Split once read dims()[0] of nothing).
  TRT_CHECK(axis >= -rank && axis < rank, ErrorCode::kInvalidArgument,
            "{}: axis {} is out of range for rank {}", node.describe(), axis, rank);
  return axis < 0 ? axis + rank : axis;
}

ir::SymShape broadcast_shapes(const ir::SymShape& a, const ir::SymShape& b, const ir::Node& node) {
  const size_t n = std::max(a.size(), b.size());
  ir::SymShape out(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Dim da = i + a.size() >= n ? a[i + a.size() - n] : ir::Dim(1);
    const ir::Dim db = i + b.size() >= n ? b[i + b.size() - n] : ir::Dim(1);
    if (da.is_static() && da.value == 1) {
      out[i] = db;
    } else if (db.is_static() && db.value == 1) {
      out[i] = da;
    } else if (da.is_static() && db.is_static()) {
      TRT_CHECK(da.value == db.value, ErrorCode::kInvalidArgument,
                "{}: shapes {} and {} cannot be broadcast", node.describe(), ir::sym_shape_str(a),
                ir::sym_shape_str(b));
      out[i] = da;
    } else if (da.is_static()) {
      out[i] = da;  // the symbolic side must be equal (or 1, which is then broadcast)
    } else if (db.is_static()) {
      out[i] = db;
    } else {
      out[i] = (da == db) ? da : ir::Dim();
    }
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const ir::Node& node) {
  return ir::sym_shape_to_static(
      broadcast_shapes(ir::sym_shape_from_static(a), ir::sym_shape_from_static(b), node));
}

}  // namespace trtutils::ops
