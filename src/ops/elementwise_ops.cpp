// Shape/type inference for the elementwise op family: unary math and activations, broadcasting
// binary/variadic ops, comparisons and logic, Where, Clip, Cast/CastLike and Identity. The
// reductions and the softmax family are in reduce_ops.cpp (registered from here).
#include <optional>

#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::ops {

void register_reduce_ops(OpRegistry& r);  // reduce_ops.cpp

namespace {

// Broadcast of the shapes of inputs [first, num_inputs); nullopt if any rank is unknown.
std::optional<ir::SymShape> broadcast_inputs(const InferContext& ctx, size_t first = 0) {
  std::optional<ir::SymShape> out;
  for (size_t i = first; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const auto& s = ctx.input_shape(i);
    if (!s) return std::nullopt;
    out = out ? broadcast_shapes(*out, *s, ctx.node) : *s;
  }
  return out;
}

// Inputs i and j must agree on dtype when both are known.
void check_same_dtype(const InferContext& ctx, size_t i, size_t j) {
  const DataType a = ctx.input_dtype(i), b = ctx.input_dtype(j);
  TRT_CHECK(a == DataType::kUndefined || b == DataType::kUndefined || a == b,
            ErrorCode::kInvalidArgument,
            "{}: inputs {} and {} have different dtypes ({} and {}); insert a Cast",
            ctx.node.describe(), i, j, dtype_name(a), dtype_name(b));
}

void infer_unary(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
}

void infer_unary_bool(InferContext& ctx) {
  ctx.set_output(0, DataType::kBool, ctx.input_shape(0));
}

// Same-type broadcasting ops (Add, Min, Sum, ...), any number of inputs.
void infer_broadcast(InferContext& ctx) {
  TRT_CHECK(ctx.num_inputs() >= 1, ErrorCode::kInvalidArgument, "{}: needs at least one input",
            ctx.node.describe());
  for (size_t i = 1; i < ctx.num_inputs(); ++i) check_same_dtype(ctx, 0, i);
  ctx.set_output(0, ctx.input_dtype(0), broadcast_inputs(ctx));
}

void infer_compare(InferContext& ctx) {
  check_same_dtype(ctx, 0, 1);
  ctx.set_output(0, DataType::kBool, broadcast_inputs(ctx));
}

void infer_pow(InferContext& ctx) {
  ctx.input(1);
  ctx.set_output(0, ctx.input_dtype(0), broadcast_inputs(ctx));
}

void infer_prelu(InferContext& ctx) {
  check_same_dtype(ctx, 0, 1);
  const auto& x = ctx.input_shape(0);
  std::optional<ir::SymShape> slope = ctx.input_shape(1);
  // Legacy per-channel slope [C] (opset <= 6 semantics), as in the CPU kernel.
  if (x && slope && slope->size() == 1 && x->size() >= 3 && (*slope)[0].is_static() &&
      (*slope)[0] == (*x)[1] && (*slope)[0].value != 1 && !((*slope)[0] == x->back())) {
    ir::SymShape s(x->size() - 1, ir::Dim(1));
    s[0] = (*slope)[0];
    slope = s;
  }
  if (x && slope) {
    const ir::SymShape b = broadcast_shapes(*x, *slope, ctx.node);
    bool same = b.size() == x->size();
    for (size_t d = 0; same && d < b.size(); ++d)
      same = !(b[d].is_static() && (*x)[d].is_static()) || b[d].value == (*x)[d].value;
    TRT_CHECK(same, ErrorCode::kInvalidArgument,
              "{}: slope of shape {} does not broadcast to X of shape {}", ctx.node.describe(),
              ir::sym_shape_str(*slope), ir::sym_shape_str(*x));
  }
  ctx.set_output(0, ctx.input_dtype(0), x);
}

void infer_where(InferContext& ctx) {
  const DataType c = ctx.input_dtype(0);
  TRT_CHECK(c == DataType::kBool || c == DataType::kUndefined, ErrorCode::kInvalidArgument,
            "{}: condition must be bool, got {}", ctx.node.describe(), dtype_name(c));
  check_same_dtype(ctx, 1, 2);
  ctx.set_output(0, ctx.input_dtype(1), broadcast_inputs(ctx));
}

void infer_clip(InferContext& ctx) {
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    check_same_dtype(ctx, 0, i);
    const auto& s = ctx.input_shape(i);
    if (s && ir::sym_shape_is_static(*s))
      TRT_CHECK(shape_numel(ir::sym_shape_to_static(*s)) == 1, ErrorCode::kInvalidArgument,
                "{}: min/max input {} must be a scalar, got {}", ctx.node.describe(), i,
                ir::sym_shape_str(*s));
  }
  infer_unary(ctx);
}

void infer_cast(InferContext& ctx) {
  TRT_CHECK(ctx.node.has_attr("to"), ErrorCode::kInvalidArgument,
            "{}: required attribute 'to' is missing", ctx.node.describe());
  const int64_t to = ctx.node.attr_int("to", 0);
  const auto t = dtype_from_onnx(static_cast<int32_t>(to));
  TRT_CHECK(t.has_value() && to == static_cast<int32_t>(to), ErrorCode::kNotSupported,
            "{}: 'to' = {} is not a supported ONNX dtype", ctx.node.describe(), to);
  ctx.set_output(0, *t, ctx.input_shape(0));
}

void infer_cast_like(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(0));
}

void infer_gelu(InferContext& ctx) {
  const std::string approx = ctx.node.attr_string("approximate", "none");
  TRT_CHECK(approx == "none" || approx == "tanh", ErrorCode::kNotSupported,
            "{}: approximate='{}' is not supported (none|tanh)", ctx.node.describe(), approx);
  infer_unary(ctx);
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  for (const char* op : {"Sqrt",        "Exp",       "Log",
                         "Reciprocal",  "Floor",     "Ceil",
                         "Round",       "Sin",       "Cos",
                         "Tan",         "Asin",      "Acos",
                         "Atan",        "Sinh",      "Cosh",
                         "Asinh",       "Acosh",     "Atanh",
                         "Tanh",        "Erf",       "Sigmoid",
                         "Softplus",    "Softsign",  "Mish",
                         "Neg",         "Abs",       "Sign",
                         "Relu",        "LeakyRelu", "Elu",
                         "Celu",        "Selu",      "ThresholdedRelu",
                         "HardSigmoid", "HardSwish", "Identity",
                         "Not"})
    r.add({op, "", infer_unary});
  r.add({"Gelu", "", infer_gelu});
  r.add({"IsNaN", "", infer_unary_bool});
  r.add({"IsInf", "", infer_unary_bool});
  r.add({"Clip", "", infer_clip});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod", "Min", "Max", "Sum", "Mean"})
    r.add({op, "", infer_broadcast});
  r.add({"Pow", "", infer_pow});
  r.add({"PRelu", "", infer_prelu});
  for (const char* op :
       {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"})
    r.add({op, "", infer_compare});
  r.add({"Where", "", infer_where});
  r.add({"Cast", "", infer_cast});
  r.add({"CastLike", "", infer_cast_like});
  register_reduce_ops(r);
}

}  // namespace trtutils::ops
