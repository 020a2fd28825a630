// QOp's cuDNN int8 convolution tactic (qop.h), on request (TRTUTILS_CUDA_INT8_CONV=cudnn).
#include <memory>
#include <vector>

#include "backends/cuda/qop/qop.h"

namespace trtutils::cuda::qop {

// W [K, C, R, S] as KRSC bytes with C padded with zeros to cp_ (a multiple of 4).
void QOp::pack_cudnn_weights(RunContext& ctx) {
  const Shape& ws = w_host_.shape();
  const int64_t c = ws[1], rs = ws[2] * ws[3];
  cp_ = round_up(c, 4);
  std::vector<uint8_t> packed(static_cast<size_t>(n_ * rs * cp_), 0);
  const uint8_t* src = static_cast<const uint8_t*>(w_host_.raw());
  for (int64_t o = 0; o < n_; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t p = 0; p < rs; ++p) packed[(o * rs + p) * cp_ + ci] = src[(o * c + ci) * rs + p];
  w_cudnn_ = upload_bytes(packed.data(), packed.size());
  if (ctx.weight_bytes) *ctx.weight_bytes += packed.size();
}

// The int8 convolution through cuDNN into a float32 [rows, N] accumulator (NHWC output);
// false when cuDNN refuses the problem (from then on: the im2col + cuBLASLt path).
bool QOp::run_cudnn_int8(RunContext& ctx, Value& x, const void* px, const ConvGeometry& g,
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

}  // namespace trtutils::cuda::qop
