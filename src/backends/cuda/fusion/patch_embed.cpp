// A vision transformer's patch embedding into com.trtutils.cuda::PatchEmbed (patterns.h).
#include <utility>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/patterns.h"

namespace trtutils::cuda::fusion {

// Conv with kernel = stride (2-D, no padding, dilation 1, one group, constant W: a vision
// transformer's patch embedding) -> Reshape to [N, K, P] -> Transpose(0, 2, 1), each the only
// reader of the one before  => com.trtutils.cuda::PatchEmbed (X, W[, B]): Y [N, P, K] =
// patches(X) W^T + B, one matrix product over all N * P patches written in the Transpose's
// order (the unfused chain: one product per image into [N, K, P], a bias pass, then a
// transposing copy of the result).
// TRTUTILS_CUDA_PATCH_EMBED=0: left as it is.
size_t fuse_patch_embed(FusionGraph& fg, size_t i) {
  if (!switch_on("TRTUTILS_CUDA_PATCH_EMBED")) return 0;
  const ir::Node& c = fg.graph.nodes[i];
  if (!default_domain(c) || c.op_type != "Conv" || c.outputs.size() != 1 || c.inputs.size() < 2 ||
      c.inputs.size() > 3 || c.attr_int("group", 1) != 1)
    return 0;
  auto ap = c.attributes.find("auto_pad");
  if (ap != c.attributes.end() && ap->second.s != "NOTSET") return 0;
  const Tensor* w = fg.graph.initializer(c.inputs[1]);
  if (!w || w->rank() != 4 ||
      (w->dtype() != DataType::kFloat32 && w->dtype() != DataType::kFloat16))
    return 0;
  const std::vector<int64_t> kernel{w->dim(2), w->dim(3)};
  auto ints_or = [&](const char* name, std::vector<int64_t> def) {
    auto it = c.attributes.find(name);
    return it == c.attributes.end() ? def : it->second.ints;
  };
  if (ints_or("kernel_shape", kernel) != kernel || ints_or("strides", {1, 1}) != kernel ||
      ints_or("dilations", {1, 1}) != std::vector<int64_t>{1, 1} ||
      ints_or("pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0})
    return 0;
  const size_t ri = fg.only_reader(c.outputs[0]);
  if (ri == SIZE_MAX) return 0;
  const ir::Node& r = fg.graph.nodes[ri];
  if (r.op_type != "Reshape" || !default_domain(r) || r.inputs.empty() ||
      r.inputs[0] != c.outputs[0] || r.outputs.size() != 1)
    return 0;
  const size_t ti = fg.only_reader(r.outputs[0]);
  if (ti == SIZE_MAX) return 0;
  const ir::Node& t = fg.graph.nodes[ti];
  if (t.op_type != "Transpose" || !default_domain(t) || t.outputs.size() != 1 ||
      perm_of(t) != std::vector<int64_t>{0, 2, 1})
    return 0;
  // The Reshape merges the convolution's spatial axes and keeps the batch and the channels.
  const auto ci = fg.graph.find_value_info(c.outputs[0]);
  const auto rsi = fg.graph.find_value_info(r.outputs[0]);
  if (!ci || !rsi || !ci->shape || !rsi->shape || ci->shape->size() != 4 || rsi->shape->size() != 3)
    return 0;
  const ir::SymShape& cs = *ci->shape;
  const ir::SymShape& rs = *rsi->shape;
  if (!cs[2].is_static() || !cs[3].is_static() || !(rs[0] == cs[0]) || rs[1].value != w->dim(0) ||
      rs[2].value != cs[2].value * cs[3].value)
    return 0;
  ir::Node f;
  f.name = c.name;
  f.op_type = "PatchEmbed";
  f.domain = kGpuDomain;
  f.inputs = c.inputs;
  f.outputs = t.outputs;
  return fg.place(std::move(f), {i, ri, ti});
}

}  // namespace trtutils::cuda::fusion
