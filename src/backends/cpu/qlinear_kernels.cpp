// CPU kernels for com.trtutils::QConv / QGemm / QMatMul (contract: ops/qlinear_ops.h).
//
// Two paths:
//  - int8 (X int8/uint8, W int8 with zero zero points, Y float32/int8/uint8): oneDNN's int8
//    primitives (onednn_int8.cpp), when the configuration and the ISA allow an exact product;
//  - float, the definition itself: dequantize X (and R), take W dequantized once (cached for a
//    constant W), run the float op (FusedConv / MatMul kernels: oneDNN f32, or the plain
//    reference with use_reference), add bias / residual, activation, quantize. float8 always
//    runs this way, and so does anything the int8 path declines.
#include "backends/cpu/qlinear_kernels.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/copy_util.h"
#include "core/check.h"
#include "ops/nn_geometry.h"
#include "ops/op_registry.h"
#include "ops/qlinear_ops.h"

namespace trtutils::cpu {

namespace qlinear {

std::vector<uint8_t> buffer_sample(const Tensor& t) {
  const int64_t n = static_cast<int64_t>(t.nbytes());
  const int64_t k = std::min<int64_t>(n, 32);
  std::vector<uint8_t> s(static_cast<size_t>(k));
  const uint8_t* p = static_cast<const uint8_t*>(t.raw());
  for (int64_t i = 0; i < k; ++i) s[i] = p[i * n / k];
  return s;
}

}  // namespace qlinear

namespace {

using namespace ops::qlinear;
using qlinear::Epilogue;
using qlinear::Operand;

bool is_int8(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8;
}

bool is_quantized(DataType t) {
  return is_int8(t) || t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E5M2;
}

// Value i of a quantized tensor (or zero point) as float: exact for int8/uint8/float8.
inline float qvalue(DataType t, const void* p, int64_t i) {
  switch (t) {
    case DataType::kInt8:
      return static_cast<float>(static_cast<const int8_t*>(p)[i]);
    case DataType::kUInt8:
      return static_cast<float>(static_cast<const uint8_t*>(p)[i]);
    case DataType::kFloat8E4M3FN:
      return e4m3fn_to_float(static_cast<const float8_e4m3fn*>(p)[i]);
    case DataType::kFloat8E5M2:
      return e5m2_to_float(static_cast<const float8_e5m2*>(p)[i]);
    case DataType::kUndefined:
    case DataType::kFloat32:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kString:
    case DataType::kBool:
    case DataType::kFloat16:
    case DataType::kFloat64:
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kUInt32:
    case DataType::kUInt64:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kUInt4:
    case DataType::kInt4:
      break;
  }
  return 0.0f;
}

// Everything a Q-op node's inputs say, validated.
struct Parsed {
  const Tensor* x = nullptr;
  float x_scale = 1.0f, x_zp = 0.0f;
  const Tensor* w = nullptr;
  std::vector<float> w_scale, w_zp;  // w_zp: w_scale's size (zeros when omitted)
  bool w_zp_zero = true;
  const Tensor* bias = nullptr;
  bool quantized_out = false;
  float y_scale = 1.0f, y_zp = 0.0f;
  DataType out_t = DataType::kFloat32;
  const Tensor* residual = nullptr;
  bool r_quantized = false;
  float r_scale = 1.0f, r_zp = 0.0f;
  nn::ConvActivation act = nn::ConvActivation::kNone;
  float alpha = 0, beta = 0;
};

float one_scale(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  TRT_CHECK_ARG(t.dtype() == DataType::kFloat32 && t.numel() == 1,
                "{}: {} must be one float32 value, got {} {}", ctx.node.describe(), what,
                dtype_name(t.dtype()), shape_str(t.shape()));
  return *t.data<float>();
}

float one_zero_point(const KernelContext& ctx, size_t i, DataType value_t, const char* what) {
  if (!ctx.has_input(i)) return 0.0f;
  const Tensor& t = ctx.input(i);
  TRT_CHECK_ARG(t.dtype() == value_t && t.numel() == 1, "{}: {} must be one {} value, got {} {}",
                ctx.node.describe(), what, dtype_name(value_t), dtype_name(t.dtype()),
                shape_str(t.shape()));
  return qvalue(t.dtype(), t.raw(), 0);
}

void read_activation(const ir::Node& node, Parsed& q) {
  const ops::FusedActivationAttr a = ops::read_fused_activation(node);
  q.act = a.kind;
  q.alpha = a.alpha;
  q.beta = a.beta;
}

// channels: the number of output channels a per-channel w_scale must have.
Parsed parse(const KernelContext& ctx, int64_t channels) {
  const ir::Node& node = ctx.node;
  Parsed q;
  TRT_CHECK_ARG(ctx.num_inputs() <= kNumInputs, "{}: at most {} inputs, got {}", node.describe(),
                static_cast<size_t>(kNumInputs), ctx.num_inputs());
  q.x = &ctx.input(kX);
  q.w = &ctx.input(kW);
  for (const Tensor* t : {q.x, q.w})
    TRT_CHECK(is_quantized(t->dtype()), ErrorCode::kNotSupported,
              "{}: quantized operands must be int8, uint8, float8e4m3fn or float8e5m2, got {}",
              node.describe(), dtype_name(t->dtype()));
  q.x_scale = one_scale(ctx, kXScale, "x_scale");
  q.x_zp = one_zero_point(ctx, kXZeroPoint, q.x->dtype(), "x_zero_point");
  const Tensor& ws = ctx.input(kWScale);
  TRT_CHECK_ARG(ws.dtype() == DataType::kFloat32 &&
                    (ws.numel() == 1 || (ws.rank() == 1 && ws.numel() == channels)),
                "{}: w_scale must be float32 with 1 or {} values, got {} {}", node.describe(),
                channels, dtype_name(ws.dtype()), shape_str(ws.shape()));
  q.w_scale.assign(ws.data<float>(), ws.data<float>() + ws.numel());
  q.w_zp.assign(q.w_scale.size(), 0.0f);
  if (ctx.has_input(kWZeroPoint)) {
    const Tensor& z = ctx.input(kWZeroPoint);
    TRT_CHECK_ARG(z.dtype() == q.w->dtype() && z.numel() == ws.numel(),
                  "{}: w_zero_point must be {} with w_scale's {} values, got {} {}",
                  node.describe(), dtype_name(q.w->dtype()), ws.numel(), dtype_name(z.dtype()),
                  shape_str(z.shape()));
    for (int64_t i = 0; i < z.numel(); ++i) {
      q.w_zp[i] = qvalue(z.dtype(), z.raw(), i);
      if (q.w_zp[i] != 0.0f) q.w_zp_zero = false;
    }
  }
  if (ctx.has_input(kBias)) {
    q.bias = &ctx.input(kBias);
    TRT_CHECK_ARG(q.bias->dtype() == DataType::kFloat32 && q.bias->numel() == channels,
                  "{}: B must be float32 with {} values, got {} {}", node.describe(), channels,
                  dtype_name(q.bias->dtype()), shape_str(q.bias->shape()));
  }
  TRT_CHECK_ARG(ctx.has_input(kYScale) == ctx.has_input(kYZeroPoint),
                "{}: y_scale and y_zero_point must be given together", node.describe());
  if (ctx.has_input(kYScale)) {
    q.quantized_out = true;
    q.out_t = ctx.input(kYZeroPoint).dtype();
    TRT_CHECK(is_quantized(q.out_t), ErrorCode::kNotSupported,
              "{}: quantized output dtype {} is not supported", node.describe(),
              dtype_name(q.out_t));
    q.y_scale = one_scale(ctx, kYScale, "y_scale");
    q.y_zp = one_zero_point(ctx, kYZeroPoint, q.out_t, "y_zero_point");
  }
  if (ctx.has_input(kResidual)) {
    q.residual = &ctx.input(kResidual);
    q.r_quantized = ctx.has_input(kRScale);
    if (q.r_quantized) {
      TRT_CHECK(is_quantized(q.residual->dtype()), ErrorCode::kNotSupported,
                "{}: quantized residual dtype {} is not supported", node.describe(),
                dtype_name(q.residual->dtype()));
      q.r_scale = one_scale(ctx, kRScale, "r_scale");
      q.r_zp = one_zero_point(ctx, kRZeroPoint, q.residual->dtype(), "r_zero_point");
    } else {
      TRT_CHECK_ARG(q.residual->dtype() == DataType::kFloat32,
                    "{}: a residual without r_scale must be float32, got {}", node.describe(),
                    dtype_name(q.residual->dtype()));
    }
  }
  read_activation(node, q);
  return q;
}

bool positive_finite(float v) {
  return std::isfinite(v) && v > 0.0f;
}

// The int8 path's preconditions on what parse() read (the ISA check comes later).
bool int8_candidate(const KernelContext& ctx, const Parsed& q) {
  if (ctx.use_reference || !is_int8(q.x->dtype()) || q.w->dtype() != DataType::kInt8 ||
      !q.w_zp_zero)
    return false;
  if (q.quantized_out && !is_int8(q.out_t)) return false;
  if (q.residual && q.r_quantized && !is_int8(q.residual->dtype())) return false;
  bool ok = positive_finite(q.x_scale) && (!q.quantized_out || positive_finite(q.y_scale));
  for (float s : q.w_scale) ok = ok && positive_finite(s);
  return ok;
}

Epilogue make_epilogue(const Parsed& q) {
  Epilogue ep;
  ep.bias = q.bias;
  ep.residual = q.residual;
  ep.residual_quantized = q.r_quantized;
  ep.r_scale = q.r_scale;
  ep.r_zp = static_cast<int32_t>(q.r_zp);
  ep.act = q.act;
  ep.alpha = q.alpha;
  ep.beta = q.beta;
  ep.quantized_out = q.quantized_out;
  ep.y_scale = q.y_scale;
  ep.y_zp = static_cast<int32_t>(q.y_zp);
  return ep;
}

// ---- the float path ---------------------------------------------------------------------------

// (t - zp) * scale in float32 with per-tensor scalars.
Tensor dequantize(const Tensor& t, float scale, float zp) {
  Tensor r = Tensor::uninitialized(DataType::kFloat32, t.shape());
  float* d = r.data<float>();
  const int64_t n = t.numel();
  const DataType dt = t.dtype();
  const void* p = t.raw();
  if (dt == DataType::kInt8 || dt == DataType::kUInt8) {
    const int32_t z = static_cast<int32_t>(zp);
    if (dt == DataType::kInt8) {
      const int8_t* s = static_cast<const int8_t*>(p);
#pragma omp parallel for schedule(static) if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i] - z) * scale;
    } else {
      const uint8_t* s = static_cast<const uint8_t*>(p);
#pragma omp parallel for schedule(static) if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i] - z) * scale;
    }
    return r;
  }
#pragma omp parallel for schedule(static) if (n > (1 << 14))
  for (int64_t i = 0; i < n; ++i) d[i] = (qvalue(dt, p, i) - zp) * scale;
  return r;
}

// W dequantized per channel (channel c = index along axis `axis` of W) as float32; with
// `transpose` the 2-D result is transposed (QGemm's transB), so it is always [K, N] there.
Tensor dequantize_weights(const Tensor& w, const std::vector<float>& scale,
                          const std::vector<float>& zp, int64_t axis, bool transpose) {
  const Shape& s = w.shape();
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (d < axis) outer *= s[d];
    if (d == axis) len = s[d];
    if (d > axis) inner *= s[d];
  }
  Tensor r = Tensor::uninitialized(DataType::kFloat32, s);
  float* d = r.data<float>();
  const DataType dt = w.dtype();
  const void* p = w.raw();
  const bool per_channel = scale.size() > 1;
#pragma omp parallel for schedule(static) if (w.numel() > (1 << 16))
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < len; ++a) {
      const size_t c = per_channel ? static_cast<size_t>(a) : 0;
      const int64_t base = (o * len + a) * inner;
      for (int64_t i = 0; i < inner; ++i)
        d[base + i] = (qvalue(dt, p, base + i) - zp[c]) * scale[c];
    }
  if (!transpose) return r;
  Tensor t = Tensor::uninitialized(DataType::kFloat32, {s[1], s[0]});
  float* td = t.data<float>();
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j) td[j * s[0] + i] = d[i * s[1] + j];
  return t;
}

// Dequantized constant weights, cached by buffer (so that the float kernels' own caches of
// packed weights, keyed by the float buffer's address, hit on every run).
struct DequantEntry {
  std::weak_ptr<const uint8_t> w;  // the quantized buffer (the key's address)
  std::vector<uint8_t> sample;
  std::vector<float> scale, zp;
  Tensor wf;
  bool stale() const { return w.expired(); }
};
LruCache<DequantEntry>& dequant_cache() {
  static auto* c = new LruCache<DequantEntry>(4096, size_t{2} << 30);
  return *c;
}

Tensor weights_float(const KernelContext& ctx, const Parsed& q, int64_t axis, bool transpose) {
  if (!ctx.input_is_constant(kW))
    return dequantize_weights(*q.w, q.w_scale, q.w_zp, axis, transpose);
  const std::string key = fmt::format("{}|{}|{}|{}|{}", q.w->raw(), dtype_name(q.w->dtype()),
                                      shape_str(q.w->shape()), axis, transpose);
  auto& c = dequant_cache();
  std::lock_guard<std::mutex> lock(c.mutex());
  std::shared_ptr<DequantEntry> e = c.find(key);
  if (e && (e->stale() || e->sample != qlinear::buffer_sample(*q.w) || e->scale != q.w_scale ||
            e->zp != q.w_zp))
    e = nullptr;
  if (e) return e->wf;
  e = std::make_shared<DequantEntry>();
  e->w = q.w->weak_buffer();
  e->sample = qlinear::buffer_sample(*q.w);
  e->scale = q.w_scale;
  e->zp = q.w_zp;
  e->wf = dequantize_weights(*q.w, q.w_scale, q.w_zp, axis, transpose);
  c.put(key, e, e->wf.nbytes());
  return e->wf;
}

Tensor residual_float(const Parsed& q) {
  if (!q.residual) return Tensor();
  return q.r_quantized ? dequantize(*q.residual, q.r_scale, q.r_zp) : *q.residual;
}

float activate(const Parsed& q, float v) {
  switch (q.act) {
    case nn::ConvActivation::kNone:
      return v;
    case nn::ConvActivation::kRelu:
      return v > 0.0f ? v : 0.0f;
    case nn::ConvActivation::kLeakyRelu:
      return v < 0.0f ? q.alpha * v : v;
    case nn::ConvActivation::kClip:
      return std::min(std::max(v, q.alpha), q.beta);
    case nn::ConvActivation::kSigmoid:
      return 1.0f / (1.0f + std::exp(-v));
    case nn::ConvActivation::kHardSwish:
      return v * std::max(0.0f, std::min(1.0f, v / 6.0f + 0.5f));
    case nn::ConvActivation::kSilu:  // as the graph computes it: x * Sigmoid(x)
      return v * (1.0f / (1.0f + std::exp(-v)));
  }
  return v;
}

// t = act(t + bias[last axis] + residual), in place, in the graph's order of operations.
void apply_epilogue(const Parsed& q, const Tensor& residual, Tensor& t) {
  float* y = t.data<float>();
  const int64_t total = t.numel();
  const int64_t n = q.bias ? q.bias->numel() : 1;
  const float* b = q.bias ? q.bias->data<float>() : nullptr;
  const float* r = q.residual ? residual.data<float>() : nullptr;
#pragma omp parallel for schedule(static) if (total > (1 << 16))
  for (int64_t i = 0; i < total; ++i) {
    float v = y[i];
    if (b) v += b[i % n];
    if (r) v += r[i];
    y[i] = activate(q, v);
  }
}

// QuantizeLinear(t, y_scale, y_zero_point) as the QuantizeLinear kernel computes it.
Tensor quantize(const Parsed& q, const Tensor& t) {
  Tensor out = Tensor::uninitialized(q.out_t, t.shape());
  const float* x = t.data<float>();
  const int64_t n = t.numel();
  const float s = q.y_scale, z = q.y_zp;
  if (q.out_t == DataType::kFloat8E4M3FN || q.out_t == DataType::kFloat8E5M2) {
    const bool e4m3 = q.out_t == DataType::kFloat8E4M3FN;
    uint8_t* d = out.data<uint8_t>();
#pragma omp parallel for schedule(static) if (n > (1 << 14))
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i] / s + z;
      d[i] = e4m3 ? float_to_e4m3fn(v, true).bits : float_to_e5m2(v, true).bits;
    }
    return out;
  }
  const bool u8 = q.out_t == DataType::kUInt8;
  const float lo = u8 ? 0.0f : -128.0f, hi = u8 ? 255.0f : 127.0f;
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] / s) + z;
    if (std::isnan(v)) v = z;
    v = v < lo ? lo : (v > hi ? hi : v);
    if (u8)
      out.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    else
      out.data<int8_t>()[i] = static_cast<int8_t>(v);
  }
  return out;
}

void set_result(KernelContext& ctx, const Parsed& q, const Tensor& t) {
  ctx.outputs.at(0) = q.quantized_out ? quantize(q, t) : t;
}

// A float op node (FusedConv / MatMul) with `node`'s attributes for the float kernels.
ir::Node float_node(const ir::Node& node, const char* op_type, const char* domain) {
  ir::Node n;
  n.name = node.name;
  n.op_type = op_type;
  n.domain = domain;
  n.outputs = {node.outputs.empty() ? std::string("y") : node.outputs[0]};
  n.attributes = node.attributes;
  n.attributes.erase("transB");
  n.attributes.erase("channels_last");
  if (std::string(op_type) == "MatMul") {
    n.attributes.erase("activation");
    n.attributes.erase("activation_params");
  }
  return n;
}

// ---- QConv ------------------------------------------------------------------------------------

nn::ConvProblem conv_problem(const KernelContext& ctx, const Shape& x_shape, Shape& out_shape) {
  const ir::Node& node = ctx.node;
  const Tensor& w = ctx.input(kW);
  TRT_CHECK_ARG(x_shape.size() >= 3 && w.rank() == x_shape.size(),
                "{}: X {} and W {} must have the same rank >= 3", node.describe(),
                shape_str(x_shape), shape_str(w.shape()));
  const size_t nsp = x_shape.size() - 2;
  TRT_CHECK(nsp <= 3, ErrorCode::kNotSupported, "{}: {}-D convolution is not supported",
            node.describe(), nsp);
  nn::ConvProblem p;
  p.nspatial = nsp;
  p.group = node.attr_int("group", 1);
  TRT_CHECK_ARG(p.group >= 1, "{}: group {} must be positive", node.describe(), p.group);
  p.batch = x_shape[0];
  p.in_channels = x_shape[1];
  TRT_CHECK_ARG(w.dim(1) * p.group == p.in_channels && w.dim(0) % p.group == 0,
                "{}: W {} does not match X's {} channels with group {}", node.describe(),
                shape_str(w.shape()), p.in_channels, p.group);
  p.out_channels = w.dim(0);
  const std::vector<int64_t> wk(w.shape().begin() + 2, w.shape().end());
  const ops::WindowSpec ws = ops::read_window_spec(node, nsp, &wk);
  out_shape = {p.batch, p.out_channels};
  const size_t o = 3 - nsp;
  for (size_t i = 0; i < nsp; ++i) {
    const ops::AxisGeometry g = ops::conv_axis(ws, i, x_shape[2 + i], node);
    p.in[o + i] = x_shape[2 + i];
    p.out[o + i] = g.out;
    p.kernel[o + i] = wk[i];
    p.stride[o + i] = ws.strides[i];
    p.dilation[o + i] = ws.dilations[i];
    p.pad_begin[o + i] = g.pad_begin;
    p.pad_end[o + i] = g.pad_end;
    out_shape.push_back(g.out);
  }
  return p;
}

// [N, C, spatial...] from [N, spatial..., C].
Shape channels_first(const Shape& s) {
  Shape r{s[0], s.back()};
  r.insert(r.end(), s.begin() + 1, s.end() - 1);
  return r;
}
Shape channels_last(const Shape& s) {
  Shape r{s[0]};
  r.insert(r.end(), s.begin() + 2, s.end());
  r.push_back(s[1]);
  return r;
}

void qconv_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool last = node.attr_int("channels_last", 0) != 0;
  const Tensor& x_in = ctx.input(kX);
  TRT_CHECK_ARG(x_in.rank() >= 3, "{}: X {} must have rank >= 3", node.describe(),
                shape_str(x_in.shape()));
  Shape out_shape;
  const nn::ConvProblem p =
      conv_problem(ctx, last ? channels_first(x_in.shape()) : x_in.shape(), out_shape);
  const Parsed q = parse(ctx, p.out_channels);
  const Shape y_shape = last ? channels_last(out_shape) : out_shape;
  if (q.residual)
    TRT_CHECK_ARG(q.residual->shape() == y_shape, "{}: residual {} must have the output's shape {}",
                  node.describe(), shape_str(q.residual->shape()), shape_str(y_shape));

  if (int8_candidate(ctx, q) && shape_numel(out_shape) > 0) {
    Tensor y = Tensor::uninitialized(q.out_t, y_shape);
    if (qlinear::onednn_qconv(p, last, Operand{q.x, q.x_scale, static_cast<int32_t>(q.x_zp)}, *q.w,
                              q.w_scale, ctx.input_is_constant(kW), make_epilogue(q), y)) {
      ctx.outputs.at(0) = y;
      return;
    }
  }
  // Float: FusedConv on the dequantized operands (nchw).
  Tensor xf = dequantize(*q.x, q.x_scale, q.x_zp);
  Tensor rf = residual_float(q);
  if (last) {
    xf = permute_channels(xf, false);
    if (q.residual) rf = permute_channels(rf, false);
  }
  const Tensor wf = weights_float(ctx, q, 0, false);
  const ir::Node fused = float_node(node, "FusedConv", "com.trtutils");
  std::vector<Tensor> outs =
      run_node(fused, ctx.opset, {&xf, &wf, q.bias, q.residual ? &rf : nullptr}, ctx.use_reference,
               {false, ctx.input_is_constant(kW), false, false});
  if (last) outs[0] = permute_channels(outs[0], true);
  set_result(ctx, q, outs[0]);
}

// ---- QGemm / QMatMul --------------------------------------------------------------------------

void qgemm_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(kX);
  const Tensor& w_in = ctx.input(kW);
  const bool tb = node.attr_int("transB", 0) != 0;
  TRT_CHECK_ARG(w_in.rank() == 2, "{}: W {} must be 2-D", node.describe(), shape_str(w_in.shape()));
  TRT_CHECK_ARG(x_in.rank() >= 1, "{}: X must have rank >= 1", node.describe());
  const int64_t k = tb ? w_in.dim(1) : w_in.dim(0), n = tb ? w_in.dim(0) : w_in.dim(1);
  TRT_CHECK_ARG(x_in.shape().back() == k, "{}: X {} and W {} (transB={}) disagree on K",
                node.describe(), shape_str(x_in.shape()), shape_str(w_in.shape()), tb);
  const Parsed q = parse(ctx, n);
  Shape out_shape(x_in.shape().begin(), x_in.shape().end() - 1);
  out_shape.push_back(n);
  if (q.residual)
    TRT_CHECK_ARG(q.residual->shape() == out_shape,
                  "{}: residual {} must have the output's shape {}", node.describe(),
                  shape_str(q.residual->shape()), shape_str(out_shape));
  const int64_t m = k > 0 ? x_in.numel() / k : shape_numel(out_shape) / std::max<int64_t>(n, 1);

  if (int8_candidate(ctx, q) && shape_numel(out_shape) > 0 && k > 0) {
    Tensor y = Tensor::uninitialized(q.out_t, out_shape);
    if (qlinear::onednn_qgemm(Operand{q.x, q.x_scale, static_cast<int32_t>(q.x_zp)}, m, k, n, *q.w,
                              tb, q.w_scale, ctx.input_is_constant(kW), make_epilogue(q), y)) {
      ctx.outputs.at(0) = y;
      return;
    }
  }
  const Tensor xf = dequantize(*q.x, q.x_scale, q.x_zp);
  const Tensor wf = weights_float(ctx, q, tb ? 0 : 1, tb);
  const ir::Node mm = float_node(node, "MatMul", "");
  std::vector<Tensor> outs = run_node(mm, ctx.opset, {&xf, &wf}, ctx.use_reference);
  Tensor t = outs[0];
  if (q.bias || q.residual || q.act != nn::ConvActivation::kNone) {
    const Tensor rf = residual_float(q);
    apply_epilogue(q, rf, t);
  }
  set_result(ctx, q, t);
}

void qmatmul_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& a_in = ctx.input(kX);
  const Tensor& b_in = ctx.input(kW);
  TRT_CHECK_ARG(a_in.rank() >= 1 && b_in.rank() >= 1, "{}: operands must have rank >= 1",
                node.describe());
  Shape as = a_in.shape(), bs = b_in.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  TRT_CHECK_ARG(as.back() == bs[bs.size() - 2], "{}: inner dimensions differ: A {} and B {}",
                node.describe(), shape_str(a_in.shape()), shape_str(b_in.shape()));
  const Shape batch =
      ops::broadcast_shapes(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2), node);
  const size_t r = batch.size() + 2;
  as.insert(as.begin(), r - as.size(), 1);
  bs.insert(bs.begin(), r - bs.size(), 1);
  Shape ys = batch;
  ys.push_back(as[r - 2]);
  ys.push_back(bs[r - 1]);
  Shape out_shape = batch;
  if (a_in.rank() > 1) out_shape.push_back(as[r - 2]);
  if (b_in.rank() > 1) out_shape.push_back(bs[r - 1]);
  const int64_t n = out_shape.empty() ? 1 : (b_in.rank() > 1 ? bs[r - 1] : 1);
  const Parsed q = parse(ctx, ctx.has_input(kBias) ? ctx.input(kBias).numel() : 1);
  TRT_CHECK_ARG(q.w_scale.size() == 1, "{}: w_scale must be one value (per tensor)",
                node.describe());
  if (q.bias)
    TRT_CHECK_ARG(q.bias->numel() == n && b_in.rank() > 1,
                  "{}: B must have one value per output column ({}), got {}", node.describe(), n,
                  q.bias->numel());
  if (q.residual)
    TRT_CHECK_ARG(q.residual->shape() == out_shape,
                  "{}: residual {} must have the output's shape {}", node.describe(),
                  shape_str(q.residual->shape()), shape_str(out_shape));

  if (int8_candidate(ctx, q) && shape_numel(ys) > 0) {
    Tensor y = Tensor::uninitialized(q.out_t, out_shape);
    if (qlinear::onednn_qmatmul(Operand{q.x, q.x_scale, static_cast<int32_t>(q.x_zp)}, as, *q.w,
                                q.w_scale[0], bs, make_epilogue(q), y, ys)) {
      ctx.outputs.at(0) = y;
      return;
    }
  }
  const Tensor af = dequantize(*q.x, q.x_scale, q.x_zp);
  const Tensor bf = dequantize(*q.w, q.w_scale[0], q.w_zp[0]);
  const ir::Node mm = float_node(node, "MatMul", "");
  std::vector<Tensor> outs = run_node(mm, ctx.opset, {&af, &bf}, ctx.use_reference);
  Tensor t = outs[0];
  if (q.bias || q.residual || q.act != nn::ConvActivation::kNone) {
    const Tensor rf = residual_float(q);
    apply_epilogue(q, rf, t);
  }
  set_result(ctx, q, t);
}

}  // namespace

namespace qlinear {

void release_stale() {
  {
    std::lock_guard<std::mutex> lock(dequant_cache().mutex());
    dequant_cache().erase_stale();
  }
  onednn_int8_release_stale();
}

void clear_caches() {
  {
    std::lock_guard<std::mutex> lock(dequant_cache().mutex());
    dequant_cache().clear();
  }
  onednn_int8_clear_caches();
}

}  // namespace qlinear

void register_qlinear_kernels(KernelRegistry& r) {
  r.add({"QConv", kDomain, qconv_kernel});
  r.add({"QGemm", kDomain, qgemm_kernel});
  r.add({"QMatMul", kDomain, qmatmul_kernel});
}

}  // namespace trtutils::cpu
