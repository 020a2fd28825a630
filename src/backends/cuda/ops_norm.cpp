// InstanceNormalization and GroupNormalization on the GPU (float32 / float16 / bfloat16, NCHW):
// group_norm_kernels.cu. Scale and bias become float32 device arrays once when they are
// constants (the usual case: initializers), else per run from their host values.
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/group_norm_kernels.h"

namespace trtutils::cuda {
namespace {

std::shared_ptr<void> upload_floats(const Tensor& t, bool shared) {
  const std::vector<float> v = t.to_float_vector();
  return shared ? upload_bytes(v.data(), v.size() * sizeof(float))
                : upload_private(v.data(), v.size() * sizeof(float));
}

class GroupNormOp : public GpuOp {
 public:
  // instance: InstanceNormalization (one group per channel, per-channel scale and bias).
  GroupNormOp(const OpBuild& b, bool instance) : instance_(instance) {
    const DataType dt = b.input_dtype(0);
    TRT_CHECK(dt == DataType::kUndefined || dt == DataType::kFloat32 || dt == DataType::kFloat16 ||
                  dt == DataType::kBFloat16,
              ErrorCode::kNotSupported, "{}: {} input on the GPU", b.node.describe(),
              dtype_name(dt));
    // Kept on the host until the first run (factories make no CUDA calls: the builder's
    // coverage check constructs them on machines without a GPU).
    if (const Tensor* s = b.constant_input(1)) scale_host_ = *s;
    if (const Tensor* t = b.constant_input(2)) bias_host_ = *t;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    require_float(node, x.dtype, "input X");
    TRT_CHECK_ARG(x.shape.size() >= 3, "{}: input X {} must have rank >= 3 (N, C, spatial...)",
                  node.describe(), shape_str(x.shape));
    k::GroupNormArgs a;
    a.n = x.shape[0];
    a.c = x.shape[1];
    a.inner = a.n * a.c > 0 ? x.numel() / (a.n * a.c) : 0;
    a.groups = instance_ ? a.c : node.attr_int("num_groups", 0);
    TRT_CHECK_ARG(a.groups >= 1 && a.c % a.groups == 0,
                  "{}: num_groups {} must divide the {} channels", node.describe(), a.groups, a.c);
    if (!scale_ && scale_host_.defined()) {
      scale_ = upload_floats(scale_host_, true);
      if (ctx.weight_bytes) *ctx.weight_bytes += static_cast<uint64_t>(scale_host_.numel()) * 4;
    }
    if (!bias_ && bias_host_.defined()) {
      bias_ = upload_floats(bias_host_, true);
      if (ctx.weight_bytes) *ctx.weight_bytes += static_cast<uint64_t>(bias_host_.numel()) * 4;
    }
    std::shared_ptr<void> scale = scale_, bias = bias_;
    if (!scale) scale = upload_floats(ctx.host(*in.at(1)), false);
    if (!bias) bias = upload_floats(ctx.host(*in.at(2)), false);
    const int64_t sn = in.at(1)->numel(), bn = in.at(2)->numel();
    TRT_CHECK_ARG((sn == a.c || (!instance_ && sn == a.groups)) && bn == sn,
                  "{}: scale and bias have {} and {} elements; expected {} (channels){}",
                  node.describe(), sn, bn, a.c,
                  instance_ ? "" : fmt::format(" or {} (groups)", a.groups));
    a.per_channel = sn == a.c;
    a.scale = static_cast<const float*>(scale.get());
    a.bias = static_cast<const float*>(bias.get());
    a.eps = node.attr_float("epsilon", 1e-5f);
    a.dt = x.dtype;
    a.x = ctx.dev(x);
    a.y = ctx.make(*out.at(0), x.dtype, x.shape);
    std::shared_ptr<void> stats = ctx.scratch(k::group_norm_scratch_bytes(a));
    ctx.check(k::group_norm(a, stats.get(), ctx.stream),
              instance_ ? "InstanceNormalization" : "GroupNormalization");
  }

 private:
  bool instance_;
  Tensor scale_host_, bias_host_;
  std::shared_ptr<void> scale_, bias_;
};

}  // namespace

void register_norm_ops(OpTable& t) {
  t["InstanceNormalization"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<GroupNormOp>(b, true);
  };
  t["GroupNormalization"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<GroupNormOp>(b, false);
  };
}

}  // namespace trtutils::cuda
