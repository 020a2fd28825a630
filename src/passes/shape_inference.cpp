#include <unordered_map>

#include "core/check.h"
#include "ops/op_registry.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

size_t infer_shapes(ir::Graph& graph, int64_t opset, const ShapeInferenceOptions& options) {
  std::unordered_map<std::string, ir::ValueInfo> known;
  for (const auto& v : graph.inputs) known[v.name] = v;
  for (const auto& [name, v] : graph.value_info) known[name] = v;
  for (const auto& [name, t] : graph.initializers)
    known[name] = ir::ValueInfo{name, t.dtype(), ir::sym_shape_from_static(t.shape()), {}};

  size_t updated = 0;
  const auto& registry = ops::OpRegistry::instance();
  for (const ir::Node& node : graph.nodes) {
    const ops::OpSchema* schema = registry.find(node.domain, node.op_type);
    if (!schema || !schema->infer) continue;
    ops::InferContext ctx{node, opset, {}, {}, {}};
    bool inputs_known = true;
    for (const auto& in : node.inputs) {
      if (in.empty()) {
        ctx.inputs.push_back(nullptr);
        ctx.constants.push_back(nullptr);
        continue;
      }
      auto it = known.find(in);
      if (it == known.end() || it->second.dtype == DataType::kUndefined) {
        inputs_known = false;
        break;
      }
      ctx.inputs.push_back(&it->second);
      ctx.constants.push_back(graph.initializer(in));
    }
    if (!inputs_known) continue;
    for (const auto& o : node.outputs)
      ctx.outputs.push_back(ir::ValueInfo{o, DataType::kUndefined, {}, {}});
    try {
      schema->infer(ctx);
    } catch (const Error& e) {
      // Only a graph that cannot be valid is fatal; "not supported" cases stay unknown here and
      // are decided by the backend that runs the node.
      if (options.strict && e.code() == ErrorCode::kInvalidArgument) throw;
      TRT_LOG_VERBOSE("shape inference skipped {}: {}", node.describe(), e.what());
      continue;
    }
    for (auto& out : ctx.outputs) {
      if (out.name.empty() || out.dtype == DataType::kUndefined) continue;
      auto& slot = known[out.name];
      const bool changed = slot.dtype != out.dtype || slot.shape != out.shape;
      slot = out;
      if (changed) {
        ++updated;
        // Graph outputs keep their declared names; their info is refreshed too.
        graph.value_info[out.name] = out;
      }
    }
  }
  return updated;
}

}  // namespace trtutils::passes
