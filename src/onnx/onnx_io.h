// Reading and writing ONNX models (protobuf, Debian's libonnx generated classes) to and from
// the IR. Loading folds `Constant` nodes into initializers and resolves external data only
// inside the model's folder. Saving writes a temporary file in the target folder and renames
// it into place; weights round-trip bit-exactly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace trtutils::onnx_io {

// Default-domain opsets load_model accepts; others are refused with Error(kNotSupported).
inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 21;

struct LoadOptions {
  // Refuse models (protobuf + external data) larger than this many bytes. 0 = no limit.
  uint64_t max_bytes = 0;
};

// Loads `path`. `Constant` nodes become initializers; graph inputs that also have an initializer
// (IR < 4 exporters) are kept only as initializers, i.e. treated as constants. Nodes are checked
// (topological_sort) so every input has a producer. Subgraphs (If/Loop/Scan) are converted too,
// but their references to outer-scope values are not validated here. External data is resolved
// relative to the model's folder and must stay inside it ('..', absolute paths and symlinks leaving
// the folder are refused). Throws trtutils::Error (kIO: unreadable; kInvalidArgument: not an ONNX
// model / malformed; kNotSupported: opset outside 7..21 or unknown dtype) naming the file and the
// tensor or node at fault.
ir::Model load_model(const std::filesystem::path& path, const LoadOptions& options = {});
// Parses serialized ModelProto bytes; `base_dir` resolves external data ("" = none allowed).
ir::Model load_model_from_bytes(std::string_view bytes, const std::filesystem::path& base_dir,
                                const LoadOptions& options = {});

// The external data files `path` references (the "location" of every tensor stored outside the
// protobuf: initializers, tensor attributes, subgraphs), each once, in first-use order; empty
// when every tensor is inline. Reads only the protobuf. Throws like load_model when the file
// cannot be read or parsed.
std::vector<std::string> external_data_locations(const std::filesystem::path& path);

struct SaveOptions {
  // Write initializers larger than this to "<model file name>.data" next to the model
  // (ONNX external data). 0 = always inline (protobuf is limited to 2 GiB).
  uint64_t external_data_threshold = 0;
};
void save_model(const ir::Model& model, const std::filesystem::path& path,
                const SaveOptions& options = {});
std::string serialize_model(const ir::Model& model);

// A TensorProto (serialized bytes, as in ONNX's test_data_set_*/input_*.pb) to a Tensor.
// Throws Error(kInvalidArgument) if the bytes are not a valid TensorProto or use external data.
Tensor tensor_from_proto_bytes(std::string_view bytes, std::string* name = nullptr);
// The reverse (raw_data), e.g. to write test data sets.
std::string tensor_to_proto_bytes(const Tensor& tensor, const std::string& name = "");

}  // namespace trtutils::onnx_io
