// com.trtutils::PointwiseDepthwise (the CPU plan's fuse_pointwise_depthwise pass): an inverted
// residual block's expansion and depthwise convolutions as one node, so that the expanded tensor
// (6x the block's channels, the largest of the block) never travels through memory:
//   inputs  X (blocked, ops/blocked_layout.h, C channels), W [M, C, 1, 1], [B] (M),
//           W_dw [M, 1, kh, kw], [B_dw] (M); an omitted bias is the empty name;
//   output  Y (blocked) = act_dw(DepthwiseConv(act(Conv1x1(X, W) + B), W_dw) + B_dw);
//   attributes "activation" / "activation_params" (act, as FusedConv's), "dw_activation" /
//           "dw_activation_params" (act_dw), "dw_group" (M), "dw_strides", "dw_pads",
//           "dw_dilations" (the depthwise convolution's group, strides, pads and dilations).
// split_pointwise_depthwise gives the two blocked FusedConv nodes it stands for: shape inference
// and every kernel without a fused form run those.
#pragma once

#include <string>
#include <utility>

#include "ir/graph.h"

namespace trtutils::ops {

// The pointwise FusedConv (X, W, B -> `mid`) and the depthwise one (mid, W_dw, B_dw -> Y), both
// with "blocked" = 1; `mid` names the expanded tensor.
std::pair<ir::Node, ir::Node> split_pointwise_depthwise(const ir::Node& fused,
                                                        const std::string& mid);

// The fused node for a pointwise FusedConv `pw` whose output only `dw` reads (both blocked):
// inputs, activations and the depthwise geometry moved over, named after `dw`.
ir::Node join_pointwise_depthwise(const ir::Node& pw, const ir::Node& dw);

}  // namespace trtutils::ops
