// QuantizeLinear / DequantizeLinear and the quantized islands com.trtutils::QConv / QGemm /
// QMatMul (semantics: ops/qlinear_ops.h). Three paths, chosen on the first run from the dtypes:
//   int8  X int8/uint8, W int8 with zero zero points: 2-D convolutions with int8 X without zero
//         point and output channels a multiple of 4 through cuDNN (NHWC int8, int32
//         accumulation, float output; input channels padded to a multiple of 4), else (and
//         when cuDNN refuses) cuBLASLt int8 x int8 -> int32 (convolutions via a byte im2col,
//         groups = 1); then one epilogue kernel (x zero point correction, scales, bias,
//         residual, activation, quantize);
//   fp8   X and W float8 with zero zero points on SM >= 89: cuBLASLt FP8 -> float32, the same
//         epilogue;
//   float everything else (grouped convolutions, uint8/float8 weights, QMatMul): dequantize X,
//         float32 cuDNN / cuBLASLt with W dequantized once, the same epilogue.
// Scales, zero points, W and B must be constants (qdq_fusion only fuses such islands).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernel_switches.h"
#include "ops/qlinear_ops.h"
#include "ops/quant_params.h"
#include "trtutils/logging.h"

namespace trtutils::cuda {

namespace {

using namespace ops::qlinear;

bool is_int8(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8;
}
bool is_fp8(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E5M2;
}
bool is_quantized(DataType t) {
  return is_int8(t) || is_fp8(t);
}

std::vector<float> floats_of(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(t.at_double(i));
  return v;
}

std::shared_ptr<void> upload_floats(const std::vector<float>& v) {
  return upload_bytes(v.data(), v.size() * sizeof(float));
}

// Device float32 copies of per-tensor / per-axis scale and zero point inputs, re-made when the
// inputs are not constants.
struct QuantParams {
  std::shared_ptr<void> scale, zero_point;
  bool cached = false;
};

void load_params(RunContext& ctx, Value& scale, Value* zp, QuantParams& p) {
  const bool constant = scale.constant && (!zp || zp->constant);
  if (p.cached && constant) return;
  p.scale = upload_floats(floats_of(ctx.host(scale)));
  p.zero_point = zp ? upload_floats(floats_of(ctx.host(*zp))) : nullptr;
  p.cached = constant;
}

k::QuantDesc quant_desc(const ir::Node& node, int64_t opset, const Value& x, const Value& scale,
                        const Value* zp, const QuantParams& p) {
  const Shape* zs = zp ? &zp->shape : nullptr;
  const ops::QuantLayout l = ops::quant_layout(node, opset, x.shape, scale.shape, zs);
  TRT_CHECK(l.kind != ops::QuantLayout::Kind::kBlocked, ErrorCode::kNotSupported,
            "{}: blocked quantization is not supported on CUDA", node.describe());
  k::QuantDesc q;
  q.n = x.numel();
  q.per_axis = l.kind == ops::QuantLayout::Kind::kPerAxis;
  q.axis_len = l.axis_len;
  q.inner = l.inner;
  q.scale = static_cast<const float*>(p.scale.get());
  q.zero_point = static_cast<const float*>(p.zero_point.get());
  return q;
}

// Per-tensor scales make QuantizeLinear / DequantizeLinear layout-free: a channels-last input
// stays channels-last (no NCHW copy around the stem's quantization, for one).
bool per_tensor_scale(const std::vector<Value*>& in) {
  return in.size() > 1 && in[1] && in[1]->numel() == 1 &&
         (in.size() < 3 || !in[2] || in[2]->numel() == 1);
}

class QuantizeOp : public GpuOp {
 public:
  std::string kernel() const override { return nhwc_ ? "CUDA kernel NHWC" : "CUDA kernel"; }
  void want_layouts(const RunContext&, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    if (per_tensor_scale(in)) want[0] = Layout::kAny;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& scale = *in.at(1);
    Value* zp = in.size() > 2 ? in[2] : nullptr;
    require_float(node, x.dtype, "input x");
    const DataType yt =
        ops::quantize_output_dtype(node, ctx.opset, zp ? zp->dtype : DataType::kUndefined);
    load_params(ctx, scale, zp, params_);
    const k::QuantDesc q = quant_desc(node, ctx.opset, x, scale, zp, params_);
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), yt, x.shape);
    nhwc_ = x.nhwc;  // per-tensor only (want_layouts)
    out[0]->nhwc = x.nhwc;
    ctx.check(k::quantize(x.dtype, yt, px, py, q, node.attr_int("saturate", 1) != 0, ctx.stream),
              "QuantizeLinear");
  }

 private:
  QuantParams params_;
  bool nhwc_ = false;
};

class DequantizeOp : public GpuOp {
 public:
  std::string kernel() const override { return nhwc_ ? "CUDA kernel NHWC" : "CUDA kernel"; }
  void want_layouts(const RunContext&, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    if (per_tensor_scale(in)) want[0] = Layout::kAny;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& scale = *in.at(1);
    Value* zp = in.size() > 2 ? in[2] : nullptr;
    if (zp)
      TRT_CHECK_ARG(zp->dtype == x.dtype,
                    "{}: the zero point's dtype {} differs from the input's {}", node.describe(),
                    dtype_name(zp->dtype), dtype_name(x.dtype));
    const DataType yt = ops::dequantize_output_dtype(node, ctx.opset, scale.dtype);
    load_params(ctx, scale, zp, params_);
    const k::QuantDesc q = quant_desc(node, ctx.opset, x, scale, zp, params_);
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), yt, x.shape);
    nhwc_ = x.nhwc;
    out[0]->nhwc = x.nhwc;
    ctx.check(k::dequantize(x.dtype, yt, px, py, q, ctx.stream), "DequantizeLinear");
  }

 private:
  QuantParams params_;
  bool nhwc_ = false;
};

// ---- the quantized islands
// ------------------------------------------------------------------------
enum class Kind { kConv, kGemm, kMatMul };
enum class Path { kInt8, kFp8, kFloat };

k::Act read_act(const ir::Node& node, float& alpha, float& beta) {
  const ops::FusedActivationAttr a = ops::read_fused_activation(node);
  alpha = a.alpha;
  beta = a.beta;
  return to_kernel_act(a.kind);
}

float one_value(const ir::Node& node, const Tensor& t, const char* what) {
  TRT_CHECK_ARG(t.numel() == 1, "{}: {} must have one value, got shape {}", node.describe(), what,
                shape_str(t.shape()));
  return static_cast<float>(t.at_double(0));
}

// [N, spatial..., C] <-> [N, C, spatial...]
Shape to_first(const Shape& s) {
  Shape r{s[0], s.back()};
  r.insert(r.end(), s.begin() + 1, s.end() - 1);
  return r;
}
Shape to_last(const Shape& s) {
  Shape r{s[0]};
  r.insert(r.end(), s.begin() + 2, s.end());
  r.push_back(s[1]);
  return r;
}

int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

class QOp : public GpuOp {
 public:
  explicit QOp(Kind kind) : kind_(kind) {}

  std::string kernel() const override {
    if (!has_ln_) return product_kernel();
    return product_kernel() + (ln_fused_ ? " + LayerNormalization + QuantizeLinear in its epilogue"
                                         : " + LayerNormalization + QuantizeLinear kernel");
  }
  std::string product_kernel() const {
    if (!prepared_) return "not run yet";
    if (dw_used_) return "CUDA int8 depthwise NHWC (fused epilogue)";
    if (igemm_used_)
      return std::string(path_ == Path::kFp8 ? "CUDA fp8" : "CUDA int8") +
             (igemm_tma_         ? " matrix product (TMA + wgmma)"
              : igemm_pointwise_ ? " pointwise streaming GEMM"
              : igemm_wgmma_     ? " implicit GEMM (wgmma)"
                                 : " implicit GEMM") +
             (kind_ == Kind::kConv ? " NHWC" : "") + " (fused epilogue" +
             (igemm_mode_ == AltMode::kForce
                  ? ", forced)"
                  : (igemm_cached_ ? ", timing cache)" : ms_vs(igemm_ms_, lowp_ms_) + ")"));
    if (used_cudnn_) return "cuDNN int8 NHWC";
    if (path_ != Path::kFloat) {
      std::string s = path_ == Path::kInt8 ? "cuBLASLt int8" : "cuBLASLt fp8";
      if (kind_ == Kind::kConv)
        s += nhwc_gemm_ ? (direct_ ? " NHWC (direct)" : " NHWC (im2col)") : " (im2col)";
      if (requant_used_) s += path_ == Path::kInt8 ? " + requant" : " + fp8 out";
      if (half_acc_used_) s += " (float16 products)";
      if (!cudnn_refused_.empty()) s += " (cuDNN int8 refused: " + cudnn_refused_ + ")";
      if (igemm_decided_ && igemm_ms_ >= 0)  // timed against the implicit GEMM and kept
        s += fmt::format(" ({:.3f} ms vs implicit GEMM {:.3f} ms)", lowp_ms_, igemm_ms_);
      else if (igemm_decided_ && igemm_cached_)
        s += " (timing cache)";
      return s;
    }
    return kind_ == Kind::kConv ? "dequantize + cuDNN float32" : "dequantize + cuBLASLt float32";
  }

  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    auto input = [&](size_t i) -> Value* { return i < in.size() ? in[i] : nullptr; };
    TRT_CHECK_ARG(in.size() <= kLnNumInputs, "{}: at most {} inputs", node.describe(),
                  static_cast<size_t>(kLnNumInputs));
    Value& x = *in.at(kX);
    Value& w = *in.at(kW);
    TRT_CHECK(is_quantized(x.dtype) && is_quantized(w.dtype), ErrorCode::kNotSupported,
              "{}: quantized operands must be int8, uint8, float8e4m3fn or float8e5m2, got {} "
              "and {}",
              node.describe(), dtype_name(x.dtype), dtype_name(w.dtype));
    if (!prepared_) prepare(ctx, in, x.dtype);
    TRT_CHECK_ARG(x.dtype == x_t_, "{}: X changed dtype between runs", node.describe());

    // Output geometry.
    Shape ys;
    ConvGeometry g;
    int64_t grid0 = 0, grid1 = 0;
    int64_t rows = 0, positions = 1;
    if (kind_ == Kind::kConv) {
      TRT_CHECK_ARG(x.shape.size() >= 3, "{}: X {} must have rank >= 3", node.describe(),
                    shape_str(x.shape));
      g = conv_geometry(node, channels_last_ ? to_first(x.shape) : x.shape, w.shape);
      ys = conv_output_shape(g);
      positions = shape_numel(ys) / std::max<int64_t>(1, g.batch * g.out_channels);
      rows = g.batch * positions;
      if (channels_last_) ys = to_last(ys);
    } else if (kind_ == Kind::kGemm) {
      TRT_CHECK_ARG(!x.shape.empty() && x.shape.back() == k_,
                    "{}: X {} and W {} (transB={}) disagree on K", node.describe(),
                    shape_str(x.shape), shape_str(w.shape), trans_b_);
      ys = Shape(x.shape.begin(), x.shape.end() - 1);
      ys.push_back(n_);
      rows = k_ > 0 ? x.numel() / k_ : shape_numel(ys) / std::max<int64_t>(n_, 1);
      if (!y_grid_.empty()) {  // the executor's fusion: Reshape [R0, R1, N] + Transpose(1, 0, 2)
        int64_t g0 = y_grid_[0], g1 = y_grid_[1];
        if (g0 < 0 && g1 > 0) g0 = rows / g1;
        if (g1 < 0 && g0 > 0) g1 = rows / g0;
        TRT_CHECK_ARG(g0 > 0 && g1 > 0 && g0 * g1 == rows,
                      "{}: y_grid [{}, {}] does not fit the product's {} rows", node.describe(),
                      y_grid_[0], y_grid_[1], rows);
        ys = Shape{g1, g0, n_};
        grid0 = g0;
        grid1 = g1;
      } else if (y_split_ > 0) {  // the fusion of the packed QKV split: Y [P, lead..., N / P]
        TRT_CHECK_ARG(n_ % y_split_ == 0, "{}: y_split {} does not divide N = {}", node.describe(),
                      y_split_, n_);
        ys.back() = n_ / y_split_;
        ys.insert(ys.begin(), y_split_);
      }
    } else {
      ys = matmul_shape(node, x.shape, w.shape);
      rows = shape_numel(ys) / std::max<int64_t>(n_, 1);
    }
    Value* r = input(kResidual);
    if (r)
      TRT_CHECK_ARG(r->shape == ys, "{}: residual {} must have the output's shape {}",
                    node.describe(), shape_str(r->shape), shape_str(ys));
    require_indexable(node, shape_numel(ys));
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), y_t_, ys);
    k::LnEpilogue ln_e;
    const k::LnEpilogue* ln = nullptr;
    if (input(kLnScale)) ln = &(ln_e = layer_norm_epilogue(ctx, in, out, ys));
    has_ln_ = ln != nullptr;
    ln_fused_ = false;
    if (shape_numel(ys) == 0) return;

    k::QEpilogue e = epilogue_;
    e.rows = rows;
    e.cols = n_;
    e.positions = positions;
    e.channels_first = kind_ == Kind::kConv && !channels_last_;
    e.residual = r ? ctx.dev(*r) : nullptr;
    e.residual_t = r ? r->dtype : DataType::kFloat32;
    e.y = py;
    e.grid0 = grid0;
    e.grid1 = grid1;
    e.parts = kind_ == Kind::kGemm ? y_split_ : 0;

    std::shared_ptr<void> acc;
    bool done = false;
    used_cudnn_ = requant_used_ = half_acc_used_ = dw_used_ = igemm_used_ = false;
    if (dw_ && kind_ == Kind::kConv && channels_last_ && g.nspatial == 2) {
      e.colscale = static_cast<const float*>(colscale_.get());
      k::DepthwiseDesc d;
      set_2d_geometry(d, g);
      d.n = static_cast<int32_t>(g.batch);
      d.x_zp = static_cast<int32_t>(x_zp_);
      const cudaError_t st = k::qconv_depthwise(px, x.dtype == DataType::kUInt8, w_dw_.get(), d, e,
                                                ctx.stream, w_dw4_.get());
      if (st == cudaErrorNotSupported) {
        dw_ = false;  // alignment / channel count: the float path from now on
      } else {
        ctx.check(st, "depthwise int8 convolution");
        done = dw_used_ = true;
      }
    }
    if (!done && cudnn_int8_) done = used_cudnn_ = run_cudnn_int8(ctx, x, px, g, rows, acc, e);
    if (!done && igemm_fits(x, g)) done = igemm_used_ = implicit_gemm(ctx, x, px, g, rows, e, ln);
    if (!done && gemm_igemm_fits(x, e, rows))
      done = igemm_used_ = implicit_gemm(ctx, x, px, gemm_as_conv(rows), rows, e, ln);
    if (!done && path_ != Path::kFloat && (kind_ != Kind::kConv || g.group == 1)) {
      done = run_lowp(ctx, x, px, g, rows, acc, e);
      if (!done) path_ = Path::kFloat;  // cuBLASLt declined: float from now on
    }
    if (!done) run_float(ctx, x, px, w, g, ys, acc, e);
    if (!requant_used_ && !dw_used_ && !igemm_used_)
      ln_fused_ = epilogue_pass(ctx, e, ln);
    else if (ln)
      layer_norm_after(ctx, e, *ln);
  }

 private:
  // The executor's layer-norm fusion (fusion/layernorm_quantize.cpp, QGemmLnInput): Y float32
  // [..., N], the layer norm's output allocated ([A, B, N] -> [B, A, N] with ln_swap01).
  k::LnEpilogue layer_norm_epilogue(RunContext& ctx, const std::vector<Value*>& in,
                                    const std::vector<Value*>& out, const Shape& ys) {
    const ir::Node& node = *ctx.node;
    auto input = [&](size_t i) -> Value* { return i < in.size() ? in[i] : nullptr; };
    Value& scale = *input(kLnScale);
    Value* bias = input(kLnBias);
    Value* ysc = input(kLnYScale);
    Value* zp = input(kLnYZeroPoint);
    TRT_CHECK_ARG(out.size() > 1 && out[1] && ysc && zp && y_t_ == DataType::kFloat32,
                  "{}: the fused layer norm needs a float32 Y, its quantizer and a second output",
                  node.describe());
    for (const Value* p : {&scale, bias})
      TRT_CHECK_ARG(!p || (p->dtype == DataType::kFloat32 && p->numel() == n_),
                    "{}: the fused layer norm's Scale / B must be float32 with {} values",
                    node.describe(), n_);
    const bool swap = node.attr_int("ln_swap01", 0) != 0;
    TRT_CHECK_ARG(!swap || ys.size() == 3, "{}: ln_swap01 needs a rank-3 Y, got {}",
                  node.describe(), shape_str(ys));
    k::LnEpilogue ln;
    ln.scale = static_cast<const float*>(ctx.dev(scale));
    ln.bias = bias ? static_cast<const float*>(ctx.dev(*bias)) : nullptr;
    ln.eps = node.attr_float("ln_epsilon", 1e-5f);
    ln.q.y_t = zp->dtype;
    ln.q.y_scale = static_cast<float>(ctx.host(*ysc).at_double(0));
    ln.q.y_zp = static_cast<float>(ctx.host(*zp).at_double(0));
    Shape lsh = ys;
    if (swap) {
      ln.q.grid0 = ys[0];
      ln.q.grid1 = ys[1];
      std::swap(lsh[0], lsh[1]);
    }
    ln.y = ctx.make(*out[1], ln.q.y_t, lsh);
    return ln;
  }
  // The epilogue kernel over the products in e.acc, with the fused layer norm when ln is given
  // and its kernel fits (true), else q_epilogue [+ layer_norm_after].
  bool epilogue_pass(RunContext& ctx, const k::QEpilogue& e, const k::LnEpilogue* ln) {
    if (ln) {
      const cudaError_t st = k::q_epilogue_layer_norm(e, *ln, ctx.stream);
      if (st != cudaErrorNotSupported) {
        ctx.check(st, "quantized epilogue + layer norm");
        return true;
      }
    }
    ctx.check(k::q_epilogue(e, ctx.stream), "quantized epilogue");
    if (ln) layer_norm_after(ctx, e, *ln);
    return false;
  }
  // The layer norm as its own pass over Y (paths whose epilogue is not q_epilogue's).
  static void layer_norm_after(RunContext& ctx, const k::QEpilogue& e, const k::LnEpilogue& ln) {
    ctx.check(k::layer_norm_quantize(DataType::kFloat32, e.y, ln.scale, ln.bias, ln.y, e.rows,
                                     e.cols, ln.eps, ln.q, ctx.stream),
              "LayerNormalization + QuantizeLinear");
  }

  // Reads the constants, picks the path and prepares W for it.
  void prepare(RunContext& ctx, const std::vector<Value*>& in, DataType x_t) {
    const ir::Node& node = *ctx.node;
    auto input = [&](size_t i) -> Value* { return i < in.size() ? in[i] : nullptr; };
    auto constant = [&](size_t i, const char* what) -> const Tensor& {
      Value* v = input(i);
      TRT_CHECK(v && v->constant, ErrorCode::kNotSupported,
                "{}: {} must be a constant (initializer) on CUDA", node.describe(), what);
      return v->host;
    };
    x_t_ = x_t;
    Value& w = *in.at(kW);
    const float x_scale = one_value(node, constant(kXScale, "x_scale"), "x_scale");
    x_zp_ = input(kXZeroPoint)
                ? one_value(node, constant(kXZeroPoint, "x_zero_point"), "x_zero_point")
                : 0.0f;
    const bool w_const = w.constant;
    if (kind_ != Kind::kMatMul)
      TRT_CHECK(w_const, ErrorCode::kNotSupported, "{}: W must be a constant (initializer) on CUDA",
                node.describe());
    const Tensor* wt = w_const ? &w.host : nullptr;
    // Output channels and K.
    if (kind_ == Kind::kConv) {
      TRT_CHECK_ARG(w.shape.size() >= 3, "{}: W {} must have rank >= 3", node.describe(),
                    shape_str(w.shape));
      channels_last_ = node.attr_int("channels_last", 0) != 0;
      n_ = w.shape[0];
      k_ = w.numel() / std::max<int64_t>(n_, 1);
    } else if (kind_ == Kind::kGemm) {
      TRT_CHECK_ARG(w.shape.size() == 2, "{}: W {} must be 2-D", node.describe(),
                    shape_str(w.shape));
      trans_b_ = node.attr_int("transB", 0) != 0;
      k_ = trans_b_ ? w.shape[1] : w.shape[0];
      n_ = trans_b_ ? w.shape[0] : w.shape[1];
    } else {
      n_ = w.shape.size() > 1 ? w.shape.back() : 1;
      k_ = w.shape.size() > 1 ? w.shape[w.shape.size() - 2] : w.shape[0];
    }
    // Weight scales / zero points.
    const Tensor& ws = constant(kWScale, "w_scale");
    TRT_CHECK_ARG(ws.dtype() == DataType::kFloat32 &&
                      (ws.numel() == 1 || (ws.rank() == 1 && ws.numel() == n_)),
                  "{}: w_scale must be float32 with 1 or {} values, got {} {}", node.describe(), n_,
                  dtype_name(ws.dtype()), shape_str(ws.shape()));
    TRT_CHECK_ARG(kind_ != Kind::kMatMul || ws.numel() == 1,
                  "{}: w_scale must be one value (per tensor)", node.describe());
    w_scale_ = floats_of(ws);
    w_zp_.assign(w_scale_.size(), 0.0f);
    bool w_zp_zero = true;
    if (input(kWZeroPoint)) {
      const Tensor& z = constant(kWZeroPoint, "w_zero_point");
      TRT_CHECK_ARG(z.dtype() == w.dtype && z.numel() == ws.numel(),
                    "{}: w_zero_point must be {} with w_scale's {} values", node.describe(),
                    dtype_name(w.dtype), ws.numel());
      w_zp_ = floats_of(z);
      for (float v : w_zp_) w_zp_zero = w_zp_zero && v == 0.0f;
    }
    // Epilogue constants.
    std::vector<float> bias;
    if (input(kBias)) {
      const Tensor& b = constant(kBias, "B");
      TRT_CHECK_ARG(b.dtype() == DataType::kFloat32 && b.numel() == n_,
                    "{}: B must be float32 with {} values", node.describe(), n_);
      bias = floats_of(b);
      bias_ = upload_floats(bias);
      bias_host_ = bias;
    }
    TRT_CHECK_ARG(static_cast<bool>(input(kYScale)) == static_cast<bool>(input(kYZeroPoint)),
                  "{}: y_scale and y_zero_point must be given together", node.describe());
    y_t_ = DataType::kFloat32;
    if (input(kYScale)) {
      y_t_ = input(kYZeroPoint)->dtype;
      TRT_CHECK(is_quantized(y_t_), ErrorCode::kNotSupported,
                "{}: quantized output dtype {} is not supported", node.describe(),
                dtype_name(y_t_));
      epilogue_.y_scale = one_value(node, constant(kYScale, "y_scale"), "y_scale");
      epilogue_.y_zp = one_value(node, constant(kYZeroPoint, "y_zero_point"), "y_zero_point");
    }
    epilogue_.y_t = y_t_;
    if (input(kResidual)) {
      Value& rv = *input(kResidual);
      if (input(kRScale)) {
        TRT_CHECK(is_quantized(rv.dtype), ErrorCode::kNotSupported,
                  "{}: quantized residual dtype {} is not supported", node.describe(),
                  dtype_name(rv.dtype));
        epilogue_.r_scale = one_value(node, constant(kRScale, "r_scale"), "r_scale");
        epilogue_.r_zp = input(kRZeroPoint) ? one_value(node, constant(kRZeroPoint, "r_zero_point"),
                                                        "r_zero_point")
                                            : 0.0f;
      } else {
        TRT_CHECK_ARG(rv.dtype == DataType::kFloat32,
                      "{}: a residual without r_scale must be float32, got {}", node.describe(),
                      dtype_name(rv.dtype));
      }
    }
    epilogue_.act = read_act(node, epilogue_.alpha, epilogue_.beta);
    if (kind_ == Kind::kGemm) {
      y_grid_ = node.attr_ints("y_grid", {});
      TRT_CHECK_ARG(y_grid_.empty() || y_grid_.size() == 2, "{}: y_grid must have 2 values",
                    node.describe());
      y_split_ = node.attr_int("y_split", 0);
      // The executor's fusion of the attention's quantizers (fusion/attention_q.cpp): one scale and
      // scalar pre-scaling per part of the split output.
      const auto ps = node.attr_floats("part_scales", {});
      if (!ps.empty()) {
        const auto pre = node.attr_floats("part_pre", {});
        const auto op = node.attr_ints("part_pre_op", {});
        TRT_CHECK_ARG(y_split_ == static_cast<int64_t>(ps.size()) &&
                          ps.size() <= static_cast<size_t>(k::QEpilogue::kMaxParts) &&
                          pre.size() == ps.size() && op.size() == ps.size() && input(kYScale),
                      "{}: part_scales must come with y_split, part_pre, part_pre_op and y_scale",
                      node.describe());
        epilogue_.part_quant = true;
        for (size_t p = 0; p < ps.size(); ++p) {
          epilogue_.part_scale[p] = ps[p];
          epilogue_.part_pre[p] = pre[p];
          epilogue_.part_pre_op[p] = static_cast<int>(op[p]);
        }
      }
    }
    if (node.attr_int("gelu", 0) != 0) {  // the executor's fusion (fusion/qgemm_epilogues.cpp)
      TRT_CHECK_ARG(epilogue_.act == k::Act::kNone, "{}: gelu = 1 with another activation",
                    node.describe());
      epilogue_.act = k::Act::kGelu;
    }
    epilogue_.bias = static_cast<const float*>(bias_.get());

    // Path.
    auto finite_pos = [](float v) { return std::isfinite(v) && v > 0.0f; };
    bool scales_ok = finite_pos(x_scale);
    for (float s : w_scale_) scales_ok = scales_ok && finite_pos(s);
    const int64_t group = kind_ == Kind::kConv ? node.attr_int("group", 1) : 1;
    path_ = Path::kFloat;
    if (kind_ != Kind::kMatMul && group == 1 && w_zp_zero && scales_ok) {
      if (is_int8(x_t) && w.dtype == DataType::kInt8) path_ = Path::kInt8;
      if (is_fp8(x_t) && is_fp8(w.dtype) && x_zp_ == 0.0f && ctx.sm >= 89 &&
          !(x_t == DataType::kFloat8E5M2 && w.dtype == DataType::kFloat8E5M2))
        path_ = Path::kFp8;
    }
    std::vector<float> colscale(static_cast<size_t>(n_));
    for (int64_t c = 0; c < n_; ++c) colscale[c] = x_scale * w_scale_[w_scale_.size() > 1 ? c : 0];
    colscale_ = upload_floats(colscale);
    ones_ = upload_floats(std::vector<float>(static_cast<size_t>(n_), 1.0f));
    x_scale_ = x_scale;
    x_scale_dev_ = upload_floats({x_scale_});
    x_zp_dev_ = upload_floats({x_zp_});
    w_scale_dev_ = upload_floats({w_scale_[0]});
    w_zp_dev_ = upload_floats({w_zp_[0]});
    w_fp8_t_ = w.dtype;
    if (wt) w_host_ = *wt;
    // 2-D convolutions multiply channels-last: W packed [M, KH, KW, C], X NHWC (direct for
    // 1x1 stride-1 convolutions, else a vectorised im2col).
    nhwc_gemm_ = path_ != Path::kFloat && kind_ == Kind::kConv && w.shape.size() == 4;
    // int8 convolutions through cuDNN (NHWC, int32 accumulation, float output for our
    // epilogue), on request (TRTUTILS_CUDA_INT8_CONV=cudnn: measured ~3 ms per layer on the
    // H200 at batch 256, far slower than cuBLASLt): 2-D, one group, no dilation, int8 X without
    // zero point (cuDNN pads with 0), output channels a multiple of 4 (input channels are padded
    // to one).
    bool dilated = false;
    for (int64_t d : node.attr_ints("dilations", {})) dilated = dilated || d != 1;
    const char* int8_conv = switch_value("TRTUTILS_CUDA_INT8_CONV");
    cudnn_int8_ = int8_conv && std::string(int8_conv) == "cudnn" && path_ == Path::kInt8 &&
                  kind_ == Kind::kConv && w.shape.size() == 4 && group == 1 && !dilated &&
                  x_t == DataType::kInt8 && x_zp_ == 0.0f && n_ % 4 == 0;
    if (cudnn_int8_) {
      pack_cudnn_weights(ctx);
    } else if (path_ != Path::kFloat) {
      pack_gemm_weights(ctx);
    }
    // Depthwise (one input channel per group, one output per group): our int8 kernel, with
    // the epilogue fused; W packed [taps, C]. TRTUTILS_CUDA_INT8_DEPTHWISE=0 turns it off.
    dw_ = kind_ == Kind::kConv && w.shape.size() == 4 && w.shape[1] == 1 && group > 1 &&
          n_ == group && is_int8(x_t) && w.dtype == DataType::kInt8 && w_zp_zero && scales_ok &&
          channels_last_ && wt && kernel_switch("TRTUTILS_CUDA_INT8_DEPTHWISE", true);
    if (dw_) pack_depthwise_weights(ctx);
    prepared_ = true;
  }

  // W as [N, Kp] bytes (row = output channel), K padded with zeros to a multiple of 16, and its
  // column sums (int8 zero-point correction), for the cuBLASLt product. Columns in W's order
  // (c, taps), or (taps, c) for the channels-last convolutions.
  void pack_gemm_weights(RunContext& ctx) {
    if (w_packed_) return;
    kp_ = round_up(std::max<int64_t>(k_, 1), 16);
    std::vector<uint8_t> packed(static_cast<size_t>(n_ * kp_), 0);
    std::vector<int32_t> colsum(static_cast<size_t>(n_), 0);
    const uint8_t* src = static_cast<const uint8_t*>(w_host_.raw());
    const int64_t cin = nhwc_gemm_ ? w_host_.dim(1) : 1, taps = k_ / std::max<int64_t>(cin, 1);
    for (int64_t c = 0; c < n_; ++c)
      for (int64_t q = 0; q < k_; ++q) {
        int64_t s = (kind_ == Kind::kGemm && !trans_b_) ? q * n_ + c : c * k_ + q;
        if (nhwc_gemm_) s = c * k_ + (q % cin) * taps + q / cin;  // q = tap * C + ci
        packed[c * kp_ + q] = src[s];
        colsum[c] += static_cast<int8_t>(src[s]);
      }
    w_packed_ = upload_bytes(packed.data(), packed.size());
    if (path_ == Path::kInt8) colsum_ = upload_bytes(colsum.data(), colsum.size() * 4);
    colsum_host_ = colsum;
    if (ctx.weight_bytes) *ctx.weight_bytes += packed.size();
  }

  // Depthwise W [C, 1, R, S] as [R * S, C] bytes (four channels of a tap per 4-byte load).
  void pack_depthwise_weights(RunContext& ctx) {
    const Shape& ws = w_host_.shape();
    const int64_t c = ws[0], rs = ws[2] * ws[3];
    std::vector<uint8_t> packed(static_cast<size_t>(c * rs));
    const uint8_t* src = static_cast<const uint8_t*>(w_host_.raw());
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < rs; ++p) packed[p * c + ch] = src[ch * rs + p];
    w_dw_ = upload_bytes(packed.data(), packed.size());
    if (ctx.weight_bytes) *ctx.weight_bytes += packed.size();
    // And as [ceil(R * S / 4)][C][4]: four consecutive taps of a channel per word (dp4a).
    const int64_t groups = (rs + 3) / 4;
    std::vector<uint8_t> taps4(static_cast<size_t>(groups * c * 4), 0);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < rs; ++p) taps4[((p / 4) * c + ch) * 4 + p % 4] = src[ch * rs + p];
    w_dw4_ = upload_bytes(taps4.data(), taps4.size());
    if (ctx.weight_bytes) *ctx.weight_bytes += taps4.size();
  }

  // W [K, C, R, S] as KRSC bytes with C padded with zeros to cp_ (a multiple of 4).
  void pack_cudnn_weights(RunContext& ctx) {
    const Shape& ws = w_host_.shape();
    const int64_t c = ws[1], rs = ws[2] * ws[3];
    cp_ = round_up(c, 4);
    std::vector<uint8_t> packed(static_cast<size_t>(n_ * rs * cp_), 0);
    const uint8_t* src = static_cast<const uint8_t*>(w_host_.raw());
    for (int64_t o = 0; o < n_; ++o)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t p = 0; p < rs; ++p)
          packed[(o * rs + p) * cp_ + ci] = src[(o * c + ci) * rs + p];
    w_cudnn_ = upload_bytes(packed.data(), packed.size());
    if (ctx.weight_bytes) *ctx.weight_bytes += packed.size();
  }

  // The int8 convolution through cuDNN into a float32 [rows, N] accumulator (NHWC output);
  // false when cuDNN refuses the problem (from then on: the im2col + cuBLASLt path).
  bool run_cudnn_int8(RunContext& ctx, Value& x, const void* px, const ConvGeometry& g,
                      int64_t rows, std::shared_ptr<void>& acc, k::QEpilogue& e) {
    // X as NHWC int8 with cp_ channels.
    const int64_t c = g.in_channels;
    const void* xin = px;
    std::shared_ptr<void> padded, nhwc;
    Shape cur = x.shape;  // the layout xin has: [N, H, W, C] or [N, C, H, W]
    if (cp_ != c) {
      k::PadDesc d;
      d.rank = 4;
      const int64_t axis = channels_last_ ? 3 : 1;
      for (int i = 0; i < 4; ++i) d.in[i] = d.out[i] = cur[i];
      d.out[axis] = cp_;
      cur[axis] = cp_;
      const int64_t n = shape_numel(cur);
      padded = ctx.scratch(static_cast<size_t>(n));
      ctx.check(k::pad(1, xin, padded.get(), d, n, ctx.stream), "channel pad");
      xin = padded.get();
    }
    if (!channels_last_) {
      nhwc = ctx.scratch(static_cast<size_t>(shape_numel(cur)));
      convert_layout(ctx, 1, cur, xin, nhwc.get(), true);
      xin = nhwc.get();
    }
    ConvGeometry gc = g;
    gc.in_channels = cp_;
    acc = ctx.scratch(static_cast<size_t>(rows * n_) * 4);
    try {
      conv_int8_.run(ctx, gc, ConvConfig{DataType::kInt8, DataType::kFloat32, true}, xin,
                     w_cudnn_.get(), acc.get());
    } catch (const Error& err) {
      if (ctx.capturing) throw;
      (void)cudaGetLastError();
      cudnn_int8_ = false;
      cudnn_refused_ = err.what();
      TRT_LOG_WARN("{}: cuDNN int8 convolution refused ({}); using im2col + cuBLASLt",
                   ctx.node->describe(), cudnn_refused_);
      pack_gemm_weights(ctx);
      return false;
    }
    e.acc = acc.get();
    e.acc_int32 = false;
    e.acc_channels_first = false;
    e.colsum = nullptr;
    e.x_zp = 0;
    e.colscale = static_cast<const float*>(colscale_.get());
    return true;
  }

  // ", 0.180 ms vs cuBLASLt 0.455 ms": the timed choice, for kernel().
  static std::string ms_vs(float chosen, float other) {
    if (chosen < 0) return "";
    return other < 0 ? fmt::format(", {:.3f} ms; cuBLASLt failed", chosen)
                     : fmt::format(", {:.3f} ms vs cuBLASLt {:.3f} ms", chosen, other);
  }

  // Whether the implicit-GEMM kernel (qconv_igemm.cu) can take this convolution: 2-D,
  // channels-last, one group, int8 X without zero point or E4M3 X and W, input channels a
  // multiple of 16 (W packed KRSC without padding). TRTUTILS_CUDA_IGEMM=0 | force.
  bool igemm_fits(const Value& x, const ConvGeometry& g) const {
    if (igemm_mode_ == AltMode::kOff || kind_ != Kind::kConv || !channels_last_ || !nhwc_gemm_ ||
        !w_packed_ || g.nspatial != 2 || g.group != 1 || g.in_channels % 16 != 0 || kp_ != k_)
      return false;
    if (path_ == Path::kInt8) return x.dtype == DataType::kInt8 && x_zp_ == 0.0f;
    return path_ == Path::kFp8 && x.dtype == DataType::kFloat8E4M3FN &&
           w_fp8_t_ == DataType::kFloat8E4M3FN;
  }

  // A QGemm through the same kernel, as a 1x1 convolution over `rows` positions of K channels
  // (X [rows, K] row-major is NHWC with N = H = 1; W packed [N, K] is KRSC): int8 X without zero
  // point or E4M3 X and W, K and N multiples of 16, Y written row by row (no y_grid, no y_split
  // parts). The timed choice against cuBLASLt (implicit_gemm) keeps whichever is faster: the
  // fused epilogue saves cuBLASLt's float16 products a second pass (ViT's MLP).
  bool gemm_igemm_fits(const Value& x, const k::QEpilogue& e, int64_t rows) const {
    if (igemm_mode_ == AltMode::kOff || kind_ != Kind::kGemm || !w_packed_ || kp_ != k_ ||
        k_ % 16 != 0 || n_ % 16 != 0 || e.grid0 > 0 || e.parts > 0 || e.part_quant || rows <= 0 ||
        rows >= (int64_t{1} << 31))
      return false;
    if (path_ == Path::kInt8) return x.dtype == DataType::kInt8 && x_zp_ == 0.0f;
    return path_ == Path::kFp8 && x.dtype == DataType::kFloat8E4M3FN &&
           w_fp8_t_ == DataType::kFloat8E4M3FN;
  }
  static ConvGeometry gemm_as_conv_geometry(int64_t rows, int64_t k, int64_t n) {
    ConvGeometry g;
    g.batch = 1;
    g.in_channels = k;
    g.out_channels = n;
    g.nspatial = 2;
    g.in = g.out = {1, rows};
    g.kernel = g.stride = g.dilation = {1, 1};
    g.pad_begin = g.pad_end = {0, 0};
    return g;
  }
  ConvGeometry gemm_as_conv(int64_t rows) const { return gemm_as_conv_geometry(rows, k_, n_); }

  // Runs the convolution through the implicit-GEMM kernel when it was (or, on the first eager run
  // with this geometry, is now measured to be) faster than the cuBLASLt path; false: the caller
  // runs that path.
  bool implicit_gemm(RunContext& ctx, Value& x, const void* px, const ConvGeometry& g, int64_t rows,
                     k::QEpilogue& e, const k::LnEpilogue* ln) {
    k::IgemmDesc d;
    set_2d_geometry(d, g);
    d.n = static_cast<int32_t>(g.batch);
    d.k = static_cast<int32_t>(n_);
    k::QEpilogue ie = e;
    ie.colscale = static_cast<const float*>(colscale_.get());
    ie.colsum = nullptr;
    const bool fp8 = path_ == Path::kFp8;
    auto launch = [&] { return k::qconv_igemm(px, w_packed_.get(), d, fp8, ie, ctx.stream); };
    // Each side with the layer norm it needs (fused into the epilogue pass after cuBLASLt).
    auto launch_ln = [&] {
      const cudaError_t st = launch();
      if (st == cudaSuccess && ln) layer_norm_after(ctx, ie, *ln);
      return st;
    };
    if (!igemm_decided_ || !(igemm_geometry_ == g)) {
      if (ctx.capturing) return false;
      igemm_decided_ = true;
      igemm_geometry_ = g;
      igemm_chosen_ = igemm_cached_ = false;
      igemm_tma_ = k::qconv_tma_fits(d, fp8);  // for kernel()
      igemm_pointwise_ = !igemm_tma_ && k::qconv_pointwise_fits(d, ie);
      igemm_wgmma_ = !igemm_tma_ && !igemm_pointwise_ && k::wgmma_available();
      igemm_ms_ = lowp_ms_ = -1;
      if (ctx.deterministic && igemm_mode_ != AltMode::kForce) return false;  // fixed: cuBLASLt
      if (launch() != cudaSuccess) {  // not launched (alignment, sizes): the cuBLASLt path
        (void)cudaGetLastError();
        return false;
      }
      // The decision's problem for the timing cache: geometry, dtypes, epilogue.
      const std::string what =
          ctx.timing && igemm_mode_ != AltMode::kForce
              ? fmt::format(
                    "QConv implicit GEMM|{}|{}|{}|y {} r {} act {} bias {}{}", d.n,
                    fmt::join(std::vector<int32_t>{d.h, d.w, d.c, d.oh, d.ow, d.k, d.kh, d.kw, d.sh,
                                                   d.sw, d.ph, d.pw, d.dh, d.dw},
                              ","),
                    fp8 ? "fp8" : "int8", dtype_name(ie.y_t),
                    ie.residual ? dtype_name(ie.residual_t) : "none", static_cast<int>(ie.act),
                    ie.bias != nullptr, ln ? " layer norm" : "")
              : std::string();
      const std::string cached = what.empty() ? "" : ctx.timing->find(what);
      if (igemm_mode_ == AltMode::kForce) {
        igemm_chosen_ = true;
      } else if (!cached.empty()) {
        igemm_chosen_ = cached == "implicit_gemm";
        igemm_cached_ = true;
      } else {
        igemm_ms_ =
            time_on_stream(ctx, [&] { ctx.check(launch_ln(), "implicit-GEMM convolution"); });
        try {
          lowp_ms_ = time_on_stream(ctx, [&] {
            k::QEpilogue le = e;
            std::shared_ptr<void> acc;
            TRT_CHECK(run_lowp(ctx, x, px, g, rows, acc, le), ErrorCode::kNotSupported,
                      "no cuBLASLt algorithm");
            if (!requant_used_) epilogue_pass(ctx, le, ln);
          });
        } catch (const Error&) {
          (void)cudaGetLastError();
          lowp_ms_ = -1;
        }
        igemm_chosen_ = lowp_ms_ < 0 || igemm_ms_ < lowp_ms_;
        if (!what.empty())
          ctx.timing->put(what, igemm_chosen_ ? "implicit_gemm" : "cublaslt",
                          {{"implicit_gemm", igemm_ms_}, {"cublaslt", lowp_ms_}});
      }
    }
    if (!igemm_chosen_) return false;
    ctx.check(launch(), "implicit-GEMM convolution");
    return true;
  }

  // W dequantized to float32 in its own layout (made on first use).
  const void* float_weights(RunContext& ctx, Value& w) {
    if (!w.constant) return nullptr;
    if (w_float_) return w_float_.get();
    const Tensor& t = w.host;
    const int64_t total = t.numel();
    const int64_t channels = static_cast<int64_t>(w_scale_.size());
    std::vector<float> f(static_cast<size_t>(total));
    for (int64_t i = 0; i < total; ++i) {
      int64_t c = 0;
      if (channels > 1) c = kind_ == Kind::kConv ? i / (total / n_) : (trans_b_ ? i / k_ : i % n_);
      f[i] = (static_cast<float>(t.at_double(i)) - w_zp_[c]) * w_scale_[c];
    }
    w_float_ = upload_floats(f);
    if (ctx.weight_bytes) *ctx.weight_bytes += f.size() * 4;
    return w_float_.get();
  }

  // int8 / fp8 product into acc; false when cuBLASLt has no algorithm.
  bool run_lowp(RunContext& ctx, Value& x, const void* px, const ConvGeometry& g, int64_t rows,
                std::shared_ptr<void>& acc, k::QEpilogue& e) {
    const uint8_t xor_mask = x.dtype == DataType::kUInt8 ? 0x80 : 0;
    const int32_t x_zp = static_cast<int32_t>(x_zp_) - (xor_mask ? 128 : 0);
    std::shared_ptr<void> a, x_nhwc;
    const void* a_ptr = nullptr;
    const uint8_t pad_value =
        is_fp8(x.dtype) ? 0 : static_cast<uint8_t>(static_cast<int>(x_zp_));  // raw zero point
    if (kind_ == Kind::kConv && nhwc_gemm_) {
      const void* xs = px;
      if (!channels_last_) {  // NCHW bytes -> NHWC
        x_nhwc = ctx.scratch(static_cast<size_t>(x.numel()));
        convert_layout(ctx, 1, x.shape, px, x_nhwc.get(), true);
        xs = x_nhwc.get();
      }
      direct_ = g.kernel[0] == 1 && g.kernel[1] == 1 && g.stride[0] == 1 && g.stride[1] == 1 &&
                g.pad_begin == std::vector<int64_t>{0, 0} &&
                g.pad_end == std::vector<int64_t>{0, 0} && kp_ == g.in_channels && !xor_mask;
      if (direct_) {
        a_ptr = xs;  // [N * H * W, C] is already the GEMM's A
      } else {
        TRT_CHECK(rows < (int64_t{1} << 31), ErrorCode::kNotSupported,
                  "{}: {} output positions exceed the im2col kernel's 2^31", ctx.node->describe(),
                  rows);
        k::Im2ColNhwcDesc d;
        set_2d_geometry(d, g);
        d.batch = static_cast<int32_t>(g.batch);
        d.kp = kp_;
        d.pad_value = pad_value;
        d.xor_mask = xor_mask;
        a = ctx.scratch(static_cast<size_t>(rows * kp_));
        ctx.check(k::im2col_nhwc(xs, a.get(), d, ctx.stream), "im2col");
        a_ptr = a.get();
      }
    } else if (kind_ == Kind::kConv) {
      a = ctx.scratch(static_cast<size_t>(rows * kp_));
      a_ptr = a.get();
      k::Im2ColDesc d;
      d.batch = g.batch;
      d.channels = g.in_channels;
      const size_t o = 3 - g.nspatial;
      for (size_t i = 0; i < g.nspatial; ++i) {
        d.geo.in[o + i] = g.in[i];
        d.geo.out[o + i] = g.out[i];
        d.geo.kernel[o + i] = g.kernel[i];
        d.geo.stride[o + i] = g.stride[i];
        d.geo.dilation[o + i] = g.dilation[i];
        d.geo.pad_begin[o + i] = g.pad_begin[i];
        d.geo.pad_end[o + i] = g.pad_end[i];
      }
      d.kp = kp_;
      d.channels_last = channels_last_;
      d.pad_value = pad_value;
      d.xor_mask = xor_mask;
      ctx.check(k::im2col(px, a.get(), d, ctx.stream), "im2col");
    } else if (kp_ == k_ && !xor_mask) {
      a_ptr = px;  // X [rows, K] is already the GEMM's A (a copy here took ViT-B/16's MLP-down
                   // on cuBLASLt from 0.29 to 0.46 ms on the H200)
    } else {
      a = ctx.scratch(static_cast<size_t>(rows * kp_));
      a_ptr = a.get();
      // X [rows, K] -> [rows, Kp] (zero padded), flipping uint8 to int8.
      if (kp_ != k_) TRT_CUDA_CHECK(cudaMemsetAsync(a.get(), 0, rows * kp_, ctx.stream));
      const void* src = px;
      std::shared_ptr<void> flipped;
      if (xor_mask) {
        flipped = ctx.scratch(static_cast<size_t>(rows * k_));
        ctx.check(k::xor_bytes(px, flipped.get(), rows * k_, xor_mask, ctx.stream), "xor");
        src = flipped.get();
      }
      TRT_CUDA_CHECK(
          cudaMemcpy2DAsync(a.get(), kp_, src, k_, k_, rows, cudaMemcpyDeviceToDevice, ctx.stream));
    }
    MatmulProblem p;
    p.m = rows;
    p.n = n_;
    p.k = kp_;
    p.trans_b = true;
    if (path_ == Path::kFp8 && fp8_out_fits(e)) {
      // float8 Y straight from cuBLASLt (scales, bias, residual, ReLU in its epilogue): no
      // float32 accumulator, no epilogue kernel.
      prepare_fp8_out();
      p.a_t = x.dtype;
      p.b_t = weight_t_fp8();
      p.d_t = DataType::kFloat8E4M3FN;
      p.fp8_out = true;
      p.b_scale_vector = w_scale_.size() > 1;
      p.with_c = e.residual != nullptr;
      const bool relu = epilogue_.act == k::Act::kRelu;
      p.epilogue =
          bias_ ? (relu ? MatmulProblem::Epilogue::kReluBias : MatmulProblem::Epilogue::kBias)
                : (relu ? MatmulProblem::Epilogue::kRelu : MatmulProblem::Epilogue::kNone);
      LtFp8Out o;
      o.d_scale = static_cast<const float*>(inv_y_scale_.get());
      std::shared_ptr<void> r16;
      if (e.residual) {  // the residual dequantized to float16 (cuBLASLt's C)
        const int64_t nr = rows * n_;
        r16 = ctx.scratch(static_cast<size_t>(nr) * 2);
        k::QuantDesc q;
        q.n = nr;
        q.scale = static_cast<const float*>(r_scale_dev_.get());
        ctx.check(
            k::dequantize(e.residual_t, DataType::kFloat16, e.residual, r16.get(), q, ctx.stream),
            "residual to float16");
        o.c = r16.get();
        o.beta = 1.0f;
      }
      if (lt_.run(ctx, p, a_ptr, w_packed_.get(), e.y, 1.0f, 0.0f, bias16_.get(),
                  static_cast<const float*>(x_scale_dev_.get()),
                  static_cast<const float*>(w_scales_dev_.get()), nullptr, &o)) {
        requant_used_ = true;
        return true;
      }
      fp8_out_ok_ = false;  // no algorithm with this epilogue: the float32 path from now on
      p = MatmulProblem{};
      p.m = rows;
      p.n = n_;
      p.k = kp_;
      p.trans_b = true;
    }
    if (path_ == Path::kInt8 && requant_fits(ctx, e)) {
      // int8 Y straight from cuBLASLt: no int32 buffer, no epilogue kernel.
      prepare_requant(x_zp);
      p.a_t = p.b_t = p.d_t = DataType::kInt8;
      p.requant = true;
      p.with_c = e.residual != nullptr;
      p.epilogue = epilogue_.act == k::Act::kRelu ? MatmulProblem::Epilogue::kReluBias
                                                  : MatmulProblem::Epilogue::kBias;
      LtRequant rq;
      rq.alpha = static_cast<const float*>(alpha_rq_.get());
      rq.beta = e.residual ? epilogue_.r_scale / epilogue_.y_scale : 0.0f;
      rq.c = e.residual;
      if (lt_.run(ctx, p, a_ptr, w_packed_.get(), e.y, 1.0f, 0.0f, bias_rq_.get(), nullptr, nullptr,
                  &rq)) {
        requant_used_ = true;
        return true;
      }
      requant_ok_ = false;  // no IMMA algorithm with this epilogue: the int32 path from now on
      p = MatmulProblem{};
      p.m = rows;
      p.n = n_;
      p.k = kp_;
      p.trans_b = true;
    }
    if (path_ == Path::kFp8 && fp16_acc_ok_ && kernel_switch("TRTUTILS_CUDA_FP8_HALF_ACC", true)) {
      // float16 products (half the float32 accumulator's bytes): alpha = x_scale * min w_scale
      // keeps every value at or below its true magnitude (no overflow), the epilogue multiplies
      // by w_scale[c] / min (colscale_half_).
      prepare_half_acc();
      p.a_t = x.dtype;
      p.b_t = weight_t_fp8();
      p.d_t = DataType::kFloat16;
      acc = ctx.scratch(static_cast<size_t>(rows * n_) * 2);
      if (lt_.run(ctx, p, a_ptr, w_packed_.get(), acc.get(), half_alpha_)) {
        e.acc = acc.get();
        e.acc_int32 = false;
        e.acc_half = true;
        e.acc_channels_first = false;
        e.colsum = nullptr;
        e.x_zp = 0;
        e.colscale = static_cast<const float*>(colscale_half_.get());
        half_acc_used_ = true;
        return true;
      }
      fp16_acc_ok_ = false;
    }
    if (path_ == Path::kInt8) {
      p.a_t = p.b_t = DataType::kInt8;
      p.d_t = DataType::kInt32;
    } else {
      p.a_t = x.dtype;
      p.b_t = weight_t_fp8();
      p.d_t = DataType::kFloat32;
    }
    acc = ctx.scratch(static_cast<size_t>(rows * n_) * 4);
    if (!lt_.run(ctx, p, a_ptr, w_packed_.get(), acc.get())) return false;
    e.acc = acc.get();
    e.acc_int32 = path_ == Path::kInt8;
    e.acc_half = false;
    e.acc_channels_first = false;
    e.colsum =
        path_ == Path::kInt8 && x_zp != 0 ? static_cast<const int32_t*>(colsum_.get()) : nullptr;
    e.x_zp = x_zp;
    e.colscale = static_cast<const float*>(colscale_.get());
    return true;
  }

  DataType weight_t_fp8() const { return w_fp8_t_; }

  // Whether cuBLASLt can write the int8 output itself: int8 Y without zero point, ReLU or no
  // activation, no residual or an int8 one without zero point, Y row-major ([rows, N]: matrix
  // products, channels-last convolutions). TRTUTILS_CUDA_INT8_REQUANT=0 turns it off.
  bool requant_fits(const RunContext&, const k::QEpilogue& e) const {
    if (!requant_ok_ || y_t_ != DataType::kInt8 || epilogue_.y_zp != 0.0f || e.grid0 > 0 ||
        e.parts > 0)
      return false;
    if (epilogue_.act != k::Act::kNone && epilogue_.act != k::Act::kRelu) return false;
    if (e.residual && (e.residual_t != DataType::kInt8 || epilogue_.r_zp != 0.0f)) return false;
    if (e.channels_first && e.positions != 1) return false;
    return kernel_switch("TRTUTILS_CUDA_INT8_REQUANT", true);
  }

  // Whether cuBLASLt can write the float8 output itself: E4M3 X, W and Y without zero points,
  // ReLU or no activation, no residual or an E4M3 one, Y row-major. TRTUTILS_CUDA_FP8_OUT=0
  // turns it off.
  bool fp8_out_fits(const k::QEpilogue& e) const {
    if (!fp8_out_ok_ || y_t_ != DataType::kFloat8E4M3FN || epilogue_.y_zp != 0.0f || e.grid0 > 0 ||
        e.parts > 0)
      return false;
    if (x_t_ != DataType::kFloat8E4M3FN || w_fp8_t_ != DataType::kFloat8E4M3FN) return false;
    if (epilogue_.act != k::Act::kNone && epilogue_.act != k::Act::kRelu) return false;
    if (e.residual && (e.residual_t != DataType::kFloat8E4M3FN || epilogue_.r_zp != 0.0f))
      return false;
    if (e.channels_first && e.positions != 1) return false;
    return kernel_switch("TRTUTILS_CUDA_FP8_OUT", true);
  }

  // The float8 output's constants: per-channel W scales, 1 / y_scale, the bias as float16 and
  // the residual's scale (made once).
  void prepare_fp8_out() {
    if (inv_y_scale_) return;
    w_scales_dev_ = upload_floats(w_scale_);
    inv_y_scale_ = upload_floats({1.0f / epilogue_.y_scale});
    r_scale_dev_ = upload_floats({epilogue_.r_scale});
    if (!bias_host_.empty()) {
      std::vector<half> b(bias_host_.size());
      for (size_t i = 0; i < b.size(); ++i) b[i] = float_to_half(bias_host_[i]);
      bias16_ = upload_bytes(b.data(), b.size() * sizeof(half));
    }
  }

  void prepare_half_acc() {
    if (colscale_half_) return;
    float wmin = w_scale_[0];
    for (float w : w_scale_) wmin = std::min(wmin, w);
    half_alpha_ = x_scale_ * wmin;
    std::vector<float> c(static_cast<size_t>(n_));
    for (int64_t j = 0; j < n_; ++j) c[j] = w_scale_[w_scale_.size() > 1 ? j : 0] / wmin;
    colscale_half_ = upload_floats(c);
  }

  // alpha[c] = x_scale * w_scale[c] / y_scale and the bias in output steps, with the X zero
  // point's column-sum correction folded in: (B[c] - x_scale * w_scale[c] * x_zp * colsum[c]) /
  // y_scale. Made once (x_zp: int8 after the uint8 flip).
  void prepare_requant(int32_t x_zp) {
    if (alpha_rq_) return;
    std::vector<float> alpha(static_cast<size_t>(n_)), bias(static_cast<size_t>(n_), 0.0f);
    for (int64_t c = 0; c < n_; ++c) {
      const double cs = static_cast<double>(x_scale_) * w_scale_[w_scale_.size() > 1 ? c : 0];
      alpha[c] = static_cast<float>(cs / epilogue_.y_scale);
      double b = bias_host_.empty() ? 0.0 : bias_host_[c];
      if (x_zp != 0) b -= cs * x_zp * colsum_host_.at(c);
      bias[c] = static_cast<float>(b / epilogue_.y_scale);
    }
    alpha_rq_ = upload_floats(alpha);
    bias_rq_ = upload_floats(bias);
  }

  void run_float(RunContext& ctx, Value& x, const void* px, Value& w, const ConvGeometry& g,
                 const Shape& ys, std::shared_ptr<void>& acc, k::QEpilogue& e) {
    const ir::Node& node = *ctx.node;
    // X (and QMatMul's W) dequantized with their per-tensor scale / zero point.
    auto dequant = [&](const void* src, DataType t, int64_t n, const std::shared_ptr<void>& s,
                       const std::shared_ptr<void>& z) {
      std::shared_ptr<void> f = ctx.scratch(static_cast<size_t>(n) * 4);
      k::QuantDesc q;
      q.n = n;
      q.scale = static_cast<const float*>(s.get());
      q.zero_point = static_cast<const float*>(z.get());
      ctx.check(k::dequantize(t, DataType::kFloat32, src, f.get(), q, ctx.stream), "dequantize");
      return f;
    };
    std::shared_ptr<void> xt;
    if (kind_ == Kind::kConv && channels_last_) {  // NHWC bytes -> NCHW for cuDNN
      const Shape first = to_first(x.shape);
      const int64_t c = x.shape.back(), sp = x.numel() / std::max<int64_t>(1, x.shape[0] * c);
      k::Broadcast bc;
      bc.rank = 3;
      bc.dims[0] = x.shape[0];
      bc.dims[1] = c;
      bc.dims[2] = sp;
      bc.strides[0][0] = sp * c;
      bc.strides[0][1] = 1;
      bc.strides[0][2] = c;
      xt = ctx.scratch(static_cast<size_t>(x.numel()));
      ctx.check(k::strided_copy(1, px, xt.get(), bc, 0, x.numel(), ctx.stream), "NHWC->NCHW");
      px = xt.get();
    }
    std::shared_ptr<void> xf = dequant(px, x.dtype, x.numel(), x_scale_dev_, x_zp_dev_);
    const int64_t ny = shape_numel(ys);
    acc = ctx.scratch(static_cast<size_t>(ny) * 4);
    if (kind_ == Kind::kConv) {
      conv_.run(ctx, g, ConvConfig{}, xf.get(), float_weights(ctx, w), acc.get());
      e.acc_channels_first = true;
    } else if (kind_ == Kind::kGemm) {
      MatmulProblem p;
      p.m = ny / n_;
      p.n = n_;
      p.k = k_;
      p.trans_b = trans_b_;
      TRT_CHECK(lt_.run(ctx, p, xf.get(), float_weights(ctx, w), acc.get()),
                ErrorCode::kNotSupported, "{}: cuBLASLt has no float32 algorithm ({}x{}x{})",
                node.describe(), p.m, p.n, p.k);
      e.acc_channels_first = false;
    } else {
      const void* pw = ctx.dev(w);
      std::shared_ptr<void> wf = dequant(pw, w.dtype, w.numel(), w_scale_dev_, w_zp_dev_);
      matmul(ctx, lt_, DataType::kFloat32, x.shape, w.shape, xf.get(), wf.get(), acc.get());
      e.acc_channels_first = false;
    }
    e.acc = acc.get();
    e.acc_int32 = false;
    e.colsum = nullptr;
    e.colscale = static_cast<const float*>(ones_.get());
  }

  Kind kind_;
  bool prepared_ = false;
  Path path_ = Path::kFloat;
  DataType x_t_ = DataType::kUndefined, y_t_ = DataType::kFloat32;
  DataType w_fp8_t_ = DataType::kFloat8E4M3FN;
  int64_t n_ = 0, k_ = 0, kp_ = 0, cp_ = 0;
  bool trans_b_ = false;
  bool channels_last_ = false;
  float x_scale_ = 1.0f, x_zp_ = 0.0f;
  std::vector<float> w_scale_, w_zp_;
  std::shared_ptr<void> bias_, colscale_, ones_, colsum_, w_packed_, w_float_, w_cudnn_;
  Tensor w_host_;  // W as given (constant), for the packings made on demand
  bool cudnn_int8_ = false, used_cudnn_ = false;
  bool nhwc_gemm_ = false, direct_ = false;
  // The requantizing cuBLASLt product (int8 Y written directly).
  bool requant_ok_ = true, requant_used_ = false;
  std::vector<int32_t> colsum_host_;
  std::vector<float> bias_host_;
  std::shared_ptr<void> alpha_rq_, bias_rq_;
  bool fp8_out_ok_ = true, fp16_acc_ok_ = true, half_acc_used_ = false;
  bool dw_ = false, dw_used_ = false;
  bool has_ln_ = false, ln_fused_ = false;  // the layer-norm fusion (QGemmLnInput)
  // The implicit-GEMM convolution: its mode, and the decision for the last geometry seen.
  AltMode igemm_mode_ = alt_mode("TRTUTILS_CUDA_IGEMM");
  bool igemm_decided_ = false, igemm_chosen_ = false, igemm_used_ = false;
  bool igemm_tma_ = false;        // qconv_igemm runs its TMA matrix-product kernel
  bool igemm_pointwise_ = false;  // ... or qconv_pointwise.cu's kernel
  bool igemm_wgmma_ = false;      // ... or its warpgroup-MMA kernel
  bool igemm_cached_ = false;     // the decision came from the timing cache
  ConvGeometry igemm_geometry_;
  float igemm_ms_ = -1, lowp_ms_ = -1;
  std::shared_ptr<void> w_dw_, w_dw4_;  // depthwise W [taps, C] and [taps / 4, C, 4]
  float half_alpha_ = 1.0f;
  std::shared_ptr<void> colscale_half_;
  std::shared_ptr<void> w_scales_dev_, inv_y_scale_, r_scale_dev_, bias16_;
  std::vector<int64_t> y_grid_;  // [R0, R1]: Y written as [R1, R0, N] (fusion/qgemm_epilogues.cpp)
  int64_t y_split_ = 0;  // P > 0: Y written as [P, rows..., N / P] (fusion/qgemm_epilogues.cpp)
  std::string cudnn_refused_;
  CudnnConv conv_int8_;
  std::shared_ptr<void> x_scale_dev_, x_zp_dev_, w_scale_dev_, w_zp_dev_;
  k::QEpilogue epilogue_;
  LtMatmul lt_;
  CudnnConv conv_;
};

}  // namespace

void register_quant_ops(OpTable& t) {
  t["QuantizeLinear"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<QuantizeOp>();
  };
  t["DequantizeLinear"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<DequantizeOp>();
  };
  t["com.trtutils::QConv"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<QOp>(Kind::kConv);
  };
  t["com.trtutils::QGemm"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<QOp>(Kind::kGemm);
  };
  t["com.trtutils::QMatMul"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<QOp>(Kind::kMatMul);
  };
}

}  // namespace trtutils::cuda
