// A small API to build IR graphs in tests and tools:
//   ir::GraphBuilder b("net");
//   auto x = b.input("x", DataType::kFloat32, {ir::Dim("batch"), 3, 8, 8});
//   auto w = b.initializer("w", weights);
//   auto y = b.node("Conv", {x, w}, {ir::attr_ints("pads", {1, 1, 1, 1})})[0];
//   b.output(y, DataType::kFloat32);
//   ir::Model m = b.build(/*opset=*/17);
// Value and node names are generated ("Conv_0", "Conv_0_out0") unless given.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace trtutils::ir {

Attribute attr_int(const std::string& name, int64_t v);
Attribute attr_float(const std::string& name, float v);
Attribute attr_string(const std::string& name, const std::string& v);
Attribute attr_ints(const std::string& name, const std::vector<int64_t>& v);
Attribute attr_floats(const std::string& name, const std::vector<float>& v);
Attribute attr_strings(const std::string& name, const std::vector<std::string>& v);
Attribute attr_tensor(const std::string& name, const Tensor& v);
Attribute attr_graph(const std::string& name, Graph g);

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph");

  // Each returns the value name to feed into node().
  std::string input(const std::string& name, DataType dtype, SymShape shape);
  std::string initializer(const std::string& name, const Tensor& value);
  // Adds a node with `num_outputs` fresh outputs (or the given `outputs`) and returns them.
  std::vector<std::string> node(const std::string& op_type, const std::vector<std::string>& inputs,
                                std::vector<Attribute> attrs = {}, int num_outputs = 1,
                                const std::string& domain = "", const std::string& name = "");
  std::vector<std::string> node_with_outputs(const std::string& op_type,
                                             const std::vector<std::string>& inputs,
                                             const std::vector<std::string>& outputs,
                                             std::vector<Attribute> attrs = {});
  // Marks `value` as a graph output (dtype/shape optional: unknown if not given).
  void output(const std::string& value, DataType dtype = DataType::kUndefined,
              std::optional<SymShape> shape = std::nullopt);

  Graph& graph() { return graph_; }
  // The graph alone (e.g. for an If/Loop body attribute).
  Graph build_graph() const { return graph_; }
  // A model importing the default domain at `opset` (plus `extra_opsets`).
  Model build(int64_t opset = 17, std::vector<OpsetImport> extra_opsets = {}) const;

 private:
  Graph graph_;
  int counter_ = 0;
};

}  // namespace trtutils::ir
