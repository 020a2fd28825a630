// GPU ops of the nn family: Conv and com.trtutils::FusedConv (cuDNN, then one epilogue kernel
// for bias + residual + activation), the pools, Softmax/LogSoftmax, LayerNormalization and the
// reductions.
#include <algorithm>

#include "backends/cuda/cuda_ops.h"
#include "ops/nn_geometry.h"
#include "ops/op_registry.h"

namespace trtutils::cuda {

namespace {

// ---- convolution ------------------------------------------------------------------------------
struct PostOps {
  k::Act act = k::Act::kNone;
  float alpha = 0, beta = 0;
};

PostOps read_post_ops(const ir::Node& node) {
  const ops::FusedActivationAttr a = ops::read_fused_activation(node);
  return {to_kernel_act(a.kind), a.alpha, a.beta};
}

class ConvOp : public GpuOp {
 public:
  explicit ConvOp(PostOps post) : post_(post) {}
  std::string kernel() const override { return "cuDNN + epilogue"; }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& w = *in.at(1);
    Value* b = in.size() > 2 ? in[2] : nullptr;
    Value* r = in.size() > 3 ? in[3] : nullptr;
    const DataType dt = x.dtype;
    require_float(node, dt, "input X");
    TRT_CHECK_ARG(w.dtype == dt && (!b || b->dtype == dt),
                  "{}: X, W and B must have the same dtype (got {}, {}, {})", node.describe(),
                  dtype_name(dt), dtype_name(w.dtype),
                  b ? dtype_name(b->dtype) : std::string_view("none"));
    const ConvGeometry g = conv_geometry(node, x.shape, w.shape);
    if (b)
      TRT_CHECK_ARG(b->numel() == g.out_channels && b->shape.size() == 1,
                    "{}: bias B {} must be 1-D with {} elements", node.describe(),
                    shape_str(b->shape), g.out_channels);
    const Shape ys = conv_output_shape(g);
    if (r)
      TRT_CHECK_ARG(r->dtype == dt && r->shape == ys,
                    "{}: residual {} {} must have the output's dtype and shape {} {}",
                    node.describe(), dtype_name(r->dtype), shape_str(r->shape), dtype_name(dt),
                    shape_str(ys));
    const void* px = ctx.dev(x);
    const void* pw = ctx.dev(w);
    void* py = ctx.make(*out.at(0), dt, ys);
    const int64_t n = shape_numel(ys);
    if (n == 0) return;
    conv_.run(ctx, g, dt, px, pw, py);
    if (b || r || post_.act != k::Act::kNone) {
      const int64_t inner = n / (g.batch * g.out_channels);
      ctx.check(k::bias_act(dt, py, b ? ctx.dev(*b) : nullptr, r ? ctx.dev(*r) : nullptr, n,
                            g.out_channels, inner, post_.act, post_.alpha, post_.beta, ctx.stream),
                "conv epilogue");
    }
  }

 private:
  PostOps post_;
  CudnnConv conv_;
};

// ---- pools
// ---------------------------------------------------------------------------------------
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
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const bool int8 = x.dtype == DataType::kInt8 || x.dtype == DataType::kUInt8;
    if (!(is_max_ && int8)) require_float(node, x.dtype, "input X");
    Shape ys;
    const k::PoolDesc p = pool_desc(node, x.shape, ys);
    require_indexable(node, shape_numel(ys));
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, ys);
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
};

class GlobalPoolOp : public GpuOp {
 public:
  explicit GlobalPoolOp(bool is_max) : is_max_(is_max) {}
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    require_float(node, x.dtype, "input X");
    TRT_CHECK_ARG(x.shape.size() >= 3, "{}: input X {} must have rank >= 3", node.describe(),
                  shape_str(x.shape));
    Shape ys(x.shape.size(), 1);
    ys[0] = x.shape[0];
    ys[1] = x.shape[1];
    const int64_t planes = x.shape[0] * x.shape[1];
    const int64_t size = planes > 0 ? x.numel() / planes : 0;
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, ys);
    ctx.check(k::global_pool(x.dtype, px, py, planes, size, is_max_, ctx.stream),
              node.op_type.c_str());
  }

 private:
  bool is_max_;
};

// ---- softmax / layer norm / reduce ------------------------------------------------------------
class SoftmaxOp : public GpuOp {
 public:
  explicit SoftmaxOp(k::Soft kind) : kind_(kind) {}
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    require_float(node, x.dtype, "input 0");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const bool coerce = ctx.opset < 13;
    const int64_t axis = ops::normalize_axis(node.attr_int("axis", coerce ? 1 : -1), rank, node);
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) {
        outer *= x.shape[d];
      } else if (d == axis || coerce) {
        n *= x.shape[d];
      } else {
        inner *= x.shape[d];
      }
    }
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, x.shape);
    ctx.check(k::softmax(x.dtype, kind_, px, py, outer, n, inner, ctx.stream),
              node.op_type.c_str());
  }

 private:
  k::Soft kind_;
};

class LayerNormOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& scale = *in.at(1);
    Value* bias = in.size() > 2 ? in[2] : nullptr;
    require_float(node, x.dtype, "input X");
    const int64_t r = static_cast<int64_t>(x.shape.size());
    TRT_CHECK_ARG(r >= 1, "{}: input X must have rank >= 1", node.describe());
    const int64_t axis = ops::normalize_axis(node.attr_int("axis", -1), r, node);
    const float eps = node.attr_float("epsilon", 1e-5f);
    const Shape norm(x.shape.begin() + axis, x.shape.end());
    const int64_t d = shape_numel(norm);
    const int64_t rows = d > 0 ? x.numel() / d : 0;
    for (const Value* p : std::vector<const Value*>{&scale, bias}) {
      if (!p) continue;
      TRT_CHECK(p->dtype == x.dtype && p->numel() == d, ErrorCode::kNotSupported,
                "{}: Scale/B {} {} must be {} with the normalised shape's {} elements on CUDA",
                node.describe(), dtype_name(p->dtype), shape_str(p->shape), dtype_name(x.dtype), d);
    }
    Shape stat = x.shape;
    for (int64_t i = axis; i < r; ++i) stat[i] = 1;
    float* mean = nullptr;
    float* inv = nullptr;
    const bool want_mean = out.size() > 1 && out[1], want_inv = out.size() > 2 && out[2];
    if (want_mean || want_inv)
      TRT_CHECK(node.attr_int("stash_type", 1) == 1, ErrorCode::kNotSupported,
                "{}: stash_type {} is not supported on CUDA (float32 only)", node.describe(),
                node.attr_int("stash_type", 1));
    if (want_mean) mean = static_cast<float*>(ctx.make(*out[1], DataType::kFloat32, stat));
    if (want_inv) inv = static_cast<float*>(ctx.make(*out[2], DataType::kFloat32, stat));
    const void* px = ctx.dev(x);
    const void* ps = ctx.dev(scale);
    const void* pb = bias ? ctx.dev(*bias) : nullptr;
    void* py = ctx.make(*out.at(0), x.dtype, x.shape);
    ctx.check(k::layer_norm(x.dtype, px, ps, pb, py, rows, d, eps, mean, inv, ctx.stream),
              "LayerNormalization");
  }
};

class ReduceOp : public GpuOp {
 public:
  explicit ReduceOp(k::Reduce kind) : kind_(kind) {}
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    std::vector<int64_t> axes;
    if (node.has_attr("axes")) {
      axes = node.attr_ints("axes");
    } else if (in.size() > 1 && in[1]) {
      axes = ctx.host(*in[1]).to_int64_vector();
    }
    const bool keepdims = node.attr_int("keepdims", 1) != 0;
    const bool noop = node.attr_int("noop_with_empty_axes", 0) != 0;
    std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty() && !noop);
    for (int64_t a : axes) {
      const int64_t d = ops::normalize_axis(a, rank, node);
      TRT_CHECK_ARG(!reduced[d], "{}: axis {} is repeated in axes", node.describe(), a);
      reduced[d] = true;
    }
    Shape ys;
    int64_t outer = 1, r = 1, inner = 1;
    int phase = 0;  // 0: before the reduced block, 1: inside, 2: after
    bool contiguous = true;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t n = x.shape[d];
      if (reduced[d]) {
        if (keepdims) ys.push_back(1);
        if (n == 1) continue;
        if (phase == 2) contiguous = false;
        phase = 1;
        r *= n;
      } else {
        ys.push_back(n);
        if (n == 1) continue;
        if (phase == 1) phase = 2;
        (phase == 0 ? outer : inner) *= n;
      }
    }
    TRT_CHECK(contiguous, ErrorCode::kNotSupported,
              "{}: reducing non-adjacent axes {} of {} is not supported on CUDA", node.describe(),
              shape_str(axes), shape_str(x.shape));
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, ys);
    ctx.check(k::reduce(x.dtype, kind_, px, py, outer, r, inner, ctx.stream), node.op_type.c_str());
  }

 private:
  k::Reduce kind_;
};

}  // namespace

void register_nn_ops(OpTable& t) {
  t["Conv"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<ConvOp>(PostOps{});
  };
  t["com.trtutils::FusedConv"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<ConvOp>(read_post_ops(b.node));
  };
  t["MaxPool"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    TRT_CHECK(b.node.outputs.size() < 2 || b.node.outputs[1].empty(), ErrorCode::kNotSupported,
              "{}: the Indices output of MaxPool is not supported on CUDA", b.node.describe());
    return std::make_unique<PoolOp>(true);
  };
  t["AveragePool"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<PoolOp>(false);
  };
  t["GlobalAveragePool"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<GlobalPoolOp>(false);
  };
  t["GlobalMaxPool"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<GlobalPoolOp>(true);
  };
  t["Softmax"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<SoftmaxOp>(k::Soft::kSoftmax);
  };
  t["LogSoftmax"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<SoftmaxOp>(k::Soft::kLogSoftmax);
  };
  t["LayerNormalization"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<LayerNormOp>();
  };
  const std::pair<const char*, k::Reduce> reductions[] = {
      {"ReduceSum", k::Reduce::kSum},
      {"ReduceMean", k::Reduce::kMean},
      {"ReduceMax", k::Reduce::kMax},
      {"ReduceMin", k::Reduce::kMin},
      {"ReduceProd", k::Reduce::kProd},
      {"ReduceL1", k::Reduce::kL1},
      {"ReduceL2", k::Reduce::kL2},
      {"ReduceSumSquare", k::Reduce::kSumSquare},
      {"ReduceLogSumExp", k::Reduce::kLogSumExp}};
  for (const auto& [name, kind] : reductions)
    t[name] = [kind](const OpBuild&) -> std::unique_ptr<GpuOp> {
      return std::make_unique<ReduceOp>(kind);
    };
}

}  // namespace trtutils::cuda
