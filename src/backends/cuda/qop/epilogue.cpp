// The epilogue pass of QOp (qop.h) over the products in an accumulator (the cuDNN, cuBLASLt
// int32 / float and float fallback paths; the implicit GEMM and the requantizing products write Y
// themselves), and the executor's layer-norm fusion (QGemmLnInput) after it or in it.
#include <utility>
#include <vector>

#include "backends/cuda/qop/qop.h"

namespace trtutils::cuda::qop {

// The executor's layer-norm fusion (fusion/layernorm_quantize.cpp, QGemmLnInput): Y float32
// [..., N], the layer norm's output allocated ([A, B, N] -> [B, A, N] with ln_swap01).
k::LnEpilogue QOp::layer_norm_epilogue(RunContext& ctx, const std::vector<Value*>& in,
                                       const std::vector<Value*>& out, const Shape& ys) {
  const ir::Node& node = *ctx.node;
  auto input = [&](size_t i) -> Value* { return i < in.size() ? in[i] : nullptr; };
  Value& scale = *input(kLnScale);
  Value* bias = input(kLnBias);
  Value* ysc = input(kLnYScale);
  Value* zp = input(kLnYZeroPoint);
  TRT_CHECK_ARG(out.size() > 1 && out[1] && ysc && zp && y_t_ == DataType::kFloat32,
                "{}: the fused layer norm needs a float32 Y, its quantizer and a second output",
                node.describe());
  for (const Value* p : {&scale, bias})
    TRT_CHECK_ARG(!p || (p->dtype == DataType::kFloat32 && p->numel() == n_),
                  "{}: the fused layer norm's Scale / B must be float32 with {} values",
                  node.describe(), n_);
  const bool swap = node.attr_int("ln_swap01", 0) != 0;
  TRT_CHECK_ARG(!swap || ys.size() == 3, "{}: ln_swap01 needs a rank-3 Y, got {}", node.describe(),
                shape_str(ys));
  k::LnEpilogue ln;
  ln.scale = static_cast<const float*>(ctx.dev(scale));
  ln.bias = bias ? static_cast<const float*>(ctx.dev(*bias)) : nullptr;
  ln.eps = node.attr_float("ln_epsilon", 1e-5f);
  ln.q.y_t = zp->dtype;
  ln.q.y_scale = static_cast<float>(ctx.host(*ysc).at_double(0));
  ln.q.y_zp = static_cast<float>(ctx.host(*zp).at_double(0));
  Shape lsh = ys;
  if (swap) {
    ln.q.grid0 = ys[0];
    ln.q.grid1 = ys[1];
    std::swap(lsh[0], lsh[1]);
  }
  ln.y = ctx.make(*out[1], ln.q.y_t, lsh);
  return ln;
}

// The epilogue kernel over the products in e.acc, with the fused layer norm when ln is given
// and its kernel fits (true), else q_epilogue [+ layer_norm_after].
bool QOp::epilogue_pass(RunContext& ctx, const k::QEpilogue& e, const k::LnEpilogue* ln) {
  if (ln) {
    const cudaError_t st = k::q_epilogue_layer_norm(e, *ln, ctx.stream);
    if (st != cudaErrorNotSupported) {
      ctx.check(st, "quantized epilogue + layer norm");
      return true;
    }
  }
  ctx.check(k::q_epilogue(e, ctx.stream), "quantized epilogue");
  if (ln) layer_norm_after(ctx, e, *ln);
  return false;
}

// The layer norm as its own pass over Y (paths whose epilogue is not q_epilogue's).
void QOp::layer_norm_after(RunContext& ctx, const k::QEpilogue& e, const k::LnEpilogue& ln) {
  ctx.check(k::layer_norm_quantize(DataType::kFloat32, e.y, ln.scale, ln.bias, ln.y, e.rows, e.cols,
                                   ln.eps, ln.q, ctx.stream),
            "LayerNormalization + QuantizeLinear");
}

}  // namespace trtutils::cuda::qop
