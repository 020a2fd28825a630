// Softmax / LogSoftmax through oneDNN (see onednn_softmax.h). Primitives are cached per shape.
#include "backends/cpu/onednn_softmax.h"

#include <fmt/format.h>

#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "backends/cpu/lru_cache.h"
#include "backends/cpu/onednn_common.h"
#include "trtutils/logging.h"

namespace trtutils::cpu {
namespace {

using dnnl::memory;

struct SoftmaxEntry {
  bool ok = false;
  dnnl::primitive prim;
  memory::desc md;
};

LruCache<SoftmaxEntry>& softmax_cache() {
  static auto* c = new LruCache<SoftmaxEntry>(256, size_t{1} << 20);
  return *c;
}

std::shared_ptr<SoftmaxEntry> make_entry(const memory::desc& md, bool log) {
  auto e = std::make_shared<SoftmaxEntry>();
  e->md = md;
  const dnnl::engine& eng = onednn::engine();
  dnnl::primitive_desc_base pd;
  if (log) {
    dnnl::logsoftmax_forward::primitive_desc p(
        dnnl::logsoftmax_forward::desc(dnnl::prop_kind::forward_inference, md, 1), eng);
    pd = p;
    e->prim = dnnl::logsoftmax_forward(p);
  } else {
    dnnl::softmax_forward::primitive_desc p(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, md, 1), eng);
    pd = p;
    e->prim = dnnl::softmax_forward(p);
  }
  // oneDNN's reference softmax is slower than the portable kernel: not worth taking.
  e->ok = std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
  return e;
}

std::shared_ptr<SoftmaxEntry> find_or_make(int64_t outer, int64_t n, int64_t inner, bool log) {
  const std::string key = fmt::format("{}|{}x{}x{}", log ? "log" : "soft", outer, n, inner);
  auto& cache = softmax_cache();
  std::lock_guard<std::mutex> lock(cache.mutex());
  if (auto e = cache.find(key)) return e;
  std::shared_ptr<SoftmaxEntry> e;
  try {
    e = make_entry(memory::desc({outer, n, inner}, memory::data_type::f32, memory::format_tag::abc),
                   log);
  } catch (const dnnl::error& err) {
    TRT_LOG_VERBOSE("oneDNN cannot run softmax {} ({}); using the portable kernel", key,
                    err.what());
    e = std::make_shared<SoftmaxEntry>();
  }
  cache.put(key, e, 1);
  return e;
}

}  // namespace

bool onednn_softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (outer <= 0 || n <= 0 || inner <= 0) return false;
  const std::shared_ptr<SoftmaxEntry> e = find_or_make(outer, n, inner, log);
  if (!e->ok) return false;
  dnnl::stream& s = onednn::stream();
  memory src(e->md, onednn::engine(), const_cast<float*>(x));
  memory dst(e->md, onednn::engine(), y);
  e->prim.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  s.wait();
  return true;
}

}  // namespace trtutils::cpu
