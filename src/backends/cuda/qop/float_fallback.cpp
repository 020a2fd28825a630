// QOp's float tactic (qop.h), for what the low-precision tactics do not take (grouped
// convolutions, uint8 / float8 weights, QMatMul, cuBLASLt without an algorithm): X (and QMatMul's
// W) dequantized, float32 cuDNN / cuBLASLt with W dequantized once, then the epilogue pass.
#include <algorithm>
#include <memory>
#include <vector>

#include "backends/cuda/qop/qop.h"

namespace trtutils::cuda::qop {

// W dequantized to float32 in its own layout (made on first use).
const void* QOp::float_weights(RunContext& ctx, Value& w) {
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

std::shared_ptr<void> QOp::dequantized(RunContext& ctx, const void* src, DataType t, int64_t n,
                                       const std::shared_ptr<void>& scale,
                                       const std::shared_ptr<void>& zero_point, DataType to) {
  std::shared_ptr<void> f = ctx.scratch(dtype_storage_bytes(to, n));
  k::QuantDesc q;
  q.n = n;
  q.scale = static_cast<const float*>(scale.get());
  q.zero_point = static_cast<const float*>(zero_point.get());
  ctx.check(k::dequantize(t, to, src, f.get(), q, ctx.stream), "dequantize");
  return f;
}

void QOp::run_float(RunContext& ctx, Value& x, const void* px, Value& w, const ConvGeometry& g,
                    const Shape& ys, std::shared_ptr<void>& acc, k::QEpilogue& e) {
  const ir::Node& node = *ctx.node;
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
  // X (and QMatMul's W) dequantized with their per-tensor scale / zero point.
  std::shared_ptr<void> xf =
      dequantized(ctx, px, x.dtype, x.numel(), x_scale_dev_, x_zp_dev_, DataType::kFloat32);
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
    TRT_CHECK(lt_.run(ctx, p, xf.get(), float_weights(ctx, w), acc.get()), ErrorCode::kNotSupported,
              "{}: cuBLASLt has no float32 algorithm ({}x{}x{})", node.describe(), p.m, p.n, p.k);
    e.acc_channels_first = false;
  } else {
    const void* pw = ctx.dev(w);
    std::shared_ptr<void> wf =
        dequantized(ctx, pw, w.dtype, w.numel(), w_scale_dev_, w_zp_dev_, DataType::kFloat32);
    matmul(ctx, lt_, DataType::kFloat32, x.shape, w.shape, xf.get(), wf.get(), acc.get());
    e.acc_channels_first = false;
  }
  e.acc = acc.get();
  e.acc_int32 = false;
  e.colsum = nullptr;
  e.colscale = static_cast<const float*>(ones_.get());
}

}  // namespace trtutils::cuda::qop
