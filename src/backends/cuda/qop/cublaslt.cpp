// QOp's int8 / fp8 tactic through cuBLASLt (qop.h): W packed [N, Kp], X as the product's A
// (directly, or through an im2col for convolutions), and the product written as int8 Y
// (requantized), float8 Y, float16 or int32 / float32 products for the epilogue pass.
#include <algorithm>
#include <vector>

#include "backends/cuda/qop/qop.h"

namespace trtutils::cuda::qop {

// W as [N, Kp] bytes (row = output channel), K padded with zeros to a multiple of 16, and its
// column sums (int8 zero-point correction), for the cuBLASLt product. Columns in W's order
// (c, taps), or (taps, c) for the channels-last convolutions.
void QOp::pack_gemm_weights(RunContext& ctx) {
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

// int8 / fp8 product into acc; false when cuBLASLt has no algorithm.
bool QOp::run_lowp(RunContext& ctx, Value& x, const void* px, const ConvGeometry& g, int64_t rows,
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
    p.epilogue = bias_
                     ? (relu ? MatmulProblem::Epilogue::kReluBias : MatmulProblem::Epilogue::kBias)
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

// Whether cuBLASLt can write the int8 output itself: int8 Y without zero point, ReLU or no
// activation, no residual or an int8 one without zero point, Y row-major ([rows, N]: matrix
// products, channels-last convolutions). TRTUTILS_CUDA_INT8_REQUANT=0 turns it off.
bool QOp::requant_fits(const RunContext&, const k::QEpilogue& e) const {
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
bool QOp::fp8_out_fits(const k::QEpilogue& e) const {
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
void QOp::prepare_fp8_out() {
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

void QOp::prepare_half_acc() {
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
void QOp::prepare_requant(int32_t x_zp) {
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

}  // namespace trtutils::cuda::qop
