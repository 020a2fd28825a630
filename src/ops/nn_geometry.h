// Window geometry shared by Conv, ConvTranspose and the pools: reading and validating the
// kernel_shape / strides / dilations / pads / auto_pad attributes, and the per-axis output size
// and resolved padding. Used by both shape inference (src/ops) and the CPU kernels, so that the
// two can never disagree.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace trtutils::ops {

// The activation of our fused nodes (com.trtutils::FusedConv, QConv, QGemm, QMatMul; see
// passes.h): attribute "activation" (absent/"None", Relu, Clip, LeakyRelu, Sigmoid, HardSwish,
// Silu = x * Sigmoid(x)) with "activation_params" (Clip [min, max], LeakyRelu [alpha]). Every
// backend reads it here.
enum class FusedActivation { kNone, kRelu, kClip, kLeakyRelu, kSigmoid, kHardSwish, kSilu };
struct FusedActivationAttr {
  FusedActivation kind = FusedActivation::kNone;
  float alpha = 0, beta = 0;  // Clip: min, max; LeakyRelu: alpha
};
// Throws Error(kInvalidArgument) for a wrong parameter count, kNotSupported for another name.
FusedActivationAttr read_fused_activation(const ir::Node& node);

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// Reads the auto_pad attribute ("NOTSET" when absent); Error(kInvalidArgument) on other strings.
AutoPad read_auto_pad(const ir::Node& node);

// The window attributes of one node, one entry per spatial axis.
struct WindowSpec {
  std::vector<int64_t> kernel;          // kernel_shape (or the weights' spatial dims)
  std::vector<int64_t> strides;         // default 1
  std::vector<int64_t> dilations;       // default 1
  std::vector<int64_t> pads;            // 2n entries: begin..., end... (as given; 0 by default)
  std::vector<int64_t> output_padding;  // ConvTranspose: default 0
  std::vector<int64_t> output_shape;    // ConvTranspose: spatial dims, empty when absent
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;  // pools
  size_t rank() const { return kernel.size(); }
};

// Reads and validates the window attributes of `node` for `nspatial` spatial axes.
// `weight_kernel` holds the weights' spatial dims for Conv/ConvTranspose (entries -1 when
// unknown), nullptr for pools, which require kernel_shape. Throws Error(kInvalidArgument) naming
// the node on wrong lengths or non-positive values.
WindowSpec read_window_spec(const ir::Node& node, size_t nspatial,
                            const std::vector<int64_t>* weight_kernel);

// Resolved geometry of one spatial axis.
struct AxisGeometry {
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
  int64_t out = 0;
};

// Conv / pool output size along `axis` for input size `in` (>= 0). Honours auto_pad and, for
// pools, ceil_mode (the last window must start inside the input or its begin padding, as in
// PyTorch and ONNX Runtime). Throws Error(kInvalidArgument) naming the node when the window does
// not fit (output size < 1 for a non-empty input).
AxisGeometry conv_axis(const WindowSpec& w, size_t axis, int64_t in, const ir::Node& node);

// ConvTranspose output size along `axis`. With output_shape or SAME_* auto_pad the total
// padding is derived as in the ONNX spec (SAME_UPPER puts the smaller half at the begin).
AxisGeometry conv_transpose_axis(const WindowSpec& w, size_t axis, int64_t in,
                                 const ir::Node& node);

// Effective extent of a dilated kernel: (k - 1) * d + 1.
inline int64_t dilated_extent(int64_t k, int64_t d) {
  return (k - 1) * d + 1;
}

}  // namespace trtutils::ops
