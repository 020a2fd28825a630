// What the CPU plan's layout passes share (conv_layout.cpp: channels-last; conv_blocked_layout.cpp:
// blocked): shapes they accept and fresh value names while the graph's nodes are being moved.
#pragma once

#include <optional>
#include <string>
#include <unordered_set>

#include "ir/graph.h"

namespace trtutils::passes {

// v's shape when every dim is static or named (a layout pass needs the rank and the channels).
inline std::optional<ir::SymShape> static_or_named(const ir::Graph& g, const std::string& v) {
  const auto info = g.find_value_info(v);
  if (!info || !info->shape) return std::nullopt;
  for (const auto& d : *info->shape)
    if (!d.is_static() && d.param.empty()) return std::nullopt;
  return info->shape;
}

// Names unique against every name of the graph before the pass and each one made here
// (g.unique_name cannot see nodes already moved out of the graph).
class FreshNames {
 public:
  explicit FreshNames(const ir::Graph& g) {
    for (const auto& n : g.nodes) {
      used_.insert(n.name);
      used_.insert(n.outputs.begin(), n.outputs.end());
    }
    for (const auto& v : g.inputs) used_.insert(v.name);
    for (const auto& [name, t] : g.initializers) used_.insert(name);
  }
  std::string operator()(const std::string& prefix) {
    std::string c = prefix;
    for (int i = 1; !used_.insert(c).second; ++i) c = prefix + "_" + std::to_string(i);
    return c;
  }

 private:
  std::unordered_set<std::string> used_;
};

}  // namespace trtutils::passes
