// Graph passes that run on the IR before execution. Each pass is its own file; the pipeline
// (pipeline.cpp) orders them and can switch any off by name.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace trtutils::passes {

struct ShapeInferenceOptions {
  // strict: an op's shape function error of kind kInvalidArgument is fatal (a graph that cannot
  // be valid). Other errors (and every error when not strict) leave the value's shape unknown
  // and are logged at verbose level.
  bool strict = false;
};
// Fills graph.value_info with dtype/shape for every node output the op schemas can infer.
// Returns the number of values whose type or shape became known.
size_t infer_shapes(ir::Graph& graph, int64_t opset, const ShapeInferenceOptions& options = {});

struct ConstantFoldingOptions {
  // Ops never folded: Q/DQ stay so that quantized islands remain visible to the builder.
  std::set<std::string> keep_ops = {"QuantizeLinear", "DequantizeLinear"};
  // Outputs bigger than this are not materialised (they would bloat the model).
  size_t max_output_bytes = size_t{64} << 20;
};
// Evaluates every node whose inputs are all initializers (and Shape/Size of values whose shape
// is static), replacing it by initializers. Returns the number of nodes removed.
size_t fold_constants(ir::Graph& graph, int64_t opset, const ConstantFoldingOptions& options = {});

// Rewrites, on float32, float16 or bfloat16 values (one dtype per pattern), Conv ->
// [Add(residual)] -> [activation] into one node com.trtutils::FusedConv computing
// Y = act(conv(X, W) + B + Residual):
//   inputs X, W, [B], [Residual] (Residual: same shape as Y, read only);
//   attributes: the Conv's, plus "activation" (string: Relu, Clip, LeakyRelu, Sigmoid,
//   HardSwish, Silu; absent = none) and "activation_params" (floats: Clip [min, max], LeakyRelu
//   [alpha]; infinities for an absent Clip bound).
// Only activations with an exact oneDNN eltwise post-op are fused (Silu: the exporters'
// Mul(v, Sigmoid(v)), see match_silu), only when every value fused away has exactly one reader
// (the SiLU's input: its Sigmoid and Mul) and is not a graph output, and only for an Add whose
// other input has the Conv output's shape (no broadcasting; dims static or equal symbols). Needs
// shape inference first (dtypes and shapes come from value_info). The fused node takes the position
// of the pattern's last node. Returns the number of Conv nodes fused.
size_t fuse_convolutions(ir::Graph& graph, int64_t opset);

// The activation node `n` computes when a fused kernel can apply it exactly: name Relu, Clip
// (params [lo, hi]; constant bounds, infinities for absent ones), LeakyRelu ([alpha]), Sigmoid or
// HardSwish (oneDNN's eltwise post-ops; SiLU: match_silu). nullopt for anything else.
struct Activation {
  std::string name;
  std::vector<float> params;
};
std::optional<Activation> as_activation(const ir::Graph& g, const ir::Node& n, int64_t opset);

// Whether a node is in ONNX's default domain ("" or "ai.onnx").
bool is_default_domain(const ir::Node& node);

// Sets a fused node's "activation" (string) and "activation_params" (floats) attributes.
void set_fused_activation(ir::Node& node, const std::string& name,
                          const std::vector<float>& params);

// SiLU as exporters write it (torch's nn.SiLU, EfficientNet's and YOLO's activation):
// s = Sigmoid(v), Mul(v, s) with the operands in either order, where v has exactly two reads
// (uses[v] == 2: these two nodes; graph outputs counted as reads) and s one. `last_reader[v]` is
// the index of v's last reader, which is the Mul (it reads s, made by the Sigmoid before it).
// Returns the Sigmoid's and the Mul's node indices, or nullopt.
std::optional<std::pair<size_t, size_t>> match_silu(
    const ir::Graph& graph, const std::string& v, const std::unordered_map<std::string, int>& uses,
    const std::unordered_map<std::string, size_t>& last_reader);

// Fuses the quantized islands of a Q/DQ model, DequantizeLinear(X), DequantizeLinear(W) ->
// Conv | Gemm | MatMul [-> Add(bias)] [-> Add(residual)] [-> activation] [-> QuantizeLinear],
// into com.trtutils::QConv / QGemm / QMatMul nodes (contract and semantics: ops/qlinear_ops.h;
// the exact rules: qdq_fusion.cpp), and DequantizeLinear -> MaxPool -> QuantizeLinear with equal
// scale and zero point into an int8 MaxPool. Scales and zero points must be initializers;
// values fused away must have one reader and not be graph outputs. The DequantizeLinear nodes
// stay for dead-code elimination. Needs shape inference first. Returns the number of fusions.
size_t fuse_qdq(ir::Graph& graph, int64_t opset);

// Runs int8 and float8 QConv nodes channels-last (their "channels_last" attribute; the int8
// kernels' native layout, and the one cuBLASLt's fp8 products read without a copy): X and R are
// read through Transpose(NCHW -> NHWC) and Y is written NHWC with a Transpose back, except that a
// QConv reading another converted QConv's output (or an already transposed value) reads the NHWC
// value directly, so chains of quantized convolutions stay channels-last and only the chain's
// boundaries transpose. Needs dtypes and static (or named) shapes in value_info. Returns the number
// of QConv nodes converted. Run dead-code elimination afterwards (Transposes back to NCHW that
// nobody reads).
size_t qdq_channels_last(ir::Graph& graph);

// Runs float32 Conv and FusedConv nodes (constant weights, static or named shapes) channels-last
// as FusedConv with "channels_last" = 1 (see ops/nn_ops.cpp): X and the residual are read
// through Transpose(NCHW -> NHWC) and Y is written NHWC with a Transpose back, except where the
// value already has a channels-last twin (made by a converted conv or an earlier Transpose), so
// chains of convolutions stay channels-last and only their boundaries transpose. For the CPU
// backend only (oneDNN's NHWC kernels); the CUDA backend does not read the attribute. Run
// dead-code elimination afterwards. A SqueezeExcite whose X has a channels-last twin runs
// channels-last too. Returns the number of convolutions converted.
size_t conv_channels_last(ir::Graph& graph);

// Runs float32 2-D Conv and FusedConv nodes (constant weights, static channels) in the blocked
// layout [N, C / 16, H, W, 16] (ops/blocked_layout.h) as FusedConv with "blocked" = 1, with
// MaxPool, SqueezeExcite and the global pools between them ("blocked" = 1; the global pools write
// their plain [N, C, 1, 1] themselves, C their attribute "channels"). X enters through
// com.trtutils::ToBlocked unless it already has a blocked twin, or a first convolution of at most
// 4 channels reads it plain ("plain_input" = 1); Y is written blocked, with
// com.trtutils::FromBlocked (attribute "channels") for plain readers. Not on graphs that already
// hold channels-last nodes (int8 QConv chains): conv_channels_last serves those. CPU backend only.
// Run dead-code elimination afterwards. Returns the number of convolutions converted.
size_t conv_blocked_layout(ir::Graph& graph);

// Rewrites a blocked 1x1 FusedConv (stride 1, no padding, ungrouped, no residual) whose output
// only a blocked 3x3 depthwise FusedConv (padding 1, stride 1 or 2, no residual) reads into one
// com.trtutils::PointwiseDepthwise node (ops/pointwise_depthwise.h); neither activation Silu.
// Weights and biases constant. For the CPU plan, after conv_blocked_layout and dead-code
// elimination (the FromBlocked readers it leaves would count as readers). Returns the number of
// pairs fused.
// `keep` (when given) decides per fused node whether the pair stays fused (the CPU backend: only
// where oneDNN has its native fused kernel).
size_t fuse_pointwise_depthwise(
    ir::Graph& graph, const std::function<bool(const ir::Graph&, const ir::Node&)>& keep = nullptr);

// Rewrites float32 squeeze-excitation blocks, GlobalAveragePool(X) -> 1x1 Conv / FusedConv
// (W1 [R, C, 1, 1], B1, activation A) -> 1x1 Conv (W2 [C, R, 1, 1], B2) -> gate -> Mul(X, gate)
// with the gate a Sigmoid (node, or conv2's fused activation) or a HardSigmoid node, into one
// com.trtutils::SqueezeExcite node computing Y = X * gate(W2 . A(W1 . mean(X) + B1) + B2):
//   inputs X [N, C, H, W], W1, [B1], W2, [B2] (weights and biases constant);
//   attributes "activation" / "activation_params" (A, as FusedConv's), "gate" (Sigmoid or
//   HardSigmoid), "gate_params" (HardSigmoid [alpha, beta]), "channels_last" (X and Y are
//   [N, H, W, C]; set by conv_channels_last).
// Only when the pool, the convolutions and the gate each have one reader and are no graph
// output (X itself may have other readers). For the CPU plan (run_cpu_layout_pipeline). Needs
// dtypes and shapes in value_info. Returns the number of blocks fused.
size_t fuse_squeeze_excite(ir::Graph& graph);

// Rewrites float32 MatMul(A, W) -> Add(bias) [-> GELU] [-> Add(residual)] into one node
// com.trtutils::FusedMatMul computing Y = [GELU](A x W + bias) [+ Residual]:
//   inputs A [..., K], W [K, N] (an initializer), bias (N values, an initializer, either operand
//   order of the Add), [Residual] (Y's shape, read only); attribute "gelu" (1: the exact GELU,
//   which exporters write as x * 0.5 * (1 + Erf(x / sqrt 2)): Div or Mul by 1/sqrt 2, Erf, Add 1,
//   Mul by x, Mul by 0.5).
// Only when every value fused away has one reader and is no graph output (the GELU's input: its
// Div and Mul). For the CPU plan (run_cpu_layout_pipeline). Needs dtypes and shapes in
// value_info. Returns the number of MatMul nodes fused.
size_t fuse_matmuls(ir::Graph& graph);

// Rewrites a float32 MatMul of two activations (rank >= 2) with the single-reader Transposes
// (inputs of known rank) and scalar-constant Mul / Div nodes that feed its operands or follow its
// product into one com.trtutils::PermutedMatMul (ops/permuted_matmul.h): the Transposes become
// its perm_a / perm_b / perm_y, the scalings its alpha. For the CPU plan, whose backend reads
// and writes the strided views; `keep` (when given) decides per fused node whether it stays
// (the CPU backend: where oneDNN has an optimized kernel for the views). Returns the number of
// MatMul nodes folded.
size_t fold_matmul_permutes(
    ir::Graph& graph, const std::function<bool(const ir::Graph&, const ir::Node&)>& keep = nullptr);

// The CPU plan's layout step, after run_pipeline on a graph that the CPU backend runs:
// fuse_squeeze_excite ("se_fusion"), fuse_matmuls ("matmul_fusion"), fold_matmul_permutes
// ("matmul_permutes"), conv_blocked_layout
// ("blocked_layout") then conv_channels_last for what is left (both off with "conv_layout"),
// then dead-code elimination, then fuse_pointwise_depthwise ("pointwise_depthwise"). `disabled` and
// TRTUTILS_DISABLE_PASSES as for run_pipeline.
// What the CPU backend answers for its plan: whether a PointwiseDepthwise pair runs fused
// (cpu::nn::pointwise_depthwise_native). Empty: every pair the pass matches fuses.
struct CpuPlanHooks {
  std::function<bool(const ir::Graph&, const ir::Node&)> pointwise_depthwise;
  // Whether a PermutedMatMul runs on strided views (cpu::nn::permuted_matmul_native). Empty:
  // every MatMul the pass matches folds.
  std::function<bool(const ir::Graph&, const ir::Node&)> permuted_matmul;
};
void run_cpu_layout_pipeline(ir::Graph& graph, const std::set<std::string>& disabled = {},
                             const CpuPlanHooks& hooks = {});

// Runs the standard pipeline: shape inference, constant folding (to a fixed point, so that
// Shape-driven subgraphs disappear when shapes are static), Q/DQ fusion, conv fusion, dead-code
// elimination. `disabled` names passes to skip: "constant_folding", "qdq_fusion", "qdq_layout"
// (qdq_channels_last), "conv_fusion", "dead_code_elimination".
// The environment variable TRTUTILS_DISABLE_PASSES (comma-separated names) adds to it.
// Tools that rewrite and save models (e.g. the quantizer) should disable "conv_fusion" and
// "qdq_fusion": their FusedConv / QConv / QGemm / QMatMul nodes are for our backends only.
void run_pipeline(ir::Graph& graph, int64_t opset, const std::set<std::string>& disabled = {});

// A fusion's rewrite of graph.nodes: each node index in `replacement` becomes its fused node,
// the others marked in `removed` are dropped, the rest keep their order.
void splice_nodes(ir::Graph& graph, std::unordered_map<size_t, ir::Node>& replacement,
                  const std::vector<bool>& removed);

}  // namespace trtutils::passes
