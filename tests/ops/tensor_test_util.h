// Helpers for the tensor/quant op tests: nodes built by hand, tensors from literals, running a
// CPU kernel with omitted optional inputs, and calling an op's shape inference directly.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/kernel_registry.h"
#include "ir/graph.h"
#include "ir/graph_builder.h"
#include "ops/op_registry.h"
#include "trtutils/tensor.h"

namespace trtutils::tensor_testing {

inline ir::Attribute ai(const std::string& name, int64_t v) {
  return ir::attr_int(name, v);
}
inline ir::Attribute af(const std::string& name, float v) {
  return ir::attr_float(name, v);
}
inline ir::Attribute as(const std::string& name, const std::string& v) {
  return ir::attr_string(name, v);
}
inline ir::Attribute ais(const std::string& name, std::vector<int64_t> v) {
  return ir::attr_ints(name, v);
}
inline ir::Attribute afs(const std::string& name, std::vector<float> v) {
  return ir::attr_floats(name, v);
}
inline ir::Attribute at(const std::string& name, Tensor v) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::kTensor;
  a.t = std::move(v);
  return a;
}

// "x3" (built with append: GCC 12 -O3 warns falsely (-Wrestrict) on "lit" + std::string).
inline std::string numbered(const char* prefix, size_t i) {
  std::string s(prefix);
  s.append(std::to_string(i));
  return s;
}

inline ir::Node node(const std::string& op, std::vector<ir::Attribute> attrs = {},
                     size_t num_outputs = 1) {
  ir::Node n;
  n.name = std::string("n");  // not = "n": GCC 12 -O3 -Wrestrict false positive
  n.op_type = op;
  for (size_t i = 0; i < num_outputs; ++i) n.outputs.push_back(numbered("y", i));
  for (auto& a : attrs) n.attributes[a.name] = std::move(a);
  return n;
}

template <typename T>
Tensor make(DataType dt, Shape s, std::vector<T> v) {
  return Tensor::from_vector<T>(dt, std::move(s), v);
}
inline Tensor f32(Shape s, std::vector<float> v) {
  return make(DataType::kFloat32, std::move(s), v);
}
inline Tensor i64(Shape s, std::vector<int64_t> v) {
  return make(DataType::kInt64, std::move(s), v);
}
inline Tensor i32(Shape s, std::vector<int32_t> v) {
  return make(DataType::kInt32, std::move(s), v);
}
inline Tensor u8(Shape s, std::vector<uint8_t> v) {
  return make(DataType::kUInt8, std::move(s), v);
}
inline Tensor i8(Shape s, std::vector<int8_t> v) {
  return make(DataType::kInt8, std::move(s), v);
}
inline Tensor iota_f32(Shape s) {
  Tensor t(DataType::kFloat32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
// An undefined tensor: the optional input is omitted.
inline Tensor none() {
  return Tensor();
}

// Runs the node's CPU kernel; inputs "x0".. are named, undefined tensors are omitted ("").
inline std::vector<Tensor> run(ir::Node n, int64_t opset, const std::vector<Tensor>& ins) {
  n.inputs.clear();
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < ins.size(); ++i) {
    n.inputs.push_back(ins[i].defined() ? numbered("x", i) : std::string());
    ptrs.push_back(ins[i].defined() ? &ins[i] : nullptr);
  }
  return cpu::run_node(n, opset, ptrs);
}
inline Tensor run1(const ir::Node& n, int64_t opset, const std::vector<Tensor>& ins) {
  return run(n, opset, ins).at(0);
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.at_double(i));
  return v;
}
inline std::vector<double> dv(std::vector<double> v) {
  return v;
}

// Expects dtype, shape and values (|a-b| <= tol).
inline void expect_tensor(const Tensor& t, DataType dt, const Shape& s,
                          const std::vector<double>& v, double tol = 0) {
  EXPECT_EQ(t.dtype(), dt) << dtype_name(t.dtype());
  EXPECT_EQ(t.shape(), s) << shape_str(t.shape());
  const auto got = values(t);
  ASSERT_EQ(got.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(got[i], v[i], tol) << "element " << i;
}

// Input description for shape inference: dtype + symbolic shape ("N" style dims by Dim(name)).
struct In {
  DataType dtype = DataType::kFloat32;
  std::optional<ir::SymShape> shape;
  const Tensor* constant = nullptr;
  bool omitted = false;
};
inline std::vector<ir::ValueInfo> infer(ir::Node n, int64_t opset, const std::vector<In>& ins) {
  n.inputs.clear();
  std::vector<ir::ValueInfo> infos(ins.size());
  std::vector<const ir::ValueInfo*> ptrs;
  std::vector<const Tensor*> consts;
  for (size_t i = 0; i < ins.size(); ++i) {
    n.inputs.push_back(ins[i].omitted ? std::string() : numbered("x", i));
    infos[i].name = n.inputs.back();
    infos[i].dtype = ins[i].dtype;
    infos[i].shape = ins[i].shape;
    ptrs.push_back(ins[i].omitted ? nullptr : &infos[i]);
    consts.push_back(ins[i].omitted ? nullptr : ins[i].constant);
  }
  std::vector<ir::ValueInfo> outs(n.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) outs[i].name = n.outputs[i];
  ops::InferContext ctx{n, opset, ptrs, consts, outs};
  const ops::OpSchema* s = ops::OpRegistry::instance().find("", n.op_type);
  if (!s) throw std::runtime_error("no schema for " + n.op_type);
  s->infer(ctx);
  return ctx.outputs;
}
inline In cin(const Tensor& t) {
  return In{t.dtype(), ir::sym_shape_from_static(t.shape()), &t, false};
}
inline std::string sym(const std::optional<ir::SymShape>& s) {
  return s ? ir::sym_shape_str(*s) : std::string("<unknown rank>");
}

}  // namespace trtutils::tensor_testing
