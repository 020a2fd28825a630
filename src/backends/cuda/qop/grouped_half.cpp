// QOp's tactic for grouped convolutions (more than one channel per group: ResNeXt, RegNet) of
// int8 / uint8 channels-last tensors, which the int8 GEMMs and the depthwise kernel do not take:
// X dequantized to float16 NHWC, cuDNN's float16 NHWC grouped convolution (float32
// accumulation) with W dequantized once to float16 KRSC, then the quantizing epilogue on its
// float16 products. The float32 tactic it replaces transposed X to NCHW and ran cuDNN in
// float32, 8x slower than the float16 engine's same layer (bench/RESULTS.md, issue 31). float16
// keeps 11 bits of each dequantized value, far finer than the int8 steps they came from.
#include <vector>

#include "backends/cuda/qop/qop.h"

namespace trtutils::cuda::qop {

bool QOp::half_grouped_fits(const Value& x, const ConvGeometry& g) const {
  return half_grouped_ok_ && kind_ == Kind::kConv && channels_last_ && g.group > 1 &&
         g.nspatial == 2 && is_int8(x.dtype) && w_host_.shape().size() == 4;
}

// W [K, C/g, R, S] dequantized per output channel, as float16 [K, R, S, C/g].
const void* QOp::half_grouped_weights(RunContext& ctx) {
  if (w_half_krsc_) return w_half_krsc_.get();
  const Shape& ws = w_host_.shape();
  const int64_t k = ws[0], c = ws[1], rs = ws[2] * ws[3];
  std::vector<half> packed(static_cast<size_t>(k * rs * c));
  for (int64_t o = 0; o < k; ++o) {
    const size_t q = w_scale_.size() > 1 ? static_cast<size_t>(o) : 0;
    for (int64_t i = 0; i < c; ++i)
      for (int64_t p = 0; p < rs; ++p) {
        const double v = w_host_.at_double((o * c + i) * rs + p);
        packed[static_cast<size_t>((o * rs + p) * c + i)] =
            float_to_half(static_cast<float>((v - w_zp_[q]) * w_scale_[q]));
      }
  }
  w_half_krsc_ = upload_bytes(packed.data(), packed.size() * sizeof(half));
  if (ctx.weight_bytes) *ctx.weight_bytes += packed.size() * sizeof(half);
  return w_half_krsc_.get();
}

bool QOp::run_half_grouped(RunContext& ctx, const Value& x, const void* px, const ConvGeometry& g,
                           const Shape& ys, std::shared_ptr<void>& acc, k::QEpilogue& e) {
  const std::shared_ptr<void> xh =
      dequantized(ctx, px, x.dtype, x.numel(), x_scale_dev_, x_zp_dev_, DataType::kFloat16);
  acc = ctx.scratch(static_cast<size_t>(shape_numel(ys)) * sizeof(half));
  const ConvConfig config{DataType::kFloat16, DataType::kFloat16, true};
  try {
    conv_.run(ctx, g, config, xh.get(), half_grouped_weights(ctx), acc.get());
  } catch (const Error& err) {
    if (err.code() != ErrorCode::kNotSupported) throw;
    half_grouped_ok_ = false;  // cuDNN has no float16 NHWC algorithm: float32 from now on
    return false;
  }
  e.acc = acc.get();
  e.acc_int32 = false;
  e.acc_half = true;
  e.acc_channels_first = false;
  e.colsum = nullptr;
  e.colscale = static_cast<const float*>(ones_.get());
  return true;
}

}  // namespace trtutils::cuda::qop
