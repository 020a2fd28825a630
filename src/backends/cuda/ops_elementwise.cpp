// GPU ops of the elementwise family: unary math and activations, Clip, broadcasting binary ops
// (arithmetic, comparisons, logic), variadic Sum/Max/Min/Mean, Where, Cast, Identity/Dropout
// and BatchNormalization (inference, as a per-channel affine).
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cuda/cuda_ops.h"
#include "ops/op_registry.h"

namespace trtutils::cuda {

namespace {

using k::Binary;
using k::Unary;

// Ops computing each output element from the same element of input 0: they take X in either
// layout (the output keeps it); other inputs (scalars, per-channel parameters) stay NCHW.
class SameLayoutOp : public GpuOp {
 public:
  void want_layouts(const RunContext&, const std::vector<Value*>&,
                    std::vector<Layout>& want) const override {
    if (!want.empty()) want[0] = Layout::kAny;
  }
};

// ---- unary ------------------------------------------------------------------------------------
struct UnaryParams {
  Unary op;
  float alpha = 0, beta = 0;
};

class UnaryOp : public SameLayoutOp {
 public:
  explicit UnaryOp(UnaryParams p) : p_(p) {}
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    Value& x = *in.at(0);
    const bool int_ok = p_.op == Unary::kRelu || p_.op == Unary::kAbs || p_.op == Unary::kNeg ||
                        p_.op == Unary::kSign || p_.op == Unary::kIdentity;
    const bool int_dt =
        x.dtype == DataType::kInt8 || x.dtype == DataType::kInt32 || x.dtype == DataType::kInt64;
    if (!(int_ok && int_dt)) require_float(*ctx.node, x.dtype, "input 0");
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, x.shape);
    out[0]->nhwc = x.nhwc;
    ctx.check(k::unary(p_.op, x.dtype, px, py, x.numel(), p_.alpha, p_.beta, ctx.stream),
              ctx.node->op_type.c_str());
  }

 private:
  UnaryParams p_;
};

void add_unary(OpTable& t, const char* name, Unary op,
               std::function<UnaryParams(const ir::Node&)> params = nullptr) {
  t[name] = [op, params](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    UnaryParams p{op};
    if (params) p = params(b.node);
    return std::make_unique<UnaryOp>(p);
  };
}

class ClipOp : public SameLayoutOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const bool is_int =
        x.dtype == DataType::kInt8 || x.dtype == DataType::kInt32 || x.dtype == DataType::kInt64;
    if (!is_int) require_float(node, x.dtype, "input 0");
    double lo = -std::numeric_limits<double>::infinity();
    double hi = std::numeric_limits<double>::infinity();
    const bool attr_form = node.has_attr("min") || node.has_attr("max") || ctx.opset < 11;
    if (attr_form) {
      if (node.has_attr("min")) lo = node.attr_float("min", 0);
      if (node.has_attr("max")) hi = node.attr_float("max", 0);
    } else {
      for (size_t i = 1; i <= 2; ++i) {
        if (i >= in.size() || !in[i]) continue;
        const Tensor& b = ctx.host(*in[i]);
        TRT_CHECK_ARG(b.numel() == 1 && b.dtype() == x.dtype,
                      "{}: input {} (min/max) must be one {} value, got {} {}", node.describe(), i,
                      dtype_name(x.dtype), dtype_name(b.dtype()), shape_str(b.shape()));
        (i == 1 ? lo : hi) = b.at_double(0);
      }
    }
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, x.shape);
    out[0]->nhwc = x.nhwc;
    // Float bounds in float (infinities kept); integer bounds clamp to what float holds.
    const float flo = static_cast<float>(std::max(lo, -3.4e38));
    const float fhi = static_cast<float>(std::min(hi, 3.4e38));
    ctx.check(k::unary(Unary::kClip, x.dtype, px, py, x.numel(),
                       std::isinf(lo) && !is_int ? -INFINITY : flo,
                       std::isinf(hi) && !is_int ? INFINITY : fhi, ctx.stream),
              "Clip");
  }
};

// ---- binary -----------------------------------------------------------------------------------
bool binary_dtype_ok(Binary op, DataType dt) {
  if (op == Binary::kAnd || op == Binary::kOr || op == Binary::kXor) return dt == DataType::kBool;
  if (dt == DataType::kBool) return op == Binary::kEqual;
  return dt == DataType::kFloat32 || dt == DataType::kFloat16 || dt == DataType::kBFloat16 ||
         dt == DataType::kInt32 || dt == DataType::kInt64 || dt == DataType::kInt8 ||
         dt == DataType::kUInt8;
}

// The broadcast of a op b (checked: equal dtypes, one the op supports) into `shape`.
// Channels-last when an operand is NHWC (binary_layouts made every other operand NHWC or
// layout-free): the broadcast runs over the NHWC-ordered shapes and the output is NHWC (`nhwc`).
k::Broadcast binary_broadcast(const ir::Node& node, Binary op, const Value& a, const Value& b,
                              Shape& shape, bool& nhwc) {
  TRT_CHECK_ARG(a.dtype == b.dtype, "{}: inputs have different dtypes ({} and {}); insert a Cast",
                node.describe(), dtype_name(a.dtype), dtype_name(b.dtype));
  TRT_CHECK(binary_dtype_ok(op, a.dtype), ErrorCode::kNotSupported,
            "{}: dtype {} is not supported by the CUDA {} kernel", node.describe(),
            dtype_name(a.dtype), node.op_type);
  shape = ops::broadcast_shapes(a.shape, b.shape, node);
  require_indexable(node, shape_numel(shape));
  nhwc = a.nhwc || b.nhwc;
  if (!nhwc) return make_broadcast(node, shape, {&a.shape, &b.shape});
  TRT_CHECK(
      shape.size() == 4 && (a.nhwc || layout_free(a.shape)) && (b.nhwc || layout_free(b.shape)),
      ErrorCode::kInternal, "{}: operand layouts do not match", node.describe());
  const Shape ps = nhwc_order(shape), pa = nhwc_order(a.shape), pb = nhwc_order(b.shape);
  return make_broadcast(node, ps, {&pa, &pb});
}

// y = a op b into out (allocated here), broadcasting (binary_broadcast).
void run_binary(RunContext& ctx, Binary op, Value& a, Value& b, Value& out) {
  const ir::Node& node = *ctx.node;
  Shape shape;
  bool nhwc = false;
  const k::Broadcast bc = binary_broadcast(node, op, a, b, shape, nhwc);
  const void* pa = ctx.dev(a);
  const void* pb = ctx.dev(b);
  const DataType ot = k::binary_is_comparison(op) ? DataType::kBool : a.dtype;
  // The output may reuse an input's buffer only when it is a fresh value (never here: outputs
  // are always new allocations).
  void* py = ctx.make(out, ot, shape);
  out.nhwc = nhwc;
  ctx.check(k::binary(op, a.dtype, pa, pb, py, bc, shape_numel(shape), ctx.stream),
            node.op_type.c_str());
}

// Channels-last for a binary op: when an operand is NHWC and every other one is NHWC, layout-free
// (per-channel / scalar broadcasts) or a 4-D value that can be converted; otherwise NCHW.
void binary_layouts(const std::vector<Value*>& in, std::vector<Layout>& want) {
  bool any = false, ok = true;
  for (const Value* v : in) {
    if (!v) continue;
    any = any || v->nhwc;
    ok = ok && (v->nhwc || layout_free(v->shape) || v->shape.size() == 4);
  }
  if (!any || !ok) return;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) want[i] = in[i]->nhwc || layout_free(in[i]->shape) ? Layout::kAny : Layout::kNhwc;
}

class BinaryOp : public GpuOp {
 public:
  explicit BinaryOp(Binary op) : op_(op) {}
  void want_layouts(const RunContext&, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    binary_layouts(in, want);
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    Value& a = *in.at(0);
    Value& b = *in.at(1);
    if (op_ == Binary::kPow && a.dtype != b.dtype) {
      // The exponent may have another dtype: converted to the base's.
      require_float(*ctx.node, a.dtype, "input 0 (base)");
      Value e;
      const void* pb = ctx.dev(b);
      void* pe = ctx.make(e, a.dtype, b.shape);
      e.nhwc = b.nhwc;
      ctx.check(k::cast(b.dtype, a.dtype, pb, pe, b.numel(), true, ctx.stream), "Cast");
      run_binary(ctx, op_, a, e, *out.at(0));
      return;
    }
    run_binary(ctx, op_, a, b, *out.at(0));
  }

 private:
  Binary op_;
};

// com.trtutils.cuda::BinaryQuantize (fusion/binary_quantize.cpp: Add / Sub / Mul / Div ->
// QuantizeLinear per tensor): inputs A, B (float), y_scale, y_zero_point; attribute op. Y holds the
// quantized bytes of the binary op's result (its dtype rounding included), as the two nodes compute
// them.
class BinaryQuantizeOp : public GpuOp {
 public:
  explicit BinaryQuantizeOp(const ir::Node& node) {
    const std::string op = node.attr_string("op", "");
    TRT_CHECK(op == "Add" || op == "Sub" || op == "Mul" || op == "Div", ErrorCode::kNotSupported,
              "{}: op '{}' is not supported (Add, Sub, Mul, Div)", node.describe(), op);
    op_ = op == "Add"   ? Binary::kAdd
          : op == "Sub" ? Binary::kSub
          : op == "Mul" ? Binary::kMul
                        : Binary::kDiv;
    label_ = "CUDA kernel (" + op + " + QuantizeLinear)";
  }
  std::string kernel() const override { return label_; }
  void want_layouts(const RunContext&, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    binary_layouts({in.at(0), in.at(1)}, want);
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& a = *in.at(0);
    Value& b = *in.at(1);
    Value& ys = *in.at(2);
    Value& zp = *in.at(3);
    require_float(node, a.dtype, "input A");
    Shape shape;
    bool nhwc = false;
    const k::Broadcast bc = binary_broadcast(node, op_, a, b, shape, nhwc);
    TRT_CHECK_ARG(ys.numel() == 1 && zp.numel() == 1,
                  "{}: y_scale and y_zero_point must be scalars", node.describe());
    const float scale = static_cast<float>(ctx.host(ys).at_double(0));
    const float z = static_cast<float>(ctx.host(zp).at_double(0));
    const void* pa = ctx.dev(a);
    const void* pb = ctx.dev(b);
    void* py = ctx.make(*out.at(0), zp.dtype, shape);
    out[0]->nhwc = nhwc;
    ctx.check(k::binary_quantize(op_, a.dtype, pa, pb, py, bc, shape_numel(shape), zp.dtype, scale,
                                 z, ctx.stream),
              label_.c_str());
  }

 private:
  Binary op_ = Binary::kMul;
  std::string label_;
};

class PReluOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    Value& x = *in.at(0);
    ctx.dev(*in.at(1));  // a constant slope is uploaded once, before the view below
    Value slope = *in.at(1);
    if (slope.shape.size() == 1 && x.shape.size() >= 3 && slope.shape[0] == x.shape[1] &&
        slope.shape[0] != 1 && slope.shape[0] != x.shape.back()) {
      Shape s(x.shape.size() - 1, 1);
      s[0] = slope.shape[0];
      ctx.alias(slope, *in.at(1), s);
    }
    run_binary(ctx, Binary::kPRelu, x, slope, *out.at(0));
  }
};

class ModOp : public GpuOp {
 public:
  explicit ModOp(bool fmod) : fmod_(fmod) {}
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const bool is_float = dtype_is_float(in.at(0)->dtype);
    TRT_CHECK_ARG(!is_float || fmod_, "{}: Mod on floating-point inputs requires fmod=1",
                  ctx.node->describe());
    run_binary(ctx, fmod_ ? Binary::kFMod : Binary::kMod, *in.at(0), *in.at(1), *out.at(0));
  }

 private:
  bool fmod_;
};

// Sum / Max / Min / Mean over any number of inputs: folded pairwise.
class VariadicOp : public GpuOp {
 public:
  VariadicOp(Binary op, bool mean) : op_(op), mean_(mean) {}
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    TRT_CHECK_ARG(!in.empty() && in[0], "{}: needs at least one input", node.describe());
    Value acc = *in[0];
    for (size_t i = 1; i < in.size(); ++i) {
      TRT_CHECK_ARG(in[i] != nullptr, "{}: input {} is missing", node.describe(), i);
      Value next;
      run_binary(ctx, op_, acc, *in[i], next);
      acc = std::move(next);
    }
    Value& y = *out.at(0);
    if (in.size() == 1 || mean_) {
      require_float(node, acc.dtype, "input 0");
      const void* pa = ctx.dev(acc);
      void* py = ctx.make(y, acc.dtype, acc.shape);
      const float scale = mean_ ? 1.0f / static_cast<float>(in.size()) : 1.0f;
      ctx.check(k::unary(Unary::kScale, acc.dtype, pa, py, acc.numel(), scale, 0.0f, ctx.stream),
                "Scale");
      return;
    }
    y = std::move(acc);
  }

 private:
  Binary op_;
  bool mean_;
};

class WhereOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& c = *in.at(0);
    Value& x = *in.at(1);
    Value& z = *in.at(2);
    TRT_CHECK_ARG(c.dtype == DataType::kBool, "{}: condition must be bool, got {}", node.describe(),
                  dtype_name(c.dtype));
    TRT_CHECK_ARG(x.dtype == z.dtype, "{}: X and Y have different dtypes ({} and {})",
                  node.describe(), dtype_name(x.dtype), dtype_name(z.dtype));
    const int bits = dtype_bits(x.dtype);
    TRT_CHECK(bits >= 8 && bits <= 64, ErrorCode::kNotSupported, "{}: dtype {} is not supported",
              node.describe(), dtype_name(x.dtype));
    Shape shape = ops::broadcast_shapes(c.shape, x.shape, node);
    shape = ops::broadcast_shapes(shape, z.shape, node);
    require_indexable(node, shape_numel(shape));
    const k::Broadcast bc = make_broadcast(node, shape, {&c.shape, &x.shape, &z.shape});
    const void* pc = ctx.dev(c);
    const void* px = ctx.dev(x);
    const void* pz = ctx.dev(z);
    void* py = ctx.make(*out.at(0), x.dtype, shape);
    ctx.check(
        k::where(static_cast<size_t>(bits / 8), pc, px, pz, py, bc, shape_numel(shape), ctx.stream),
        "Where");
  }
};

class CastOp : public SameLayoutOp {
 public:
  CastOp(DataType to, bool saturate) : to_(to), saturate_(saturate) {}
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    Value& x = *in.at(0);
    TRT_CHECK(k::cast_supported(x.dtype), ErrorCode::kNotSupported,
              "{}: casting from {} is not supported on CUDA", ctx.node->describe(),
              dtype_name(x.dtype));
    if (x.dtype == to_) {
      ctx.alias(*out.at(0), x, x.shape);
      out[0]->nhwc = x.nhwc;
      return;
    }
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), to_, x.shape);
    out[0]->nhwc = x.nhwc;
    ctx.check(k::cast(x.dtype, to_, px, py, x.numel(), saturate_, ctx.stream), "Cast");
  }

 private:
  DataType to_;
  bool saturate_;
};

class IdentityOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    ctx.alias(*out.at(0), *in.at(0), in.at(0)->shape);
  }
};

// BatchNormalization (inference), and com.trtutils.cuda::BatchNormAct (fusion/batchnorm_act.cpp):
// the same inputs, then optionally y_scale and y_zero_point (a per-tensor QuantizeLinear), with
// attributes activation ("" | Relu | Clip | LeakyRelu | Sigmoid | HardSwish) and
// activation_params (Clip: lo, hi; LeakyRelu: alpha). One pass over x. With attribute
// concat_inputs = N > 1, x is the concatenation on the channel axis of the first N inputs (a
// Concat absorbed by the fusion), read where they lie; the BN parameters follow them.
class BatchNormOp : public GpuOp {
 public:
  explicit BatchNormOp(const ir::Node& node)
      : data_(static_cast<size_t>(std::max<int64_t>(1, node.attr_int("concat_inputs", 1)))) {
    const std::string act = node.attr_string("activation", "");
    const std::vector<float> prm = node.attr_floats("activation_params");
    auto param = [&](size_t i, float d) { return i < prm.size() ? prm[i] : d; };
    if (act == "Relu") {
      post_.act = k::Act::kRelu;
    } else if (act == "Clip") {
      post_.act = k::Act::kClip;
      post_.alpha = param(0, -INFINITY);
      post_.beta = param(1, INFINITY);
    } else if (act == "LeakyRelu") {
      post_.act = k::Act::kLeakyRelu;
      post_.alpha = param(0, 0.01f);
    } else if (act == "Sigmoid") {
      post_.act = k::Act::kSigmoid;
    } else if (act == "HardSwish") {
      post_.act = k::Act::kHardSwish;
    } else {
      TRT_CHECK(act.empty(), ErrorCode::kNotSupported, "{}: activation '{}' is not supported",
                node.describe(), act);
    }
    post_.quantize = node.domain == kGpuDomain && node.inputs.size() >= data_ + 6;
    if (post_.act != k::Act::kNone || post_.quantize || data_ > 1) {
      label_ = data_ > 1 ? "CUDA kernel (Concat + BatchNormalization"
                         : "CUDA kernel (BatchNormalization";
      if (!act.empty()) label_ += " + " + act;
      label_ += post_.quantize ? " + QuantizeLinear)" : ")";
    }
  }
  std::string kernel() const override { return label_; }
  // One input: its layout. A concatenation of 4-D inputs: channels-last when any of them is (the
  // others converted), as ConcatOp does.
  void want_layouts(const RunContext&, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    bool nhwc = false;
    for (size_t i = 0; i < data_ && i < in.size(); ++i)
      nhwc = nhwc || (in[i] && in[i]->nhwc && in[i]->shape.size() == 4);
    for (size_t i = 0; i < data_ && i < want.size(); ++i)
      want[i] = !nhwc || !in[i] || in[i]->nhwc || layout_free(in[i]->shape) ? Layout::kAny
                                                                            : Layout::kNhwc;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    const Shape xs = data_shape(node, in);
    Value& x = *in.at(0);
    const bool nhwc = concat_nhwc(in);
    const int64_t c = xs[1];
    const int64_t nc = xs[0] * c;
    const int64_t numel = shape_numel(xs);
    const int64_t inner = nhwc ? 1 : (nc > 0 ? numel / nc : 0);
    bool constant = true;
    for (size_t i = data_; i < data_ + 4 && i < in.size(); ++i)
      constant = constant && in[i] && in[i]->constant;
    if (!scale_ || channels_ != c || !constant) {
      std::vector<double> prm[5];
      for (size_t i = 1; i <= 4; ++i) {
        const size_t at = data_ + i - 1;
        TRT_CHECK_ARG(at < in.size() && in[at], "{}: input {} is missing", node.describe(), at);
        const Tensor& t = ctx.host(*in[at]);
        TRT_CHECK(t.numel() == c, ErrorCode::kNotSupported,
                  "{}: parameter {} has shape {}; the CUDA kernel needs one value per channel "
                  "({})",
                  node.describe(), i, shape_str(t.shape()), c);
        for (int64_t j = 0; j < c; ++j) prm[i].push_back(t.at_double(j));
      }
      const double eps = node.attr_float("epsilon", 1e-5f);
      std::vector<float> a(c), b(c);
      for (int64_t j = 0; j < c; ++j) {
        const double s = prm[1][j] / std::sqrt(prm[4][j] + eps);
        a[j] = static_cast<float>(s);
        b[j] = static_cast<float>(prm[2][j] - prm[3][j] * s);
      }
      scale_ = upload_bytes(a.data(), a.size() * 4);
      shift_ = upload_bytes(b.data(), b.size() * 4);
      channels_ = c;
    }
    DataType yt = x.dtype;
    if (post_.quantize) {
      const Tensor& ys = ctx.host(*in.at(data_ + 4));
      const Tensor& zp = ctx.host(*in.at(data_ + 5));
      TRT_CHECK_ARG(ys.numel() == 1 && zp.numel() == 1,
                    "{}: y_scale and y_zero_point must be scalars", node.describe());
      yt = zp.dtype();
      post_.q_dtype = yt;
      post_.q_scale = static_cast<float>(ys.at_double(0));
      post_.q_zero = static_cast<float>(zp.at_double(0));
    }
    const auto* scale = static_cast<const float*>(scale_.get());
    const auto* shift = static_cast<const float*>(shift_.get());
    if (data_ == 1) {
      const void* px = ctx.dev(x);
      void* py = ctx.make(*out.at(0), yt, xs);
      out[0]->nhwc = nhwc;
      ctx.check(
          k::channel_affine_act(x.dtype, px, py, scale, shift, numel, c, inner, post_, ctx.stream),
          label_.c_str());
      return;
    }
    k::ConcatSources src;
    src.count = static_cast<int32_t>(data_);
    for (size_t i = 0; i < data_; ++i) {
      src.ptr[i] = ctx.dev(*in[i]);
      src.begin[i + 1] = src.begin[i] + static_cast<int32_t>(in[i]->shape[1]);
    }
    void* py = ctx.make(*out.at(0), yt, xs);
    out[0]->nhwc = nhwc;
    ctx.check(k::concat_channel_affine_act(x.dtype, src, py, scale, shift,
                                           nhwc ? (c > 0 ? numel / c : 0) : xs[0], inner, post_,
                                           ctx.stream),
              label_.c_str());
  }

 private:
  // The shape of x: input 0's, or with a concatenation the inputs' shape with their channels
  // summed (one float dtype, equal dims but the channel axis).
  Shape data_shape(const ir::Node& node, const std::vector<Value*>& in) const {
    TRT_CHECK_ARG(in.size() >= data_ + 4, "{}: needs {} inputs", node.describe(), data_ + 4);
    const Value& x = *in.at(0);
    require_float(node, x.dtype, "input X");
    TRT_CHECK_ARG(x.shape.size() >= 2, "{}: input X {} must have rank >= 2", node.describe(),
                  shape_str(x.shape));
    Shape xs = x.shape;
    TRT_CHECK(data_ <= static_cast<size_t>(k::ConcatSources::kMax), ErrorCode::kNotSupported,
              "{}: {} concatenated inputs (at most {})", node.describe(), data_,
              k::ConcatSources::kMax);
    for (size_t i = 1; i < data_; ++i) {
      const Value* t = in[i];
      bool ok = t && t->dtype == x.dtype && t->shape.size() == x.shape.size();
      for (size_t d = 0; ok && d < xs.size(); ++d) ok = d == 1 || t->shape[d] == xs[d];
      TRT_CHECK_ARG(ok, "{}: cannot concatenate {} and {} on axis 1", node.describe(),
                    shape_str(x.shape), t ? shape_str(t->shape) : std::string("(missing)"));
      xs[1] += t->shape[1];
    }
    return xs;
  }
  // x's layout: channels-last when any data input is (want_layouts made the others so or
  // layout-free).
  bool concat_nhwc(const std::vector<Value*>& in) const {
    bool nhwc = false;
    for (size_t i = 0; i < data_; ++i) nhwc = nhwc || in[i]->nhwc;
    return nhwc;
  }

  size_t data_ = 1;  // data inputs in front: a Concat's when > 1
  k::AffineAct post_;
  std::string label_ = "CUDA kernel";
  std::shared_ptr<void> scale_, shift_;
  int64_t channels_ = -1;
};

template <typename T>
OpFactory simple() {
  return [](const OpBuild&) -> std::unique_ptr<GpuOp> { return std::make_unique<T>(); };
}

OpFactory binary_factory(Binary op) {
  return [op](const OpBuild&) -> std::unique_ptr<GpuOp> { return std::make_unique<BinaryOp>(op); };
}

}  // namespace

void register_elementwise_ops(OpTable& t) {
  add_unary(t, "Relu", Unary::kRelu);
  add_unary(t, "Sigmoid", Unary::kSigmoid);
  add_unary(t, "Tanh", Unary::kTanh);
  add_unary(t, "Erf", Unary::kErf);
  add_unary(t, "Sqrt", Unary::kSqrt);
  add_unary(t, "Exp", Unary::kExp);
  add_unary(t, "Log", Unary::kLog);
  add_unary(t, "Abs", Unary::kAbs);
  add_unary(t, "Neg", Unary::kNeg);
  add_unary(t, "Reciprocal", Unary::kReciprocal);
  add_unary(t, "Floor", Unary::kFloor);
  add_unary(t, "Ceil", Unary::kCeil);
  add_unary(t, "Round", Unary::kRound);
  add_unary(t, "Sin", Unary::kSin);
  add_unary(t, "Cos", Unary::kCos);
  add_unary(t, "Sign", Unary::kSign);
  add_unary(t, "HardSwish", Unary::kHardSwish);
  add_unary(t, "Softplus", Unary::kSoftplus);
  add_unary(t, "Softsign", Unary::kSoftsign);
  add_unary(t, "Mish", Unary::kMish);
  add_unary(t, "HardSigmoid", Unary::kHardSigmoid, [](const ir::Node& n) {
    return UnaryParams{Unary::kHardSigmoid, n.attr_float("alpha", 0.2f),
                       n.attr_float("beta", 0.5f)};
  });
  add_unary(t, "LeakyRelu", Unary::kLeakyRelu, [](const ir::Node& n) {
    return UnaryParams{Unary::kLeakyRelu, n.attr_float("alpha", 0.01f)};
  });
  add_unary(t, "Elu", Unary::kElu, [](const ir::Node& n) {
    return UnaryParams{Unary::kElu, n.attr_float("alpha", 1.0f)};
  });
  add_unary(t, "Selu", Unary::kSelu, [](const ir::Node& n) {
    return UnaryParams{Unary::kSelu, n.attr_float("alpha", 1.67326319217681884765625f),
                       n.attr_float("gamma", 1.05070102214813232421875f)};
  });
  add_unary(t, "Gelu", Unary::kGelu, [](const ir::Node& n) {
    const std::string a = n.attr_string("approximate", "none");
    TRT_CHECK(a == "none" || a == "tanh", ErrorCode::kNotSupported,
              "{}: approximate='{}' is not supported (none|tanh)", n.describe(), a);
    return UnaryParams{a == "tanh" ? Unary::kGeluTanh : Unary::kGelu};
  });
  t["Clip"] = simple<ClipOp>();
  t["Identity"] = simple<IdentityOp>();
  t["Dropout"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    TRT_CHECK(b.node.outputs.size() < 2 || b.node.outputs[1].empty(), ErrorCode::kNotSupported,
              "{}: the mask output of Dropout is not supported on CUDA", b.node.describe());
    return std::make_unique<IdentityOp>();
  };

  t["Add"] = binary_factory(Binary::kAdd);
  t["Sub"] = binary_factory(Binary::kSub);
  t["Mul"] = binary_factory(Binary::kMul);
  t["Div"] = binary_factory(Binary::kDiv);
  t["Pow"] = binary_factory(Binary::kPow);
  t["Equal"] = binary_factory(Binary::kEqual);
  t["Less"] = binary_factory(Binary::kLess);
  t["Greater"] = binary_factory(Binary::kGreater);
  t["LessOrEqual"] = binary_factory(Binary::kLessOrEqual);
  t["GreaterOrEqual"] = binary_factory(Binary::kGreaterOrEqual);
  t["And"] = binary_factory(Binary::kAnd);
  t["Or"] = binary_factory(Binary::kOr);
  t["Xor"] = binary_factory(Binary::kXor);
  t["PRelu"] = simple<PReluOp>();
  t[std::string(kGpuDomain) + "::BinaryQuantize"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<BinaryQuantizeOp>(b.node);
  };
  t["Mod"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<ModOp>(b.node.attr_int("fmod", 0) != 0);
  };
  t["Sum"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<VariadicOp>(Binary::kAdd, false);
  };
  t["Mean"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<VariadicOp>(Binary::kAdd, true);
  };
  t["Max"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<VariadicOp>(Binary::kMax, false);
  };
  t["Min"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<VariadicOp>(Binary::kMin, false);
  };
  t["Where"] = simple<WhereOp>();
  t["Cast"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    const int64_t to = b.node.attr_int("to", 0);
    const auto dt = dtype_from_onnx(static_cast<int32_t>(to));
    TRT_CHECK(dt && k::cast_supported(*dt), ErrorCode::kNotSupported,
              "{}: cast to dtype {} is not supported on CUDA", b.node.describe(), to);
    return std::make_unique<CastOp>(*dt, b.node.attr_int("saturate", 1) != 0);
  };
  t["BatchNormalization"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    TRT_CHECK(b.node.attr_int("training_mode", 0) == 0, ErrorCode::kNotSupported,
              "{}: training_mode=1 is not supported (inference only)", b.node.describe());
    for (size_t o = 1; o < b.node.outputs.size(); ++o)
      TRT_CHECK(b.node.outputs[o].empty(), ErrorCode::kNotSupported,
                "{}: training outputs are not supported", b.node.describe());
    return std::make_unique<BatchNormOp>(b.node);
  };
  t[std::string(kGpuDomain) + "::BatchNormAct"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<BatchNormOp>(b.node);
  };
}

}  // namespace trtutils::cuda
