// Shape/type inference for the nn op family: Conv, ConvTranspose, Gemm, MatMul, the pools and
// the normalisations. Window geometry comes from ops/nn_geometry.h, shared with the kernels.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "core/check.h"
#include "ops/blocked_layout.h"
#include "ops/nn_geometry.h"
#include "ops/op_registry.h"
#include "ops/permuted_matmul.h"
#include "ops/pointwise_depthwise.h"

namespace trtutils::ops {

namespace {

using ir::Dim;
using ir::SymShape;

bool known(const Dim& d) {
  return d.is_static();
}

// Input shape of rank >= min_rank, or nullptr when the rank is unknown.
const SymShape* shape_of(InferContext& ctx, size_t i, size_t min_rank, const char* what) {
  const auto& s = ctx.input_shape(i);
  if (!s) return nullptr;
  TRT_CHECK_ARG(s->size() >= min_rank, "{}: {} must have rank >= {}, got shape {}",
                ctx.node.describe(), what, min_rank, ir::sym_shape_str(*s));
  return &*s;
}

void check_dims_match(const ir::Node& node, const Dim& a, const Dim& b, const char* what) {
  TRT_CHECK_ARG(!known(a) || !known(b) || a.value == b.value, "{}: {} mismatch ({} vs {})",
                node.describe(), what, a.value, b.value);
}

void infer_conv(InferContext& ctx, bool transpose) {
  const ir::Node& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  TRT_CHECK_ARG(ctx.has_input(1), "{}: weights input W is required", node.describe());
  const SymShape* x = shape_of(ctx, 0, 3, "input X");
  const SymShape* w = shape_of(ctx, 1, 3, "weights W");
  const int64_t group = node.attr_int("group", 1);
  TRT_CHECK_ARG(group >= 1, "{}: group {} must be positive", node.describe(), group);
  size_t nsp = x ? x->size() - 2 : (w ? w->size() - 2 : 0);
  if (x && w)
    TRT_CHECK_ARG(x->size() == w->size(), "{}: X {} and W {} must have the same rank",
                  node.describe(), ir::sym_shape_str(*x), ir::sym_shape_str(*w));
  std::vector<int64_t> wk(nsp, -1);
  if (w)
    for (size_t i = 0; i < nsp; ++i) wk[i] = (*w)[2 + i].is_static() ? (*w)[2 + i].value : -1;
  if (!x) {
    if (nsp) (void)read_window_spec(node, nsp, &wk);  // validates the attributes
    ctx.set_output(0, dt, std::nullopt);
    return;
  }
  const WindowSpec ws = read_window_spec(node, nsp, &wk);
  SymShape out(nsp + 2);
  out[0] = (*x)[0];
  if (w) {
    const Dim& wc = transpose ? (*w)[0] : (*w)[1];  // input channels (per group for Conv)
    if (transpose) {
      check_dims_match(node, (*x)[1], wc, "input channels of X and W");
      if (known((*w)[1])) out[1] = Dim((*w)[1].value * group);
    } else {
      if (known((*x)[1]) && known(wc))
        TRT_CHECK_ARG((*x)[1].value == wc.value * group,
                      "{}: X has {} channels but W expects {} x group {}", node.describe(),
                      (*x)[1].value, wc.value, group);
      out[1] = (*w)[0];
      if (known((*w)[0]))
        TRT_CHECK_ARG((*w)[0].value % group == 0,
                      "{}: output channels {} are not divisible by group {}", node.describe(),
                      (*w)[0].value, group);
    }
  }
  for (size_t i = 0; i < nsp; ++i) {
    const Dim& in = (*x)[2 + i];
    if (transpose && !ws.output_shape.empty()) {
      out[2 + i] = Dim(ws.output_shape[i]);
    } else if (in.is_static() && ws.kernel[i] > 0) {
      out[2 + i] = Dim(transpose ? conv_transpose_axis(ws, i, in.value, node).out
                                 : conv_axis(ws, i, in.value, node).out);
    }
  }
  ctx.set_output(0, dt, out);
}

// MaxPool / AveragePool. A MaxPool with "channels_last" = 1 (the CPU's conv_layout pass) has X
// and Y as [N, spatial..., C]; with "blocked" = 1 (conv_blocked_layout) as [N, C / 16,
// spatial..., 16].
void infer_pool(InferContext& ctx) {
  const ir::Node& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const SymShape* x = shape_of(ctx, 0, 3, "input X");
  const bool last = node.attr_int("channels_last", 0) != 0;
  const bool blocked = node.attr_int("blocked", 0) != 0;
  std::optional<SymShape> out;
  if (x) {
    const size_t nsp = x->size() - (blocked ? 3 : 2);
    const WindowSpec ws = read_window_spec(node, nsp, nullptr);
    const size_t sp0 = last ? 1 : 2;  // the first spatial axis
    out = last ? SymShape{(*x)[0]} : SymShape{(*x)[0], (*x)[1]};
    for (size_t i = 0; i < nsp; ++i) {
      const Dim& in = (*x)[sp0 + i];
      out->push_back(in.is_static() ? Dim(conv_axis(ws, i, in.value, node).out) : Dim());
    }
    if (last || blocked) out->push_back(x->back());
  }
  ctx.set_output(0, dt, out);
  if (ctx.outputs.size() > 1) ctx.set_output(1, DataType::kInt64, out);  // MaxPool Indices
}

// GlobalAveragePool / GlobalMaxPool. With "channels_last" = 1 (the CPU's conv_layout pass) X is
// [N, spatial..., C] and Y stays [N, C, 1...]: the same bytes either way. With "blocked" = 1
// (conv_blocked_layout) X is [N, C / 16, spatial..., 16] and Y [N, C, 1...], C the attribute
// "channels".
void infer_global_pool(InferContext& ctx) {
  const SymShape* x = shape_of(ctx, 0, 3, "input X");
  const bool last = ctx.node.attr_int("channels_last", 0) != 0;
  const bool blocked = ctx.node.attr_int("blocked", 0) != 0;
  std::optional<SymShape> out;
  if (x) {
    out = SymShape(x->size() - (blocked ? 1 : 0), Dim(1));
    (*out)[0] = (*x)[0];
    (*out)[1] = blocked ? Dim(ctx.node.attr_int("channels", -1)) : last ? x->back() : (*x)[1];
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_same_as_input(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
}

void infer_batchnorm(InferContext& ctx) {
  TRT_CHECK(ctx.node.attr_int("training_mode", 0) == 0, ErrorCode::kNotSupported,
            "{}: training_mode=1 is not supported (inference only); export the model in eval "
            "mode",
            ctx.node.describe());
  (void)shape_of(ctx, 0, 2, "input X");
  infer_same_as_input(ctx);
  // Optional running/saved mean and var outputs mirror the mean/var inputs.
  for (size_t o = 1; o < ctx.outputs.size(); ++o) {
    const size_t src = (o % 2 == 1) ? 3 : 4;
    if (ctx.has_input(src)) ctx.set_output(o, ctx.input_dtype(src), ctx.input_shape(src));
  }
}

void infer_layernorm(InferContext& ctx) {
  const ir::Node& node = ctx.node;
  infer_same_as_input(ctx);
  const auto stash = dtype_from_onnx(static_cast<int32_t>(node.attr_int("stash_type", 1)));
  TRT_CHECK(stash && (*stash == DataType::kFloat32 || *stash == DataType::kFloat64),
            ErrorCode::kNotSupported, "{}: stash_type {} is not supported (float32 or float64)",
            node.describe(), node.attr_int("stash_type", 1));
  const auto& x = ctx.input_shape(0);
  std::optional<SymShape> stat;
  if (x) {
    const int64_t r = static_cast<int64_t>(x->size());
    const int64_t axis = normalize_axis(node.attr_int("axis", -1), r, node);
    stat = SymShape(x->begin(), x->end());
    for (int64_t i = axis; i < r; ++i) (*stat)[i] = Dim(1);
  }
  for (size_t o = 1; o < ctx.outputs.size() && o < 3; ++o) ctx.set_output(o, *stash, stat);
}

void infer_gemm(InferContext& ctx) {
  const ir::Node& node = ctx.node;
  const auto& a = ctx.input_shape(0);
  const auto& b = ctx.input_shape(1);
  const bool ta = node.attr_int("transA", 0) != 0;
  const bool tb = node.attr_int("transB", 0) != 0;
  // The kernels need one dtype (ONNX's type constraint T): refused here too, so that a build
  // fails rather than the engine's first run.
  const DataType dt = ctx.input_dtype(0);
  TRT_CHECK_ARG(ctx.input_dtype(1) == dt && (!ctx.has_input(2) || ctx.input_dtype(2) == dt),
                "{}: A, B and C must have the same dtype", node.describe());
  if (a)
    TRT_CHECK_ARG(a->size() == 2, "{}: A must be 2-D, got {}", node.describe(),
                  ir::sym_shape_str(*a));
  if (b)
    TRT_CHECK_ARG(b->size() == 2, "{}: B must be 2-D, got {}", node.describe(),
                  ir::sym_shape_str(*b));
  if (a && b)
    check_dims_match(node, ta ? (*a)[0] : (*a)[1], tb ? (*b)[1] : (*b)[0], "inner dimension K");
  const Dim m = a ? (ta ? (*a)[1] : (*a)[0]) : Dim();
  const Dim n = b ? (tb ? (*b)[0] : (*b)[1]) : Dim();
  if (ctx.has_input(2) && ctx.input_shape(2) && known(m) && known(n)) {
    const SymShape& c = *ctx.input_shape(2);
    const SymShape y{m, n};
    TRT_CHECK_ARG(c.size() <= 2 && broadcast_shapes(c, y, node) == y,
                  "{}: C {} cannot be broadcast to the output {}", node.describe(),
                  ir::sym_shape_str(c), ir::sym_shape_str(y));
  }
  ctx.set_output(0, ctx.input_dtype(0), SymShape{m, n});
}

void infer_matmul(InferContext& ctx) {
  const ir::Node& node = ctx.node;
  const auto& a = ctx.input_shape(0);
  const auto& b = ctx.input_shape(1);
  TRT_CHECK_ARG(ctx.input_dtype(1) == ctx.input_dtype(0),
                "{}: A ({}) and B ({}) must have the same dtype", node.describe(),
                dtype_name(ctx.input_dtype(0)), dtype_name(ctx.input_dtype(1)));
  if (!a || !b) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  TRT_CHECK_ARG(!a->empty() && !b->empty(), "{}: MatMul operands must have rank >= 1",
                node.describe());
  SymShape sa = *a, sb = *b;
  const bool a1 = sa.size() == 1, b1 = sb.size() == 1;
  if (a1) sa.insert(sa.begin(), Dim(1));
  if (b1) sb.push_back(Dim(1));
  check_dims_match(node, sa[sa.size() - 1], sb[sb.size() - 2], "inner dimension K");
  const SymShape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  SymShape out = broadcast_shapes(ba, bb, node);
  if (!a1) out.push_back(sa[sa.size() - 2]);
  if (!b1) out.push_back(sb.back());
  ctx.set_output(0, ctx.input_dtype(0), out);
}

// A FusedConv with "blocked" = 1 (conv_blocked_layout): X (unless "plain_input" = 1), the residual
// and Y in the blocked layout (ops/blocked_layout.h); X's channel count from W's shape.
void infer_blocked_conv(InferContext& ctx) {
  ir::ValueInfo x = ctx.input(0);
  const SymShape* w = ctx.input_shape(1) ? &*ctx.input_shape(1) : nullptr;
  if (x.shape && ctx.node.attr_int("plain_input", 0) == 0) {
    TRT_CHECK_ARG(x.shape->size() >= 4 && w && w->size() >= 2 && (*w)[1].is_static(),
                  "{}: a blocked X needs rank >= 4 and W's channels, got {}", ctx.node.describe(),
                  ir::sym_shape_str(*x.shape));
    x.shape = unblocked_shape(*x.shape, (*w)[1].value * ctx.node.attr_int("group", 1));
  }
  InferContext sub = ctx;
  sub.inputs[0] = &x;
  infer_conv(sub, false);
  ctx.outputs[0] = sub.outputs[0];
  if (auto& y = ctx.outputs[0].shape; y && y->size() >= 3 && (*y)[1].is_static())
    y = blocked_shape(*y);
}

// com.trtutils::ToBlocked / FromBlocked (conv_blocked_layout's boundaries): [N, C, spatial...]
// float32 <-> [N, C / 16, spatial..., 16]; FromBlocked's C is its attribute "channels".
void infer_to_blocked(InferContext& ctx) {
  const SymShape* x = shape_of(ctx, 0, 3, "input X");
  std::optional<SymShape> out;
  if (x) {
    TRT_CHECK_ARG((*x)[1].is_static(), "{}: X's channels must be static, got {}",
                  ctx.node.describe(), ir::sym_shape_str(*x));
    out = blocked_shape(*x);
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_from_blocked(InferContext& ctx) {
  const SymShape* x = shape_of(ctx, 0, 4, "input X");
  const int64_t c = ctx.node.attr_int("channels", -1);
  TRT_CHECK_ARG(c > 0, "{}: attribute 'channels' must be positive", ctx.node.describe());
  std::optional<SymShape> out;
  if (x) out = unblocked_shape(*x, c);
  ctx.set_output(0, ctx.input_dtype(0), out);
}

// com.trtutils::FusedConv (made by the conv_fusion pass): a Conv whose optional input 3, the
// residual, has the output's shape. With "channels_last" = 1 (the conv_layout pass) X, the
// residual and Y are [N, spatial..., C]: the Conv geometry on [N, C, spatial...], moved back.
void infer_fused_conv(InferContext& ctx) {
  if (ctx.node.attr_int("blocked", 0) != 0) {
    infer_blocked_conv(ctx);
  } else if (ctx.node.attr_int("channels_last", 0) != 0) {
    ir::ValueInfo x = ctx.input(0);
    if (x.shape) {
      TRT_CHECK_ARG(x.shape->size() >= 3, "{}: X must have rank >= 3, got {}", ctx.node.describe(),
                    ir::sym_shape_str(*x.shape));
      ir::SymShape s{(*x.shape)[0], x.shape->back()};
      s.insert(s.end(), x.shape->begin() + 1, x.shape->end() - 1);
      x.shape = s;
    }
    InferContext sub = ctx;
    sub.inputs[0] = &x;
    infer_conv(sub, false);
    ctx.outputs[0] = sub.outputs[0];
    if (auto& y = ctx.outputs[0].shape; y && y->size() >= 3) {
      ir::SymShape s{(*y)[0]};
      s.insert(s.end(), y->begin() + 2, y->end());
      s.push_back((*y)[1]);
      y = s;
    }
  } else {
    infer_conv(ctx, false);
  }
  if (!ctx.has_input(3)) return;
  TRT_CHECK_ARG(ctx.input_dtype(3) == ctx.input_dtype(0),
                "{}: residual dtype {} differs from X's {}", ctx.node.describe(),
                dtype_name(ctx.input_dtype(3)), dtype_name(ctx.input_dtype(0)));
  const auto& r = ctx.input_shape(3);
  const auto& y = ctx.outputs[0].shape;
  if (!r || !y) return;
  TRT_CHECK_ARG(r->size() == y->size(), "{}: residual {} must have the output's shape {}",
                ctx.node.describe(), ir::sym_shape_str(*r), ir::sym_shape_str(*y));
  for (size_t i = 0; i < r->size(); ++i)
    check_dims_match(ctx.node, (*r)[i], (*y)[i], "residual and output shape");
}

// com.trtutils::PointwiseDepthwise (ops/pointwise_depthwise.h): its two blocked convolutions in
// turn, through the expanded tensor.
void infer_pointwise_depthwise(InferContext& ctx) {
  const auto [pw, dw] = ops::split_pointwise_depthwise(ctx.node, ctx.node.name + "/expanded");
  auto at = [&](size_t i) { return ctx.has_input(i) ? ctx.inputs[i] : nullptr; };
  auto constant = [&](size_t i) { return ctx.constant(i); };
  InferContext first{pw,
                     ctx.opset,
                     {at(0), at(1), at(2)},
                     {constant(0), constant(1), constant(2)},
                     {ir::ValueInfo{pw.outputs[0], DataType::kFloat32, std::nullopt, {}}}};
  infer_fused_conv(first);
  const ir::ValueInfo mid = first.outputs[0];
  InferContext second{dw,
                      ctx.opset,
                      {&mid, at(3), at(4)},
                      {nullptr, constant(3), constant(4)},
                      {ctx.outputs.at(0)}};
  infer_fused_conv(second);
  ctx.outputs[0] = second.outputs[0];
}

// com.trtutils::PermutedMatMul (ops/permuted_matmul.h): its Transposes and MatMul in turn, each
// through its own schema.
void infer_permuted_matmul(InferContext& ctx) {
  std::unordered_map<std::string, ir::ValueInfo> values;
  auto value = [&](const std::string& name) -> const ir::ValueInfo* {
    for (size_t i = 0; i < ctx.node.inputs.size(); ++i)
      if (ctx.node.inputs[i] == name) return ctx.has_input(i) ? ctx.inputs[i] : nullptr;
    const auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  };
  for (const ir::Node& step : split_permuted_matmul(ctx.node)) {
    const OpSchema* schema = OpRegistry::instance().find(step.domain, step.op_type);
    InferContext c{step,
                   ctx.opset,
                   {},
                   {},
                   {ir::ValueInfo{step.outputs[0], DataType::kUndefined, std::nullopt, {}}}};
    for (const std::string& in : step.inputs) {
      c.inputs.push_back(value(in));
      c.constants.push_back(nullptr);
    }
    TRT_CHECK_ARG(c.inputs.size() == step.inputs.size() &&
                      std::all_of(c.inputs.begin(), c.inputs.end(), [](auto* v) { return v; }),
                  "{}: PermutedMatMul needs A and B", ctx.node.describe());
    schema->infer(c);
    values[step.outputs[0]] = c.outputs[0];
  }
  ctx.outputs.at(0) = values.at(ctx.node.outputs.at(0));
  ctx.outputs[0].name = ctx.node.outputs[0];
}

// com.trtutils::FusedMatMul (made by the matmul_fusion pass): MatMul(A, W 2-D) + bias (W's N
// columns) [-> GELU] [+ residual with the output's shape].
void infer_fused_matmul(InferContext& ctx) {
  infer_matmul(ctx);
  const ir::Node& node = ctx.node;
  TRT_CHECK_ARG(ctx.has_input(2), "{}: FusedMatMul needs its bias (input 2)", node.describe());
  TRT_CHECK_ARG(ctx.input_dtype(2) == ctx.input_dtype(0), "{}: bias dtype {} differs from A's {}",
                node.describe(), dtype_name(ctx.input_dtype(2)), dtype_name(ctx.input_dtype(0)));
  if (!ctx.has_input(3)) return;
  TRT_CHECK_ARG(ctx.input_dtype(3) == ctx.input_dtype(0),
                "{}: residual dtype {} differs from A's {}", node.describe(),
                dtype_name(ctx.input_dtype(3)), dtype_name(ctx.input_dtype(0)));
  const auto& r = ctx.input_shape(3);
  const auto& y = ctx.outputs[0].shape;
  if (!r || !y) return;
  TRT_CHECK_ARG(r->size() == y->size(), "{}: residual {} must have the output's shape {}",
                node.describe(), ir::sym_shape_str(*r), ir::sym_shape_str(*y));
  for (size_t i = 0; i < r->size(); ++i)
    check_dims_match(node, (*r)[i], (*y)[i], "residual and output shape");
}

}  // namespace

void register_nn_ops(OpRegistry& r) {
  r.add({"FusedMatMul", "com.trtutils", infer_fused_matmul});
  r.add({"FusedConv", "com.trtutils", infer_fused_conv});
  r.add({"PointwiseDepthwise", "com.trtutils", infer_pointwise_depthwise});
  r.add({"PermutedMatMul", "com.trtutils", infer_permuted_matmul});
  // com.trtutils::SqueezeExcite (se_fusion, passes.h): Y has X's dtype and shape (either layout).
  r.add({"SqueezeExcite", "com.trtutils", infer_same_as_input});
  r.add({"ToBlocked", "com.trtutils", infer_to_blocked});
  r.add({"FromBlocked", "com.trtutils", infer_from_blocked});
  r.add({"Conv", "", [](InferContext& c) { infer_conv(c, false); }});
  r.add({"ConvTranspose", "", [](InferContext& c) { infer_conv(c, true); }});
  r.add({"MaxPool", "", infer_pool});
  r.add({"AveragePool", "", infer_pool});
  r.add({"GlobalAveragePool", "", infer_global_pool});
  r.add({"GlobalMaxPool", "", infer_global_pool});
  r.add({"BatchNormalization", "", infer_batchnorm});
  r.add({"InstanceNormalization", "", infer_same_as_input});
  r.add({"GroupNormalization", "", infer_same_as_input});
  r.add({"LayerNormalization", "", infer_layernorm});
  r.add({"Gemm", "", infer_gemm});
  r.add({"MatMul", "", infer_matmul});
}

}  // namespace trtutils::ops
