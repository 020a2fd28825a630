// RoiAlign on the GPU (opsets 10 and 16; the two-stage detectors' box heads): X and rois
// float32 / float16 / bfloat16, batch_indices int64 or int32 (converted). Kernel:
// roi_align_kernels.cu.
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/roi_align_kernels.h"

namespace trtutils::cuda {
namespace {

bool float_type(DataType dt) {
  return dt == DataType::kFloat32 || dt == DataType::kFloat16 || dt == DataType::kBFloat16;
}

class RoiAlignOp : public GpuOp {
 public:
  explicit RoiAlignOp(const OpBuild& b) {
    for (size_t i : {size_t{0}, size_t{1}}) {
      const DataType dt = b.input_dtype(i);
      TRT_CHECK(dt == DataType::kUndefined || float_type(dt), ErrorCode::kNotSupported,
                "{}: {} input {} on the GPU", b.node.describe(), dtype_name(dt), i);
    }
    a_.attrs = ops::roi::parse_attrs(b.node, b.opset);
  }
  std::string kernel() const override { return "CUDA kernel (one thread per bin)"; }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& rois = *in.at(1);
    Value& batch = *in.at(2);
    TRT_CHECK_ARG(x.shape.size() == 4 && rois.shape.size() == 2 && rois.shape[1] == 4 &&
                      batch.shape.size() == 1 && batch.shape[0] == rois.shape[0],
                  "{}: X {} must be [N, C, H, W], rois {} [R, 4] and batch_indices {} [R]",
                  node.describe(), shape_str(x.shape), shape_str(rois.shape),
                  shape_str(batch.shape));
    TRT_CHECK_ARG(batch.dtype == DataType::kInt64 || batch.dtype == DataType::kInt32,
                  "{}: batch_indices must be int64, got {}", node.describe(),
                  dtype_name(batch.dtype));
    k::RoiAlignArgs a = a_;
    a.n = x.shape[0];
    a.c = x.shape[1];
    a.h = x.shape[2];
    a.w = x.shape[3];
    a.r = rois.shape[0];
    if (batch.host.defined())
      for (int64_t b : batch.host.to_int64_vector())
        TRT_CHECK_ARG(b >= 0 && b < a.n, "{}: batch index {} is not in [0, {})", node.describe(), b,
                      a.n);
    std::shared_ptr<void> batch64;
    if (batch.dtype == DataType::kInt64) {
      a.batch = static_cast<const int64_t*>(ctx.dev(batch));
    } else {  // int32 indices (some exporters): widened on the device
      batch64 = ctx.scratch(static_cast<size_t>(a.r) * 8);
      ctx.check(k::cast(DataType::kInt32, DataType::kInt64, ctx.dev(batch), batch64.get(), a.r,
                        false, ctx.stream),
                "RoiAlign batch_indices");
      a.batch = static_cast<const int64_t*>(batch64.get());
    }
    a.dt = x.dtype;
    a.rois_dt = rois.dtype;
    a.x = ctx.dev(x);
    a.rois = ctx.dev(rois);
    a.y = ctx.make(*out.at(0), x.dtype, {a.r, a.c, a.attrs.oh, a.attrs.ow});
    ctx.check(k::roi_align(a, ctx.stream), "RoiAlign");
  }

 private:
  k::RoiAlignArgs a_;
};

}  // namespace

void register_roi_align_ops(OpTable& t) {
  t["RoiAlign"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<RoiAlignOp>(b);
  };
}

}  // namespace trtutils::cuda
