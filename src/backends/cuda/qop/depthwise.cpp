// QOp's int8 depthwise convolution tactic (qop.h; kernel in depthwise_kernels.cu), with the
// epilogue fused.
#include <vector>

#include "backends/cuda/qop/qop.h"

namespace trtutils::cuda::qop {

// Depthwise W [C, 1, R, S] as [R * S, C] bytes (four channels of a tap per 4-byte load).
void QOp::pack_depthwise_weights(RunContext& ctx) {
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

// The depthwise kernel over X with the epilogue e fused; false when it does not take the problem
// (alignment / channel count: dw_ cleared, the float path from now on).
bool QOp::run_depthwise(RunContext& ctx, const Value& x, const void* px, const ConvGeometry& g,
                        k::QEpilogue& e) {
  e.colscale = static_cast<const float*>(colscale_.get());
  k::DepthwiseDesc d;
  set_2d_geometry(d, g);
  d.n = static_cast<int32_t>(g.batch);
  d.x_zp = static_cast<int32_t>(x_zp_);
  const cudaError_t st = k::qconv_depthwise(px, x.dtype == DataType::kUInt8, w_dw_.get(), d, e,
                                            ctx.stream, w_dw4_.get());
  if (st == cudaErrorNotSupported) {
    dw_ = false;  // alignment / channel count: the float path from now on
    return false;
  }
  ctx.check(st, "depthwise int8 convolution");
  return true;
}

}  // namespace trtutils::cuda::qop
