// Shape/type inference for the quant op family (QuantizeLinear, DequantizeLinear).
#include "core/check.h"
#include "ops/op_registry.h"
#include "ops/quant_params.h"

namespace trtutils::ops {

namespace {

bool quantized_type_supported(DataType t) {
  switch (t) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kUInt4:
    case DataType::kInt4:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
      return true;
    case DataType::kUndefined:
    case DataType::kFloat32:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kString:
    case DataType::kBool:
    case DataType::kFloat16:
    case DataType::kFloat64:
    case DataType::kUInt32:
    case DataType::kUInt64:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2FNUZ:
      return false;
  }
  return false;
}

}  // namespace

DataType quantize_output_dtype(const ir::Node& node, int64_t opset, DataType zp_dtype) {
  DataType attr = DataType::kUndefined;
  if (opset >= 21) {
    const int64_t v = node.attr_int("output_dtype", 0);
    if (v != 0) {
      const auto t = dtype_from_onnx(static_cast<int32_t>(v));
      TRT_CHECK(t.has_value(), ErrorCode::kInvalidArgument, "{}: unknown output_dtype {}",
                node.describe(), v);
      attr = *t;
    }
  }
  DataType out = DataType::kUInt8;
  if (zp_dtype != DataType::kUndefined) {
    TRT_CHECK(attr == DataType::kUndefined || attr == zp_dtype, ErrorCode::kInvalidArgument,
              "{}: output_dtype {} differs from the zero point's dtype {}", node.describe(),
              dtype_name(attr), dtype_name(zp_dtype));
    out = zp_dtype;
  } else if (attr != DataType::kUndefined) {
    out = attr;
  }
  TRT_CHECK(quantized_type_supported(out), ErrorCode::kNotSupported,
            "{}: quantizing to {} is not supported", node.describe(), dtype_name(out));
  return out;
}

DataType dequantize_output_dtype(const ir::Node& node, int64_t opset, DataType scale_dtype) {
  if (opset < 19) {
    TRT_CHECK(scale_dtype == DataType::kFloat32 || scale_dtype == DataType::kUndefined,
              ErrorCode::kInvalidArgument, "{}: the scale must be float32 before opset 19, got {}",
              node.describe(), dtype_name(scale_dtype));
    return DataType::kFloat32;
  }
  TRT_CHECK(scale_dtype == DataType::kFloat32 || scale_dtype == DataType::kFloat16 ||
                scale_dtype == DataType::kBFloat16,
            ErrorCode::kNotSupported,
            "{}: scale dtype {} is not supported (float32, float16, "
            "bfloat16)",
            node.describe(), dtype_name(scale_dtype));
  return scale_dtype;
}

QuantLayout quant_layout(const ir::Node& node, int64_t opset, const Shape& x, const Shape& scale,
                         const Shape* zp_shape) {
  QuantLayout l;
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t block = opset >= 21 ? node.attr_int("block_size", 0) : 0;
  TRT_CHECK(block >= 0, ErrorCode::kInvalidArgument, "{}: negative block_size {}", node.describe(),
            block);
  // Scalar and one-element 1-D are interchangeable for the per-tensor case (as in ORT).
  auto one = [](const Shape& s) { return s.size() <= 1 && shape_numel(s) == 1; };
  if (zp_shape)
    TRT_CHECK(*zp_shape == scale || (one(*zp_shape) && one(scale)), ErrorCode::kInvalidArgument,
              "{}: the zero point's shape {} differs from the scale's {}", node.describe(),
              shape_str(*zp_shape), shape_str(scale));
  const int64_t n = shape_numel(x);
  if (block == 0 && scale.size() <= 1 && shape_numel(scale) == 1) {
    // A scalar or a one-element 1-D scale is per tensor (as in ONNX Runtime).
    l.inner = n;
    return l;
  }
  TRT_CHECK(opset >= 13, ErrorCode::kInvalidArgument,
            "{}: the scale must be a scalar before opset 13, got shape {}", node.describe(),
            shape_str(scale));
  const int64_t axis = normalize_axis(node.attr_int("axis", 1), rank, node);
  for (int64_t d = 0; d < axis; ++d) l.outer *= x[d];
  for (int64_t d = axis + 1; d < rank; ++d) l.inner *= x[d];
  l.axis_len = x[axis];
  if (block == 0) {
    TRT_CHECK(scale.size() == 1 && scale[0] == x[axis], ErrorCode::kInvalidArgument,
              "{}: a per-axis scale must be 1-D with {} values (axis {} of input {}), got shape {}",
              node.describe(), x[axis], axis, shape_str(x), shape_str(scale));
    l.kind = QuantLayout::Kind::kPerAxis;
    return l;
  }
  l.kind = QuantLayout::Kind::kBlocked;
  l.block = block;
  l.num_blocks = (x[axis] + block - 1) / block;
  bool ok = static_cast<int64_t>(scale.size()) == rank;
  for (int64_t d = 0; ok && d < rank; ++d) ok = scale[d] == (d == axis ? l.num_blocks : x[d]);
  TRT_CHECK(ok, ErrorCode::kInvalidArgument,
            "{}: a blocked scale (block_size {}, axis {}) for input {} must have the input's "
            "shape with ceil({}/{}) = {} on the axis, got {}",
            node.describe(), block, axis, shape_str(x), x[axis], block, l.num_blocks,
            shape_str(scale));
  return l;
}

namespace {

void infer_quantize(InferContext& ctx) {
  const DataType zp = ctx.has_input(2) ? ctx.input_dtype(2) : DataType::kUndefined;
  const DataType xt = ctx.input_dtype(0);
  TRT_CHECK(xt == DataType::kFloat32 || xt == DataType::kFloat16 || xt == DataType::kBFloat16 ||
                xt == DataType::kInt32,
            ErrorCode::kNotSupported, "{}: quantizing {} is not supported", ctx.node.describe(),
            dtype_name(xt));
  ctx.set_output(0, quantize_output_dtype(ctx.node, ctx.opset, zp), ctx.input_shape(0));
}

void infer_dequantize(InferContext& ctx) {
  ctx.set_output(0, dequantize_output_dtype(ctx.node, ctx.opset, ctx.input_dtype(1)),
                 ctx.input_shape(0));
}

}  // namespace

void register_quant_ops(OpRegistry& r) {
  r.add({"QuantizeLinear", "", infer_quantize});
  r.add({"DequantizeLinear", "", infer_dequantize});
}

}  // namespace trtutils::ops
