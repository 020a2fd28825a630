// QuantizeLinear / DequantizeLinear argument rules, shared by shape inference and the CPU
// kernels: output dtypes per opset and the scale layout (per tensor, per axis, blocked).
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace trtutils::ops {

// QuantizeLinear's output dtype: the zero point's dtype when given (zp_dtype != kUndefined),
// else opset 21's output_dtype attribute, else uint8. Throws kInvalidArgument when both are
// given and differ, kNotSupported for dtypes the kernels cannot produce.
DataType quantize_output_dtype(const ir::Node& node, int64_t opset, DataType zp_dtype);
// DequantizeLinear's output dtype: float32 before opset 19, the scale's dtype from 19 on.
DataType dequantize_output_dtype(const ir::Node& node, int64_t opset, DataType scale_dtype);

// How a scale (and zero point) tensor maps onto x: element (o, a, i) of x viewed as
// [outer, axis_len, inner] uses scale index 0 (per tensor), a (per axis) or
// (o * num_blocks + a / block) * inner + i (blocked, opset 21).
struct QuantLayout {
  enum class Kind { kPerTensor, kPerAxis, kBlocked };
  Kind kind = Kind::kPerTensor;
  int64_t outer = 1, axis_len = 1, inner = 1;
  int64_t block = 0, num_blocks = 1;
};
// Validates the scale (and zero point, if zp_shape is given) shape against x's; throws
// Error(kInvalidArgument) naming the node on a mismatch.
QuantLayout quant_layout(const ir::Node& node, int64_t opset, const Shape& x, const Shape& scale,
                         const Shape* zp_shape);

}  // namespace trtutils::ops
