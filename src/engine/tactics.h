// Tactic selection: for layers whose backend kernel has several variants (CPU convolutions:
// direct, Winograd for 3x3 stride 1, matmul for pointwise), each variant is timed on the
// layer's real shapes and the fastest kept (optimization_level >= 3). The choice is stored in
// the node's "tactic" attribute (read by the kernel) and the layer table.
//
// Timing cache (JSON): {"format": "trtutils-timing-cache", "version": 1, "entries": {key:
// {"tactic": ..., "ms": {tactic: median ms}}}}; key = device + thread count + op + input shapes
// and dtypes + attributes, so one file serves several models and machines. Read before the
// build, written (atomically) after it when something new was timed.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "ir/graph.h"

namespace trtutils::engine {

class TimingCache {
 public:
  // Missing file: empty cache. A file that is not a timing cache: Error(kInvalidArgument).
  static TimingCache load(const std::filesystem::path& path);
  void save(const std::filesystem::path& path) const;
  const nlohmann::json* find(const std::string& key) const;
  void put(const std::string& key, nlohmann::json value);
  bool dirty() const { return dirty_; }
  size_t size() const { return entries_.size(); }

 private:
  nlohmann::json entries_ = nlohmann::json::object();
  bool dirty_ = false;
};

struct TacticStats {
  int64_t layers_timed = 0;
  int64_t cache_hits = 0;
};

// Times the variants of every multi-tactic layer at `input_shapes` (dynamic inputs: the opt
// profile) and writes the choice into the nodes. `device` names the machine in cache keys.
TacticStats select_tactics(ir::Model& model, const std::map<std::string, Shape>& input_shapes,
                           TimingCache& cache, const std::string& device, int num_threads);

// The "global" timing cache: $TRTUTILS_CACHE_DIR, else ~/.cache/trtutils, + timing.cache.
std::filesystem::path global_timing_cache_path();

}  // namespace trtutils::engine
