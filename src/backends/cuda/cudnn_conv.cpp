// Convolution geometry and the cuDNN forward convolution (legacy API, which cuDNN 9 still
// ships): descriptors and the algorithm chosen by cudnnFindConvolutionForwardAlgorithm are
// cached per problem; the workspace comes from the executor's pool on every call. Bias,
// residual and ReLU / identity epilogues run inside cudnnConvolutionBiasActivationForward.
#include <fmt/format.h>

#include <cstdlib>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cudnn_util.h"
#include "backends/cuda/kernel_switches.h"
#include "ops/nn_geometry.h"
#include "trtutils/logging.h"

namespace trtutils::cuda {

ConvGeometry conv_geometry(const ir::Node& node, const Shape& x, const Shape& w) {
  TRT_CHECK_ARG(x.size() >= 3 && w.size() == x.size(),
                "{}: X {} and W {} must have the same rank >= 3", node.describe(), shape_str(x),
                shape_str(w));
  const size_t nsp = x.size() - 2;
  TRT_CHECK(nsp <= 3, ErrorCode::kNotSupported, "{}: {}-D convolution is not supported",
            node.describe(), nsp);
  ConvGeometry g;
  g.nspatial = nsp;
  g.group = node.attr_int("group", 1);
  TRT_CHECK_ARG(g.group >= 1, "{}: group {} must be positive", node.describe(), g.group);
  g.batch = x[0];
  g.in_channels = x[1];
  TRT_CHECK_ARG(w[1] * g.group == g.in_channels && w[0] % g.group == 0,
                "{}: W {} does not match X's {} channels with group {}", node.describe(),
                shape_str(w), g.in_channels, g.group);
  g.out_channels = w[0];
  const std::vector<int64_t> wk(w.begin() + 2, w.end());
  const ops::WindowSpec ws = ops::read_window_spec(node, nsp, &wk);
  for (size_t i = 0; i < nsp; ++i) {
    const ops::AxisGeometry a = ops::conv_axis(ws, i, x[2 + i], node);
    g.in.push_back(x[2 + i]);
    g.out.push_back(a.out);
    g.kernel.push_back(wk[i]);
    g.stride.push_back(ws.strides[i]);
    g.dilation.push_back(ws.dilations[i]);
    g.pad_begin.push_back(a.pad_begin);
    g.pad_end.push_back(a.pad_end);
  }
  return g;
}

Shape conv_output_shape(const ConvGeometry& g) {
  Shape s{g.batch, g.out_channels};
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

namespace {

// What the plan fuses into the cuDNN call.
enum Fuse : int {
  kPlain = 0,         // no epilogue
  kFuseRelu = 1,      // bias + residual + ReLU in cudnnConvolutionBiasActivationForward
  kFuseIdentity = 2,  // bias + residual, identity activation (IMPLICIT_PRECOMP_GEMM only)
  kSeparate = 3,      // an epilogue cuDNN cannot fuse: conv, then our epilogue kernel
};

cudnnDataType_t cudnn_type(DataType dt) {
  if (dt == DataType::kFloat16) return CUDNN_DATA_HALF;
  if (dt == DataType::kBFloat16) return CUDNN_DATA_BFLOAT16;
  if (dt == DataType::kInt8) return CUDNN_DATA_INT8;
  if (dt == DataType::kInt32) return CUDNN_DATA_INT32;
  return CUDNN_DATA_FLOAT;
}

}  // namespace

void cudnn_set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t t, const std::vector<int>& dims,
                      bool channels_last) {
  std::vector<int> strides(dims.size());
  if (channels_last) {
    strides[1] = 1;
    int acc = dims[1];
    for (size_t i = dims.size(); i-- > 2;) {
      strides[i] = acc;
      acc *= dims[i];
    }
    strides[0] = acc;
  } else {
    int acc = 1;
    for (size_t i = dims.size(); i-- > 0;) {
      strides[i] = acc;
      acc *= dims[i];
    }
  }
  TRT_CUDNN_CHECK(
      cudnnSetTensorNdDescriptor(d, t, static_cast<int>(dims.size()), dims.data(), strides.data()));
}

int cudnn_dim(const ir::Node& node, int64_t v) {
  TRT_CHECK(v >= 0 && v < (int64_t{1} << 31), ErrorCode::kNotSupported,
            "{}: dimension {} is too large for cuDNN", node.describe(), v);
  return static_cast<int>(v);
}

struct CudnnConv::Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace = 0;
  bool fused = false;   // the epilogue runs inside cudnnConvolutionBiasActivationForward
  std::string refused;  // why a fusable epilogue is not fused
  std::shared_ptr<void> zero_bias;  // the fused call's bias when the node has none
  bool pad_input = false;           // asymmetric padding: X is padded explicitly first
  int64_t padded_numel = 0;
  k::PadDesc pad;  // in X's memory order
  ~Plan() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (act) cudnnDestroyActivationDescriptor(act);
  }
};

CudnnConv::~CudnnConv() = default;

CudnnConv::Plan& CudnnConv::plan(RunContext& ctx, const ConvGeometry& g, const ConvConfig& c,
                                 int fuse) {
  if (last_ && last_fuse_ == fuse && last_tf32_ == ctx.allow_tf32 && last_c_ == c && last_g_ == g)
    return *last_;
  const ir::Node& node = *ctx.node;
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", dtype_name(c.x_t), dtype_name(c.y_t),
                                c.channels_last, fuse, g.batch, g.in_channels, g.out_channels,
                                g.group, ctx.allow_tf32);
  for (size_t i = 0; i < g.nspatial; ++i)
    key += fmt::format("|{},{},{},{},{},{}", g.in[i], g.kernel[i], g.stride[i], g.dilation[i],
                       g.pad_begin[i], g.pad_end[i]);
  auto remember = [&](Plan* p) -> Plan& {
    last_ = p;
    last_g_ = g;
    last_c_ = c;
    last_fuse_ = fuse;
    last_tf32_ = ctx.allow_tf32;
    return *p;
  };
  auto it = plans_.find(key);
  if (it != plans_.end()) return remember(it->second.get());

  const bool int8 = c.x_t == DataType::kInt8;
  TRT_CHECK(!int8 || c.channels_last, ErrorCode::kInternal,
            "{}: int8 convolutions run channels-last only", node.describe());
  auto p = std::make_unique<Plan>();
  // 1-D runs as 2-D with a unit height.
  const size_t ns = std::max<size_t>(g.nspatial, 2);
  const size_t lead = ns - g.nspatial;
  std::vector<int64_t> in(ns, 1), out(ns, 1), kern(ns, 1), stride(ns, 1), dil(ns, 1), pad(ns, 0);
  for (size_t i = 0; i < g.nspatial; ++i) {
    in[lead + i] = g.in[i];
    out[lead + i] = g.out[i];
    kern[lead + i] = g.kernel[i];
    stride[lead + i] = g.stride[i];
    dil[lead + i] = g.dilation[i];
    if (g.pad_begin[i] != g.pad_end[i]) p->pad_input = true;
  }
  if (p->pad_input) {
    // X's memory order: [N, C, spatial...] or [N, spatial..., C].
    const int64_t first_spatial = c.channels_last ? 1 : 2;
    const int64_t channel_axis = c.channels_last ? static_cast<int64_t>(1 + g.nspatial) : 1;
    p->pad.rank = static_cast<int>(2 + g.nspatial);
    p->pad.in[0] = p->pad.out[0] = g.batch;
    p->pad.in[channel_axis] = p->pad.out[channel_axis] = g.in_channels;
    p->padded_numel = g.batch * g.in_channels;
    for (size_t i = 0; i < g.nspatial; ++i) {
      const int64_t a = first_spatial + static_cast<int64_t>(i);
      p->pad.in[a] = g.in[i];
      p->pad.out[a] = g.in[i] + g.pad_begin[i] + g.pad_end[i];
      p->pad.pad_begin[a] = g.pad_begin[i];
      p->padded_numel *= p->pad.out[a];
      in[lead + i] = p->pad.out[a];
    }
  } else {
    for (size_t i = 0; i < g.nspatial; ++i) pad[lead + i] = g.pad_begin[i];
  }
  const cudnnDataType_t xt = cudnn_type(c.x_t), yt = cudnn_type(c.y_t);
  std::vector<int> xd{cudnn_dim(node, g.batch), cudnn_dim(node, g.in_channels)};
  std::vector<int> yd{cudnn_dim(node, g.batch), cudnn_dim(node, g.out_channels)};
  std::vector<int> wd{cudnn_dim(node, g.out_channels), cudnn_dim(node, g.in_channels / g.group)};
  std::vector<int> pads, strides, dils;
  for (size_t i = 0; i < ns; ++i) {
    xd.push_back(cudnn_dim(node, in[i]));
    yd.push_back(cudnn_dim(node, out[i]));
    wd.push_back(cudnn_dim(node, kern[i]));
    pads.push_back(cudnn_dim(node, pad[i]));
    strides.push_back(cudnn_dim(node, stride[i]));
    dils.push_back(cudnn_dim(node, dil[i]));
  }
  TRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->x));
  TRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->y));
  TRT_CUDNN_CHECK(cudnnCreateFilterDescriptor(&p->w));
  TRT_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&p->conv));
  cudnn_set_tensor(p->x, xt, xd, c.channels_last);
  cudnn_set_tensor(p->y, yt, yd, c.channels_last);
  TRT_CUDNN_CHECK(
      cudnnSetFilterNdDescriptor(p->w, xt, c.channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                 static_cast<int>(wd.size()), wd.data()));
  TRT_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(
      p->conv, static_cast<int>(ns), pads.data(), strides.data(), dils.data(),
      CUDNN_CROSS_CORRELATION, int8 ? CUDNN_DATA_INT32 : CUDNN_DATA_FLOAT));
  TRT_CUDNN_CHECK(cudnnSetConvolutionGroupCount(p->conv, static_cast<int>(g.group)));
  const bool fp32 = c.x_t == DataType::kFloat32;
  const bool fma_only = fp32 && !ctx.allow_tf32;
  const cudnnMathType_t math =
      fp32 ? (ctx.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH) : CUDNN_TENSOR_OP_MATH;
  TRT_CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv, math));
  std::vector<int> check(yd.size());
  TRT_CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(
      p->conv, p->x, p->w, static_cast<int>(check.size()), check.data()));
  TRT_CHECK(check == yd, ErrorCode::kInternal,
            "{}: cuDNN computes another output shape than ONNX for this convolution",
            node.describe());
  // Timed choice among cuDNN's algorithms (once per problem).
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  const cudnnStatus_t timed = cudnnFindConvolutionForwardAlgorithm(
      ctx.cudnn, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf);
  if (timed == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    // Timing allocates each algorithm's workspace; on a GPU shared with other processes that
    // can fail where running one algorithm does not: cuDNN's heuristic ranking instead.
    TRT_LOG_WARN(
        "{}: cuDNN could not allocate memory to time its algorithms; using its "
        "heuristic order (free GPU memory, or build when the GPU is less busy)",
        node.describe());
    TRT_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
        ctx.cudnn, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
  } else {
    TRT_CUDNN_CHECK(timed);
  }
  auto usable = [&](const cudnnConvolutionFwdAlgoPerf_t& r) {
    if (r.status != CUDNN_STATUS_SUCCESS) return false;
    return !fma_only || r.mathType == CUDNN_FMA_MATH || r.mathType == CUDNN_DEFAULT_MATH;
  };
  const cudnnConvolutionFwdAlgoPerf_t* chosen = nullptr;
  if (ctx.deterministic) {
    // A fixed rule, not the timing: the GEMM-like algorithms first, then cuDNN's enum order
    // (forward algorithms are all deterministic).
    const cudnnConvolutionFwdAlgo_t order[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                               CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                               CUDNN_CONVOLUTION_FWD_ALGO_GEMM};
    for (cudnnConvolutionFwdAlgo_t a : order)
      for (int i = 0; i < found && !chosen; ++i)
        if (perf[i].algo == a && usable(perf[i])) chosen = &perf[i];
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT && !chosen; ++a)
      for (int i = 0; i < found && !chosen; ++i)
        if (perf[i].algo == a && usable(perf[i])) chosen = &perf[i];
  }
  for (int i = 0; i < found && !chosen; ++i)
    if (usable(perf[i])) chosen = &perf[i];
  TRT_CHECK(chosen, ErrorCode::kNotSupported,
            "{}: cuDNN has no algorithm for this convolution ({} x {} -> {}{})", node.describe(),
            dtype_name(c.x_t), dtype_name(c.x_t), dtype_name(c.y_t),
            c.channels_last ? ", NHWC" : "");
  if (fuse == kFuseRelu || fuse == kFuseIdentity) {
    // cuDNN runs the epilogue inside the convolution only with IMPLICIT_PRECOMP_GEMM (identity
    // needs it; ReLU with another algorithm becomes separate cuDNN kernels, no better than our
    // one epilogue kernel). Policy (TRTUTILS_CUDA_FUSED_CONV): "0"/"off" never fuse; "force"
    // fuse whenever cuDNN can; default: fuse when IMPLICIT_PRECOMP_GEMM is no slower than the
    // fastest algorithm plus an epilogue pass (y read + written, a residual read: ~2.5 y bytes
    // at ~2.5 TB/s, plus a launch), as timed by cudnnFind on this device.
    const char* env = switch_value("TRTUTILS_CUDA_FUSED_CONV");
    const std::string policy = env ? env : "auto";
    const cudnnConvolutionFwdAlgoPerf_t* precomp = nullptr;
    for (int i = 0; i < found && !precomp; ++i)
      if (usable(perf[i]) && perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        precomp = &perf[i];
    const double y_bytes =
        static_cast<double>(dtype_storage_bytes(c.y_t, shape_numel(conv_output_shape(g))));
    const double epilogue_ms = 2.5 * y_bytes / 2.5e9 + 0.003;
    if (policy == "0" || policy == "off" || policy == "false") {
      p->refused = "fusion off (TRTUTILS_CUDA_FUSED_CONV)";
    } else if (policy == "force" && fuse == kFuseRelu) {
      p->fused = true;  // with the fastest algorithm, whatever it is
    } else if (chosen->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
      p->fused = true;
    } else if (precomp && (policy == "force" || precomp->time <= chosen->time + epilogue_ms)) {
      chosen = precomp;
      p->fused = true;
    } else {
      p->refused = precomp ? fmt::format("IMPLICIT_PRECOMP_GEMM {:.3f} ms vs {:.3f} ms + epilogue",
                                         precomp->time, chosen->time)
                           : "no IMPLICIT_PRECOMP_GEMM algorithm";
    }
  }
  p->algo = chosen->algo;
  p->workspace = chosen->memory;
  TRT_CUDNN_CHECK(
      cudnnSetConvolutionMathType(p->conv, fma_only ? CUDNN_FMA_MATH : chosen->mathType));
  if (p->fused) {
    TRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->bias));
    std::vector<int> bd(yd.size(), 1);
    bd[1] = yd[1];
    cudnn_set_tensor(p->bias, yt, bd, false);
    TRT_CUDNN_CHECK(cudnnCreateActivationDescriptor(&p->act));
    TRT_CUDNN_CHECK(cudnnSetActivationDescriptor(
        p->act, fuse == kFuseRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
        CUDNN_NOT_PROPAGATE_NAN, 0.0));
    const size_t bytes = dtype_storage_bytes(c.y_t, g.out_channels);
    p->zero_bias = device_malloc(bytes);
    TRT_CUDA_CHECK(cudaMemsetAsync(p->zero_bias.get(), 0, bytes, ctx.stream));
  }
  Plan* raw = p.get();
  plans_.emplace(key, std::move(p));
  return remember(raw);
}

void CudnnConv::run(RunContext& ctx, const ConvGeometry& g, const ConvConfig& c, const void* x,
                    const void* w, void* y, const ConvEpilogue& e) {
  const bool is_float = c.x_t != DataType::kInt8;
  int fuse = kPlain;
  if (!e.empty()) {
    fuse = kSeparate;
    if (is_float && e.act == k::Act::kRelu) fuse = kFuseRelu;
    if (is_float && e.act == k::Act::kNone) fuse = kFuseIdentity;
  }
  Plan& p = plan(ctx, g, c, fuse);
  std::shared_ptr<void> padded, ws;
  if (p.pad_input) {
    padded = ctx.scratch(dtype_storage_bytes(c.x_t, p.padded_numel));
    ctx.check(k::pad(static_cast<size_t>(dtype_bits(c.x_t) / 8), x, padded.get(), p.pad,
                     p.padded_numel, ctx.stream),
              "Pad");
    x = padded.get();
  }
  if (p.workspace) ws = ctx.scratch(p.workspace);
  const std::string layout =
      std::string(c.channels_last ? " NHWC" : "") + (c.x_t == DataType::kInt8 ? " int8" : "");
  if (p.fused) {
    const float alpha1 = 1.0f, alpha2 = e.residual ? 1.0f : 0.0f;
    // With alpha2 = 0 the z operand is not read; it may alias y.
    const void* z = e.residual ? e.residual : y;
    const void* bias = e.bias ? e.bias : p.zero_bias.get();
    const cudnnStatus_t s = cudnnConvolutionBiasActivationForward(
        ctx.cudnn, &alpha1, p.x, x, p.w, w, p.conv, p.algo, ws.get(), p.workspace, &alpha2, p.y, z,
        p.bias, bias, p.act, p.y, y);
    if (s == CUDNN_STATUS_SUCCESS) {
      how_ = "cuDNN fused" + layout;
      return;
    }
    // Refused (a combination this cuDNN does not fuse): conv + epilogue kernel from now on.
    // Inside a CUDA graph capture there is no second chance (the eager run decided already).
    if (ctx.capturing) throw_cudnn(s, "cudnnConvolutionBiasActivationForward", __FILE__, __LINE__);
    (void)cudaGetLastError();
    p.fused = false;
    p.refused = cudnnGetErrorString(s);
    TRT_LOG_WARN("{}: cuDNN refused the fused convolution ({}); running conv + epilogue kernel",
                 ctx.node->describe(), p.refused);
  }
  const float alpha = 1.0f, beta = 0.0f;
  TRT_CUDNN_CHECK(cudnnConvolutionForward(ctx.cudnn, &alpha, p.x, x, p.w, w, p.conv, p.algo,
                                          ws.get(), p.workspace, &beta, p.y, y));
  if (e.empty()) {
    how_ = "cuDNN" + layout;
    return;
  }
  const int64_t n = shape_numel(conv_output_shape(g));
  const int64_t inner = c.channels_last ? 1 : n / std::max<int64_t>(1, g.batch * g.out_channels);
  ctx.check(k::bias_act(c.y_t, y, e.bias, e.residual, n, g.out_channels, inner, e.act, e.alpha,
                        e.beta, ctx.stream),
            "conv epilogue");
  how_ = "cuDNN + epilogue" + layout + (p.refused.empty() ? "" : " (not fused: " + p.refused + ")");
}

void convert_layout(RunContext& ctx, size_t esz, const Shape& nchw, const void* src, void* dst,
                    bool to_nhwc) {
  TRT_INTERNAL_CHECK(nchw.size() == 4);
  const int64_t n = nchw[0], c = nchw[1], hw = nchw[2] * nchw[3];
  const int64_t total = n * c * hw;
  if (total == 0) return;
  require_indexable(*ctx.node, total);
  k::Broadcast bc;
  bc.rank = 3;
  bc.dims[0] = n;
  bc.strides[0][0] = c * hw;
  if (to_nhwc) {  // out [N, HW, C] reads NCHW
    bc.dims[1] = hw;
    bc.dims[2] = c;
    bc.strides[0][1] = 1;
    bc.strides[0][2] = hw;
  } else {  // out [N, C, HW] reads NHWC
    bc.dims[1] = c;
    bc.dims[2] = hw;
    bc.strides[0][1] = 1;
    bc.strides[0][2] = c;
  }
  ctx.check(k::strided_copy(esz, src, dst, bc, 0, total, ctx.stream),
            to_nhwc ? "NCHW->NHWC" : "NHWC->NCHW");
}

}  // namespace trtutils::cuda
