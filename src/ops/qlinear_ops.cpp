// Shape/type inference for com.trtutils::QConv, QGemm and QMatMul (contract: ops/qlinear_ops.h).
// The geometry is the float op's: the Conv / MatMul schemas run on the operands' shapes.
#include "ops/qlinear_ops.h"

#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::ops {

namespace {

using namespace qlinear;

bool quantized_dtype(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8 || t == DataType::kFloat8E4M3FN ||
         t == DataType::kFloat8E5M2;
}

void check_scale(const InferContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return;
  TRT_CHECK_ARG(ctx.input_dtype(i) == DataType::kFloat32, "{}: {} must be float32, got {}",
                ctx.node.describe(), what, dtype_name(ctx.input_dtype(i)));
}

void check_quantized(const InferContext& ctx, size_t value, size_t zp, const char* what) {
  const DataType t = ctx.input_dtype(value);
  TRT_CHECK(quantized_dtype(t), ErrorCode::kNotSupported,
            "{}: {} has dtype {}; int8, uint8, float8e4m3fn or float8e5m2 expected",
            ctx.node.describe(), what, dtype_name(t));
  if (ctx.has_input(zp))
    TRT_CHECK_ARG(ctx.input_dtype(zp) == t, "{}: the zero point of {} is {}, not {}",
                  ctx.node.describe(), what, dtype_name(ctx.input_dtype(zp)), dtype_name(t));
}

// Output shape of the float op `op_type` (Conv or MatMul) on X and `w` (W's type/shape).
std::optional<ir::SymShape> base_shape(const InferContext& ctx, const char* op_type,
                                       const ir::ValueInfo& w) {
  const OpSchema* s = OpRegistry::instance().find("", op_type);
  TRT_INTERNAL_CHECK(s != nullptr);
  ir::Node n = ctx.node;
  n.op_type = op_type;
  n.domain.clear();
  n.inputs = {ctx.node.inputs[kX], ctx.node.inputs[kW]};
  n.attributes.erase("activation");
  n.attributes.erase("activation_params");
  n.attributes.erase("transB");
  n.attributes.erase("channels_last");
  ir::ValueInfo x = ctx.input(kX), wf = w;
  x.dtype = wf.dtype = DataType::kFloat32;
  InferContext sub{n, ctx.opset, {&x, &wf}, {nullptr, nullptr}, {ir::ValueInfo{}}};
  sub.outputs[0].name = ctx.outputs.at(0).name;
  s->infer(sub);
  return sub.outputs[0].shape;
}

void infer_qlinear(InferContext& ctx, const char* kind) {
  const ir::Node& node = ctx.node;
  TRT_CHECK_ARG(ctx.num_inputs() <= kNumInputs, "{}: at most {} inputs, got {}", node.describe(),
                static_cast<size_t>(kNumInputs), ctx.num_inputs());
  TRT_CHECK_ARG(
      ctx.has_input(kX) && ctx.has_input(kXScale) && ctx.has_input(kW) && ctx.has_input(kWScale),
      "{}: X, x_scale, W and w_scale are required", node.describe());
  check_quantized(ctx, kX, kXZeroPoint, "X");
  check_quantized(ctx, kW, kWZeroPoint, "W");
  check_scale(ctx, kXScale, "x_scale");
  check_scale(ctx, kWScale, "w_scale");
  check_scale(ctx, kYScale, "y_scale");
  check_scale(ctx, kRScale, "r_scale");
  if (ctx.has_input(kBias))
    TRT_CHECK_ARG(ctx.input_dtype(kBias) == DataType::kFloat32, "{}: B must be float32, got {}",
                  node.describe(), dtype_name(ctx.input_dtype(kBias)));
  TRT_CHECK_ARG(ctx.has_input(kYScale) == ctx.has_input(kYZeroPoint),
                "{}: y_scale and y_zero_point must be given together", node.describe());
  DataType out_t = DataType::kFloat32;
  if (ctx.has_input(kYZeroPoint)) {
    out_t = ctx.input_dtype(kYZeroPoint);
    TRT_CHECK(quantized_dtype(out_t), ErrorCode::kNotSupported,
              "{}: quantized output dtype {} is not supported", node.describe(), dtype_name(out_t));
  }
  if (ctx.has_input(kRScale)) {
    TRT_CHECK_ARG(ctx.has_input(kResidual), "{}: r_scale without a residual R", node.describe());
    check_quantized(ctx, kResidual, kRZeroPoint, "R");
  } else if (ctx.has_input(kResidual)) {
    TRT_CHECK_ARG(ctx.input_dtype(kResidual) == DataType::kFloat32,
                  "{}: a residual without r_scale must be float32, got {}", node.describe(),
                  dtype_name(ctx.input_dtype(kResidual)));
  }

  std::optional<ir::SymShape> out;
  const std::string k = kind;
  if (k == "QConv" && node.attr_int("channels_last", 0) != 0) {
    // The Conv geometry on [N, C, spatial...], moved back to [N, spatial..., C].
    ir::ValueInfo x = ctx.input(kX);
    if (x.shape) {
      TRT_CHECK_ARG(x.shape->size() >= 3, "{}: X must have rank >= 3, got {}", node.describe(),
                    ir::sym_shape_str(*x.shape));
      ir::SymShape s{(*x.shape)[0], x.shape->back()};
      s.insert(s.end(), x.shape->begin() + 1, x.shape->end() - 1);
      x.shape = s;
    }
    InferContext sub = ctx;
    sub.inputs[kX] = &x;
    out = base_shape(sub, "Conv", ctx.input(kW));
    if (out) {
      ir::SymShape s{(*out)[0]};
      s.insert(s.end(), out->begin() + 2, out->end());
      s.push_back((*out)[1]);
      out = s;
    }
  } else if (k == "QConv") {
    out = base_shape(ctx, "Conv", ctx.input(kW));
  } else {
    ir::ValueInfo w = ctx.input(kW);
    if (k == "QGemm" && w.shape) {
      TRT_CHECK_ARG(w.shape->size() == 2, "{}: W must be 2-D, got {}", node.describe(),
                    ir::sym_shape_str(*w.shape));
      if (node.attr_int("transB", 0) != 0) std::swap((*w.shape)[0], (*w.shape)[1]);
    }
    out = base_shape(ctx, "MatMul", w);
  }
  if (ctx.has_input(kResidual) && out) {
    const auto& r = ctx.input_shape(kResidual);
    if (r) {
      bool ok = r->size() == out->size();
      for (size_t i = 0; ok && i < r->size(); ++i)
        ok = !(*r)[i].is_static() || !(*out)[i].is_static() || (*r)[i].value == (*out)[i].value;
      TRT_CHECK_ARG(ok, "{}: residual {} must have the output's shape {}", node.describe(),
                    ir::sym_shape_str(*r), ir::sym_shape_str(*out));
    }
  }
  ctx.set_output(0, out_t, out);
}

}  // namespace

void register_qlinear_ops(OpRegistry& r) {
  r.add({"QConv", qlinear::kDomain, [](InferContext& c) { infer_qlinear(c, "QConv"); }});
  r.add({"QGemm", qlinear::kDomain, [](InferContext& c) { infer_qlinear(c, "QGemm"); }});
  r.add({"QMatMul", qlinear::kDomain, [](InferContext& c) { infer_qlinear(c, "QMatMul"); }});
}

}  // namespace trtutils::ops
