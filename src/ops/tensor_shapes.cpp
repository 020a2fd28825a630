#include "ops/tensor_shapes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::ops {

namespace {

std::vector<int64_t> int_values(const Tensor* t, const ir::Node& node, const char* what) {
  TRT_INTERNAL_CHECK(t != nullptr);
  TRT_CHECK(t->dtype() == DataType::kInt64 || t->dtype() == DataType::kInt32,
            ErrorCode::kInvalidArgument, "{}: input '{}' must be int32 or int64, got {}",
            node.describe(), what, dtype_name(t->dtype()));
  TRT_CHECK(t->rank() <= 1, ErrorCode::kInvalidArgument, "{}: input '{}' must be 1-D, got shape {}",
            node.describe(), what, shape_str(t->shape()));
  return t->to_int64_vector();
}

bool given(const Tensor* t) {
  return t != nullptr && t->numel() > 0;
}

}  // namespace

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                    const ir::Node& node) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(a, rank, node);
    TRT_CHECK(std::find(out.begin(), out.end(), n) == out.end(), ErrorCode::kInvalidArgument,
              "{}: axis {} is repeated", node.describe(), a);
    out.push_back(n);
  }
  return out;
}

// ---- Slice ------------------------------------------------------------------------------------

std::optional<SliceArgs> slice_args(const ir::Node& node, int64_t opset, const Tensor* starts,
                                    const Tensor* ends, const Tensor* axes, const Tensor* steps) {
  SliceArgs a;
  if (opset < 10) {
    TRT_CHECK(node.has_attr("starts") && node.has_attr("ends"), ErrorCode::kInvalidArgument,
              "{}: attributes 'starts' and 'ends' are required before opset 10", node.describe());
    a.starts = node.attr_ints("starts");
    a.ends = node.attr_ints("ends");
    a.axes = node.attr_ints("axes");
  } else {
    if (!starts || !ends) return std::nullopt;
    if (node.has_input(3) && !axes) return std::nullopt;
    if (node.has_input(4) && !steps) return std::nullopt;
    a.starts = int_values(starts, node, "starts");
    a.ends = int_values(ends, node, "ends");
    if (axes) a.axes = int_values(axes, node, "axes");
    if (steps) a.steps = int_values(steps, node, "steps");
  }
  TRT_CHECK(a.starts.size() == a.ends.size(), ErrorCode::kInvalidArgument,
            "{}: starts has {} values but ends has {}", node.describe(), a.starts.size(),
            a.ends.size());
  if (a.axes.empty())
    for (size_t i = 0; i < a.starts.size(); ++i) a.axes.push_back(static_cast<int64_t>(i));
  if (a.steps.empty()) a.steps.assign(a.starts.size(), 1);
  TRT_CHECK(a.axes.size() == a.starts.size() && a.steps.size() == a.starts.size(),
            ErrorCode::kInvalidArgument,
            "{}: starts, ends, axes and steps must have the same length ({}, {}, {}, {})",
            node.describe(), a.starts.size(), a.ends.size(), a.axes.size(), a.steps.size());
  for (int64_t s : a.steps)
    TRT_CHECK(s != 0, ErrorCode::kInvalidArgument, "{}: a step of 0 is not allowed",
              node.describe());
  return a;
}

SliceRange slice_range(int64_t dim, int64_t start, int64_t end, int64_t step) {
  SliceRange r;
  r.step = step;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    r.count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    // -step cannot overflow: step == INT64_MIN still gives count 1 when start > end
    const uint64_t s = static_cast<uint64_t>(-(step + 1)) + 1;
    r.count =
        start > end ? static_cast<int64_t>((static_cast<uint64_t>(start - end) + s - 1) / s) : 0;
  }
  r.start = r.count > 0 ? start : 0;
  return r;
}

// ---- Reshape ----------------------------------------------------------------------------------

ir::Dim dims_product(const ir::SymShape& s, size_t begin, size_t end) {
  int64_t p = 1;
  const ir::Dim* sym = nullptr;
  int non_static = 0;
  for (size_t i = begin; i < end; ++i) {
    if (s[i].is_static()) {
      p *= s[i].value;
    } else {
      ++non_static;
      sym = &s[i];
    }
  }
  if (non_static == 0) return ir::Dim(p);
  if (non_static == 1 && p == 1) return *sym;
  return ir::Dim();
}

ir::SymShape reshape_output(const ir::SymShape& in, const std::vector<int64_t>& target,
                            bool allowzero, const ir::Node& node) {
  ir::SymShape out(target.size());
  int infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    const int64_t t = target[i];
    if (t == -1) {
      TRT_CHECK(infer_at < 0, ErrorCode::kInvalidArgument,
                "{}: the target shape {} has more than one -1", node.describe(), shape_str(target));
      infer_at = static_cast<int>(i);
    } else if (t == 0 && !allowzero) {
      TRT_CHECK(i < in.size(), ErrorCode::kInvalidArgument,
                "{}: target shape {} copies dim {} (0) but the input {} has rank {}",
                node.describe(), shape_str(target), i, ir::sym_shape_str(in), in.size());
      out[i] = in[i];
    } else {
      TRT_CHECK(t >= 0, ErrorCode::kInvalidArgument, "{}: invalid dim {} in target shape {}",
                node.describe(), t, shape_str(target));
      out[i] = ir::Dim(t);
    }
  }
  // Static products and symbol multisets of both sides.
  int64_t in_static = 1;
  bool in_unknown = false;
  std::map<std::string, int> syms;
  for (const auto& d : in) {
    if (d.is_static()) {
      in_static *= d.value;
    } else if (!d.param.empty()) {
      ++syms[d.param];
    } else {
      in_unknown = true;
    }
  }
  int64_t out_static = 1;
  bool out_unknown = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(i) == infer_at) continue;
    const auto& d = out[i];
    if (d.is_static()) {
      out_static *= d.value;
    } else if (!d.param.empty() && syms[d.param] > 0) {
      --syms[d.param];
    } else {
      out_unknown = true;
    }
  }
  const bool syms_cancel =
      !in_unknown && !out_unknown &&
      std::all_of(syms.begin(), syms.end(), [](const auto& kv) { return kv.second == 0; });
  if (infer_at >= 0) {
    if (syms_cancel) {
      TRT_CHECK(out_static != 0 && in_static % out_static == 0, ErrorCode::kInvalidArgument,
                "{}: cannot reshape {} to {}: the element counts do not divide", node.describe(),
                ir::sym_shape_str(in), shape_str(target));
      out[infer_at] = ir::Dim(in_static / out_static);
    } else {
      // One symbol left over and the static parts equal: the -1 is that symbol
      // ([N, 3, 8, 8] -> [-1, 192] gives [N, 192]).
      std::string left;
      int left_count = 0;
      for (const auto& [name, count] : syms) {
        left_count += count;
        if (count == 1) left = name;
      }
      const bool one_symbol = !in_unknown && !out_unknown && left_count == 1 && !left.empty();
      out[infer_at] = one_symbol && in_static == out_static ? ir::Dim(left) : ir::Dim();
    }
  } else if (syms_cancel) {
    TRT_CHECK(in_static == out_static, ErrorCode::kInvalidArgument,
              "{}: cannot reshape {} ({} elements) to {} ({} elements)", node.describe(),
              ir::sym_shape_str(in), in_static, ir::sym_shape_str(out), out_static);
  }
  return out;
}

// ---- Split ------------------------------------------------------------------------------------

std::vector<int64_t> split_sizes(const ir::Node& node, int64_t opset, const Tensor* split,
                                 int64_t dim, size_t num_outputs) {
  std::vector<int64_t> sizes;
  if (opset < 13) {
    sizes = node.attr_ints("split");
  } else if (split) {
    sizes = int_values(split, node, "split");
  }
  const int64_t n = static_cast<int64_t>(num_outputs);
  if (!sizes.empty() || (split && opset >= 13)) {
    TRT_CHECK(sizes.size() == num_outputs, ErrorCode::kInvalidArgument,
              "{}: 'split' has {} entries but the node has {} outputs", node.describe(),
              sizes.size(), num_outputs);
    int64_t total = 0;
    for (int64_t s : sizes) {
      TRT_CHECK(s >= 0, ErrorCode::kInvalidArgument, "{}: negative split size {}", node.describe(),
                s);
      total += s;
    }
    TRT_CHECK(total == dim, ErrorCode::kInvalidArgument,
              "{}: split sizes {} sum to {} but the axis has size {}", node.describe(),
              shape_str(sizes), total, dim);
    return sizes;
  }
  TRT_CHECK(n > 0, ErrorCode::kInvalidArgument, "{}: no outputs", node.describe());
  if (opset >= 18 && node.has_attr("num_outputs")) {
    const int64_t k = node.attr_int("num_outputs", 0);
    TRT_CHECK(k == n, ErrorCode::kInvalidArgument,
              "{}: num_outputs is {} but the node has {} outputs", node.describe(), k, n);
    // Chunks of ceil(dim / n); the last one takes what is left.
    const int64_t chunk = (dim + n - 1) / n;
    TRT_CHECK(chunk * (n - 1) <= dim, ErrorCode::kInvalidArgument,
              "{}: an axis of size {} cannot be split into {} chunks of {} with a smaller last one",
              node.describe(), dim, n, chunk);
    sizes.assign(num_outputs, chunk);
    sizes.back() = dim - chunk * (n - 1);
    return sizes;
  }
  TRT_CHECK(dim % n == 0, ErrorCode::kInvalidArgument,
            "{}: an axis of size {} cannot be split evenly into {} outputs; give 'split'",
            node.describe(), dim, n);
  sizes.assign(num_outputs, dim / n);
  return sizes;
}

// ---- Squeeze / Unsqueeze ------------------------------------------------------------------

std::optional<std::vector<int64_t>> squeeze_axes(const ir::Node& node, int64_t opset,
                                                 const Tensor* axes_input, bool* available) {
  *available = true;
  if (opset < 13) {
    if (!node.has_attr("axes")) return std::nullopt;
    return node.attr_ints("axes");
  }
  if (!node.has_input(1)) return std::nullopt;
  if (!axes_input) {
    *available = false;
    return std::nullopt;
  }
  return int_values(axes_input, node, "axes");
}

// ---- Pad --------------------------------------------------------------------------------------

PadMode pad_mode(const ir::Node& node, int64_t opset) {
  const std::string m = node.attr_string("mode", "constant");
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap" && opset >= 19) return PadMode::kWrap;
  TRT_THROW(ErrorCode::kNotSupported, "{}: pad mode '{}' is not supported at opset {}",
            node.describe(), m, opset);
}

std::optional<std::vector<int64_t>> pad_amounts(const ir::Node& node, int64_t opset, int64_t rank,
                                                const Tensor* pads, const Tensor* axes,
                                                bool axes_given) {
  std::vector<int64_t> p;
  if (opset < 11) {
    p = node.attr_ints(opset < 2 ? "paddings" : "pads");
  } else {
    if (!pads) return std::nullopt;
    p = int_values(pads, node, "pads");
  }
  std::vector<int64_t> ax;
  if (opset >= 18 && axes_given) {
    if (!axes) return std::nullopt;
    ax = normalize_axes(int_values(axes, node, "axes"), rank, node);
  } else {
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  const size_t k = ax.size();
  TRT_CHECK(p.size() == 2 * k, ErrorCode::kInvalidArgument,
            "{}: 'pads' has {} values but {} are needed (2 per padded axis)", node.describe(),
            p.size(), 2 * k);
  std::vector<int64_t> full(2 * static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < k; ++i) {
    full[ax[i]] = p[i];
    full[ax[i] + rank] = p[i + k];
  }
  return full;
}

// ---- Resize -------------------------------------------------------------------------------

ResizeAttrs resize_attrs(const ir::Node& node, int64_t opset) {
  ResizeAttrs a;
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode == "nearest") {
    a.mode = ResizeMode::kNearest;
  } else if (mode == "linear" || mode == "bilinear" || mode == "trilinear") {
    a.mode = ResizeMode::kLinear;
  } else if (mode == "cubic" && node.op_type == "Resize" && opset >= 11) {
    a.mode = ResizeMode::kCubic;
  } else {
    TRT_THROW(ErrorCode::kNotSupported, "{}: mode '{}' is not supported", node.describe(), mode);
  }
  if (node.op_type == "Upsample" || opset < 11) return a;  // asymmetric, simple nearest

  const std::string c = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (c == "half_pixel") {
    a.coord = CoordMode::kHalfPixel;
  } else if (c == "half_pixel_symmetric") {
    a.coord = CoordMode::kHalfPixelSymmetric;
  } else if (c == "pytorch_half_pixel") {
    a.coord = CoordMode::kPytorchHalfPixel;
  } else if (c == "align_corners") {
    a.coord = CoordMode::kAlignCorners;
  } else if (c == "asymmetric") {
    a.coord = CoordMode::kAsymmetric;
  } else if (c == "tf_half_pixel_for_nn") {
    a.coord = CoordMode::kTfHalfPixelForNN;  // removed at opset 13, still accepted
  } else if (c == "tf_crop_and_resize") {
    a.coord = CoordMode::kTfCropAndResize;
  } else {
    TRT_THROW(ErrorCode::kNotSupported, "{}: coordinate_transformation_mode '{}' is not supported",
              node.describe(), c);
  }
  const std::string n = node.attr_string("nearest_mode", "round_prefer_floor");
  if (n == "round_prefer_floor") {
    a.nearest = NearestMode::kRoundPreferFloor;
  } else if (n == "round_prefer_ceil") {
    a.nearest = NearestMode::kRoundPreferCeil;
  } else if (n == "floor") {
    a.nearest = NearestMode::kFloor;
  } else if (n == "ceil") {
    a.nearest = NearestMode::kCeil;
  } else {
    TRT_THROW(ErrorCode::kNotSupported, "{}: nearest_mode '{}' is not supported", node.describe(),
              n);
  }
  a.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  a.extrapolation_value = node.attr_float("extrapolation_value", 0.0f);
  TRT_CHECK(node.attr_int("antialias", 0) == 0, ErrorCode::kNotSupported,
            "{}: antialias=1 is not supported", node.describe());
  return a;
}

ResizeInputs resize_inputs(const ir::Node& node, int64_t opset) {
  ResizeInputs r;
  if (node.op_type == "Upsample") {
    if (opset >= 9) r.scales = 1;
  } else if (opset < 11) {
    r.scales = 1;
  } else {
    r.roi = 1;
    r.scales = 2;
    r.sizes = 3;
  }
  return r;
}

ResizePlan resize_plan(const ir::Node& node, int64_t opset, const Shape& in, const Tensor* roi,
                       const Tensor* scales_t, const Tensor* sizes_t) {
  const int64_t rank = static_cast<int64_t>(in.size());
  ResizePlan p;
  p.out = in;
  p.scales.assign(in.size(), 1.0f);
  p.roi_start.assign(in.size(), 0.0f);
  p.roi_end.assign(in.size(), 1.0f);

  std::vector<int64_t> axes;
  if (node.op_type == "Resize" && opset >= 18 && node.has_attr("axes")) {
    axes = normalize_axes(node.attr_ints("axes"), rank, node);
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  const size_t k = axes.size();

  std::vector<float> scales;
  if (node.op_type == "Upsample" && opset < 9) {
    scales = node.attr_floats("scales");
  } else if (given(scales_t)) {
    TRT_CHECK(dtype_is_float(scales_t->dtype()), ErrorCode::kInvalidArgument,
              "{}: scales must be float, got {}", node.describe(), dtype_name(scales_t->dtype()));
    scales = scales_t->to_float_vector();
  }
  const bool has_sizes = given(sizes_t);
  TRT_CHECK(scales.empty() != !has_sizes, ErrorCode::kInvalidArgument,
            "{}: exactly one of 'scales' and 'sizes' must be given (non-empty)", node.describe());

  if (given(roi)) {
    const std::vector<float> r = roi->to_float_vector();
    TRT_CHECK(r.size() == 2 * k, ErrorCode::kInvalidArgument, "{}: roi has {} values, expected {}",
              node.describe(), r.size(), 2 * k);
    for (size_t i = 0; i < k; ++i) {
      p.roi_start[axes[i]] = r[i];
      p.roi_end[axes[i]] = r[i + k];
    }
  }

  if (!scales.empty()) {
    TRT_CHECK(scales.size() == k, ErrorCode::kInvalidArgument,
              "{}: scales has {} values but the input {} needs {}", node.describe(), scales.size(),
              shape_str(in), k);
    for (size_t i = 0; i < k; ++i) {
      const int64_t a = axes[i];
      TRT_CHECK(scales[i] > 0 && std::isfinite(scales[i]), ErrorCode::kInvalidArgument,
                "{}: scale {} must be positive", node.describe(), scales[i]);
      p.scales[a] = scales[i];
      p.out[a] = static_cast<int64_t>(scales[i] * static_cast<float>(in[a]));
    }
    return p;
  }

  TRT_CHECK(sizes_t->dtype() == DataType::kInt64, ErrorCode::kInvalidArgument,
            "{}: sizes must be int64, got {}", node.describe(), dtype_name(sizes_t->dtype()));
  const std::vector<int64_t> sizes = sizes_t->to_int64_vector();
  TRT_CHECK(sizes.size() == k, ErrorCode::kInvalidArgument,
            "{}: sizes has {} values but the input {} needs {}", node.describe(), sizes.size(),
            shape_str(in), k);
  for (size_t i = 0; i < k; ++i) {
    const int64_t a = axes[i];
    TRT_CHECK(sizes[i] >= 0, ErrorCode::kInvalidArgument, "{}: negative size {}", node.describe(),
              sizes[i]);
    TRT_CHECK(in[a] > 0 || sizes[i] == 0, ErrorCode::kInvalidArgument,
              "{}: cannot resize the empty axis {} to size {}", node.describe(), a, sizes[i]);
    p.out[a] = sizes[i];
    p.scales[a] = in[a] > 0 ? static_cast<float>(sizes[i]) / static_cast<float>(in[a]) : 1.0f;
  }
  const std::string policy =
      opset >= 18 ? node.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
  if (policy == "stretch") return p;
  TRT_CHECK(policy == "not_larger" || policy == "not_smaller", ErrorCode::kNotSupported,
            "{}: keep_aspect_ratio_policy '{}' is not supported", node.describe(), policy);
  float scale = policy == "not_larger" ? std::numeric_limits<float>::max() : 0.0f;
  for (int64_t a : axes)
    scale = policy == "not_larger" ? std::min(scale, p.scales[a]) : std::max(scale, p.scales[a]);
  for (int64_t a : axes) {
    p.scales[a] = scale;
    p.out[a] = static_cast<int64_t>(std::round(scale * static_cast<float>(in[a])));
  }
  return p;
}

float resize_coordinate(CoordMode mode, float x, float scale, int64_t len_out, int64_t len_in,
                        float roi_start, float roi_end) {
  const float lo = static_cast<float>(len_out), li = static_cast<float>(len_in);
  switch (mode) {
    case CoordMode::kHalfPixel:
      return ((x + 0.5f) / scale) - 0.5f;
    case CoordMode::kHalfPixelSymmetric: {
      const float adjustment = lo / (scale * li);
      const float offset = li / 2 * (1 - adjustment);
      return static_cast<float>(offset + (x + 0.5) / scale - 0.5);
    }
    case CoordMode::kPytorchHalfPixel:
      return lo > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case CoordMode::kAlignCorners:
      return lo == 1 ? 0.0f : x * (li - 1) / (lo - 1);
    case CoordMode::kAsymmetric:
      return x / scale;
    case CoordMode::kTfHalfPixelForNN:
      return (x + 0.5f) / scale;
    case CoordMode::kTfCropAndResize:
      return lo > 1 ? roi_start * (li - 1) + (x * (roi_end - roi_start) * (li - 1)) / (lo - 1)
                    : static_cast<float>(0.5 * (roi_start + roi_end) * (li - 1));
  }
  return x;
}

AxisCoords axis_coords(const ResizeAttrs& at, int64_t in, int64_t out, float scale, float roi_start,
                       float roi_end) {
  AxisCoords c;
  c.identity = scale == 1.0f && in == out;
  c.x.resize(static_cast<size_t>(out));
  c.outside.resize(static_cast<size_t>(out), 0);
  for (int64_t o = 0; o < out; ++o) {
    const float xo = static_cast<float>(o);
    const float x =
        scale == 1.0f ? xo : resize_coordinate(at.coord, xo, scale, out, in, roi_start, roi_end);
    c.x[o] = x;
    if (at.coord == CoordMode::kTfCropAndResize && (x < 0 || x > static_cast<float>(in - 1)))
      c.outside[o] = 1;
  }
  return c;
}

LinearTaps linear_taps(const AxisCoords& c, int64_t in) {
  LinearTaps t;
  const size_t n = c.x.size();
  t.i1.resize(n);
  t.i2.resize(n);
  t.w1.resize(n);
  t.w2.resize(n);
  const float hi = static_cast<float>(in - 1);
  for (size_t o = 0; o < n; ++o) {
    const float x = std::max(0.0f, std::min(c.x[o], hi));
    const int64_t x1 = std::min(static_cast<int64_t>(x), in - 1);
    const int64_t x2 = std::min(x1 + 1, in - 1);
    t.i1[o] = x1;
    t.i2[o] = x2;
    t.w1[o] = x1 == x2 ? 0.5f : std::fabs(x - static_cast<float>(x2));
    t.w2[o] = x1 == x2 ? 0.5f : std::fabs(x - static_cast<float>(x1));
  }
  return t;
}

CubicTaps cubic_taps(const ResizeAttrs& at, const AxisCoords& c, int64_t in) {
  CubicTaps t;
  const size_t n = c.x.size();
  t.index.resize(4 * n);
  t.weight.resize(4 * n);
  const float a = at.cubic_a;
  for (size_t o = 0; o < n; ++o) {
    const float x = c.x[o];
    const float xf = std::floor(x);
    const int64_t xi = static_cast<int64_t>(xf);
    const float s = x - xf;
    float cf[4] = {((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a,
                   ((a + 2) * s - (a + 3)) * s * s + 1,
                   ((a + 2) * (1 - s) - (a + 3)) * (1 - s) * (1 - s) + 1,
                   ((a * (2 - s) - 5 * a) * (2 - s) + 8 * a) * (2 - s) - 4 * a};
    float sum = 1;
    if (at.exclude_outside) {
      sum = 0;
      for (int j = 0; j < 4; ++j) {
        const int64_t p = xi - 1 + j;
        if (p < 0 || p >= in) cf[j] = 0;
        sum += cf[j];
      }
    }
    for (int j = 0; j < 4; ++j) {
      t.index[4 * o + j] = std::clamp<int64_t>(xi - 1 + j, 0, in - 1);
      t.weight[4 * o + j] = cf[j] / sum;
    }
  }
  return t;
}

int64_t resize_nearest_index(NearestMode mode, float x, bool downsample) {
  switch (mode) {
    case NearestMode::kSimple:
      return downsample ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
    case NearestMode::kRoundPreferFloor:
      return x == std::floor(x) + 0.5f ? static_cast<int64_t>(std::floor(x))
                                       : static_cast<int64_t>(std::round(x));
    case NearestMode::kRoundPreferCeil:
      return x == std::floor(x) + 0.5f ? static_cast<int64_t>(std::ceil(x))
                                       : static_cast<int64_t>(std::round(x));
    case NearestMode::kFloor:
      return static_cast<int64_t>(std::floor(x));
    case NearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(x));
  }
  return 0;
}

// ---- Transpose / Range ------------------------------------------------------------------

std::vector<int64_t> transpose_perm(const ir::Node& node, size_t rank) {
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (perm.empty()) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  }
  TRT_CHECK(perm.size() == rank, ErrorCode::kInvalidArgument,
            "{}: perm has {} entries for an input of rank {}", node.describe(), perm.size(), rank);
  std::vector<bool> seen(rank, false);
  for (auto& p : perm) {
    p = normalize_axis(p, static_cast<int64_t>(rank), node);
    TRT_CHECK(!seen[p], ErrorCode::kInvalidArgument, "{}: perm repeats axis {}", node.describe(),
              p);
    seen[p] = true;
  }
  return perm;
}

std::string dropout_not_identity(const ir::Node& node, int64_t opset, bool ratio_given,
                                 const Tensor* ratio, bool training_given, const Tensor* training) {
  if (opset < 12 || !training_given) return "";
  if (!training)
    return node.describe() + ": training_mode is not a constant; export the model in eval mode";
  if (training->numel() != 1 || training->at_double(0) == 0.0) return "";
  double r = 0.5;
  if (ratio_given) {
    if (!ratio || ratio->numel() != 1)
      return node.describe() + ": training-mode Dropout with a ratio that is not a constant";
    r = ratio->at_double(0);
  }
  if (r == 0.0) return "";
  return node.describe() + ": Dropout in training mode (ratio " + std::to_string(r) +
         ") drops values at random; export the model in eval mode";
}

Shape scatter_nd_updates_shape(const ir::Node& node, const Shape& data, const Shape& indices) {
  TRT_CHECK(!indices.empty(), ErrorCode::kInvalidArgument, "{}: indices must have rank >= 1",
            node.describe());
  const int64_t k = indices.back();
  TRT_CHECK(k >= 1 && k <= static_cast<int64_t>(data.size()), ErrorCode::kInvalidArgument,
            "{}: indices' last dimension {} must be in [1, {}] (the rank of data)", node.describe(),
            k, data.size());
  Shape u(indices.begin(), indices.end() - 1);
  u.insert(u.end(), data.begin() + k, data.end());
  return u;
}

int64_t range_length(const Tensor& start, const Tensor& limit, const Tensor& delta,
                     const ir::Node& node) {
  for (const Tensor* t : {&start, &limit, &delta})
    TRT_CHECK(t->numel() == 1, ErrorCode::kInvalidArgument,
              "{}: start, limit and delta must be scalars, got shape {}", node.describe(),
              shape_str(t->shape()));
  const DataType dt = start.dtype();
  if (dtype_is_integer(dt)) {
    const int64_t a = start.to_int64_vector()[0], b = limit.to_int64_vector()[0],
                  d = delta.to_int64_vector()[0];
    TRT_CHECK(d != 0, ErrorCode::kInvalidArgument, "{}: delta is 0", node.describe());
    const int64_t span = b - a;
    if ((d > 0 && span <= 0) || (d < 0 && span >= 0)) return 0;
    return d > 0 ? (span + d - 1) / d : (span + d + 1) / d;
  }
  const double a = start.at_double(0), b = limit.at_double(0), d = delta.at_double(0);
  TRT_CHECK(d != 0, ErrorCode::kInvalidArgument, "{}: delta is 0", node.describe());
  // limit - start in the dtype's precision (float32 unless float64), then divided in double,
  // as ONNX Runtime does.
  const double span = dt == DataType::kFloat64
                          ? b - a
                          : static_cast<double>(static_cast<float>(b) - static_cast<float>(a));
  const double n = std::ceil(span / d);
  TRT_CHECK(std::isfinite(n), ErrorCode::kInvalidArgument, "{}: the range is not finite",
            node.describe());
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

DimRange shape_op_range(const ir::Node& node, int64_t opset, int64_t rank) {
  if (opset < 15) return {0, rank};
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  return {clamp(node.attr_int("start", 0)), clamp(node.attr_int("end", rank))};
}

}  // namespace trtutils::ops
