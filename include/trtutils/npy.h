// numpy .npy files: read (format versions 1.0, 2.0, 3.0; C order; little- or big-endian
// numeric types, bool) and write (version 1.0, or 2.0 when the header needs it). Fortran-order
// arrays, object arrays and structured dtypes are refused with a clear error.
#pragma once

#include <filesystem>
#include <string_view>

#include "trtutils/tensor.h"

namespace trtutils {

// Throws Error(kIO) if unreadable, Error(kInvalidArgument) naming the file if malformed
// (bad magic, truncated data, header/data size mismatch, Fortran order, unsupported dtype).
Tensor npy_load(const std::filesystem::path& path);
// What a .npy file holds, from its header, checked as npy_load checks it (the file must hold
// exactly the data its shape needs), without reading the data: for readers that stream it.
struct NpyHeader {
  DataType dtype = DataType::kUndefined;
  Shape shape;
  uint64_t data_offset = 0;  // where the data starts in the file
  bool big_endian = false;   // multi-byte items stored big-endian ('>f4')
};
NpyHeader npy_read_header(const std::filesystem::path& path);
Tensor npy_from_bytes(std::string_view bytes, std::string_view what = "<memory>");
// Writes atomically (temporary file in the same folder, then rename). fp8/int4/bfloat16 have no
// numpy dtype: they are written as raw bytes with numpy's void-like descr ('|V1'... is not
// portable), so they are refused with Error(kNotSupported).
void npy_save(const std::filesystem::path& path, const Tensor& tensor);
std::string npy_to_bytes(const Tensor& tensor);

}  // namespace trtutils
