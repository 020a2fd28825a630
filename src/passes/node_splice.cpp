// splice_nodes (passes.h): the last step of the fusion passes.
#include "passes/passes.h"

namespace trtutils::passes {

void splice_nodes(ir::Graph& graph, std::unordered_map<size_t, ir::Node>& replacement,
                  const std::vector<bool>& removed) {
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (auto it = replacement.find(i); it != replacement.end())
      kept.push_back(std::move(it->second));
    else if (!removed[i])
      kept.push_back(std::move(graph.nodes[i]));
  }
  graph.nodes = std::move(kept);
}

}  // namespace trtutils::passes
