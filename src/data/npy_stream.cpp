#include "data/npy_stream.h"

#include <fcntl.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/check.h"
#include "trtutils/file_util.h"

namespace trtutils::data {

namespace {

std::string descr(DataType t) {
  if (t == DataType::kFloat32) return "<f4";
  if (t == DataType::kFloat16) return "<f2";
  if (t == DataType::kFloat64) return "<f8";
  if (t == DataType::kUInt8) return "|u1";
  if (t == DataType::kInt8) return "|i1";
  if (t == DataType::kUInt16) return "<u2";
  if (t == DataType::kInt16) return "<i2";
  if (t == DataType::kInt32) return "<i4";
  if (t == DataType::kInt64) return "<i8";
  TRT_THROW(ErrorCode::kNotSupported, "streamed .npy of {} is not supported", dtype_name(t));
}

}  // namespace

std::string npy_header(DataType dtype, const Shape& shape) {
  std::string dims = fmt::format("{}", fmt::join(shape, ", "));
  if (shape.size() == 1) dims += ",";  // a 1-tuple: "(5,)"
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr(dtype), dims);
  const size_t unpadded = 10 + dict.size() + 1;  // magic + version + length, dict, '\n'
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  TRT_CHECK(dict.size() <= 0xFFFF, ErrorCode::kOutOfRange, ".npy header too long for {} dims",
            shape.size());
  std::string h("\x93NUMPY\x01\x00", 8);
  h.push_back(static_cast<char>(dict.size() & 0xFF));
  h.push_back(static_cast<char>(dict.size() >> 8));
  return h + dict;
}

NpyStreamWriter::NpyStreamWriter(const std::filesystem::path& path, DataType dtype,
                                 const Shape& shape)
    : path_(path) {
  const std::string header = npy_header(dtype, shape);
  expected_ = dtype_storage_bytes(dtype, shape_numel(shape));
  const std::filesystem::path dir =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::string tmpl = (dir / fmt::format(".{}.tmp-XXXXXX", path.filename().string())).string();
  fd_ = ::mkstemp(tmpl.data());
  TRT_CHECK(fd_ >= 0, ErrorCode::kIO, "cannot create '{}' (temporary file in '{}'): {}",
            path.string(), dir.string(), std::strerror(errno));
  tmp_ = tmpl;
  slot_ = register_temp_file(tmp_);
  ::fchmod(fd_, 0644);
  write(header.data(), header.size());
  written_ = 0;  // the header is not part of the data
}

NpyStreamWriter::~NpyStreamWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  unregister_temp_file(slot_);
}

void NpyStreamWriter::write(const void* data, size_t bytes) {
  TRT_CHECK(fd_ >= 0, ErrorCode::kInternal, "write after commit");
  const char* p = static_cast<const char*>(data);
  size_t left = bytes;
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    TRT_CHECK(n > 0, ErrorCode::kIO, "cannot write '{}': {}", path_.string(), std::strerror(errno));
    p += n;
    left -= static_cast<size_t>(n);
  }
  written_ += bytes;
}

void NpyStreamWriter::commit() {
  TRT_CHECK(written_ == expected_, ErrorCode::kInternal, "'{}': {} data bytes written, {} expected",
            path_.string(), written_, expected_);
  TRT_CHECK(::fsync(fd_) == 0, ErrorCode::kIO, "cannot write '{}': {}", path_.string(),
            std::strerror(errno));
  const int rc = ::close(fd_);
  fd_ = -1;
  TRT_CHECK(rc == 0, ErrorCode::kIO, "cannot write '{}': {}", path_.string(), std::strerror(errno));
  TRT_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, ErrorCode::kIO, "cannot write '{}': {}",
            path_.string(), std::strerror(errno));
  tmp_.clear();
  unregister_temp_file(slot_);
  slot_ = -1;
}

}  // namespace trtutils::data
