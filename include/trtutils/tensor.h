// Tensor: a dense, C-order (row-major) n-d array with a dtype. Copies share the buffer (cheap
// handles, like a shared_ptr); clone() makes a deep copy. Buffers are 64-byte aligned and
// zero-initialised. INT4/UINT4 are packed two per byte (see dtype.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trtutils/dtype.h"

namespace trtutils {

using Shape = std::vector<int64_t>;

// The largest allocation (one tensor, or a model file with its external data) the library makes;
// anything larger is refused with Error(kOutOfRange) before allocation. Default: the machine's
// physical memory. The CLI's --max_memory sets it.
void set_memory_limit(uint64_t bytes);
uint64_t memory_limit();

// Product of dims; throws Error(kOutOfRange) on a negative dim or an overflow of int64.
int64_t shape_numel(const Shape& shape);
// "[1, 3, 224, 224]"
std::string shape_str(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Allocates a zero-filled tensor. Throws Error(kOutOfRange) if the byte size overflows.
  Tensor(DataType dtype, Shape shape);
  // Like the constructor but the elements are left uninitialised: only for outputs whose every
  // element the caller writes before anyone reads them (saves a pass over memory).
  static Tensor uninitialized(DataType dtype, Shape shape);
  // A tensor over memory it does not allocate: `data` (an aliasing shared_ptr keeps its owner,
  // e.g. a mapped engine file, alive) must hold the tensor's bytes. No copy is made.
  static Tensor wrap(DataType dtype, Shape shape, std::shared_ptr<uint8_t> data);
  // Wraps `data` (copied) as a tensor; data.size() must equal the element count.
  template <typename T>
  static Tensor from_vector(DataType dtype, Shape shape, const std::vector<T>& data);

  bool empty() const { return buffer_ == nullptr && numel_ == 0 && shape_.empty(); }
  bool defined() const { return dtype_ != DataType::kUndefined; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_[i]; }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return dtype_storage_bytes(dtype_, numel_); }

  void* raw() { return buffer_.get(); }
  const void* raw() const { return buffer_.get(); }
  template <typename T>
  T* data() {
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw());
  }
  std::span<const uint8_t> bytes() const { return {data<uint8_t>(), nbytes()}; }
  // The buffer, without keeping it alive (expired once every tensor sharing it is gone).
  std::weak_ptr<const uint8_t> weak_buffer() const { return buffer_; }

  // Same buffer, new shape with the same element count (-1 not allowed here).
  Tensor reshaped(Shape shape) const;
  Tensor clone() const;
  // Element i as double / float (slow; for tests, tools, scalar attributes).
  double at_double(int64_t i) const { return dtype_load_as_double(dtype_, raw(), i); }
  // All elements converted to int64 / float (for shape-like and scalar inputs).
  std::vector<int64_t> to_int64_vector() const;
  std::vector<float> to_float_vector() const;

 private:
  void allocate();  // buffer_ for dtype_/shape_ (sets numel_), contents undefined

  DataType dtype_ = DataType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<uint8_t> buffer_;
};

template <typename T>
Tensor Tensor::from_vector(DataType dtype, Shape shape, const std::vector<T>& data) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(data.size()) != t.numel() ||
      sizeof(T) * 8 != static_cast<size_t>(dtype_bits(dtype)))
    throw std::invalid_argument("Tensor::from_vector: size or element type mismatch");
  std::copy(data.begin(), data.end(), t.data<T>());
  return t;
}

}  // namespace trtutils
