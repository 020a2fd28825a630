#include "ops/nn_geometry.h"

#include <algorithm>

#include "core/check.h"

namespace trtutils::ops {

namespace {

std::vector<int64_t> ints_or(const ir::Node& node, const char* name, size_t n, int64_t def,
                             size_t expected_len) {
  if (!node.has_attr(name)) return std::vector<int64_t>(n, def);
  std::vector<int64_t> v = node.attr_ints(name);
  TRT_CHECK_ARG(v.size() == expected_len,
                "{}: attribute '{}' has {} values, expected {} for {} spatial axes",
                node.describe(), name, v.size(), expected_len, n);
  return v;
}

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

}  // namespace

AutoPad read_auto_pad(const ir::Node& node) {
  const std::string s = node.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  TRT_THROW(ErrorCode::kInvalidArgument,
            "{}: auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
            node.describe(), s);
}

WindowSpec read_window_spec(const ir::Node& node, size_t nspatial,
                            const std::vector<int64_t>* weight_kernel) {
  WindowSpec w;
  if (node.has_attr("kernel_shape")) {
    w.kernel = node.attr_ints("kernel_shape");
    TRT_CHECK_ARG(w.kernel.size() == nspatial,
                  "{}: kernel_shape has {} values but the input has {} spatial axes",
                  node.describe(), w.kernel.size(), nspatial);
    if (weight_kernel) {
      for (size_t i = 0; i < nspatial; ++i)
        TRT_CHECK_ARG((*weight_kernel)[i] < 0 || (*weight_kernel)[i] == w.kernel[i],
                      "{}: kernel_shape {} does not match the weights' spatial dims {}",
                      node.describe(), shape_str(w.kernel), shape_str(*weight_kernel));
    }
  } else {
    TRT_CHECK_ARG(weight_kernel != nullptr, "{}: attribute 'kernel_shape' is required",
                  node.describe());
    w.kernel = *weight_kernel;
  }
  for (int64_t k : w.kernel)
    TRT_CHECK_ARG(k > 0 || (k == -1 && weight_kernel), "{}: kernel_shape {} must be positive",
                  node.describe(), shape_str(w.kernel));
  w.strides = ints_or(node, "strides", nspatial, 1, nspatial);
  w.dilations = ints_or(node, "dilations", nspatial, 1, nspatial);
  w.pads = ints_or(node, "pads", 2 * nspatial, 0, 2 * nspatial);
  w.auto_pad = read_auto_pad(node);
  w.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  for (size_t i = 0; i < nspatial; ++i) {
    TRT_CHECK_ARG(w.strides[i] > 0, "{}: strides {} must be positive", node.describe(),
                  shape_str(w.strides));
    TRT_CHECK_ARG(w.dilations[i] > 0, "{}: dilations {} must be positive", node.describe(),
                  shape_str(w.dilations));
  }
  for (int64_t p : w.pads)
    TRT_CHECK_ARG(p >= 0, "{}: pads {} must not be negative", node.describe(), shape_str(w.pads));
  if (node.op_type == "ConvTranspose") {
    w.output_padding = ints_or(node, "output_padding", nspatial, 0, nspatial);
    for (size_t i = 0; i < nspatial; ++i)
      TRT_CHECK_ARG(w.output_padding[i] >= 0, "{}: output_padding {} must not be negative",
                    node.describe(), shape_str(w.output_padding));
    if (node.has_attr("output_shape")) {
      w.output_shape = node.attr_ints("output_shape");
      // Some exporters write the full (N, C, spatial...) shape; keep the spatial part.
      if (w.output_shape.size() == nspatial + 2)
        w.output_shape.erase(w.output_shape.begin(), w.output_shape.begin() + 2);
      TRT_CHECK_ARG(w.output_shape.size() == nspatial,
                    "{}: output_shape has {} values, expected {} spatial dims", node.describe(),
                    w.output_shape.size(), nspatial);
      for (int64_t d : w.output_shape)
        TRT_CHECK_ARG(d > 0, "{}: output_shape {} must be positive", node.describe(),
                      shape_str(w.output_shape));
    }
  }
  return w;
}

AxisGeometry conv_axis(const WindowSpec& w, size_t axis, int64_t in, const ir::Node& node) {
  const int64_t s = w.strides[axis];
  const int64_t dk = dilated_extent(w.kernel[axis], w.dilations[axis]);
  AxisGeometry g;
  switch (w.auto_pad) {
    case AutoPad::kNotSet: {
      g.pad_begin = w.pads[axis];
      g.pad_end = w.pads[axis + w.rank()];
      const int64_t span = in + g.pad_begin + g.pad_end - dk;
      if (span < 0) break;  // no window fits; reported below
      if (w.ceil_mode) {
        g.out = ceil_div(span, s) + 1;
        // The last window must start inside the input or the begin padding.
        if ((g.out - 1) * s >= in + g.pad_begin) --g.out;
      } else {
        g.out = span / s + 1;
      }
      break;
    }
    case AutoPad::kValid:
      g.out = in >= dk ? (in - dk) / s + 1 : 0;
      break;
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower: {
      g.out = ceil_div(in, s);
      const int64_t total = std::max<int64_t>(0, (g.out - 1) * s + dk - in);
      const int64_t small = total / 2;
      g.pad_begin = w.auto_pad == AutoPad::kSameUpper ? small : total - small;
      g.pad_end = total - g.pad_begin;
      break;
    }
  }
  if (in == 0) return {g.pad_begin, g.pad_end, 0};
  TRT_CHECK_ARG(g.out >= 1,
                "{}: window of extent {} (kernel {}, dilation {}) does not fit spatial axis {} of "
                "size {} with pads {}+{}",
                node.describe(), dk, w.kernel[axis], w.dilations[axis], axis, in, g.pad_begin,
                g.pad_end);
  return g;
}

AxisGeometry conv_transpose_axis(const WindowSpec& w, size_t axis, int64_t in,
                                 const ir::Node& node) {
  const int64_t s = w.strides[axis];
  const int64_t dk = dilated_extent(w.kernel[axis], w.dilations[axis]);
  const int64_t natural = s * (in - 1) + w.output_padding[axis] + dk;
  AxisGeometry g;
  const bool same = w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower;
  if (!w.output_shape.empty() || same) {
    g.out = !w.output_shape.empty() ? w.output_shape[axis] : in * s;
    const int64_t total = natural - g.out;
    const int64_t half = floor_div(total, 2);
    // ONNX: SAME_UPPER -> begin = total/2; otherwise begin = total - total/2.
    g.pad_begin = w.auto_pad == AutoPad::kSameUpper ? half : total - half;
    g.pad_end = total - g.pad_begin;
  } else {
    if (w.auto_pad == AutoPad::kNotSet) {
      g.pad_begin = w.pads[axis];
      g.pad_end = w.pads[axis + w.rank()];
    }
    g.out = natural - g.pad_begin - g.pad_end;
  }
  TRT_CHECK_ARG(g.out >= 1 || in == 0,
                "{}: output size {} along spatial axis {} is not positive (input {}, pads {}+{})",
                node.describe(), g.out, axis, in, g.pad_begin, g.pad_end);
  return g;
}

FusedActivationAttr read_fused_activation(const ir::Node& node) {
  const std::string act = node.attr_string("activation", "");
  const std::vector<float> params = node.attr_floats("activation_params");
  auto want = [&](size_t n) {
    TRT_CHECK_ARG(params.size() == n, "{}: activation {} takes {} activation_params, got {}",
                  node.describe(), act, n, params.size());
  };
  FusedActivationAttr a;
  if (act.empty() || act == "None") return a;
  if (act == "Relu" || act == "Sigmoid" || act == "HardSwish" || act == "Silu") {
    want(0);
    a.kind = act == "Relu"        ? FusedActivation::kRelu
             : act == "Sigmoid"   ? FusedActivation::kSigmoid
             : act == "HardSwish" ? FusedActivation::kHardSwish
                                  : FusedActivation::kSilu;
  } else if (act == "LeakyRelu") {
    want(1);
    a.kind = FusedActivation::kLeakyRelu;
    a.alpha = params[0];
  } else if (act == "Clip") {
    want(2);
    a.kind = FusedActivation::kClip;
    a.alpha = params[0];
    a.beta = params[1];
  } else {
    TRT_THROW(
        ErrorCode::kNotSupported,
        "{}: activation '{}' is not supported (Relu, Clip, LeakyRelu, Sigmoid, HardSwish, Silu)",
        node.describe(), act);
  }
  return a;
}

}  // namespace trtutils::ops
