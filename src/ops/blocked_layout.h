// The CPU plan's blocked activation layout (the conv_blocked_layout pass, passes.h): a float32
// [N, C, spatial...] tensor stored as [N, ceil(C / 16), spatial..., 16], channel c of a pixel in
// block c / 16, lane c % 16, lanes past C zero. It is oneDNN's nChw16c ("aBcd16b"), whose
// convolution, depthwise and pooling kernels stream it at memory speed where channels-last
// [N, spatial..., C] kernels do not (MobileNetV2 at batch 8: 1.3-1.7x on the layers of 56-112 px).
// The shape helpers here serve shape inference, the pass and the kernels alike.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace trtutils::ops {

constexpr int64_t kChannelBlock = 16;

inline int64_t channel_blocks(int64_t channels) {
  return (channels + kChannelBlock - 1) / kChannelBlock;
}

// [N, C, spatial...] (C static) -> [N, ceil(C / 16), spatial..., 16].
inline ir::SymShape blocked_shape(const ir::SymShape& plain) {
  ir::SymShape s{plain[0], ir::Dim(channel_blocks(plain[1].value))};
  s.insert(s.end(), plain.begin() + 2, plain.end());
  s.push_back(ir::Dim(kChannelBlock));
  return s;
}

// [N, blocks, spatial..., 16] -> [N, channels, spatial...].
inline ir::SymShape unblocked_shape(const ir::SymShape& blocked, int64_t channels) {
  ir::SymShape s{blocked[0], ir::Dim(channels)};
  s.insert(s.end(), blocked.begin() + 2, blocked.end() - 1);
  return s;
}

inline Shape blocked_shape(const Shape& plain) {
  Shape s{plain[0], channel_blocks(plain[1])};
  s.insert(s.end(), plain.begin() + 2, plain.end());
  s.push_back(kChannelBlock);
  return s;
}

inline Shape unblocked_shape(const Shape& blocked, int64_t channels) {
  Shape s{blocked[0], channels};
  s.insert(s.end(), blocked.begin() + 2, blocked.end() - 1);
  return s;
}

}  // namespace trtutils::ops
