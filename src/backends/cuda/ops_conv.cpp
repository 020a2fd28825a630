// GPU ops of the convolution family: Conv and com.trtutils::FusedConv (cuDNN, with bias +
// residual + ReLU / identity fused into the cuDNN call, other activations as one epilogue kernel;
// our depthwise, small-C and pointwise kernels where they are faster), ConvQuantize and the patch
// embedding (im2col + cuBLASLt).
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

// ---- convolution ------------------------------------------------------------------------------
struct PostOps {
  k::Act act = k::Act::kNone;
  float alpha = 0, beta = 0;
};

// A per-tensor quantization of a convolution's output (com.trtutils.cuda::ConvQuantize).
struct OutQuant {
  DataType y_t = DataType::kInt8;
  float scale = 1.0f, zero_point = 0.0f;
};

PostOps read_post_ops(const ir::Node& node) {
  const ops::FusedActivationAttr a = ops::read_fused_activation(node);
  return {to_kernel_act(a.kind), a.alpha, a.beta};
}

// Channels-last convolutions: 2-D, on tensor-core dtypes (float32 only with TF32).
bool conv_channels_last(const RunContext& ctx, const Value& x) {
  if (!ctx.channels_last || x.shape.size() != 4 || x.shape[0] < ctx.channels_last_min_batch)
    return false;
  return x.dtype == DataType::kFloat16 || x.dtype == DataType::kBFloat16 ||
         (x.dtype == DataType::kFloat32 && ctx.allow_tf32);
}

// A patch-embedding convolution (ViT's conv_proj): kernel = stride, no padding or dilation, one
// group, windows of at least 4 taps. Non-overlapping windows make im2col a permuted copy, and the
// product is one cuBLASLt GEMM per image with the weights shared: Y[n] = W [K, C k..] x
// col[n] [C k.., P] lands in NCHW order. cuDNN picks slow kernels for these shapes (ViT-B/16,
// batch 256, float16: 1.98 ms at 4% of the roofline). TRTUTILS_CUDA_PATCH_GEMM=0 turns it off.
bool patch_conv(const ConvGeometry& g) {
  if (g.group != 1 || g.nspatial > 3) return false;
  int64_t taps = 1;
  for (size_t i = 0; i < g.nspatial; ++i) {
    if (g.kernel[i] != g.stride[i] || g.dilation[i] != 1 || g.pad_begin[i] != 0 ||
        g.pad_end[i] != 0)
      return false;
    taps *= g.kernel[i];
  }
  return taps >= 4;
}

// A pointwise convolution (1x1..., stride 1, no padding, one group) is a matrix product: NHWC
// Y [N H W, K] = X [N H W, C] W^T, NCHW Y[n] [K, H W] = W [K, C] X[n] [C, H W]. cuDNN is slow on
// some of these shapes (ResNet-50 batch 1 NCHW: ~30 us a layer; MobileNetV2's narrow NHWC 1x1
// layers at ~10% of the memory bandwidth), so the first eager run times both and keeps the
// faster (TRTUTILS_CUDA_POINTWISE_GEMM=0: cuDNN only, as with TRTUTILS_CUDA_FUSED_CONV=force;
// =force: the GEMM without timing). Read when the op is made (alt_mode).
bool pointwise_conv(const ConvGeometry& g) {
  if (g.group != 1) return false;
  for (size_t i = 0; i < g.nspatial; ++i)
    if (g.kernel[i] != 1 || g.stride[i] != 1 || g.dilation[i] != 1 || g.pad_begin[i] != 0 ||
        g.pad_end[i] != 0)
      return false;
  return true;
}

// A depthwise 2-D convolution (groups = channels, multiplier 1): on channels-last data our
// kernel (depthwise_kernels.cu) is timed against cuDNN like the pointwise GEMM
// (TRTUTILS_CUDA_DEPTHWISE=0 / force).
bool depthwise_conv(const ConvGeometry& g) {
  return g.nspatial == 2 && g.group > 1 && g.group == g.in_channels &&
         g.out_channels == g.in_channels;
}

// [K, C/g, k...] -> [K, k..., C/g] bytes (KCRS -> KRSC).
Tensor pack_krsc(const Tensor& w) {
  const int64_t k = w.dim(0), c = w.dim(1), rs = w.numel() / std::max<int64_t>(1, k * c);
  const size_t esz = static_cast<size_t>(dtype_bits(w.dtype()) / 8);
  Tensor r = Tensor::uninitialized(w.dtype(), w.shape());
  const auto* src = static_cast<const uint8_t*>(w.raw());
  auto* dst = static_cast<uint8_t*>(r.raw());
  for (int64_t o = 0; o < k; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t p = 0; p < rs; ++p)
        std::memcpy(dst + ((o * rs + p) * c + ci) * esz, src + ((o * c + ci) * rs + p) * esz, esz);
  return r;
}

// The one float dtype of a convolution's X, W and B (B optional).
DataType conv_operand_dtype(const ir::Node& node, const Value& x, const Value& w, const Value* b) {
  const DataType dt = x.dtype;
  require_float(node, dt, "input X");
  TRT_CHECK_ARG(w.dtype == dt && (!b || b->dtype == dt),
                "{}: X, W and B must have the same dtype (got {}, {}, {})", node.describe(),
                dtype_name(dt), dtype_name(w.dtype),
                b ? dtype_name(b->dtype) : std::string_view("none"));
  return dt;
}

class ConvOp : public GpuOp {
 public:
  explicit ConvOp(PostOps post) : post_(post) {}
  std::string kernel() const override {
    if (small_c_ran_)
      return std::string("CUDA small-C TF32 kernel") + (small_c_quantized_ ? " + quantize" : "") +
             (small_c_nhwc_ ? " NHWC" : "") + (small_c_wgmma_ ? " (wgmma)" : "");
    if (patch_) return "cuBLASLt (patch GEMM: kernel = stride)";
    if (alt_.decided && alt_.chosen) {
      const std::string what = std::string(alt_.label) + (alt_.nhwc ? " NHWC" : "");
      if (alt_.forced) return what + " (forced)";
      if (alt_.cached) return what + " (timing cache)";
      return fmt::format(
          "{} ({:.3f} ms vs cuDNN {})", what, alt_.alt_ms,
          alt_.cudnn_ms < 0 ? std::string("refused") : fmt::format("{:.3f} ms", alt_.cudnn_ms));
    }
    return conv_.how() + (nhwc_refused_.empty() ? "" : " (NHWC refused: " + nhwc_refused_ + ")");
  }
  void want_layouts(const RunContext& ctx, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    if (in.size() > 1 && in[0] && in[1] &&
        small_c_problem(ctx, *in[0], *in[1], in.size() > 3 && in[3], DataType::kFloat32)) {
      for (Layout& l : want) l = Layout::kAny;  // X read in its layout; W and B packed here
      return;
    }
    if (!in.at(0) || !conv_channels_last(ctx, *in[0]) || !nhwc_refused_.empty()) return;
    if (patch_enabled_ && in.size() > 1 && in[1] &&
        patch_conv(conv_geometry(*ctx.node, in[0]->shape, in[1]->shape)))
      return;  // NCHW: the patch GEMM writes NCHW
    want[0] = Layout::kNhwc;
    for (size_t i = 1; i < want.size(); ++i) want[i] = Layout::kAny;  // W, B: packed here
    if (want.size() > 3) want[3] = Layout::kNhwc;                     // the residual
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    run_into(ctx, in, *out.at(0), nullptr);
  }
  // Y quantized per tensor as `q` says, when the small-C kernel applies (true); else nothing
  // runs (false).
  bool run_quantized(RunContext& ctx, const std::vector<Value*>& in, Value& y, const OutQuant& q) {
    return run_into(ctx, in, y, &q);
  }

 private:
  bool run_into(RunContext& ctx, const std::vector<Value*>& in, Value& y, const OutQuant* q) {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& w = *in.at(1);
    Value* b = in.size() > 2 ? in[2] : nullptr;
    Value* r = in.size() > 3 ? in[3] : nullptr;
    const DataType dt = conv_operand_dtype(node, x, w, b);
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
    if (run_small_c(ctx, x, w, b, r, y, ys, q)) return true;
    if (q) return false;
    const bool cl = x.nhwc;
    TRT_CHECK(!r || r->nhwc == cl, ErrorCode::kInternal, "{}: the residual's layout differs",
              node.describe());
    patch_ = false;
    if (patch_enabled_ && !cl && patch_conv(g)) {
      run_patch_gemm(ctx, g, x, w, b, r, y, ys);
      patch_ = true;
      return true;
    }
    const void* px = ctx.dev(x);
    void* py = ctx.make(y, dt, ys);
    y.nhwc = cl;
    if (shape_numel(ys) == 0) return true;
    ConvEpilogue e;
    e.bias = b ? ctx.dev(*b) : nullptr;
    e.residual = r ? ctx.dev(*r) : nullptr;
    e.act = post_.act;
    e.alpha = post_.alpha;
    e.beta = post_.beta;
    std::shared_ptr<void> x_back, r_back;  // NCHW copies for the run that finds out
    const bool pointwise = pw_mode_ != AltMode::kOff && pointwise_conv(g);
    if (cl) {
      try {
        if (dw_mode_ != AltMode::kOff && depthwise_conv(g) && w.constant && w.host.defined()) {
          const void* wd = depthwise_weights(ctx, w);
          std::shared_ptr<void> w_scratch;
          const void* pw = krsc_weights(ctx, w, w_scratch);
          auto dw = [&] {
            ctx.check(k::conv_depthwise(dt, px, wd, e.bias, e.residual, py, depthwise_desc(g),
                                        e.act, e.alpha, e.beta, ctx.stream),
                      "depthwise convolution");
          };
          if (alternative(ctx, g, true, dt, dw_mode_, "CUDA depthwise kernel", dw, px, pw, py, e))
            return true;
        }
        std::shared_ptr<void> w_scratch;
        const void* pw = krsc_weights(ctx, w, w_scratch);
        if (pointwise && pointwise_gemm(ctx, g, true, dt, px, pw, py, e)) return true;
        conv_.run(ctx, g, ConvConfig{dt, dt, true}, px, pw, py, e);
        return true;
      } catch (const Error& err) {
        // A problem cuDNN does not run channels-last (found on the eager first run): NCHW from
        // now on; this run converts X (and the residual) back.
        if (ctx.capturing) throw;
        (void)cudaGetLastError();
        nhwc_refused_ = err.what();
        TRT_LOG_WARN("{}: channels-last convolution refused ({}); running it NCHW", node.describe(),
                     nhwc_refused_);
      }
      const size_t esz = static_cast<size_t>(dtype_bits(dt) / 8);
      x_back = ctx.scratch(x.nbytes());
      convert_layout(ctx, esz, x.shape, px, x_back.get(), false);
      px = x_back.get();
      if (r) {
        r_back = ctx.scratch(r->nbytes());
        convert_layout(ctx, esz, r->shape, e.residual, r_back.get(), false);
        e.residual = r_back.get();
      }
      y.nhwc = false;
    }
    if (pointwise && pointwise_gemm(ctx, g, false, dt, px, ctx.dev(w), py, e)) return true;
    conv_.run(ctx, g, ConvConfig{dt, dt, false}, px, ctx.dev(w), py, e);
    return true;
  }

  // The small-C TF32 kernel's problem (conv_small_c.cu: few input channels, the stem of image
  // models) when it applies: float32 X and W with TF32 allowed, 2-D, one group, no residual, W
  // a constant (packed here), Y float32 or quantized (y_t). TRTUTILS_CUDA_SMALL_C=0 (or
  // TRTUTILS_CUDA_FUSED_CONV=force, cuDNN only): never. Not timed against cuDNN: with C <= 4,
  // cuDNN's kernels waste most of their tensor-core work on padding channels.
  std::optional<k::SmallCDesc> small_c_problem(const RunContext& ctx, const Value& x,
                                               const Value& w, bool residual, DataType y_t) const {
    if (!small_c_enabled_ || !ctx.allow_tf32 || residual || x.dtype != DataType::kFloat32 ||
        w.dtype != DataType::kFloat32 || !w.constant || !w.host.defined() || x.shape.size() != 4 ||
        w.shape.size() != 4 || shape_numel(x.shape) >= (int64_t{1} << 31))
      return std::nullopt;
    const ConvGeometry g = conv_geometry(*ctx.node, x.shape, w.shape);
    if (g.nspatial != 2 || g.group != 1 || g.in_channels > k::kSmallCMaxChannels ||
        g.out_channels >= (int64_t{1} << 31))
      return std::nullopt;
    k::SmallCDesc d;
    d.n = static_cast<int32_t>(g.batch);
    set_2d_geometry(d, g);
    d.k = static_cast<int32_t>(g.out_channels);
    d.kred = d.kh * d.kw * d.c;
    d.kred_pad = (d.kred + 7) / 8 * 8;
    d.y_t = y_t;
    if (!k::small_c_supported(d)) return std::nullopt;
    return d;
  }

  bool run_small_c(RunContext& ctx, Value& x, Value& w, Value* b, Value* r, Value& y,
                   const Shape& ys, const OutQuant* q) {
    small_c_ran_ = false;
    std::optional<k::SmallCDesc> d =
        small_c_problem(ctx, x, w, r != nullptr, q ? q->y_t : DataType::kFloat32);
    if (!d) return false;
    d->x_nhwc = x.nhwc;
    d->y_nhwc = conv_channels_last(ctx, x);  // the layout the following layers run in
    d->act = post_.act;
    d->alpha = post_.alpha;
    d->beta = post_.beta;
    if (q) {
      d->y_scale = q->scale;
      d->y_zp = q->zero_point;
    }
    if (!w_small_ || w_small_src_ != w.host.raw()) {
      const std::vector<float> packed =
          k::small_c_pack_weights(static_cast<const float*>(w.host.raw()), *d);
      w_small_ = upload_bytes(packed.data(), packed.size() * sizeof(float));
      w_small_src_ = w.host.raw();
      if (ctx.weight_bytes) *ctx.weight_bytes += packed.size() * sizeof(float);
    }
    const auto* px = static_cast<const float*>(ctx.dev(x));
    const auto* pb = b ? static_cast<const float*>(ctx.dev(*b)) : nullptr;
    void* py = ctx.make(y, d->y_t, ys);
    y.nhwc = d->y_nhwc;
    const cudaError_t e =
        k::conv_small_c(*d, px, static_cast<const float*>(w_small_.get()), pb, py, ctx.stream);
    if (e == cudaErrorNotSupported) {
      (void)cudaGetLastError();
      return false;
    }
    ctx.check(e, "small-channel convolution");
    small_c_ran_ = true;
    small_c_quantized_ = q != nullptr;
    small_c_nhwc_ = d->y_nhwc;
    small_c_wgmma_ = k::wgmma_available();
    return true;
  }

  // W as KRSC: packed once on the host for a constant (the KCRS copy is never uploaded),
  // converted on the device into `scratch` otherwise.
  const void* krsc_weights(RunContext& ctx, Value& w, std::shared_ptr<void>& scratch) {
    if (w.constant && w.host.defined()) {
      if (!w_krsc_ || w_src_ != w.host.raw()) {
        const Tensor packed = pack_krsc(w.host);
        w_krsc_ = upload_bytes(packed.raw(), packed.nbytes());
        w_src_ = w.host.raw();
        if (ctx.weight_bytes) *ctx.weight_bytes += packed.nbytes();
      }
      return w_krsc_.get();
    }
    TRT_CHECK(w.shape.size() == 4, ErrorCode::kInternal, "{}: W must be 4-D", ctx.node->describe());
    const void* src = ctx.dev(w);
    scratch = ctx.scratch(w.nbytes());
    convert_layout(ctx, static_cast<size_t>(dtype_bits(w.dtype) / 8), w.shape, src, scratch.get(),
                   true);
    return scratch.get();
  }

  // Runs the pointwise convolution as a GEMM when that was (or, on the first eager run with
  // this geometry, is now measured to be) faster than cuDNN; false: the caller runs cuDNN.
  bool pointwise_gemm(RunContext& ctx, const ConvGeometry& g, bool nhwc, DataType dt,
                      const void* px, const void* pw, void* py, const ConvEpilogue& e) {
    auto gemm = [&] { run_pointwise_gemm(ctx, g, nhwc, dt, px, pw, py, e); };
    return alternative(ctx, g, nhwc, dt, pw_mode_, "cuBLASLt 1x1 conv as GEMM", gemm, px, pw, py,
                       e);
  }

  // Runs `alt` instead of cuDNN when it was (or, on the first eager run with this geometry, is
  // now measured to be) faster; false: the caller runs cuDNN. A failing candidate loses.
  bool alternative(RunContext& ctx, const ConvGeometry& g, bool nhwc, DataType dt, AltMode mode,
                   const char* label, const std::function<void()>& alt, const void* px,
                   const void* pw, void* py, const ConvEpilogue& e) {
    if (!alt_.decided || !(alt_.geometry == g) || alt_.nhwc != nhwc || alt_.dt != dt ||
        alt_.label != label) {
      if (ctx.capturing) return false;
      alt_ = Alternative{};
      alt_.geometry = g;
      alt_.nhwc = nhwc;
      alt_.dt = dt;
      alt_.label = label;
      alt_.decided = true;
      if (mode == AltMode::kForce) {  // unless it cannot run (then cuDNN)
        try {
          alt();
          alt_.chosen = alt_.forced = true;
          return true;
        } catch (const Error&) {
          (void)cudaGetLastError();
          return false;
        }
      }
      if (ctx.deterministic) return false;  // a fixed rule: cuDNN
      // The decision's problem for the timing cache: the alternative, dtype, layout, geometry.
      const std::string what =
          ctx.timing
              ? fmt::format("Conv {} vs cuDNN|{}|{}|n {} c {} k {} group {}|{}|{}|{}|{}|{}|{}|{}",
                            label, dtype_name(dt), nhwc ? "nhwc" : "nchw", g.batch, g.in_channels,
                            g.out_channels, g.group, fmt::join(g.in, ","), fmt::join(g.out, ","),
                            fmt::join(g.kernel, ","), fmt::join(g.stride, ","),
                            fmt::join(g.dilation, ","), fmt::join(g.pad_begin, ","),
                            fmt::join(g.pad_end, ","))
              : std::string();
      const std::string cached = what.empty() ? "" : ctx.timing->find(what);
      if (!cached.empty()) {
        alt_.cached = true;
        alt_.chosen = cached == "alternative";
        if (alt_.chosen) {
          try {
            alt();
            return true;
          } catch (const Error&) {  // it cannot run here after all: cuDNN
            (void)cudaGetLastError();
            alt_.chosen = false;
          }
        }
        return false;
      }
      try {
        alt_.alt_ms = time_on_stream(ctx, alt);
      } catch (const Error&) {
        (void)cudaGetLastError();
        alt_.alt_ms = -1;
      }
      try {
        alt_.cudnn_ms = time_on_stream(ctx, [&] {
          conv_.run(ctx, g, ConvConfig{dt, dt, nhwc}, px, pw, py, e);
        });
      } catch (const Error&) {
        (void)cudaGetLastError();
        alt_.cudnn_ms = -1;
      }
      alt_.chosen = alt_.alt_ms >= 0 && (alt_.cudnn_ms < 0 || alt_.alt_ms < alt_.cudnn_ms);
      if (!what.empty())
        ctx.timing->put(what, alt_.chosen ? "alternative" : "cudnn",
                        {{"alternative", alt_.alt_ms}, {"cudnn", alt_.cudnn_ms}});
    }
    if (alt_.chosen) alt();
    return alt_.chosen;
  }

  // Depthwise weights [C, 1, kh, kw] packed [kh * kw, C] for the kernel (uploaded once).
  const void* depthwise_weights(RunContext& ctx, Value& w) {
    if (!w_dw_ || w_dw_src_ != w.host.raw()) {
      const Tensor& t = w.host;
      const int64_t c = t.dim(0), taps = t.numel() / std::max<int64_t>(1, c);
      const size_t esz = static_cast<size_t>(dtype_bits(t.dtype()) / 8);
      Tensor packed = Tensor::uninitialized(t.dtype(), t.shape());
      const auto* src = static_cast<const uint8_t*>(t.raw());
      auto* dst = static_cast<uint8_t*>(packed.raw());
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t p = 0; p < taps; ++p)
          std::memcpy(dst + (p * c + ci) * esz, src + (ci * taps + p) * esz, esz);
      w_dw_ = upload_bytes(packed.raw(), packed.nbytes());
      w_dw_src_ = t.raw();
      if (ctx.weight_bytes) *ctx.weight_bytes += packed.nbytes();
    }
    return w_dw_.get();
  }
  static k::DepthwiseDesc depthwise_desc(const ConvGeometry& g) {
    k::DepthwiseDesc d;
    d.n = static_cast<int32_t>(g.batch);
    set_2d_geometry(d, g);
    return d;
  }

  void run_pointwise_gemm(RunContext& ctx, const ConvGeometry& g, bool nhwc, DataType dt,
                          const void* px, const void* pw, void* py, const ConvEpilogue& e) {
    int64_t hw = 1;
    for (int64_t v : g.out) hw *= v;
    const int64_t k = g.in_channels, n = g.out_channels, total = g.batch * hw * n;
    if (total == 0) return;
    if (k == 0) {
      TRT_CUDA_CHECK(
          cudaMemsetAsync(py, 0, static_cast<size_t>(total) * (dtype_bits(dt) / 8), ctx.stream));
    } else if (nhwc) {
      // Rows are pixels: bias (+ ReLU) in cuBLASLt's epilogue, the residual as its C.
      MatmulProblem p;
      p.a_t = p.b_t = p.d_t = dt;
      p.m = g.batch * hw;
      p.n = n;
      p.k = k;
      p.trans_b = true;  // W [K, C]
      const bool relu = e.act == k::Act::kRelu;
      if (e.bias)
        p.epilogue = relu ? MatmulProblem::Epilogue::kReluBias : MatmulProblem::Epilogue::kBias;
      else if (relu)
        p.epilogue = MatmulProblem::Epilogue::kRelu;
      TRT_CHECK(pw_lt_.run(ctx, p, px, pw, py, 1.0f, e.residual ? 1.0f : 0.0f, e.bias, nullptr,
                           nullptr, nullptr, nullptr, e.residual),
                ErrorCode::kNotSupported, "{}: cuBLASLt has no algorithm for this 1x1 product",
                ctx.node->describe());
      if (!relu && e.act != k::Act::kNone)
        ctx.check(
            k::bias_act(dt, py, nullptr, nullptr, total, n, 1, e.act, e.alpha, e.beta, ctx.stream),
            "1x1 GEMM activation");
      return;
    } else {
      matmul(ctx, pw_lt_, dt, {n, k}, {g.batch, k, hw}, pw, px, py);
    }
    if (!e.empty())
      ctx.check(k::bias_act(dt, py, e.bias, e.residual, total, n, nhwc ? 1 : hw, e.act, e.alpha,
                            e.beta, ctx.stream),
                "1x1 GEMM epilogue");
  }

  void run_patch_gemm(RunContext& ctx, const ConvGeometry& g, Value& x, Value& w, Value* b,
                      Value* r, Value& y, const Shape& ys) {
    const DataType dt = x.dtype;
    const size_t esz = static_cast<size_t>(dtype_bits(dt) / 8);
    const void* px = ctx.dev(x);
    const void* pw = ctx.dev(w);
    void* py = ctx.make(y, dt, ys);
    const int64_t p = shape_numel(ys) / (g.batch * g.out_channels);
    const int64_t ckk = shape_numel(w.shape) / g.out_channels;
    if (p == 0) return;
    // col[n][c][k_1..][o_1..] = x[n][c][o_1 * s_1 + k_1]...: spatial stride of axis i in x is
    // the product of the later input axes; a window offset moves by it, an output step by
    // kernel times it.
    const size_t ns = g.nspatial;
    std::vector<int64_t> sp(ns, 1);
    for (size_t i = ns; i-- > 1;) sp[i - 1] = sp[i] * g.in[i];
    const int64_t plane = sp[0] * g.in[0];
    std::vector<std::pair<int64_t, int64_t>> dims{{g.batch, g.in_channels * plane},
                                                  {g.in_channels, plane}};
    for (size_t i = 0; i < ns; ++i) dims.push_back({g.kernel[i], sp[i]});
    for (size_t i = 0; i < ns; ++i) dims.push_back({g.out[i], g.kernel[i] * sp[i]});
    const int64_t n = g.batch * ckk * p;
    require_indexable(*ctx.node, n);
    const auto col = ctx.scratch(static_cast<size_t>(n) * esz);
    copy_strided(ctx, esz, px, col.get(), dims, 0);
    matmul(ctx, patch_lt_, dt, {g.out_channels, ckk}, {g.batch, ckk, p}, pw, col.get(), py);
    if (b || r || post_.act != k::Act::kNone)
      ctx.check(
          k::bias_act(dt, py, b ? ctx.dev(*b) : nullptr, r ? ctx.dev(*r) : nullptr, shape_numel(ys),
                      g.out_channels, p, post_.act, post_.alpha, post_.beta, ctx.stream),
          "patch GEMM epilogue");
  }

  // The alternative-or-cuDNN decision for the last geometry seen.
  struct Alternative {
    ConvGeometry geometry;
    bool nhwc = false;
    DataType dt = DataType::kUndefined;
    std::string label;
    bool decided = false, chosen = false, forced = false;
    bool cached = false;  // the decision came from the timing cache
    float alt_ms = -1, cudnn_ms = -1;
  };
  PostOps post_;
  CudnnConv conv_;
  Alternative alt_;
  AltMode pw_mode_ = alt_mode("TRTUTILS_CUDA_POINTWISE_GEMM");
  AltMode dw_mode_ = alt_mode("TRTUTILS_CUDA_DEPTHWISE");
  std::shared_ptr<void> w_dw_;
  const void* w_dw_src_ = nullptr;
  LtMatmul pw_lt_;
  LtMatmul patch_lt_;
  bool patch_enabled_ = kernel_switch("TRTUTILS_CUDA_PATCH_GEMM", true);
  bool patch_ = false;
  std::shared_ptr<void> w_krsc_;
  const void* w_src_ = nullptr;
  std::string nhwc_refused_;  // why this convolution runs NCHW after all
  bool small_c_enabled_ = alt_mode("TRTUTILS_CUDA_SMALL_C") != AltMode::kOff;
  std::shared_ptr<void> w_small_;
  const void* w_small_src_ = nullptr;
  bool small_c_ran_ = false, small_c_quantized_ = false, small_c_nhwc_ = false,
       small_c_wgmma_ = false;
};

// com.trtutils.cuda::ConvQuantize (fusion/conv_quantize.cpp): a float convolution whose output only
// a per-tensor QuantizeLinear reads. Inputs X, W, B, R (the convolution's, "" where absent),
// y_scale, y_zero_point (constants). The small-C kernel writes the quantized bytes directly;
// otherwise the convolution runs as ConvOp into a temporary and QuantizeLinear's kernel follows.
class ConvQuantizeOp : public GpuOp {
 public:
  explicit ConvQuantizeOp(const OpBuild& b) : conv_(read_post_ops(b.node)) {
    const Tensor* scale = b.constant_input(4);
    const Tensor* zp = b.constant_input(5);
    TRT_CHECK(scale && scale->numel() == 1 && (!b.node.has_input(5) || (zp && zp->numel() == 1)),
              ErrorCode::kInternal, "{}: y_scale and y_zero_point must be constant scalars",
              b.node.describe());
    q_.scale = static_cast<float>(scale->at_double(0));
    q_.zero_point = zp ? static_cast<float>(zp->at_double(0)) : 0.0f;
  }
  std::string kernel() const override {
    return conv_.kernel() + (fused_ ? "" : " + QuantizeLinear kernel");
  }
  void want_layouts(const RunContext& ctx, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    std::vector<Value*> cin(in.begin(), in.begin() + std::min<size_t>(in.size(), 4));
    std::vector<Layout> cw(want.begin(), want.begin() + std::min<size_t>(want.size(), 4));
    conv_.want_layouts(ctx, cin, cw);
    for (size_t i = 0; i < want.size(); ++i) want[i] = i < cw.size() ? cw[i] : Layout::kAny;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    TRT_CHECK(in.size() >= 5 && in[4], ErrorCode::kInternal, "{}: y_scale missing",
              node.describe());
    Value* zp = in.size() > 5 ? in[5] : nullptr;
    q_.y_t = ops::quantize_output_dtype(node, ctx.opset, zp ? zp->dtype : DataType::kUndefined);
    const std::vector<Value*> cin(in.begin(), in.begin() + 4);
    Value& y = *out.at(0);
    fused_ = conv_.run_quantized(ctx, cin, y, q_);
    if (fused_) return;
    Value tmp;
    conv_.run(ctx, cin, {&tmp});
    if (!params_) {  // here, not in the factory: the builder makes ops on machines without a GPU
      const float host[2] = {q_.scale, q_.zero_point};
      params_ = upload_bytes(host, sizeof(host));
    }
    k::QuantDesc d;
    d.n = tmp.numel();
    d.scale = static_cast<const float*>(params_.get());
    d.zero_point = d.scale + 1;
    void* py = ctx.make(y, q_.y_t, tmp.shape);
    y.nhwc = tmp.nhwc;
    ctx.check(k::quantize(tmp.dtype, q_.y_t, ctx.dev(tmp), py, d, node.attr_int("saturate", 1) != 0,
                          ctx.stream),
              "QuantizeLinear");
  }

 private:
  ConvOp conv_;
  OutQuant q_;
  std::shared_ptr<void> params_;  // y_scale, y_zero_point as float32 on the device
  bool fused_ = false;
};

// com.trtutils.cuda::PatchEmbed (fusion/patch_embed.cpp: Conv with kernel = stride -> Reshape
// [N, K, P] -> Transpose(0, 2, 1)): Y [N, P, K] = patches(X) W^T + B with P = (H / kh) (W / kw)
// patches in row-major order: an im2col copy whose rows are already in Y's order, then one
// cuBLASLt product over all N * P rows (TF32 where allowed) with the bias in its epilogue.
class PatchEmbedOp : public GpuOp {
 public:
  std::string kernel() const override {
    return "im2col + cuBLASLt + bias (patch embedding: Conv, Reshape, Transpose)";
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& w = *in.at(1);
    Value* b = in.size() > 2 ? in[2] : nullptr;
    const DataType dt = conv_operand_dtype(node, x, w, b);
    TRT_CHECK_ARG(x.shape.size() == 4 && w.shape.size() == 4 && w.shape[1] == x.shape[1] &&
                      x.shape[2] >= w.shape[2] && x.shape[3] >= w.shape[3] && w.shape[2] > 0 &&
                      w.shape[3] > 0,
                  "{}: X {} and W {} are not a patch embedding's", node.describe(),
                  shape_str(x.shape), shape_str(w.shape));
    const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
    const int64_t kk = w.shape[0], kh = w.shape[2], kw = w.shape[3];
    const int64_t oh = h / kh, ow = wd / kw;  // stride = kernel, no padding
    const int64_t rows = n * oh * ow, ckk = c * kh * kw;
    if (b)
      TRT_CHECK_ARG(b->numel() == kk, "{}: bias B has {} values for {} channels", node.describe(),
                    b->numel(), kk);
    void* py = ctx.make(*out.at(0), dt, Shape{n, oh * ow, kk});
    if (rows * kk == 0) return;
    const size_t esz = static_cast<size_t>(dtype_bits(dt) / 8);
    require_indexable(node, rows * ckk);
    const auto col = ctx.scratch(static_cast<size_t>(rows * ckk) * esz);
    // col[n][i][j][c][u][v] = x[n][c][i * kh + u][j * kw + v]
    copy_strided(ctx, esz, ctx.dev(x), col.get(),
                 {{n, c * h * wd}, {oh, kh * wd}, {ow, kw}, {c, h * wd}, {kh, wd}, {kw, 1}}, 0);
    MatmulProblem p;
    p.a_t = p.b_t = p.d_t = dt;
    p.m = rows;
    p.n = kk;
    p.k = ckk;
    p.trans_b = true;  // W [K, C kh kw]
    p.epilogue = b ? MatmulProblem::Epilogue::kBias : MatmulProblem::Epilogue::kNone;
    TRT_CHECK(lt_.run(ctx, p, col.get(), ctx.dev(w), py, 1.0f, 0.0f, b ? ctx.dev(*b) : nullptr),
              ErrorCode::kNotSupported,
              "{}: cuBLASLt has no algorithm for the {} patch product {}x{}x{}; "
              "TRTUTILS_CUDA_PATCH_EMBED=0 runs the layers one by one",
              node.describe(), dtype_name(dt), rows, kk, ckk);
  }

 private:
  LtMatmul lt_;
};

}  // namespace

void register_conv_ops(OpTable& t) {
  t["Conv"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<ConvOp>(PostOps{});
  };
  t["com.trtutils::FusedConv"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<ConvOp>(read_post_ops(b.node));
  };
  t[std::string(kGpuDomain) + "::ConvQuantize"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<ConvQuantizeOp>(b);
  };
  t[std::string(kGpuDomain) + "::PatchEmbed"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<PatchEmbedOp>();
  };
}

}  // namespace trtutils::cuda
