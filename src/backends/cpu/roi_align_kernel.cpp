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
#include "ops/roi_align.h"

namespace trtutils::cpu {
namespace {

// One region: C x oh x ow values into out.
void align_region(const ops::roi::Attrs& a, const float* roi, const float* x, int64_t c, int64_t h,
                  int64_t w, float* out) {
  const ops::roi::Region r = ops::roi::region(a, roi[0], roi[1], roi[2], roi[3]);
  std::vector<ops::roi::Sample> samples;
  for (int64_t ph = 0; ph < a.oh; ++ph)
    for (int64_t pw = 0; pw < a.ow; ++pw) {
      samples.clear();
      for (int64_t iy = 0; iy < r.gh; ++iy)
        for (int64_t ix = 0; ix < r.gw; ++ix)
          samples.push_back(ops::roi::bin_sample(r, ph, pw, iy, ix, h, w));
      for (int64_t ch = 0; ch < c; ++ch) {
        const float* m = x + ch * h * w;
        float acc = 0.0f;
        bool first = true;
        for (const ops::roi::Sample& s : samples) {
          if (a.max_mode) {
            float v = s.w[0] * m[s.pos[0]];
            for (int k = 1; k < 4; ++k) v = std::max(v, s.w[k] * m[s.pos[k]]);
            acc = first ? v : std::max(acc, v);
            first = false;
          } else {
            for (int k = 0; k < 4; ++k) acc += s.w[k] * m[s.pos[k]];
          }
        }
        out[(ch * a.oh + ph) * a.ow + pw] = a.max_mode ? acc : acc / r.count;
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
  const ops::roi::Attrs a = ops::roi::parse_attrs(n, ctx.opset);
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
