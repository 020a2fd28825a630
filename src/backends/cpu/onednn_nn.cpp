// oneDNN (2.x) fast paths for float32 Conv, ConvTranspose, Gemm and MatMul.
//
// User tensors stay in plain C order (nchw); when the chosen primitive wants another layout for
// src/dst (e.g. nChw16c) they are reordered through per-thread buffers that are reused across
// calls. Weights are reordered once into the primitive's preferred layout and cached together
// with the primitive. A cache entry watches the user's weights buffer (a weak handle): once the
// buffer is freed (its model and sessions gone) the entry is stale, never used again (its key's
// address may be reused) and released by onednn_release_stale() (Session's destructor) or the
// next insertion. It re-checks a sample of the weight values on every hit (weights are immutable
// initializers in practice; a changed sample rebuilds the entry).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "backends/cpu/blocked_depthwise.h"
#include "backends/cpu/lru_cache.h"
#include "backends/cpu/nn_kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/onednn_conv_parts.h"
#include "backends/cpu/qlinear_kernels.h"
#include "backends/cpu/silu.h"
#include "core/check.h"
#include "trtutils/logging.h"

namespace trtutils::cpu::nn {

namespace parts {

using dnnl::memory;
using onednn::engine;

void* thread_buffer(int id, size_t bytes) {
  thread_local onednn::ScratchBuffer buffers[kNumThreadBuffers];
  return buffers[id].get(bytes);
}

memory::dims plain_strides(const memory::dims& dims) {
  memory::dims s(dims.size());
  memory::dim acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = acc;
    acc *= std::max<memory::dim>(dims[i], 1);
  }
  return s;
}

memory::desc plain_md(const memory::dims& dims) {
  return memory::desc(dims, kF32, plain_strides(dims));
}

memory user_mem(const memory::desc& md, const void* p) {
  return memory(md, engine(), const_cast<void*>(p));
}

// oneDNN's reference implementations ("ref:any") are far slower than its jit kernels and no
// faster than our own reference loops: "not supported", so the caller falls back.
void require_optimized(const dnnl::primitive_desc_base& pd) {
  const std::string impl = pd.impl_info_str();
  if (impl.rfind("ref", 0) == 0)
    throw dnnl::error(dnnl_unimplemented, "oneDNN offers only a reference implementation");
}

// The eltwise post-op for an activation (oneDNN's forms match the ONNX ops exactly:
// LeakyRelu = relu with a negative slope, Clip = clip(min, max), Sigmoid = logistic,
// HardSwish = x * relu6(x + 3) / 6).
void append_activation(dnnl::post_ops& ops, const ConvPostOps& post) {
  switch (post.act) {
    case ConvActivation::kNone:
      return;
    case ConvActivation::kRelu:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      return;
    case ConvActivation::kLeakyRelu:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, post.alpha, 0.0f);
      return;
    case ConvActivation::kClip:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, post.alpha, post.beta);
      return;
    case ConvActivation::kSigmoid:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_logistic, 0.0f, 0.0f);
      return;
    case ConvActivation::kHardSwish:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.0f, 0.0f);
      return;
    case ConvActivation::kSilu:  // swish: x * sigmoid(alpha * x), alpha 1
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
      return;
  }
}

std::vector<uint32_t> sample_of(const Tensor& t) {
  const int64_t n = t.numel();
  const int64_t k = std::min<int64_t>(n, 32);
  std::vector<uint32_t> s(static_cast<size_t>(k));
  const uint32_t* p = t.data<uint32_t>();
  for (int64_t i = 0; i < k; ++i) s[i] = p[i * n / k];
  return s;
}

}  // namespace parts

namespace {

using namespace parts;

using dnnl::memory;
using Tag = memory::format_tag;

std::atomic<int64_t> g_conv_runs{0}, g_conv_fallbacks{0}, g_matmul_runs{0}, g_matmul_fallbacks{0};

using onednn::engine;
using onednn::stream;

// A user scratchpad and the post-ops of a fused convolution: the residual as a sum (dst holds
// it when the primitive runs), then a binary bias add (when given: matmul forms whose bias is
// not their own), then the activation.
dnnl::primitive_attr conv_attr(const ConvPostOps& post, const memory::desc* binary_bias = nullptr) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::post_ops ops;
  if (post.residual) ops.append_sum(1.0f);
  if (binary_bias) ops.append_binary(dnnl::algorithm::binary_add, *binary_bias);
  append_activation(ops, post);
  attr.set_post_ops(ops);
  return attr;
}

// LRU map from key to entry, bounded in entries and in bytes (an entry's cost: the weights it
// holds alive plus its reordered copy).
template <typename Entry>
using Cache = LruCache<Entry>;

void append_dims(std::string& key, const char* name, const memory::dims& d) {
  key += name;
  for (auto v : d) key += std::to_string(v) + ",";
  key += ";";
}

// ---- convolution / deconvolution ------------------------------------------------------------

struct ConvEntry {
  bool ok = false;
  std::weak_ptr<const uint8_t> weights;  // the user's weights buffer (the key's address)
  std::vector<uint32_t> sample;          // weight values when the entry was built
  dnnl::primitive prim;
  memory::desc user_src_md, user_dst_md, src_md, dst_md, bias_md;
  bool pointwise = false;       // run as a batched matmul (src = weights, weights = x)
  bool pointwise_last = false;  // channels-last pointwise: one matmul, src = x, weights = W^T
  bool reorder_src = false, reorder_dst = false;
  dnnl::reorder src_reorder, dst_reorder;
  dnnl::reorder residual_reorder;  // user layout -> dst_md, when a sum post-op needs it
  memory weights_mem;
  size_t scratchpad_bytes = 0;
  size_t cost_bytes = 0;  // the reordered copy of the weights
  bool stale() const { return ok && weights.expired(); }
};

Cache<ConvEntry>& conv_cache() {
  static auto* c = new Cache<ConvEntry>(4096, size_t{2} << 30);
  return *c;
}

// Tuning knobs, read once from the environment. Defaults are the fastest measured on ResNet-50
// (batch 8, 2 threads, AVX-512):
//   TRTUTILS_CONV_ALGO   winograd (default): 3x3 stride-1 2-D convolutions use oneDNN's
//                        Winograd kernels where available; direct: never. On the blocked layout
//                        Winograd ran ResNet-50 12% faster at batch 1 and 16-23% at batch 8
//                        (the output within 5e-7 of direct's, 127 dB), for 20% (batch 1) to
//                        48% (batch 8) more peak memory (bench/RESULTS.md, issue 36); on plain
//                        tensors it had been no faster than direct.
//   TRTUTILS_CONV_1X1    matmul: pointwise convolutions run as one batched matmul on nchw, with
//                        no reorder; conv: as convolutions.
//   TRTUTILS_CONV_LAYOUT any: src/dst layout chosen by the primitive (reordered from/to nchw
//                        per call); nchw | nhwc | blocked: forced.
std::string env_or(const char* name, const char* def) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string(def);
}
struct ConvPolicy {
  bool winograd = env_or("TRTUTILS_CONV_ALGO", "winograd") == "winograd";
  bool pointwise_matmul = env_or("TRTUTILS_CONV_1X1", "matmul") == "matmul";
  std::string layout = env_or("TRTUTILS_CONV_LAYOUT", "any");
};
const ConvPolicy& conv_policy() {
  static const ConvPolicy policy;
  return policy;
}

memory::desc activation_md(const memory::dims& dims) {
  const std::string& policy = conv_policy().layout;
  const size_t r = dims.size();
  if (policy == "nchw") return plain_md(dims);
  if (policy == "blocked")
    return memory::desc(dims, kF32, r == 3 ? Tag::aBc16b : r == 4 ? Tag::aBcd16b : Tag::aBcde16b);
  if (policy == "nhwc")
    return memory::desc(dims, kF32, r == 3 ? Tag::acb : r == 4 ? Tag::acdb : Tag::acdeb);
  return memory::desc(dims, kF32, Tag::any);
}

// [N, C, spatial...] dims stored channels-last ([N, spatial..., C] in memory).
memory::desc channels_last_md(const memory::dims& dims) {
  const size_t r = dims.size();
  return memory::desc(dims, kF32, r == 3 ? Tag::acb : r == 4 ? Tag::acdb : Tag::acdeb);
}

// [N, C, spatial...] dims in the given layout (nn_kernels.h ActLayout).
memory::desc layout_md(const memory::dims& dims, ActLayout l) {
  const size_t r = dims.size();
  switch (l) {
    case ActLayout::kChannelsLast:
      return channels_last_md(dims);
    case ActLayout::kBlocked16:
      return memory::desc(dims, kF32, r == 3 ? Tag::aBc16b : r == 4 ? Tag::aBcd16b : Tag::aBcde16b);
    case ActLayout::kPlain:
      break;
  }
  return plain_md(dims);
}

// 1x1, unpadded, ungrouped convolution on nchw = per image Y (M x S) = W (M x C) X (C x S): a
// batched matmul with W broadcast, without any reorder. With strides, X is first subsampled
// into a per-thread buffer (a quarter of the reorder traffic at stride 2).
bool conv_is_pointwise(const ConvProblem& p) {
  if (p.transpose || p.group != 1) return false;
  for (int i = 0; i < 3; ++i)
    if (p.kernel[i] != 1 || p.pad_begin[i] != 0 || p.pad_end[i] != 0) return false;
  return true;
}
bool is_strided(const ConvProblem& p) {
  return p.stride[0] != 1 || p.stride[1] != 1 || p.stride[2] != 1;
}

// X[:, :, ::s0, ::s1, ::s2] of the padded-to-3-D problem, densely into dst.
void subsample(const ConvProblem& p, const float* x, float* dst) {
  const int64_t in_sz = p.in[0] * p.in[1] * p.in[2], out_sz = p.out[0] * p.out[1] * p.out[2];
  const int64_t planes = p.batch * p.in_channels;
#pragma omp parallel for schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* xp = x + pl * in_sz;
    float* dp = dst + pl * out_sz;
    for (int64_t od = 0; od < p.out[0]; ++od)
      for (int64_t oh = 0; oh < p.out[1]; ++oh) {
        const float* row = xp + (od * p.stride[0] * p.in[1] + oh * p.stride[1]) * p.in[2];
        float* drow = dp + (od * p.out[1] + oh) * p.out[2];
        for (int64_t ow = 0; ow < p.out[2]; ++ow) drow[ow] = row[ow * p.stride[2]];
      }
  }
}

void build_pointwise(ConvEntry& e, const ConvProblem& p, const Tensor& w, bool has_bias,
                     const ConvPostOps& post) {
  const int64_t s = p.out[0] * p.out[1] * p.out[2];
  const memory::desc w_md = plain_md({1, p.out_channels, p.in_channels});
  const memory::desc x_md = plain_md({p.batch, p.in_channels, s});
  const memory::desc y_md = plain_md({p.batch, p.out_channels, s});
  // The bias is a binary-add post-op: a (1, M, 1) bias argument has only a reference
  // implementation in oneDNN 2.6.
  e.bias_md = has_bias ? plain_md({1, p.out_channels, 1}) : memory::desc();
  // Post-ops: sum (the residual, copied into y beforehand) first, then the bias, then the
  // activation: act(W X + residual + b) rounds like act(W X + b + residual) up to the order
  // of one float addition.
  const dnnl::primitive_attr attr = conv_attr(post, has_bias ? &e.bias_md : nullptr);
  dnnl::matmul::desc d(w_md, x_md, y_md);
  dnnl::matmul::primitive_desc pd(d, attr, engine());
  require_optimized(pd);
  e.prim = dnnl::matmul(pd);
  e.scratchpad_bytes = pd.scratchpad_desc().get_size();
  e.pointwise = true;
  e.user_src_md = x_md;
  e.user_dst_md = y_md;
  e.weights_mem = user_mem(w_md, w.raw());
  e.weights = w.weak_buffer();
  e.sample = sample_of(w);
  e.ok = true;
}

// Unstrided pointwise convolution channels-last: Y (N*S x M) = X (N*S x C) W^T (C x M), one
// matmul over every pixel of the batch; the bias is the matmul's own (per column) bias and W^T
// is packed once into the layout the primitive wants (unpacked, the primitive re-blocks it on
// every call: up to 2x slower at 1x1 shapes like C 256 -> M 64 on AVX-512).
void build_pointwise_last(ConvEntry& e, const ConvProblem& p, const Tensor& w, bool has_bias,
                          const ConvPostOps& post) {
  const int64_t rows = p.batch * p.out[0] * p.out[1] * p.out[2];
  const memory::desc x_md = plain_md({rows, p.in_channels});
  const memory::desc user_w_md({p.in_channels, p.out_channels}, kF32, {1, p.in_channels});
  const memory::desc w_md({p.in_channels, p.out_channels}, kF32, Tag::any);
  const memory::desc y_md = plain_md({rows, p.out_channels});
  e.bias_md = has_bias ? plain_md({1, p.out_channels}) : memory::desc();
  const dnnl::primitive_attr attr = conv_attr(post);
  dnnl::matmul::desc d(x_md, w_md, e.bias_md, y_md);
  dnnl::matmul::primitive_desc pd(d, attr, engine());
  require_optimized(pd);
  e.prim = dnnl::matmul(pd);
  e.scratchpad_bytes = pd.scratchpad_desc().get_size();
  e.pointwise_last = true;
  e.user_src_md = x_md;
  e.user_dst_md = y_md;
  memory uw = user_mem(user_w_md, w.raw());
  if (pd.weights_desc() == user_w_md) {
    e.weights_mem = uw;
  } else {
    e.weights_mem = memory(pd.weights_desc(), engine());
    dnnl::reorder(uw, e.weights_mem).execute(stream(), uw, e.weights_mem);
    stream().wait();
    e.cost_bytes += pd.weights_desc().get_size();
  }
  e.weights = w.weak_buffer();
  e.sample = sample_of(w);
  e.ok = true;
}

bool winograd_shape(const ConvProblem& p) {
  return p.nspatial == 2 && !p.transpose && p.group == 1 && p.kernel[1] == 3 && p.kernel[2] == 3 &&
         p.stride[1] == 1 && p.stride[2] == 1 && p.dilation[1] == 1 && p.dilation[2] == 1;
}
bool winograd_candidate(const ConvProblem& p) {
  const bool wanted = p.tactic.empty() ? conv_policy().winograd : p.tactic == "winograd";
  return wanted && winograd_shape(p);
}
bool pointwise_wanted(const ConvProblem& p, bool channels_last) {
  // Channels-last, oneDNN's 1x1 convolution (brgconv_1x1, packed weights) is as fast as the
  // matmul or faster: the matmul runs only when the builder's timing chose it.
  if (channels_last) return p.tactic == "matmul";
  return p.tactic.empty() ? conv_policy().pointwise_matmul : p.tactic == "matmul";
}

void build_conv(ConvEntry& e, const ConvProblem& p, const Tensor& w, bool has_bias,
                const ConvPostOps& post, ConvLayouts layouts) {
  const size_t nsp = p.nspatial, o = 3 - nsp;
  memory::dims src_dims{p.batch, p.in_channels}, dst_dims{p.batch, p.out_channels};
  memory::dims strides, dilates, pad_l, pad_r, kdims;
  for (size_t i = o; i < 3; ++i) {
    src_dims.push_back(p.in[i]);
    dst_dims.push_back(p.out[i]);
    kdims.push_back(p.kernel[i]);
    strides.push_back(p.stride[i]);
    dilates.push_back(p.dilation[i] - 1);
    pad_l.push_back(p.pad_begin[i]);
    if (p.transpose) {
      // Right padding as oneDNN derives it from the shapes; negative when output_padding
      // exceeds pad_end (the implementation rejects it if it cannot handle that).
      const int64_t dk = (p.kernel[i] - 1) * p.dilation[i] + 1;
      pad_r.push_back((p.in[i] - 1) * p.stride[i] + dk - p.pad_begin[i] - p.out[i]);
    } else {
      pad_r.push_back(p.pad_end[i]);
    }
  }
  const int64_t g = p.group;
  const int64_t ocg = p.out_channels / g, icg = p.in_channels / g;
  int64_t ksz = 1;
  for (auto k : kdims) ksz *= k;
  // User weights: Conv (M, C/g, k...) -> dims (g, oc/g, ic/g, k...) or (oc, ic, k...);
  // ConvTranspose (C, M/g, k...) -> the same dims with ic outer than oc in memory.
  memory::dims wdims, wstrides;
  if (g > 1)
    wdims = {g, ocg, icg};
  else
    wdims = {ocg, icg};
  wdims.insert(wdims.end(), kdims.begin(), kdims.end());
  if (!p.transpose) {
    wstrides = plain_strides(wdims);
  } else {
    if (g > 1)
      wstrides = {icg * ocg * ksz, ksz, ocg * ksz};
    else
      wstrides = {ksz, ocg * ksz};
    const memory::dims ks = plain_strides(kdims);
    wstrides.insert(wstrides.end(), ks.begin(), ks.end());
  }
  const memory::desc user_w_md(wdims, kF32, wstrides);
  e.bias_md = has_bias ? plain_md({p.out_channels}) : memory::desc();
  e.user_src_md = layout_md(src_dims, layouts.src);
  e.user_dst_md = layout_md(dst_dims, layouts.dst);
  // Channels-last and blocked tensors are layouts oneDNN's kernels read and write: asking for
  // them leaves nothing to reorder (the "any" choice may be another layout, reordered per call).
  const bool want_user = !layouts.plain() && conv_policy().layout == "any";
  memory::desc src_any = want_user ? e.user_src_md : activation_md(src_dims);
  memory::desc dst_any = want_user ? e.user_dst_md : activation_md(dst_dims);
  const memory::desc w_any(wdims, kF32, Tag::any);
  const dnnl::primitive_attr attr = conv_attr(post);
  memory::desc wmd;
  if (!p.transpose) {
    auto make_pd = [&](dnnl::algorithm algo) {
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algo, src_any, w_any,
                                        e.bias_md, dst_any, strides, dilates, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
      require_optimized(pd);
      return pd;
    };
    auto make_any_algo = [&] {
      try {
        return make_pd(winograd_candidate(p) ? dnnl::algorithm::convolution_winograd
                                             : dnnl::algorithm::convolution_direct);
      } catch (const dnnl::error&) {
        if (!winograd_candidate(p)) throw;
        return make_pd(dnnl::algorithm::convolution_direct);
      }
    };
    dnnl::convolution_forward::primitive_desc pd;
    try {
      pd = make_any_algo();
    } catch (const dnnl::error&) {
      if (!want_user) throw;
      // No optimized kernel on channels-last tensors: the primitive's own layout, reordered.
      src_any = activation_md(src_dims);
      dst_any = activation_md(dst_dims);
      pd = make_any_algo();
    }
    e.prim = dnnl::convolution_forward(pd);
    e.src_md = pd.src_desc();
    e.dst_md = pd.dst_desc();
    wmd = pd.weights_desc();
    e.scratchpad_bytes = pd.scratchpad_desc().get_size();
  } else {
    dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::deconvolution_direct, src_any, w_any,
                                        e.bias_md, dst_any, strides, dilates, pad_l, pad_r);
    dnnl::deconvolution_forward::primitive_desc pd(d, attr, engine());
    require_optimized(pd);
    e.prim = dnnl::deconvolution_forward(pd);
    e.src_md = pd.src_desc();
    e.dst_md = pd.dst_desc();
    wmd = pd.weights_desc();
    e.scratchpad_bytes = pd.scratchpad_desc().get_size();
  }
  e.reorder_src = e.src_md != e.user_src_md;
  e.reorder_dst = e.dst_md != e.user_dst_md;
  if (e.reorder_src)
    e.src_reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(engine(), e.user_src_md, engine(), e.src_md));
  if (e.reorder_dst)
    e.dst_reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(engine(), e.dst_md, engine(), e.user_dst_md));
  if (e.reorder_dst && post.residual)
    e.residual_reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(engine(), e.user_dst_md, engine(), e.dst_md));
  memory uw = user_mem(user_w_md, w.raw());
  if (wmd == user_w_md) {
    e.weights_mem = uw;  // the user's buffer: alive while the caller holds `w`
  } else {
    e.weights_mem = memory(wmd, engine());
    dnnl::reorder(uw, e.weights_mem).execute(stream(), uw, e.weights_mem);
    stream().wait();
    e.cost_bytes += wmd.get_size();
  }
  e.weights = w.weak_buffer();
  e.sample = sample_of(w);
  e.ok = true;
}

std::string conv_key(const ConvProblem& p, const Tensor& w, bool has_bias, const ConvPostOps& post,
                     ConvLayouts layouts) {
  std::string key = p.transpose ? "deconv|" : "conv|";
  key += fmt::format("{}{}|", static_cast<int>(layouts.src), static_cast<int>(layouts.dst));
  key += fmt::format("{}|", w.raw());
  append_dims(key, "x", {p.batch, p.in_channels, p.in[0], p.in[1], p.in[2]});
  append_dims(key, "y", {p.out_channels, p.out[0], p.out[1], p.out[2]});
  append_dims(key, "k", {p.kernel[0], p.kernel[1], p.kernel[2]});
  append_dims(key, "s", {p.stride[0], p.stride[1], p.stride[2]});
  append_dims(key, "d", {p.dilation[0], p.dilation[1], p.dilation[2]});
  append_dims(
      key, "p",
      {p.pad_begin[0], p.pad_begin[1], p.pad_begin[2], p.pad_end[0], p.pad_end[1], p.pad_end[2]});
  append_dims(key, "g", {p.group, static_cast<int64_t>(p.nspatial), has_bias ? 1 : 0});
  key += fmt::format("post{},{},{},{}|{}", post.residual ? 1 : 0, static_cast<int>(post.act),
                     post.alpha, post.beta, p.tactic);
  return key;
}

}  // namespace

std::vector<std::string> conv_tactics(const ConvProblem& p, ActLayout layout) {
  std::vector<std::string> t = {"direct"};
  if (winograd_shape(p)) t.push_back("winograd");
  // The matmul form serves plain and channels-last tensors (conv_impl), not blocked ones.
  if (conv_is_pointwise(p) && layout != ActLayout::kBlocked16) t.push_back("matmul");
  return t;
}

static bool conv_impl(const ConvProblem& p, const Tensor& x, const Tensor& w, const Tensor* b,
                      Tensor& y, const ConvPostOps& post, bool cache_weights, ConvLayouts layouts) {
  if (x.dtype() != DataType::kFloat32 || p.nspatial < 1 || p.nspatial > 3) return false;
  if (!layouts.plain() && p.transpose) return false;
  const bool channels_last = layouts.channels_last();
  if (post.residual && (post.residual->dtype() != DataType::kFloat32 ||
                        post.residual->shape() != y.shape() || p.transpose))
    return false;
  const std::string key = conv_key(p, w, b != nullptr, post, layouts);
  std::shared_ptr<ConvEntry> e;
  {
    auto& cache = conv_cache();
    std::lock_guard<std::mutex> lock(cache.mutex());
    if (cache_weights) e = cache.find(key);
    if (e && (e->stale() || (e->ok && e->sample != sample_of(w))))  // freed, or changed in place
      e = nullptr;
    if (!e) {
      e = std::make_shared<ConvEntry>();
      try {
        bool built = false;
        if (!layouts.blocked() && pointwise_wanted(p, channels_last) && conv_is_pointwise(p) &&
            !(channels_last && is_strided(p))) {
          try {
            if (channels_last)
              build_pointwise_last(*e, p, w, b != nullptr, post);
            else
              build_pointwise(*e, p, w, b != nullptr, post);
            built = true;
          } catch (const dnnl::error&) {
            *e = ConvEntry();
          }
        }
        if (!built) build_conv(*e, p, w, b != nullptr, post, layouts);
      } catch (const dnnl::error& err) {
        TRT_LOG_VERBOSE("oneDNN cannot run {} ({}); using the reference kernel", key, err.what());
        e->ok = false;
      }
      // Weights computed at run time get a new buffer every run: caching them would only grow
      // the cache, so their packed form lives for this call only.
      if (cache_weights) cache.put(key, e, e->ok ? e->cost_bytes : 0);
    }
  }
  if (!e->ok) return false;
  try {
    dnnl::stream& s = stream();
    memory src_user = user_mem(e->user_src_md, x.raw());
    memory dst_user = user_mem(e->user_dst_md, y.raw());
    memory src = src_user, dst = dst_user;
    if (e->pointwise && is_strided(p)) {
      const size_t bytes = e->user_src_md.get_size();
      float* sub = static_cast<float*>(thread_buffer(kSrcBuffer, bytes));
      subsample(p, x.data<float>(), sub);
      src = user_mem(e->user_src_md, sub);
    }
    if (e->reorder_src) {
      src = memory(e->src_md, engine(), thread_buffer(kSrcBuffer, e->src_md.get_size()));
      e->src_reorder.execute(s, src_user, src);
    }
    if (e->reorder_dst)
      dst = memory(e->dst_md, engine(), thread_buffer(kDstBuffer, e->dst_md.get_size()));
    if (post.residual) {
      // The sum post-op adds what dst holds: the residual, in dst's layout (never written to).
      if (e->reorder_dst) {
        memory res = user_mem(e->user_dst_md, post.residual->raw());
        e->residual_reorder.execute(s, res, dst);
      } else if (y.raw() != post.residual->raw()) {  // else in place: dst holds it already
        std::memcpy(y.raw(), post.residual->raw(), y.nbytes());
      }
    }
    // A pointwise entry is a matmul whose "src" is the weights and whose "weights" are x; a
    // channels-last pointwise one (and a convolution) reads x as src.
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, e->pointwise ? e->weights_mem : src},
                                         {DNNL_ARG_WEIGHTS, e->pointwise ? src : e->weights_mem},
                                         {DNNL_ARG_DST, dst}};
    if (b)
      args.emplace(e->pointwise
                       ? (DNNL_ARG_ATTR_MULTIPLE_POST_OP(post.residual ? 1 : 0) | DNNL_ARG_SRC_1)
                       : DNNL_ARG_BIAS,
                   user_mem(e->bias_md, b->raw()));
    if (e->scratchpad_bytes > 0) {
      const memory::desc sd({static_cast<memory::dim>(e->scratchpad_bytes)}, memory::data_type::u8,
                            Tag::a);
      args.emplace(DNNL_ARG_SCRATCHPAD,
                   memory(sd, engine(), thread_buffer(kScratchBuffer, e->scratchpad_bytes)));
    }
    e->prim.execute(s, args);
    if (e->reorder_dst) e->dst_reorder.execute(s, dst, dst_user);
    s.wait();
  } catch (const dnnl::error& err) {
    // In place, the residual may be partly overwritten: no reference run can follow.
    TRT_CHECK(!(post.residual && y.raw() == post.residual->raw()), ErrorCode::kInternal,
              "oneDNN convolution failed in place on its residual ({})", err.what());
    TRT_LOG_WARN("oneDNN convolution failed ({}); using the reference kernel", err.what());
    return false;
  }
  return true;
}

// ---- matmul ---------------------------------------------------------------------------------

namespace {

struct MatmulEntry {
  bool ok = false;
  dnnl::matmul prim;
  size_t scratchpad_bytes = 0;
  memory::desc a_md, b_md, y_md, bias_md;
};

Cache<MatmulEntry>& matmul_cache() {
  static auto* c = new Cache<MatmulEntry>(1024, size_t{1} << 30);
  return *c;
}

// What a matmul primitive adds to the product: output scale alpha, a bias (bias_md not empty:
// broadcast along the rows), the exact GELU, then sum_scale times what Y held before.
struct MatmulExtras {
  float alpha = 1.0f, sum_scale = 0.0f;
  bool gelu = false;
  memory::desc bias_md;
};

// Builds (or finds) a matmul primitive for the given descriptors and attributes.
std::shared_ptr<MatmulEntry> get_matmul(const std::string& key, const memory::desc& a_md,
                                        const memory::desc& b_md, const memory::desc& y_md,
                                        const MatmulExtras& x = {}) {
  auto& cache = matmul_cache();
  std::lock_guard<std::mutex> lock(cache.mutex());
  std::shared_ptr<MatmulEntry> e = cache.find(key);
  if (e) return e;
  e = std::make_shared<MatmulEntry>();
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (x.alpha != 1.0f) attr.set_output_scales(0, {x.alpha});
    dnnl::post_ops ops;
    if (x.gelu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    if (x.sum_scale != 0.0f) ops.append_sum(x.sum_scale);
    if (ops.len() > 0) attr.set_post_ops(ops);
    const bool bias = x.bias_md.get_size() > 0;
    dnnl::matmul::desc d = bias ? dnnl::matmul::desc(a_md, b_md, x.bias_md, y_md)
                                : dnnl::matmul::desc(a_md, b_md, y_md);
    dnnl::matmul::primitive_desc pd(d, attr, engine());
    require_optimized(pd);
    e->prim = dnnl::matmul(pd);
    e->scratchpad_bytes = pd.scratchpad_desc().get_size();
    e->a_md = a_md;
    e->b_md = b_md;
    e->y_md = y_md;
    e->bias_md = x.bias_md;
    e->ok = true;
  } catch (const dnnl::error& err) {
    TRT_LOG_VERBOSE("oneDNN cannot run matmul {} ({}); using the reference kernel", key,
                    err.what());
  }
  cache.put(key, e, 0);
  return e;
}

void run_matmul(const MatmulEntry& e, const void* a, const void* b, void* y,
                const void* bias = nullptr) {
  dnnl::stream& s = stream();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, user_mem(e.a_md, a)},
                                       {DNNL_ARG_WEIGHTS, user_mem(e.b_md, b)},
                                       {DNNL_ARG_DST, user_mem(e.y_md, y)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, user_mem(e.bias_md, bias));
  if (e.scratchpad_bytes > 0) {
    const memory::desc sd({static_cast<memory::dim>(e.scratchpad_bytes)}, memory::data_type::u8,
                          Tag::a);
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(sd, engine(), thread_buffer(kScratchBuffer, e.scratchpad_bytes)));
  }
  e.prim.execute(s, args);
  s.wait();
}

}  // namespace

static bool gemm_impl(const Tensor& a, const Tensor& b, const Tensor* c, bool trans_a, bool trans_b,
                      float alpha, float beta, Tensor& y) {
  const int64_t m = y.dim(0), n = y.dim(1);
  const int64_t k = trans_a ? a.dim(0) : a.dim(1);
  const bool use_c = c != nullptr && beta != 0.0f;
  std::string key = "gemm|";
  append_dims(key, "", {m, n, k, trans_a, trans_b});
  key += fmt::format("{}|{}|{}", alpha, beta, use_c);
  const memory::desc a_md({m, k}, kF32, trans_a ? memory::dims{1, m} : memory::dims{k, 1});
  const memory::desc b_md({k, n}, kF32, trans_b ? memory::dims{1, k} : memory::dims{n, 1});
  const memory::desc y_md = plain_md({m, n});
  MatmulExtras x;
  x.alpha = alpha;
  x.sum_scale = use_c ? beta : 0.0f;
  auto e = get_matmul(key, a_md, b_md, y_md, x);
  if (!e->ok) return false;
  if (use_c) {
    // y = C broadcast to [m, n]; the sum post-op then adds beta * y.
    const Shape& cs = c->shape();
    const int64_t cn = cs.empty() ? 1 : cs.back(), cm = cs.size() == 2 ? cs[0] : 1;
    const float* cp = c->data<float>();
    float* yp = y.data<float>();
#pragma omp parallel for schedule(static) if (m * n > (1 << 16))
    for (int64_t i = 0; i < m; ++i) {
      const float* crow = cp + (cm == 1 ? 0 : i) * cn;
      float* yrow = yp + i * n;
      if (cn == 1)
        std::fill(yrow, yrow + n, crow[0]);
      else
        std::memcpy(yrow, crow, static_cast<size_t>(n) * sizeof(float));
    }
  }
  try {
    run_matmul(*e, a.raw(), b.raw(), y.raw());
  } catch (const dnnl::error& err) {
    TRT_LOG_WARN("oneDNN gemm failed ({}); using the reference kernel", err.what());
    return false;
  }
  return true;
}

static bool matmul_impl(const Tensor& a, const Shape& a_shape, const Tensor& b,
                        const Shape& b_shape, Tensor& y, const Shape& y_shape) {
  const size_t r = y_shape.size();
  if (r > DNNL_MAX_NDIMS || a.dtype() != DataType::kFloat32) return false;
  memory::dims ad(a_shape.begin(), a_shape.end()), bd(b_shape.begin(), b_shape.end()),
      yd(y_shape.begin(), y_shape.end());
  // B shared by every batch (its batch dims all 1): A's batch dims fold into its rows, one
  // (rows x K) x (K x N) product instead of many. A [197, 1, 768] x B [1, 768, 2304] (ViT's
  // sequence-first attention projections) ran as 197 products of one row each, at a fifth of
  // the rate.
  if (r > 2 && std::all_of(b_shape.begin(), b_shape.end() - 2, [](int64_t d) { return d == 1; })) {
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < r; ++i) rows *= a_shape[i];
    ad = {rows, a_shape[r - 1]};
    bd = {b_shape[r - 2], b_shape[r - 1]};
    yd = {rows, y_shape[r - 1]};
  }
  std::string key = "matmul|";
  append_dims(key, "a", ad);
  append_dims(key, "b", bd);
  append_dims(key, "y", yd);
  auto e = get_matmul(key, plain_md(ad), plain_md(bd), plain_md(yd));
  try {
    if (e->ok) {
      run_matmul(*e, a.raw(), b.raw(), y.raw());
      return true;
    }
    // Batch broadcasting this implementation rejects: one 2-D matmul per output batch.
    const int64_t m = y_shape[r - 2], n = y_shape[r - 1], k = a_shape[r - 1];
    std::string key2 = "matmul2d|";
    append_dims(key2, "", {m, n, k});
    auto e2 = get_matmul(key2, plain_md({m, k}), plain_md({k, n}), plain_md({m, n}));
    if (!e2->ok) return false;
    int64_t batches = 1;
    for (size_t i = 0; i + 2 < r; ++i) batches *= y_shape[i];
    const float* ap = a.data<float>();
    const float* bp = b.data<float>();
    float* yp = y.data<float>();
    for (int64_t bi = 0; bi < batches; ++bi) {
      int64_t rem = bi, aoff = 0, boff = 0, astride = m * k, bstride = k * n;
      for (size_t d = r - 2; d-- > 0;) {
        const int64_t idx = rem % y_shape[d];
        rem /= y_shape[d];
        aoff += (a_shape[d] == 1 ? 0 : idx) * astride;
        boff += (b_shape[d] == 1 ? 0 : idx) * bstride;
        astride *= a_shape[d];
        bstride *= b_shape[d];
      }
      run_matmul(*e2, ap + aoff, bp + boff, yp + bi * m * n);
    }
  } catch (const dnnl::error& err) {
    TRT_LOG_WARN("oneDNN matmul failed ({}); using the reference kernel", err.what());
    return false;
  }
  return true;
}

// Y [rows, N] = A [rows, K] x W [K, N] + bias [N] (+ GELU) (+ residual, copied into Y first
// unless Y is its buffer, and added by the sum post-op).
static bool matmul_bias_impl(const Tensor& a, const Tensor& w, const Tensor& bias,
                             const Tensor* residual, bool gelu, Tensor& y) {
  if (a.dtype() != DataType::kFloat32 || w.rank() != 2 || a.rank() < 1) return false;
  const int64_t k = w.dim(0), n = w.dim(1);
  if (a.shape().back() != k || bias.numel() != n || k <= 0 || n <= 0) return false;
  const int64_t rows = a.numel() / k;
  if (rows <= 0 || y.numel() != rows * n) return false;
  std::string key = "matmul_bias|";
  append_dims(key, "", {rows, k, n, gelu, residual != nullptr});
  MatmulExtras x;
  x.gelu = gelu;
  x.sum_scale = residual ? 1.0f : 0.0f;
  x.bias_md = plain_md({1, n});
  auto e = get_matmul(key, plain_md({rows, k}), plain_md({k, n}), plain_md({rows, n}), x);
  if (!e->ok) return false;
  if (residual && y.raw() != residual->raw())  // else in place: Y is the donated residual
    std::memcpy(y.raw(), residual->raw(), y.nbytes());
  try {
    run_matmul(*e, a.raw(), w.raw(), y.raw(), bias.raw());
  } catch (const dnnl::error& err) {
    TRT_LOG_WARN("oneDNN matmul failed ({}); using the reference kernel", err.what());
    return false;
  }
  return true;
}

bool onednn_matmul_bias(const Tensor& a, const Tensor& w, const Tensor& bias,
                        const Tensor* residual, bool gelu, Tensor& y) {
  const bool ok = matmul_bias_impl(a, w, bias, residual, gelu, y);
  (ok ? g_matmul_runs : g_matmul_fallbacks)++;
  return ok;
}

bool onednn_conv(const ConvProblem& p, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                 const ConvPostOps& post, bool cache_weights, ConvLayouts layouts) {
  // A SiLU runs as its own vector pass after the primitive: oneDNN's swish costs about twice as
  // much (silu.h).
  ConvPostOps inner = post;
  if (post.act == ConvActivation::kSilu) inner.act = ConvActivation::kNone;
  const bool ok = conv_impl(p, x, w, b, y, inner, cache_weights, layouts);
  if (ok && post.act == ConvActivation::kSilu) silu_inplace(y.data<float>(), y.numel());
  (ok ? g_conv_runs : g_conv_fallbacks)++;
  return ok;
}

bool onednn_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool trans_a, bool trans_b,
                 float alpha, float beta, Tensor& y) {
  const bool ok = gemm_impl(a, b, c, trans_a, trans_b, alpha, beta, y);
  (ok ? g_matmul_runs : g_matmul_fallbacks)++;
  return ok;
}

bool onednn_matmul(const Tensor& a, const Shape& a_shape, const Tensor& b, const Shape& b_shape,
                   Tensor& y, const Shape& y_shape) {
  const bool ok = matmul_impl(a, a_shape, b, b_shape, y, y_shape);
  (ok ? g_matmul_runs : g_matmul_fallbacks)++;
  return ok;
}

static std::shared_ptr<MatmulEntry> strided_matmul_entry(const StridedMatmul& p) {
  std::string key = "strided_matmul|";
  append_dims(key, "a", p.a_dims);
  append_dims(key, "as", p.a_strides);
  append_dims(key, "b", p.b_dims);
  append_dims(key, "bs", p.b_strides);
  append_dims(key, "y", p.y_dims);
  append_dims(key, "ys", p.y_strides);
  key += fmt::format("{}", p.alpha);
  MatmulExtras x;
  x.alpha = p.alpha;
  return get_matmul(key, memory::desc(p.a_dims, kF32, p.a_strides),
                    memory::desc(p.b_dims, kF32, p.b_strides),
                    memory::desc(p.y_dims, kF32, p.y_strides), x);
}

bool onednn_strided_matmul_native(const StridedMatmul& p) {
  return p.y_dims.size() <= DNNL_MAX_NDIMS && strided_matmul_entry(p)->ok;
}

bool onednn_strided_matmul(const StridedMatmul& p, const float* a, const float* b, float* y) {
  bool ok = p.y_dims.size() <= DNNL_MAX_NDIMS;
  if (ok) {
    const std::shared_ptr<MatmulEntry> e = strided_matmul_entry(p);
    ok = e->ok;
    try {
      if (ok) run_matmul(*e, a, b, y);
    } catch (const dnnl::error& err) {
      TRT_LOG_WARN("oneDNN matmul failed ({}); using the reference kernel", err.what());
      ok = false;
    }
  }
  (ok ? g_matmul_runs : g_matmul_fallbacks)++;
  return ok;
}

void onednn_release_stale() {
  qlinear::release_stale();  // first: its dequantized weights are keys of conv entries
  onednn_pointwise_depthwise_release(false);
  std::lock_guard<std::mutex> lock(conv_cache().mutex());
  conv_cache().erase_stale();
}

void onednn_clear_caches() {
  onednn_pointwise_depthwise_release(true);
  {
    std::lock_guard<std::mutex> lock(conv_cache().mutex());
    conv_cache().clear();
  }
  std::lock_guard<std::mutex> lock(matmul_cache().mutex());
  matmul_cache().clear();
}

FastPathStats onednn_stats() {
  FastPathStats s;
  s.conv_runs = g_conv_runs.load();
  s.conv_fallbacks = g_conv_fallbacks.load();
  s.depthwise_runs = blocked_depthwise_runs();
  s.matmul_runs = g_matmul_runs.load();
  s.matmul_fallbacks = g_matmul_fallbacks.load();
  std::lock_guard<std::mutex> lock(conv_cache().mutex());
  s.conv_cache_entries = static_cast<int64_t>(conv_cache().size());
  return s;
}

}  // namespace trtutils::cpu::nn
