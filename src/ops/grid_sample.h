// GridSample's sampling rule (ONNX opsets 16 and 20, 4-D: X [N, C, H, W], grid [N, Ho, Wo, 2]
// of (x, y) in [-1, 1]), as PyTorch's grid_sampler_2d computes it: one header for the CPU kernel
// and the CUDA kernel, so the two compute the same float32 operations.
//   - unnormalize: align_corners maps -1 and 1 to the corner pixels' centres, else to their
//     outer edges;
//   - linear and nearest: padding border / reflection moves the source coordinate into the map
//     first; taps outside the map read 0;
//   - cubic (A = -0.75, 4 x 4 taps): padding applies to each tap's coordinate.
// Nearest rounds half to even.
#pragma once

#include <math.h>

#include <cstdint>

#include "ops/host_device.h"

namespace trtutils::ir {
struct Node;
}

namespace trtutils::ops::grid {

enum class Mode : int { kLinear, kNearest, kCubic };
enum class Padding : int { kZeros, kBorder, kReflection };

struct Params {
  Mode mode = Mode::kLinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
  int64_t h = 0, w = 0;
};

// The node's mode, padding_mode and align_corners (h and w left 0); Error(kNotSupported) for
// other modes. Defined in grid_sample.cpp (host code).
Params parse_params(const ir::Node& node);

TRT_HOST_DEVICE inline float unnormalize(float c, int64_t size, bool align_corners) {
  const float s = static_cast<float>(size);
  return align_corners ? (c + 1.0f) / 2.0f * (s - 1.0f) : ((c + 1.0f) * s - 1.0f) / 2.0f;
}

TRT_HOST_DEVICE inline float clip(float c, int64_t size) {
  return fminf(static_cast<float>(size - 1), fmaxf(c, 0.0f));
}

// Reflects c into [twice_low / 2, twice_high / 2].
TRT_HOST_DEVICE inline float reflect(float c, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0.0f;
  const float lo = static_cast<float>(twice_low) / 2.0f;
  const float span = static_cast<float>(twice_high - twice_low) / 2.0f;
  c = fabsf(c - lo);
  const float extra = fmodf(c, span);
  const int64_t flips = static_cast<int64_t>(floorf(c / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

// The padding rule applied to a coordinate (zeros: unchanged).
TRT_HOST_DEVICE inline float pad_coordinate(float c, int64_t size, Padding p, bool align_corners) {
  if (p == Padding::kBorder) return clip(c, size);
  if (p == Padding::kReflection) {
    c = align_corners ? reflect(c, 0, 2 * (size - 1)) : reflect(c, -1, 2 * size - 1);
    return clip(c, size);
  }
  return c;
}

TRT_HOST_DEVICE inline float cubic1(float x, float a) {
  return ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
}
TRT_HOST_DEVICE inline float cubic2(float x, float a) {
  return ((a * x - 5.0f * a) * x + 8.0f * a) * x - 4.0f * a;
}

// The value at grid point (gx, gy) of one H x W plane; at(y, x) reads an in-range pixel.
template <typename At>
TRT_HOST_DEVICE float sample(const Params& p, float gx, float gy, At at) {
  auto tap = [&](int64_t y, int64_t x) -> float {
    return (y >= 0 && y < p.h && x >= 0 && x < p.w) ? at(y, x) : 0.0f;
  };
  float x = unnormalize(gx, p.w, p.align_corners), y = unnormalize(gy, p.h, p.align_corners);
  if (p.mode == Mode::kCubic) {
    const float x0 = floorf(x), y0 = floorf(y);
    const float tx = x - x0, ty = y - y0;
    const float a = -0.75f;
    const float cx[4] = {cubic2(tx + 1.0f, a), cubic1(tx, a), cubic1(1.0f - tx, a),
                         cubic2(2.0f - tx, a)};
    const float cy[4] = {cubic2(ty + 1.0f, a), cubic1(ty, a), cubic1(1.0f - ty, a),
                         cubic2(2.0f - ty, a)};
    float acc = 0.0f;
    for (int i = 0; i < 4; ++i) {
      float row = 0.0f;
      for (int j = 0; j < 4; ++j) {
        const float tx_c =
            pad_coordinate(x0 - 1.0f + static_cast<float>(j), p.w, p.padding, p.align_corners);
        const float ty_c =
            pad_coordinate(y0 - 1.0f + static_cast<float>(i), p.h, p.padding, p.align_corners);
        row += cx[j] * tap(static_cast<int64_t>(ty_c), static_cast<int64_t>(tx_c));
      }
      acc += cy[i] * row;
    }
    return acc;
  }
  x = pad_coordinate(x, p.w, p.padding, p.align_corners);
  y = pad_coordinate(y, p.h, p.padding, p.align_corners);
  if (p.mode == Mode::kNearest)
    return tap(static_cast<int64_t>(nearbyintf(y)), static_cast<int64_t>(nearbyintf(x)));
  const float fx = floorf(x), fy = floorf(y);
  const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
  const float lx = x - fx, ly = y - fy;
  return (1.0f - ly) * ((1.0f - lx) * tap(y0, x0) + lx * tap(y0, x0 + 1)) +
         ly * ((1.0f - lx) * tap(y0 + 1, x0) + lx * tap(y0 + 1, x0 + 1));
}

}  // namespace trtutils::ops::grid
