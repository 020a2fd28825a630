#include <unordered_set>

#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "ops/tensor_shapes.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::passes {

namespace {

// Shape / Size of a value whose shape is fully static is a constant even though the value is not.
bool fold_shape_query(ir::Graph& graph, const ir::Node& node, int64_t opset) {
  if (node.domain.size() || (node.op_type != "Shape" && node.op_type != "Size")) return false;
  if (!node.has_input(0) || node.outputs.empty()) return false;
  const auto info = graph.find_value_info(node.inputs[0]);
  if (!info || !info->shape || !ir::sym_shape_is_static(*info->shape)) return false;
  const Shape shape = ir::sym_shape_to_static(*info->shape);
  Tensor out;
  if (node.op_type == "Size") {
    out = Tensor(DataType::kInt64, {});
    *out.data<int64_t>() = shape_numel(shape);
  } else {
    const ops::DimRange r = ops::shape_op_range(node, opset, static_cast<int64_t>(shape.size()));
    const int64_t n = std::max<int64_t>(r.end - r.start, 0);
    out = Tensor(DataType::kInt64, {n});
    for (int64_t i = 0; i < n; ++i) out.data<int64_t>()[i] = shape[r.start + i];
  }
  graph.initializers[node.outputs[0]] = out;
  return true;
}

}  // namespace

size_t fold_constants(ir::Graph& graph, int64_t opset, const ConstantFoldingOptions& options) {
  std::unordered_set<std::string> graph_outputs;
  for (const auto& o : graph.outputs) graph_outputs.insert(o.name);
  size_t folded = 0;
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size());
  for (ir::Node& node : graph.nodes) {
    bool done = false;
    if (!options.keep_ops.count(node.op_type)) {
      done = fold_shape_query(graph, node, opset);
      bool all_const = !done && node.domain.empty() && !node.outputs.empty();
      std::vector<const Tensor*> inputs;
      for (const auto& in : node.inputs) {
        if (!all_const) break;
        if (in.empty()) {
          inputs.push_back(nullptr);
          continue;
        }
        const Tensor* t = graph.initializer(in);
        if (!t) all_const = false;
        inputs.push_back(t);
      }
      if (all_const) {
        try {
          std::vector<Tensor> outs = cpu::run_node(node, opset, inputs);
          size_t bytes = 0;
          for (const auto& t : outs) bytes += t.nbytes();
          if (bytes <= options.max_output_bytes) {
            for (size_t i = 0; i < outs.size(); ++i)
              if (!node.outputs[i].empty())
                graph.initializers[node.outputs[i]] = std::move(outs[i]);
            done = true;
          }
        } catch (const Error& e) {
          // Not foldable here (unsupported op or dtype): the runtime will report it if it matters.
          TRT_LOG_VERBOSE("constant folding skipped {}: {}", node.describe(), e.what());
        }
      }
    }
    if (done) {
      ++folded;
    } else {
      kept.push_back(std::move(node));
    }
  }
  graph.nodes = std::move(kept);
  return folded;
}

}  // namespace trtutils::passes
