// GridSample on the GPU (4-D; X and grid float32 / float16 / bfloat16): grid_sample_kernels.cu.
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/grid_sample_kernels.h"

namespace trtutils::cuda {
namespace {

class GridSampleOp : public GpuOp {
 public:
  explicit GridSampleOp(const OpBuild& b) : p_(ops::grid::parse_params(b.node)) {
    for (size_t i : {size_t{0}, size_t{1}}) {
      const DataType dt = b.input_dtype(i);
      TRT_CHECK(dt == DataType::kUndefined || dt == DataType::kFloat32 ||
                    dt == DataType::kFloat16 || dt == DataType::kBFloat16,
                ErrorCode::kNotSupported, "{}: {} input {} on the GPU", b.node.describe(),
                dtype_name(dt), i);
    }
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& g = *in.at(1);
    TRT_CHECK(x.shape.size() == 4, ErrorCode::kNotSupported,
              "{}: X must be 4-D [N, C, H, W] (volumetric GridSample is not supported)",
              node.describe());
    TRT_CHECK_ARG(g.shape.size() == 4 && g.shape[3] == 2 && g.shape[0] == x.shape[0],
                  "{}: grid {} must be [N, H_out, W_out, 2] for X {}", node.describe(),
                  shape_str(g.shape), shape_str(x.shape));
    k::GridSampleArgs a;
    a.p = p_;
    a.n = x.shape[0];
    a.c = x.shape[1];
    a.p.h = x.shape[2];
    a.p.w = x.shape[3];
    a.ho = g.shape[1];
    a.wo = g.shape[2];
    a.dt = x.dtype;
    a.grid_dt = g.dtype;
    a.x = ctx.dev(x);
    a.grid = ctx.dev(g);
    a.y = ctx.make(*out.at(0), x.dtype, {a.n, a.c, a.ho, a.wo});
    ctx.check(k::grid_sample(a, ctx.stream), "GridSample");
  }

 private:
  ops::grid::Params p_;
};

}  // namespace

void register_grid_sample_ops(OpTable& t) {
  t["GridSample"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<GridSampleOp>(b);
  };
}

}  // namespace trtutils::cuda
