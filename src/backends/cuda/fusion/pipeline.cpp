// The CUDA executor's own fusions, on its private copy of the engine graph (the engine file and
// the CPU backend keep the plain ops; see cuda_ops.h, fuse_for_gpu): which passes run, in which
// order, and why. The patterns are one file each in this folder (patterns.h lists them).
//
//   1. promote_half_islands (half_islands.cpp): the float16 rest of a Q/DQ graph becomes float32
//      first, since every pattern is written for float32 activations.
//   2. The patterns, in one walk over the nodes in graph order (run_patterns). Each node is
//      offered to the patterns that start at its op, in the order below, until one fuses. A
//      fused node takes the place of its chain's last node, further on, so the walk meets it
//      again and a later pattern may extend it (a QGemm's GELU, then its grid).
//        Conv, FusedConv      ConvQuantize, else PatchEmbed (a plain Conv only).
//        QGemm                the epilogues: GELU [+ quantizer], grid [+ residual], QKV split,
//                             then a lone residual (it takes a QGemm none of the others changed;
//                             the grid takes the residual after its Transpose itself).
//        LayerNormalization   LayerNormQuantize, or into the epilogue of the QGemm computing its
//                             input: that QGemm comes earlier in graph order, so its own
//                             epilogues are settled by then.
//        GlobalAveragePool,
//        GlobalMaxPool        DequantizeGlobalPool (matched back to its DequantizeLinear).
//        QMatMul              AttentionQ (TRTUTILS_CUDA_ATTENTION_FP8), matched at Q x KT; it
//                             moves its operands' quantizers into the QKV QGemm's split, which
//                             the walk met earlier.
//        MatMul               Attention (TRTUTILS_CUDA_ATTENTION), else MatMulBias.
//        Gemm                 MatMulBias with the grid.
//        Mul, Div             a lone GELU chain (one after a product was taken by the product's
//                             pattern, met earlier), else BinaryQuantize.
//        Add, Sub             BinaryQuantize.
//   3. fuse_batchnorm_act (batchnorm_act.cpp), over what the patterns left: no pattern starts at
//      a BatchNormalization.
//
// Nodes fused away are dropped when the walk ends; until then every index stays valid.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/fusion_graph.h"
#include "backends/cuda/fusion/patterns.h"
#include "trtutils/logging.h"

namespace trtutils::cuda {

namespace fusion {
namespace {

// The patterns over g, in the order the head comment gives. absorbed (optional): original node
// name -> what it became. Returns the fusions made.
size_t run_patterns(ir::Graph& g, int64_t opset, bool attention, bool attention_fp8,
                    std::map<std::string, FusedInto>* absorbed = nullptr) {
  FusionGraph fg(g, opset);
  size_t fused = 0;
  std::vector<std::string> names;
  if (absorbed)
    for (const auto& n : g.nodes) names.push_back(n.name);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (fg.removed[i]) continue;
    const ir::Node& n = g.nodes[i];
    const bool qmatmul = n.domain == "com.trtutils" && n.op_type == "QMatMul";
    const bool qgemm = n.domain == "com.trtutils" && n.op_type == "QGemm";
    const bool conv = (default_domain(n) && n.op_type == "Conv") ||
                      (n.domain == "com.trtutils" && n.op_type == "FusedConv");
    if (!default_domain(n) && !qmatmul && !qgemm && !conv) continue;
    const bool candidate = qmatmul || qgemm || conv || n.op_type == "MatMul" ||
                           n.op_type == "Gemm" || n.op_type == "Div" || n.op_type == "Mul" ||
                           n.op_type == "Add" || n.op_type == "Sub" ||
                           n.op_type == "LayerNormalization" || n.op_type == "GlobalAveragePool" ||
                           n.op_type == "GlobalMaxPool";
    if (!candidate || (qmatmul && !attention_fp8)) continue;
    const std::vector<bool> before = absorbed ? fg.removed : std::vector<bool>{};
    fg.last_fused = SIZE_MAX;
    size_t f = 0;
    if (conv) {
      f = fuse_conv_quantize(fg, i);
      if (!f) f = fuse_patch_embed(fg, i);
    } else if (qgemm) {
      f = fuse_qgemm_gelu(fg, i);
      if (!f) f = fuse_qgemm_grid(fg, i);
      if (!f) f = fuse_qgemm_split(fg, i);
      if (!f) f = fuse_qgemm_residual(fg, i);
    } else if (n.op_type == "LayerNormalization") {
      f = fuse_layer_norm_quantize(fg, i);
    } else if (n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool") {
      f = fuse_dequantize_global_pool(fg, i);
    } else if (qmatmul) {
      f = fuse_attention_q(fg, i);
    } else if (n.op_type == "MatMul") {
      const size_t a = attention ? fuse_attention(fg, i) : 0;
      f = a ? a : fuse_matmul_bias(fg, i);
    } else if (n.op_type == "Gemm") {
      f = fuse_gemm_grid(fg, i);
    } else {
      if (n.op_type == "Mul" || n.op_type == "Div") f = fuse_gelu_alone(fg, i);
      if (!f) f = fuse_binary_quantize(fg, i);
    }
    fused += f;
    if (f && absorbed && fg.last_fused != SIZE_MAX) {
      const FusedInto into{g.nodes[fg.last_fused].op_type, g.nodes[fg.last_fused].name};
      for (size_t j = 0; j < names.size(); ++j)
        if (((fg.removed[j] && !before[j]) || j == fg.last_fused) && !names[j].empty())
          (*absorbed)[names[j]] = into;
    }
  }
  if (fused) fg.erase_removed();
  return fused;
}

}  // namespace
}  // namespace fusion

namespace {

// The float8 Q/DQ attention fusion: on unless TRTUTILS_CUDA_ATTENTION_FP8 is 0 / off / false
// (the layers one by one, for A/B runs).
bool attention_fp8_enabled() {
  return fusion::switch_on("TRTUTILS_CUDA_ATTENTION_FP8");
}

}  // namespace

std::map<std::string, FusedInto> fusion_plan(const ir::Graph& graph, int64_t opset) {
  ir::Graph copy = graph;
  std::map<std::string, FusedInto> absorbed;
  promote_half_islands(copy, &absorbed);
  fusion::run_patterns(copy, opset, kernel_switch("TRTUTILS_CUDA_ATTENTION", true),
                       attention_fp8_enabled(), &absorbed);
  fuse_batchnorm_act(copy, opset, &absorbed);
  return absorbed;
}

size_t fuse_for_gpu(ir::Graph& graph, int64_t opset) {
  promote_half_islands(graph, nullptr);
  const size_t n =
      fusion::run_patterns(graph, opset, kernel_switch("TRTUTILS_CUDA_ATTENTION", true),
                           attention_fp8_enabled()) +
      fuse_batchnorm_act(graph, opset, nullptr);
  if (n)
    TRT_LOG_VERBOSE(
        "cuda fusion: {} MatMul bias / GELU / attention / conv + quantize chain(s) fused", n);
  return n;
}

}  // namespace trtutils::cuda
