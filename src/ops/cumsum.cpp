// CumSum (opset 11, 14): the running sum of x along the axis given by input 1 (a scalar), with
// attributes exclusive (each output leaves its own element out) and reverse (from the end). The
// output has x's dtype and shape.
#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::ops {
namespace {

void infer_cumsum(InferContext& ctx) {
  TRT_CHECK_ARG(ctx.has_input(1), "{}: input 'axis' is required", ctx.node.describe());
  const DataType at = ctx.input_dtype(1);
  TRT_CHECK_ARG(at == DataType::kUndefined || at == DataType::kInt32 || at == DataType::kInt64,
                "{}: axis must be int32 or int64, got {}", ctx.node.describe(), dtype_name(at));
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
}

}  // namespace

void register_cumsum_op(OpRegistry& r) {
  r.add({"CumSum", "", infer_cumsum});
}

}  // namespace trtutils::ops
