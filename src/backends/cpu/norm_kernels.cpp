// BatchNormalization (inference), InstanceNormalization and LayerNormalization on the CPU.
// Statistics and coefficients are computed in double (two-pass mean / variance).
#include <cmath>
#include <type_traits>
#include <vector>

#include "backends/cpu/nn_kernels.h"
#include "backends/cpu/onednn_layer_norm.h"
#include "core/check.h"
#include "ops/blocked_layout.h"
#include "ops/op_registry.h"

namespace trtutils::cpu::nn {

namespace {

bool output_requested(const KernelContext& ctx, size_t i) {
  return i < ctx.node.outputs.size() && !ctx.node.outputs[i].empty();
}

// y = x * a[p] + b[p] where p is the channel (per_element = false) or the position inside one
// sample (per_element = true, BatchNormalization with spatial = 0).
template <typename T>
void scale_shift(const T* x, T* y, int64_t n, int64_t c, int64_t inner,
                 const std::vector<double>& a, const std::vector<double>& b, bool per_element) {
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < n * c; ++nc) {
    const int64_t ch = nc % c;
    const T* xp = x + nc * inner;
    T* yp = y + nc * inner;
    for (int64_t i = 0; i < inner; ++i) {
      const size_t k = per_element ? static_cast<size_t>(ch * inner + i) : static_cast<size_t>(ch);
      yp[i] = static_cast<T>(static_cast<double>(xp[i]) * a[k] + b[k]);
    }
  }
}

// Mean and biased variance of v[0..n) in double.
template <typename T>
void moments(const T* v, int64_t n, double& mean, double& var) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(v[i]);
  mean = n > 0 ? s / static_cast<double>(n) : 0.0;
  double q = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(v[i]) - mean;
    q += d * d;
  }
  var = n > 0 ? q / static_cast<double>(n) : 0.0;
}

template <typename T>
void instance_norm(const T* x, T* y, int64_t n, int64_t c, int64_t inner,
                   const std::vector<double>& scale, const std::vector<double>& bias, double eps) {
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < n * c; ++nc) {
    const int64_t ch = nc % c;
    double mean, var;
    moments(x + nc * inner, inner, mean, var);
    const double a = scale[ch] / std::sqrt(var + eps);
    const double b = bias[ch] - mean * a;
    for (int64_t i = 0; i < inner; ++i)
      y[nc * inner + i] = static_cast<T>(static_cast<double>(x[nc * inner + i]) * a + b);
  }
}

// Broadcasts a (unidirectionally broadcastable) parameter tensor to `shape`, as doubles.
std::vector<double> broadcast_param(const Tensor& t, const Shape& shape, const ir::Node& node,
                                    const char* what) {
  const Shape& ts = t.shape();
  TRT_CHECK_ARG(ts.size() <= shape.size(), "{}: {} {} cannot be broadcast to {}", node.describe(),
                what, shape_str(ts), shape_str(shape));
  const size_t off = shape.size() - ts.size();
  std::vector<int64_t> strides(shape.size(), 0);
  int64_t acc = 1;
  for (size_t i = ts.size(); i-- > 0;) {
    TRT_CHECK_ARG(ts[i] == 1 || ts[i] == shape[off + i], "{}: {} {} cannot be broadcast to {}",
                  node.describe(), what, shape_str(ts), shape_str(shape));
    strides[off + i] = ts[i] == 1 ? 0 : acc;
    acc *= ts[i];
  }
  const std::vector<double> v = to_doubles(t);
  const int64_t total = shape_numel(shape);
  std::vector<double> r(static_cast<size_t>(total));
  for (int64_t j = 0; j < total; ++j) {
    int64_t rem = j, src = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      src += (rem % shape[d]) * strides[d];
      rem /= shape[d];
    }
    r[j] = v[src];
  }
  return r;
}

template <typename T, typename S>
void layer_norm(const T* x, T* y, int64_t rows, int64_t d, const std::vector<double>& scale,
                const std::vector<double>& bias, double eps, S* mean_out, S* inv_out) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    double mean, var;
    moments(x + r * d, d, mean, var);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < d; ++j) {
      const double v = (static_cast<double>(x[r * d + j]) - mean) * inv * scale[j];
      y[r * d + j] = static_cast<T>(bias.empty() ? v : v + bias[j]);
    }
    if (mean_out) mean_out[r] = static_cast<S>(mean);
    if (inv_out) inv_out[r] = static_cast<S>(inv);
  }
}

}  // namespace

// BatchNormalization of a blocked X [N, C / 16, spatial..., 16] (conv_blocked_layout): y = a[c] x
// + b[c] on channel c = 16 block + lane, zero on the lanes past C. a and b: C values.
static void batch_norm_blocked(KernelContext& ctx, const std::vector<double>& a,
                               const std::vector<double>& b) {
  const Tensor& x = ctx.input(0);
  const int64_t c = static_cast<int64_t>(a.size()), blocks = ops::channel_blocks(c);
  TRT_CHECK_ARG(x.dtype() == DataType::kFloat32 && x.rank() >= 4 && x.dim(1) == blocks &&
                    x.shape().back() == 16,
                "{}: a blocked X must be float32 [N, {}, spatial..., 16], got {} {}",
                ctx.node.describe(), blocks, dtype_name(x.dtype()), shape_str(x.shape()));
  std::vector<float> sa(static_cast<size_t>(blocks * 16), 0.0f), sb(sa.size(), 0.0f);
  for (int64_t k = 0; k < c; ++k) {
    sa[k] = static_cast<float>(a[k]);
    sb[k] = static_cast<float>(b[k]);
  }
  Tensor& y = ctx.make_output(0, DataType::kFloat32, x.shape());
  const int64_t planes = x.dim(0) * blocks, pixels = x.numel() / (planes * 16);
  const float* px = x.data<float>();
  float* py = y.data<float>();
#pragma omp parallel for schedule(static) if (x.numel() > (1 << 15))
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* ca = sa.data() + (pl % blocks) * 16;
    const float* cb = sb.data() + (pl % blocks) * 16;
    for (int64_t i = pl * pixels; i < (pl + 1) * pixels; ++i)
      for (int64_t j = 0; j < 16; ++j) py[i * 16 + j] = px[i * 16 + j] * ca[j] + cb[j];
  }
}

void batch_norm_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  TRT_CHECK(node.attr_int("training_mode", 0) == 0, ErrorCode::kNotSupported,
            "{}: training_mode=1 is not supported (inference only); export the model in eval mode",
            node.describe());
  for (size_t o = 1; o < node.outputs.size(); ++o)
    TRT_CHECK(!output_requested(ctx, o), ErrorCode::kNotSupported,
              "{}: output {} (training statistics) is not supported; only Y is computed",
              node.describe(), o);
  const Tensor& x_in = ctx.input(0);
  TRT_CHECK_ARG(x_in.rank() >= 2, "{}: input X {} must have rank >= 2", node.describe(),
                shape_str(x_in.shape()));
  // Blocked (conv_blocked_layout): X's axis 1 counts blocks of 16 channels; C from the scale.
  const bool blocked = node.attr_int("blocked", 0) != 0;
  const int64_t n = x_in.dim(0), c = blocked ? ctx.input(1).numel() : x_in.dim(1);
  const int64_t inner = blocked ? 1 : c * n > 0 ? x_in.numel() / (n * c) : 0;
  const double eps = node.attr_float("epsilon", 1e-5f);
  const char* names[] = {"", "scale", "B", "mean", "var"};
  std::vector<double> prm[5];
  bool per_element = false;
  for (int i = 1; i <= 4; ++i) {
    const Tensor& t = ctx.input(i);
    require_float(node, t.dtype(), names[i]);
    if (t.numel() != c) {
      // spatial = 0 (opset 7-8): parameters are per element of one sample, shape (C, D1, ...).
      TRT_CHECK_ARG(t.numel() == c * inner && c * inner != c,
                    "{}: {} has shape {}; expected [{}] (or X's shape without N for spatial=0)",
                    node.describe(), names[i], shape_str(t.shape()), c);
      per_element = true;
    }
    prm[i] = to_doubles(t);
  }
  for (int i = 1; i <= 4; ++i)
    TRT_CHECK_ARG(static_cast<int64_t>(prm[i].size()) == (per_element ? c * inner : c),
                  "{}: scale, B, mean and var must all have the same size", node.describe());
  std::vector<double> a(prm[1].size()), b(prm[1].size());
  for (size_t k = 0; k < a.size(); ++k) {
    a[k] = prm[1][k] / std::sqrt(prm[4][k] + eps);
    b[k] = prm[2][k] - prm[3][k] * a[k];
  }
  if (blocked) {
    batch_norm_blocked(ctx, a, b);
    return;
  }
  const Tensor x = to_compute(x_in, node, "input X");
  Tensor y(x.dtype(), x.shape());
  if (x.dtype() == DataType::kFloat64)
    scale_shift(x.data<double>(), y.data<double>(), n, c, inner, a, b, per_element);
  else
    scale_shift(x.data<float>(), y.data<float>(), n, c, inner, a, b, per_element);
  set_output_from(ctx, 0, x_in.dtype(), y);
}

void instance_norm_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  TRT_CHECK_ARG(x_in.rank() >= 3, "{}: input X {} must have rank >= 3 (N, C, spatial...)",
                node.describe(), shape_str(x_in.shape()));
  const int64_t n = x_in.dim(0), c = x_in.dim(1);
  const int64_t inner = c * n > 0 ? x_in.numel() / (n * c) : 0;
  const Tensor& s = ctx.input(1);
  const Tensor& bt = ctx.input(2);
  require_float(node, s.dtype(), "scale");
  require_float(node, bt.dtype(), "B");
  TRT_CHECK_ARG(s.numel() == c && bt.numel() == c,
                "{}: scale {} and B {} must have {} elements (one per channel)", node.describe(),
                shape_str(s.shape()), shape_str(bt.shape()), c);
  const double eps = node.attr_float("epsilon", 1e-5f);
  const Tensor x = to_compute(x_in, node, "input X");
  Tensor y(x.dtype(), x.shape());
  if (x.dtype() == DataType::kFloat64)
    instance_norm(x.data<double>(), y.data<double>(), n, c, inner, to_doubles(s), to_doubles(bt),
                  eps);
  else
    instance_norm(x.data<float>(), y.data<float>(), n, c, inner, to_doubles(s), to_doubles(bt),
                  eps);
  set_output_from(ctx, 0, x_in.dtype(), y);
}

// GroupNormalization (opsets 18, 21): mean and variance per sample and group of C / num_groups
// channels; scale and bias per channel (opset 21; also accepted at 18) or per group (opset 18's
// text). stash_type float32 or float64: statistics in double either way.
void group_norm_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  TRT_CHECK_ARG(x_in.rank() >= 3, "{}: input X {} must have rank >= 3 (N, C, spatial...)",
                node.describe(), shape_str(x_in.shape()));
  const int64_t n = x_in.dim(0), c = x_in.dim(1);
  const int64_t g = node.attr_int("num_groups", 0);
  TRT_CHECK_ARG(g >= 1 && c % g == 0, "{}: num_groups {} must divide the {} channels",
                node.describe(), g, c);
  const Tensor& s = ctx.input(1);
  const Tensor& bt = ctx.input(2);
  require_float(node, s.dtype(), "scale");
  require_float(node, bt.dtype(), "bias");
  TRT_CHECK_ARG((s.numel() == c || s.numel() == g) && bt.numel() == s.numel(),
                "{}: scale {} and bias {} must have {} (channels) or {} (groups) elements",
                node.describe(), shape_str(s.shape()), shape_str(bt.shape()), c, g);
  const double eps = node.attr_float("epsilon", 1e-5f);
  const int64_t inner = n * c > 0 ? x_in.numel() / (n * c) : 0;
  const int64_t per_group = c / g * inner;
  const Tensor x = to_compute(x_in, node, "input X");
  Tensor y(x.dtype(), x.shape());
  const std::vector<double> sv = to_doubles(s), bv = to_doubles(bt);
  const bool per_channel = s.numel() == c;
  auto norm = [&](const auto* px, auto* py) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(px)>>;
#pragma omp parallel for schedule(static)
    for (int64_t ng = 0; ng < n * g; ++ng) {
      double mean, var;
      moments(px + ng * per_group, per_group, mean, var);
      const double rstd = 1.0 / std::sqrt(var + eps);
      for (int64_t e = 0; e < per_group; ++e) {
        const int64_t ch = (ng % g) * (c / g) + e / inner;
        const size_t k = static_cast<size_t>(per_channel ? ch : ng % g);
        const int64_t p = ng * per_group + e;
        py[p] = static_cast<T>((static_cast<double>(px[p]) - mean) * rstd * sv[k] + bv[k]);
      }
    }
  };
  if (x.dtype() == DataType::kFloat64)
    norm(x.data<double>(), y.data<double>());
  else
    norm(x.data<float>(), y.data<float>());
  set_output_from(ctx, 0, x_in.dtype(), y);
}

// The oneDNN fast path: float32 X, Scale and B of d values each, float32 stash, only Y wanted.
static bool try_onednn_layer_norm(KernelContext& ctx, DataType stash, int64_t rows, int64_t d,
                                  double eps) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* bias = ctx.has_input(2) ? ctx.inputs[2] : nullptr;
  if (ctx.use_reference || x.dtype() != DataType::kFloat32 || stash != DataType::kFloat32 ||
      output_requested(ctx, 1) || output_requested(ctx, 2) || scale.dtype() != DataType::kFloat32 ||
      scale.numel() != d || (bias && (bias->dtype() != DataType::kFloat32 || bias->numel() != d)))
    return false;
  Tensor y = Tensor::uninitialized(DataType::kFloat32, x.shape());
  if (!onednn_layer_norm(x.data<float>(), y.data<float>(), rows, d, scale.data<float>(),
                         bias ? bias->data<float>() : nullptr, static_cast<float>(eps)))
    return false;
  ctx.outputs.at(0) = std::move(y);
  return true;
}

void layer_norm_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x_in = ctx.input(0);
  const int64_t r = static_cast<int64_t>(x_in.rank());
  TRT_CHECK_ARG(r >= 1, "{}: input X must have rank >= 1", node.describe());
  const int64_t axis = ops::normalize_axis(node.attr_int("axis", -1), r, node);
  const double eps = node.attr_float("epsilon", 1e-5f);
  const auto stash = dtype_from_onnx(static_cast<int32_t>(node.attr_int("stash_type", 1)));
  TRT_CHECK(stash && (*stash == DataType::kFloat32 || *stash == DataType::kFloat64),
            ErrorCode::kNotSupported, "{}: stash_type {} is not supported (float32 or float64)",
            node.describe(), node.attr_int("stash_type", 1));
  const Shape norm_shape(x_in.shape().begin() + axis, x_in.shape().end());
  const int64_t d = shape_numel(norm_shape);
  const int64_t rows = d > 0
                           ? x_in.numel() / d
                           : shape_numel(Shape(x_in.shape().begin(), x_in.shape().begin() + axis));
  require_float(node, ctx.input(1).dtype(), "Scale");
  if (try_onednn_layer_norm(ctx, *stash, rows, d, eps)) return;
  const std::vector<double> scale = broadcast_param(ctx.input(1), norm_shape, node, "Scale");
  std::vector<double> bias;
  if (ctx.has_input(2)) {
    require_float(node, ctx.input(2).dtype(), "B");
    bias = broadcast_param(ctx.input(2), norm_shape, node, "B");
  }
  Shape stat_shape = x_in.shape();
  for (int64_t i = axis; i < r; ++i) stat_shape[i] = 1;
  void* mean_out =
      output_requested(ctx, 1) ? ctx.make_output(1, *stash, stat_shape).raw() : nullptr;
  void* inv_out = output_requested(ctx, 2) ? ctx.make_output(2, *stash, stat_shape).raw() : nullptr;
  const Tensor x = to_compute(x_in, node, "input X");
  Tensor y(x.dtype(), x.shape());
  auto run = [&](auto* stash_ptr) {
    using S = std::remove_pointer_t<decltype(stash_ptr)>;
    S* m = static_cast<S*>(mean_out);
    S* v = static_cast<S*>(inv_out);
    if (x.dtype() == DataType::kFloat64)
      layer_norm(x.data<double>(), y.data<double>(), rows, d, scale, bias, eps, m, v);
    else
      layer_norm(x.data<float>(), y.data<float>(), rows, d, scale, bias, eps, m, v);
  };
  if (*stash == DataType::kFloat64)
    run(static_cast<double*>(nullptr));
  else
    run(static_cast<float*>(nullptr));
  set_output_from(ctx, 0, x_in.dtype(), y);
}

}  // namespace trtutils::cpu::nn
