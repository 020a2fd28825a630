// LayerNormalization through oneDNN (see onednn_layer_norm.h). Primitives are cached per shape.
#include "backends/cpu/onednn_layer_norm.h"

#include <fmt/format.h>

#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "backends/cpu/lru_cache.h"
#include "backends/cpu/onednn_common.h"
#include "trtutils/logging.h"

namespace trtutils::cpu {
namespace {

using dnnl::memory;

struct LayerNormEntry {
  bool ok = false;
  dnnl::layer_normalization_forward prim;
  memory::desc data_md, param_md;
};

LruCache<LayerNormEntry>& layer_norm_cache() {
  static auto* c = new LruCache<LayerNormEntry>(256, size_t{1} << 20);
  return *c;
}

std::shared_ptr<LayerNormEntry> find_or_make(int64_t rows, int64_t d, bool shift, float eps) {
  const std::string key = fmt::format("{}x{}|{}|{}", rows, d, shift ? 1 : 0, eps);
  auto& cache = layer_norm_cache();
  std::lock_guard<std::mutex> lock(cache.mutex());
  if (auto e = cache.find(key)) return e;
  auto e = std::make_shared<LayerNormEntry>();
  try {
    e->data_md = memory::desc({rows, d}, memory::data_type::f32, memory::format_tag::ab);
    e->param_md = memory::desc({d}, memory::data_type::f32, memory::format_tag::a);
    auto flags = dnnl::normalization_flags::use_scale;
    if (shift) flags = flags | dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::primitive_desc pd(
        dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, e->data_md, eps,
                                                flags),
        onednn::engine());
    // oneDNN's reference layer norm is no faster than the portable kernel: not worth taking.
    e->ok = std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
    if (e->ok) e->prim = dnnl::layer_normalization_forward(pd);
  } catch (const dnnl::error& err) {
    TRT_LOG_VERBOSE("oneDNN cannot run layer norm {} ({}); using the portable kernel", key,
                    err.what());
    e->ok = false;
  }
  cache.put(key, e, 1);
  return e;
}

}  // namespace

bool onednn_layer_norm(const float* x, float* y, int64_t rows, int64_t d, const float* scale,
                       const float* shift, float eps) {
  if (rows <= 0 || d <= 0) return false;
  const std::shared_ptr<LayerNormEntry> e = find_or_make(rows, d, shift != nullptr, eps);
  if (!e->ok) return false;
  const dnnl::engine& eng = onednn::engine();
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory(e->data_md, eng, const_cast<float*>(x))},
      {DNNL_ARG_DST, memory(e->data_md, eng, y)},
      {DNNL_ARG_SCALE, memory(e->param_md, eng, const_cast<float*>(scale))}};
  if (shift) args.emplace(DNNL_ARG_SHIFT, memory(e->param_md, eng, const_cast<float*>(shift)));
  dnnl::stream& s = onednn::stream();
  e->prim.execute(s, args);
  s.wait();
  return true;
}

}  // namespace trtutils::cpu
