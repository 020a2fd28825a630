// GridSample on the CPU (4-D): ops/grid_sample.h's rule per output point and channel, in
// float32, any float dtype in and out.
#include <vector>

#include "backends/cpu/copy_util.h"
#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "ops/grid_sample.h"

namespace trtutils::cpu {
namespace {

void grid_sample_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& xt = ctx.input(0);
  const Tensor& gt = ctx.input(1);
  TRT_CHECK(xt.rank() == 4, ErrorCode::kNotSupported,
            "{}: X must be 4-D [N, C, H, W] (volumetric GridSample is not supported)",
            node.describe());
  TRT_CHECK_ARG(gt.rank() == 4 && gt.dim(3) == 2 && gt.dim(0) == xt.dim(0),
                "{}: grid {} must be [N, H_out, W_out, 2] for X {}", node.describe(),
                shape_str(gt.shape()), shape_str(xt.shape()));
  ops::grid::Params p = ops::grid::parse_params(node);
  const int64_t n = xt.dim(0), c = xt.dim(1), ho = gt.dim(1), wo = gt.dim(2);
  p.h = xt.dim(2);
  p.w = xt.dim(3);
  const std::vector<float> x = xt.to_float_vector(), g = gt.to_float_vector();
  std::vector<float> out(static_cast<size_t>(n * c * ho * wo));
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < n * c; ++nc) {
    const float* plane = x.data() + nc * p.h * p.w;
    const float* grid = g.data() + (nc / c) * ho * wo * 2;
    auto at = [&](int64_t yy, int64_t xx) { return plane[yy * p.w + xx]; };
    for (int64_t i = 0; i < ho * wo; ++i)
      out[static_cast<size_t>(nc * ho * wo + i)] =
          ops::grid::sample(p, grid[2 * i], grid[2 * i + 1], at);
  }
  Tensor& y = ctx.make_output(0, xt.dtype(), {n, c, ho, wo});
  const size_t esz = element_bytes(xt.dtype(), node);
  for (size_t i = 0; i < out.size(); ++i)
    store_from_double(xt.dtype(), static_cast<uint8_t*>(y.raw()) + i * esz, out[i]);
}

}  // namespace

void register_grid_sample_kernel(KernelRegistry& r) {
  r.add({"GridSample", "", grid_sample_kernel});
}

}  // namespace trtutils::cpu
