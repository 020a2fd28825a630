// QOp's shell (qop.h): the constants read and the path picked on the first run (prepare), the
// order in which the tactics are tried (run) and the kernel label the layer table shows.
#include "backends/cuda/qop/qop.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace trtutils::cuda::qop {

using namespace ops::qlinear;

namespace {

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

}  // namespace

std::string QOp::kernel() const {
  if (!has_ln_) return product_kernel();
  return product_kernel() + (ln_fused_ ? " + LayerNormalization + QuantizeLinear in its epilogue"
                                       : " + LayerNormalization + QuantizeLinear kernel");
}

std::string QOp::product_kernel() const {
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
  if (half_grouped_used_) return "dequantize + cuDNN float16 NHWC (grouped)";
  return kind_ == Kind::kConv ? "dequantize + cuDNN float32" : "dequantize + cuBLASLt float32";
}

// ", 0.180 ms vs cuBLASLt 0.455 ms": the timed choice, for kernel().
std::string QOp::ms_vs(float chosen, float other) {
  if (chosen < 0) return "";
  return other < 0 ? fmt::format(", {:.3f} ms; cuBLASLt failed", chosen)
                   : fmt::format(", {:.3f} ms vs cuBLASLt {:.3f} ms", chosen, other);
}

void QOp::run(RunContext& ctx, const std::vector<Value*>& in, const std::vector<Value*>& out) {
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
  used_cudnn_ = requant_used_ = half_acc_used_ = dw_used_ = igemm_used_ = half_grouped_used_ =
      false;
  if (dw_ && kind_ == Kind::kConv && channels_last_ && g.nspatial == 2)
    done = dw_used_ = run_depthwise(ctx, x, px, g, e);
  if (!done && cudnn_int8_) done = used_cudnn_ = run_cudnn_int8(ctx, x, px, g, rows, acc, e);
  if (!done && igemm_fits(x, g)) done = igemm_used_ = implicit_gemm(ctx, x, px, g, rows, e, ln);
  if (!done && gemm_igemm_fits(x, e, rows))
    done = igemm_used_ = implicit_gemm(ctx, x, px, gemm_as_conv(rows), rows, e, ln);
  if (!done && path_ != Path::kFloat && (kind_ != Kind::kConv || g.group == 1)) {
    done = run_lowp(ctx, x, px, g, rows, acc, e);
    if (!done) path_ = Path::kFloat;  // cuBLASLt declined: float from now on
  }
  if (!done && half_grouped_fits(x, g))
    done = half_grouped_used_ = run_half_grouped(ctx, x, px, g, ys, acc, e);
  if (!done) run_float(ctx, x, px, w, g, ys, acc, e);
  if (!requant_used_ && !dw_used_ && !igemm_used_)
    ln_fused_ = epilogue_pass(ctx, e, ln);
  else if (ln)
    layer_norm_after(ctx, e, *ln);
}

// Reads the constants, picks the path and prepares W for it.
void QOp::prepare(RunContext& ctx, const std::vector<Value*>& in, DataType x_t) {
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
    TRT_CHECK_ARG(w.shape.size() == 2, "{}: W {} must be 2-D", node.describe(), shape_str(w.shape));
    trans_b_ = node.attr_int("transB", 0) != 0;
    k_ = trans_b_ ? w.shape[1] : w.shape[0];
    n_ = trans_b_ ? w.shape[0] : w.shape[1];
  } else {
    n_ = w.shape.size() > 1 ? w.shape.back() : 1;
    k_ = w.shape.size() > 1 ? w.shape[w.shape.size() - 2] : w.shape[0];
  }
  // Weight scales / zero points.
  const Tensor& ws = constant(kWScale, "w_scale");
  TRT_CHECK_ARG(
      ws.dtype() == DataType::kFloat32 && (ws.numel() == 1 || (ws.rank() == 1 && ws.numel() == n_)),
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
              "{}: quantized output dtype {} is not supported", node.describe(), dtype_name(y_t_));
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
      epilogue_.r_zp = input(kRZeroPoint)
                           ? one_value(node, constant(kRZeroPoint, "r_zero_point"), "r_zero_point")
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

}  // namespace trtutils::cuda::qop
