// onnx::TensorProto <-> Tensor. Internal to src/onnx (the only place that sees protobuf).
// Reading accepts raw_data (little-endian) and every typed field the ONNX spec allows for the
// dtype; every size is checked against the dims before anything is allocated. Writing always
// uses raw_data so that weights round-trip bit-exactly.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "trtutils/tensor.h"

namespace trtutils::onnx_io {

// Where external data (data_location == EXTERNAL) may be read from.
struct ExternalDataContext {
  // The model's folder; empty: the model came from memory and may not use external data.
  std::filesystem::path base_dir;
  // Budget shared by every tensor of one model (LoadOptions::max_bytes); 0 = unlimited.
  uint64_t max_bytes = 0;
  uint64_t* bytes_read = nullptr;  // running total, checked against max_bytes when set
  // Canonical model folder, computed once by the first external tensor.
  std::filesystem::path canonical_base;
};

// `what` names the tensor's owner in messages ("initializer 'w' of 'model.onnx'"). `ext` may be
// null: then external data is refused. Throws Error(kInvalidArgument) for malformed tensors
// (negative dims, data size mismatch, bad external data), Error(kNotSupported) for dtypes we
// cannot hold (string, complex, unknown) and segments.
Tensor tensor_from_proto(const onnx::TensorProto& proto, ExternalDataContext* ext,
                         const std::string& what);

// Writes dims, data_type and raw_data (name is left to the caller).
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto* proto);

}  // namespace trtutils::onnx_io
