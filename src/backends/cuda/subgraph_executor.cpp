// A control-flow body as a model of its own (contract: subgraph_executor.h). The planning and
// running of the body are the executor's own (cuda_executor.cpp).
#include "backends/cuda/subgraph_executor.h"

#include "ir/graph_builder.h"

namespace trtutils::cuda {

namespace {

// The names `body` reads from the scopes around it (sorted): Node::implicit_inputs of a node
// holding only this body.
std::vector<std::string> outer_reads(const ir::Graph& body) {
  ir::Node holder;
  holder.attributes["body"] = ir::attr_graph("body", body);
  return holder.implicit_inputs();
}

}  // namespace

BodyModel make_body_model(const ir::Graph& body, const std::vector<ir::OpsetImport>& opsets,
                          const OuterScope& outer, const std::vector<size_t>& host_formals) {
  BodyModel b;
  b.model.opset_imports = opsets;
  b.model.graph = body;
  ir::Graph& g = b.model.graph;
  for (size_t k : host_formals)
    if (k < g.inputs.size()) b.host_inputs.insert(g.inputs[k].name);
  for (const std::string& name : outer_reads(body)) {
    if (const Tensor* t = outer.constant(name)) {
      g.initializers[name] = *t;
      continue;
    }
    std::optional<ir::ValueInfo> vi = outer.info(name);
    if (!vi) vi.emplace();
    vi->name = name;
    g.inputs.push_back(std::move(*vi));
    b.outer_inputs.push_back(name);
    if (outer.on_host(name)) b.host_inputs.insert(name);
  }
  return b;
}

ExecutorOptions body_options(const ExecutorOptions& parent) {
  ExecutorOptions o = parent;
  o.profile = false;
  o.cuda_graph = false;
  o.no_data_transfers = false;
  o.timing_cache.clear();
  return o;
}

}  // namespace trtutils::cuda
