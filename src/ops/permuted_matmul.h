// com.trtutils::PermutedMatMul (the CPU plan's fold_matmul_permutes pass): a MatMul that reads
// its operands through Transposes and writes its product through one, scaled by a constant, so
// that an attention block's head splitting, key transposition, 1/sqrt(d) scaling and head
// merging cost no pass over memory (the backend reads and writes the strided views directly):
//   inputs      A, B (the tensors before their Transposes)
//   output      Y = Transpose(alpha * MatMul(Transpose(A, perm_a), Transpose(B, perm_b)), perm_y)
//   attributes  "perm_a", "perm_b", "perm_y" (absent or empty: no Transpose on that side),
//               "alpha" (float, default 1).
// split_permuted_matmul gives the plain nodes it stands for (without alpha, which changes no
// shape): shape inference and the reference kernel run those.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace trtutils::ops {

// [Transpose A] [Transpose B] MatMul [Transpose Y], in that order; the intermediate values are
// named after the fused node.
std::vector<ir::Node> split_permuted_matmul(const ir::Node& fused);

}  // namespace trtutils::ops
