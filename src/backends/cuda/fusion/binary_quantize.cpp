// A binary op of two computed values and its quantizer into com.trtutils.cuda::BinaryQuantize
// (patterns.h).
#include <utility>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/patterns.h"
#include "ir/graph_builder.h"

namespace trtutils::cuda::fusion {

// Add / Sub / Mul / Div of two computed float values (no constant operand: a scalar Mul before
// a quantizer belongs to the attention fusions) -> QuantizeLinear per tensor
//   => com.trtutils.cuda::BinaryQuantize (A, B, y_scale, y_zero_point; op): the result goes
// out as quantized bytes instead of float values that the quantizer reads back (EfficientNet's
// squeeze-excite scale before the projection, a residual sum entering a quantized layer).
size_t fuse_binary_quantize(FusionGraph& fg, size_t i) {
  const ir::Node& n = fg.graph.nodes[i];
  if (n.inputs.size() != 2 || n.outputs.size() != 1 || n.inputs[0].empty() || n.inputs[1].empty() ||
      fg.graph.initializer(n.inputs[0]) || fg.graph.initializer(n.inputs[1]))
    return 0;
  const auto vi = fg.graph.find_value_info(n.outputs[0]);
  if (!vi || !(vi->dtype == DataType::kFloat32 || vi->dtype == DataType::kFloat16 ||
               vi->dtype == DataType::kBFloat16))
    return 0;
  const size_t qi = per_tensor_quantizer_of(fg, n.outputs[0]);
  if (qi == SIZE_MAX) return 0;
  const ir::Node& q = fg.graph.nodes[qi];
  const DataType yt = fg.graph.initializer(q.inputs[2])->dtype();
  const bool fp8 = yt == DataType::kFloat8E4M3FN || yt == DataType::kFloat8E5M2;
  if (!(yt == DataType::kInt8 || yt == DataType::kUInt8 || fp8) ||
      (fp8 && fg.graph.initializer(q.inputs[2])->at_double(0) != 0.0))
    return 0;
  ir::Node f;
  f.name = n.name;
  f.op_type = "BinaryQuantize";
  f.domain = kGpuDomain;
  f.inputs = {n.inputs[0], n.inputs[1], q.inputs[1], q.inputs[2]};
  f.outputs = q.outputs;
  f.attributes["op"] = ir::attr_string("op", n.op_type);
  return fg.place(std::move(f), {i, qi});
}

}  // namespace trtutils::cuda::fusion
