#include "ir/graph.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"

namespace trtutils::ir {

std::string sym_shape_str(const SymShape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += s[i].is_static() ? std::to_string(s[i].value) : (s[i].param.empty() ? "?" : s[i].param);
  }
  return r + "]";
}

bool sym_shape_is_static(const SymShape& s) {
  return std::all_of(s.begin(), s.end(), [](const Dim& d) { return d.is_static(); });
}

Shape sym_shape_to_static(const SymShape& s) {
  Shape r;
  r.reserve(s.size());
  for (const auto& d : s) {
    TRT_CHECK(d.is_static(), ErrorCode::kInvalidArgument, "shape {} is not static",
              sym_shape_str(s));
    r.push_back(d.value);
  }
  return r;
}

SymShape sym_shape_from_static(const Shape& s) {
  return SymShape(s.begin(), s.end());
}

const Attribute* Node::attr(const std::string& n) const {
  auto it = attributes.find(n);
  return it == attributes.end() ? nullptr : &it->second;
}

namespace {
const Attribute* typed_attr(const Node& node, const std::string& n, Attribute::Kind kind) {
  const Attribute* a = node.attr(n);
  if (!a) return nullptr;
  TRT_CHECK(a->kind == kind, ErrorCode::kInvalidArgument, "{}: attribute '{}' has the wrong type",
            node.describe(), n);
  return a;
}
}  // namespace

int64_t Node::attr_int(const std::string& n, int64_t def) const {
  const Attribute* a = typed_attr(*this, n, Attribute::Kind::kInt);
  return a ? a->i : def;
}
float Node::attr_float(const std::string& n, float def) const {
  const Attribute* a = attr(n);
  if (a && a->kind == Attribute::Kind::kInt) return static_cast<float>(a->i);
  a = typed_attr(*this, n, Attribute::Kind::kFloat);
  return a ? a->f : def;
}
std::string Node::attr_string(const std::string& n, const std::string& def) const {
  const Attribute* a = typed_attr(*this, n, Attribute::Kind::kString);
  return a ? a->s : def;
}
std::vector<int64_t> Node::attr_ints(const std::string& n, const std::vector<int64_t>& def) const {
  const Attribute* a = typed_attr(*this, n, Attribute::Kind::kInts);
  return a ? a->ints : def;
}
std::vector<float> Node::attr_floats(const std::string& n, const std::vector<float>& def) const {
  const Attribute* a = typed_attr(*this, n, Attribute::Kind::kFloats);
  return a ? a->floats : def;
}

size_t Node::num_inputs() const {
  size_t n = inputs.size();
  while (n > 0 && inputs[n - 1].empty()) --n;
  return n;
}

std::string Node::describe() const {
  return name.empty() ? fmt::format("{} node (output '{}')", op_type,
                                    outputs.empty() ? std::string() : outputs[0])
                      : fmt::format("{} '{}'", op_type, name);
}

const Tensor* Graph::initializer(const std::string& n) const {
  auto it = initializers.find(n);
  return it == initializers.end() ? nullptr : &it->second;
}

std::optional<ValueInfo> Graph::find_value_info(const std::string& n) const {
  for (const auto& v : inputs)
    if (v.name == n) return v;
  if (auto it = initializers.find(n); it != initializers.end())
    return ValueInfo{n, it->second.dtype(), sym_shape_from_static(it->second.shape()), {}};
  if (auto it = value_info.find(n); it != value_info.end()) return it->second;
  for (const auto& v : outputs)
    if (v.name == n) return v;
  return std::nullopt;
}

std::optional<Shape> Graph::static_shape(const std::string& n) const {
  const auto vi = find_value_info(n);
  if (!vi || !vi->shape || !sym_shape_is_static(*vi->shape)) return std::nullopt;
  return sym_shape_to_static(*vi->shape);
}

namespace {

// Names `sub` reads that it neither defines (its inputs, initializers, node outputs) nor gets
// from a nested subgraph's own definitions.
void outer_reads(const Graph& sub, std::set<std::string>& out) {
  std::unordered_set<std::string> local;
  for (const auto& v : sub.inputs) local.insert(v.name);
  for (const auto& [n, t] : sub.initializers) local.insert(n);
  for (const auto& n : sub.nodes)
    for (const auto& o : n.outputs) local.insert(o);
  auto add = [&](const std::string& v) {
    if (!v.empty() && !local.count(v)) out.insert(v);
  };
  for (const auto& n : sub.nodes) {
    for (const auto& in : n.inputs) add(in);
    for (const auto& v : n.implicit_inputs()) add(v);
  }
  for (const auto& o : sub.outputs) add(o.name);
}

}  // namespace

std::vector<std::string> Node::implicit_inputs() const {
  std::set<std::string> out;
  for (const auto& [name, a] : attributes)
    if (a.kind == Attribute::Kind::kGraph && a.g) outer_reads(*a.g, out);
  return {out.begin(), out.end()};
}

namespace {

// Names end up in JSON (engine files, reports, inspect --json), which holds UTF-8 only.
void check_utf8(const std::string& name, const char* what) {
  if (is_valid_utf8(name)) return;
  std::string shown;  // the bytes past ASCII as \xNN: the message itself stays valid UTF-8
  for (const char c : name)
    shown += static_cast<unsigned char>(c) < 0x80
                 ? std::string(1, c)
                 : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  TRT_THROW(ErrorCode::kInvalidArgument, "the {} '{}' is not valid UTF-8 (ONNX names are UTF-8)",
            what, shown);
}

void check_names(const Graph& g) {
  check_utf8(g.name, "graph name");
  for (const auto& v : g.inputs) check_utf8(v.name, "graph input name");
  for (const auto& v : g.outputs) check_utf8(v.name, "graph output name");
  for (const auto& [name, t] : g.initializers) check_utf8(name, "initializer name");
  for (const auto& [name, v] : g.value_info) check_utf8(name, "value name");
  for (const auto& n : g.nodes) {
    check_utf8(n.name, "node name");
    check_utf8(n.op_type, "op type");
    check_utf8(n.domain, "domain");
    for (const auto& v : n.inputs) check_utf8(v, "value name");
    for (const auto& v : n.outputs) check_utf8(v, "value name");
    for (const auto& [name, a] : n.attributes) check_utf8(name, "attribute name");
  }
}

void validate_scope(const Graph& g, std::unordered_set<std::string> defined, int depth) {
  TRT_CHECK_ARG(depth <= 64, "graph '{}': subgraphs nested more than 64 deep", g.name);
  check_names(g);
  std::unordered_set<std::string> own;
  auto define = [&](const std::string& v, const std::string& by) {
    TRT_CHECK_ARG(own.insert(v).second, "value '{}' is defined twice (again by {})", v, by);
    defined.insert(v);
  };
  for (const auto& v : g.inputs) define(v.name, "a graph input");
  for (const auto& [name, t] : g.initializers)
    if (!own.count(name)) define(name, "an initializer");
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs)
      TRT_CHECK_ARG(in.empty() || defined.count(in),
                    "{} reads '{}', which is neither a graph input, an initializer nor computed "
                    "by an earlier node",
                    n.describe(), in);
    for (const auto& [name, a] : n.attributes)
      if (a.kind == Attribute::Kind::kGraph && a.g) validate_scope(*a.g, defined, depth + 1);
    for (const auto& o : n.outputs)
      if (!o.empty()) define(o, n.describe());
  }
  for (const auto& o : g.outputs)
    TRT_CHECK_ARG(defined.count(o.name),
                  "graph output '{}' is not computed: no node produces it and it is neither a "
                  "graph input nor an initializer",
                  o.name);
}

}  // namespace

void Graph::validate() const {
  TRT_CHECK_ARG(!outputs.empty(), "the graph has no outputs: there is nothing to compute");
  validate_scope(*this, {}, 0);
}

void Graph::topological_sort() {
  // Kahn's algorithm, iterative (no recursion: deep graphs must not overflow the stack), stable:
  // among ready nodes the one that came first in the file goes first.
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& o : nodes[i].outputs)
      if (!o.empty()) {
        TRT_CHECK(producer.emplace(o, i).second, ErrorCode::kInvalidArgument,
                  "value '{}' is produced by more than one node ({} and {})", o,
                  nodes[producer[o]].describe(), nodes[i].describe());
      }
  std::unordered_set<std::string> available;
  for (const auto& v : inputs) available.insert(v.name);
  for (const auto& [n, t] : initializers) available.insert(n);
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> consumers(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::set<size_t> deps;
    std::vector<std::string> reads = nodes[i].inputs;
    for (auto& v : nodes[i].implicit_inputs()) reads.push_back(std::move(v));
    for (const auto& in : reads) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      if (it != producer.end()) {
        deps.insert(it->second);
      } else {
        TRT_CHECK(available.count(in), ErrorCode::kInvalidArgument,
                  "{}: input '{}' is neither a graph input, an initializer nor produced by a node",
                  nodes[i].describe(), in);
      }
    }
    pending[i] = static_cast<int>(deps.size());
    for (size_t d : deps) consumers[d].push_back(i);
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<size_t> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    const size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.insert(c);
  }
  TRT_CHECK(order.size() == nodes.size(), ErrorCode::kInvalidArgument,
            "the graph has a cycle ({} of {} nodes cannot be ordered)", nodes.size() - order.size(),
            nodes.size());
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  for (size_t i : order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
}

void Graph::remove_dead_nodes() {
  std::unordered_set<std::string> needed;
  for (const auto& o : outputs) needed.insert(o.name);
  std::vector<bool> keep(nodes.size(), false);
  for (size_t k = nodes.size(); k-- > 0;) {
    const Node& n = nodes[k];
    const bool used = std::any_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& o) {
      return !o.empty() && needed.count(o);
    });
    if (!used) continue;
    keep[k] = true;
    for (const auto& in : n.inputs)
      if (!in.empty()) needed.insert(in);
    for (const auto& in : n.implicit_inputs()) needed.insert(in);
  }
  std::vector<Node> kept;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (keep[k]) kept.push_back(std::move(nodes[k]));
  nodes = std::move(kept);
  for (auto it = initializers.begin(); it != initializers.end();) {
    const bool is_input = std::any_of(inputs.begin(), inputs.end(),
                                      [&](const ValueInfo& v) { return v.name == it->first; });
    if (!needed.count(it->first) && !is_input) {
      it = initializers.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = value_info.begin(); it != value_info.end();) {
    if (!needed.count(it->first)) {
      it = value_info.erase(it);
    } else {
      ++it;
    }
  }
}

std::string Graph::unique_name(const std::string& prefix) const {
  std::unordered_set<std::string> used;
  for (const auto& n : nodes) {
    used.insert(n.name);
    for (const auto& o : n.outputs) used.insert(o);
  }
  for (const auto& v : inputs) used.insert(v.name);
  for (const auto& [n, t] : initializers) used.insert(n);
  if (!used.count(prefix)) return prefix;
  for (int i = 1;; ++i) {
    std::string c = prefix + "_" + std::to_string(i);
    if (!used.count(c)) return c;
  }
}

int64_t Model::opset() const {
  for (const auto& o : opset_imports)
    if (o.domain.empty() || o.domain == "ai.onnx") return o.version;
  return 0;
}

}  // namespace trtutils::ir
