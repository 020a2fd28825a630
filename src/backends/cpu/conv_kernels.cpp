// Conv and ConvTranspose on the CPU: geometry, the plain reference kernels (1-D/2-D/3-D, groups,
// dilations, asymmetric pads) and dispatch to the oneDNN fast path for float32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/blocked_depthwise.h"
#include "backends/cpu/blocked_layout.h"
#include "backends/cpu/copy_util.h"
#include "backends/cpu/nn_kernels.h"
#include "core/check.h"
#include "ops/blocked_layout.h"
#include "ops/nn_geometry.h"

namespace trtutils::cpu::nn {

namespace {

// Outputs o in [lo, hi) of an axis of size `outs` whose input index o * s + off lies in [0, len).
struct Range {
  int64_t lo, hi;
};
Range valid_outputs(int64_t outs, int64_t s, int64_t off, int64_t len) {
  int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t hi = (len - 1 - off) < 0 ? 0 : (len - 1 - off) / s + 1;
  hi = std::min(hi, outs);
  return {lo, std::max(lo, hi)};
}

// Reference Conv: for every (n, m) one accumulator plane in double, filled by walking the input
// channels of m's group and the kernel taps; the loop bounds skip the padding.
template <typename T>
void conv_reference(const ConvProblem& p, const T* x, const T* w, const T* b, T* y) {
  const int64_t cg = p.in_channels / p.group, mg = p.out_channels / p.group;
  const int64_t in_sz = p.in[0] * p.in[1] * p.in[2];
  const int64_t out_sz = p.out[0] * p.out[1] * p.out[2];
  const int64_t k_sz = p.kernel[0] * p.kernel[1] * p.kernel[2];
  const int64_t nm = p.batch * p.out_channels;
#pragma omp parallel
  {
    std::vector<double> acc(static_cast<size_t>(out_sz));
#pragma omp for schedule(dynamic, 1)
    for (int64_t job = 0; job < nm; ++job) {
      const int64_t n = job / p.out_channels, m = job % p.out_channels, g = m / mg;
      std::fill(acc.begin(), acc.end(), b ? static_cast<double>(b[m]) : 0.0);
      for (int64_t c = 0; c < cg; ++c) {
        const T* xc = x + (n * p.in_channels + g * cg + c) * in_sz;
        const T* wk = w + (m * cg + c) * k_sz;
        for (int64_t kd = 0; kd < p.kernel[0]; ++kd) {
          const int64_t offd = kd * p.dilation[0] - p.pad_begin[0];
          const Range rd = valid_outputs(p.out[0], p.stride[0], offd, p.in[0]);
          for (int64_t kh = 0; kh < p.kernel[1]; ++kh) {
            const int64_t offh = kh * p.dilation[1] - p.pad_begin[1];
            const Range rh = valid_outputs(p.out[1], p.stride[1], offh, p.in[1]);
            for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
              const int64_t offw = kw * p.dilation[2] - p.pad_begin[2];
              const Range rw = valid_outputs(p.out[2], p.stride[2], offw, p.in[2]);
              const double wv = static_cast<double>(wk[(kd * p.kernel[1] + kh) * p.kernel[2] + kw]);
              for (int64_t od = rd.lo; od < rd.hi; ++od) {
                const int64_t id = od * p.stride[0] + offd;
                for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
                  const int64_t ih = oh * p.stride[1] + offh;
                  double* a = acc.data() + (od * p.out[1] + oh) * p.out[2];
                  const T* xr = xc + (id * p.in[1] + ih) * p.in[2];
                  for (int64_t ow = rw.lo; ow < rw.hi; ++ow)
                    a[ow] += wv * static_cast<double>(xr[ow * p.stride[2] + offw]);
                }
              }
            }
          }
        }
      }
      T* yo = y + job * out_sz;
      for (int64_t i = 0; i < out_sz; ++i) yo[i] = static_cast<T>(acc[i]);
    }
  }
}

// Reference ConvTranspose: every input pixel scatters x * w into the output at
// o = i * stride + k * dilation - pad_begin. W is (C, M / group, k...).
template <typename T>
void conv_transpose_reference(const ConvProblem& p, const T* x, const T* w, const T* b, T* y) {
  const int64_t cg = p.in_channels / p.group, mg = p.out_channels / p.group;
  const int64_t in_sz = p.in[0] * p.in[1] * p.in[2];
  const int64_t out_sz = p.out[0] * p.out[1] * p.out[2];
  const int64_t k_sz = p.kernel[0] * p.kernel[1] * p.kernel[2];
  const int64_t nm = p.batch * p.out_channels;
#pragma omp parallel
  {
    std::vector<double> acc(static_cast<size_t>(out_sz));
#pragma omp for schedule(dynamic, 1)
    for (int64_t job = 0; job < nm; ++job) {
      const int64_t n = job / p.out_channels, m = job % p.out_channels, g = m / mg;
      std::fill(acc.begin(), acc.end(), b ? static_cast<double>(b[m]) : 0.0);
      for (int64_t c = 0; c < cg; ++c) {
        const int64_t ci = g * cg + c;
        const T* xc = x + (n * p.in_channels + ci) * in_sz;
        const T* wk = w + (ci * mg + m % mg) * k_sz;
        for (int64_t kd = 0; kd < p.kernel[0]; ++kd) {
          const int64_t offd = kd * p.dilation[0] - p.pad_begin[0];
          for (int64_t kh = 0; kh < p.kernel[1]; ++kh) {
            const int64_t offh = kh * p.dilation[1] - p.pad_begin[1];
            for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
              const int64_t offw = kw * p.dilation[2] - p.pad_begin[2];
              const double wv = static_cast<double>(wk[(kd * p.kernel[1] + kh) * p.kernel[2] + kw]);
              for (int64_t id = 0; id < p.in[0]; ++id) {
                const int64_t od = id * p.stride[0] + offd;
                if (od < 0 || od >= p.out[0]) continue;
                for (int64_t ih = 0; ih < p.in[1]; ++ih) {
                  const int64_t oh = ih * p.stride[1] + offh;
                  if (oh < 0 || oh >= p.out[1]) continue;
                  double* a = acc.data() + (od * p.out[1] + oh) * p.out[2];
                  const T* xr = xc + (id * p.in[1] + ih) * p.in[2];
                  for (int64_t iw = 0; iw < p.in[2]; ++iw) {
                    const int64_t ow = iw * p.stride[2] + offw;
                    if (ow >= 0 && ow < p.out[2]) a[ow] += wv * static_cast<double>(xr[iw]);
                  }
                }
              }
            }
          }
        }
      }
      T* yo = y + job * out_sz;
      for (int64_t i = 0; i < out_sz; ++i) yo[i] = static_cast<T>(acc[i]);
    }
  }
}

// Validates a Conv / ConvTranspose node's inputs and attributes and fills its problem and
// output shape.
// x_shape: X's shape channels-first ([N, C, spatial...]).
ConvProblem make_problem(const KernelContext& ctx, bool transpose, const Shape& x_shape,
                         Shape& out_shape) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  const Tensor& w_in = ctx.input(1);
  const Tensor* b_in = ctx.has_input(2) ? ctx.inputs[2] : nullptr;
  const DataType dt = x_in.dtype();
  const auto x_dim = [&](size_t i) { return x_shape[i]; };
  require_float(node, dt, "input X");
  TRT_CHECK(w_in.dtype() == dt && (!b_in || b_in->dtype() == dt), ErrorCode::kInvalidArgument,
            "{}: X, W and B must have the same dtype (got {}, {}, {})", node.describe(),
            dtype_name(dt), dtype_name(w_in.dtype()),
            b_in ? dtype_name(b_in->dtype()) : std::string_view("none"));
  TRT_CHECK_ARG(x_shape.size() >= 3 && w_in.rank() == x_shape.size(),
                "{}: X {} and W {} must have the same rank >= 3", node.describe(),
                shape_str(x_shape), shape_str(w_in.shape()));
  const size_t nsp = x_shape.size() - 2;
  TRT_CHECK(nsp <= 3, ErrorCode::kNotSupported,
            "{}: {}-D convolution is not supported (1-D, 2-D and 3-D are)", node.describe(), nsp);

  ConvProblem p;
  p.transpose = transpose;
  p.nspatial = nsp;
  p.group = node.attr_int("group", 1);
  TRT_CHECK_ARG(p.group >= 1, "{}: group {} must be positive", node.describe(), p.group);
  p.batch = x_dim(0);
  p.in_channels = x_dim(1);
  if (transpose) {
    TRT_CHECK_ARG(w_in.dim(0) == p.in_channels && p.in_channels % p.group == 0,
                  "{}: W {} must have X's {} input channels (divisible by group {}) in dim 0",
                  node.describe(), shape_str(w_in.shape()), p.in_channels, p.group);
    p.out_channels = w_in.dim(1) * p.group;
  } else {
    TRT_CHECK_ARG(w_in.dim(1) * p.group == p.in_channels && w_in.dim(0) % p.group == 0,
                  "{}: W {} does not match X's {} channels with group {}", node.describe(),
                  shape_str(w_in.shape()), p.in_channels, p.group);
    p.out_channels = w_in.dim(0);
  }
  if (b_in)
    TRT_CHECK_ARG(b_in->numel() == p.out_channels && b_in->rank() == 1,
                  "{}: bias B {} must be 1-D with {} elements", node.describe(),
                  shape_str(b_in->shape()), p.out_channels);
  const std::vector<int64_t> wk(w_in.shape().begin() + 2, w_in.shape().end());
  const ops::WindowSpec ws = ops::read_window_spec(node, nsp, &wk);
  out_shape = {p.batch, p.out_channels};
  const size_t o = 3 - nsp;  // leading padding axes
  for (size_t i = 0; i < nsp; ++i) {
    const ops::AxisGeometry g = transpose ? ops::conv_transpose_axis(ws, i, x_dim(2 + i), node)
                                          : ops::conv_axis(ws, i, x_dim(2 + i), node);
    p.in[o + i] = x_dim(2 + i);
    p.out[o + i] = g.out;
    p.kernel[o + i] = wk[i];
    p.stride[o + i] = ws.strides[i];
    p.dilation[o + i] = ws.dilations[i];
    p.pad_begin[o + i] = g.pad_begin;
    p.pad_end[o + i] = g.pad_end;
    out_shape.push_back(g.out);
  }
  return p;
}

template <typename T>
T apply_activation(const ConvPostOps& post, T v) {
  switch (post.act) {
    case ConvActivation::kNone:
      return v;
    case ConvActivation::kRelu:
      return v > T(0) ? v : T(0);
    case ConvActivation::kLeakyRelu:
      return v < T(0) ? static_cast<T>(post.alpha) * v : v;
    case ConvActivation::kClip:
      return std::min(std::max(v, static_cast<T>(post.alpha)), static_cast<T>(post.beta));
    case ConvActivation::kSigmoid:
      return T(1) / (T(1) + std::exp(-v));
    case ConvActivation::kHardSwish:
      return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5)));
    case ConvActivation::kSilu:  // as the graph computes it: x * Sigmoid(x)
      return v * (T(1) / (T(1) + std::exp(-v)));
  }
  return v;
}

// Reference post-ops on the computed output: y = act(y + residual).
template <typename T>
void apply_post_ops(const ConvPostOps& post, const T* residual, T* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i)
    y[i] = apply_activation(post, residual ? y[i] + residual[i] : y[i]);
}

// [N, C, spatial...] <-> [N, spatial..., C] shapes.
Shape channels_first_shape(const Shape& s) {
  Shape r{s[0], s.back()};
  r.insert(r.end(), s.begin() + 1, s.end() - 1);
  return r;
}
Shape channels_last_shape(const Shape& s) {
  Shape r{s[0]};
  r.insert(r.end(), s.begin() + 2, s.end());
  r.push_back(s[1]);
  return r;
}

void run_conv_channels_first(KernelContext& ctx, bool transpose, const ConvPostOps& post);

// A FusedConv with channels_last = 1: X, R and Y are [N, spatial..., C]. The oneDNN fast path
// reads and writes that layout directly; everything else runs channels-first on permuted
// copies.
void run_conv_channels_last(KernelContext& ctx, const ConvPostOps& post) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  const Tensor& w_in = ctx.input(1);
  const Tensor* b_in = ctx.has_input(2) ? ctx.inputs[2] : nullptr;
  const DataType dt = x_in.dtype();
  TRT_CHECK_ARG(x_in.rank() >= 3, "{}: X {} must have rank >= 3", node.describe(),
                shape_str(x_in.shape()));
  Shape out_shape;
  ConvProblem p = make_problem(ctx, false, channels_first_shape(x_in.shape()), out_shape);
  p.tactic = node.attr_string("tactic", "");
  const Shape y_shape = channels_last_shape(out_shape);
  if (post.residual)
    TRT_CHECK_ARG(post.residual->dtype() == dt && post.residual->shape() == y_shape,
                  "{}: residual {} {} must have the output's dtype and shape {} {}",
                  node.describe(), dtype_name(post.residual->dtype()),
                  shape_str(post.residual->shape()), dtype_name(dt), shape_str(y_shape));
  if (dt == DataType::kFloat32 && !ctx.use_reference && shape_numel(out_shape) > 0) {
    ctx.outputs.at(0) = residual_output_buffer(ctx, post.residual, dt, y_shape);
    if (onednn_conv(p, x_in, w_in, b_in, ctx.outputs[0], post, ctx.input_is_constant(1),
                    {ActLayout::kChannelsLast, ActLayout::kChannelsLast}))
      return;
  }
  const Tensor xf = permute_channels(x_in, false);
  const Tensor rf = post.residual ? permute_channels(*post.residual, false) : Tensor();
  KernelContext sub{
      node, ctx.opset, {&xf, &w_in, b_in}, {Tensor()}, ctx.use_reference, ctx.constant_inputs, {}};
  ConvPostOps first = post;
  first.residual = post.residual ? &rf : nullptr;
  run_conv_channels_first(sub, false, first);
  ctx.outputs.at(0) = permute_channels(sub.outputs.at(0), true);
}

// A 3x3 or 5x5 depthwise problem on blocked tensors through blocked_depthwise.h, when it takes it.
bool run_blocked_depthwise(const ConvProblem& p, const Tensor& x, const Tensor& w, const Tensor* b,
                           const ConvPostOps& post, bool cache_weights, Tensor& y) {
  if (p.nspatial != 2 || p.group != p.in_channels || p.out_channels != p.in_channels ||
      p.kernel[1] != p.kernel[2] || p.stride[1] != p.stride[2] || p.dilation[1] != 1 ||
      p.dilation[2] != 1 || w.dtype() != DataType::kFloat32 ||
      (b && b->dtype() != DataType::kFloat32))
    return false;
  BlockedDepthwise d;
  d.batch = p.batch;
  d.channels = p.in_channels;
  d.height = p.in[1];
  d.width = p.in[2];
  d.out_height = p.out[1];
  d.out_width = p.out[2];
  d.kernel = p.kernel[1];
  d.stride = p.stride[1];
  d.pad_top = p.pad_begin[1];
  d.pad_left = p.pad_begin[2];
  d.act = post.act;
  d.alpha = post.alpha;
  d.beta = post.beta;
  if (!blocked_depthwise_supported(d)) return false;
  blocked_depthwise(d, x.data<float>(), w, b, cache_weights, y.data<float>());
  return true;
}

// A FusedConv with blocked = 1: X (unless plain_input = 1), R and Y in the blocked layout
// (ops/blocked_layout.h), X's channels from W. The oneDNN fast path reads and writes them
// directly; everything else runs channels-first on converted copies.
void run_conv_blocked(KernelContext& ctx, const ConvPostOps& post) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  const Tensor& w_in = ctx.input(1);
  const Tensor* b_in = ctx.has_input(2) ? ctx.inputs[2] : nullptr;
  const bool plain_input = node.attr_int("plain_input", 0) != 0;
  const int64_t channels = w_in.rank() >= 2 ? w_in.dim(1) * node.attr_int("group", 1) : 0;
  TRT_CHECK_ARG(x_in.dtype() == DataType::kFloat32 && x_in.rank() >= (plain_input ? 3 : 4) &&
                    (plain_input || (x_in.shape().back() == ops::kChannelBlock &&
                                     x_in.dim(1) == ops::channel_blocks(channels))),
                "{}: X {} {} is not a float32 {} tensor of {} channels", node.describe(),
                dtype_name(x_in.dtype()), shape_str(x_in.shape()),
                plain_input ? "plain" : "blocked", channels);
  const Shape x_shape = plain_input ? x_in.shape() : ops::unblocked_shape(x_in.shape(), channels);
  Shape out_shape;
  ConvProblem p = make_problem(ctx, false, x_shape, out_shape);
  p.tactic = node.attr_string("tactic", "");  // the builder's timed choice, as in the other layouts
  const Shape y_shape = ops::blocked_shape(out_shape);
  if (post.residual)
    TRT_CHECK_ARG(post.residual->dtype() == DataType::kFloat32 && post.residual->shape() == y_shape,
                  "{}: residual {} {} must be float32 {}", node.describe(),
                  dtype_name(post.residual->dtype()), shape_str(post.residual->shape()),
                  shape_str(y_shape));
  if (!ctx.use_reference && shape_numel(out_shape) > 0) {
    ctx.outputs.at(0) = residual_output_buffer(ctx, post.residual, DataType::kFloat32, y_shape);
    if (!plain_input && !post.residual &&
        run_blocked_depthwise(p, x_in, w_in, b_in, post,
                              ctx.input_is_constant(1) && ctx.input_is_constant(2), ctx.outputs[0]))
      return;
    const ConvLayouts l{plain_input ? ActLayout::kPlain : ActLayout::kBlocked16,
                        ActLayout::kBlocked16};
    if (onednn_conv(p, x_in, w_in, b_in, ctx.outputs[0], post, ctx.input_is_constant(1), l)) return;
  }
  const Tensor xf = plain_input ? x_in : from_blocked(x_in, channels);
  const Tensor rf = post.residual ? from_blocked(*post.residual, out_shape[1]) : Tensor();
  KernelContext sub{
      node, ctx.opset, {&xf, &w_in, b_in}, {Tensor()}, ctx.use_reference, ctx.constant_inputs, {}};
  ConvPostOps first = post;
  first.residual = post.residual ? &rf : nullptr;
  run_conv_channels_first(sub, false, first);
  ctx.outputs.at(0) = to_blocked(sub.outputs.at(0));
}

void run_conv(KernelContext& ctx, bool transpose, const ConvPostOps& post = {}) {
  if (!transpose && ctx.node.attr_int("blocked", 0) != 0) {
    run_conv_blocked(ctx, post);
    return;
  }
  if (!transpose && ctx.node.attr_int("channels_last", 0) != 0) {
    run_conv_channels_last(ctx, post);
    return;
  }
  run_conv_channels_first(ctx, transpose, post);
}

void run_conv_channels_first(KernelContext& ctx, bool transpose, const ConvPostOps& post) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  const Tensor& w_in = ctx.input(1);
  const Tensor* b_in = ctx.has_input(2) ? ctx.inputs[2] : nullptr;
  const DataType dt = x_in.dtype();
  Shape out_shape;
  ConvProblem p = make_problem(ctx, transpose, x_in.shape(), out_shape);
  p.tactic = node.attr_string("tactic", "");
  if (post.residual) {
    TRT_CHECK_ARG(post.residual->dtype() == dt && post.residual->shape() == out_shape,
                  "{}: residual {} {} must have the output's dtype and shape {} {}",
                  node.describe(), dtype_name(post.residual->dtype()),
                  shape_str(post.residual->shape()), dtype_name(dt), shape_str(out_shape));
  }

  if (dt == DataType::kFloat32 && !ctx.use_reference && shape_numel(out_shape) > 0) {
    // oneDNN writes every element (after the residual copy, if any): no zero-fill needed.
    ctx.outputs.at(0) = residual_output_buffer(ctx, post.residual, dt, out_shape);
    if (onednn_conv(p, x_in, w_in, b_in, ctx.outputs[0], post, ctx.input_is_constant(1))) return;
  }
  const Tensor x = to_compute(x_in, node, "input X");
  const Tensor w = to_compute(w_in, node, "weights W");
  const Tensor b = b_in ? to_compute(*b_in, node, "bias B") : Tensor();
  Tensor y(x.dtype(), out_shape);
  if (x.dtype() == DataType::kFloat64) {
    auto fn = transpose ? conv_transpose_reference<double> : conv_reference<double>;
    fn(p, x.data<double>(), w.data<double>(), b_in ? b.data<double>() : nullptr, y.data<double>());
  } else {
    auto fn = transpose ? conv_transpose_reference<float> : conv_reference<float>;
    fn(p, x.data<float>(), w.data<float>(), b_in ? b.data<float>() : nullptr, y.data<float>());
  }
  if (post.residual || post.act != ConvActivation::kNone) {
    const Tensor r = post.residual ? to_compute(*post.residual, node, "residual") : Tensor();
    if (y.dtype() == DataType::kFloat64)
      apply_post_ops(post, post.residual ? r.data<double>() : nullptr, y.data<double>(), y.numel());
    else
      apply_post_ops(post, post.residual ? r.data<float>() : nullptr, y.data<float>(), y.numel());
  }
  set_output_from(ctx, 0, dt, y);
}

ConvPostOps read_post_ops(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  ConvPostOps post;
  post.residual = ctx.has_input(3) ? ctx.inputs[3] : nullptr;
  const ops::FusedActivationAttr a = ops::read_fused_activation(node);
  post.act = a.kind;
  post.alpha = a.alpha;
  post.beta = a.beta;
  return post;
}

}  // namespace

Tensor residual_output_buffer(const KernelContext& ctx, const Tensor* residual, DataType dt,
                              const Shape& shape) {
  const Tensor& x = ctx.input(0);
  if (residual && ctx.input_is_donated(3) && residual == ctx.inputs[3] && residual->dtype() == dt &&
      residual->shape() == shape && residual->raw() != x.raw())
    return *residual;
  return Tensor::uninitialized(dt, shape);
}

void conv_kernel(KernelContext& ctx) {
  run_conv(ctx, false);
}
void conv_transpose_kernel(KernelContext& ctx) {
  run_conv(ctx, true);
}
void fused_conv_kernel(KernelContext& ctx) {
  run_conv(ctx, false, read_post_ops(ctx));
}

}  // namespace trtutils::cpu::nn
