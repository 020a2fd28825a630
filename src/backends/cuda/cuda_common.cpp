// The CUDA backend's plumbing: checked calls, the caching allocator, run-time values and the
// helpers the op files share (broadcast plans, dtype checks, the op table).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/device_weights.h"
#include "backends/cuda/kernel_switches.h"
#include "engine/tactics.h"
#include "trtutils/logging.h"

namespace trtutils::cuda {

void throw_cuda(cudaError_t e, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();  // clear a sticky launch error so that later calls report their own
  TRT_THROW(e == cudaErrorMemoryAllocation ? ErrorCode::kOutOfRange : ErrorCode::kInternal,
            "CUDA error {} ({}) in {} at {}:{}", cudaGetErrorName(e), cudaGetErrorString(e), expr,
            file, line);
}

void throw_cudnn(cudnnStatus_t s, const char* expr, const char* file, int line) {
  TRT_THROW(s == CUDNN_STATUS_NOT_SUPPORTED ? ErrorCode::kNotSupported : ErrorCode::kInternal,
            "cuDNN error {} in {} at {}:{}", cudnnGetErrorString(s), expr, file, line);
}

void throw_cublas(cublasStatus_t s, const char* expr, const char* file, int line) {
  TRT_THROW(s == CUBLAS_STATUS_NOT_SUPPORTED ? ErrorCode::kNotSupported : ErrorCode::kInternal,
            "cuBLAS error {} ({}) in {} at {}:{}", cublasGetStatusName(s), cublasGetStatusString(s),
            expr, file, line);
}

// ---- memory -------------------------------------------------------------------------------------
namespace {
size_t round_bytes(size_t b) {
  if (b == 0) b = 1;
  if (b <= (size_t{1} << 20)) return (b + 511) & ~size_t{511};
  return (b + (size_t{1} << 16) - 1) & ~((size_t{1} << 16) - 1);
}
}  // namespace

DeviceAllocator::~DeviceAllocator() {
  cudaDeviceSynchronize();
  for (auto& [size, p] : free_) cudaFree(p);
}

std::shared_ptr<void> DeviceAllocator::allocate(size_t bytes) {
  const size_t want = round_bytes(bytes);
  // Best fit among cached blocks no more than twice the request.
  auto it = free_.lower_bound(want);
  void* p = nullptr;
  size_t got = want;
  if (it != free_.end() && it->first <= 2 * want) {
    p = it->second;
    got = it->first;
    free_.erase(it);
  } else {
    cudaError_t e = cudaMalloc(&p, want);
    if (e == cudaErrorMemoryAllocation && !free_.empty()) {
      (void)cudaGetLastError();
      trim();
      e = cudaMalloc(&p, want);
    }
    TRT_CUDA_CHECK(e);
    held_ += want;
    peak_ = std::max(peak_, held_);
  }
  return std::shared_ptr<void>(p, [this, got](void* q) { give_back(q, got); });
}

void DeviceAllocator::give_back(void* p, size_t bytes) {
  free_.emplace(bytes, p);
}

void DeviceAllocator::trim() {
  cudaDeviceSynchronize();
  for (auto& [size, p] : free_) {
    cudaFree(p);
    held_ -= size;
  }
  free_.clear();
}

std::shared_ptr<void> device_malloc(size_t bytes) {
  void* p = nullptr;
  TRT_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 1)));
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

void copy_weight_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  TRT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  // From pageable memory cudaMemcpy returns once the bytes are staged, before the DMA to the
  // device has finished, and the executors' streams are non-blocking (not ordered after the
  // legacy stream this copy runs on): without this wait a kernel reading a weight uploaded
  // mid-run (on its first use) could read it half written.
  TRT_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

std::shared_ptr<void> upload_bytes(const void* data, size_t bytes) {
  if (DeviceWeights* shared = DeviceWeightsScope::current()) return shared->upload(data, bytes);
  return upload_private(data, bytes);
}

std::shared_ptr<void> upload_private(const void* data, size_t bytes) {
  auto buf = device_malloc(bytes);
  copy_weight_bytes(buf.get(), data, bytes);
  return buf;
}

// ---- run context
// ---------------------------------------------------------------------------------
const void* RunContext::dev(Value& v) {
  if (v.ptr || v.nbytes() == 0) return v.ptr;
  TRT_INTERNAL_CHECK(v.host.defined());
  TRT_CHECK(!capturing || v.constant, ErrorCode::kNotSupported,
            "a host-computed value is uploaded during the run (not capturable in a CUDA graph)");
  if (v.constant) {
    v.owner = upload_bytes(v.host.raw(), v.nbytes());
    v.ptr = v.owner.get();
    if (weight_bytes) *weight_bytes += v.nbytes();
    return v.ptr;
  }
  v.owner = alloc->allocate(v.nbytes());
  v.ptr = v.owner.get();
  TRT_CUDA_CHECK(cudaMemcpyAsync(v.ptr, v.host.raw(), v.nbytes(), cudaMemcpyHostToDevice, stream));
  return v.ptr;
}

const Tensor& RunContext::host(Value& v) {
  if (v.host.defined()) return v.host;
  TRT_CHECK(!capturing, ErrorCode::kNotSupported,
            "a device value is read on the host during the run (not capturable in a CUDA graph)");
  Tensor t = Tensor::uninitialized(v.dtype, v.shape);
  if (t.nbytes()) {
    TRT_CUDA_CHECK(cudaMemcpyAsync(t.raw(), v.ptr, t.nbytes(), cudaMemcpyDeviceToHost, stream));
    TRT_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  if (v.nhwc && t.nbytes()) {  // [N, H, W, C] bytes -> [N, C, H, W]
    TRT_INTERNAL_CHECK(v.shape.size() == 4 && dtype_bits(v.dtype) % 8 == 0);
    const size_t esz = static_cast<size_t>(dtype_bits(v.dtype) / 8);
    const int64_t n = v.shape[0], c = v.shape[1], hw = v.shape[2] * v.shape[3];
    Tensor r = Tensor::uninitialized(v.dtype, v.shape);
    const auto* src = static_cast<const uint8_t*>(t.raw());
    auto* dst = static_cast<uint8_t*>(r.raw());
    for (int64_t b = 0; b < n; ++b)
      for (int64_t p = 0; p < hw; ++p)
        for (int64_t ch = 0; ch < c; ++ch)
          std::memcpy(dst + ((b * c + ch) * hw + p) * esz, src + ((b * hw + p) * c + ch) * esz,
                      esz);
    t = r;
  }
  v.host = t;
  return v.host;
}

void* RunContext::make(Value& v, DataType dtype, Shape shape) {
  v = Value{};
  v.dtype = dtype;
  v.shape = std::move(shape);
  const size_t bytes = v.nbytes();
  v.owner = alloc->allocate(bytes);
  v.ptr = v.owner.get();
  return v.ptr;
}

void RunContext::alias(Value& v, const Value& src, Shape shape) {
  TRT_INTERNAL_CHECK(shape_numel(shape) == src.numel());
  Value r;
  r.dtype = src.dtype;
  r.ptr = src.ptr;
  r.owner = src.owner;
  if (src.host.defined()) r.host = src.host.reshaped(shape);
  r.shape = std::move(shape);
  v = std::move(r);
}

void RunContext::check(cudaError_t e, const char* what) const {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();
  if (e == cudaErrorNotSupported)
    TRT_THROW(ErrorCode::kNotSupported, "{}: the CUDA {} kernel does not support this dtype",
              node ? node->describe() : std::string("?"), what);
  TRT_THROW(ErrorCode::kInternal, "{}: CUDA {} kernel failed: {} ({})",
            node ? node->describe() : std::string("?"), what, cudaGetErrorName(e),
            cudaGetErrorString(e));
}

// ---- helpers
// ---------------------------------------------------------------------------------------
DataType OpBuild::input_dtype(size_t i) const {
  if (!node.has_input(i)) return DataType::kUndefined;
  if (const Tensor* c = constant(node.inputs[i])) return c->dtype();
  auto vi = graph.find_value_info(node.inputs[i]);
  return vi ? vi->dtype : DataType::kUndefined;
}

size_t element_size(const ir::Node& node, DataType dt) {
  const int bits = dtype_bits(dt);
  TRT_CHECK(bits >= 8 && bits % 8 == 0 && bits <= 64, ErrorCode::kNotSupported,
            "{}: dtype {} is not supported by the CUDA data-movement kernels", node.describe(),
            dtype_name(dt));
  return static_cast<size_t>(bits / 8);
}

void require_float(const ir::Node& node, DataType dt, const char* what) {
  TRT_CHECK(dt == DataType::kFloat32 || dt == DataType::kFloat16 || dt == DataType::kBFloat16,
            ErrorCode::kNotSupported,
            "{}: {} has dtype {}; the CUDA backend computes this op in float32, float16 or "
            "bfloat16",
            node.describe(), what, dtype_name(dt));
}

void require_indexable(const ir::Node& node, int64_t numel) {
  TRT_CHECK(numel < (int64_t{1} << 31), ErrorCode::kNotSupported,
            "{}: {} elements exceed the CUDA kernels' 2^31 limit", node.describe(), numel);
}

bool kernel_switch(const char* name, bool def) {
  const char* e = switch_value(name);
  if (!e) return def;
  const std::string s = e;
  return !(s == "0" || s == "off" || s == "false");
}

AltMode alt_mode(const char* name) {
  const char* f = switch_value("TRTUTILS_CUDA_FUSED_CONV");
  const char* g = switch_value(name);
  if (g && std::string(g) == "force") return AltMode::kForce;
  if ((f && std::string(f) == "force") || (g && !kernel_switch(name, true))) return AltMode::kOff;
  return AltMode::kTimed;
}

TimingChoices::TimingChoices(std::filesystem::path path, std::string device)
    : path_(std::move(path)),
      device_(std::move(device)),
      cache_(std::make_unique<engine::TimingCache>(
          path_.empty() ? engine::TimingCache() : engine::TimingCache::load(path_))) {}
TimingChoices::~TimingChoices() = default;

void TimingChoices::preload(const std::map<std::string, std::string>& choices) {
  for (const auto& [what, choice] : choices) preloaded_[what] = choice;
}

std::string TimingChoices::find(const std::string& what) {
  if (auto p = preloaded_.find(what); p != preloaded_.end()) {
    ++hits_;
    return decisions_[what] = p->second;
  }
  const nlohmann::json* v = cache_->find(device_ + "|" + what);
  if (!v || !v->is_object() || !v->contains("tactic") || !(*v)["tactic"].is_string()) return "";
  ++hits_;
  return decisions_[what] = (*v)["tactic"].get<std::string>();
}

void TimingChoices::put(const std::string& what, const std::string& choice,
                        const std::vector<std::pair<std::string, float>>& ms) {
  nlohmann::json times = nlohmann::json::object();
  for (const auto& [name, t] : ms)
    times[name] = t < 0 ? nlohmann::json(nullptr) : nlohmann::json(t);
  cache_->put(device_ + "|" + what, {{"tactic", choice}, {"ms", times}});
  decisions_[what] = choice;
  ++recorded_;
}

void TimingChoices::save_if_changed() {
  if (recorded_ == saved_ || path_.empty()) return;
  cache_->save(path_);
  saved_ = recorded_;
  TRT_LOG_INFO("timing cache: {} GPU choice(s) recorded in {}", recorded_, path_.string());
}

float time_on_stream(RunContext& ctx, const std::function<void()>& f) {
  f();
  cudaEvent_t ev[2];
  TRT_CUDA_CHECK(cudaEventCreate(&ev[0]));
  TRT_CUDA_CHECK(cudaEventCreate(&ev[1]));
  float t[3] = {0, 0, 0};
  for (float& ms : t) {
    TRT_CUDA_CHECK(cudaEventRecord(ev[0], ctx.stream));
    f();
    TRT_CUDA_CHECK(cudaEventRecord(ev[1], ctx.stream));
    TRT_CUDA_CHECK(cudaEventSynchronize(ev[1]));
    TRT_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
  }
  cudaEventDestroy(ev[0]);
  cudaEventDestroy(ev[1]);
  std::sort(t, t + 3);
  return t[1];
}

bool layout_free(const Shape& s) {
  if (s.size() > 4) return false;
  Shape a(4 - s.size(), 1);
  a.insert(a.end(), s.begin(), s.end());
  return a[1] == 1 || (a[2] == 1 && a[3] == 1);
}

Shape nhwc_order(const Shape& s) {
  TRT_INTERNAL_CHECK(s.size() <= 4);
  Shape a(4 - s.size(), 1);
  a.insert(a.end(), s.begin(), s.end());
  return {a[0], a[2], a[3], a[1]};
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

void copy_strided(RunContext& ctx, size_t esz, const void* src, void* dst,
                  const std::vector<std::pair<int64_t, int64_t>>& dims, int64_t offset) {
  const ir::Node& node = *ctx.node;
  int64_t n = 1;
  // Size-1 dims dropped; a dim merged into its outer neighbour when contiguous in the source.
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& d : dims) {
    n *= d.first;
    if (d.first == 1) continue;
    if (!merged.empty() && merged.back().second == d.first * d.second) {
      merged.back() = {merged.back().first * d.first, d.second};
    } else {
      merged.push_back(d);
    }
  }
  TRT_CHECK(merged.size() <= static_cast<size_t>(k::kMaxRank), ErrorCode::kNotSupported,
            "{}: {} non-mergeable dims exceed the CUDA kernels' {}", node.describe(), merged.size(),
            k::kMaxRank);
  k::Broadcast bc;
  bc.rank = static_cast<int>(merged.size());
  for (size_t i = 0; i < merged.size(); ++i) {
    bc.dims[i] = merged[i].first;
    bc.strides[0][i] = merged[i].second;
  }
  ctx.check(k::strided_copy(esz, src, dst, bc, offset, n, ctx.stream), node.op_type.c_str());
}

k::Broadcast make_broadcast(const ir::Node& node, const Shape& out,
                            const std::vector<const Shape*>& ins) {
  const size_t n = ins.size();
  TRT_INTERNAL_CHECK(n >= 1 && n <= 3);
  const size_t rank = out.size();
  // Per output dim (innermost first): size and per-input stride; merged when every input is
  // contiguous across the pair.
  std::vector<int64_t> sizes;
  std::vector<std::array<int64_t, 3>> strides;
  std::array<int64_t, 3> running{1, 1, 1};
  for (size_t r = rank; r-- > 0;) {
    std::array<int64_t, 3> st{0, 0, 0};
    for (size_t k = 0; k < n; ++k) {
      const Shape& s = *ins[k];
      TRT_INTERNAL_CHECK(s.size() <= rank);
      const size_t lead = rank - s.size();
      const int64_t d = r >= lead ? s[r - lead] : 1;
      TRT_INTERNAL_CHECK(d == out[r] || d == 1);
      st[k] = d == 1 ? 0 : running[k];
      running[k] *= d;
    }
    if (out[r] == 1) continue;
    if (!sizes.empty()) {
      bool mergeable = true;
      for (size_t k = 0; k < n; ++k)
        mergeable = mergeable && st[k] == strides.back()[k] * sizes.back();
      if (mergeable) {
        sizes.back() *= out[r];
        continue;
      }
    }
    sizes.push_back(out[r]);
    strides.push_back(st);
  }
  TRT_CHECK(sizes.size() <= static_cast<size_t>(k::kMaxRank), ErrorCode::kNotSupported,
            "{}: a broadcast over {} non-mergeable dims exceeds the CUDA kernels' {}",
            node.describe(), sizes.size(), k::kMaxRank);
  k::Broadcast bc;
  bc.rank = static_cast<int>(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t d = sizes.size() - 1 - i;  // outermost first
    bc.dims[d] = sizes[i];
    for (size_t k = 0; k < 3; ++k) bc.strides[k][d] = strides[i][k];
  }
  return bc;
}

const OpTable& op_table() {
  static const OpTable* t = [] {
    auto* table = new OpTable();
    register_elementwise_ops(*table);
    register_tensor_ops(*table);
    register_nn_ops(*table);
    register_conv_ops(*table);
    register_pool_ops(*table);
    register_gemm_ops(*table);
    register_quant_ops(*table);
    register_resize_ops(*table);
    register_attention_ops(*table);
    register_conv_transpose_ops(*table);
    register_nms_ops(*table);
    register_topk_ops(*table);
    register_index_ops(*table);
    register_norm_ops(*table);
    register_roi_align_ops(*table);
    register_grid_sample_ops(*table);
    register_einsum_ops(*table);
    register_misc_ops(*table);
    register_range_ops(*table);
    return table;
  }();
  return *t;
}

}  // namespace trtutils::cuda
