// The order, and why:
// 1. shape inference first, so that Shape/Size of static values are known constants;
// 2. constant folding, which turns Shape-driven subgraphs (Shape -> Gather -> Concat -> Reshape)
//    and weight preprocessing into initializers; folding can make more shapes static (a Reshape
//    whose target became constant), so 1-2 repeat until nothing changes;
// 3. conv fusion after folding: it needs the final dtypes/static shapes (residual shape check)
//    and Clip bounds that folding may have just turned into initializers, and it must not hide
//    a Conv from folding (a FusedConv is our own op, which the folder does not evaluate);
// 4. Q/DQ fusion before conv fusion: a Conv inside a quantized island must become a QConv, not
//    a float FusedConv; like conv fusion it needs the folded constants (scales, Clip bounds);
//    then the int8 QConv chains go channels-last (qdq_layout), the int8 kernels' layout;
// 5. dead-code elimination last, removing what folding and Q/DQ fusion left unused (the
//    DequantizeLinear nodes whose readers were fused).
#include <cstdlib>
#include <sstream>

#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

void run_pipeline(ir::Graph& graph, int64_t opset, const std::set<std::string>& disabled_in) {
  std::set<std::string> disabled = disabled_in;
  if (const char* env = std::getenv("TRTUTILS_DISABLE_PASSES")) {
    std::stringstream ss(env);
    for (std::string name; std::getline(ss, name, ',');)
      if (!name.empty()) disabled.insert(name);
  }
  const bool fold = !disabled.count("constant_folding");
  for (int round = 0; round < 8; ++round) {
    infer_shapes(graph, opset);
    if (!fold) break;
    const size_t n = fold_constants(graph, opset);
    TRT_LOG_VERBOSE("constant folding round {}: {} nodes folded", round, n);
    if (n == 0) break;
  }
  if (!disabled.count("qdq_fusion")) {
    fuse_qdq(graph, opset);
    if (!disabled.count("qdq_layout")) qdq_channels_last(graph);
  }
  if (!disabled.count("conv_fusion")) fuse_convolutions(graph, opset);
  if (!disabled.count("dead_code_elimination")) graph.remove_dead_nodes();
}

}  // namespace trtutils::passes
