// NVIDIA's DLA 2.0 (Orin) layer restrictions as one table, and the checks that apply it.
//
// Sources, in order of preference:
//  [G]  TensorRT docs, "DLA Supported Layers and Restrictions", General Restrictions
//       (docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/dla-layer-restrictions.html)
//  [W]  TensorRT docs, "Working with DLA" (FP16 / INT8 only)
//  [H]  NvInfer.h of TensorRT 10.7 (the last 10.x release with DLA), the "If executing this layer
//       on DLA ..." notes on each layer's setters; [H8.6] the same notes in TensorRT 8.6.1
//  [T]  the "DLA Layer Support Summary" table of that page (precision and key limits per layer)
//  [O]  TensorRT Operators documentation, the "DLA Support" section of each operator's page
//       (docs.nvidia.com/deeplearning/tensorrt/operators/docs/<Layer>.html)
//  [D]  the per-layer list of the TensorRT Developer Guide's DLA section (8.6 - 10.x) where no
//       source above states the limit; these could not be re-read against a stored copy of the
//       page here (re-checked 2026-11-29: only [G], [T] and [O] were readable), so they stay
//       marked "not re-verified" in the table.
#include "precision/dla_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

namespace trtutils::precision {

namespace {

const std::vector<DlaRule> kRules = {
    {"general.op", "any",
     "the op maps to a DLA layer: convolution, deconvolution, fully connected (Gemm / MatMul "
     "with constant weights), activation, PReLU, pooling, element-wise, scale "
     "(BatchNormalization), concatenation, resize, shuffle, softmax, reduce, slice, unary, LRN, "
     "Q/DQ scales",
     "[G] layer support summary; [D] per-layer list"},
    {"general.static", "any", "every dimension static (no dynamic / wildcard dimensions)",
     "[G] 'DLA does not support dynamic dimensions'"},
    {"general.precision", "any",
     "FP16 or INT8 compute (FP32 layers are built in FP16/INT8); no INT32/INT64/BOOL, FP8, BF16 "
     "or INT4 tensors",
     "[W] 'DLA support is currently limited to networks running in FP16 or INT8 mode'"},
    {"conv.spatial", "Conv, FusedConv, QConv", "2-D convolution only (4-D input, 2-D kernel)",
     "[H] IConvolutionLayer::setKernelSizeNd 'only support 2D kernel size'"},
    {"conv.weights", "Conv, FusedConv, QConv, ConvTranspose",
     "kernel weights are build-time constants (initializers, or DequantizeLinear of initializers)",
     "[H] IConvolutionLayer::setKernelWeights (a DLA loadable holds its weights; Weights: "
     "'When using the DLA, the cumulative size of all Weights ...')"},
    {"conv.kernel", "Conv, FusedConv, QConv", "kernel height and width in [1, 32]",
     "[H] IConvolutionLayer::setKernelSizeNd"},
    {"conv.stride", "Conv, FusedConv, QConv", "stride height and width in [1, 8]",
     "[H] IConvolutionLayer::setStrideNd"},
    {"conv.padding", "Conv, FusedConv, QConv",
     "padding height and width in [0, 31] and less than the kernel size",
     "[H] IConvolutionLayer::setPaddingNd / setPrePadding / setPostPadding"},
    {"conv.dilation", "Conv, FusedConv, QConv", "dilation height and width in [1, 32]",
     "[H] IConvolutionLayer::setDilationNd"},
    {"conv.groups", "Conv, FusedConv, QConv", "groups <= 8192",
     "[H] IConvolutionLayer::setNbGroups 'the max number of groups is 8192'"},
    {"conv.output_maps", "Conv, FusedConv, QConv", "output maps (channels) in [1, 8192]",
     "[H] IConvolutionLayer::setNbOutputMaps"},
    {"conv.activation", "FusedConv, QConv",
     "a fused activation is one DLA runs (ReLU, Sigmoid, TanH, clipped ReLU, leaky ReLU)",
     "as act.type / act.clip"},
    {"deconv.spatial", "ConvTranspose", "2-D deconvolution only",
     "[H] IDeconvolutionLayer::setKernelSizeNd 'Only 2D Kernel is supported'"},
    {"deconv.kernel", "ConvTranspose",
     "kernel height and width in [1, 32], or 64/96/128 in one dimension and 1 in the other",
     "[H] IDeconvolutionLayer::setKernelSizeNd"},
    {"deconv.stride", "ConvTranspose",
     "stride height and width in [1, 32], or 64/96/128 in one dimension and 1 in the other",
     "[H] IDeconvolutionLayer::setStrideNd"},
    {"deconv.padding", "ConvTranspose", "no padding (pads and output_padding 0)",
     "[H] IDeconvolutionLayer::setPaddingNd / setPrePadding / setPostPadding 'padding must be 0'"},
    {"deconv.groups", "ConvTranspose", "one group",
     "[H] IDeconvolutionLayer::setNbGroups 'nbGroups must be one'"},
    {"deconv.dilation", "ConvTranspose", "dilation 1",
     "[T] Deconvolution 'no grouped/dilated; padding must be 0'"},
    {"deconv.output_maps", "ConvTranspose", "output maps (channels) in [1, 8192]",
     "[H] IDeconvolutionLayer::setNbOutputMaps"},
    {"pool.type", "MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool",
     "max or average pooling, 2-D, no dilation, no indices output",
     "[H] IPoolingLayer::setPoolingType 'DLA only supports kMAX and kAVERAGE'"},
    {"pool.spatial", "MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool",
     "2-D pooling only (4-D input)", "[H] IPoolingLayer::setWindowSizeNd 'only support 2D'"},
    {"pool.window", "MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool",
     "window height and width in [1, 8] (global pooling: the input's H and W)",
     "[H] IPoolingLayer::setWindowSizeNd"},
    {"pool.stride", "MaxPool, AveragePool", "stride height and width in [1, 16]",
     "[H] IPoolingLayer::setStrideNd"},
    {"pool.padding", "MaxPool, AveragePool", "padding height and width in [0, 7]",
     "[H] IPoolingLayer::setPaddingNd / setPrePadding / setPostPadding"},
    {"act.type", "Relu, Sigmoid, Tanh, Clip, LeakyRelu (and other activations)",
     "ReLU, Sigmoid, TanH, clipped ReLU (Clip) or leaky ReLU",
     "[H] IActivationLayer::setActivationType (kRELU, kSIGMOID, kTANH, kCLIP); [G] table row "
     "'Activation'; [D] leaky ReLU"},
    {"act.rank", "Relu, Sigmoid, Tanh, Clip, LeakyRelu", "2-D activations only (4-D input)",
     "[G] table row 'Activation: 2D only'"},
    {"act.clip", "Clip",
     "clipped ReLU: lower bound 0, upper bound in [1, 127], build-time constants",
     "[D] 'Clipped ReLU only supports values in the range [1, 127]' (not re-verified)"},
    {"prelu.slope", "PRelu", "the slope is a build-time constant",
     "[H] IParametricReLULayer 'the slopes input must be a build-time constant'"},
    {"ew.op", "Add, Sub, Mul, Max, Min, Sum, Div, Pow (and other element-wise ops)",
     "sum, sub, product, max, min, div or pow",
     "[T] ElementWise 'Sum, Sub, Product, Max, Min, Div, Pow' (newer than [H] "
     "IElementWiseLayer::setOperation, which lists kSUM, kPROD, kMAX, kMIN and kSUB only); the "
     "comparisons (INT8, output cast at once) are left to the GPU"},
    {"ew.rank", "Add, Sub, Mul, Max, Min, Sum, Div, Pow", "2-D operations only (4-D output)",
     "[T] ElementWise '2D only'"},
    {"ew.broadcast", "Add, Sub, Mul, Max, Min, Sum, Div, Pow",
     "each operand NCHW (same shape), NC11 or N111; a constant operand is uniform, per channel "
     "or per element (a scale layer)",
     "[D] ElementWise broadcasting (not re-verified)"},
    {"scale.rank", "BatchNormalization",
     "inference-mode batch norm on a 4-D input with constant parameters (a scale layer)",
     "[O] Scale 'DLA FP16 and DLA INT8 are supported' (4-D input; [D] 'Only two spatial "
     "dimension operations are supported', not re-verified)"},
    {"concat.axis", "Concat", "concatenation along the channel axis (third to last)",
     "[H] IConcatenationLayer::setAxis 'the concatenation axis must be the third to last axis'"},
    {"resize.mode", "Resize, Upsample", "nearest or linear (bilinear) mode",
     "[H] IResizeLayer (supported combinations are kNEAREST and kLINEAR)"},
    {"resize.sizes", "Resize", "given by scales, not output sizes",
     "[H] IResizeLayer::setOutputDimensions 'If executing this layer on DLA, setOutputDimensions() "
     "is not supported'"},
    {"resize.scales", "Resize, Upsample",
     "four constant scales, the first two 1, the last two integers in [1, 32] (nearest) or "
     "[1, 4] (linear)",
     "[H] IResizeLayer::setScales"},
    {"resize.coord", "Resize",
     "nearest: asymmetric + floor, or half_pixel + round_prefer_floor / round_prefer_ceil; "
     "linear: half_pixel (or pytorch_half_pixel)",
     "[H] IResizeLayer (supported coordinate transformation / selector / round mode combinations)"},
    {"shuffle.rank", "Reshape, Flatten, Transpose, Squeeze, Unsqueeze", "4-D input only",
     "[D] Shuffle 'Only supports 4-D input tensors' (not re-verified)"},
    {"shuffle.batch", "Reshape, Flatten, Transpose, Squeeze, Unsqueeze",
     "the batch dimension takes no part in the reshape or transpose",
     "[D] Shuffle 'Batch dims cannot be involved in either reshapes or transposes' (not "
     "re-verified)"},
    {"softmax.axis", "Softmax", "the axis is a channel or spatial axis (not a batch axis)",
     "[H] ISoftMaxLayer 'Axis must be one of the channel or spatial dimensions'"},
    {"softmax.size", "Softmax",
     "axis size <= 8192 when every other non-batch dimension is 1, else <= 1024",
     "[H] ISoftMaxLayer (two classes of supported input sizes)"},
    {"reduce.op", "ReduceMax (and other reductions)", "max reduction only",
     "[O] Reduce 'DLA supports the following operation type: MAX'"},
    {"reduce.rank", "ReduceMax", "4-D input only",
     "[D] Reduce '4-D input tensors' (not re-verified; [O] counts every dimension before C, H, "
     "W as batch, so this rule may be stricter than DLA: such layers fall back to the GPU)"},
    {"reduce.axes", "ReduceMax", "constant axes among C, H, W (not the batch axis)",
     "[O] Reduce 'MAX where any combination of the CHW is reduced'"},
    {"slice.rank", "Slice", "4-D input only",
     "[H] ISliceLayer 'The input tensor has four dimensions'"},
    {"slice.static", "Slice", "starts, ends, axes and steps are build-time constants",
     "[H] ISliceLayer 'start, size, and stride are build time constants'"},
    {"slice.stride", "Slice", "steps of 1", "[H] ISliceLayer 'Strides are 1 for all dimensions'"},
    {"slice.batch", "Slice", "the first dimension is not sliced",
     "[H] ISliceLayer 'Slicing is not performed on the first dimension'"},
    {"unary.op", "Abs (and other unary ops)", "abs only",
     "[H] IUnaryLayer::setOperation 'only UnaryOperation::kABS is supported'"},
    {"lrn.window", "LRN", "window size 3, 5, 7 or 9", "[H] ILRNLayer::setWindowSize"},
    {"fc.weights", "Gemm, MatMul, QGemm, QMatMul",
     "a fully connected layer: the second operand is a build-time constant (an initializer, or "
     "DequantizeLinear of initializers)",
     "[H8.6] IFullyConnectedLayer (constant kernel weights)"},
    {"fc.output_channels", "Gemm, MatMul, QGemm", "output channels in [1, 8192]",
     "[H8.6] IFullyConnectedLayer::setNbOutputChannels"},
    {"qdq.type", "QuantizeLinear, DequantizeLinear", "INT8 (symmetric, signed)",
     "[W] INT8 / FP16 only (no FP8, INT4; UINT8 Q/DQ is not DLA's INT8)"},
    {"qdq.zero_point", "QuantizeLinear, DequantizeLinear", "zero point 0",
     "[W] DLA INT8 is symmetric"},
    {"qdq.scale", "QuantizeLinear, DequantizeLinear",
     "constant scales: per tensor for activations, per output channel (axis 0) for weights",
     "[W] INT8 dynamic ranges are per tensor; weights per channel"},
    {"cast.float", "Cast", "FP32 <-> FP16 casts only (a reformat at a DLA boundary)",
     "TensorRT docs, 'Strongly Typed Networks for DLA': explicit FP32 -> FP16 casts at DLA "
     "boundaries"},
    {"general.batch", "any", "batch (product of all dimensions but the last three) <= 4096",
     "[G] 'The maximum supported batch size is 4096'"},
    {"general.dims", "any", "each of the last three (C, H, W) dimensions <= 8192",
     "[G] 'The maximum supported size for non-batch dimensions is 8192'"},
};

DlaVerdict fail(std::string_view id, std::string detail) {
  return {false, std::string(id), std::move(detail)};
}
using Check = std::optional<DlaVerdict>;  // nullopt: passes

enum class Kind {
  kConv,
  kDeconv,
  kPool,
  kActivation,
  kPRelu,
  kElementwise,
  kScale,
  kConcat,
  kResize,
  kShuffle,
  kSoftmax,
  kReduce,
  kSlice,
  kUnary,
  kLrn,
  kFc,
  kQdq,
  kCast,
  kNoop,
  kUnsupported,
};

bool in(const std::string& s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

Kind kind_of(const ir::Node& n) {
  const std::string& op = n.op_type;
  if (n.domain == "com.trtutils") {
    if (op == "FusedConv" || op == "QConv") return Kind::kConv;
    if (op == "QGemm" || op == "QMatMul") return Kind::kFc;
    return Kind::kUnsupported;
  }
  if (!n.domain.empty() && n.domain != "ai.onnx") return Kind::kUnsupported;
  if (op == "Conv") return Kind::kConv;
  if (op == "ConvTranspose") return Kind::kDeconv;
  if (in(op, {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool",
              "GlobalLpPool"}))
    return Kind::kPool;
  if (in(op, {"Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu", "HardSwish", "HardSigmoid", "Elu",
              "Selu", "Celu", "Softplus", "Softsign", "ThresholdedRelu", "Gelu", "Mish"}))
    return Kind::kActivation;
  if (op == "PRelu") return Kind::kPRelu;
  if (in(op, {"Add", "Sub", "Mul", "Max", "Min", "Sum", "Div", "Pow", "Mod", "Mean", "Equal",
              "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor"}))
    return Kind::kElementwise;
  if (op == "BatchNormalization") return Kind::kScale;
  if (op == "Concat") return Kind::kConcat;
  if (op == "Resize" || op == "Upsample") return Kind::kResize;
  if (in(op, {"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze"})) return Kind::kShuffle;
  if (op == "Softmax") return Kind::kSoftmax;
  if (in(op, {"ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}))
    return Kind::kReduce;
  if (op == "Slice") return Kind::kSlice;
  if (in(op, {"Abs",   "Neg",   "Exp",  "Log",   "Sqrt", "Reciprocal", "Sin",   "Cos",
              "Tan",   "Asin",  "Acos", "Atan",  "Sinh", "Cosh",       "Asinh", "Acosh",
              "Atanh", "Floor", "Ceil", "Round", "Not",  "Erf",        "Sign"}))
    return Kind::kUnary;
  if (op == "LRN") return Kind::kLrn;
  if (op == "Gemm" || op == "MatMul") return Kind::kFc;
  if (op == "QuantizeLinear" || op == "DequantizeLinear") return Kind::kQdq;
  if (op == "Cast") return Kind::kCast;
  if (op == "Identity" || op == "Dropout") return Kind::kNoop;
  return Kind::kUnsupported;
}

std::optional<Shape> shape_of(const ir::Graph& g, const std::string& v) {
  if (v.empty()) return std::nullopt;
  if (const Tensor* t = g.initializer(v)) return t->shape();
  auto vi = g.find_value_info(v);
  if (!vi || !vi->shape || !ir::sym_shape_is_static(*vi->shape)) return std::nullopt;
  return ir::sym_shape_to_static(*vi->shape);
}

DataType dtype_of(const ir::Graph& g, const std::string& v) {
  if (const Tensor* t = g.initializer(v)) return t->dtype();
  auto vi = g.find_value_info(v);
  return vi ? vi->dtype : DataType::kUndefined;
}

std::string input(const ir::Node& n, size_t i) {
  return i < n.inputs.size() ? n.inputs[i] : std::string();
}

// The values of an integer or float constant as doubles; nullopt if `v` is not an initializer.
std::optional<std::vector<double>> constant_values(const ir::Graph& g, const std::string& v) {
  const Tensor* t = v.empty() ? nullptr : g.initializer(v);
  if (!t) return std::nullopt;
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t->numel()));
  switch (t->dtype()) {
    case DataType::kInt64:
      for (int64_t i = 0; i < t->numel(); ++i)
        out.push_back(static_cast<double>(t->data<int64_t>()[i]));
      return out;
    case DataType::kInt32:
      for (int64_t i = 0; i < t->numel(); ++i) out.push_back(t->data<int32_t>()[i]);
      return out;
    case DataType::kInt8:
      for (int64_t i = 0; i < t->numel(); ++i) out.push_back(t->data<int8_t>()[i]);
      return out;
    case DataType::kUInt8:
      for (int64_t i = 0; i < t->numel(); ++i) out.push_back(t->data<uint8_t>()[i]);
      return out;
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kFloat64:
    case DataType::kBFloat16:
      for (float f : t->to_float_vector()) out.push_back(f);
      return out;
    default:
      return std::nullopt;
  }
}

// A build-time constant: an initializer, or DequantizeLinear of initializers (the Q/DQ form
// of quantized weights, which TensorRT folds into the layer). Its shape, if so.
std::optional<Shape> constant_shape(const ir::Graph& g, const std::string& v) {
  if (v.empty()) return std::nullopt;
  if (const Tensor* t = g.initializer(v)) return t->shape();
  for (const auto& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0] != v) continue;
    if (n.op_type != "DequantizeLinear" || n.inputs.empty()) return std::nullopt;
    for (const auto& in : n.inputs)
      if (!in.empty() && !g.is_initializer(in)) return std::nullopt;
    return g.initializer(n.inputs[0])->shape();
  }
  return std::nullopt;
}

std::string join_x(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(v[i]);
  }
  return s;
}

bool all_in(const std::vector<int64_t>& v, int64_t lo, int64_t hi) {
  return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x >= lo && x <= hi; });
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

// ONNX pads [begin..., end...] for a 2-D window, auto_pad resolved against the input size.
std::vector<int64_t> window_pads(const ir::Node& n, const std::vector<int64_t>& in_hw,
                                 const std::vector<int64_t>& kernel,
                                 const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& dilations) {
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") return std::vector<int64_t>(4, 0);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    std::vector<int64_t> p(4, 0);
    for (size_t i = 0; i < 2; ++i) {
      const int64_t out = (in_hw[i] + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>(
          0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_hw[i]);
      const int64_t small = total / 2, big = total - small;
      p[i] = auto_pad == "SAME_UPPER" ? small : big;
      p[i + 2] = auto_pad == "SAME_UPPER" ? big : small;
    }
    return p;
  }
  return n.attr_ints("pads", std::vector<int64_t>(4, 0));
}

// ---- activations (also the fused activation of FusedConv / QConv) ----

Check check_clip_bounds(double lo, double hi, const std::string& what) {
  if (lo != 0.0 || !(hi >= 1.0 && hi <= 127.0))
    return fail("act.clip", fmt::format("{} clips to [{}, {}]: DLA's clipped ReLU needs [0, max] "
                                        "with max in [1, 127]",
                                        what, lo, hi));
  return std::nullopt;
}

Check check_activation_kind(const std::string& op, const std::string& what) {
  if (!in(op, {"Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu"}))
    return fail("act.type", fmt::format("{} is {}: DLA runs ReLU, Sigmoid, TanH, clipped ReLU "
                                        "and leaky ReLU only",
                                        what, op));
  return std::nullopt;
}

Check check_activation(const ir::Graph& g, const ir::Node& n) {
  if (auto c = check_activation_kind(n.op_type, "the activation")) return c;
  const auto x = shape_of(g, input(n, 0));
  if (x && x->size() != 4)
    return fail("act.rank", fmt::format("input is {}-D {}: DLA activations are 2-D (4-D input)",
                                        x->size(), shape_str(*x)));
  if (n.op_type == "Clip") {
    double lo = -std::numeric_limits<double>::infinity();
    double hi = std::numeric_limits<double>::infinity();
    if (n.has_attr("min")) lo = n.attr_float("min", 0);
    if (n.has_attr("max")) hi = n.attr_float("max", 0);
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (input(n, i).empty()) continue;
      auto v = constant_values(g, input(n, i));
      if (!v || v->size() != 1)
        return fail("act.clip", fmt::format("the Clip {} bound '{}' is not a build-time scalar "
                                            "constant",
                                            i == 1 ? "lower" : "upper", input(n, i)));
      (i == 1 ? lo : hi) = (*v)[0];
    }
    return check_clip_bounds(lo, hi, "Clip");
  }
  return std::nullopt;
}

// ---- convolution ----

Check check_conv(const ir::Graph& g, const ir::Node& n) {
  const bool q = n.op_type == "QConv";
  const std::string w_name = input(n, q ? 3 : 1);
  const auto w_shape = constant_shape(g, w_name);
  if (!w_shape)
    return fail("conv.weights",
                fmt::format("the weights '{}' are computed at run time, not a build-time constant",
                            w_name));
  const Shape w = *w_shape;
  if (w.size() != 4)
    return fail("conv.spatial", fmt::format("{}-D convolution (weights {})",
                                            static_cast<int64_t>(w.size()) - 2, shape_str(w)));
  const auto x = shape_of(g, input(n, 0));
  if (!x || x->size() != 4) return fail("conv.spatial", "the input is not 4-D");
  const bool channels_last = n.attr_int("channels_last", 0) != 0;
  const std::vector<int64_t> in_hw = channels_last ? std::vector<int64_t>{(*x)[1], (*x)[2]}
                                                   : std::vector<int64_t>{(*x)[2], (*x)[3]};
  const auto kernel = n.attr_ints("kernel_shape", {w[2], w[3]});
  const auto strides = n.attr_ints("strides", {1, 1});
  const auto dil = n.attr_ints("dilations", {1, 1});
  if (kernel.size() != 2 || strides.size() != 2 || dil.size() != 2)
    return fail("conv.spatial", "kernel, strides or dilations are not 2-D");
  if (!all_in(kernel, 1, 32))
    return fail("conv.kernel", fmt::format("kernel {} (limit [1, 32])", join_x(kernel)));
  if (!all_in(strides, 1, 8))
    return fail("conv.stride", fmt::format("stride {} (limit [1, 8])", join_x(strides)));
  const auto pads = window_pads(n, in_hw, kernel, strides, dil);
  if (pads.size() != 4) return fail("conv.spatial", "pads are not 2-D");
  for (size_t i = 0; i < 4; ++i)
    if (pads[i] < 0 || pads[i] > 31 || pads[i] >= kernel[i % 2])
      return fail("conv.padding",
                  fmt::format("pads {} with kernel {} (limit [0, 31] and less than the kernel)",
                              join_x(pads), join_x(kernel)));
  if (!all_in(dil, 1, 32))
    return fail("conv.dilation", fmt::format("dilation {} (limit [1, 32])", join_x(dil)));
  const int64_t group = n.attr_int("group", 1);
  if (group < 1 || group > 8192)
    return fail("conv.groups", fmt::format("{} groups (limit 8192)", group));
  if (w[0] < 1 || w[0] > 8192)
    return fail("conv.output_maps", fmt::format("{} output channels (limit [1, 8192])", w[0]));
  const std::string act = n.attr_string("activation", "");
  // Silu: the graph's Sigmoid and Mul, which DLA runs as its sigmoid and an elementwise product.
  if (!act.empty() && act != "Silu") {
    if (auto c = check_activation_kind(act, "the fused activation"))
      return fail("conv.activation", c->detail);
    if (act == "Clip") {
      const auto p = n.attr_floats("activation_params", {});
      if (p.size() != 2) return fail("conv.activation", "fused Clip without its two bounds");
      if (auto c = check_clip_bounds(p[0], p[1], "the fused Clip"))
        return fail("conv.activation", c->detail);
    }
  }
  return std::nullopt;
}

bool deconv_size_ok(const std::vector<int64_t>& v) {
  if (all_in(v, 1, 32)) return true;
  auto big = [](int64_t s) { return s == 64 || s == 96 || s == 128; };
  return v.size() == 2 && ((big(v[0]) && v[1] == 1) || (v[0] == 1 && big(v[1])));
}

Check check_deconv(const ir::Graph& g, const ir::Node& n) {
  const std::string w_name = input(n, 1);
  const auto w_shape = constant_shape(g, w_name);
  if (!w_shape)
    return fail("conv.weights",
                fmt::format("the weights '{}' are computed at run time, not a build-time constant",
                            w_name));
  const Shape w = *w_shape;  // [C, M / group, k...]
  if (w.size() != 4)
    return fail("deconv.spatial", fmt::format("{}-D deconvolution (weights {})",
                                              static_cast<int64_t>(w.size()) - 2, shape_str(w)));
  const auto kernel = n.attr_ints("kernel_shape", {w[2], w[3]});
  const auto strides = n.attr_ints("strides", {1, 1});
  const auto dil = n.attr_ints("dilations", {1, 1});
  if (kernel.size() != 2 || strides.size() != 2 || dil.size() != 2)
    return fail("deconv.spatial", "kernel, strides or dilations are not 2-D");
  if (!deconv_size_ok(kernel))
    return fail(
        "deconv.kernel",
        fmt::format("kernel {} (limit [1, 32], or 1x64/96/128 / 64/96/128x1)", join_x(kernel)));
  if (!deconv_size_ok(strides))
    return fail("deconv.stride", fmt::format("stride {} (limit [1, 32], or 1x64/96/128 / "
                                             "64/96/128x1)",
                                             join_x(strides)));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(4, 0));
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")
    for (size_t i = 0; i < 2; ++i)
      pads.push_back(std::max<int64_t>(0, dil[i] * (kernel[i] - 1) + 1 - strides[i]));
  for (int64_t p : n.attr_ints("output_padding", {})) pads.push_back(p);
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
    return fail("deconv.padding",
                fmt::format("padding {} (DLA deconvolution has no padding)", join_x(pads)));
  const int64_t group = n.attr_int("group", 1);
  if (group != 1) return fail("deconv.groups", fmt::format("{} groups (limit 1)", group));
  if (!all_in(dil, 1, 1))
    return fail("deconv.dilation", fmt::format("dilation {} (limit 1)", join_x(dil)));
  const int64_t m = w[1] * group;
  if (m < 1 || m > 8192)
    return fail("deconv.output_maps", fmt::format("{} output channels (limit [1, 8192])", m));
  return std::nullopt;
}

// ---- pooling ----

Check check_pool(const ir::Graph& g, const ir::Node& n) {
  const std::string& op = n.op_type;
  if (op != "MaxPool" && op != "AveragePool" && op != "GlobalAveragePool" && op != "GlobalMaxPool")
    return fail("pool.type", fmt::format("{}: DLA pools by max or average only", op));
  if (op == "MaxPool" && n.outputs.size() > 1 && !n.outputs[1].empty())
    return fail("pool.type", "MaxPool with an indices output");
  const auto x = shape_of(g, input(n, 0));
  if (!x || x->size() != 4)
    return fail("pool.spatial", fmt::format("input {}: DLA pools in 2-D (4-D input)",
                                            x ? shape_str(*x) : std::string("of unknown rank")));
  const std::vector<int64_t> in_hw = {(*x)[2], (*x)[3]};
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    if (!all_in(in_hw, 1, 8))
      return fail("pool.window",
                  fmt::format("global pooling over {} (window limit [1, 8])", join_x(in_hw)));
    return std::nullopt;
  }
  const auto kernel = n.attr_ints("kernel_shape", {});
  const auto strides = n.attr_ints("strides", {1, 1});
  const auto dil = n.attr_ints("dilations", {1, 1});
  if (kernel.size() != 2 || strides.size() != 2)
    return fail("pool.spatial", "kernel or strides are not 2-D");
  if (!all_in(dil, 1, 1)) return fail("pool.type", fmt::format("dilation {}", join_x(dil)));
  if (!all_in(kernel, 1, 8))
    return fail("pool.window", fmt::format("window {} (limit [1, 8])", join_x(kernel)));
  if (!all_in(strides, 1, 16))
    return fail("pool.stride", fmt::format("stride {} (limit [1, 16])", join_x(strides)));
  const auto pads = window_pads(n, in_hw, kernel, strides, {1, 1});
  if (!all_in(pads, 0, 7))
    return fail("pool.padding", fmt::format("pads {} (limit [0, 7])", join_x(pads)));
  return std::nullopt;
}

// ---- element-wise ----

Shape to_rank4(const Shape& s) {
  Shape r(4 - std::min<size_t>(4, s.size()), 1);
  r.insert(r.end(), s.begin(), s.end());
  return r;
}

Check check_elementwise(const ir::Graph& g, const ir::Node& n) {
  if (!in(n.op_type, {"Add", "Sub", "Mul", "Max", "Min", "Sum", "Div", "Pow"}))
    return fail("ew.op",
                fmt::format("{}: DLA element-wise ops are sum, sub, product, max, min, div and pow",
                            n.op_type));
  const auto y = shape_of(g, n.outputs.empty() ? std::string() : n.outputs[0]);
  if (!y || y->size() != 4)
    return fail("ew.rank", fmt::format("output {}: DLA element-wise ops are 2-D (4-D)",
                                       y ? shape_str(*y) : std::string("of unknown rank")));
  for (const auto& name : n.inputs) {
    if (name.empty()) continue;
    const auto s0 = shape_of(g, name);
    if (!s0 || s0->size() > 4) return fail("ew.broadcast", fmt::format("operand '{}'", name));
    const Shape s = to_rank4(*s0);
    const Shape& o = *y;
    bool ok;
    if (g.is_initializer(name)) {
      ok = s[0] == 1 &&
           ((s[1] == 1 && s[2] == 1 && s[3] == 1) || (s[1] == o[1] && s[2] == 1 && s[3] == 1) ||
            (s[1] == o[1] && s[2] == o[2] && s[3] == o[3]));
    } else {
      ok = s == o || (s[0] == o[0] && s[1] == o[1] && s[2] == 1 && s[3] == 1) ||
           (s[0] == o[0] && s[1] == 1 && s[2] == 1 && s[3] == 1);
    }
    if (!ok)
      return fail("ew.broadcast",
                  fmt::format("operand '{}' {} broadcast to {}: DLA broadcasts NCHW, NC11 or N111 "
                              "operands",
                              name, shape_str(*s0), shape_str(o)));
  }
  return std::nullopt;
}

// ---- the rest ----

Check check_scale(const ir::Graph& g, const ir::Node& n) {
  const auto x = shape_of(g, input(n, 0));
  if (!x || x->size() != 4) return fail("scale.rank", "batch normalization of a non-4-D input");
  if (n.attr_int("training_mode", 0) != 0 || n.outputs.size() > 1)
    return fail("scale.rank", "training-mode batch normalization");
  for (size_t i = 1; i < 5; ++i)
    if (!g.is_initializer(input(n, i)))
      return fail("scale.rank", fmt::format("parameter '{}' is not a constant", input(n, i)));
  return std::nullopt;
}

Check check_concat(const ir::Graph& g, const ir::Node& n) {
  const auto y = shape_of(g, n.outputs.empty() ? std::string() : n.outputs[0]);
  const size_t r = y ? y->size() : 0;
  const int64_t axis = normalize_axis(n.attr_int("axis", 1), r);
  if (r < 3 || axis != static_cast<int64_t>(r) - 3)
    return fail("concat.axis", fmt::format("axis {} of a {}-D tensor: DLA concatenates along the "
                                           "channel axis (third to last)",
                                           n.attr_int("axis", 1), r));
  return std::nullopt;
}

Check check_resize(const ir::Graph& g, const ir::Node& n) {
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear")
    return fail("resize.mode", fmt::format("mode '{}': DLA resizes nearest or linear", mode));
  const bool legacy = n.op_type == "Upsample" || n.inputs.size() == 2;  // opset <= 10 forms
  std::optional<std::vector<double>> scales;
  std::string scales_name;
  if (n.op_type == "Upsample" && n.has_attr("scales")) {
    std::vector<double> v;
    for (float f : n.attr_floats("scales")) v.push_back(f);
    scales = v;
  } else {
    if (!legacy && !input(n, 3).empty())
      return fail("resize.sizes",
                  fmt::format("output sizes '{}' instead of scales (setOutputDimensions is not "
                              "supported on DLA)",
                              input(n, 3)));
    scales_name = input(n, legacy ? 1 : 2);
    scales = constant_values(g, scales_name);
    if (!scales)
      return fail("resize.scales",
                  fmt::format("scales '{}' are not a build-time constant", scales_name));
  }
  const auto& s = *scales;
  const double hi = mode == "nearest" ? 32 : 4;
  auto integral = [&](double v) { return v == std::floor(v) && v >= 1 && v <= hi; };
  if (s.size() != 4 || s[0] != 1.0 || s[1] != 1.0 || !integral(s[2]) || !integral(s[3])) {
    std::string list;
    for (double v : s) list += fmt::format("{}{}", list.empty() ? "" : ", ", v);
    return fail("resize.scales", fmt::format("scales [{}] (DLA: [1, 1, h, w], h and w integers in "
                                             "[1, {}])",
                                             list, hi));
  }
  const std::string ctm =
      legacy ? "asymmetric" : n.attr_string("coordinate_transformation_mode", "half_pixel");
  if (mode == "nearest") {
    const std::string nm = legacy ? "floor" : n.attr_string("nearest_mode", "round_prefer_floor");
    const bool ok =
        (ctm == "asymmetric" && nm == "floor") ||
        (ctm == "half_pixel" && (nm == "round_prefer_floor" || nm == "round_prefer_ceil"));
    if (!ok) return fail("resize.coord", fmt::format("nearest with {} / {}", ctm, nm));
  } else if (ctm != "half_pixel" && ctm != "pytorch_half_pixel") {
    return fail("resize.coord", fmt::format("linear with {}", ctm));
  }
  return std::nullopt;
}

Check check_shuffle(const ir::Graph& g, const ir::Node& n) {
  const auto x = shape_of(g, input(n, 0));
  const auto y = shape_of(g, n.outputs.empty() ? std::string() : n.outputs[0]);
  if (!x || x->size() != 4)
    return fail("shuffle.rank", fmt::format("input {}: DLA shuffles 4-D tensors",
                                            x ? shape_str(*x) : std::string("of unknown rank")));
  if (n.op_type == "Transpose") {
    const auto perm = n.attr_ints("perm", {3, 2, 1, 0});
    if (perm.empty() || perm[0] != 0)
      return fail("shuffle.batch", fmt::format("perm {} moves the batch dimension", join_x(perm)));
    return std::nullopt;
  }
  if (!y || y->empty() || (*y)[0] != (*x)[0])
    return fail("shuffle.batch", fmt::format("{} -> {} reshapes the batch dimension", shape_str(*x),
                                             y ? shape_str(*y) : std::string("?")));
  return std::nullopt;
}

Check check_softmax(const ir::Graph& g, const ir::Node& n) {
  const auto x = shape_of(g, input(n, 0));
  if (!x) return fail("softmax.axis", "input of unknown shape");
  const size_t r = x->size();
  const int64_t axis = normalize_axis(n.attr_int("axis", -1), r);
  const int64_t first_non_batch = std::max<int64_t>(1, static_cast<int64_t>(r) - 3);
  if (axis < first_non_batch || axis >= static_cast<int64_t>(r))
    return fail("softmax.axis", fmt::format("axis {} of {} is a batch axis", axis, shape_str(*x)));
  bool others_one = true;
  for (int64_t d = first_non_batch; d < static_cast<int64_t>(r); ++d)
    if (d != axis && (*x)[d] != 1) others_one = false;
  const int64_t limit = others_one ? 8192 : 1024;
  if ((*x)[axis] > limit)
    return fail("softmax.size", fmt::format("axis size {} (limit {} when {})", (*x)[axis], limit,
                                            others_one ? "the other dimensions are 1"
                                                       : "another dimension is > 1"));
  return std::nullopt;
}

Check check_reduce(const ir::Graph& g, const ir::Node& n) {
  if (n.op_type != "ReduceMax")
    return fail("reduce.op", fmt::format("{}: DLA reduces by max only", n.op_type));
  const auto x = shape_of(g, input(n, 0));
  if (!x || x->size() != 4) return fail("reduce.rank", "input is not 4-D");
  std::vector<int64_t> axes = n.attr_ints("axes", {});
  if (!input(n, 1).empty()) {
    auto v = constant_values(g, input(n, 1));
    if (!v) return fail("reduce.axes", "axes are computed at run time");
    for (double a : *v) axes.push_back(static_cast<int64_t>(a));
  }
  if (axes.empty()) return fail("reduce.axes", "reduces every axis, the batch axis included");
  for (int64_t a : axes)
    if (normalize_axis(a, 4) == 0) return fail("reduce.axes", "reduces the batch axis");
  return std::nullopt;
}

Check check_slice(const ir::Graph& g, const ir::Node& n) {
  const auto x = shape_of(g, input(n, 0));
  const auto y = shape_of(g, n.outputs.empty() ? std::string() : n.outputs[0]);
  if (!x || x->size() != 4) return fail("slice.rank", "input is not 4-D");
  std::optional<std::vector<double>> steps;
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (input(n, i).empty()) continue;
    auto v = constant_values(g, input(n, i));
    if (!v)
      return fail(
          "slice.static",
          fmt::format("'{}' is computed at run time, not a build-time constant", input(n, i)));
    if (i == 4) steps = v;
  }
  if (steps && std::any_of(steps->begin(), steps->end(), [](double s) { return s != 1.0; }))
    return fail("slice.stride", "steps other than 1");
  if (!y || (*y)[0] != (*x)[0]) return fail("slice.batch", "slices the first dimension");
  return std::nullopt;
}

Check check_fc(const ir::Graph& g, const ir::Node& n) {
  if (n.op_type == "QMatMul")
    return fail("fc.weights",
                "both operands are activations (a matrix multiply, not a fully "
                "connected layer)");
  const bool q = n.op_type == "QGemm";
  const std::string w_name = input(n, q ? 3 : 1);
  const auto w_shape = constant_shape(g, w_name);
  if (!w_shape)
    return fail("fc.weights",
                fmt::format("the second operand '{}' is computed at run time", w_name));
  const Shape w = *w_shape;
  if (w.empty()) return fail("fc.weights", "scalar weights");
  // MatMul: [K, N]; Gemm / QGemm: [K, N], or [N, K] with transB.
  const int64_t k_out = n.op_type != "MatMul" && n.attr_int("transB", 0) != 0 ? w[0] : w.back();
  if (k_out < 1 || k_out > 8192)
    return fail("fc.output_channels", fmt::format("{} output channels (limit [1, 8192])", k_out));
  return std::nullopt;
}

Check check_qdq(const ir::Graph& g, const ir::Node& n) {
  const bool quant = n.op_type == "QuantizeLinear";
  DataType q = DataType::kUndefined;
  if (!input(n, 2).empty())
    q = dtype_of(g, input(n, 2));
  else if (quant)
    q = n.has_attr("output_dtype") ? static_cast<DataType>(n.attr_int("output_dtype", 2))
                                   : DataType::kUInt8;
  else
    q = dtype_of(g, input(n, 0));
  if (q != DataType::kInt8)
    return fail("qdq.type",
                fmt::format("{} Q/DQ: DLA quantizes to signed INT8 only", dtype_name(q)));
  if (!input(n, 2).empty()) {
    auto zp = constant_values(g, input(n, 2));
    if (!zp || std::any_of(zp->begin(), zp->end(), [](double v) { return v != 0.0; }))
      return fail("qdq.zero_point", "a non-zero (or non-constant) zero point");
  }
  const Tensor* scale = g.initializer(input(n, 1));
  if (!scale) return fail("qdq.scale", "the scale is computed at run time");
  if (scale->numel() != 1) {
    const bool weights = !quant && g.is_initializer(input(n, 0));
    const auto x = shape_of(g, input(n, 0));
    const int64_t axis = normalize_axis(n.attr_int("axis", 1), x ? x->size() : 0);
    if (!weights || axis != 0)
      return fail("qdq.scale", weights ? fmt::format("per-channel weights along axis {} (DLA: "
                                                     "the output-channel axis 0)",
                                                     axis)
                                       : std::string("per-channel scales on an activation"));
  }
  return std::nullopt;
}

Check check_cast(const ir::Graph& g, const ir::Node& n) {
  const DataType from = dtype_of(g, input(n, 0));
  const auto to = static_cast<DataType>(n.attr_int("to", 0));
  auto is_float = [](DataType d) { return d == DataType::kFloat32 || d == DataType::kFloat16; };
  if (!is_float(from) || !is_float(to))
    return fail("cast.float", fmt::format("cast {} -> {}", dtype_name(from), dtype_name(to)));
  return std::nullopt;
}

Check check_general(const ir::Graph& g, const ir::Node& n, Kind kind) {
  std::vector<std::string> values;
  for (const auto& v : n.inputs)
    if (!v.empty() && !g.is_initializer(v)) values.push_back(v);
  for (const auto& v : n.outputs)
    if (!v.empty()) values.push_back(v);
  for (const auto& v : values) {
    auto vi = g.find_value_info(v);
    if (!vi || !vi->shape || !ir::sym_shape_is_static(*vi->shape))
      return fail("general.static",
                  fmt::format("'{}' has shape {}", v,
                              vi && vi->shape ? ir::sym_shape_str(*vi->shape) : "unknown"));
  }
  if (kind != Kind::kQdq) {
    // The data: the first input and the outputs (further inputs may be integer parameters,
    // e.g. Slice's starts or Reshape's shape).
    std::vector<std::string> data = {input(n, 0)};
    data.insert(data.end(), n.outputs.begin(), n.outputs.end());
    for (const auto& v : data) {
      if (v.empty()) continue;
      const DataType d = dtype_of(g, v);
      if (d != DataType::kUndefined && d != DataType::kFloat32 && d != DataType::kFloat16 &&
          d != DataType::kInt8)
        return fail("general.precision", fmt::format("'{}' is {}", v, dtype_name(d)));
    }
  }
  return std::nullopt;
}

// general.batch / general.dims, checked after the layer's own rules (which name a layer limit
// more precisely, e.g. conv.output_maps for 8193 channels).
Check check_sizes(const ir::Graph& g, const ir::Node& n) {
  std::vector<std::string> values;
  for (const auto& v : n.inputs)
    if (!v.empty() && !g.is_initializer(v)) values.push_back(v);
  for (const auto& v : n.outputs)
    if (!v.empty()) values.push_back(v);
  for (const auto& v : values) {
    const Shape s = *shape_of(g, v);
    const size_t r = s.size();
    int64_t batch = 1;
    for (size_t d = 0; d + 3 < r; ++d) batch *= s[d];
    if (batch > 4096)
      return fail("general.batch",
                  fmt::format("'{}' {} has batch {} (limit 4096)", v, shape_str(s), batch));
    for (size_t d = r > 3 ? r - 3 : 0; d < r; ++d)
      if (s[d] > 8192)
        return fail("general.dims", fmt::format("'{}' {} has a dimension of {} (limit 8192)", v,
                                                shape_str(s), s[d]));
  }
  return std::nullopt;
}

}  // namespace

const std::vector<DlaRule>& dla_rule_table() {
  return kRules;
}

const DlaRule* find_dla_rule(std::string_view id) {
  for (const auto& r : kRules)
    if (r.id == id) return &r;
  return nullptr;
}

DlaVerdict dla_verdict(const ir::Graph& g, const ir::Node& n) {
  const Kind kind = kind_of(n);
  if (kind == Kind::kNoop) return {true, "", ""};
  if (kind == Kind::kUnsupported)
    return fail("general.op", fmt::format("{}{} has no DLA layer",
                                          n.domain.empty() ? "" : n.domain + "::", n.op_type));
  if (auto c = check_general(g, n, kind)) return *c;
  Check c;
  switch (kind) {
    case Kind::kConv:
      c = check_conv(g, n);
      break;
    case Kind::kDeconv:
      c = check_deconv(g, n);
      break;
    case Kind::kPool:
      c = check_pool(g, n);
      break;
    case Kind::kActivation:
      c = check_activation(g, n);
      break;
    case Kind::kPRelu:
      if (!constant_shape(g, input(n, 1)))
        c = fail("prelu.slope", fmt::format("slope '{}' is computed at run time", input(n, 1)));
      break;
    case Kind::kElementwise:
      c = check_elementwise(g, n);
      break;
    case Kind::kScale:
      c = check_scale(g, n);
      break;
    case Kind::kConcat:
      c = check_concat(g, n);
      break;
    case Kind::kResize:
      c = check_resize(g, n);
      break;
    case Kind::kShuffle:
      c = check_shuffle(g, n);
      break;
    case Kind::kSoftmax:
      c = check_softmax(g, n);
      break;
    case Kind::kReduce:
      c = check_reduce(g, n);
      break;
    case Kind::kSlice:
      c = check_slice(g, n);
      break;
    case Kind::kUnary:
      if (n.op_type != "Abs")
        c = fail("unary.op", fmt::format("{}: DLA's only unary op is abs", n.op_type));
      break;
    case Kind::kLrn: {
      const int64_t size = n.attr_int("size", 0);
      if (size != 3 && size != 5 && size != 7 && size != 9)
        c = fail("lrn.window", fmt::format("window {} (DLA: 3, 5, 7 or 9)", size));
      break;
    }
    case Kind::kFc:
      c = check_fc(g, n);
      break;
    case Kind::kQdq:
      c = check_qdq(g, n);
      break;
    case Kind::kCast:
      c = check_cast(g, n);
      break;
    case Kind::kNoop:
    case Kind::kUnsupported:
      break;
  }
  if (c) return *c;
  if (auto sz = check_sizes(g, n)) return *sz;
  return {true, "", ""};
}

std::vector<DlaVerdict> dla_verdicts(const ir::Graph& graph) {
  std::vector<DlaVerdict> v;
  v.reserve(graph.nodes.size());
  for (const auto& n : graph.nodes) v.push_back(dla_verdict(graph, n));
  return v;
}

std::vector<DlaChunk> dla_chunks(const ir::Graph& graph, const std::vector<DlaVerdict>& verdicts) {
  std::vector<DlaChunk> chunks;
  const size_t n = std::min(graph.nodes.size(), verdicts.size());
  for (size_t i = 0; i < n;) {
    if (!verdicts[i].ok) {
      ++i;
      continue;
    }
    DlaChunk c;
    c.begin = i;
    while (i < n && verdicts[i].ok) c.nodes.push_back(graph.nodes[i++].name);
    c.end = i;
    chunks.push_back(std::move(c));
  }
  return chunks;
}

std::vector<DlaChunk> select_dla_chunks(const std::vector<DlaChunk>& chunks, size_t num_nodes,
                                        int max_chunks, int min_layers) {
  if (num_nodes > 0 && chunks.size() == 1 && chunks[0].size() == num_nodes) return chunks;
  std::vector<DlaChunk> c;
  for (const auto& ch : chunks)
    if (static_cast<int64_t>(ch.size()) >= min_layers) c.push_back(ch);
  std::stable_sort(c.begin(), c.end(),
                   [](const DlaChunk& a, const DlaChunk& b) { return a.size() > b.size(); });
  if (static_cast<int64_t>(c.size()) > std::max(0, max_chunks))
    c.resize(static_cast<size_t>(std::max(0, max_chunks)));
  std::sort(c.begin(), c.end(),
            [](const DlaChunk& a, const DlaChunk& b) { return a.begin < b.begin; });
  return c;
}

}  // namespace trtutils::precision
