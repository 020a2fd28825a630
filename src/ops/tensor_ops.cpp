// Shape/type inference for the tensor op family (data movement and shape ops, Resize).
// Output shapes that depend on input values are computed when those inputs are constants;
// otherwise the rank is kept where it is known and the value-dependent dims become unknown.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "ops/op_registry.h"
#include "ops/tensor_shapes.h"

namespace trtutils::ops {

namespace {

using ir::Dim;
using ir::SymShape;
using OptShape = std::optional<SymShape>;

SymShape unknown_dims(size_t rank) {
  return SymShape(rank);
}

// Dims of a 1-D input's length when static (for ops whose output rank is that length).
std::optional<int64_t> static_length(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  const auto& s = ctx.input_shape(i);
  if (!s || s->size() != 1 || !(*s)[0].is_static()) return std::nullopt;
  return (*s)[0].value;
}

// Two dims that must be equal: the more specific one.
Dim merge_dims(const Dim& a, const Dim& b, const ir::Node& node, const char* what) {
  if (a.is_static() && b.is_static()) {
    TRT_CHECK(a.value == b.value, ErrorCode::kInvalidArgument, "{}: {} dims {} and {} differ",
              node.describe(), what, a.value, b.value);
    return a;
  }
  if (a.is_static()) return a;
  if (b.is_static()) return b;
  return a.param.empty() ? b : a;
}

void infer_concat(InferContext& ctx) {
  const auto& node = ctx.node;
  TRT_CHECK(node.has_attr("axis"), ErrorCode::kInvalidArgument, "{}: attribute 'axis' is required",
            node.describe());
  TRT_CHECK(ctx.num_inputs() >= 1, ErrorCode::kInvalidArgument, "{}: needs at least one input",
            node.describe());
  const DataType dt = ctx.input_dtype(0);
  OptShape out;
  bool axis_unknown = false;
  int64_t axis_total = 0;
  int64_t axis = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const auto& s = ctx.input_shape(i);
    if (!s) {
      axis_unknown = true;
      continue;
    }
    if (!out) {
      axis = normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(s->size()), node);
      out = *s;
    }
    TRT_CHECK(s->size() == out->size(), ErrorCode::kInvalidArgument,
              "{}: inputs have ranks {} and {}", node.describe(), out->size(), s->size());
    for (size_t d = 0; d < s->size(); ++d)
      if (static_cast<int64_t>(d) != axis)
        (*out)[d] = merge_dims((*out)[d], (*s)[d], node, "concat");
    if ((*s)[axis].is_static()) {
      axis_total += (*s)[axis].value;
    } else {
      axis_unknown = true;
    }
  }
  if (out) (*out)[axis] = axis_unknown ? Dim() : Dim(axis_total);
  ctx.set_output(0, dt, out);
}

void infer_split(InferContext& ctx) {
  const auto& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  const size_t n = ctx.outputs.size();
  if (!s) {
    for (size_t i = 0; i < n; ++i) ctx.set_output(i, dt, std::nullopt);
    return;
  }
  const int64_t axis =
      normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(s->size()), node);
  const Dim d = (*s)[axis];
  const bool split_given = ctx.opset >= 13 && ctx.has_input(1);
  std::vector<Dim> sizes(n);
  if (split_given && !ctx.constant(1)) {
    // sizes unknown
  } else if (d.is_static()) {
    const auto v =
        split_sizes(node, ctx.opset, split_given ? ctx.constant(1) : nullptr, d.value, n);
    for (size_t i = 0; i < n; ++i) sizes[i] = Dim(v[i]);
  } else if (n == 1) {
    sizes[0] = d;
  } else if (ctx.opset < 13 && node.has_attr("split")) {
    const auto v = node.attr_ints("split");
    for (size_t i = 0; i < n && i < v.size(); ++i) sizes[i] = Dim(v[i]);
  } else if (split_given) {
    const auto v = ctx.constant(1)->to_int64_vector();
    for (size_t i = 0; i < n && i < v.size(); ++i) sizes[i] = Dim(v[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    SymShape o = *s;
    o[axis] = sizes[i];
    ctx.set_output(i, dt, o);
  }
}

void infer_slice(InferContext& ctx) {
  const auto& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  if (!s) return ctx.set_output(0, dt, std::nullopt);
  const int64_t rank = static_cast<int64_t>(s->size());
  const auto args = slice_args(node, ctx.opset, ctx.constant(1), ctx.constant(2), ctx.constant(3),
                               ctx.constant(4));
  if (!args) return ctx.set_output(0, dt, unknown_dims(s->size()));
  const auto axes = normalize_axes(args->axes, rank, node);
  SymShape out = *s;
  for (size_t i = 0; i < axes.size(); ++i) {
    const Dim d = (*s)[axes[i]];
    if (d.is_static()) {
      out[axes[i]] =
          Dim(slice_range(d.value, args->starts[i], args->ends[i], args->steps[i]).count);
    } else if (args->starts[i] == 0 && args->steps[i] == 1 &&
               args->ends[i] >= std::numeric_limits<int32_t>::max()) {
      out[axes[i]] = d;  // the whole axis
    } else {
      out[axes[i]] = Dim();
    }
  }
  ctx.set_output(0, dt, out);
}

// Constant indices (input `idx`) into a static axis of `n` entries: each must be in [-n, n).
// Data-dependent indices are the kernel's to check; constant ones are refused at build time.
// Several dims: the indices are tuples (GatherND / ScatterND) whose component c indexes the
// data axis of size dims[c]; a dim below 0 (symbolic) is not checked.
void check_constant_indices(const InferContext& ctx, size_t idx, const std::vector<int64_t>& dims,
                            const char* what) {
  const Tensor* t = ctx.constant(idx);
  if (!t || dims.empty()) return;
  const std::vector<int64_t> v = t->to_int64_vector();
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t n = dims[i % dims.size()];
    TRT_CHECK_ARG(n < 0 || (v[i] >= -n && v[i] < n),
                  "{}: {} {} (element {} of the constant '{}') is out of range for an axis of {} "
                  "(valid: {}..{})",
                  ctx.node.describe(), what, v[i], i, ctx.node.inputs[idx], n, -n, n - 1);
  }
}

void infer_gather(InferContext& ctx) {
  const auto& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const DataType it = ctx.input_dtype(1);
  TRT_CHECK(it == DataType::kInt32 || it == DataType::kInt64, ErrorCode::kInvalidArgument,
            "{}: indices must be int32 or int64, got {}", node.describe(), dtype_name(it));
  const auto& s = ctx.input_shape(0);
  const auto& is = ctx.input_shape(1);
  if (!s || !is) return ctx.set_output(0, dt, std::nullopt);
  const int64_t axis =
      normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(s->size()), node);
  check_constant_indices(ctx, 1, {(*s)[axis].value}, "index");
  SymShape out(s->begin(), s->begin() + axis);
  out.insert(out.end(), is->begin(), is->end());
  out.insert(out.end(), s->begin() + axis + 1, s->end());
  ctx.set_output(0, dt, out);
}

void infer_reshape(InferContext& ctx) {
  const auto& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  std::optional<std::vector<int64_t>> target;
  if (ctx.opset < 5) {
    target = node.attr_ints("shape");
  } else if (const Tensor* t = ctx.constant(1)) {
    TRT_CHECK(t->dtype() == DataType::kInt64 && t->rank() == 1, ErrorCode::kInvalidArgument,
              "{}: shape must be a 1-D int64 tensor, got {} {}", node.describe(),
              dtype_name(t->dtype()), shape_str(t->shape()));
    target = t->to_int64_vector();
  }
  if (!target) {
    const auto k = static_length(ctx, 1);
    return ctx.set_output(0, dt, k ? OptShape(unknown_dims(*k)) : std::nullopt);
  }
  const bool allowzero = ctx.opset >= 14 && node.attr_int("allowzero", 0) != 0;
  if (!s) {
    // Without the input shape only the explicit dims are known.
    SymShape out(target->size());
    for (size_t i = 0; i < target->size(); ++i)
      if ((*target)[i] > 0 || ((*target)[i] == 0 && allowzero)) out[i] = Dim((*target)[i]);
    return ctx.set_output(0, dt, out);
  }
  ctx.set_output(0, dt, reshape_output(*s, *target, allowzero, node));
}

void infer_flatten(InferContext& ctx) {
  const auto& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  if (!s) return ctx.set_output(0, dt, unknown_dims(2));
  const int64_t rank = static_cast<int64_t>(s->size());
  int64_t axis = node.attr_int("axis", 1);
  TRT_CHECK(axis >= -rank && axis <= rank, ErrorCode::kInvalidArgument,
            "{}: axis {} is out of range for rank {}", node.describe(), axis, rank);
  if (axis < 0) axis += rank;
  ctx.set_output(0, dt, SymShape{dims_product(*s, 0, axis), dims_product(*s, axis, s->size())});
}

void infer_transpose(InferContext& ctx) {
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  if (!s) return ctx.set_output(0, dt, std::nullopt);
  const auto perm = transpose_perm(ctx.node, s->size());
  SymShape out(s->size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = (*s)[perm[i]];
  ctx.set_output(0, dt, out);
}

void infer_squeeze(InferContext& ctx) {
  const auto& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  bool available = true;
  const auto axes = squeeze_axes(node, ctx.opset, ctx.constant(1), &available);
  if (!s || !available) return ctx.set_output(0, dt, std::nullopt);
  SymShape out;
  if (!axes) {
    for (const auto& d : *s) {
      if (!d.is_static()) return ctx.set_output(0, dt, std::nullopt);  // might be 1
      if (d.value != 1) out.push_back(d);
    }
    return ctx.set_output(0, dt, out);
  }
  const auto ax = normalize_axes(*axes, static_cast<int64_t>(s->size()), node);
  for (size_t i = 0; i < s->size(); ++i) {
    if (std::find(ax.begin(), ax.end(), static_cast<int64_t>(i)) != ax.end()) {
      TRT_CHECK(!(*s)[i].is_static() || (*s)[i].value == 1, ErrorCode::kInvalidArgument,
                "{}: cannot squeeze axis {} of size {}", node.describe(), i, (*s)[i].value);
    } else {
      out.push_back((*s)[i]);
    }
  }
  ctx.set_output(0, dt, out);
}

void infer_unsqueeze(InferContext& ctx) {
  const auto& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  bool available = true;
  const auto axes = squeeze_axes(node, ctx.opset, ctx.constant(1), &available);
  TRT_CHECK(axes || !available, ErrorCode::kInvalidArgument, "{}: 'axes' is required",
            node.describe());
  if (!s) return ctx.set_output(0, dt, std::nullopt);
  if (!available) {
    const auto k = static_length(ctx, 1);
    return ctx.set_output(0, dt, k ? OptShape(unknown_dims(s->size() + *k)) : std::nullopt);
  }
  const int64_t out_rank = static_cast<int64_t>(s->size() + axes->size());
  const auto ax = normalize_axes(*axes, out_rank, node);
  SymShape out;
  size_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (std::find(ax.begin(), ax.end(), i) != ax.end()) {
      out.push_back(Dim(1));
    } else {
      out.push_back((*s)[j++]);
    }
  }
  ctx.set_output(0, dt, out);
}

void infer_expand(InferContext& ctx) {
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  const Tensor* shape = ctx.constant(1);
  if (!shape) {
    const auto k = static_length(ctx, 1);
    if (!s || !k) return ctx.set_output(0, dt, std::nullopt);
    return ctx.set_output(0, dt, unknown_dims(std::max<size_t>(s->size(), *k)));
  }
  if (!s) return ctx.set_output(0, dt, std::nullopt);
  const auto target = ir::sym_shape_from_static(shape->to_int64_vector());
  ctx.set_output(0, dt, broadcast_shapes(*s, target, ctx.node));
}

void infer_pad(InferContext& ctx) {
  const auto& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  (void)pad_mode(node, ctx.opset);
  if (!s) return ctx.set_output(0, dt, std::nullopt);
  const int64_t rank = static_cast<int64_t>(s->size());
  const auto pads =
      pad_amounts(node, ctx.opset, rank, ctx.constant(1), ctx.constant(3), node.has_input(3));
  if (!pads) return ctx.set_output(0, dt, unknown_dims(s->size()));
  SymShape out = *s;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t add = (*pads)[i] + (*pads)[i + rank];
    if ((*s)[i].is_static()) {
      const int64_t v = (*s)[i].value + add;
      TRT_CHECK(v >= 0, ErrorCode::kInvalidArgument, "{}: pads {} make axis {} negative",
                node.describe(), shape_str(*pads), i);
      out[i] = Dim(v);
    } else if (add != 0) {
      out[i] = Dim();
    }
  }
  ctx.set_output(0, dt, out);
}

void infer_resize(InferContext& ctx) {
  const auto& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  (void)resize_attrs(node, ctx.opset);
  if (!s) return ctx.set_output(0, dt, std::nullopt);
  const auto ri = resize_inputs(node, ctx.opset);
  auto value = [&](int i) -> const Tensor* { return i >= 0 ? ctx.constant(i) : nullptr; };
  auto known = [&](int i) { return i < 0 || !ctx.has_input(i) || ctx.constant(i) != nullptr; };
  if (!known(ri.roi) || !known(ri.scales) || !known(ri.sizes))
    return ctx.set_output(0, dt, unknown_dims(s->size()));
  const Tensor* roi = value(ri.roi);
  const Tensor* scales = value(ri.scales);
  const Tensor* sizes = value(ri.sizes);
  if (ir::sym_shape_is_static(*s)) {
    const auto plan = resize_plan(node, ctx.opset, ir::sym_shape_to_static(*s), roi, scales, sizes);
    return ctx.set_output(0, dt, ir::sym_shape_from_static(plan.out));
  }
  // Symbolic input: work per axis with a stand-in size of 1 for symbolic dims; keep the symbol
  // where the axis is not resized (scale 1), take sizes where they fix the output.
  Shape stand_in(s->size());
  for (size_t i = 0; i < s->size(); ++i) stand_in[i] = (*s)[i].is_static() ? (*s)[i].value : 1;
  const auto plan = resize_plan(node, ctx.opset, stand_in, roi, scales, sizes);
  const bool stretch =
      ctx.opset < 18 || node.attr_string("keep_aspect_ratio_policy", "stretch") == "stretch";
  const bool by_sizes = sizes != nullptr && sizes->numel() > 0;
  SymShape out(s->size());
  for (size_t i = 0; i < s->size(); ++i) {
    if ((*s)[i].is_static() && stretch) {
      out[i] = Dim(plan.out[i]);
    } else if (by_sizes && stretch) {
      out[i] = Dim(plan.out[i]);
    } else if (!by_sizes && plan.scales[i] == 1.0f) {
      out[i] = (*s)[i];
    }
  }
  ctx.set_output(0, dt, out);
}

void infer_shape_op(InferContext& ctx) {
  const auto& s = ctx.input_shape(0);
  if (!s) return ctx.set_output(0, DataType::kInt64, SymShape{Dim()});
  const int64_t rank = static_cast<int64_t>(s->size());
  const DimRange r = shape_op_range(ctx.node, ctx.opset, rank);
  ctx.set_output(0, DataType::kInt64, SymShape{Dim(std::max<int64_t>(r.end - r.start, 0))});
}

DataType constant_of_shape_dtype(const ir::Node& node) {
  const ir::Attribute* a = node.attr("value");
  if (!a) return DataType::kFloat32;
  TRT_CHECK(a->kind == ir::Attribute::Kind::kTensor && a->t.numel() == 1,
            ErrorCode::kInvalidArgument, "{}: 'value' must be a one-element tensor",
            node.describe());
  return a->t.dtype();
}

void infer_constant_of_shape(InferContext& ctx) {
  const DataType dt = constant_of_shape_dtype(ctx.node);
  if (const Tensor* t = ctx.constant(0)) {
    const auto v = t->to_int64_vector();
    for (int64_t d : v)
      TRT_CHECK(d >= 0, ErrorCode::kInvalidArgument, "{}: negative dim {} in shape {}",
                ctx.node.describe(), d, shape_str(v));
    return ctx.set_output(0, dt, ir::sym_shape_from_static(v));
  }
  const auto k = static_length(ctx, 0);
  ctx.set_output(0, dt, k ? OptShape(unknown_dims(*k)) : std::nullopt);
}

void infer_size(InferContext& ctx) {
  ctx.set_output(0, DataType::kInt64, SymShape{});
}

void infer_range(InferContext& ctx) {
  const DataType dt = ctx.input_dtype(0);
  const Tensor* a = ctx.constant(0);
  const Tensor* b = ctx.constant(1);
  const Tensor* c = ctx.constant(2);
  if (a && b && c) return ctx.set_output(0, dt, SymShape{Dim(range_length(*a, *b, *c, ctx.node))});
  ctx.set_output(0, dt, SymShape{Dim()});
}

void infer_tile(InferContext& ctx) {
  const auto& node = ctx.node;
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  if (!s) return ctx.set_output(0, dt, std::nullopt);
  const Tensor* r = ctx.constant(1);
  if (!r) return ctx.set_output(0, dt, unknown_dims(s->size()));
  const auto reps = r->to_int64_vector();
  TRT_CHECK(reps.size() == s->size(), ErrorCode::kInvalidArgument,
            "{}: repeats has {} values for an input of rank {}", node.describe(), reps.size(),
            s->size());
  SymShape out = *s;
  for (size_t i = 0; i < reps.size(); ++i) {
    TRT_CHECK(reps[i] >= 0, ErrorCode::kInvalidArgument, "{}: negative repeat {}", node.describe(),
              reps[i]);
    if ((*s)[i].is_static()) {
      out[i] = Dim((*s)[i].value * reps[i]);
    } else if (reps[i] != 1) {
      out[i] = reps[i] == 0 ? Dim(0) : Dim();
    }
  }
  ctx.set_output(0, dt, out);
}

// Dropout: Y like X; the optional mask bool of X's shape.
void infer_dropout(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  if (ctx.outputs.size() > 1) ctx.set_output(1, DataType::kBool, ctx.input_shape(0));
}

// ScatterND: data's type and shape.
void infer_scatter_nd(InferContext& ctx) {
  TRT_CHECK(ctx.num_inputs() == 3, ErrorCode::kInvalidArgument,
            "{}: needs data, indices and updates", ctx.node.describe());
  const DataType it = ctx.input_dtype(1);
  TRT_CHECK(it == DataType::kInt64 || it == DataType::kInt32, ErrorCode::kInvalidArgument,
            "{}: indices must be int64, got {}", ctx.node.describe(), dtype_name(it));
  TRT_CHECK(ctx.input_dtype(2) == ctx.input_dtype(0), ErrorCode::kInvalidArgument,
            "{}: updates are {}, data {}", ctx.node.describe(), dtype_name(ctx.input_dtype(2)),
            dtype_name(ctx.input_dtype(0)));
  const auto& ds = ctx.input_shape(0);
  const auto& is = ctx.input_shape(1);
  if (ds && is && !is->empty() && is->back().is_static() &&
      is->back().value <= static_cast<int64_t>(ds->size())) {
    std::vector<int64_t> dims;
    for (int64_t c = 0; c < is->back().value; ++c) dims.push_back((*ds)[c].value);
    check_constant_indices(ctx, 1, dims, "index");
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
}

// TopK: Values (X's dtype) and Indices (int64) of X's shape with K on the axis (unknown unless K
// is an attribute, before opset 10, or a constant input).
void infer_topk(InferContext& ctx) {
  const DataType dt = ctx.input_dtype(0);
  const auto& s = ctx.input_shape(0);
  if (!s) {
    ctx.set_output(0, dt, std::nullopt);
    if (ctx.outputs.size() > 1) ctx.set_output(1, DataType::kInt64, std::nullopt);
    return;
  }
  const int64_t axis =
      normalize_axis(ctx.node.attr_int("axis", -1), static_cast<int64_t>(s->size()), ctx.node);
  Dim k;
  if (ctx.opset < 10) {
    k = Dim(ctx.node.attr_int("k", -1));
  } else if (const Tensor* kt = ctx.constant(1); kt && kt->numel() == 1) {
    k = Dim(kt->to_int64_vector()[0]);
  }
  SymShape out = *s;
  out[static_cast<size_t>(axis)] = k;
  ctx.set_output(0, dt, out);
  if (ctx.outputs.size() > 1) ctx.set_output(1, DataType::kInt64, out);
}

// NonZero: int64 [rank(X), number of non-zero elements (data-dependent)].
void infer_nonzero(InferContext& ctx) {
  const auto& s = ctx.input_shape(0);
  ctx.set_output(0, DataType::kInt64,
                 SymShape{s ? Dim(static_cast<int64_t>(s->size())) : Dim(), Dim()});
}

// GatherND: indices.shape[:-1] + data.shape[batch_dims + k:] with k = indices.shape[-1].
void infer_gathernd(InferContext& ctx) {
  const DataType dt = ctx.input_dtype(0);
  const auto& ds = ctx.input_shape(0);
  const auto& is = ctx.input_shape(1);
  if (!ds || !is || is->empty() || !is->back().is_static())
    return ctx.set_output(0, dt, std::nullopt);
  const int64_t b = ctx.opset >= 12 ? ctx.node.attr_int("batch_dims", 0) : 0;
  const int64_t k = is->back().value;
  TRT_CHECK(b >= 0 && k >= 1 && b + k <= static_cast<int64_t>(ds->size()) &&
                b < static_cast<int64_t>(is->size()),
            ErrorCode::kInvalidArgument,
            "{}: indices' last dimension {} and batch_dims {} do not fit data of rank {}",
            ctx.node.describe(), k, b, ds->size());
  std::vector<int64_t> dims;
  for (int64_t c = 0; c < k; ++c) dims.push_back((*ds)[b + c].value);
  check_constant_indices(ctx, 1, dims, "index");
  SymShape out(is->begin(), is->end() - 1);
  out.insert(out.end(), ds->begin() + b + k, ds->end());
  ctx.set_output(0, dt, out);
}

// NonMaxSuppression: int64 [selected (data-dependent), 3].
void infer_nms(InferContext& ctx) {
  ctx.set_output(0, DataType::kInt64, SymShape{Dim(), Dim(3)});
}

// If: each output typed by the branches' outputs; the shape where both branches agree, else
// the rank with unknown dims (or nothing).
void infer_if(InferContext& ctx) {
  const ir::Attribute* t = ctx.node.attr("then_branch");
  const ir::Attribute* e = ctx.node.attr("else_branch");
  using Branch = std::pair<const ir::Attribute*, const char*>;
  for (const auto& [branch, name] : {Branch{t, "then_branch"}, Branch{e, "else_branch"}}) {
    TRT_CHECK_ARG(branch && branch->kind == ir::Attribute::Kind::kGraph && branch->g,
                  "{}: the {} graph attribute is missing", ctx.node.describe(), name);
    TRT_CHECK_ARG(branch->g->outputs.size() == ctx.outputs.size(),
                  "{}: its {} has {} outputs, the node {}", ctx.node.describe(), name,
                  branch->g->outputs.size(), ctx.outputs.size());
  }
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const ir::ValueInfo& a = t->g->outputs[i];
    const ir::ValueInfo& b = e->g->outputs[i];
    const DataType dt = a.dtype != DataType::kUndefined ? a.dtype : b.dtype;
    std::optional<SymShape> shape;
    if (a.shape && b.shape && a.shape->size() == b.shape->size())
      shape = *a.shape == *b.shape ? *a.shape : unknown_dims(a.shape->size());
    ctx.set_output(i, dt, shape);
  }
}

}  // namespace

void register_tensor_ops(OpRegistry& r) {
  r.add({"Concat", "", infer_concat});
  r.add({"Split", "", infer_split});
  r.add({"Slice", "", infer_slice});
  r.add({"Gather", "", infer_gather});
  r.add({"Reshape", "", infer_reshape});
  r.add({"Flatten", "", infer_flatten});
  r.add({"Transpose", "", infer_transpose});
  r.add({"Squeeze", "", infer_squeeze});
  r.add({"Unsqueeze", "", infer_unsqueeze});
  r.add({"Expand", "", infer_expand});
  r.add({"Pad", "", infer_pad});
  r.add({"Resize", "", infer_resize});
  r.add({"Upsample", "", infer_resize});
  r.add({"Shape", "", infer_shape_op});
  r.add({"ConstantOfShape", "", infer_constant_of_shape});
  r.add({"Size", "", infer_size});
  r.add({"Range", "", infer_range});
  r.add({"Tile", "", infer_tile});
  r.add({"Dropout", "", infer_dropout});
  r.add({"ScatterND", "", infer_scatter_nd});
  r.add({"TopK", "", infer_topk});
  r.add({"NonZero", "", infer_nonzero});
  r.add({"GatherND", "", infer_gathernd});
  r.add({"NonMaxSuppression", "", infer_nms});
  r.add({"If", "", infer_if});
}

}  // namespace trtutils::ops
