// The order, and why:
// 1. shape inference first, so that Shape/Size of static values are known constants;
// 2. constant folding, which turns Shape-driven subgraphs (Shape -> Gather -> Concat -> Reshape)
//    and weight preprocessing into initializers; folding can make more shapes static (a Reshape
//    whose target became constant), so 1-2 repeat until nothing changes;
// 3. dead-code elimination last, removing what folding left unused.
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

void run_pipeline(ir::Graph& graph, int64_t opset, const std::set<std::string>& disabled) {
  const bool fold = !disabled.count("constant_folding");
  for (int round = 0; round < 8; ++round) {
    infer_shapes(graph, opset);
    if (!fold) break;
    const size_t n = fold_constants(graph, opset);
    TRT_LOG_VERBOSE("constant folding round {}: {} nodes folded", round, n);
    if (n == 0) break;
  }
  if (!disabled.count("dead_code_elimination")) graph.remove_dead_nodes();
}

}  // namespace trtutils::passes
