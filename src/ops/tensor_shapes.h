// Argument decoding and output-shape rules of the tensor op family, shared by shape inference
// (src/ops/tensor_ops.cpp, which sees constant inputs only) and the CPU kernels (which see every
// input). Each helper takes the node (for messages and attributes), the opset, and the input
// tensors that carry arguments (nullptr when omitted or not constant); they throw
// Error(kInvalidArgument) naming the node on malformed arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace trtutils::ops {

// Normalises axes against `rank` and rejects duplicates.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                    const ir::Node& node);

// ---- Slice ---------------------------------------------------------------------------------
struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;  // axes not yet normalised
};
// opset < 10: attributes starts/ends/axes; >= 10: inputs 1..4 (starts, ends, axes, steps).
// Returns nullopt when a needed input tensor is not available (nullptr).
std::optional<SliceArgs> slice_args(const ir::Node& node, int64_t opset, const Tensor* starts,
                                    const Tensor* ends, const Tensor* axes, const Tensor* steps);
struct SliceRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};
// Numpy/ONNX clamping for one axis of size `dim`.
SliceRange slice_range(int64_t dim, int64_t start, int64_t end, int64_t step);

// ---- Reshape / Flatten ----------------------------------------------------------------------
// Target shape with 0 (copy, unless allowzero) and -1 (inferred) resolved. Symbolic input dims
// are carried through; a -1 is inferred when the symbolic dims it would contain cancel out,
// else it becomes an unknown Dim.
ir::SymShape reshape_output(const ir::SymShape& in, const std::vector<int64_t>& target,
                            bool allowzero, const ir::Node& node);
// Product of dims [begin, end) as a Dim: static if all static, the symbol if exactly one dim is
// non-static and the rest multiply to 1, else unknown.
ir::Dim dims_product(const ir::SymShape& s, size_t begin, size_t end);

// ---- Split -----------------------------------------------------------------------------------
// Sizes of the chunks along an axis of size `dim` (split attribute < 13, input >= 13,
// num_outputs >= 18, else equal parts). `split` is nullptr when the input is omitted.
std::vector<int64_t> split_sizes(const ir::Node& node, int64_t opset, const Tensor* split,
                                 int64_t dim, size_t num_outputs);

// ---- Squeeze / Unsqueeze ------------------------------------------------------------------
// The axes argument (attribute < 13, input 1 >= 13); nullopt when absent. `available` is false
// when the input exists but its value is unknown (inference without a constant).
std::optional<std::vector<int64_t>> squeeze_axes(const ir::Node& node, int64_t opset,
                                                 const Tensor* axes_input, bool* available);

// ---- Pad -------------------------------------------------------------------------------------
enum class PadMode { kConstant, kReflect, kEdge, kWrap };
PadMode pad_mode(const ir::Node& node, int64_t opset);
// Pads in ONNX layout [begin_0..begin_{r-1}, end_0..end_{r-1}] for all `rank` axes (axes input
// of opset 18 expanded). nullopt when `pads` (>= 11) is not available.
std::optional<std::vector<int64_t>> pad_amounts(const ir::Node& node, int64_t opset, int64_t rank,
                                                const Tensor* pads, const Tensor* axes,
                                                bool axes_given);

// ---- Transpose / Range ------------------------------------------------------------------
// `perm` (default: reversed axes), normalised and validated.
std::vector<int64_t> transpose_perm(const ir::Node& node, size_t rank);
// Number of elements of Range(start, limit, delta) (scalars of one dtype).
int64_t range_length(const Tensor& start, const Tensor& limit, const Tensor& delta,
                     const ir::Node& node);

// ---- Dropout / ScatterND -----------------------------------------------------------------
// Empty when a Dropout node is the identity (inference): before opset 12 always (as ONNX
// Runtime runs it); from opset 12 unless training_mode is true with a non-zero ratio (inputs 2
// and 1, their constant values, nullptr when omitted). Otherwise why it is not, for an error.
std::string dropout_not_identity(const ir::Node& node, int64_t opset, bool ratio_given,
                                 const Tensor* ratio, bool training_given, const Tensor* training);
// ScatterND's updates shape for data and indices shapes (indices [..., k], k <= rank(data)):
// indices.shape[:-1] + data.shape[k:]. Throws naming the node when k is out of range.
Shape scatter_nd_updates_shape(const ir::Node& node, const Shape& data, const Shape& indices);

// ---- Resize / Upsample --------------------------------------------------------------------
enum class ResizeMode { kNearest, kLinear, kCubic };
enum class CoordMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNN,
  kTfCropAndResize
};
enum class NearestMode { kSimple, kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
struct ResizeAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  CoordMode coord = CoordMode::kAsymmetric;
  NearestMode nearest = NearestMode::kSimple;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation_value = 0.0f;
};
// Validated attributes of Resize (opset 10..19+) or Upsample (opset 7..9).
ResizeAttrs resize_attrs(const ir::Node& node, int64_t opset);
// Index of the scales / sizes / roi input for this node and opset (-1: none).
struct ResizeInputs {
  int roi = -1, scales = -1, sizes = -1;
};
ResizeInputs resize_inputs(const ir::Node& node, int64_t opset);
// Arithmetic follows ONNX Runtime's CPU kernel (the reference our end-to-end checks use):
// scales and coordinates in float32; an axis whose scale is exactly 1 is copied unchanged.
struct ResizePlan {
  Shape out;                              // output shape
  std::vector<float> scales;              // per axis, used by the coordinate transform
  std::vector<float> roi_start, roi_end;  // per axis (tf_crop_and_resize), defaults 0 / 1
};
// Output shape and effective scales for a static input shape. scales/sizes/roi are nullptr or
// empty tensors when not given; exactly one of scales/sizes must be non-empty. Output dims
// from scales are trunc(scale * dim) in float (roi does not enter, as in ONNX Runtime and the
// ONNX reference, although the spec text multiplies by roi_end - roi_start).
ResizePlan resize_plan(const ir::Node& node, int64_t opset, const Shape& in, const Tensor* roi,
                       const Tensor* scales, const Tensor* sizes);
// Maps an output coordinate to the input coordinate space (float32, like ONNX Runtime).
float resize_coordinate(CoordMode mode, float x, float scale, int64_t len_out, int64_t len_in,
                        float roi_start, float roi_end);
// Nearest input index (unclamped) for an input coordinate.
int64_t resize_nearest_index(NearestMode mode, float x, bool downsample);

// Per axis and output coordinate: the input coordinate, or "outside" (tf_crop_and_resize
// extrapolation). An axis with scale exactly 1 maps o -> o (ONNX Runtime does the same; it
// matters for modes such as tf_half_pixel_for_nn that would shift an unscaled axis). Shared by
// the CPU and CUDA Resize kernels.
struct AxisCoords {
  bool identity = false;
  std::vector<float> x;
  std::vector<uint8_t> outside;
};
AxisCoords axis_coords(const ResizeAttrs& at, int64_t in, int64_t out, float scale, float roi_start,
                       float roi_end);
// Linear taps of one axis, ONNX Runtime's formula: clamp x to [0, in-1], x1 = trunc(x),
// x2 = min(x1 + 1, in - 1), weights |x - x2| for x1 and |x - x1| for x2 (0.5 each when equal).
struct LinearTaps {
  std::vector<int64_t> i1, i2;
  std::vector<float> w1, w2;
};
LinearTaps linear_taps(const AxisCoords& c, int64_t in);
// Cubic taps of one axis (Keys' kernel with coefficient cubic_a): 4 per output coordinate,
// indices floor(x) - 1 .. floor(x) + 2 clamped to the input, weights normalised over the taps
// inside the input when exclude_outside. The CPU kernel's separable passes and the GPU's use them.
struct CubicTaps {
  std::vector<int64_t> index;  // 4 per output coordinate
  std::vector<float> weight;
};
CubicTaps cubic_taps(const ResizeAttrs& at, const AxisCoords& c, int64_t in);

// Shape's [start, end) over an input of rank `rank` (opset 15 attributes, clamped like slicing;
// earlier opsets: the whole shape). end <= start means an empty output.
struct DimRange {
  int64_t start = 0, end = 0;
};
DimRange shape_op_range(const ir::Node& node, int64_t opset, int64_t rank);

}  // namespace trtutils::ops
