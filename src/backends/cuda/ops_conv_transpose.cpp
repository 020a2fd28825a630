// ConvTranspose on the GPU: cuDNN's backward-data convolution (the transposed convolution is
// the gradient of a convolution with respect to its input: ONNX's W [C_in, C_out/group, k...]
// is that convolution's filter, X its output gradient, Y its input gradient), plus the bias
// through cudnnAddTensor. float32 (TF32 when the engine allows it) and float16, NCHW, 1-3
// spatial axes. Pads must be symmetric and given explicitly (or VALID); other forms (SAME_*,
// output_shape, asymmetric pads) are refused at construction, so the builder runs such a layer
// on the CPU (per-layer fallback).
#include <fmt/format.h>

#include <map>
#include <memory>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cudnn_util.h"
#include "ops/nn_geometry.h"

namespace trtutils::cuda {
namespace {

struct Geometry {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  std::vector<int64_t> in, out, kernel, stride, dilation, pad;
};

Geometry geometry(const ir::Node& node, const Shape& x, const Shape& w) {
  TRT_CHECK_ARG(x.size() >= 3 && w.size() == x.size(), "{}: X {} and W {} must have one rank >= 3",
                node.describe(), shape_str(x), shape_str(w));
  const size_t nsp = x.size() - 2;
  TRT_CHECK(nsp <= 3, ErrorCode::kNotSupported, "{}: {}-D transposed convolution", node.describe(),
            nsp);
  Geometry g;
  g.group = node.attr_int("group", 1);
  g.batch = x[0];
  g.in_channels = x[1];
  TRT_CHECK_ARG(g.group >= 1 && w[0] == g.in_channels && g.in_channels % g.group == 0,
                "{}: W {} does not match X's {} channels with group {}", node.describe(),
                shape_str(w), g.in_channels, g.group);
  g.out_channels = w[1] * g.group;
  const auto attr = [&](const char* name, int64_t dflt, size_t n) {
    std::vector<int64_t> v = node.attr_ints(name, {});
    if (v.empty()) v.assign(n, dflt);
    TRT_CHECK_ARG(v.size() == n, "{}: {} has {} values, expected {}", node.describe(), name,
                  v.size(), n);
    return v;
  };
  const auto strides = attr("strides", 1, nsp), dilations = attr("dilations", 1, nsp);
  const auto pads = attr("pads", 0, 2 * nsp), out_pad = attr("output_padding", 0, nsp);
  for (size_t i = 0; i < nsp; ++i) {
    const int64_t k = w[2 + i], s = strides[i], d = dilations[i];
    TRT_CHECK_ARG(
        s >= 1 && d >= 1 && pads[i] >= 0 && out_pad[i] >= 0 && (out_pad[i] < s || out_pad[i] < d),
        "{}: invalid strides / dilations / pads / output_padding", node.describe());
    const int64_t o = s * (x[2 + i] - 1) + out_pad[i] + (k - 1) * d + 1 - 2 * pads[i];
    TRT_CHECK_ARG(o >= 1, "{}: the output would have {} elements on axis {}", node.describe(), o,
                  2 + i);
    g.in.push_back(x[2 + i]);
    g.out.push_back(o);
    g.kernel.push_back(k);
    g.stride.push_back(s);
    g.dilation.push_back(d);
    g.pad.push_back(pads[i]);
  }
  return g;
}

struct Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionBwdDataAlgo_t algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  size_t workspace = 0;
  Shape y_shape;
  ~Plan() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

class ConvTransposeOp : public GpuOp {
 public:
  std::string kernel() const override { return "cuDNN (backward data)"; }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& w = *in.at(1);
    Value* b = in.size() > 2 ? in[2] : nullptr;
    const DataType dt = x.dtype;
    TRT_CHECK((dt == DataType::kFloat32 || dt == DataType::kFloat16) && w.dtype == dt &&
                  (!b || b->dtype == dt),
              ErrorCode::kNotSupported, "{}: ConvTranspose of {} x {} on the GPU", node.describe(),
              dtype_name(dt), dtype_name(w.dtype));
    const Geometry g = geometry(node, x.shape, w.shape);
    if (b)
      TRT_CHECK_ARG(b->shape.size() == 1 && b->shape[0] == g.out_channels,
                    "{}: bias B {} must be 1-D with {} elements", node.describe(),
                    shape_str(b->shape), g.out_channels);
    Shape ys{g.batch, g.out_channels};
    ys.insert(ys.end(), g.out.begin(), g.out.end());
    if (shape_numel(ys) == 0 || x.numel() == 0) {  // no regions (a detector's empty batch)
      void* py = ctx.make(*out.at(0), dt, ys);
      if (shape_numel(ys)) TRT_CUDA_CHECK(cudaMemsetAsync(py, 0, out[0]->nbytes(), ctx.stream));
      return;
    }
    Plan& p = plan(ctx, g, dt, b != nullptr);
    void* py = ctx.make(*out.at(0), dt, p.y_shape);
    std::shared_ptr<void> ws = p.workspace ? ctx.scratch(p.workspace) : nullptr;
    const float one = 1.0f, zero = 0.0f;
    TRT_CUDNN_CHECK(cudnnConvolutionBackwardData(ctx.cudnn, &one, p.w, ctx.dev(w), p.x, ctx.dev(x),
                                                 p.conv, p.algo, ws.get(), p.workspace, &zero, p.y,
                                                 py));
    if (b) TRT_CUDNN_CHECK(cudnnAddTensor(ctx.cudnn, &one, p.bias, ctx.dev(*b), &one, p.y, py));
  }

 private:
  Plan& plan(RunContext& ctx, const Geometry& g, DataType dt, bool bias) {
    const ir::Node& node = *ctx.node;
    std::string key = fmt::format("{}|{}|{}|{}|{}|{}", dtype_name(dt), ctx.allow_tf32, g.batch,
                                  g.in_channels, g.out_channels, g.group);
    for (size_t i = 0; i < g.in.size(); ++i)
      key += fmt::format("|{},{},{},{},{},{}", g.in[i], g.out[i], g.kernel[i], g.stride[i],
                         g.dilation[i], g.pad[i]);
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
    auto p = std::make_unique<Plan>();
    // 1-D runs as 2-D with a unit height.
    const size_t ns = std::max<size_t>(g.in.size(), 2), lead = ns - g.in.size();
    const cudnnDataType_t t = dt == DataType::kFloat16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    std::vector<int> xd{cudnn_dim(node, g.batch), cudnn_dim(node, g.in_channels)};
    std::vector<int> yd{cudnn_dim(node, g.batch), cudnn_dim(node, g.out_channels)};
    std::vector<int> wd{cudnn_dim(node, g.in_channels), cudnn_dim(node, g.out_channels / g.group)};
    std::vector<int> pads(ns, 0), strides(ns, 1), dils(ns, 1);
    for (size_t i = 0; i < lead; ++i) {
      xd.push_back(1);
      yd.push_back(1);
      wd.push_back(1);
    }
    p->y_shape = {g.batch, g.out_channels};
    for (size_t i = 0; i < g.in.size(); ++i) {
      xd.push_back(cudnn_dim(node, g.in[i]));
      yd.push_back(cudnn_dim(node, g.out[i]));
      wd.push_back(cudnn_dim(node, g.kernel[i]));
      pads[lead + i] = cudnn_dim(node, g.pad[i]);
      strides[lead + i] = cudnn_dim(node, g.stride[i]);
      dils[lead + i] = cudnn_dim(node, g.dilation[i]);
      p->y_shape.push_back(g.out[i]);
    }
    TRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->x));
    TRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->y));
    TRT_CUDNN_CHECK(cudnnCreateFilterDescriptor(&p->w));
    TRT_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&p->conv));
    cudnn_set_tensor(p->x, t, xd, false);
    cudnn_set_tensor(p->y, t, yd, false);
    TRT_CUDNN_CHECK(cudnnSetFilterNdDescriptor(p->w, t, CUDNN_TENSOR_NCHW,
                                               static_cast<int>(wd.size()), wd.data()));
    TRT_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(p->conv, static_cast<int>(ns), pads.data(),
                                                    strides.data(), dils.data(),
                                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    TRT_CUDNN_CHECK(cudnnSetConvolutionGroupCount(p->conv, static_cast<int>(g.group)));
    const bool fma_only = dt == DataType::kFloat32 && !ctx.allow_tf32;
    TRT_CUDNN_CHECK(cudnnSetConvolutionMathType(
        p->conv, dt == DataType::kFloat16 ? CUDNN_TENSOR_OP_MATH
                                          : (fma_only ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH)));
    // The forward convolution of Y must give X's shape (ONNX's output size formula).
    std::vector<int> check(xd.size());
    TRT_CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(
        p->conv, p->y, p->w, static_cast<int>(check.size()), check.data()));
    TRT_CHECK(check == xd, ErrorCode::kInternal,
              "{}: cuDNN's geometry differs from ONNX's for this transposed convolution",
              node.describe());
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int found = 0;
    TRT_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(
        ctx.cudnn, p->w, p->x, p->conv, p->y, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, perf));
    const cudnnConvolutionBwdDataAlgoPerf_t* chosen = nullptr;
    auto usable = [&](const cudnnConvolutionBwdDataAlgoPerf_t& r) {
      return r.status == CUDNN_STATUS_SUCCESS &&
             (!fma_only || r.mathType == CUDNN_FMA_MATH || r.mathType == CUDNN_DEFAULT_MATH);
    };
    // Deterministic executors: cuDNN's enum order instead of the timing order, among the
    // algorithms cuDNN calls deterministic (ALGO_0 accumulates with atomics).
    for (int a = 0; ctx.deterministic && a < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT && !chosen; ++a)
      for (int i = 0; i < found && !chosen; ++i)
        if (perf[i].algo == a && usable(perf[i]) && perf[i].determinism == CUDNN_DETERMINISTIC)
          chosen = &perf[i];
    for (int i = 0; i < found && !chosen; ++i)
      if (usable(perf[i])) chosen = &perf[i];
    TRT_CHECK(chosen, ErrorCode::kNotSupported,
              "{}: cuDNN has no algorithm for this transposed convolution", node.describe());
    p->algo = chosen->algo;
    p->workspace = chosen->memory;
    TRT_CUDNN_CHECK(
        cudnnSetConvolutionMathType(p->conv, fma_only ? CUDNN_FMA_MATH : chosen->mathType));
    if (bias) {
      TRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->bias));
      std::vector<int> bd(yd.size(), 1);
      bd[1] = yd[1];
      cudnn_set_tensor(p->bias, t, bd, false);
    }
    Plan* raw = p.get();
    plans_.emplace(key, std::move(p));
    return *raw;
  }

  std::map<std::string, std::unique_ptr<Plan>> plans_;
};

// What cuDNN's backward-data call cannot express is refused here (the builder then runs the
// layer on the CPU): auto_pad SAME_*, output_shape, asymmetric pads.
std::unique_ptr<GpuOp> make_conv_transpose(const OpBuild& b) {
  const ir::Node& n = b.node;
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  TRT_CHECK(auto_pad == "NOTSET" || auto_pad == "VALID", ErrorCode::kNotSupported,
            "auto_pad {} has no CUDA kernel", auto_pad);
  TRT_CHECK(n.attr_ints("output_shape", {}).empty(), ErrorCode::kNotSupported,
            "output_shape has no CUDA kernel (give pads)");
  const std::vector<int64_t> pads = n.attr_ints("pads", {});
  const size_t half = pads.size() / 2;
  for (size_t i = 0; i < half; ++i)
    TRT_CHECK(pads[i] == pads[half + i], ErrorCode::kNotSupported,
              "asymmetric pads have no CUDA kernel");
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}}) {
    const DataType dt = b.input_dtype(i);
    TRT_CHECK(dt == DataType::kUndefined || dt == DataType::kFloat32 || dt == DataType::kFloat16,
              ErrorCode::kNotSupported, "{} inputs have no CUDA kernel", dtype_name(dt));
  }
  return std::make_unique<ConvTransposeOp>();
}

}  // namespace

void register_conv_transpose_ops(OpTable& t) {
  t["ConvTranspose"] = make_conv_transpose;
}

}  // namespace trtutils::cuda
