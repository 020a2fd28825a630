// com.trtutils::PointwiseDepthwise (ops/pointwise_depthwise.h): oneDNN's fused kernel where it has
// one for the problem, else the two blocked FusedConv nodes the node stands for, in turn.
#include <optional>

#include "backends/cpu/nn_kernels.h"
#include "ops/blocked_layout.h"
#include "ops/nn_geometry.h"
#include "ops/pointwise_depthwise.h"

namespace trtutils::cpu::nn {

namespace {

ConvPostOps activation_of(const ir::Node& conv) {
  const ops::FusedActivationAttr a = ops::read_fused_activation(conv);
  ConvPostOps post;
  post.act = a.kind;
  post.alpha = a.alpha;
  post.beta = a.beta;
  return post;
}

bool is_float32(const Tensor* t, size_t rank) {
  return t && t->dtype() == DataType::kFloat32 && t->rank() == rank;
}

// The fused problem for X (blocked) and the weights' shapes when they are what the node promises
// (else the two convolutions run, and they report what is wrong).
std::optional<PointwiseDepthwiseProblem> problem_of(const Shape& x, const Shape& w,
                                                    const Shape& w_dw, const ir::Node& pw,
                                                    const ir::Node& dw) {
  if (x.size() != 5 || w.size() != 4 || w_dw.size() != 4) return std::nullopt;
  PointwiseDepthwiseProblem p;
  p.batch = x[0];
  p.in_channels = w[1];
  p.channels = w[0];
  p.height = x[2];
  p.width = x[3];
  if (x[1] != ops::channel_blocks(p.in_channels) || x[4] != ops::kChannelBlock || w[2] != 1 ||
      w[3] != 1 || w_dw[0] != p.channels || w_dw[1] != 1 || dw.attr_int("group", 1) != p.channels)
    return std::nullopt;
  const std::vector<int64_t> wk{w_dw[2], w_dw[3]};
  const ops::WindowSpec ws = ops::read_window_spec(dw, 2, &wk);
  if (ws.auto_pad != ops::AutoPad::kNotSet) return std::nullopt;
  const int64_t in[2] = {p.height, p.width};
  int64_t out[2];
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = ws.kernel[i];
    p.stride[i] = ws.strides[i];
    p.dilation[i] = ws.dilations[i];
    p.pad_begin[i] = ws.pads[i];
    p.pad_end[i] = ws.pads[i + 2];
    const int64_t span = (p.kernel[i] - 1) * p.dilation[i] + 1;
    out[i] = (in[i] + p.pad_begin[i] + p.pad_end[i] - span) / p.stride[i] + 1;
    if (out[i] < 1) return std::nullopt;
  }
  p.out_height = out[0];
  p.out_width = out[1];
  p.pointwise = activation_of(pw);
  p.depthwise = activation_of(dw);
  return p;
}

std::optional<PointwiseDepthwiseProblem> problem_of(const KernelContext& ctx, const ir::Node& pw,
                                                    const ir::Node& dw) {
  const Tensor* x = ctx.inputs[0];
  const Tensor* w = ctx.has_input(1) ? ctx.inputs[1] : nullptr;
  const Tensor* w_dw = ctx.has_input(3) ? ctx.inputs[3] : nullptr;
  if (!is_float32(x, 5) || !is_float32(w, 4) || !is_float32(w_dw, 4)) return std::nullopt;
  for (size_t i : {2, 4})
    if (ctx.has_input(i) && !is_float32(ctx.inputs[i], 1)) return std::nullopt;
  return problem_of(x->shape(), w->shape(), w_dw->shape(), pw, dw);
}

bool run_fused(KernelContext& ctx, const ir::Node& pw, const ir::Node& dw) {
  const auto p = problem_of(ctx, pw, dw);
  if (!p || p->batch == 0) return false;
  Tensor y = Tensor::uninitialized(
      DataType::kFloat32,
      ops::blocked_shape(Shape{p->batch, p->channels, p->out_height, p->out_width}));
  const Tensor* b = ctx.has_input(2) ? ctx.inputs[2] : nullptr;
  const Tensor* b_dw = ctx.has_input(4) ? ctx.inputs[4] : nullptr;
  if (!onednn_pointwise_depthwise(*p, ctx.input(0), ctx.input(1), b, ctx.input(3), b_dw, y,
                                  ctx.input_is_constant(1) && ctx.input_is_constant(3)))
    return false;
  ctx.outputs.at(0) = std::move(y);
  return true;
}

}  // namespace

bool pointwise_depthwise_native(const ir::Graph& g, const ir::Node& fused) {
  if (fused.inputs.size() < 4) return false;
  const auto xs = g.static_shape(fused.inputs[0]);
  const Tensor* w = g.initializer(fused.inputs[1]);
  const Tensor* w_dw = g.initializer(fused.inputs[3]);
  if (!xs || !w || !w_dw) return false;
  const auto [pw, dw] = ops::split_pointwise_depthwise(fused, fused.name + "/expanded");
  const auto p = problem_of(*xs, w->shape(), w_dw->shape(), pw, dw);
  const bool dw_bias = fused.inputs.size() > 4 && !fused.inputs[4].empty();
  return p && onednn_pointwise_depthwise_native(*p, !fused.inputs[2].empty(), dw_bias);
}

void pointwise_depthwise_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const auto [pw, dw] = ops::split_pointwise_depthwise(node, node.name + "/expanded");
  if (!ctx.use_reference && run_fused(ctx, pw, dw)) return;
  auto in = [&](size_t i) { return ctx.has_input(i) ? ctx.inputs[i] : nullptr; };
  auto constant = [&](size_t i) { return ctx.has_input(i) && ctx.input_is_constant(i); };
  KernelContext first{pw,         ctx.opset,         {in(0), in(1), in(2)},
                      {Tensor()}, ctx.use_reference, {false, constant(1), constant(2)},
                      {}};
  fused_conv_kernel(first);
  KernelContext second{dw,         ctx.opset,         {&first.outputs.at(0), in(3), in(4)},
                       {Tensor()}, ctx.use_reference, {false, constant(3), constant(4)},
                       {}};
  fused_conv_kernel(second);
  ctx.outputs.at(0) = std::move(second.outputs.at(0));
}

}  // namespace trtutils::cpu::nn
