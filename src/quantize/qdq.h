// Q/DQ placement and rewriting, the two halves around calibration:
//   place_qdq()   decides, per op handler, which activations get a Q/DQ pair (and for which
//                 consumers) and which weights are stored quantized; needs no data.
//   calibrate -> ScaleTable (amax per activation tensor; shared within scale groups).
//   apply_qdq()   rewrites the graph from a Placement and a ScaleTable.
// The graph must have unique, non-empty node names (name_nodes()) and inferred value_info.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace trtutils::quantize {

enum class QuantMode { kInt8, kFp8, kInt4 };
QuantMode quant_mode_from_name(const std::string& name);  // throws, listing the options
std::string quant_mode_name(QuantMode m);
// Largest representable magnitude of the quantized type: 127, 448, 7.
double quant_mode_qmax(QuantMode m);
DataType quant_mode_dtype(QuantMode m);

struct PlacementOptions {
  QuantMode mode = QuantMode::kInt8;
  // Empty: the mode's defaults (int8/fp8: Conv, ConvTranspose, Gemm, MatMul + the residual Add
  // and pooling/Concat rules; int4: MatMul, Gemm). Non-empty: only these, and the small-layer
  // rules (< min_channels, GEMV) do not apply to them.
  std::set<std::string> op_types_to_quantize;
  std::set<std::string> op_types_to_exclude;
  std::vector<std::regex> nodes_to_exclude;    // matched at the start of the node name (re.match)
  std::set<std::string> nodes_excluded_exact;  // e.g. the sensitivity fallback's choices
  // Nodes asked for in int8 / fp8 by name (the builder's --layer_precision): the small-layer
  // rules (< min_channels, GEMV) do not apply to them.
  std::set<std::string> nodes_forced_exact;
  int64_t min_channels = 16;
  // int8/fp8: also skip a MatMul/Gemm whose output has a single row (M = 1: every output dim but
  // the last is statically 1, e.g. a classifier head at batch 1), as nvidia-modelopt's ONNX
  // quantizer skips GEMV-shaped MatMuls: no Tensor Core gain, and a layer in front of the
  // output whose rounding error nothing downstream averages out.
  bool skip_single_row = false;
  int64_t block_size = 128;  // int4
};

struct WeightQuant {
  std::string node;    // consumer node name
  size_t input = 1;    // input index of the weight
  std::string tensor;  // initializer name
  int64_t axis = -1;   // per-channel axis; -1: per tensor
  int64_t block = 0;   // > 0: blocked along `axis` (int4)
};

struct Placement {
  std::vector<std::string> quantized_nodes;  // in graph order
  // Activation tensor -> the (node name, input index) uses that read its DequantizeLinear.
  std::map<std::string, std::vector<std::pair<std::string, size_t>>> activations;
  std::vector<WeightQuant> weights;
  std::vector<std::string> skipped;  // "Conv 'x': reason"
};

Placement place_qdq(const ir::Graph& g, const PlacementOptions& options);

// Removes from `p` every node that reads one of `tensors` through a Q/DQ (with all its uses and
// weights: it stays in high precision), e.g. when a calibration cache has no scale for them.
// Returns the number of nodes removed.
size_t drop_nodes_reading(Placement& p, const std::set<std::string>& tensors);

// Tensors whose scales must be equal: connected through data-movement ops (Reshape, Transpose,
// Flatten, Squeeze, Unsqueeze, Slice, Split, Identity, MaxPool, DepthToSpace, SpaceToDepth,
// Expand, Tile) and Concat (inputs and output). Returns tensor -> group representative.
std::map<std::string, std::string> scale_groups(const ir::Graph& g);

struct ScaleTable {
  std::map<std::string, double> amax;  // activation tensor -> clipping threshold
};
// Group members get the group's largest amax.
void share_scales(const ir::Graph& g, ScaleTable& table);

struct ApplyOptions {
  QuantMode mode = QuantMode::kInt8;
  // int4: per block (one scale), the clip ratio in {1.0, 0.95, ..., 0.5} of the block's |w|max
  // minimising sum_k importance[k] * (w_k - q(w_k))^2 over the block's elements.
  bool awq_clip = false;
  // awq_clip: weight initializer -> importance along its blocked (K) axis, E[x_k^2] of the
  // activation it multiplies (summed over its consumers). Weights without an entry (no
  // calibration data) get importance 1: the activation-blind search (weight MSE).
  std::map<std::string, std::vector<double>> awq_importance{};
  // Bias correction: consumer node name -> E[x_c] per input channel of the activation its
  // quantized weight multiplies (Conv: input axis 1; Gemm: K of A; MatMul: the last axis of A),
  // measured on the float model. Weight rounding shifts the mean of each output channel o by
  // sum_{c,k} (Wq - W)[o,c,k] E[x_c]; that constant is subtracted from the node's bias (Conv B,
  // Gemm C: created when absent; MatMul: the constant of an Add that is the MatMul output's
  // only reader). Per layer this is the least-squares constant for the weight error with float
  // inputs (Nagel et al. 2019, "Data-Free Quantization", bias correction; OpenVINO NNCF's
  // FastBiasCorrection). Nodes without an entry, a 2-D weight or such a bias are left as is.
  std::map<std::string, std::vector<double>> input_mean{};
  // Weight rounding: round to nearest (RTN), or GPTQ for the weights of MatMul/Gemm uses listed
  // in `hessian` (consumer node name -> E[x x^T] of its activation input over the K axis, K x K
  // row-major); other weights (Conv, no entry, not 2-D) are rounded to nearest. Scales are those
  // of RTN (awq_clip included): GPTQ only changes which grid point each weight takes.
  bool gptq = false;
  std::map<std::string, std::shared_ptr<const std::vector<float>>> hessian{};
  // Smallest scale written (activations and weights; weights are quantized with the raised
  // scale). --high_precision_dtype fp16 stores scales as float16: below its smallest normal
  // (2^-14) they lose precision and below 2^-25 they become 0, an invalid QuantizeLinear scale
  // (tensors with |x|max under ~1e-5: dead activations, random-weight models' deep layers).
  float min_scale = 0.0f;
};
struct ApplyStats {
  int64_t qdq_pairs = 0;
  int64_t weights = 0;
  int64_t bias_corrected = 0;  // nodes whose bias absorbed the weight error's mean
  int64_t gptq_rounded = 0;    // weights rounded by GPTQ
  int64_t scales_raised = 0;   // scales raised to ApplyOptions::min_scale
};

// GPTQ (Frantar et al. 2022, "GPTQ: Accurate Post-Training Quantization for Generative
// Pre-trained Transformers"): rounds w [n, k] (row-major, row = output channel, k = the
// reduction axis) column by column, each column's rounding error spread over the columns not
// yet rounded so that ||X (W - Q)^T||^2 is minimised for inputs X with E[x x^T] = hessian
// (k x k). Columns are visited in decreasing order of the Hessian's diagonal (act order), the
// Hessian is damped by damp * its mean diagonal, and updates are applied in blocks of 128
// columns (sgemm). round(v, row, col) maps a value of w[row, col] to its nearest grid point
// (dequantized), e.g. fp8 at that row's scale. Returns the rounded matrix; falls back to
// round-to-nearest when the Hessian is zero or not positive definite even after more damping.
using GridRound = std::function<float(float value, int64_t row, int64_t col)>;
std::vector<float> gptq_round(const std::vector<float>& w, int64_t n, int64_t k,
                              const std::vector<float>& hessian, const GridRound& round,
                              double damp = 0.01);

// The activation input and its channel axis (for ChannelStats) that bias correction needs for
// a weight use: Conv -> (X, 1), Gemm -> (A, transA ? 0 : 1), MatMul -> (A, -1); nullopt for
// other ops or a weight that is not input 1.
std::optional<std::pair<std::string, int64_t>> bias_correction_input(const ir::Node& n,
                                                                     size_t weight_input);
// Rewrites g: activations get QuantizeLinear -> DequantizeLinear (scale amax / qmax, zero point
// 0 of the mode's dtype) read by their listed uses; weights become quantized initializers
// feeding DequantizeLinear (per-channel axis / blocked). Scale zero (all-zero tensor) -> 1.
ApplyStats apply_qdq(ir::Graph& g, const Placement& p, const ScaleTable& table,
                     const ApplyOptions& options);

// Gives every unnamed node a unique name ("<op>_<n>"); returns how many were named.
size_t name_nodes(ir::Graph& g);
// True when the graph already contains QuantizeLinear / DequantizeLinear (or QLinear*) nodes.
bool has_qdq(const ir::Graph& g);
// Folds Conv -> BatchNormalization (Conv output read only by the BN, constant parameters) into
// the Conv's weight and bias. Returns the number folded.
size_t fold_batch_norm(ir::Graph& g);
// Raises the default-domain opset to `target`, rewriting ops whose form changed (Squeeze /
// Unsqueeze / Split / Reduce* axes to inputs, Softmax on the last axis, Clip / Pad attributes
// to inputs). Throws Error(kNotSupported) naming the op when a node cannot be converted.
void upgrade_opset(ir::Model& model, int64_t target);

// high_precision_dtype fp16 (opset >= 19): float initializers (Q/DQ scales included, Resize's
// roi/scales excepted), Cast-to-float and ConstantOfShape values become fp16; float graph inputs
// get a Cast to fp16, float graph outputs are computed in fp16 and cast back to fp32.
void convert_to_fp16(ir::Model& model);

}  // namespace trtutils::quantize
