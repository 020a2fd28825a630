// GPU ops of the nn family besides convolutions (ops_conv.cpp) and pools (ops_pool.cpp):
// Softmax / LogSoftmax / Hardmax, LayerNormalization (and its quantizing fusion) and the
// reductions.
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

// ---- softmax / layer norm / reduce ------------------------------------------------------------
// Softmax, LogSoftmax and (hard = true) Hardmax: one axis rule (opset < 13 coerces to 2-D).
class SoftmaxOp : public GpuOp {
 public:
  explicit SoftmaxOp(k::Soft kind, bool hard = false) : kind_(kind), hard_(hard) {}
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
    ctx.check(hard_ ? k::hardmax(x.dtype, px, py, outer, n, inner, ctx.stream)
                    : k::softmax(x.dtype, kind_, px, py, outer, n, inner, ctx.stream),
              node.op_type.c_str());
  }

 private:
  k::Soft kind_;
  bool hard_;
};

// A layer norm's Scale and B (optional) on CUDA: X's dtype and the normalised shape's d values.
void check_norm_params(const ir::Node& node, const Value& x, const Value& scale, const Value* bias,
                       int64_t d) {
  for (const Value* p : {&scale, bias}) {
    if (!p) continue;
    TRT_CHECK(p->dtype == x.dtype && p->numel() == d, ErrorCode::kNotSupported,
              "{}: Scale/B {} {} must be {} with the normalised shape's {} elements on CUDA",
              node.describe(), dtype_name(p->dtype), shape_str(p->shape), dtype_name(x.dtype), d);
  }
}

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
    check_norm_params(node, x, scale, bias, d);
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

// com.trtutils.cuda::LayerNormQuantize (fusion/layernorm_quantize.cpp: LayerNormalization over the
// last axis [-> Transpose(1, 0, 2)] -> QuantizeLinear per tensor): inputs X, Scale, B ("" =
// none), y_scale, y_zero_point; attributes epsilon, swap01 (1: the Transpose; X of rank 3). Y
// holds the quantized bytes of the LayerNormalization's output (its dtype rounding included).
class LayerNormQuantizeOp : public GpuOp {
 public:
  explicit LayerNormQuantizeOp(const ir::Node& node)
      : eps_(node.attr_float("epsilon", 1e-5f)), swap01_(node.attr_int("swap01", 0) != 0) {}
  std::string kernel() const override {
    return swap01_ ? "CUDA kernel (LayerNormalization + Transpose + QuantizeLinear)"
                   : "CUDA kernel (LayerNormalization + QuantizeLinear)";
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& scale = *in.at(1);
    Value* bias = in.size() > 2 ? in[2] : nullptr;
    Value& ys = *in.at(3);
    Value& zp = *in.at(4);
    require_float(node, x.dtype, "input X");
    TRT_CHECK_ARG(!x.shape.empty() && (!swap01_ || x.shape.size() == 3),
                  "{}: X {} does not fit the fused layer norm", node.describe(),
                  shape_str(x.shape));
    const int64_t d = x.shape.back();
    const int64_t rows = d > 0 ? x.numel() / d : 0;
    check_norm_params(node, x, scale, bias, d);
    k::LnQuant q;
    q.y_t = zp.dtype;
    TRT_CHECK(q.y_t == DataType::kInt8 || q.y_t == DataType::kUInt8 ||
                  q.y_t == DataType::kFloat8E4M3FN || q.y_t == DataType::kFloat8E5M2,
              ErrorCode::kNotSupported, "{}: quantized dtype {} is not supported", node.describe(),
              dtype_name(q.y_t));
    q.y_scale = static_cast<float>(ctx.host(ys).at_double(0));
    q.y_zp = static_cast<float>(ctx.host(zp).at_double(0));
    Shape ysh = x.shape;
    if (swap01_) {
      q.grid0 = x.shape[0];
      q.grid1 = x.shape[1];
      std::swap(ysh[0], ysh[1]);
    }
    void* py = ctx.make(*out.at(0), q.y_t, ysh);
    ctx.check(
        k::layer_norm_quantize(x.dtype, ctx.dev(x), ctx.dev(scale), bias ? ctx.dev(*bias) : nullptr,
                               py, rows, d, eps_, q, ctx.stream),
        "LayerNormalization + QuantizeLinear");
  }

 private:
  float eps_;
  bool swap01_;
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
  t["Softmax"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<SoftmaxOp>(k::Soft::kSoftmax);
  };
  t["LogSoftmax"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<SoftmaxOp>(k::Soft::kLogSoftmax);
  };
  t["Hardmax"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<SoftmaxOp>(k::Soft::kSoftmax, true);
  };
  t[std::string(kGpuDomain) + "::LayerNormQuantize"] =
      [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<LayerNormQuantizeOp>(b.node);
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
