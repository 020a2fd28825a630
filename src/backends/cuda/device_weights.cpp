#include "backends/cuda/device_weights.h"

#include <cuda_runtime.h>

#include <cstring>

#include "backends/cuda/cuda_ops.h"

namespace trtutils::cuda {

namespace {

thread_local DeviceWeights* g_current = nullptr;

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

// Two independent 64-bit hashes of the bytes (8 bytes per step, a multiply-rotate per lane):
// a few GB/s, so keying the weights of a large model costs milliseconds.
std::pair<uint64_t, uint64_t> hash_bytes(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t a = 0x9e3779b97f4a7c15ULL ^ n, b = 0x632be59bd9b4e019ULL + n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    a = (a ^ w) * 0x100000001b3ULL;
    a = (a << 29) | (a >> 35);
    b = (b + w) * 0xbf58476d1ce4e5b9ULL;
    b ^= b >> 31;
  }
  uint64_t tail = 0;
  if (i < n) std::memcpy(&tail, p + i, n - i);
  return {mix(a ^ tail), mix(b + tail * 0x94d049bb133111ebULL)};
}

}  // namespace

std::shared_ptr<void> DeviceWeights::upload(const void* data, size_t bytes) {
  int device = 0;
  TRT_CUDA_CHECK(cudaGetDevice(&device));
  const auto [h1, h2] = hash_bytes(data, bytes);
  const Key key{device, bytes, h1, h2};
  std::lock_guard lock(mu_);
  if (auto it = buffers_.find(key); it != buffers_.end()) {
    ++reused_;
    return it->second;
  }
  auto buf = device_malloc(bytes);
  copy_weight_bytes(buf.get(), data, bytes);
  buffers_.emplace(key, buf);
  bytes_ += bytes;
  ++uploads_;
  return buf;
}

DeviceWeightsScope::DeviceWeightsScope(DeviceWeights* weights) : previous_(g_current) {
  g_current = weights;
}
DeviceWeightsScope::~DeviceWeightsScope() {
  g_current = previous_;
}
DeviceWeights* DeviceWeightsScope::current() {
  return g_current;
}

}  // namespace trtutils::cuda
