// CPU kernels for QuantizeLinear / DequantizeLinear (ONNX opsets 10..21).
// Quantize: q = saturate(round_half_even(x / scale) + zero_point) for integer outputs, with
// x / scale computed in float32 (a division, not a multiply by 1/scale) so ties round like
// ONNX Runtime and the ONNX reference; float8 outputs: cast(x / scale + zero_point) with the
// `saturate` attribute. Dequantize: y = float(x - zero_point) * scale in float32, then
// converted to the output dtype (the scale's dtype from opset 19).
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/fast_quantize.h"
#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "ops/quant_params.h"

namespace trtutils::cpu {

namespace {

using ops::QuantLayout;

// All elements as float32 (x, scales, float zero points).
std::vector<float> load_floats(const Tensor& t, const ir::Node& node) {
  const int64_t n = t.numel();
  std::vector<float> v(static_cast<size_t>(n));
  switch (t.dtype()) {
    case DataType::kFloat32:
      if (n) std::memcpy(v.data(), t.raw(), static_cast<size_t>(n) * 4);
      return v;
    case DataType::kFloat16:
      for (int64_t i = 0; i < n; ++i) v[i] = half_to_float(t.data<half>()[i]);
      return v;
    case DataType::kBFloat16:
      for (int64_t i = 0; i < n; ++i) v[i] = bfloat16_to_float(t.data<bfloat16>()[i]);
      return v;
    case DataType::kInt32:
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(t.data<int32_t>()[i]);
      return v;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kUInt4:
    case DataType::kInt4:
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(t.at_double(i));
      return v;
    case DataType::kUndefined:
    case DataType::kInt64:
    case DataType::kString:
    case DataType::kBool:
    case DataType::kFloat64:
    case DataType::kUInt32:
    case DataType::kUInt64:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2FNUZ:
      break;
  }
  TRT_THROW(ErrorCode::kNotSupported, "{}: dtype {} is not supported here", node.describe(),
            dtype_name(t.dtype()));
}

// All elements of an integer tensor as int32 (quantized inputs and zero points).
std::vector<int32_t> load_ints(const Tensor& t, const ir::Node& node) {
  const int64_t n = t.numel();
  std::vector<int32_t> v(static_cast<size_t>(n));
  switch (t.dtype()) {
    case DataType::kUInt8:
      for (int64_t i = 0; i < n; ++i) v[i] = t.data<uint8_t>()[i];
      return v;
    case DataType::kInt8:
      for (int64_t i = 0; i < n; ++i) v[i] = t.data<int8_t>()[i];
      return v;
    case DataType::kUInt16:
      for (int64_t i = 0; i < n; ++i) v[i] = t.data<uint16_t>()[i];
      return v;
    case DataType::kInt16:
      for (int64_t i = 0; i < n; ++i) v[i] = t.data<int16_t>()[i];
      return v;
    case DataType::kInt32:
      if (n) std::memcpy(v.data(), t.raw(), static_cast<size_t>(n) * 4);
      return v;
    case DataType::kUInt4:
    case DataType::kInt4:
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(t.at_double(i));
      return v;
    case DataType::kUndefined:
    case DataType::kFloat32:
    case DataType::kInt64:
    case DataType::kString:
    case DataType::kBool:
    case DataType::kFloat16:
    case DataType::kFloat64:
    case DataType::kUInt32:
    case DataType::kUInt64:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      break;
  }
  TRT_THROW(ErrorCode::kNotSupported, "{}: quantized dtype {} is not supported", node.describe(),
            dtype_name(t.dtype()));
}

// Calls fn(element index, scale index) for every element of x in order.
template <typename F>
void for_each_scaled(const QuantLayout& l, F&& fn) {
  int64_t e = 0;
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t a = 0; a < l.axis_len; ++a) {
      switch (l.kind) {
        case QuantLayout::Kind::kPerTensor:
          for (int64_t i = 0; i < l.inner; ++i) fn(e++, 0);
          break;
        case QuantLayout::Kind::kPerAxis:
          for (int64_t i = 0; i < l.inner; ++i) fn(e++, a);
          break;
        case QuantLayout::Kind::kBlocked: {
          const int64_t base = (o * l.num_blocks + a / l.block) * l.inner;
          for (int64_t i = 0; i < l.inner; ++i) fn(e++, base + i);
          break;
        }
      }
    }
  }
}

struct IntRange {
  int32_t lo, hi;
};
IntRange int_range(DataType t) {
  if (t == DataType::kUInt8) return {0, 255};
  if (t == DataType::kInt8) return {-128, 127};
  if (t == DataType::kUInt16) return {0, 65535};
  if (t == DataType::kInt16) return {-32768, 32767};
  if (t == DataType::kUInt4) return {0, 15};
  if (t == DataType::kInt4) return {-8, 7};
  TRT_THROW(ErrorCode::kInternal, "int_range: {} is not an integer quantized type", dtype_name(t));
}

template <typename T>
void store_ints(Tensor& out, const std::vector<int32_t>& q) {
  T* d = out.data<T>();
  for (size_t i = 0; i < q.size(); ++i) d[i] = static_cast<T>(q[i]);
}

void quantize_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? ctx.inputs[2] : nullptr;
  TRT_CHECK(x.dtype() == DataType::kFloat32 || x.dtype() == DataType::kFloat16 ||
                x.dtype() == DataType::kBFloat16 || x.dtype() == DataType::kInt32,
            ErrorCode::kNotSupported, "{}: quantizing {} is not supported", node.describe(),
            dtype_name(x.dtype()));
  const DataType out_t =
      ops::quantize_output_dtype(node, ctx.opset, zp ? zp->dtype() : DataType::kUndefined);
  const QuantLayout l =
      ops::quant_layout(node, ctx.opset, x.shape(), scale.shape(), zp ? &zp->shape() : nullptr);
  if (x.dtype() == DataType::kFloat32 && l.kind == QuantLayout::Kind::kPerTensor &&
      (out_t == DataType::kInt8 || out_t == DataType::kUInt8) &&
      scale.dtype() == DataType::kFloat32) {
    // The common activation case (Q/DQ models), parallel and without copies; same arithmetic.
    Tensor& out = ctx.make_output(0, out_t, x.shape());
    const float z = zp ? static_cast<float>(zp->at_double(0)) : 0.0f;
    quantize_per_tensor(x.data<float>(), x.numel(), *scale.data<float>(), z,
                        out_t == DataType::kInt8, out.raw());
    return;
  }
  const std::vector<float> xs = load_floats(x, node);
  const std::vector<float> ss = load_floats(scale, node);
  Tensor& out = ctx.make_output(0, out_t, x.shape());

  if (out_t == DataType::kFloat8E4M3FN || out_t == DataType::kFloat8E5M2) {
    const bool saturate = node.attr_int("saturate", 1) != 0;
    const std::vector<float> zs = zp ? load_floats(*zp, node) : std::vector<float>(ss.size(), 0);
    uint8_t* d = out.data<uint8_t>();
    const bool e4m3 = out_t == DataType::kFloat8E4M3FN;
    for_each_scaled(l, [&](int64_t e, int64_t s) {
      const float v = xs[e] / ss[s] + zs[s];
      d[e] = e4m3 ? float_to_e4m3fn(v, saturate).bits : float_to_e5m2(v, saturate).bits;
    });
    return;
  }

  const IntRange r = int_range(out_t);
  const std::vector<int32_t> zs = zp ? load_ints(*zp, node) : std::vector<int32_t>(ss.size(), 0);
  std::vector<int32_t> q(static_cast<size_t>(x.numel()));
  const float lo = static_cast<float>(r.lo), hi = static_cast<float>(r.hi);
  for_each_scaled(l, [&](int64_t e, int64_t s) {
    // Rounding and the zero point in float, then clamping: exact for |values| < 2^24, and
    // out-of-range values (inf included) saturate instead of overflowing an int.
    float v = std::nearbyint(xs[e] / ss[s]) + static_cast<float>(zs[s]);
    if (std::isnan(v)) v = static_cast<float>(zs[s]);
    v = v < lo ? lo : (v > hi ? hi : v);
    q[e] = static_cast<int32_t>(v);
  });
  if (out_t == DataType::kUInt8) return store_ints<uint8_t>(out, q);
  if (out_t == DataType::kInt8) return store_ints<int8_t>(out, q);
  if (out_t == DataType::kUInt16) return store_ints<uint16_t>(out, q);
  if (out_t == DataType::kInt16) return store_ints<int16_t>(out, q);
  // int4 / uint4: two per byte, the first in the low nibble
  uint8_t* d = out.data<uint8_t>();
  for (size_t i = 0; i < q.size(); ++i)
    d[i / 2] = static_cast<uint8_t>(d[i / 2] | ((q[i] & 0xf) << (4 * (i % 2))));
}

void dequantize_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? ctx.inputs[2] : nullptr;
  const DataType out_t = ops::dequantize_output_dtype(node, ctx.opset, scale.dtype());
  if (zp)
    TRT_CHECK(zp->dtype() == x.dtype(), ErrorCode::kInvalidArgument,
              "{}: the zero point's dtype {} differs from the input's {}", node.describe(),
              dtype_name(zp->dtype()), dtype_name(x.dtype()));
  const QuantLayout l =
      ops::quant_layout(node, ctx.opset, x.shape(), scale.shape(), zp ? &zp->shape() : nullptr);
  if ((x.dtype() == DataType::kInt8 || x.dtype() == DataType::kUInt8) &&
      l.kind == QuantLayout::Kind::kPerTensor && scale.dtype() == DataType::kFloat32 &&
      out_t == DataType::kFloat32) {  // the common activation case, same arithmetic
    Tensor& out = ctx.make_output(0, out_t, x.shape());
    const int32_t z = zp ? static_cast<int32_t>(zp->at_double(0)) : 0;
    dequantize_per_tensor(x.raw(), x.numel(), *scale.data<float>(), z, x.dtype() == DataType::kInt8,
                          out.data<float>());
    return;
  }
  const std::vector<float> ss = load_floats(scale, node);
  std::vector<float> y(static_cast<size_t>(x.numel()));
  if (x.dtype() == DataType::kFloat8E4M3FN || x.dtype() == DataType::kFloat8E5M2) {
    const std::vector<float> xs = load_floats(x, node);
    const std::vector<float> zs = zp ? load_floats(*zp, node) : std::vector<float>(ss.size(), 0);
    for_each_scaled(l, [&](int64_t e, int64_t s) { y[e] = (xs[e] - zs[s]) * ss[s]; });
  } else {
    const std::vector<int32_t> xs = load_ints(x, node);
    const std::vector<int32_t> zs = zp ? load_ints(*zp, node) : std::vector<int32_t>(ss.size(), 0);
    for_each_scaled(l, [&](int64_t e, int64_t s) {
      y[e] = static_cast<float>(static_cast<int64_t>(xs[e]) - zs[s]) * ss[s];
    });
  }
  Tensor& out = ctx.make_output(0, out_t, x.shape());
  if (out_t == DataType::kFloat32) {
    if (!y.empty()) std::memcpy(out.raw(), y.data(), y.size() * 4);
  } else if (out_t == DataType::kFloat16) {
    for (size_t i = 0; i < y.size(); ++i) out.data<half>()[i] = float_to_half(y[i]);
  } else {
    TRT_INTERNAL_CHECK(out_t == DataType::kBFloat16);
    for (size_t i = 0; i < y.size(); ++i) out.data<bfloat16>()[i] = float_to_bfloat16(y[i]);
  }
}

}  // namespace

void register_quant_kernels(KernelRegistry& r) {
  r.add({"QuantizeLinear", "", quantize_kernel});
  r.add({"DequantizeLinear", "", dequantize_kernel});
}

}  // namespace trtutils::cpu
