// A .npy written piece by piece (the data may not fit in memory at once) to a temporary file
// next to the target, renamed over it by commit(). Without commit() (an error on the way) the
// temporary file is removed and the target is untouched.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "trtutils/tensor.h"

namespace trtutils::data {

// The format 1.0 header (magic, length, dict, padding to a multiple of 64 bytes).
// float32/float16/uint8/int8 and the other plain numeric types; Error(kNotSupported) otherwise.
std::string npy_header(DataType dtype, const Shape& shape);

class NpyStreamWriter {
 public:
  // Creates the temporary file and writes the header. Error(kIO) naming `path` on failure.
  NpyStreamWriter(const std::filesystem::path& path, DataType dtype, const Shape& shape);
  ~NpyStreamWriter();
  NpyStreamWriter(const NpyStreamWriter&) = delete;
  NpyStreamWriter& operator=(const NpyStreamWriter&) = delete;

  void write(const void* data, size_t bytes);
  // Checks that exactly the shape's bytes were written, syncs, renames over the target.
  void commit();

 private:
  std::filesystem::path path_, tmp_;
  int fd_ = -1;
  int slot_ = -1;  // registered for removal on interrupt
  uint64_t expected_ = 0, written_ = 0;
};

}  // namespace trtutils::data
