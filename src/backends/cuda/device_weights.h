// Device copies of an engine's weights, shared by all of its execution contexts.
//
// TensorRT keeps an engine's weights once on the device and gives each IExecutionContext only
// its activation memory. The CUDA executor uploads weights (raw initializers, constants folded
// at construction, and the packed forms its kernels want) through upload_bytes(); while a
// DeviceWeights is in scope on the thread (DeviceWeightsScope), those uploads go through it and
// a buffer with the same bytes on the same device is uploaded once and shared. The buffers live
// as long as the DeviceWeights (the engine) or the last executor holding them.
//
// Buffers are keyed by their contents (size and two 64-bit hashes), not by a name: two contexts
// pack the same weight into the same bytes, so they share without the ops naming their
// derived buffers. Shared buffers are read-only: nothing writes into an uploaded weight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace trtutils::cuda {

class DeviceWeights {
 public:
  // The device buffer holding `bytes` bytes equal to `data` on the current device: uploaded
  // now (synchronously) unless this object already holds one. Thread safe.
  std::shared_ptr<void> upload(const void* data, size_t bytes);
  // Device bytes held (each distinct buffer once); buffers uploaded; requests answered with a
  // buffer uploaded before. (Inline: builds without CUDA report zeros.)
  uint64_t bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
  }
  int64_t uploads() const {
    std::lock_guard lock(mu_);
    return uploads_;
  }
  int64_t reused() const {
    std::lock_guard lock(mu_);
    return reused_;
  }

 private:
  using Key = std::tuple<int, size_t, uint64_t, uint64_t>;  // device, size, hashes
  mutable std::mutex mu_;
  std::map<Key, std::shared_ptr<void>> buffers_;
  uint64_t bytes_ = 0;
  int64_t uploads_ = 0, reused_ = 0;
};

// The DeviceWeights that upload_bytes() uses on this thread while the scope lives (nullptr:
// none, every upload is its own buffer). Scopes nest.
class DeviceWeightsScope {
 public:
  explicit DeviceWeightsScope(DeviceWeights* weights);
  ~DeviceWeightsScope();
  DeviceWeightsScope(const DeviceWeightsScope&) = delete;
  DeviceWeightsScope& operator=(const DeviceWeightsScope&) = delete;
  static DeviceWeights* current();

 private:
  DeviceWeights* previous_;
};

}  // namespace trtutils::cuda
