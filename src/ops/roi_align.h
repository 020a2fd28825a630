// RoiAlign's rules (ONNX opsets 10 and 16, as ONNX Runtime and torchvision compute them), shared
// by the CPU kernel (backends/cpu/roi_align_kernel.cpp) and the CUDA kernel
// (backends/cuda/roi_align_kernels.cu): the attributes, and the bilinear sample with Caffe2's /
// ONNX Runtime's boundary rules (a sample more than a pixel outside the map counts as 0).
#pragma once

#include <math.h>

#include <cstdint>

#include "ops/host_device.h"

namespace trtutils::ir {
struct Node;
}

namespace trtutils::ops::roi {

struct Attrs {
  int64_t oh = 1, ow = 1, sampling = 0;
  float scale = 1.0f;
  bool half_pixel = false, max_mode = false;
};

// The node's attributes (coordinate_transformation_mode: half_pixel by default at opset 16,
// output_half_pixel before); Error(kInvalidArgument) naming the node for bad values. Defined in
// roi_align.cpp (host code).
Attrs parse_attrs(const ir::Node& node, int64_t opset);

// The four corners (offsets into an H x W map) and weights of the bilinear sample at (y, x).
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  float w[4] = {0, 0, 0, 0};
};

TRT_HOST_DEVICE inline Sample bilinear(float y, float x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0f || y > static_cast<float>(h) || x < -1.0f || x > static_cast<float>(w)) return s;
  y = fmaxf(y, 0.0f);
  x = fmaxf(x, 0.0f);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= h - 1) {
    y1 = y0 = h - 1;
    y = static_cast<float>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x1 = x0 = w - 1;
    x = static_cast<float>(x0);
  } else {
    x1 = x0 + 1;
  }
  const float ly = y - static_cast<float>(y0), lx = x - static_cast<float>(x0);
  const float hy = 1.0f - ly, hx = 1.0f - lx;
  s.pos[0] = y0 * w + x0;
  s.pos[1] = y0 * w + x1;
  s.pos[2] = y1 * w + x0;
  s.pos[3] = y1 * w + x1;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

// One region's geometry: its start, bin size and sampling grid (roi = x1, y1, x2, y2).
struct Region {
  float sh = 0, sw = 0, bh = 0, bw = 0, count = 1;
  int64_t gh = 1, gw = 1;
};

TRT_HOST_DEVICE inline Region region(const Attrs& a, float x1, float y1, float x2, float y2) {
  Region r;
  const float off = a.half_pixel ? 0.5f : 0.0f;
  r.sw = x1 * a.scale - off;
  r.sh = y1 * a.scale - off;
  float rw = x2 * a.scale - off - r.sw, rh = y2 * a.scale - off - r.sh;
  if (!a.half_pixel) {
    rw = fmaxf(rw, 1.0f);
    rh = fmaxf(rh, 1.0f);
  }
  r.bh = rh / static_cast<float>(a.oh);
  r.bw = rw / static_cast<float>(a.ow);
  r.gh = a.sampling > 0 ? a.sampling : static_cast<int64_t>(ceilf(rh / static_cast<float>(a.oh)));
  r.gw = a.sampling > 0 ? a.sampling : static_cast<int64_t>(ceilf(rw / static_cast<float>(a.ow)));
  r.count = static_cast<float>(r.gh * r.gw > 1 ? r.gh * r.gw : 1);
  return r;
}

// Sample (iy, ix) of bin (ph, pw).
TRT_HOST_DEVICE inline Sample bin_sample(const Region& r, int64_t ph, int64_t pw, int64_t iy,
                                         int64_t ix, int64_t h, int64_t w) {
  return bilinear(r.sh + ph * r.bh + (iy + 0.5f) * r.bh / static_cast<float>(r.gh),
                  r.sw + pw * r.bw + (ix + 0.5f) * r.bw / static_cast<float>(r.gw), h, w);
}

}  // namespace trtutils::ops::roi
