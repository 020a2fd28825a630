// The GPU fusion of a standalone BatchNormalization with what follows it (pre-activation
// networks: DenseNet's BN -> ReLU -> QuantizeLinear before every convolution, BN after a Concat
// that no convolution can absorb):
//   BatchNormalization (inference) [-> Relu | Clip | LeakyRelu | Sigmoid | HardSwish]
//     [-> QuantizeLinear per tensor: scalar constant scale > 0, int8 / uint8 / float8 zero point]
//                                   => com.trtutils.cuda::BatchNormAct (ops_elementwise.cpp)
// with at least one of the two tails, and with the Concat on the channel axis that feeds the BN
// when the BN is its only reader (DenseNet: every dense layer and transition starts with
// Concat -> BN -> ReLU): its inputs lead the fused node's (attribute concat_inputs) and the
// concatenation is never written. Each value fused away has one reader and is no graph output.
// One pass over the activations instead of up to four (the int8 bytes written directly).
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/fusion_graph.h"
#include "backends/cuda/kernels.h"
#include "ir/graph_builder.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils::cuda {

namespace {

bool inference_batchnorm(const ir::Graph& g, const ir::Node& n) {
  if (!passes::is_default_domain(n) || n.op_type != "BatchNormalization" || n.inputs.size() != 5 ||
      n.attr_int("training_mode", 0) != 0 || n.outputs.empty() || n.outputs[0].empty())
    return false;
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (!n.outputs[o].empty()) return false;
  for (size_t i = 1; i < 5; ++i)
    if (!g.initializer(n.inputs[i])) return false;
  return true;
}

// A per-tensor QuantizeLinear of v the BatchNormAct kernel computes exactly.
bool fusable_quantizer(const ir::Graph& g, const ir::Node& q, const std::string& v) {
  if (!passes::is_default_domain(q) || q.op_type != "QuantizeLinear" || q.inputs.size() != 3 ||
      q.inputs[0] != v || q.outputs.size() != 1 || q.attr_int("saturate", 1) != 1)
    return false;
  const Tensor* s = g.initializer(q.inputs[1]);
  const Tensor* z = g.initializer(q.inputs[2]);
  if (!s || !z || s->numel() != 1 || z->numel() != 1) return false;
  const double sv = s->at_double(0);
  if (!(sv > 0.0) || std::isinf(sv)) return false;
  const DataType t = z->dtype();
  const bool fp8 = t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E5M2;
  return t == DataType::kInt8 || t == DataType::kUInt8 || (fp8 && z->at_double(0) == 0.0);
}

// The Concat on axis 1 producing v, read by nothing else and no graph output, with at most
// k::ConcatSources::kMax inputs (none omitted; one is a copy, as DenseNet's first dense layers
// write): its index, else SIZE_MAX.
size_t channel_concat_of(const fusion::FusionGraph& fg, const std::string& v) {
  const auto p = fg.producer.find(v);
  if (p == fg.producer.end() || fg.removed[p->second] || fg.only_reader(v) == SIZE_MAX ||
      fg.graph_outputs.count(v))
    return SIZE_MAX;
  const ir::Node& c = fg.graph.nodes[p->second];
  if (!passes::is_default_domain(c) || c.op_type != "Concat" || c.attr_int("axis", 0) != 1 ||
      c.inputs.empty() || c.inputs.size() > static_cast<size_t>(k::ConcatSources::kMax))
    return SIZE_MAX;
  for (const std::string& in : c.inputs)
    if (in.empty()) return SIZE_MAX;
  return p->second;
}

}  // namespace

size_t fuse_batchnorm_act(ir::Graph& g, int64_t opset, std::map<std::string, FusedInto>* absorbed) {
  fusion::FusionGraph fg(g, opset);  // readers (If / Loop bodies' too), graph outputs
  std::vector<bool>& removed = fg.removed;
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (removed[i] || !inference_batchnorm(g, g.nodes[i])) continue;
    std::vector<size_t> chain{i};
    std::string y = g.nodes[i].outputs[0];
    ir::Node f;
    const size_t a = fg.only_reader(y);
    if (a != SIZE_MAX && !removed[a]) {
      if (auto act = passes::as_activation(g, g.nodes[a], opset);
          act && g.nodes[a].inputs[0] == y) {
        passes::set_fused_activation(f, act->name, act->params);
        chain.push_back(a);
        y = g.nodes[a].outputs[0];
      }
    }
    const size_t q = fg.only_reader(y);
    const bool quantize = q != SIZE_MAX && !removed[q] && fusable_quantizer(g, g.nodes[q], y);
    if (quantize) chain.push_back(q);
    const size_t cat = channel_concat_of(fg, g.nodes[i].inputs[0]);
    if (chain.size() == 1 && cat == SIZE_MAX) continue;
    const ir::Node& bn = g.nodes[i];
    f.name = bn.name;
    f.op_type = "BatchNormAct";
    f.domain = kGpuDomain;
    f.inputs = bn.inputs;
    if (cat != SIZE_MAX) {
      const std::vector<std::string>& parts = g.nodes[cat].inputs;
      f.inputs.erase(f.inputs.begin());
      f.inputs.insert(f.inputs.begin(), parts.begin(), parts.end());
      if (parts.size() > 1) fusion::set_int(f, "concat_inputs", static_cast<int64_t>(parts.size()));
      chain.insert(chain.begin(), cat);
    }
    if (quantize) f.inputs.insert(f.inputs.end(), {g.nodes[q].inputs[1], g.nodes[q].inputs[2]});
    f.outputs = g.nodes[chain.back()].outputs;
    f.attributes["epsilon"] = ir::attr_float("epsilon", bn.attr_float("epsilon", 1e-5f));
    if (absorbed)
      for (size_t c : chain)
        if (!g.nodes[c].name.empty()) (*absorbed)[g.nodes[c].name] = FusedInto{f.op_type, f.name};
    for (size_t c : chain) removed[c] = true;
    g.nodes[chain.back()] = std::move(f);
    removed[chain.back()] = false;
    ++fused;
  }
  if (!fused) return 0;
  std::vector<ir::Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  TRT_LOG_VERBOSE(
      "cuda fusion: {} [Concat +] BatchNormalization + activation / quantize chain(s) fused",
      fused);
  return fused;
}

}  // namespace trtutils::cuda
