// oneDNN (2.x) int8 fast paths for QConv / QGemm / QMatMul (see qlinear_kernels.h for what
// they compute and when they decline).
//
// One cached entry per (weights buffer, shapes, dtypes, scales, epilogue): the primitive, its
// reorders and the weights reordered (with oneDNN's s8 compensation) into the primitive's
// layout. As in onednn_nn.cpp, an entry watches the user's weights buffer (a weak handle: stale
// once the buffer is freed, then never used and released) and re-checks a sample of its bytes on
// every hit. Temporaries (reordered src/dst) live in per-thread buffers; the caches are guarded by
// a mutex, primitives execute concurrently from any thread.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/onednn_common.h"
#include "backends/cpu/qlinear_kernels.h"
#include "trtutils/logging.h"

namespace trtutils::cpu::qlinear {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DT = memory::data_type;

std::atomic<int64_t> g_runs{0}, g_fallbacks{0};

using onednn::engine;
using onednn::stream;
using Buffer = onednn::ScratchBuffer;
enum BufferId {
  kSrcBuffer,
  kDstBuffer,
  kScratchBuffer,
  kBiasBuffer,
  kZeroPointBuffer,
  kNumBuffers
};
void* thread_buffer(BufferId id, size_t bytes) {
  thread_local Buffer buffers[kNumBuffers];
  return buffers[id].get(std::max<size_t>(bytes, 64));
}

// Whether oneDNN's int8 kernels multiply exactly for any u8/s8 operands (VNNI dot products);
// otherwise (vpmaddubsw) only for u8 values <= 127.
bool exact_int8_isa() {
  static const bool exact = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_vnni || isa == dnnl::cpu_isa::avx512_core_bf16 ||
           isa == dnnl::cpu_isa::avx512_core_amx || isa == dnnl::cpu_isa::avx2_vnni;
  }();
  return exact;
}

// The src data type to run X with. With VNNI, X's own type (exact for any values, no scan).
// Otherwise s8 values that are all >= 0 run as u8 (exact when <= 127, as are u8 values <= 127);
// undef: X cannot run exactly on this ISA.
DT choose_src_type(const Tensor& x) {
  const int64_t n = x.numel();
  if (exact_int8_isa()) return x.dtype() == DataType::kInt8 ? DT::s8 : DT::u8;
  if (x.dtype() == DataType::kInt8) {
    const int8_t* p = x.data<int8_t>();
    int lo = 0;
#pragma omp parallel for reduction(min : lo) schedule(static) if (n > (1 << 18))
    for (int64_t i = 0; i < n; ++i) lo = std::min<int>(lo, p[i]);
    return lo >= 0 ? DT::u8 : DT::undef;
  }
  const uint8_t* p = x.data<uint8_t>();
  int hi = 0;
#pragma omp parallel for reduction(max : hi) schedule(static) if (n > (1 << 18))
  for (int64_t i = 0; i < n; ++i) hi = std::max<int>(hi, p[i]);
  return hi <= 127 ? DT::u8 : DT::undef;
}

DT dnnl_type(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return DT::s8;
    case DataType::kUInt8:
      return DT::u8;
    case DataType::kFloat32:
      return DT::f32;
    case DataType::kUndefined:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kString:
    case DataType::kBool:
    case DataType::kFloat16:
    case DataType::kFloat64:
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kUInt32:
    case DataType::kUInt64:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kUInt4:
    case DataType::kInt4:
      break;
  }
  return DT::undef;
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
memory::desc plain_md(const memory::dims& dims, DT dt) {
  return memory::desc(dims, dt, plain_strides(dims));
}
// [N, C, spatial...] dims stored as [N, spatial..., C].
memory::desc channels_last_md(const memory::dims& dims, DT dt) {
  const size_t r = dims.size();
  memory::dims s(r);
  s[1] = 1;
  memory::dim acc = dims[1];
  for (size_t i = r; i-- > 2;) {
    s[i] = acc;
    acc *= dims[i];
  }
  s[0] = acc;
  return memory::desc(dims, dt, s);
}
memory::desc with_type(const memory::desc& md, DT dt) {
  memory::desc r = md;
  r.data.data_type = memory::convert_to_c(dt);
  return r;
}
memory user_mem(const memory::desc& md, const void* p) {
  return memory(md, engine(), const_cast<void*>(p));
}

void require_optimized(const dnnl::primitive_desc_base& pd) {
  const std::string impl = pd.impl_info_str();
  if (impl.rfind("ref", 0) == 0)
    throw dnnl::error(dnnl_unimplemented, "oneDNN offers only a reference implementation");
}

// Debian's oneDNN 2.6 `brgconv` (avx512_core_vnni) returns wrong int8 results for some spatial
// convolutions: 3x3 pad 1 with 1792-2048 input channels on 15x15 maps and larger (up to a third
// of the outputs zero or off by 1e4; fcn_resnet50's head), while 4096 channels or a 2x2 kernel
// were right: no shape rule was found that covers it safely. Spatial int8 convolutions therefore
// take the next implementation (jit_int8, right on every shape swept;
// QlinearKernels.WideInputChannelConvMatchesReference); brgconv_1x1 is kept. Throws when only a
// brgconv is offered (the caller then runs the reference path).
void skip_faulty_brgconv(dnnl::convolution_forward::primitive_desc& pd) {
  while (std::string(pd.impl_info_str()).rfind("brgconv:", 0) == 0)
    if (!pd.next_impl())
      throw dnnl::error(dnnl_unimplemented, "only oneDNN's brgconv offers this int8 convolution");
}

// ---- the epilogue as oneDNN attributes --------------------------------------------------------

// How an Epilogue maps onto output scales and post-ops.
struct Recipe {
  bool ok = true;
  std::vector<float> out_scales;  // 1 or per channel
  std::vector<float> bias_div;    // x_scale * w_scale[c]: B[c] / bias_div[c] is the bias argument
  bool sum = false;               // dst holds the residual before the primitive runs
  bool residual_raw = false;      // ... as R's quantized values (else as float32)
  float sum_scale = 1.0f;
  int32_t sum_zp = 0;
  DT sum_dt = DT::undef;
  nn::ConvActivation act = nn::ConvActivation::kNone;
  float alpha = 0, beta = 0;
  bool linear = false;
  float lin_scale = 1.0f, lin_shift = 0.0f;
  bool src_zp = false;

  std::string key() const {
    std::string k = fmt::format("s{},{},{},{},{}|a{},{},{}|l{},{},{}|z{}|", sum, residual_raw,
                                sum_scale, sum_zp, static_cast<int>(sum_dt), static_cast<int>(act),
                                alpha, beta, linear, lin_scale, lin_shift, src_zp);
    k += fmt::format("n{}:", out_scales.size());
    // Exact values (the entry re-compares its scales on a hit); the key needs only a summary.
    uint64_t h = 1469598103934665603ull;
    for (float f : out_scales) {
      uint32_t b;
      std::memcpy(&b, &f, 4);
      h = (h ^ b) * 1099511628211ull;
    }
    return k + std::to_string(h);
  }

  dnnl::primitive_attr attr(int scale_mask) const {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    a.set_output_scales(out_scales.size() == 1 ? 0 : scale_mask, out_scales);
    if (src_zp) a.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    dnnl::post_ops ops;
    if (sum) {
      if (sum_zp != 0 || sum_dt != DT::undef)
        ops.append_sum(sum_scale, sum_zp, sum_dt);
      else
        ops.append_sum(sum_scale);
    }
    switch (act) {
      case nn::ConvActivation::kNone:
        break;
      case nn::ConvActivation::kRelu:
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        break;
      case nn::ConvActivation::kLeakyRelu:
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, alpha, 0.0f);
        break;
      case nn::ConvActivation::kClip:
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, alpha, beta);
        break;
      case nn::ConvActivation::kSigmoid:
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_logistic, 0.0f, 0.0f);
        break;
      case nn::ConvActivation::kHardSwish:
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_hardswish, 0.0f, 0.0f);
        break;
      case nn::ConvActivation::kSilu:  // swish: x * sigmoid(alpha * x), alpha 1
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
        break;
    }
    if (linear) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, lin_scale, lin_shift);
    a.set_post_ops(ops);
    return a;
  }
};

// dst_dt: Y's oneDNN type (f32, s8, u8).
Recipe make_recipe(const Operand& x, const std::vector<float>& w_scale, const Epilogue& ep,
                   DT dst_dt) {
  Recipe r;
  // Activations that commute with a positive scale run on T / y_scale directly.
  const bool fold =
      ep.quantized_out &&
      (ep.act == nn::ConvActivation::kNone || ep.act == nn::ConvActivation::kRelu ||
       ep.act == nn::ConvActivation::kLeakyRelu || ep.act == nn::ConvActivation::kClip);
  const float div = fold ? ep.y_scale : 1.0f;
  r.out_scales.resize(w_scale.size());
  r.bias_div.resize(w_scale.size());
  for (size_t c = 0; c < w_scale.size(); ++c) {
    r.bias_div[c] = x.scale * w_scale[c];
    r.out_scales[c] = r.bias_div[c] / div;
  }
  if (ep.residual) {
    r.sum = true;
    if (ep.quantized_out) {
      // dst is int8: it can only hold R's quantized values (same size type).
      const DT rt = dnnl_type(ep.residual->dtype());
      if (!ep.residual_quantized || (rt != DT::s8 && rt != DT::u8)) {
        r.ok = false;
        return r;
      }
      r.residual_raw = true;
      r.sum_scale = ep.r_scale / div;
      r.sum_zp = ep.r_zp;
      r.sum_dt = rt == dst_dt ? DT::undef : rt;
    }
  }
  r.act = ep.act;
  r.alpha = ep.alpha;
  r.beta = ep.beta;
  if (fold && ep.act == nn::ConvActivation::kClip) {
    r.alpha = ep.alpha / ep.y_scale;
    r.beta = ep.beta / ep.y_scale;
  }
  if (ep.quantized_out) {
    if (!fold) {
      r.linear = true;
      r.lin_scale = 1.0f / ep.y_scale;
      r.lin_shift = static_cast<float>(ep.y_zp);
    } else if (ep.y_zp != 0) {
      r.linear = true;
      r.lin_shift = static_cast<float>(ep.y_zp);
    }
  }
  r.src_zp = x.zp != 0;
  return r;
}

// The bias argument B[c] / (x_scale * w_scale[c]) (the primitive scales it back with acc).
const float* bias_arg(const Recipe& r, const Tensor& b) {
  const int64_t n = b.numel();
  float* d = static_cast<float*>(thread_buffer(kBiasBuffer, static_cast<size_t>(n) * 4));
  const float* s = b.data<float>();
  for (int64_t c = 0; c < n; ++c) d[c] = s[c] / r.bias_div[r.bias_div.size() == 1 ? 0 : c];
  return d;
}

// Writes the float residual (dequantized when quantized) into `dst` (user layout, float32).
void residual_to_float(const Epilogue& ep, float* dst) {
  const Tensor& r = *ep.residual;
  const int64_t n = r.numel();
  if (!ep.residual_quantized) {
    std::memcpy(dst, r.raw(), static_cast<size_t>(n) * 4);
    return;
  }
  const float s = ep.r_scale;
  const int32_t z = ep.r_zp;
  if (r.dtype() == DataType::kInt8) {
    const int8_t* p = r.data<int8_t>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(p[i] - z) * s;
  } else {
    const uint8_t* p = r.data<uint8_t>();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(p[i] - z) * s;
  }
}

void add_scratchpad(std::unordered_map<int, memory>& args, size_t bytes) {
  if (bytes == 0) return;
  const memory::desc sd({static_cast<memory::dim>(bytes)}, DT::u8, Tag::a);
  args.emplace(DNNL_ARG_SCRATCHPAD, memory(sd, engine(), thread_buffer(kScratchBuffer, bytes)));
}

void add_src_zp(std::unordered_map<int, memory>& args, const Recipe& r, int32_t zp) {
  if (!r.src_zp) return;
  int32_t* v = static_cast<int32_t*>(thread_buffer(kZeroPointBuffer, 64));
  *v = zp;
  args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
               memory(memory::desc({1}, DT::s32, Tag::a), engine(), v));
}

// ---- entries ----------------------------------------------------------------------------------

struct Entry {
  bool ok = false;
  std::weak_ptr<const uint8_t> weights;  // the user's weights buffer (the key's address)
  std::vector<uint8_t> sample;           // its bytes when the entry was built
  std::vector<float> out_scales;
  dnnl::primitive prim;
  memory::desc user_src_md, user_dst_md, src_md, dst_md, bias_md;
  bool reorder_src = false, reorder_dst = false;
  dnnl::reorder src_reorder, dst_reorder, residual_reorder;
  memory weights_mem;
  size_t scratchpad_bytes = 0;
  size_t cost_bytes = 0;
  bool has_weights = false;
  bool stale() const { return has_weights && weights.expired(); }
};

LruCache<Entry>& cache() {
  static auto* c = new LruCache<Entry>(4096, size_t{1} << 30);
  return *c;
}

template <typename Build>
std::shared_ptr<Entry> get_entry(const std::string& key, const Tensor* w, bool cache_it,
                                 const Recipe& r, Build&& build) {
  auto& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex());
  std::shared_ptr<Entry> e = cache_it ? c.find(key) : nullptr;
  if (e && (e->stale() ||
            (e->ok && ((w && e->sample != buffer_sample(*w)) || e->out_scales != r.out_scales))))
    e = nullptr;
  if (e) return e;
  e = std::make_shared<Entry>();
  try {
    build(*e);
    e->out_scales = r.out_scales;
    if (w) {
      e->weights = w->weak_buffer();
      e->has_weights = true;
      e->sample = buffer_sample(*w);
    }
    e->ok = true;
  } catch (const dnnl::error& err) {
    TRT_LOG_VERBOSE("oneDNN int8 cannot run {} ({}); computing in float", key, err.what());
    e->ok = false;
  }
  if (cache_it) c.put(key, e, e->ok ? e->cost_bytes : 0);
  return e;
}

void append_dims(std::string& key, const char* name, const memory::dims& d) {
  key += name;
  for (auto v : d) key += std::to_string(v) + ",";
  key += ";";
}

// Reorders the user's constant weights into `want` (oneDNN adds the s8 compensation).
memory pack_weights(const memory::desc& user, const memory::desc& want, const void* p,
                    size_t& cost) {
  memory uw = user_mem(user, p);
  if (want == user) return uw;
  memory packed(want, engine());
  dnnl::reorder(uw, packed).execute(stream(), uw, packed);
  stream().wait();
  cost += want.get_size();
  return packed;
}

// Runs the entry: src/dst reorders, residual into dst, the primitive.
void execute(const Entry& e, const Recipe& r, const Operand& x, const Epilogue& ep,
             const memory& weights, Tensor& y, int bias_arg_id) {
  dnnl::stream& s = stream();
  memory src_user = user_mem(e.user_src_md, x.t->raw());
  memory dst_user = user_mem(e.user_dst_md, y.raw());
  memory src = src_user, dst = dst_user;
  if (e.reorder_src) {
    src = memory(e.src_md, engine(), thread_buffer(kSrcBuffer, e.src_md.get_size()));
    e.src_reorder.execute(s, src_user, src);
  }
  if (e.reorder_dst)
    dst = memory(e.dst_md, engine(), thread_buffer(kDstBuffer, e.dst_md.get_size()));
  if (r.sum) {
    if (r.residual_raw) {
      // R's quantized values, in dst's layout (the reorder only moves bytes).
      const DT rt = dnnl_type(ep.residual->dtype());
      memory res = user_mem(with_type(e.user_dst_md, rt), ep.residual->raw());
      if (e.reorder_dst) {
        memory as_r(with_type(e.dst_md, rt), engine(), dst.get_data_handle());
        e.residual_reorder.execute(s, res, as_r);
      } else
        std::memcpy(y.raw(), ep.residual->raw(), ep.residual->nbytes());
    } else {
      residual_to_float(ep, y.data<float>());  // y is float32 here
      if (e.reorder_dst) e.residual_reorder.execute(s, dst_user, dst);
    }
  }
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
  if (ep.bias) args.emplace(bias_arg_id, user_mem(e.bias_md, bias_arg(r, *ep.bias)));
  add_src_zp(args, r, x.zp);
  add_scratchpad(args, e.scratchpad_bytes);
  e.prim.execute(s, args);
  if (e.reorder_dst) e.dst_reorder.execute(s, dst, dst_user);
  s.wait();
}

}  // namespace

// ---- convolution ------------------------------------------------------------------------------

static bool qconv_impl(const nn::ConvProblem& p, bool channels_last, const Operand& x,
                       const Tensor& w, const std::vector<float>& w_scale, bool cache_weights,
                       const Epilogue& ep, Tensor& y) {
  if (p.transpose || p.nspatial < 1 || p.nspatial > 3 || w.dtype() != DataType::kInt8) return false;
  const DT dst_dt = dnnl_type(y.dtype());
  if (dst_dt == DT::undef || (dst_dt == DT::f32) == ep.quantized_out) return false;
  const DT src_dt = choose_src_type(*x.t);
  if (src_dt == DT::undef) return false;
  const Recipe r = make_recipe(x, w_scale, ep, dst_dt);
  if (!r.ok) return false;

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
    pad_r.push_back(p.pad_end[i]);
  }
  const int64_t g = p.group;
  memory::dims wdims = g > 1 ? memory::dims{g, p.out_channels / g, p.in_channels / g}
                             : memory::dims{p.out_channels, p.in_channels};
  wdims.insert(wdims.end(), kdims.begin(), kdims.end());

  std::string key =
      fmt::format("qconv|{}|{}|{}|{}|{}|", w.raw(), channels_last, static_cast<int>(src_dt),
                  static_cast<int>(dst_dt), ep.bias != nullptr);
  append_dims(key, "x", src_dims);
  append_dims(key, "w", wdims);
  append_dims(key, "s", strides);
  append_dims(key, "d", dilates);
  append_dims(key, "p", pad_l);
  append_dims(key, "q", pad_r);
  key += r.key();

  auto e = get_entry(key, &w, cache_weights, r, [&](Entry& en) {
    en.user_src_md =
        channels_last ? channels_last_md(src_dims, src_dt) : plain_md(src_dims, src_dt);
    en.user_dst_md =
        channels_last ? channels_last_md(dst_dims, dst_dt) : plain_md(dst_dims, dst_dt);
    en.bias_md = ep.bias ? plain_md({p.out_channels}, DT::f32) : memory::desc();
    const dnnl::primitive_attr attr = r.attr(1 << 1);
    bool spatial = false;  // a kernel larger than 1x1
    for (auto k : kdims) spatial = spatial || k > 1;
    auto make_pd = [&](const memory::desc& src_md, const memory::desc& dst_md) {
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, src_md,
                                        memory::desc(wdims, DT::s8, Tag::any), en.bias_md, dst_md,
                                        strides, dilates, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
      if (spatial) skip_faulty_brgconv(pd);
      require_optimized(pd);
      return pd;
    };
    dnnl::convolution_forward::primitive_desc pd;
    bool built = false;
    if (channels_last) {
      // The int8 kernels' native layout: no reorders when a fast kernel takes it as it is.
      try {
        pd = make_pd(en.user_src_md, en.user_dst_md);
        built = true;
      } catch (const dnnl::error&) {
      }
    }
    if (!built)
      pd = make_pd(memory::desc(src_dims, src_dt, Tag::any),
                   memory::desc(dst_dims, dst_dt, Tag::any));
    en.prim = dnnl::convolution_forward(pd);
    en.src_md = pd.src_desc();
    en.dst_md = pd.dst_desc();
    en.scratchpad_bytes = pd.scratchpad_desc().get_size();
    en.reorder_src = en.src_md != en.user_src_md;
    en.reorder_dst = en.dst_md != en.user_dst_md;
    if (en.reorder_src)
      en.src_reorder = dnnl::reorder(
          dnnl::reorder::primitive_desc(engine(), en.user_src_md, engine(), en.src_md));
    if (en.reorder_dst) {
      en.dst_reorder = dnnl::reorder(
          dnnl::reorder::primitive_desc(engine(), en.dst_md, engine(), en.user_dst_md));
      if (r.sum) {
        const DT rt = r.residual_raw ? dnnl_type(ep.residual->dtype()) : DT::f32;
        en.residual_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
            engine(), with_type(en.user_dst_md, rt), engine(), with_type(en.dst_md, rt)));
      }
    }
    const memory::desc user_w = plain_md(wdims, DT::s8);
    en.weights_mem = pack_weights(user_w, pd.weights_desc(), w.raw(), en.cost_bytes);
  });
  if (!e->ok) return false;
  try {
    execute(*e, r, x, ep, e->weights_mem, y, DNNL_ARG_BIAS);
  } catch (const dnnl::error& err) {
    TRT_LOG_WARN("oneDNN int8 convolution failed ({}); computing in float", err.what());
    return false;
  }
  return true;
}

// ---- QGemm ------------------------------------------------------------------------------------

static bool qgemm_impl(const Operand& x, int64_t m, int64_t k, int64_t n, const Tensor& w,
                       bool trans_b, const std::vector<float>& w_scale, bool cache_weights,
                       const Epilogue& ep, Tensor& y) {
  if (w.dtype() != DataType::kInt8) return false;
  const DT dst_dt = dnnl_type(y.dtype());
  if (dst_dt == DT::undef || (dst_dt == DT::f32) == ep.quantized_out) return false;
  const DT src_dt = choose_src_type(*x.t);
  if (src_dt == DT::undef) return false;
  const Recipe r = make_recipe(x, w_scale, ep, dst_dt);
  if (!r.ok) return false;
  std::string key = fmt::format("qgemm|{}|{}|{}|{}|{}|", w.raw(), trans_b, static_cast<int>(src_dt),
                                static_cast<int>(dst_dt), ep.bias != nullptr);
  append_dims(key, "", {m, k, n});
  key += r.key();
  auto e = get_entry(key, &w, cache_weights, r, [&](Entry& en) {
    en.user_src_md = plain_md({m, k}, src_dt);
    en.user_dst_md = plain_md({m, n}, dst_dt);
    en.src_md = en.user_src_md;
    en.dst_md = en.user_dst_md;
    en.bias_md = ep.bias ? plain_md({1, n}, DT::f32) : memory::desc();
    const memory::desc user_w({k, n}, DT::s8, trans_b ? memory::dims{1, k} : memory::dims{n, 1});
    // A constant W is packed once into the primitive's layout; another is used as it is.
    dnnl::matmul::desc d(en.src_md, cache_weights ? memory::desc({k, n}, DT::s8, Tag::any) : user_w,
                         en.bias_md, en.dst_md);
    dnnl::matmul::primitive_desc pd(d, r.attr(1 << 1), engine());
    require_optimized(pd);
    en.prim = dnnl::matmul(pd);
    en.scratchpad_bytes = pd.scratchpad_desc().get_size();
    if (cache_weights)
      en.weights_mem = pack_weights(user_w, pd.weights_desc(), w.raw(), en.cost_bytes);
  });
  if (!e->ok) return false;
  try {
    memory wm = e->weights_mem;
    if (!cache_weights)
      wm = user_mem(memory::desc({k, n}, DT::s8, trans_b ? memory::dims{1, k} : memory::dims{n, 1}),
                    w.raw());
    execute(*e, r, x, ep, wm, y, DNNL_ARG_BIAS);
  } catch (const dnnl::error& err) {
    TRT_LOG_WARN("oneDNN int8 gemm failed ({}); computing in float", err.what());
    return false;
  }
  return true;
}

// ---- QMatMul ----------------------------------------------------------------------------------

static bool qmatmul_impl(const Operand& a, const Shape& a_shape, const Tensor& b, float b_scale,
                         const Shape& b_shape, const Epilogue& ep, Tensor& y,
                         const Shape& y_shape) {
  const size_t rank = y_shape.size();
  if (rank > DNNL_MAX_NDIMS || b.dtype() != DataType::kInt8) return false;
  const DT dst_dt = dnnl_type(y.dtype());
  if (dst_dt == DT::undef || (dst_dt == DT::f32) == ep.quantized_out) return false;
  const DT src_dt = choose_src_type(*a.t);
  if (src_dt == DT::undef) return false;
  const Recipe r = make_recipe(a, {b_scale}, ep, dst_dt);
  if (!r.ok) return false;
  const memory::dims ad(a_shape.begin(), a_shape.end()), bd(b_shape.begin(), b_shape.end()),
      yd(y_shape.begin(), y_shape.end());
  std::string key = fmt::format("qmatmul|{}|{}|{}|", static_cast<int>(src_dt),
                                static_cast<int>(dst_dt), ep.bias != nullptr);
  append_dims(key, "a", ad);
  append_dims(key, "b", bd);
  append_dims(key, "y", yd);
  key += r.key();
  auto e = get_entry(key, nullptr, true, r, [&](Entry& en) {
    en.user_src_md = en.src_md = plain_md(ad, src_dt);
    en.user_dst_md = en.dst_md = plain_md(yd, dst_dt);
    memory::dims bias_dims(rank, 1);
    bias_dims[rank - 1] = y_shape[rank - 1];
    en.bias_md = ep.bias ? plain_md(bias_dims, DT::f32) : memory::desc();
    dnnl::matmul::desc d(en.src_md, plain_md(bd, DT::s8), en.bias_md, en.dst_md);
    dnnl::matmul::primitive_desc pd(d, r.attr(1 << (rank - 1)), engine());
    require_optimized(pd);
    en.prim = dnnl::matmul(pd);
    en.scratchpad_bytes = pd.scratchpad_desc().get_size();
  });
  if (!e->ok) return false;
  try {
    execute(*e, r, a, ep, user_mem(plain_md(bd, DT::s8), b.raw()), y, DNNL_ARG_BIAS);
  } catch (const dnnl::error& err) {
    TRT_LOG_WARN("oneDNN int8 matmul failed ({}); computing in float", err.what());
    return false;
  }
  return true;
}

bool onednn_qconv(const nn::ConvProblem& p, bool channels_last, const Operand& x, const Tensor& w,
                  const std::vector<float>& w_scale, bool cache_weights, const Epilogue& ep,
                  Tensor& y) {
  const bool ok = qconv_impl(p, channels_last, x, w, w_scale, cache_weights, ep, y);
  (ok ? g_runs : g_fallbacks)++;
  return ok;
}

bool onednn_qgemm(const Operand& x, int64_t m, int64_t k, int64_t n, const Tensor& w, bool trans_b,
                  const std::vector<float>& w_scale, bool cache_weights, const Epilogue& ep,
                  Tensor& y) {
  const bool ok = qgemm_impl(x, m, k, n, w, trans_b, w_scale, cache_weights, ep, y);
  (ok ? g_runs : g_fallbacks)++;
  return ok;
}

bool onednn_qmatmul(const Operand& a, const Shape& a_shape, const Tensor& b, float b_scale,
                    const Shape& b_shape, const Epilogue& ep, Tensor& y, const Shape& y_shape) {
  const bool ok = qmatmul_impl(a, a_shape, b, b_scale, b_shape, ep, y, y_shape);
  (ok ? g_runs : g_fallbacks)++;
  return ok;
}

Int8Stats onednn_int8_stats() {
  Int8Stats s;
  s.runs = g_runs.load();
  s.fallbacks = g_fallbacks.load();
  std::lock_guard<std::mutex> lock(cache().mutex());
  s.cache_entries = static_cast<int64_t>(cache().size());
  return s;
}

void onednn_int8_release_stale() {
  std::lock_guard<std::mutex> lock(cache().mutex());
  cache().erase_stale();
}

void onednn_int8_clear_caches() {
  std::lock_guard<std::mutex> lock(cache().mutex());
  cache().clear();
}

}  // namespace trtutils::cpu::qlinear
