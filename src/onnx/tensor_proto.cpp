#include "onnx/tensor_proto.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/check.h"

namespace trtutils::onnx_io {

// raw_data and our buffers are both little-endian; a big-endian host would need byte swaps here.
static_assert(std::endian::native == std::endian::little, "trtutils assumes a little-endian host");

namespace {

namespace fs = std::filesystem;

// TensorProto.DataType values ONNX 1.12's generated enum does not know yet.
constexpr int32_t kOnnxComplex64 = 14;
constexpr int32_t kOnnxComplex128 = 15;

int64_t parse_int_key(const std::string& value, const std::string& key, const std::string& what) {
  int64_t v = 0;
  const char* end = value.data() + value.size();
  const auto r = std::from_chars(value.data(), end, v);
  TRT_CHECK_ARG(r.ec == std::errc() && r.ptr == end && v >= 0,
                "{}: external data '{}' is '{}', expected a non-negative integer", what, key,
                value);
  return v;
}

bool location_is_safe(const std::string& loc) {
  if (loc.empty() || loc.find('\0') != std::string::npos) return false;
  if (loc.front() == '/' || loc.front() == '\\' || fs::path(loc).is_absolute()) return false;
  if (loc.size() >= 2 && loc[1] == ':') return false;  // a Windows drive letter
  // '..' as any path component, with either separator (models exported on Windows use '\').
  size_t start = 0;
  while (start <= loc.size()) {
    size_t end = loc.find_first_of("/\\", start);
    if (end == std::string::npos) end = loc.size();
    if (loc.compare(start, end - start, "..") == 0 && end - start == 2) return false;
    start = end + 1;
  }
  return true;
}

// Both paths canonical (no "..", no symlinks, no trailing separator).
bool path_is_inside(const fs::path& child, const fs::path& dir) {
  const auto [d, c] = std::mismatch(dir.begin(), dir.end(), child.begin(), child.end());
  return d == dir.end() && c != child.end();
}

// Checks the external data's location and range, then allocates the tensor and reads it (never
// allocating before the file is known to hold `expected` bytes).
Tensor read_external(const onnx::TensorProto& proto, ExternalDataContext* ext,
                     const std::string& what, DataType dtype, Shape shape, uint64_t expected) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  bool has_location = false;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
      has_location = true;
    } else if (kv.key() == "offset") {
      offset = parse_int_key(kv.value(), "offset", what);
    } else if (kv.key() == "length") {
      length = parse_int_key(kv.value(), "length", what);
    }
    // "checksum" (SHA-1) is optional and not verified: the size checks catch truncation.
  }
  TRT_CHECK_ARG(has_location && !location.empty(),
                "{}: data_location is EXTERNAL but no 'location' is given", what);
  TRT_CHECK_ARG(ext != nullptr && !ext->base_dir.empty(),
                "{}: uses external data ('{}') but the model was not loaded from a file; load it "
                "with load_model(path)",
                what, location);
  TRT_CHECK_ARG(location_is_safe(location),
                "{}: external data location '{}' is refused (absolute or containing '..'); "
                "external data must be inside the model folder",
                what, location);
  std::error_code ec;
  if (ext->canonical_base.empty()) {
    ext->canonical_base = fs::canonical(ext->base_dir, ec);
    TRT_CHECK(!ec, ErrorCode::kIO, "{}: cannot resolve the model folder '{}': {}", what,
              ext->base_dir.string(), ec.message());
  }
  const fs::path file = fs::canonical(ext->base_dir / location, ec);
  TRT_CHECK(!ec, ErrorCode::kIO, "{}: cannot read external data file '{}': {}", what,
            (ext->base_dir / location).string(), ec.message());
  TRT_CHECK_ARG(path_is_inside(file, ext->canonical_base),
                "{}: external data location '{}' resolves to '{}', outside the model folder '{}'; "
                "external data must be inside the model folder",
                what, location, file.string(), ext->canonical_base.string());
  TRT_CHECK(fs::is_regular_file(file, ec), ErrorCode::kIO,
            "{}: external data '{}' is not a regular file", what, file.string());
  const uint64_t size = fs::file_size(file, ec);
  TRT_CHECK(!ec, ErrorCode::kIO, "{}: cannot read external data file '{}': {}", what, file.string(),
            ec.message());
  const uint64_t off = static_cast<uint64_t>(offset);
  TRT_CHECK_ARG(off <= size, "{}: external data offset {} is past the end of '{}' ({} bytes)", what,
                offset, location, size);
  if (length >= 0) {
    TRT_CHECK_ARG(static_cast<uint64_t>(length) <= size - off,
                  "{}: external data range [{}, {}+{}) is past the end of '{}' ({} bytes)", what,
                  offset, offset, length, location, size);
    TRT_CHECK_ARG(static_cast<uint64_t>(length) == expected,
                  "{}: external data length is {} bytes, but dims {} of {} need {} bytes", what,
                  length, shape_str(shape), dtype_name(dtype), expected);
  } else {
    TRT_CHECK_ARG(expected <= size - off,
                  "{}: external data in '{}' from offset {} has {} bytes, but dims {} of {} need "
                  "{} bytes",
                  what, location, offset, size - off, shape_str(shape), dtype_name(dtype),
                  expected);
  }
  if (ext->bytes_read) {
    *ext->bytes_read += expected;
    TRT_CHECK(ext->max_bytes == 0 || *ext->bytes_read <= ext->max_bytes, ErrorCode::kOutOfRange,
              "{}: the model's data exceeds the limit of {} bytes", what, ext->max_bytes);
  }
  Tensor out(dtype, std::move(shape));
  if (expected == 0) return out;
  std::ifstream f(file, std::ios::binary);
  TRT_CHECK(f.good(), ErrorCode::kIO, "{}: cannot open external data file '{}'", what,
            file.string());
  f.seekg(static_cast<std::streamoff>(off));
  f.read(static_cast<char*>(out.raw()), static_cast<std::streamsize>(expected));
  TRT_CHECK(f.good() && f.gcount() == static_cast<std::streamsize>(expected), ErrorCode::kIO,
            "{}: short read from external data file '{}'", what, file.string());
  return out;
}

// The typed field ONNX uses for `dtype` and how many of its values the tensor needs.
struct TypedField {
  const char* name;
  int64_t have;
  int64_t need;
};
TypedField typed_field(const onnx::TensorProto& p, DataType dtype, int64_t n) {
  switch (dtype) {
    case DataType::kFloat32:
      return {"float_data", p.float_data_size(), n};
    case DataType::kFloat64:
      return {"double_data", p.double_data_size(), n};
    case DataType::kInt64:
      return {"int64_data", p.int64_data_size(), n};
    case DataType::kUInt32:
    case DataType::kUInt64:
      return {"uint64_data", p.uint64_data_size(), n};
    case DataType::kInt32:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kFloat16:   // bit patterns in the low 16 bits
    case DataType::kBFloat16:  // bit patterns in the low 16 bits
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kBool:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      return {"int32_data", p.int32_data_size(), n};
    // One int32 per packed byte (two elements, the first in the low nibble).
    case DataType::kInt4:
    case DataType::kUInt4:
      return {"int32_data (packed pairs)", p.int32_data_size(), (n + 1) / 2};
    case DataType::kUndefined:
    case DataType::kString:
      break;
  }
  return {"?", 0, -1};
}

template <typename Dst, typename Field>
void copy_narrowing(const Field& field, Tensor* t) {
  Dst* d = t->data<Dst>();
  for (int i = 0; i < field.size(); ++i) d[i] = static_cast<Dst>(field.Get(i));
}

// Copies the typed field into `t` (counts already checked).
void read_typed_fields(const onnx::TensorProto& p, Tensor* t) {
  const size_t n = static_cast<size_t>(t->numel());
  if (n == 0) return;
  switch (t->dtype()) {
    case DataType::kFloat32:
      std::memcpy(t->raw(), p.float_data().data(), n * 4);
      return;
    case DataType::kFloat64:
      std::memcpy(t->raw(), p.double_data().data(), n * 8);
      return;
    case DataType::kInt64:
      std::memcpy(t->raw(), p.int64_data().data(), n * 8);
      return;
    case DataType::kUInt64:
      std::memcpy(t->raw(), p.uint64_data().data(), n * 8);
      return;
    case DataType::kUInt32:
      copy_narrowing<uint32_t>(p.uint64_data(), t);
      return;
    case DataType::kInt32:
      std::memcpy(t->raw(), p.int32_data().data(), n * 4);
      return;
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      copy_narrowing<uint16_t>(p.int32_data(), t);
      return;
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      copy_narrowing<uint8_t>(p.int32_data(), t);
      return;
    case DataType::kBool: {
      uint8_t* d = t->data<uint8_t>();
      for (size_t i = 0; i < n; ++i) d[i] = p.int32_data(static_cast<int>(i)) != 0;
      return;
    }
    case DataType::kInt4:
    case DataType::kUInt4:
      copy_narrowing<uint8_t>(p.int32_data(), t);
      if (n % 2) t->data<uint8_t>()[n / 2] &= 0x0f;  // the unused high nibble stays zero
      return;
    case DataType::kUndefined:
    case DataType::kString:
      break;
  }
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, ExternalDataContext* ext,
                         const std::string& what) {
  const int32_t onnx_type = p.data_type();
  TRT_CHECK_ARG(onnx_type != 0, "{}: has no data_type", what);
  const auto dtype = dtype_from_onnx(onnx_type);
  TRT_CHECK(dtype.has_value(), ErrorCode::kNotSupported, "{}: ONNX data type {}{} is not supported",
            what, onnx_type,
            onnx_type == kOnnxComplex64 || onnx_type == kOnnxComplex128 ? " (complex)" : "");
  TRT_CHECK(*dtype != DataType::kString, ErrorCode::kNotSupported,
            "{}: string tensors are not supported", what);
  TRT_CHECK(!p.has_segment(), ErrorCode::kNotSupported, "{}: segmented tensors are not supported",
            what);

  Shape shape(p.dims().begin(), p.dims().end());
  int64_t numel = 1;
  for (int64_t d : shape) {
    TRT_CHECK_ARG(d >= 0, "{}: negative dimension in dims {}", what, shape_str(shape));
    TRT_CHECK_ARG(d == 0 || numel <= std::numeric_limits<int64_t>::max() / 64 / d,
                  "{}: dims {} describe more elements than fit in memory", what, shape_str(shape));
    numel *= d;
  }
  const uint64_t expected = dtype_storage_bytes(*dtype, numel);

  // Sizes are validated before the allocation, so a corrupt file cannot ask for terabytes.
  if (p.data_location() == onnx::TensorProto::EXTERNAL)
    return read_external(p, ext, what, *dtype, std::move(shape), expected);
  if (p.has_raw_data()) {
    TRT_CHECK_ARG(p.raw_data().size() == expected,
                  "{}: raw_data has {} bytes, but dims {} of {} need {} bytes", what,
                  p.raw_data().size(), shape_str(shape), dtype_name(*dtype), expected);
    Tensor t(*dtype, std::move(shape));
    if (expected) std::memcpy(t.raw(), p.raw_data().data(), expected);
    return t;
  }
  const TypedField field = typed_field(p, *dtype, numel);
  TRT_CHECK_ARG(field.have == field.need, "{}: {} has {} values, but dims {} of {} need {}", what,
                field.name, field.have, shape_str(shape), dtype_name(*dtype), field.need);
  Tensor t(*dtype, std::move(shape));
  read_typed_fields(p, &t);
  return t;
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto* p) {
  TRT_CHECK_ARG(t.defined(), "cannot save an undefined tensor");
  for (int64_t d : t.shape()) p->add_dims(d);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  p->set_raw_data(t.raw(), t.nbytes());
}

}  // namespace trtutils::onnx_io
