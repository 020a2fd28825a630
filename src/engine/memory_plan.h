// Activation memory planning by liveness: every activation (graph inputs, node outputs) gets an
// offset in one arena such that values alive at the same time never overlap. Greedy by size
// (largest first, lowest offset that fits), offsets aligned to 256 bytes (what cuBLASLt and
// cuDNN want). The CPU runtime frees by liveness instead of using the offsets; the arena size is
// what a backend with one allocation (CUDA) needs, and what inspect reports.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace trtutils::engine {

struct MemoryPlan {
  uint64_t weight_bytes = 0;
  uint64_t arena_bytes = 0;  // the planned arena
  uint64_t sum_bytes = 0;    // all activations without reuse
  int64_t planned_values = 0;
  int64_t unplanned_values = 0;  // shape unknown at plan time (data-dependent)
  std::map<std::string, uint64_t> offsets;
};

// input_shapes: shapes for inputs with symbolic dims (e.g. the opt profile); others as declared.
MemoryPlan plan_memory(const ir::Model& model, const std::map<std::string, Shape>& input_shapes);

}  // namespace trtutils::engine
