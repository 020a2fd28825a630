// com.trtutils::PointwiseDepthwise's fast path: oneDNN's 1x1 convolution with a depthwise post-op
// (post_ops::append_dw), which computes rows of the expanded tensor into a small per-thread
// buffer and runs the depthwise convolution over them while they are in cache. Unfused, an
// inverted residual block writes its 6x-expanded tensor to memory and reads it back
// (bench/onednn_dw_fusion_probe.cpp: MobileNetV2's first expansion at batch 1 0.435 -> 0.309 ms,
// batch 8 5.2 -> 2.7 ms). Only oneDNN's native kernel is used: where it would run its
// "ref_fused" form (the two convolutions in turn through a buffer), the caller runs them itself.
#include <atomic>
#include <mutex>
#include <string>

#include "backends/cpu/lru_cache.h"
#include "backends/cpu/nn_kernels.h"
#include "backends/cpu/onednn_conv_parts.h"
#include "trtutils/logging.h"

namespace trtutils::cpu::nn {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using namespace parts;

std::atomic<int64_t> g_runs{0};

struct PwDwEntry {
  bool ok = false;
  std::weak_ptr<const uint8_t> weights, dw_weights;  // the keys' buffers
  std::vector<uint32_t> sample, dw_sample;
  dnnl::convolution_forward prim;
  memory weights_mem, dw_weights_mem;
  memory::desc src_md, dst_md, bias_md, dw_bias_md;
  size_t scratchpad_bytes = 0, cost_bytes = 0;
  bool stale() const { return ok && (weights.expired() || dw_weights.expired()); }
};

LruCache<PwDwEntry>& cache() {
  static auto* c = new LruCache<PwDwEntry>(1024, size_t{1} << 30);
  return *c;
}

std::string key_of(const PointwiseDepthwiseProblem& p, const Tensor& w, const Tensor& w_dw,
                   bool bias, bool dw_bias) {
  return fmt::format("{}|{}|{},{},{},{},{}|{},{}|{},{}|{},{},{},{}|{},{}|{}{}|{},{},{}|{},{},{}",
                     w.raw(), w_dw.raw(), p.batch, p.in_channels, p.channels, p.height, p.width,
                     p.kernel[0], p.kernel[1], p.stride[0], p.stride[1], p.pad_begin[0],
                     p.pad_begin[1], p.pad_end[0], p.pad_end[1], p.dilation[0], p.dilation[1],
                     bias ? 1 : 0, dw_bias ? 1 : 0, static_cast<int>(p.pointwise.act),
                     p.pointwise.alpha, p.pointwise.beta, static_cast<int>(p.depthwise.act),
                     p.depthwise.alpha, p.depthwise.beta);
}

memory::desc blocked_md(const memory::dims& dims) {
  return memory::desc(dims, kF32, Tag::aBcd16b);
}

// oneDNN 2.6's depthwise post-op: 3x3, top-left padding of 1, stride 1 or 2, no dilation; the
// bottom / right padding follows from the shapes (checked against the problem's output).
bool post_op_geometry(const PointwiseDepthwiseProblem& p) {
  for (int i = 0; i < 2; ++i)
    if (p.kernel[i] != 3 || p.pad_begin[i] != 1 || p.dilation[i] != 1 ||
        (p.stride[i] != 1 && p.stride[i] != 2))
      return false;
  return p.stride[0] == p.stride[1] && p.pointwise.act != ConvActivation::kSilu &&
         p.depthwise.act != ConvActivation::kSilu;
}

memory reordered(const memory::desc& user, const memory::desc& want, const Tensor& t,
                 size_t& cost) {
  memory u = user_mem(user, t.raw());
  if (want == user) return u;
  memory m(want, onednn::engine());
  dnnl::reorder(u, m).execute(onednn::stream(), u, m);
  onednn::stream().wait();
  cost += want.get_size();
  return m;
}

// The fused primitive's descriptor; throws dnnl::error when oneDNN has no native kernel for it
// (its "ref_fused_convolution" included).
dnnl::convolution_forward::primitive_desc fused_pd(const PointwiseDepthwiseProblem& p, bool bias,
                                                   bool dw_bias) {
  const memory::desc src_md = blocked_md({p.batch, p.in_channels, p.height, p.width});
  const memory::desc mid_md = blocked_md({p.batch, p.channels, p.height, p.width});
  dnnl::post_ops ops;
  append_activation(ops, p.pointwise);
  ops.append_dw(kF32, dw_bias ? kF32 : memory::data_type::undef, kF32, 3, p.stride[0], 1, 0, {});
  append_activation(ops, p.depthwise);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(ops);
  const memory::desc w_any({p.channels, p.in_channels, 1, 1}, kF32, Tag::any);
  const memory::desc bias_md = bias ? plain_md({p.channels}) : memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, src_md, w_any, bias_md,
                                    mid_md, {1, 1}, {0, 0}, {0, 0});
  dnnl::convolution_forward::primitive_desc pd(d, attr, onednn::engine());
  require_optimized(pd);
  if (pd.dst_desc() != blocked_md({p.batch, p.channels, p.out_height, p.out_width}))
    throw dnnl::error(dnnl_unimplemented, "the depthwise post-op's output differs");
  return pd;
}

void build(PwDwEntry& e, const PointwiseDepthwiseProblem& p, const Tensor& w, const Tensor& w_dw,
           bool bias, bool dw_bias) {
  const auto pd = fused_pd(p, bias, dw_bias);
  e.src_md = pd.src_desc();
  e.dst_md = pd.dst_desc();
  e.bias_md = bias ? plain_md({p.channels}) : memory::desc();
  e.dw_bias_md = dw_bias ? plain_md({p.channels}) : memory::desc();
  e.prim = dnnl::convolution_forward(pd);
  e.scratchpad_bytes = pd.scratchpad_desc().get_size();
  e.weights_mem =
      reordered(plain_md({p.channels, p.in_channels, 1, 1}), pd.weights_desc(), w, e.cost_bytes);
  const memory::desc dw_want =
      pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
  e.dw_weights_mem = reordered(plain_md({p.channels, 1, 1, p.kernel[0], p.kernel[1]}), dw_want,
                               w_dw, e.cost_bytes);
  e.weights = w.weak_buffer();
  e.dw_weights = w_dw.weak_buffer();
  e.sample = sample_of(w);
  e.dw_sample = sample_of(w_dw);
  e.ok = true;
}

std::shared_ptr<PwDwEntry> entry(const PointwiseDepthwiseProblem& p, const Tensor& w,
                                 const Tensor& w_dw, bool bias, bool dw_bias, bool cache_weights) {
  const std::string key = key_of(p, w, w_dw, bias, dw_bias);
  std::lock_guard<std::mutex> lock(cache().mutex());
  std::shared_ptr<PwDwEntry> e = cache_weights ? cache().find(key) : nullptr;
  if (e &&
      (e->stale() || (e->ok && (e->sample != sample_of(w) || e->dw_sample != sample_of(w_dw)))))
    e = nullptr;
  if (e) return e;
  e = std::make_shared<PwDwEntry>();
  try {
    build(*e, p, w, w_dw, bias, dw_bias);
  } catch (const dnnl::error& err) {
    TRT_LOG_VERBOSE("no fused pointwise + depthwise kernel for {} ({})", key, err.what());
    e->ok = false;
  }
  if (cache_weights) cache().put(key, e, e->ok ? e->cost_bytes : 0);
  return e;
}

}  // namespace

bool onednn_pointwise_depthwise(const PointwiseDepthwiseProblem& p, const Tensor& x,
                                const Tensor& w, const Tensor* b, const Tensor& w_dw,
                                const Tensor* b_dw, Tensor& y, bool cache_weights) {
  if (!post_op_geometry(p)) return false;
  const auto e = entry(p, w, w_dw, b != nullptr, b_dw != nullptr, cache_weights);
  if (!e->ok) return false;
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, user_mem(e->src_md, x.raw())},
      {DNNL_ARG_WEIGHTS, e->weights_mem},
      {DNNL_ARG_DST, user_mem(e->dst_md, y.raw())},
      {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, e->dw_weights_mem}};
  if (b) args.emplace(DNNL_ARG_BIAS, user_mem(e->bias_md, b->raw()));
  if (b_dw)
    args.emplace(DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, user_mem(e->dw_bias_md, b_dw->raw()));
  if (e->scratchpad_bytes > 0) {
    const memory::desc sd({static_cast<memory::dim>(e->scratchpad_bytes)}, memory::data_type::u8,
                          Tag::a);
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(sd, onednn::engine(), thread_buffer(kScratchBuffer, e->scratchpad_bytes)));
  }
  e->prim.execute(onednn::stream(), args);
  onednn::stream().wait();
  ++g_runs;
  return true;
}

bool onednn_pointwise_depthwise_native(const PointwiseDepthwiseProblem& p, bool bias,
                                       bool dw_bias) {
  if (!post_op_geometry(p)) return false;
  try {
    fused_pd(p, bias, dw_bias);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

int64_t onednn_pointwise_depthwise_runs() {
  return g_runs.load();
}

void onednn_pointwise_depthwise_release(bool all) {
  std::lock_guard<std::mutex> lock(cache().mutex());
  if (all)
    cache().clear();
  else
    cache().erase_stale();
}

}  // namespace trtutils::cpu::nn
