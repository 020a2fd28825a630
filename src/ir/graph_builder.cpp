#include "ir/graph_builder.h"

#include "core/check.h"

namespace trtutils::ir {

namespace {
Attribute make(const std::string& name, Attribute::Kind kind) {
  Attribute a;
  a.name = name;
  a.kind = kind;
  return a;
}
}  // namespace

Attribute attr_int(const std::string& name, int64_t v) {
  Attribute a = make(name, Attribute::Kind::kInt);
  a.i = v;
  return a;
}
Attribute attr_float(const std::string& name, float v) {
  Attribute a = make(name, Attribute::Kind::kFloat);
  a.f = v;
  return a;
}
Attribute attr_string(const std::string& name, const std::string& v) {
  Attribute a = make(name, Attribute::Kind::kString);
  a.s = v;
  return a;
}
Attribute attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  Attribute a = make(name, Attribute::Kind::kInts);
  a.ints = v;
  return a;
}
Attribute attr_floats(const std::string& name, const std::vector<float>& v) {
  Attribute a = make(name, Attribute::Kind::kFloats);
  a.floats = v;
  return a;
}
Attribute attr_strings(const std::string& name, const std::vector<std::string>& v) {
  Attribute a = make(name, Attribute::Kind::kStrings);
  a.strings = v;
  return a;
}
Attribute attr_tensor(const std::string& name, const Tensor& v) {
  Attribute a = make(name, Attribute::Kind::kTensor);
  a.t = v;
  return a;
}
Attribute attr_graph(const std::string& name, Graph g) {
  Attribute a = make(name, Attribute::Kind::kGraph);
  a.g = std::make_shared<Graph>(std::move(g));
  return a;
}

GraphBuilder::GraphBuilder(std::string name) {
  graph_.name = std::move(name);
}

std::string GraphBuilder::input(const std::string& name, DataType dtype, SymShape shape) {
  graph_.inputs.push_back(ValueInfo{name, dtype, std::move(shape), {}});
  return name;
}

std::string GraphBuilder::initializer(const std::string& name, const Tensor& value) {
  TRT_CHECK_ARG(graph_.initializers.emplace(name, value).second,
                "GraphBuilder: initializer '{}' added twice", name);
  return name;
}

std::vector<std::string> GraphBuilder::node(const std::string& op_type,
                                            const std::vector<std::string>& inputs,
                                            std::vector<Attribute> attrs, int num_outputs,
                                            const std::string& domain, const std::string& name) {
  const std::string node_name =
      name.empty() ? graph_.unique_name(op_type + "_" + std::to_string(counter_++)) : name;
  std::vector<std::string> outputs;
  for (int i = 0; i < num_outputs; ++i) outputs.push_back(node_name + "_out" + std::to_string(i));
  node_with_outputs(op_type, inputs, outputs, std::move(attrs));
  graph_.nodes.back().name = node_name;
  graph_.nodes.back().domain = domain;
  return outputs;
}

std::vector<std::string> GraphBuilder::node_with_outputs(const std::string& op_type,
                                                         const std::vector<std::string>& inputs,
                                                         const std::vector<std::string>& outputs,
                                                         std::vector<Attribute> attrs) {
  Node n;
  n.name = graph_.unique_name(op_type + "_" + std::to_string(counter_++));
  n.op_type = op_type;
  n.inputs = inputs;
  n.outputs = outputs;
  for (auto& a : attrs) {
    const std::string an = a.name;
    TRT_CHECK_ARG(n.attributes.emplace(an, std::move(a)).second,
                  "GraphBuilder: {} has attribute '{}' twice", n.describe(), an);
  }
  graph_.nodes.push_back(std::move(n));
  return outputs;
}

void GraphBuilder::output(const std::string& value, DataType dtype, std::optional<SymShape> shape) {
  graph_.outputs.push_back(ValueInfo{value, dtype, std::move(shape), {}});
}

Model GraphBuilder::build(int64_t opset, std::vector<OpsetImport> extra_opsets) const {
  Model m;
  m.producer_name = "trtutils";
  m.opset_imports.push_back({"", opset});
  for (auto& o : extra_opsets) m.opset_imports.push_back(std::move(o));
  m.graph = graph_;
  return m;
}

}  // namespace trtutils::ir
