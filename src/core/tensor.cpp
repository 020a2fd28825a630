#include "trtutils/tensor.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "core/tensor_pool.h"

namespace trtutils {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    TRT_CHECK(d >= 0, ErrorCode::kOutOfRange, "negative dimension {} in shape {}", d,
              shape_str(shape));
    TRT_CHECK(d == 0 || n <= std::numeric_limits<int64_t>::max() / d, ErrorCode::kOutOfRange,
              "shape {} has more elements than fit in int64", shape_str(shape));
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor::Tensor(DataType dtype, Shape shape) : Tensor(uninitialized(dtype, std::move(shape))) {
  std::memset(buffer_.get(), 0, (nbytes() + 63) / 64 * 64 + 64);
}

Tensor Tensor::uninitialized(DataType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.allocate();
  return t;
}

Tensor Tensor::wrap(DataType dtype, Shape shape, std::shared_ptr<uint8_t> data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  TRT_CHECK(dtype_bits(dtype) > 0, ErrorCode::kNotSupported,
            "tensors of dtype {} are not supported", dtype_name(dtype));
  TRT_CHECK(data != nullptr || t.numel_ == 0, ErrorCode::kInternal, "Tensor::wrap: no data");
  t.buffer_ = std::move(data);
  return t;
}

namespace {
uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                               : (uint64_t{1} << 40);
}
std::atomic<uint64_t>& limit_bytes() {
  static std::atomic<uint64_t> v{physical_memory()};
  return v;
}
}  // namespace

void set_memory_limit(uint64_t bytes) {
  limit_bytes().store(bytes > 0 ? bytes : physical_memory());
}
uint64_t memory_limit() {
  return limit_bytes().load();
}

void Tensor::allocate() {
  numel_ = shape_numel(shape_);
  const int bits = dtype_bits(dtype_);
  TRT_CHECK(bits > 0, ErrorCode::kNotSupported, "tensors of dtype {} are not supported",
            dtype_name(dtype_));
  TRT_CHECK(static_cast<uint64_t>(numel_) <= (std::numeric_limits<uint64_t>::max() - 64) / 64,
            ErrorCode::kOutOfRange, "tensor of shape {} is too large", shape_str(shape_));
  const size_t bytes = dtype_storage_bytes(dtype_, numel_);
  TRT_CHECK(bytes <= memory_limit(), ErrorCode::kOutOfRange,
            "a tensor of shape {} ({}) needs {:.1f} MiB, over the memory limit of {:.1f} MiB "
            "(--max_memory; default: physical memory)",
            shape_str(shape_), dtype_name(dtype_), static_cast<double>(bytes) / (1 << 20),
            static_cast<double>(memory_limit()) / (1 << 20));
  const size_t alloc = (bytes + 63) / 64 * 64 + 64;
  if (TensorPool* pool = current_tensor_pool(); pool && alloc >= TensorPool::kMinBytes) {
    buffer_ = pool->allocate(alloc);
    TRT_CHECK(buffer_ != nullptr, ErrorCode::kOutOfRange,
              "cannot allocate {} bytes for a tensor of shape {}", bytes, shape_str(shape_));
    return;
  }
  void* p = std::aligned_alloc(64, alloc);
  TRT_CHECK(p != nullptr, ErrorCode::kOutOfRange,
            "cannot allocate {} bytes for a tensor of shape {}", bytes, shape_str(shape_));
  buffer_ = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

Tensor Tensor::reshaped(Shape shape) const {
  TRT_CHECK(shape_numel(shape) == numel_, ErrorCode::kInvalidArgument, "cannot reshape {} to {}",
            shape_str(shape_), shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  if (dtype_ == DataType::kInt64) {
    if (!v.empty()) std::memcpy(v.data(), raw(), v.size() * 8);
  } else {
    for (int64_t i = 0; i < numel_; ++i) v[i] = static_cast<int64_t>(at_double(i));
  }
  return v;
}

std::vector<float> Tensor::to_float_vector() const {
  std::vector<float> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[i] = static_cast<float>(at_double(i));
  return v;
}

}  // namespace trtutils
