// Blocked-layout conversions (blocked_layout.h). Per (image, block) the 16 channel planes of S
// pixels interleave into S rows of 16 lanes, in tiles of 64 pixels so that both sides stay in
// L1.
#include "backends/cpu/blocked_layout.h"

#include <algorithm>

#include "core/check.h"
#include "ops/blocked_layout.h"

namespace trtutils::cpu {

namespace {

constexpr int64_t kLanes = ops::kChannelBlock, kTile = 64;

int64_t pixels_of(const Shape& s, size_t first, size_t last) {
  int64_t p = 1;
  for (size_t i = first; i < last; ++i) p *= s[i];
  return p;
}

// to_block: plain [n, c, s] <-> blocked [n, cb, s, 16].
void convert(const float* src, float* dst, int64_t n, int64_t c, int64_t s, bool to_block) {
  const int64_t cb = ops::channel_blocks(c);
#pragma omp parallel for collapse(2) schedule(static) if (n * cb * s * kLanes > (1 << 15))
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < cb; ++k) {
      float* blk = to_block ? dst + (b * cb + k) * s * kLanes : nullptr;
      const float* cblk = to_block ? nullptr : src + (b * cb + k) * s * kLanes;
      for (int64_t p0 = 0; p0 < s; p0 += kTile) {
        const int64_t p1 = std::min(s, p0 + kTile);
        for (int64_t j = 0; j < kLanes; ++j) {
          const int64_t ch = k * kLanes + j;
          if (to_block) {
            const float* plane = ch < c ? src + (b * c + ch) * s : nullptr;
            for (int64_t p = p0; p < p1; ++p) blk[p * kLanes + j] = plane ? plane[p] : 0.0f;
          } else if (ch < c) {
            float* plane = dst + (b * c + ch) * s;
            for (int64_t p = p0; p < p1; ++p) plane[p] = cblk[p * kLanes + j];
          }
        }
      }
    }
}

}  // namespace

Tensor to_blocked(const Tensor& plain) {
  TRT_CHECK_ARG(plain.dtype() == DataType::kFloat32 && plain.rank() >= 3,
                "to_blocked: a float32 tensor of rank >= 3, got {} {}", dtype_name(plain.dtype()),
                shape_str(plain.shape()));
  const Shape& s = plain.shape();
  Tensor r = Tensor::uninitialized(DataType::kFloat32, ops::blocked_shape(s));
  convert(plain.data<float>(), r.data<float>(), s[0], s[1], pixels_of(s, 2, s.size()), true);
  return r;
}

Tensor from_blocked(const Tensor& blocked, int64_t channels) {
  const Shape& s = blocked.shape();
  TRT_CHECK_ARG(blocked.dtype() == DataType::kFloat32 && blocked.rank() >= 4 &&
                    s.back() == ops::kChannelBlock && s[1] == ops::channel_blocks(channels),
                "from_blocked: a float32 [N, {}, spatial..., 16] tensor, got {} {}",
                ops::channel_blocks(channels), dtype_name(blocked.dtype()), shape_str(s));
  Tensor r = Tensor::uninitialized(DataType::kFloat32, ops::unblocked_shape(s, channels));
  convert(blocked.data<float>(), r.data<float>(), s[0], channels, pixels_of(s, 2, s.size() - 1),
          false);
  return r;
}

void to_blocked_kernel(KernelContext& ctx) {
  ctx.outputs.at(0) = to_blocked(ctx.input(0));
}

void from_blocked_kernel(KernelContext& ctx) {
  const int64_t channels = ctx.node.attr_int("channels", -1);
  TRT_CHECK_ARG(channels > 0, "{}: attribute 'channels' must be positive", ctx.node.describe());
  ctx.outputs.at(0) = from_blocked(ctx.input(0), channels);
}

}  // namespace trtutils::cpu
