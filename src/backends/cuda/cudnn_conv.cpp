// Convolution geometry and the cuDNN forward convolution (legacy API, which cuDNN 9 still
// ships): descriptors and the algorithm chosen by cudnnFindConvolutionForwardAlgorithm are
// cached per problem; the workspace comes from the executor's pool on every call.
#include <fmt/format.h>

#include "backends/cuda/cuda_ops.h"
#include "ops/nn_geometry.h"

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

struct CudnnConv::Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace = 0;
  bool pad_input = false;  // asymmetric padding: X is padded explicitly first
  Shape padded;
  k::PadDesc pad;
  ~Plan() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

CudnnConv::~CudnnConv() = default;

namespace {

cudnnDataType_t cudnn_type(DataType dt) {
  if (dt == DataType::kFloat16) return CUDNN_DATA_HALF;
  if (dt == DataType::kBFloat16) return CUDNN_DATA_BFLOAT16;
  return CUDNN_DATA_FLOAT;
}

void set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t t, const std::vector<int>& dims) {
  std::vector<int> strides(dims.size());
  int acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = acc;
    acc *= dims[i];
  }
  TRT_CUDNN_CHECK(
      cudnnSetTensorNdDescriptor(d, t, static_cast<int>(dims.size()), dims.data(), strides.data()));
}

int as_int(const ir::Node& node, int64_t v) {
  TRT_CHECK(v >= 0 && v < (int64_t{1} << 31), ErrorCode::kNotSupported,
            "{}: dimension {} is too large for cuDNN", node.describe(), v);
  return static_cast<int>(v);
}

}  // namespace

CudnnConv::Plan& CudnnConv::plan(RunContext& ctx, const ConvGeometry& g, DataType dt) {
  if (last_ && last_dt_ == dt && last_tf32_ == ctx.allow_tf32 && last_g_ == g) return *last_;
  const ir::Node& node = *ctx.node;
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}", dtype_name(dt), g.batch, g.in_channels,
                                g.out_channels, g.group, ctx.allow_tf32);
  for (size_t i = 0; i < g.nspatial; ++i)
    key += fmt::format("|{},{},{},{},{},{}", g.in[i], g.kernel[i], g.stride[i], g.dilation[i],
                       g.pad_begin[i], g.pad_end[i]);
  auto it = plans_.find(key);
  if (it != plans_.end()) {
    last_ = it->second.get();
    last_g_ = g;
    last_dt_ = dt;
    last_tf32_ = ctx.allow_tf32;
    return *last_;
  }

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
    p->pad.rank = static_cast<int>(2 + g.nspatial);
    p->pad.in[0] = p->pad.out[0] = g.batch;
    p->pad.in[1] = p->pad.out[1] = g.in_channels;
    p->padded = {g.batch, g.in_channels};
    for (size_t i = 0; i < g.nspatial; ++i) {
      p->pad.in[2 + i] = g.in[i];
      p->pad.out[2 + i] = g.in[i] + g.pad_begin[i] + g.pad_end[i];
      p->pad.pad_begin[2 + i] = g.pad_begin[i];
      p->padded.push_back(p->pad.out[2 + i]);
      in[lead + i] = p->pad.out[2 + i];
    }
  } else {
    for (size_t i = 0; i < g.nspatial; ++i) pad[lead + i] = g.pad_begin[i];
  }
  const cudnnDataType_t t = cudnn_type(dt);
  std::vector<int> xd{as_int(node, g.batch), as_int(node, g.in_channels)};
  std::vector<int> yd{as_int(node, g.batch), as_int(node, g.out_channels)};
  std::vector<int> wd{as_int(node, g.out_channels), as_int(node, g.in_channels / g.group)};
  std::vector<int> pads, strides, dils;
  for (size_t i = 0; i < ns; ++i) {
    xd.push_back(as_int(node, in[i]));
    yd.push_back(as_int(node, out[i]));
    wd.push_back(as_int(node, kern[i]));
    pads.push_back(as_int(node, pad[i]));
    strides.push_back(as_int(node, stride[i]));
    dils.push_back(as_int(node, dil[i]));
  }
  TRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->x));
  TRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->y));
  TRT_CUDNN_CHECK(cudnnCreateFilterDescriptor(&p->w));
  TRT_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&p->conv));
  set_tensor(p->x, t, xd);
  set_tensor(p->y, t, yd);
  TRT_CUDNN_CHECK(cudnnSetFilterNdDescriptor(p->w, t, CUDNN_TENSOR_NCHW,
                                             static_cast<int>(wd.size()), wd.data()));
  TRT_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(p->conv, static_cast<int>(ns), pads.data(),
                                                  strides.data(), dils.data(),
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  TRT_CUDNN_CHECK(cudnnSetConvolutionGroupCount(p->conv, static_cast<int>(g.group)));
  const bool fp32 = dt == DataType::kFloat32;
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
  TRT_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(
      ctx.cudnn, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
  bool chosen = false;
  for (int i = 0; i < found && !chosen; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (fp32 && !ctx.allow_tf32 && perf[i].mathType != CUDNN_FMA_MATH &&
        perf[i].mathType != CUDNN_DEFAULT_MATH)
      continue;
    p->algo = perf[i].algo;
    p->workspace = perf[i].memory;
    TRT_CUDNN_CHECK(cudnnSetConvolutionMathType(
        p->conv, fp32 && !ctx.allow_tf32 ? CUDNN_FMA_MATH : perf[i].mathType));
    chosen = true;
  }
  TRT_CHECK(chosen, ErrorCode::kNotSupported, "{}: cuDNN has no algorithm for this convolution",
            node.describe());
  last_ = p.get();
  last_g_ = g;
  last_dt_ = dt;
  last_tf32_ = ctx.allow_tf32;
  return *plans_.emplace(key, std::move(p)).first->second;
}

void CudnnConv::run(RunContext& ctx, const ConvGeometry& g, DataType dt, const void* x,
                    const void* w, void* y) {
  Plan& p = plan(ctx, g, dt);
  std::shared_ptr<void> padded, ws;
  if (p.pad_input) {
    const int64_t n = shape_numel(p.padded);
    padded = ctx.scratch(dtype_storage_bytes(dt, n));
    ctx.check(
        k::pad(static_cast<size_t>(dtype_bits(dt) / 8), x, padded.get(), p.pad, n, ctx.stream),
        "Pad");
    x = padded.get();
  }
  if (p.workspace) ws = ctx.scratch(p.workspace);
  const float alpha = 1.0f, beta = 0.0f;
  TRT_CUDNN_CHECK(cudnnConvolutionForward(ctx.cudnn, &alpha, p.x, x, p.w, w, p.conv, p.algo,
                                          ws.get(), p.workspace, &beta, p.y, y));
}

}  // namespace trtutils::cuda
