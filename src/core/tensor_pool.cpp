#include "core/tensor_pool.h"

#include <cstdlib>

namespace trtutils {

namespace {
thread_local TensorPool* t_current = nullptr;

// Size classes of 64 KiB: the same activation shape always lands in the same class.
size_t size_class(size_t bytes) {
  constexpr size_t kGrain = size_t{64} << 10;
  return (bytes + kGrain - 1) / kGrain * kGrain;
}
}  // namespace

std::shared_ptr<TensorPool> TensorPool::create(size_t max_free_bytes) {
  return std::shared_ptr<TensorPool>(new TensorPool(max_free_bytes));
}

TensorPool::~TensorPool() {
  for (auto& [size, p] : free_) std::free(p);
}

std::shared_ptr<uint8_t> TensorPool::allocate(size_t bytes) {
  size_t size = size_class(bytes);
  uint8_t* p = nullptr;
  {
    // The smallest free buffer that fits, unless it is over twice the size (a large buffer
    // kept for a small tensor would make the next large allocation a new one).
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = free_.lower_bound(size); it != free_.end() && it->first <= 2 * size) {
      size = it->first;
      p = it->second;
      free_.erase(it);
      free_bytes_ -= size;
    }
  }
  if (!p) p = static_cast<uint8_t*>(std::aligned_alloc(64, size));
  if (!p) return nullptr;
  std::shared_ptr<TensorPool> self = shared_from_this();
  return std::shared_ptr<uint8_t>(p, [self, size](uint8_t* q) { self->release(q, size); });
}

void TensorPool::release(uint8_t* p, size_t size) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_bytes_ + size <= max_free_bytes_) {
      free_.emplace(size, p);
      free_bytes_ += size;
      return;
    }
  }
  std::free(p);
}

size_t TensorPool::free_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_bytes_;
}

TensorPoolScope::TensorPoolScope(TensorPool* pool) : previous_(t_current) {
  t_current = pool;
}
TensorPoolScope::~TensorPoolScope() {
  t_current = previous_;
}

TensorPool* current_tensor_pool() {
  return t_current;
}

}  // namespace trtutils
