// Shape/type inference for the reductions (Reduce*: axes as attribute before opset 18 -- 13 for
// ReduceSum -- or as an optional input after) and the softmax family. Registered from
// register_elementwise_ops().
#include <optional>

#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::ops {

void register_reduce_ops(OpRegistry& r);

namespace {

void infer_reduce(InferContext& ctx) {
  const ir::Node& node = ctx.node;
  const DataType dtype = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool noop = node.attr_int("noop_with_empty_axes", 0) != 0;
  std::optional<std::vector<int64_t>> axes;  // nullopt: given but not a constant
  if (node.has_attr("axes")) {
    axes = node.attr_ints("axes");
  } else if (ctx.has_input(1)) {
    const DataType at = ctx.input_dtype(1);
    TRT_CHECK(at == DataType::kInt64 || at == DataType::kUndefined, ErrorCode::kInvalidArgument,
              "{}: axes input must be int64, got {}", node.describe(), dtype_name(at));
    if (const Tensor* t = ctx.constant(1)) axes = t->to_int64_vector();
  } else {
    axes = std::vector<int64_t>{};
  }
  if (!in) {
    ctx.set_output(0, dtype, std::nullopt);
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  if (!axes) {
    // Which dims go is unknown: with keepdims the rank stays and dims of size 1 stay 1.
    if (!keepdims) {
      ctx.set_output(0, dtype, std::nullopt);
      return;
    }
    ir::SymShape out(in->size());
    for (size_t d = 0; d < in->size(); ++d)
      if ((*in)[d].is_static() && (*in)[d].value == 1) out[d] = ir::Dim(1);
    ctx.set_output(0, dtype, out);
    return;
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), axes->empty() && !noop);
  for (int64_t a : *axes) {
    const int64_t d = normalize_axis(a, rank, node);
    TRT_CHECK(!reduced[d], ErrorCode::kInvalidArgument, "{}: axis {} is repeated in axes",
              node.describe(), a);
    reduced[d] = true;
  }
  ir::SymShape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out.push_back((*in)[d]);
    } else if (keepdims) {
      out.push_back(ir::Dim(1));
    }
  }
  ctx.set_output(0, dtype, out);
}

void infer_softmax(InferContext& ctx) {
  const auto& in = ctx.input_shape(0);
  if (in) {
    const int64_t def = ctx.opset < 13 ? 1 : -1;
    normalize_axis(ctx.node.attr_int("axis", def), static_cast<int64_t>(in->size()), ctx.node);
  }
  ctx.set_output(0, ctx.input_dtype(0), in);
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    r.add({op, "", infer_reduce});
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) r.add({op, "", infer_softmax});
}

}  // namespace trtutils::ops
