// GPU ops of the pooling family: MaxPool / AveragePool, GlobalAveragePool / GlobalMaxPool and
// com.trtutils.cuda::DequantizeGlobalPool.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/misc_kernels.h"
#include "ops/nn_geometry.h"
#include "ops/op_registry.h"
#include "ops/quant_params.h"
#include "trtutils/logging.h"

namespace trtutils::cuda {

namespace {

k::PoolDesc pool_desc(const ir::Node& node, const Shape& x, Shape& out_shape) {
  TRT_CHECK_ARG(x.size() >= 3, "{}: input X {} must have rank >= 3 (N, C, spatial...)",
                node.describe(), shape_str(x));
  const size_t nsp = x.size() - 2;
  TRT_CHECK(nsp <= 3, ErrorCode::kNotSupported, "{}: {}-D pooling is not supported",
            node.describe(), nsp);
  const ops::WindowSpec ws = ops::read_window_spec(node, nsp, nullptr);
  k::PoolDesc p;
  p.planes = x[0] * x[1];
  out_shape = {x[0], x[1]};
  const size_t o = 3 - nsp;
  for (size_t i = 0; i < nsp; ++i) {
    const ops::AxisGeometry g = ops::conv_axis(ws, i, x[2 + i], node);
    p.in[o + i] = x[2 + i];
    p.out[o + i] = g.out;
    p.kernel[o + i] = ws.kernel[i];
    p.stride[o + i] = ws.strides[i];
    p.dilation[o + i] = ws.dilations[i];
    p.pad_begin[o + i] = g.pad_begin;
    p.pad_end[o + i] = g.pad_end;
    out_shape.push_back(g.out);
  }
  return p;
}

class PoolOp : public GpuOp {
 public:
  explicit PoolOp(bool is_max) : is_max_(is_max) {}
  std::string kernel() const override { return nhwc_ ? "CUDA kernel NHWC" : "CUDA kernel"; }
  void want_layouts(const RunContext&, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    if (in.at(0) && in[0]->shape.size() == 4) want[0] = Layout::kAny;  // NHWC kernel too
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const bool bytes = x.dtype == DataType::kInt8 || x.dtype == DataType::kUInt8 ||
                       x.dtype == DataType::kFloat8E4M3FN || x.dtype == DataType::kFloat8E5M2;
    if (!(is_max_ && bytes)) require_float(node, x.dtype, "input X");
    Shape ys;
    k::PoolDesc p = pool_desc(node, x.shape, ys);
    require_indexable(node, shape_numel(ys));
    nhwc_ = x.nhwc;
    if (x.nhwc) {
      p.planes = x.shape[0];
      p.channels = x.shape[1];
    }
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, ys);
    out[0]->nhwc = x.nhwc;
    if (is_max_) {
      ctx.check(k::max_pool(x.dtype, px, py, p, ctx.stream), "MaxPool");
    } else {
      ctx.check(
          k::avg_pool(x.dtype, px, py, p, node.attr_int("count_include_pad", 0) != 0, ctx.stream),
          "AveragePool");
    }
  }

 private:
  bool is_max_;
  bool nhwc_ = false;
};

class GlobalPoolOp : public GpuOp {
 public:
  explicit GlobalPoolOp(bool is_max) : is_max_(is_max) {}
  std::string kernel() const override { return nhwc_ ? "CUDA kernel NHWC" : "CUDA kernel"; }
  void want_layouts(const RunContext&, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    if (in.at(0) && in[0]->shape.size() == 4) want[0] = Layout::kAny;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    require_float(node, x.dtype, "input X");
    int64_t planes = 0, size = 0;
    const Shape ys = pooled_shape(node, x, planes, size);
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, ys);  // [N, C, 1, 1]: the same in both layouts
    nhwc_ = x.nhwc;
    if (x.nhwc) {  // [N, HW, C]: reduce the middle axis
      const int64_t c = x.shape[1];
      ctx.check(k::reduce(x.dtype, is_max_ ? k::Reduce::kMax : k::Reduce::kMean, px, py, x.shape[0],
                          size, c, ctx.stream),
                node.op_type.c_str());
      return;
    }
    ctx.check(k::global_pool(x.dtype, px, py, planes, size, is_max_, ctx.stream),
              node.op_type.c_str());
  }

 protected:
  // Y's shape [N, C, 1, ...] (the same in both layouts), and X as `planes` = N * C of `size`
  // values each.
  static Shape pooled_shape(const ir::Node& node, const Value& x, int64_t& planes, int64_t& size) {
    TRT_CHECK_ARG(x.shape.size() >= 3, "{}: input X {} must have rank >= 3", node.describe(),
                  shape_str(x.shape));
    Shape ys(x.shape.size(), 1);
    ys[0] = x.shape[0];
    ys[1] = x.shape[1];
    planes = x.shape[0] * x.shape[1];
    size = planes > 0 ? x.numel() / planes : 0;
    return ys;
  }

  bool is_max_;
  bool nhwc_ = false;
};

// com.trtutils.cuda::DequantizeGlobalPool (fusion/dequantize_global_pool.cpp: DequantizeLinear per
// tensor -> GlobalAveragePool / GlobalMaxPool): inputs X (int8 / uint8 / float8), x_scale (float32
// scalar), [x_zero_point]; attribute is_max. Y float32 [N, C, 1, ...], the pool of the dequantized
// values.
class DequantizeGlobalPoolOp : public GlobalPoolOp {
 public:
  explicit DequantizeGlobalPoolOp(const ir::Node& node)
      : GlobalPoolOp(node.attr_int("is_max", 0) != 0) {}
  std::string kernel() const override {
    return std::string(is_max_ ? "CUDA kernel (DequantizeLinear + GlobalMaxPool)"
                               : "CUDA kernel (DequantizeLinear + GlobalAveragePool)") +
           (nhwc_ ? " NHWC" : "");
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& scale = *in.at(1);
    Value* zp = in.size() > 2 ? in[2] : nullptr;
    TRT_CHECK_ARG(scale.numel() == 1 && (!zp || zp->numel() == 1),
                  "{}: x_scale and x_zero_point must be scalars", node.describe());
    int64_t planes = 0, size = 0;
    const Shape ys = pooled_shape(node, x, planes, size);
    const float s = static_cast<float>(ctx.host(scale).at_double(0));
    const float z = zp ? static_cast<float>(ctx.host(*zp).at_double(0)) : 0.0f;
    const void* px = ctx.dev(x);
    auto* py = static_cast<float*>(ctx.make(*out.at(0), DataType::kFloat32, ys));
    nhwc_ = x.nhwc;
    // NHWC: [N, HW, C], the middle axis; NCHW: [N * C, HW].
    const int64_t outer = x.nhwc ? x.shape[0] : planes, inner = x.nhwc ? x.shape[1] : 1;
    const cudaError_t st =
        k::global_pool_dequant(x.dtype, px, py, outer, size, inner, s, z, is_max_, ctx.stream);
    TRT_CHECK(st != cudaErrorNotSupported, ErrorCode::kNotSupported,
              "{}: X of dtype {} is not supported (int8, uint8, float8)", node.describe(),
              dtype_name(x.dtype));
    ctx.check(st, "DequantizeLinear + global pool");
  }
};

}  // namespace

void register_pool_ops(OpTable& t) {
  t["MaxPool"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    TRT_CHECK(b.node.outputs.size() < 2 || b.node.outputs[1].empty(), ErrorCode::kNotSupported,
              "{}: the Indices output of MaxPool is not supported on CUDA", b.node.describe());
    return std::make_unique<PoolOp>(true);
  };
  t["AveragePool"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<PoolOp>(false);
  };
  t[std::string(kGpuDomain) + "::DequantizeGlobalPool"] =
      [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<DequantizeGlobalPoolOp>(b.node);
  };
  t["GlobalAveragePool"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<GlobalPoolOp>(false);
  };
  t["GlobalMaxPool"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<GlobalPoolOp>(true);
  };
}

}  // namespace trtutils::cuda
