// What the oneDNN fast paths (onednn_nn.cpp, onednn_int8.cpp) share: one CPU engine per process,
// one stream per thread, and a growable per-thread scratch buffer.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>

namespace trtutils::cpu::onednn {

inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

// A growable, 64-byte aligned buffer, kept per thread by its users so that large temporaries
// are not re-faulted on every call.
class ScratchBuffer {
 public:
  void* get(size_t bytes) {
    if (bytes > cap_) {
      const size_t want = (bytes + 4095) / 4096 * 4096;
      void* p = std::aligned_alloc(64, want);
      if (!p) throw std::bad_alloc();
      ptr_.reset(p);
      cap_ = want;
    }
    return ptr_.get();
  }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> ptr_;
  size_t cap_ = 0;
};

}  // namespace trtutils::cpu::onednn
