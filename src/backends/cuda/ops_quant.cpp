// QuantizeLinear / DequantizeLinear on CUDA, and the registration of the quantized islands
// com.trtutils::QConv / QGemm / QMatMul, whose op and tactics are in qop/ (qop/qop.h).
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/qop/qop.h"
#include "ops/quant_params.h"

namespace trtutils::cuda {

namespace {

using qop::floats_of;
using qop::upload_floats;

// Device float32 copies of per-tensor / per-axis scale and zero point inputs, re-made when the
// inputs are not constants.
struct QuantParams {
  std::shared_ptr<void> scale, zero_point;
  bool cached = false;
};

void load_params(RunContext& ctx, Value& scale, Value* zp, QuantParams& p) {
  const bool constant = scale.constant && (!zp || zp->constant);
  if (p.cached && constant) return;
  p.scale = upload_floats(floats_of(ctx.host(scale)));
  p.zero_point = zp ? upload_floats(floats_of(ctx.host(*zp))) : nullptr;
  p.cached = constant;
}

k::QuantDesc quant_desc(const ir::Node& node, int64_t opset, const Value& x, const Value& scale,
                        const Value* zp, const QuantParams& p) {
  const Shape* zs = zp ? &zp->shape : nullptr;
  const ops::QuantLayout l = ops::quant_layout(node, opset, x.shape, scale.shape, zs);
  TRT_CHECK(l.kind != ops::QuantLayout::Kind::kBlocked, ErrorCode::kNotSupported,
            "{}: blocked quantization is not supported on CUDA", node.describe());
  k::QuantDesc q;
  q.n = x.numel();
  q.per_axis = l.kind == ops::QuantLayout::Kind::kPerAxis;
  q.axis_len = l.axis_len;
  q.inner = l.inner;
  q.scale = static_cast<const float*>(p.scale.get());
  q.zero_point = static_cast<const float*>(p.zero_point.get());
  return q;
}

// Per-tensor scales make QuantizeLinear / DequantizeLinear layout-free: a channels-last input
// stays channels-last (no NCHW copy around the stem's quantization, for one).
bool per_tensor_scale(const std::vector<Value*>& in) {
  return in.size() > 1 && in[1] && in[1]->numel() == 1 &&
         (in.size() < 3 || !in[2] || in[2]->numel() == 1);
}

class QuantizeOp : public GpuOp {
 public:
  std::string kernel() const override { return nhwc_ ? "CUDA kernel NHWC" : "CUDA kernel"; }
  void want_layouts(const RunContext&, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    if (per_tensor_scale(in)) want[0] = Layout::kAny;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& scale = *in.at(1);
    Value* zp = in.size() > 2 ? in[2] : nullptr;
    require_float(node, x.dtype, "input x");
    const DataType yt =
        ops::quantize_output_dtype(node, ctx.opset, zp ? zp->dtype : DataType::kUndefined);
    load_params(ctx, scale, zp, params_);
    const k::QuantDesc q = quant_desc(node, ctx.opset, x, scale, zp, params_);
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), yt, x.shape);
    nhwc_ = x.nhwc;  // per-tensor only (want_layouts)
    out[0]->nhwc = x.nhwc;
    ctx.check(k::quantize(x.dtype, yt, px, py, q, node.attr_int("saturate", 1) != 0, ctx.stream),
              "QuantizeLinear");
  }

 private:
  QuantParams params_;
  bool nhwc_ = false;
};

class DequantizeOp : public GpuOp {
 public:
  std::string kernel() const override { return nhwc_ ? "CUDA kernel NHWC" : "CUDA kernel"; }
  void want_layouts(const RunContext&, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    if (per_tensor_scale(in)) want[0] = Layout::kAny;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& scale = *in.at(1);
    Value* zp = in.size() > 2 ? in[2] : nullptr;
    if (zp)
      TRT_CHECK_ARG(zp->dtype == x.dtype,
                    "{}: the zero point's dtype {} differs from the input's {}", node.describe(),
                    dtype_name(zp->dtype), dtype_name(x.dtype));
    const DataType yt = ops::dequantize_output_dtype(node, ctx.opset, scale.dtype);
    load_params(ctx, scale, zp, params_);
    const k::QuantDesc q = quant_desc(node, ctx.opset, x, scale, zp, params_);
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), yt, x.shape);
    nhwc_ = x.nhwc;
    out[0]->nhwc = x.nhwc;
    ctx.check(k::dequantize(x.dtype, yt, px, py, q, ctx.stream), "DequantizeLinear");
  }

 private:
  QuantParams params_;
  bool nhwc_ = false;
};

}  // namespace

void register_quant_ops(OpTable& t) {
  t["QuantizeLinear"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<QuantizeOp>();
  };
  t["DequantizeLinear"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<DequantizeOp>();
  };
  t["com.trtutils::QConv"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<qop::QOp>(qop::Kind::kConv);
  };
  t["com.trtutils::QGemm"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<qop::QOp>(qop::Kind::kGemm);
  };
  t["com.trtutils::QMatMul"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<qop::QOp>(qop::Kind::kMatMul);
  };
}

}  // namespace trtutils::cuda
