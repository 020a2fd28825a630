// QOp's implicit-GEMM tactic (qop.h; kernels in qconv_igemm.cu / qconv_pointwise.cu): int8 or
// E4M3 channels-last convolutions, and QGemms as 1x1 convolutions, with the epilogue fused;
// timed against the cuBLASLt tactic on the first eager run (timing cache).
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/qop/qop.h"

namespace trtutils::cuda::qop {

// Whether the implicit-GEMM kernel (qconv_igemm.cu) can take this convolution: 2-D,
// channels-last, one group, int8 X without zero point or E4M3 X and W, input channels a
// multiple of 16 (W packed KRSC without padding). TRTUTILS_CUDA_IGEMM=0 | force.
bool QOp::igemm_fits(const Value& x, const ConvGeometry& g) const {
  if (igemm_mode_ == AltMode::kOff || kind_ != Kind::kConv || !channels_last_ || !nhwc_gemm_ ||
      !w_packed_ || g.nspatial != 2 || g.group != 1 || g.in_channels % 16 != 0 || kp_ != k_)
    return false;
  if (path_ == Path::kInt8) return x.dtype == DataType::kInt8 && x_zp_ == 0.0f;
  return path_ == Path::kFp8 && x.dtype == DataType::kFloat8E4M3FN &&
         w_fp8_t_ == DataType::kFloat8E4M3FN;
}

// A QGemm through the same kernel, as a 1x1 convolution over `rows` positions of K channels
// (X [rows, K] row-major is NHWC with N = H = 1; W packed [N, K] is KRSC): int8 X without zero
// point or E4M3 X and W, K and N multiples of 16, Y written row by row (no y_grid, no y_split
// parts). The timed choice against cuBLASLt (implicit_gemm) keeps whichever is faster: the
// fused epilogue saves cuBLASLt's float16 products a second pass (ViT's MLP).
bool QOp::gemm_igemm_fits(const Value& x, const k::QEpilogue& e, int64_t rows) const {
  if (igemm_mode_ == AltMode::kOff || kind_ != Kind::kGemm || !w_packed_ || kp_ != k_ ||
      k_ % 16 != 0 || n_ % 16 != 0 || e.grid0 > 0 || e.parts > 0 || e.part_quant || rows <= 0 ||
      rows >= (int64_t{1} << 31))
    return false;
  if (path_ == Path::kInt8) return x.dtype == DataType::kInt8 && x_zp_ == 0.0f;
  return path_ == Path::kFp8 && x.dtype == DataType::kFloat8E4M3FN &&
         w_fp8_t_ == DataType::kFloat8E4M3FN;
}

ConvGeometry QOp::gemm_as_conv_geometry(int64_t rows, int64_t k, int64_t n) {
  ConvGeometry g;
  g.batch = 1;
  g.in_channels = k;
  g.out_channels = n;
  g.nspatial = 2;
  g.in = g.out = {1, rows};
  g.kernel = g.stride = g.dilation = {1, 1};
  g.pad_begin = g.pad_end = {0, 0};
  return g;
}

// Runs the convolution through the implicit-GEMM kernel when it was (or, on the first eager run
// with this geometry, is now measured to be) faster than the cuBLASLt path; false: the caller
// runs that path.
bool QOp::implicit_gemm(RunContext& ctx, Value& x, const void* px, const ConvGeometry& g,
                        int64_t rows, k::QEpilogue& e, const k::LnEpilogue* ln) {
  k::IgemmDesc d;
  set_2d_geometry(d, g);
  d.n = static_cast<int32_t>(g.batch);
  d.k = static_cast<int32_t>(n_);
  k::QEpilogue ie = e;
  ie.colscale = static_cast<const float*>(colscale_.get());
  ie.colsum = nullptr;
  const bool fp8 = path_ == Path::kFp8;
  auto launch = [&] { return k::qconv_igemm(px, w_packed_.get(), d, fp8, ie, ctx.stream); };
  // Each side with the layer norm it needs (fused into the epilogue pass after cuBLASLt).
  auto launch_ln = [&] {
    const cudaError_t st = launch();
    if (st == cudaSuccess && ln) layer_norm_after(ctx, ie, *ln);
    return st;
  };
  if (!igemm_decided_ || !(igemm_geometry_ == g)) {
    if (ctx.capturing) return false;
    igemm_decided_ = true;
    igemm_geometry_ = g;
    igemm_chosen_ = igemm_cached_ = false;
    igemm_tma_ = k::qconv_tma_fits(d, fp8);  // for kernel()
    igemm_pointwise_ = !igemm_tma_ && k::qconv_pointwise_fits(d, ie);
    igemm_wgmma_ = !igemm_tma_ && !igemm_pointwise_ && k::wgmma_available();
    igemm_ms_ = lowp_ms_ = -1;
    if (ctx.deterministic && igemm_mode_ != AltMode::kForce) return false;  // fixed: cuBLASLt
    if (launch() != cudaSuccess) {  // not launched (alignment, sizes): the cuBLASLt path
      (void)cudaGetLastError();
      return false;
    }
    // The decision's problem for the timing cache: geometry, dtypes, epilogue.
    const std::string what =
        ctx.timing && igemm_mode_ != AltMode::kForce
            ? fmt::format("QConv implicit GEMM|{}|{}|{}|y {} r {} act {} bias {}{}", d.n,
                          fmt::join(std::vector<int32_t>{d.h, d.w, d.c, d.oh, d.ow, d.k, d.kh, d.kw,
                                                         d.sh, d.sw, d.ph, d.pw, d.dh, d.dw},
                                    ","),
                          fp8 ? "fp8" : "int8", dtype_name(ie.y_t),
                          ie.residual ? dtype_name(ie.residual_t) : "none",
                          static_cast<int>(ie.act), ie.bias != nullptr, ln ? " layer norm" : "")
            : std::string();
    const std::string cached = what.empty() ? "" : ctx.timing->find(what);
    if (igemm_mode_ == AltMode::kForce) {
      igemm_chosen_ = true;
    } else if (!cached.empty()) {
      igemm_chosen_ = cached == "implicit_gemm";
      igemm_cached_ = true;
    } else {
      igemm_ms_ = time_on_stream(ctx, [&] { ctx.check(launch_ln(), "implicit-GEMM convolution"); });
      try {
        lowp_ms_ = time_on_stream(ctx, [&] {
          k::QEpilogue le = e;
          std::shared_ptr<void> acc;
          TRT_CHECK(run_lowp(ctx, x, px, g, rows, acc, le), ErrorCode::kNotSupported,
                    "no cuBLASLt algorithm");
          if (!requant_used_) epilogue_pass(ctx, le, ln);
        });
      } catch (const Error&) {
        (void)cudaGetLastError();
        lowp_ms_ = -1;
      }
      igemm_chosen_ = lowp_ms_ < 0 || igemm_ms_ < lowp_ms_;
      if (!what.empty())
        ctx.timing->put(what, igemm_chosen_ ? "implicit_gemm" : "cublaslt",
                        {{"implicit_gemm", igemm_ms_}, {"cublaslt", lowp_ms_}});
    }
  }
  if (!igemm_chosen_) return false;
  ctx.check(launch(), "implicit-GEMM convolution");
  return true;
}

}  // namespace trtutils::cuda::qop
