// A small-channel float convolution and its quantizer into com.trtutils.cuda::ConvQuantize
// (patterns.h).
#include <cmath>
#include <utility>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/patterns.h"

namespace trtutils::cuda::fusion {

// Conv / com.trtutils::FusedConv with float32 W of at most k::kSmallCMaxChannels input
// channels (one group, 2-D) -> QuantizeLinear (scalar constant scale > 0 and zero point,
// saturating), the only reader  => com.trtutils.cuda::ConvQuantize: inputs X, W, B, R ("" where
// absent), y_scale[, y_zero_point]; the convolution's attributes plus the QuantizeLinear's
// output_dtype. The stem of a Q/DQ image model (left in float by the quantizer) then writes its
// int8 output directly instead of 4-byte floats that a second kernel reads back.
size_t fuse_conv_quantize(FusionGraph& fg, size_t i) {
  const ir::Node& c = fg.graph.nodes[i];
  if (c.outputs.size() != 1 || c.inputs.size() < 2 || c.inputs.size() > 4) return 0;
  const Tensor* w = fg.graph.initializer(c.inputs[1]);
  if (!w || w->dtype() != DataType::kFloat32 || w->rank() != 4 ||
      w->dim(1) > k::kSmallCMaxChannels || c.attr_int("group", 1) != 1)
    return 0;
  const size_t qi = fg.only_reader(c.outputs[0]);
  if (qi == SIZE_MAX) return 0;
  const ir::Node& q = fg.graph.nodes[qi];
  if (q.op_type != "QuantizeLinear" || !default_domain(q) || q.inputs.size() < 2 ||
      q.inputs[0] != c.outputs[0] || q.outputs.size() != 1 || q.attr_int("saturate", 1) != 1)
    return 0;
  const float scale = fg.scalar(q.inputs[1]);
  if (!(scale > 0.0f) || std::isinf(scale)) return 0;
  if (q.has_input(2)) {
    const Tensor* zp = fg.graph.initializer(q.inputs[2]);
    if (!zp || zp->numel() != 1) return 0;
  }
  ir::Node f;
  f.name = c.name;
  f.op_type = "ConvQuantize";
  f.domain = kGpuDomain;
  f.inputs = c.inputs;
  f.inputs.resize(4);
  f.inputs.push_back(q.inputs[1]);
  if (q.has_input(2)) f.inputs.push_back(q.inputs[2]);
  f.outputs = q.outputs;
  f.attributes = c.attributes;
  auto od = q.attributes.find("output_dtype");
  if (od != q.attributes.end()) f.attributes["output_dtype"] = od->second;
  return fg.place(std::move(f), {i, qi});
}

}  // namespace trtutils::cuda::fusion
