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
// Then, only for graphs the CPU backend runs (run_cpu_layout_pipeline: Session, and the builder
// for --backend cpu), the CPU plan: squeeze-excitation blocks as one node (se_fusion), then its
// layout: float32 convolutions channels-last (conv_layout),
// last because it needs the fused nodes (a FusedConv's residual travels with it) and the int8
// chains' Transposes (float convolutions next to them reuse those twins); dead-code elimination
// again afterwards for the Transposes back to NCHW that nobody reads.
// Before all of them, inference Dropouts whose mask nobody reads become Identity (which every
// backend runs; exporters leave them in, e.g. torchvision's Swin with ratio 0).
#include <cstdlib>
#include <sstream>

#include "ops/tensor_shapes.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

namespace {

size_t lower_inference_dropout(ir::Graph& graph, int64_t opset) {
  std::set<std::string> read;
  for (const ir::Node& n : graph.nodes)
    for (const std::string& in : n.inputs) read.insert(in);
  for (const ir::ValueInfo& o : graph.outputs) read.insert(o.name);
  size_t lowered = 0;
  for (ir::Node& n : graph.nodes) {
    if (n.op_type != "Dropout" || !(n.domain.empty() || n.domain == "ai.onnx") || !n.has_input(0))
      continue;
    if (n.outputs.size() > 1 && !n.outputs[1].empty() && read.count(n.outputs[1])) continue;
    const bool ratio_given = n.has_input(1), training_given = n.has_input(2);
    const std::string why = ops::dropout_not_identity(
        n, opset, ratio_given, ratio_given ? graph.initializer(n.inputs[1]) : nullptr,
        training_given, training_given ? graph.initializer(n.inputs[2]) : nullptr);
    if (!why.empty()) continue;  // the kernels report it
    n.op_type = "Identity";
    n.domain.clear();
    n.inputs.resize(1);
    n.outputs.resize(1);
    n.attributes.clear();
    ++lowered;
  }
  return lowered;
}

// `disabled` plus the names in TRTUTILS_DISABLE_PASSES (comma-separated).
std::set<std::string> disabled_passes(const std::set<std::string>& disabled_in) {
  std::set<std::string> disabled = disabled_in;
  if (const char* env = std::getenv("TRTUTILS_DISABLE_PASSES")) {
    std::stringstream ss(env);
    for (std::string name; std::getline(ss, name, ',');)
      if (!name.empty()) disabled.insert(name);
  }
  return disabled;
}

}  // namespace

void run_cpu_layout_pipeline(ir::Graph& graph, const std::set<std::string>& disabled_in,
                             const CpuPlanHooks& hooks) {
  const std::set<std::string> disabled = disabled_passes(disabled_in);
  // Before the layout, on the plain graph, so that the fused block joins the channels-last
  // chain of the convolutions around it.
  if (!disabled.count("se_fusion")) fuse_squeeze_excite(graph);
  if (!disabled.count("matmul_fusion")) fuse_matmuls(graph);
  if (!disabled.count("matmul_permutes")) fold_matmul_permutes(graph, hooks.permuted_matmul);
  if (disabled.count("conv_layout")) return;
  // After conv fusion (a FusedConv's residual and activation travel with it) and after the
  // Q/DQ layout (QConv chains are channels-last already; float convs between them join in).
  size_t converted = disabled.count("blocked_layout") ? 0 : conv_blocked_layout(graph);
  converted += conv_channels_last(graph);
  if (converted && !disabled.count("dead_code_elimination")) graph.remove_dead_nodes();
  // After dead-code elimination: the FromBlocked nodes nobody reads are gone, so an expansion
  // read only by its depthwise convolution is seen as such.
  if (converted && !disabled.count("pointwise_depthwise"))
    fuse_pointwise_depthwise(graph, hooks.pointwise_depthwise);
}

void run_pipeline(ir::Graph& graph, int64_t opset, const std::set<std::string>& disabled_in) {
  const std::set<std::string> disabled = disabled_passes(disabled_in);
  const size_t dropouts = lower_inference_dropout(graph, opset);
  if (dropouts) TRT_LOG_VERBOSE("{} inference Dropout node(s) run as Identity", dropouts);
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
