// Helpers for op tests: build a node by hand, make tensors, run the CPU kernel, and a naive
// broadcasting reference (index arithmetic per element) to compare the fast iterator with.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/kernel_registry.h"
#include "ir/graph.h"
#include "ir/graph_builder.h"
#include "ops/op_registry.h"
#include "trtutils/status.h"
#include "trtutils/tensor.h"

namespace trtutils::ew_testing {

inline ir::Attribute attr_i(const std::string& name, int64_t v) {
  return ir::attr_int(name, v);
}
inline ir::Attribute attr_f(const std::string& name, float v) {
  return ir::attr_float(name, v);
}
inline ir::Attribute attr_s(const std::string& name, const std::string& v) {
  return ir::attr_string(name, v);
}
inline ir::Attribute attr_ints(const std::string& name, std::vector<int64_t> v) {
  return ir::attr_ints(name, v);
}

// A node named "n" with inputs "x0".."x{n-1}" ("" where omitted[i]) and one output "y".
inline ir::Node make_node(const std::string& op, size_t num_inputs,
                          const std::vector<ir::Attribute>& attrs = {},
                          const std::vector<size_t>& omitted = {}) {
  ir::Node n;
  n.name = "n";
  n.op_type = op;
  for (size_t i = 0; i < num_inputs; ++i) {
    std::string name = "x";  // (not "x" + ...: GCC 12 -Wrestrict false positive)
    name += std::to_string(i);
    n.inputs.push_back(name);
  }
  for (size_t i : omitted) n.inputs.at(i).clear();
  n.outputs = {"y"};
  for (const auto& a : attrs) n.attributes[a.name] = a;
  return n;
}

inline Tensor f32(Shape s, std::vector<float> v) {
  return Tensor::from_vector(DataType::kFloat32, std::move(s), v);
}
inline Tensor i64(Shape s, std::vector<int64_t> v) {
  return Tensor::from_vector(DataType::kInt64, std::move(s), v);
}
inline Tensor i32(Shape s, std::vector<int32_t> v) {
  return Tensor::from_vector(DataType::kInt32, std::move(s), v);
}
inline Tensor boolean(Shape s, std::vector<bool> v) {
  Tensor t(DataType::kBool, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}
// Deterministic pseudo-random floats in [lo, hi).
inline Tensor random_f32(Shape s, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  Tensor t(DataType::kFloat32, std::move(s));
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = lo + (hi - lo) * static_cast<float>(x >> 8) / 16777216.0f;
  }
  return t;
}

inline Tensor run1(const ir::Node& node, int64_t opset, const std::vector<const Tensor*>& ins) {
  return cpu::run_node(node, opset, ins).at(0);
}
inline Tensor run1(const ir::Node& node, int64_t opset, const std::vector<Tensor>& ins) {
  std::vector<const Tensor*> p;
  for (const auto& t : ins) p.push_back(t.defined() ? &t : nullptr);
  return run1(node, opset, p);
}

// Element index of `out_index` (flat, C order in `out`) inside a broadcast input of shape `in`.
inline int64_t broadcast_source(const Shape& out, const Shape& in, int64_t out_index) {
  int64_t src = 0, stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t d = out.size() - 1 - k;
    const int64_t coord = out_index % out[d];
    out_index /= out[d];
    if (k < in.size()) {
      const int64_t ind = in[in.size() - 1 - k];
      if (ind != 1) src += coord * stride;
      stride *= ind;
    }
  }
  return src;
}

inline std::vector<float> values(const Tensor& t) {
  return t.to_float_vector();
}

// Shape inference through the registry: inputs given as (dtype, shape) with optional constants.
struct InferInput {
  DataType dtype;
  std::optional<ir::SymShape> shape;
  const Tensor* constant = nullptr;
};
inline ir::ValueInfo infer(const ir::Node& node, int64_t opset,
                           const std::vector<std::optional<InferInput>>& ins) {
  const ops::OpSchema* schema = ops::OpRegistry::instance().find(node.domain, node.op_type);
  EXPECT_NE(schema, nullptr) << node.op_type;
  if (!schema) return {};
  std::vector<ir::ValueInfo> infos(ins.size());
  std::vector<const ir::ValueInfo*> ptrs;
  std::vector<const Tensor*> consts;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i]) {
      infos[i].name = node.inputs.at(i);
      infos[i].dtype = ins[i]->dtype;
      infos[i].shape = ins[i]->shape;
      ptrs.push_back(&infos[i]);
      consts.push_back(ins[i]->constant);
    } else {
      ptrs.push_back(nullptr);
      consts.push_back(nullptr);
    }
  }
  std::vector<ir::ValueInfo> outs(node.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) outs[i].name = node.outputs[i];
  ops::InferContext ctx{node, opset, ptrs, consts, outs};
  schema->infer(ctx);
  return ctx.outputs.at(0);
}

inline ir::SymShape sym(std::initializer_list<ir::Dim> dims) {
  return ir::SymShape(dims);
}

}  // namespace trtutils::ew_testing
