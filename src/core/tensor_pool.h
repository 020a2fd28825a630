// TensorPool: recycles the large buffers of the tensors a run allocates. glibc returns blocks
// above its mmap threshold to the kernel on free, so a model run again and again faults every
// activation's pages in afresh (ResNet-50 at batch 8 on the CPU backend: ~19,000 faults, 75 MiB
// zeroed by the kernel, per run). While a TensorPoolScope is active on a thread, every Tensor
// allocation of at least kMinBytes on that thread takes the smallest free buffer of the pool that
// fits and is at most twice its size (classes of 64 KiB) if there is one (else a new one), and that
// buffer goes back to the pool when the last tensor sharing it is gone, whichever thread releases
// it. The pool lives as long as its owner or any of its buffers (each deleter holds it). Free
// buffers beyond max_free_bytes are returned to the system instead of kept. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace trtutils {

class TensorPool : public std::enable_shared_from_this<TensorPool> {
 public:
  static constexpr size_t kMinBytes = size_t{1} << 20;  // smaller ones: malloc reuses them
  static std::shared_ptr<TensorPool> create(size_t max_free_bytes);
  ~TensorPool();

  // A 64-byte aligned buffer of at least `bytes` (rounded up to the size class) whose deleter
  // returns it to this pool; nullptr when the allocation fails.
  std::shared_ptr<uint8_t> allocate(size_t bytes);
  size_t free_bytes() const;

 private:
  explicit TensorPool(size_t max_free_bytes) : max_free_bytes_(max_free_bytes) {}
  void release(uint8_t* p, size_t size);

  mutable std::mutex mutex_;
  std::multimap<size_t, uint8_t*> free_;  // size class -> free buffer
  size_t free_bytes_ = 0;
  size_t max_free_bytes_;
};

// Makes `pool` the current thread's tensor pool until destroyed (restoring the previous one).
class TensorPoolScope {
 public:
  explicit TensorPoolScope(TensorPool* pool);
  ~TensorPoolScope();
  TensorPoolScope(const TensorPoolScope&) = delete;
  TensorPoolScope& operator=(const TensorPoolScope&) = delete;

 private:
  TensorPool* previous_;
};

// The current thread's pool (nullptr: plain allocations).
TensorPool* current_tensor_pool();

}  // namespace trtutils
