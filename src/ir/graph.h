// The graph IR: ONNX-shaped (values named by strings, nodes in topological order, initializers
// as Tensors) so import/export are direct, with our own types so that no layer above src/onnx
// sees protobuf. Dims may be symbolic (a name such as "batch") until bound at run time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "trtutils/tensor.h"

namespace trtutils::ir {

// One dimension: a known size (value >= 0), a named symbol (param), or unknown (neither).
struct Dim {
  int64_t value = -1;
  std::string param;
  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit from an int is the common case
  explicit Dim(std::string p) : param(std::move(p)) {}
  bool is_static() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && param == o.param; }
};
using SymShape = std::vector<Dim>;
std::string sym_shape_str(const SymShape& s);
bool sym_shape_is_static(const SymShape& s);
Shape sym_shape_to_static(const SymShape& s);  // requires sym_shape_is_static
SymShape sym_shape_from_static(const Shape& s);

// Type + shape of a value. shape == nullopt: rank unknown.
struct ValueInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::optional<SymShape> shape;
  std::string doc_string;
};

class Graph;

struct Attribute {
  enum class Kind { kUndefined, kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings };
  std::string name;
  Kind kind = Kind::kUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;  // bytes for kString
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;                // "" (or "ai.onnx") = the default ONNX domain
  std::vector<std::string> inputs;   // "" = an omitted optional input
  std::vector<std::string> outputs;  // "" = an omitted optional output
  std::map<std::string, Attribute> attributes;
  std::string doc_string;

  bool has_attr(const std::string& n) const { return attributes.count(n) != 0; }
  const Attribute* attr(const std::string& n) const;
  // Typed getters with defaults; throw Error(kInvalidArgument) when present with another kind.
  int64_t attr_int(const std::string& n, int64_t def) const;
  float attr_float(const std::string& n, float def) const;
  std::string attr_string(const std::string& n, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& n, const std::vector<int64_t>& def = {}) const;
  std::vector<float> attr_floats(const std::string& n, const std::vector<float>& def = {}) const;
  // Number of inputs actually given (trailing "" removed); input(i) is "" when omitted.
  size_t num_inputs() const;
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  // "Conv 'conv1'" for messages.
  std::string describe() const;
  // Values the node's subgraph attributes (If's branches, Loop's body) read from the enclosing
  // scope without listing them as inputs (sorted, no duplicates; empty for most ops).
  std::vector<std::string> implicit_inputs() const;
};

class Graph {
 public:
  std::string name;
  std::vector<ValueInfo> inputs;   // graph inputs (initializers are not listed here)
  std::vector<ValueInfo> outputs;  // graph outputs
  std::vector<Node> nodes;         // topological order
  std::map<std::string, Tensor> initializers;
  std::map<std::string, ValueInfo> value_info;  // inferred / imported types of inner values
  std::string doc_string;

  bool is_initializer(const std::string& n) const { return initializers.count(n) != 0; }
  const Tensor* initializer(const std::string& n) const;
  // Type and shape known for a value (graph input, output, initializer or value_info).
  std::optional<ValueInfo> find_value_info(const std::string& n) const;
  // The shape of value n when every dim of it is known, else nullopt.
  std::optional<Shape> static_shape(const std::string& n) const;
  // Sorts nodes topologically (stable); throws on cycles or on inputs nobody produces.
  void topological_sort();
  // What every consumer of a graph relies on, checked once where a graph enters (the ONNX
  // loader, the engine reader): nodes in topological order, every value read is defined before
  // (a graph input, an initializer, an earlier node's output; in a subgraph also a value of the
  // graphs around it), no value is defined twice, every graph output is defined, and the graph
  // has at least one output. Error(kInvalidArgument) naming the value and the node.
  void validate() const;
  // Removes nodes whose outputs nobody needs and initializers nobody reads.
  void remove_dead_nodes();
  // A fresh value / node name starting with `prefix` that is not used yet.
  std::string unique_name(const std::string& prefix) const;
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
};

struct Model {
  int64_t ir_version = 8;
  std::vector<OpsetImport> opset_imports;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  Graph graph;

  // Version of the default ONNX domain ("" or "ai.onnx"); 0 if not imported.
  int64_t opset() const;
};

}  // namespace trtutils::ir
