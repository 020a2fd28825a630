// LayerNormalization and its quantizer into com.trtutils.cuda::LayerNormQuantize, or into the
// epilogue of the QGemm computing its input (patterns.h).
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/patterns.h"
#include "ops/qlinear_ops.h"

namespace trtutils::cuda::fusion {

namespace {

// The com.trtutils::QGemm that computes the LayerNormalization ln's input as float32 rows
// (the residual stream: no output quantizer, activation or split; its epilogue may transpose
// the rows and add the residual) when ln's Scale / B are float32 constants of its N values and
// quantizer qi's zero point is an int8 / uint8 / float8 constant, else SIZE_MAX. The layer norm
// and the quantizer then run in the product's epilogue (QGemmLnInput): the normalised rows
// come from the sums in registers instead of a second pass reading them back.
// TRTUTILS_CUDA_LN_EPILOGUE=0: never.
size_t qgemm_before_layer_norm(const FusionGraph& fg, const ir::Node& ln, size_t qi) {
  if (!switch_on("TRTUTILS_CUDA_LN_EPILOGUE")) return SIZE_MAX;
  auto it = fg.producer.find(ln.inputs[0]);
  if (it == fg.producer.end() || fg.removed[it->second]) return SIZE_MAX;
  const ir::Node& g = fg.graph.nodes[it->second];
  if (g.domain != "com.trtutils" || g.op_type != "QGemm" || g.outputs.size() != 1 ||
      g.inputs.size() > ops::qlinear::kNumInputs)
    return SIZE_MAX;
  for (const char* a : {"activation", "gelu", "y_split", "part_scales"})
    if (g.attributes.count(a)) return SIZE_MAX;
  if (g.inputs.size() > ops::qlinear::kYScale && !g.inputs[ops::qlinear::kYScale].empty())
    return SIZE_MAX;
  const int64_t n = qgemm_columns(fg, g);
  if (n < 0) return SIZE_MAX;
  for (size_t k = 1; k < 3; ++k) {
    if (k == 2 && !ln.has_input(2)) continue;
    const Tensor* t = fg.graph.initializer(ln.inputs[k]);
    if (!t || t->dtype() != DataType::kFloat32 || t->numel() != n) return SIZE_MAX;
  }
  const Tensor* zp = fg.graph.initializer(fg.graph.nodes[qi].inputs[2]);
  const DataType zt = zp ? zp->dtype() : DataType::kUndefined;
  if (zt != DataType::kInt8 && zt != DataType::kUInt8 && zt != DataType::kFloat8E4M3FN &&
      zt != DataType::kFloat8E5M2)
    return SIZE_MAX;
  return it->second;
}

}  // namespace

// LayerNormalization over the last axis (Mean / InvStdDev unused) [-> Transpose(1, 0, 2)] ->
// QuantizeLinear per tensor  => com.trtutils.cuda::LayerNormQuantize (X, Scale, B, y_scale,
// y_zero_point; epsilon, swap01): the normalised rows go out as quantized bytes, transposed on
// the way, instead of float32 rows that a Transpose and a quantizer read back (the input of a
// quantized transformer's QKV and MLP projections).
size_t fuse_layer_norm_quantize(FusionGraph& fg, size_t i) {
  const ir::Node& ln = fg.graph.nodes[i];
  if (ln.inputs.size() < 2 || ln.outputs.empty()) return 0;
  for (size_t o = 1; o < ln.outputs.size(); ++o)
    if (!ln.outputs[o].empty() &&
        (fg.readers.count(ln.outputs[o]) || fg.graph_outputs.count(ln.outputs[o])))
      return 0;
  const int64_t rank = fg.rank_of(ln.inputs[0]);
  const int64_t axis = ln.attr_int("axis", -1);
  if (rank < 1 || (axis != -1 && axis != rank - 1)) return 0;
  std::vector<size_t> chain{i};
  std::string y = ln.outputs[0];
  int64_t swap = 0;
  const size_t t = fg.only_reader(y);
  if (t != SIZE_MAX && rank == 3 && swaps_leading(fg.graph.nodes[t])) {
    chain.push_back(t);
    y = fg.graph.nodes[t].outputs[0];
    swap = 1;
  }
  const size_t qi = per_tensor_quantizer_of(fg, y);
  if (qi == SIZE_MAX) return 0;
  chain.push_back(qi);
  if (const size_t p = qgemm_before_layer_norm(fg, ln, qi); p != SIZE_MAX) {
    ir::Node& g = fg.graph.nodes[p];
    g.inputs.resize(kLnNumInputs);
    g.inputs[kLnScale] = ln.inputs[1];
    g.inputs[kLnBias] = ln.has_input(2) ? ln.inputs[2] : "";
    g.inputs[kLnYScale] = fg.graph.nodes[qi].inputs[1];
    g.inputs[kLnYZeroPoint] = fg.graph.nodes[qi].inputs[2];
    set_float(g, "ln_epsilon", ln.attr_float("epsilon", 1e-5f));
    set_int(g, "ln_swap01", swap);
    g.outputs.push_back(fg.graph.nodes[qi].outputs[0]);
    fg.producer[fg.graph.nodes[qi].outputs[0]] = p;
    for (size_t c : chain) fg.removed[c] = true;
    fg.last_fused = p;
    return 1;
  }
  ir::Node f;
  f.name = ln.name;
  f.op_type = "LayerNormQuantize";
  f.domain = kGpuDomain;
  f.inputs = {ln.inputs[0], ln.inputs[1], ln.has_input(2) ? ln.inputs[2] : "",
              fg.graph.nodes[qi].inputs[1], fg.graph.nodes[qi].inputs[2]};
  f.outputs = fg.graph.nodes[qi].outputs;
  set_float(f, "epsilon", ln.attr_float("epsilon", 1e-5f));
  set_int(f, "swap01", swap);
  return fg.place(std::move(f), chain);
}

}  // namespace trtutils::cuda::fusion
