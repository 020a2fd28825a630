// RoiAlign on the CPU (ONNX opsets 10 and 16, as ONNX Runtime and torchvision compute it): per
// region, per output bin, the mean (mode avg) or maximum (mode max: of the four weighted corner
// values of each sample) of bilinear samples on a regular grid (sampling_ratio per axis, or
// ceil(region size / bins) when 0). coordinate_transformation_mode half_pixel (opset 16's
// default, torchvision's aligned=True) shifts the region by half a pixel; output_half_pixel
// (opset 10's only mode) does not and makes the region at least 1x1. Samples more than a pixel
// outside the map count as 0. Computed in float32 (as ONNX Runtime does), any float dtype in/out.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/copy_util.h"
#include "backends/cpu/kernel_registry.h"
#include "core/check.h"

namespace trtutils::cpu {
namespace {

struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  float w[4] = {0, 0, 0, 0};
};

// The bilinear sample at (y, x) of an H x W map (Caffe2's / ONNX Runtime's boundary rules).
Sample bilinear(float y, float x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0f || y > static_cast<float>(h) || x < -1.0f || x > static_cast<float>(w)) return s;
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
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

struct RoiAttrs {
  int64_t oh = 1, ow = 1, sampling = 0;
  float scale = 1.0f;
  bool half_pixel = false, max_mode = false;
};

RoiAttrs roi_attrs(const KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  RoiAttrs a;
  a.oh = n.attr_int("output_height", 1);
  a.ow = n.attr_int("output_width", 1);
  a.sampling = n.attr_int("sampling_ratio", 0);
  a.scale = n.attr_float("spatial_scale", 1.0f);
  const std::string mode = n.attr_string("mode", "avg");
  TRT_CHECK_ARG(mode == "avg" || mode == "max", "{}: mode '{}' (expected avg or max)", n.describe(),
                mode);
  a.max_mode = mode == "max";
  const std::string ctm = ctx.opset >= 16
                              ? n.attr_string("coordinate_transformation_mode", "half_pixel")
                              : "output_half_pixel";
  TRT_CHECK_ARG(ctm == "half_pixel" || ctm == "output_half_pixel",
                "{}: coordinate_transformation_mode '{}' (expected half_pixel or "
                "output_half_pixel)",
                n.describe(), ctm);
  a.half_pixel = ctm == "half_pixel";
  TRT_CHECK_ARG(a.oh >= 1 && a.ow >= 1 && a.sampling >= 0,
                "{}: output_height {}, output_width {} and sampling_ratio {} out of range",
                n.describe(), a.oh, a.ow, a.sampling);
  return a;
}

// One region: C x oh x ow values into out.
void align_region(const RoiAttrs& a, const float* roi, const float* x, int64_t c, int64_t h,
                  int64_t w, float* out) {
  const float off = a.half_pixel ? 0.5f : 0.0f;
  const float sw = roi[0] * a.scale - off, sh = roi[1] * a.scale - off;
  float rw = roi[2] * a.scale - off - sw, rh = roi[3] * a.scale - off - sh;
  if (!a.half_pixel) {
    rw = std::max(rw, 1.0f);
    rh = std::max(rh, 1.0f);
  }
  const float bh = rh / static_cast<float>(a.oh), bw = rw / static_cast<float>(a.ow);
  const int64_t gh = a.sampling > 0 ? a.sampling : static_cast<int64_t>(std::ceil(rh / a.oh));
  const int64_t gw = a.sampling > 0 ? a.sampling : static_cast<int64_t>(std::ceil(rw / a.ow));
  const float count = static_cast<float>(std::max<int64_t>(gh * gw, 1));
  std::vector<Sample> samples;
  for (int64_t ph = 0; ph < a.oh; ++ph)
    for (int64_t pw = 0; pw < a.ow; ++pw) {
      samples.clear();
      for (int64_t iy = 0; iy < gh; ++iy)
        for (int64_t ix = 0; ix < gw; ++ix)
          samples.push_back(bilinear(sh + ph * bh + (iy + 0.5f) * bh / static_cast<float>(gh),
                                     sw + pw * bw + (ix + 0.5f) * bw / static_cast<float>(gw), h,
                                     w));
      for (int64_t ch = 0; ch < c; ++ch) {
        const float* m = x + ch * h * w;
        float acc = 0.0f;
        bool first = true;
        for (const Sample& s : samples) {
          if (a.max_mode) {
            float v = s.w[0] * m[s.pos[0]];
            for (int k = 1; k < 4; ++k) v = std::max(v, s.w[k] * m[s.pos[k]]);
            acc = first ? v : std::max(acc, v);
            first = false;
          } else {
            for (int k = 0; k < 4; ++k) acc += s.w[k] * m[s.pos[k]];
          }
        }
        out[(ch * a.oh + ph) * a.ow + pw] = a.max_mode ? acc : acc / count;
      }
    }
}

void roi_align_kernel(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Tensor& xt = ctx.input(0);
  const Tensor& rt = ctx.input(1);
  const Tensor& bt = ctx.input(2);
  TRT_CHECK_ARG(xt.rank() == 4 && rt.rank() == 2 && rt.dim(1) == 4 && bt.rank() == 1 &&
                    bt.dim(0) == rt.dim(0),
                "{}: X {} must be [N, C, H, W], rois {} [R, 4] and batch_indices {} [R]",
                n.describe(), shape_str(xt.shape()), shape_str(rt.shape()), shape_str(bt.shape()));
  const RoiAttrs a = roi_attrs(ctx);
  const int64_t N = xt.dim(0), C = xt.dim(1), H = xt.dim(2), W = xt.dim(3), R = rt.dim(0);
  const std::vector<float> x = xt.to_float_vector(), rois = rt.to_float_vector();
  const std::vector<int64_t> batch = bt.to_int64_vector();
  std::vector<float> out(static_cast<size_t>(R * C * a.oh * a.ow), 0.0f);
  for (int64_t r = 0; r < R; ++r) {
    TRT_CHECK_ARG(batch[r] >= 0 && batch[r] < N,
                  "{}: batch index {} of region {} is not in [0, {})", n.describe(), batch[r], r,
                  N);
    if (H == 0 || W == 0) continue;
    align_region(a, rois.data() + 4 * r, x.data() + batch[r] * C * H * W, C, H, W,
                 out.data() + r * C * a.oh * a.ow);
  }
  Tensor& y = ctx.make_output(0, xt.dtype(), {R, C, a.oh, a.ow});
  if (xt.dtype() == DataType::kFloat32) {
    std::copy(out.begin(), out.end(), y.data<float>());
    return;
  }
  const size_t esz = element_bytes(xt.dtype(), n);
  for (size_t i = 0; i < out.size(); ++i)
    store_from_double(xt.dtype(), static_cast<uint8_t*>(y.raw()) + i * esz, out[i]);
}

}  // namespace

void register_roi_align_kernel(KernelRegistry& r) {
  r.add({"RoiAlign", "", roi_align_kernel});
}

}  // namespace trtutils::cpu
