// The Transpose permutations and shapes of the channels-last passes (conv_layout.cpp,
// qdq_fusion.cpp): NC... -> N...C and back.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace trtutils::passes {

// [0, 2, ..., rank-1, 1]: channels first -> channels last.
inline std::vector<int64_t> to_last_perm(size_t rank) {
  std::vector<int64_t> p{0};
  for (size_t i = 2; i < rank; ++i) p.push_back(static_cast<int64_t>(i));
  p.push_back(1);
  return p;
}
// [0, rank-1, 1, ..., rank-2]: channels last -> channels first.
inline std::vector<int64_t> to_first_perm(size_t rank) {
  std::vector<int64_t> p{0, static_cast<int64_t>(rank) - 1};
  for (size_t i = 1; i + 1 < rank; ++i) p.push_back(static_cast<int64_t>(i));
  return p;
}
inline ir::SymShape permuted(const ir::SymShape& s, const std::vector<int64_t>& perm) {
  ir::SymShape r;
  for (int64_t p : perm) r.push_back(s[p]);
  return r;
}

}  // namespace trtutils::passes
