// The engine file: versioned, self-describing, checksummed; weights aligned so that the file can
// be mapped and its weights used in place.
//
// Layout (all integers little-endian):
//   offset  size  field
//        0     8  magic "TRTUENG\0"
//        8     4  format version (kFormatVersion)
//       12     4  header size (64)
//       16     8  file size in bytes
//       24     8  metadata offset (64)
//       32     8  metadata size: UTF-8 JSON, described below
//       40     8  blob offset (a multiple of 64)
//       48     8  blob size: the weights, each at a 64-byte aligned offset inside the blob
//       56     8  checksum: checksum64 of bytes [0, 56) followed by bytes [64, file size)
//
// Metadata (JSON object):
//   "producer"  "trtutils <version>"
//   "opsets"    [{"domain": "", "version": 17}, ...]
//   "graph"     {"name", "inputs": [value], "outputs": [value], "values": [value],
//                "nodes": [node]}   nodes in execution order, after the builder's passes
//     value     {"name", "dtype": ONNX enum, "shape": null (rank unknown) |
//               [int | "symbol" | null]}
//     node      {"name", "op", "domain", "inputs", "outputs", "attributes": [attribute],
//                "precision", "device", "kernel", "tactic", "layout" (version >= 2)}
//     attribute {"name", "kind": "int|float|string|tensor|ints|floats|strings", "value"}:
//               floats as their IEEE-754 bit patterns (exact, infinities included), strings as
//               hex of their bytes, tensors as an index into "weights"
//   "gpu_graph" (cuda engines, version >= 2) the graph the CUDA executor runs: "graph" after the
//               builder's GPU fusions (fusion/pipeline.cpp), in the same value / node format, its
//               nodes carrying the GPU layer table; plus "initializers": [{"name", "weight":
//               index}], the plain graph's weights it shares and its own (named "@gpu/...",
//               as are its tensor attributes: "@gpu/@attr/<node>/<attribute>"). Its inputs and
//               outputs are the plain graph's. Absent: the executor derives it at load.
//   "weights"   [{"name", "dtype", "shape", "offset", "size"}]  initializers first, then
//               tensor attributes (named "@attr/<node>/<attribute>"), then the GPU plan's own
//   "info"      what the builder recorded: build config, target, IO profiles and formats,
//               memory plan (see builder.cpp); for cuda engines "gpu_tactics" (the kernel
//               choices timed at build: {"state": "timed" | "untimed", "why", "device",
//               "shapes", "choices": {what: choice}}); read by inspect and the runtime.
//
// Version 1 (no "gpu_graph", no "layout") is still read; the CPU backend runs "graph" of either.
// Reading trusts nothing: every offset, size, dtype, shape and name is checked, and a file
// that fails a check is refused with a message naming the file and what is wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace trtutils::engine {

inline constexpr char kMagic[8] = {'T', 'R', 'T', 'U', 'E', 'N', 'G', '\0'};
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kOldestFormatVersion = 1;  // still read (no stored GPU plan)
inline constexpr uint64_t kHeaderSize = 64;
inline constexpr uint64_t kAlignment = 64;

// How the builder chose to run one node.
struct LayerRecord {
  std::string precision;  // "fp32", "fp16", "int8", "fp8", or the dtype of a non-float layer
  std::string device;     // "cpu", "gpu", "dla" (issue: DLA), "dla (emulated)"
  std::string kernel;     // the backend's kernel name
  std::string tactic;     // the variant chosen by tactic selection ("" = the kernel's default)
  std::string layout;     // GPU layers: "NCHW" / "NHWC" of output 0 as planned ("" = not decided)
};

// A cuda engine's GPU plan: the graph the CUDA executor runs as it is (fusions made by the
// builder) and one layer record per node of it. Shares weights with the plain graph.
struct GpuPlanData {
  ir::Graph graph;
  std::vector<LayerRecord> layers;  // one per graph.nodes
};

struct EngineData {
  ir::Model model;                  // nodes in execution order; initializers = weights
  std::vector<LayerRecord> layers;  // one per model.graph.nodes
  std::optional<GpuPlanData> gpu;   // cuda engines of format >= 2 (opsets: model's)
  nlohmann::json info = nlohmann::json::object();
  // Read back from a file (deserialize_engine); serialize_engine writes its own.
  std::string producer{};  // "trtutils <version>" that wrote the file ("" if not recorded)
  uint32_t format_version = kFormatVersion;
};

// A fast 64-bit checksum (not cryptographic): detects corruption, not tampering.
uint64_t checksum64(const uint8_t* data, size_t n, uint64_t seed = 0);

// The whole file's bytes.
std::string serialize_engine(const EngineData& engine);
// Parses a file held in `bytes` (size bytes, 64-byte aligned start); the weights of the result
// point into `bytes` (which they keep alive). `source` names the file in messages.
EngineData deserialize_engine(std::shared_ptr<uint8_t> bytes, size_t size,
                              const std::string& source);
// Maps the file (copy-on-write) and deserializes it. Error(kIO) if it cannot be read.
EngineData read_engine_file(const std::filesystem::path& path);
// Serializes and writes atomically.
void write_engine_file(const std::filesystem::path& path, const EngineData& engine);

}  // namespace trtutils::engine
