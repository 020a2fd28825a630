// Schemas of the index ops, RoiAlign and Loop: ArgMax / ArgMin, GatherElements,
// ScatterElements (and Scatter, its opset 9-10 name), RoiAlign, Loop (run by the CPU session,
// src/engine/session.cpp). Two-stage detectors (torchvision Faster / Mask / Keypoint R-CNN) write
// all of them.
#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::ops {
namespace {

void require_indices(const InferContext& ctx, size_t i) {
  const DataType it = ctx.input_dtype(i);
  TRT_CHECK(it == DataType::kInt64 || it == DataType::kInt32, ErrorCode::kInvalidArgument,
            "{}: indices must be int64 or int32, got {}", ctx.node.describe(), dtype_name(it));
}

// GatherElements: data's dtype, indices' shape.
void infer_gather_elements(InferContext& ctx) {
  TRT_CHECK_ARG(ctx.num_inputs() == 2, "{}: needs data and indices", ctx.node.describe());
  require_indices(ctx, 1);
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(1));
}

// ScatterElements / Scatter: data's type and shape.
void infer_scatter_elements(InferContext& ctx) {
  TRT_CHECK_ARG(ctx.num_inputs() == 3, "{}: needs data, indices and updates", ctx.node.describe());
  require_indices(ctx, 1);
  TRT_CHECK_ARG(ctx.input_dtype(2) == ctx.input_dtype(0), "{}: updates are {}, data {}",
                ctx.node.describe(), dtype_name(ctx.input_dtype(2)),
                dtype_name(ctx.input_dtype(0)));
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
}

// RoiAlign: X [N, C, H, W], rois [R, 4], batch_indices [R] -> [R, C, output_height, output_width].
void infer_roi_align(InferContext& ctx) {
  TRT_CHECK_ARG(ctx.num_inputs() == 3, "{}: needs X, rois and batch_indices", ctx.node.describe());
  require_indices(ctx, 2);
  const int64_t oh = ctx.node.attr_int("output_height", 1),
                ow = ctx.node.attr_int("output_width", 1);
  TRT_CHECK_ARG(oh >= 1 && ow >= 1, "{}: output_height {} and output_width {} must be positive",
                ctx.node.describe(), oh, ow);
  const auto& xs = ctx.input_shape(0);
  const auto& rs = ctx.input_shape(1);
  if (xs) TRT_CHECK_ARG(xs->size() == 4, "{}: X must be 4-D", ctx.node.describe());
  if (rs) TRT_CHECK_ARG(rs->size() == 2, "{}: rois must be 2-D [R, 4]", ctx.node.describe());
  ir::SymShape out{rs ? (*rs)[0] : ir::Dim(), xs ? (*xs)[1] : ir::Dim(), ir::Dim(oh), ir::Dim(ow)};
  ctx.set_output(0, ctx.input_dtype(0), out);
}

// Loop: the loop-carried outputs take their initial values' dtypes; the scan outputs the body's
// (one more axis, the iterations, in front); shapes are known only at run time.
void infer_loop(InferContext& ctx) {
  const ir::Attribute* b = ctx.node.attr("body");
  TRT_CHECK_ARG(b && b->kind == ir::Attribute::Kind::kGraph && b->g,
                "{}: the body graph attribute is missing", ctx.node.describe());
  const size_t carried = ctx.num_inputs() >= 2 ? ctx.num_inputs() - 2 : 0;
  const ir::Graph& body = *b->g;
  TRT_CHECK_ARG(body.inputs.size() == carried + 2 &&
                    body.outputs.size() == 1 + ctx.outputs.size() && ctx.outputs.size() >= carried,
                "{}: the body has {} inputs and {} outputs for {} loop-carried values and {} node "
                "outputs",
                ctx.node.describe(), body.inputs.size(), body.outputs.size(), carried,
                ctx.outputs.size());
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const DataType body_dt = body.outputs[1 + i].dtype;
    const DataType dt = i < carried && ctx.has_input(2 + i) ? ctx.input_dtype(2 + i) : body_dt;
    ctx.set_output(i, dt, std::nullopt);
  }
}

// ArgMax / ArgMin: int64, the input's shape with the axis reduced (kept as 1 with keepdims).
void infer_arg_reduce(InferContext& ctx) {
  const auto& xs = ctx.input_shape(0);
  if (!xs) return ctx.set_output(0, DataType::kInt64, std::nullopt);
  const int64_t axis =
      normalize_axis(ctx.node.attr_int("axis", 0), static_cast<int64_t>(xs->size()), ctx.node);
  ir::SymShape out;
  for (size_t d = 0; d < xs->size(); ++d) {
    if (static_cast<int64_t>(d) != axis)
      out.push_back((*xs)[d]);
    else if (ctx.node.attr_int("keepdims", 1) != 0)
      out.push_back(ir::Dim(1));
  }
  ctx.set_output(0, DataType::kInt64, out);
}

}  // namespace

void register_einsum_op(OpRegistry& r);       // einsum.cpp
void register_cumsum_op(OpRegistry& r);       // cumsum.cpp
void register_grid_sample_op(OpRegistry& r);  // grid_sample.cpp

void register_index_ops(OpRegistry& r) {
  register_einsum_op(r);
  register_cumsum_op(r);
  register_grid_sample_op(r);
  r.add({"ArgMax", "", infer_arg_reduce});
  r.add({"ArgMin", "", infer_arg_reduce});
  r.add({"Loop", "", infer_loop});
  r.add({"GatherElements", "", infer_gather_elements});
  r.add({"ScatterElements", "", infer_scatter_elements});
  r.add({"Scatter", "", infer_scatter_elements});
  r.add({"RoiAlign", "", infer_roi_align});
}

}  // namespace trtutils::ops
