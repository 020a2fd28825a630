// The CUDA executor's fusion patterns, one file each in this folder; pipeline.cpp says in which
// order they run. Each matches from node i of fg and returns 1 when it fused (the absorbed nodes
// marked removed, the fused node at fg.last_fused), else 0 with nothing changed. The fused ops
// (domain com.trtutils.cuda, cuda_ops.h: kGpuDomain) exist only in the executor's copy of the
// graph; the engine file and the CPU backend keep the plain ops.
#pragma once

#include <cstddef>

#include "backends/cuda/fusion/fusion_graph.h"

namespace trtutils::cuda::fusion {

// matmul_bias.cpp:
//   MatMul(A, B 2-D) -> Add(bias of B's N columns) [-> erf GELU] [-> Reshape [R0, R1, N] ->
//   Transpose(1, 0, 2)] [-> Add(residual)], a Transpose(X, [1, 0, 2]) feeding it absorbed
//                                                   => com.trtutils.cuda::MatMulBias
size_t fuse_matmul_bias(FusionGraph& fg, size_t i);
//   Gemm(bias) -> Reshape [R0, R1, N] -> Transpose(1, 0, 2) [-> Add(residual)]
//                                                   => MatMulBias with trans_b and y_grid
size_t fuse_gemm_grid(FusionGraph& fg, size_t i);

// gelu.cpp: x * 0.5 * (1 + Erf(x / sqrt(2))) alone    => com.trtutils.cuda::Gelu
size_t fuse_gelu_alone(FusionGraph& fg, size_t i);

// attention.cpp: MatMul(Q, KT) -> Mul / Div by scalars -> Softmax(last axis) -> MatMul(., V),
//   the scalings folded into its scale, the Transposes / Reshapes around it absorbed as views
//                                                   => com.trtutils.cuda::Attention
size_t fuse_attention(FusionGraph& fg, size_t i);
// attention_q.cpp: the Q/DQ attention (float8 or int8 QMatMuls around a Softmax)
//                                                   => com.trtutils.cuda::AttentionQ
size_t fuse_attention_q(FusionGraph& fg, size_t i);

// conv_quantize.cpp: Conv / FusedConv (float32, <= 4 input channels) -> QuantizeLinear (per
//   tensor)                                         => com.trtutils.cuda::ConvQuantize
size_t fuse_conv_quantize(FusionGraph& fg, size_t i);
// patch_embed.cpp: Conv with kernel = stride -> Reshape [N, K, P] -> Transpose(0, 2, 1)
//                                                   => com.trtutils.cuda::PatchEmbed
size_t fuse_patch_embed(FusionGraph& fg, size_t i);

// qgemm_epilogues.cpp: a com.trtutils::QGemm with a float output takes what follows it into its
// epilogue:
//   -> GELU chain [-> QuantizeLinear]               => the QGemm with gelu = 1
size_t fuse_qgemm_gelu(FusionGraph& fg, size_t i);
//   -> Reshape [R0, R1, N] -> Transpose(1, 0, 2) [-> Add(residual)]
//                                                   => the QGemm with y_grid (and R)
size_t fuse_qgemm_grid(FusionGraph& fg, size_t i);
//   -> Reshape / Unsqueeze / Transpose / Squeeze splitting its columns into [P, rows..., N / P]
//      (torch's packed QKV)                         => the QGemm with y_split
size_t fuse_qgemm_split(FusionGraph& fg, size_t i);
//   -> Add(float32 residual)                        => the QGemm with the residual as its R
size_t fuse_qgemm_residual(FusionGraph& fg, size_t i);

// layernorm_quantize.cpp: LayerNormalization [-> Transpose(1, 0, 2)] -> QuantizeLinear (per
//   tensor)                                         => com.trtutils.cuda::LayerNormQuantize
//   or, when a float-output QGemm computes its input, => that QGemm's second output
//   (QGemmLnInput in cuda_ops.h: the layer norm in the product's epilogue pass)
size_t fuse_layer_norm_quantize(FusionGraph& fg, size_t i);

// dequantize_global_pool.cpp: DequantizeLinear (per tensor) -> GlobalAveragePool | GlobalMaxPool
//                                                   => com.trtutils.cuda::DequantizeGlobalPool
size_t fuse_dequantize_global_pool(FusionGraph& fg, size_t i);

// binary_quantize.cpp: Add / Sub / Mul / Div of two computed float values -> QuantizeLinear (per
//   tensor)                                         => com.trtutils.cuda::BinaryQuantize
size_t fuse_binary_quantize(FusionGraph& fg, size_t i);

}  // namespace trtutils::cuda::fusion
