// com.trtutils::QConv / QGemm / QMatMul on CUDA (semantics: ops/qlinear_ops.h): one GpuOp, QOp,
// whose tactics are one file each in this folder; ops_quant.cpp registers it. Three paths,
// chosen on the first run from the dtypes (qop.cpp, prepare):
//   int8  X int8/uint8, W int8 with zero zero points: 2-D convolutions with int8 X without zero
//         point and output channels a multiple of 4 through cuDNN (NHWC int8, int32
//         accumulation, float output; input channels padded to a multiple of 4), else (and
//         when cuDNN refuses) cuBLASLt int8 x int8 -> int32 (convolutions via a byte im2col,
//         groups = 1); then one epilogue kernel (x zero point correction, scales, bias,
//         residual, activation, quantize);
//   fp8   X and W float8 with zero zero points on SM >= 89: cuBLASLt FP8 -> float32, the same
//         epilogue;
//   float everything else (grouped convolutions, uint8/float8 weights, QMatMul): dequantize X,
//         float32 cuDNN / cuBLASLt with W dequantized once, the same epilogue.
// Scales, zero points, W and B must be constants (qdq_fusion only fuses such islands).
//
// The tactics, in the order run() tries them (each declines what it cannot take):
//   depthwise.cpp       int8 depthwise convolutions (channels-last), epilogue fused
//   cudnn_int8.cpp      cuDNN int8 convolutions (TRTUTILS_CUDA_INT8_CONV=cudnn)
//   implicit_gemm.cpp   the implicit-GEMM kernels (int8 / E4M3, convolutions and QGemms as 1x1
//                       convolutions), timed against cuBLASLt
//   cublaslt.cpp        cuBLASLt int8 / fp8 products (requantized int8 Y, float8 Y, float16 or
//                       int32 / float32 products)
//   float_fallback.cpp  dequantize + float32 cuDNN / cuBLASLt
// and epilogue.cpp, the epilogue pass after the products (and the fused layer norm).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernel_switches.h"
#include "ops/qlinear_ops.h"
#include "trtutils/logging.h"

namespace trtutils::cuda::qop {

inline bool is_int8(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8;
}
inline bool is_fp8(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E5M2;
}
inline bool is_quantized(DataType t) {
  return is_int8(t) || is_fp8(t);
}

inline std::vector<float> floats_of(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(t.at_double(i));
  return v;
}

inline std::shared_ptr<void> upload_floats(const std::vector<float>& v) {
  return upload_bytes(v.data(), v.size() * sizeof(float));
}

enum class Kind { kConv, kGemm, kMatMul };
enum class Path { kInt8, kFp8, kFloat };

// [N, spatial..., C] <-> [N, C, spatial...]
inline Shape to_first(const Shape& s) {
  Shape r{s[0], s.back()};
  r.insert(r.end(), s.begin() + 1, s.end() - 1);
  return r;
}
inline Shape to_last(const Shape& s) {
  Shape r{s[0]};
  r.insert(r.end(), s.begin() + 2, s.end());
  r.push_back(s[1]);
  return r;
}

inline int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

class QOp : public GpuOp {
 public:
  explicit QOp(Kind kind) : kind_(kind) {}

  std::string kernel() const override;
  std::string product_kernel() const;

  void run(RunContext& ctx, const std::vector<Value*>& in, const std::vector<Value*>& out) override;

 private:
  // qop.cpp: the constants and the path (first run); the label's timing text.
  void prepare(RunContext& ctx, const std::vector<Value*>& in, DataType x_t);
  static std::string ms_vs(float chosen, float other);

  // epilogue.cpp
  k::LnEpilogue layer_norm_epilogue(RunContext& ctx, const std::vector<Value*>& in,
                                    const std::vector<Value*>& out, const Shape& ys);
  bool epilogue_pass(RunContext& ctx, const k::QEpilogue& e, const k::LnEpilogue* ln);
  static void layer_norm_after(RunContext& ctx, const k::QEpilogue& e, const k::LnEpilogue& ln);

  // cublaslt.cpp
  void pack_gemm_weights(RunContext& ctx);
  bool run_lowp(RunContext& ctx, Value& x, const void* px, const ConvGeometry& g, int64_t rows,
                std::shared_ptr<void>& acc, k::QEpilogue& e);
  DataType weight_t_fp8() const { return w_fp8_t_; }
  bool requant_fits(const RunContext&, const k::QEpilogue& e) const;
  bool fp8_out_fits(const k::QEpilogue& e) const;
  void prepare_fp8_out();
  void prepare_half_acc();
  void prepare_requant(int32_t x_zp);

  // implicit_gemm.cpp
  bool igemm_fits(const Value& x, const ConvGeometry& g) const;
  bool gemm_igemm_fits(const Value& x, const k::QEpilogue& e, int64_t rows) const;
  static ConvGeometry gemm_as_conv_geometry(int64_t rows, int64_t k, int64_t n);
  ConvGeometry gemm_as_conv(int64_t rows) const { return gemm_as_conv_geometry(rows, k_, n_); }
  bool implicit_gemm(RunContext& ctx, Value& x, const void* px, const ConvGeometry& g, int64_t rows,
                     k::QEpilogue& e, const k::LnEpilogue* ln);

  // cudnn_int8.cpp
  void pack_cudnn_weights(RunContext& ctx);
  bool run_cudnn_int8(RunContext& ctx, Value& x, const void* px, const ConvGeometry& g,
                      int64_t rows, std::shared_ptr<void>& acc, k::QEpilogue& e);

  // depthwise.cpp
  void pack_depthwise_weights(RunContext& ctx);
  bool run_depthwise(RunContext& ctx, const Value& x, const void* px, const ConvGeometry& g,
                     k::QEpilogue& e);

  // grouped_half.cpp
  bool half_grouped_fits(const Value& x, const ConvGeometry& g) const;
  const void* half_grouped_weights(RunContext& ctx);
  bool run_half_grouped(RunContext& ctx, const Value& x, const void* px, const ConvGeometry& g,
                        const Shape& ys, std::shared_ptr<void>& acc, k::QEpilogue& e);

  // float_fallback.cpp
  // n quantized values at src dequantized (per-tensor scale / zero point on the device) into
  // scratch of dtype `to` (float32 / float16 / bfloat16).
  std::shared_ptr<void> dequantized(RunContext& ctx, const void* src, DataType t, int64_t n,
                                    const std::shared_ptr<void>& scale,
                                    const std::shared_ptr<void>& zero_point, DataType to);
  const void* float_weights(RunContext& ctx, Value& w);
  void run_float(RunContext& ctx, Value& x, const void* px, Value& w, const ConvGeometry& g,
                 const Shape& ys, std::shared_ptr<void>& acc, k::QEpilogue& e);

  Kind kind_;
  bool prepared_ = false;
  Path path_ = Path::kFloat;
  DataType x_t_ = DataType::kUndefined, y_t_ = DataType::kFloat32;
  DataType w_fp8_t_ = DataType::kFloat8E4M3FN;
  int64_t n_ = 0, k_ = 0, kp_ = 0, cp_ = 0;
  bool trans_b_ = false;
  bool channels_last_ = false;
  float x_scale_ = 1.0f, x_zp_ = 0.0f;
  std::vector<float> w_scale_, w_zp_;
  std::shared_ptr<void> bias_, colscale_, ones_, colsum_, w_packed_, w_float_, w_cudnn_;
  Tensor w_host_;  // W as given (constant), for the packings made on demand
  bool cudnn_int8_ = false, used_cudnn_ = false;
  bool nhwc_gemm_ = false, direct_ = false;
  // The requantizing cuBLASLt product (int8 Y written directly).
  bool requant_ok_ = true, requant_used_ = false;
  std::vector<int32_t> colsum_host_;
  std::vector<float> bias_host_;
  std::shared_ptr<void> alpha_rq_, bias_rq_;
  bool fp8_out_ok_ = true, fp16_acc_ok_ = true, half_acc_used_ = false;
  bool dw_ = false, dw_used_ = false;
  // The float16 grouped convolution (grouped_half.cpp) and its W [K, R, S, C/g].
  bool half_grouped_ok_ = true, half_grouped_used_ = false;
  std::shared_ptr<void> w_half_krsc_;
  bool has_ln_ = false, ln_fused_ = false;  // the layer-norm fusion (QGemmLnInput)
  // The implicit-GEMM convolution: its mode, and the decision for the last geometry seen.
  AltMode igemm_mode_ = alt_mode("TRTUTILS_CUDA_IGEMM");
  bool igemm_decided_ = false, igemm_chosen_ = false, igemm_used_ = false;
  bool igemm_tma_ = false;        // qconv_igemm runs its TMA matrix-product kernel
  bool igemm_pointwise_ = false;  // ... or qconv_pointwise.cu's kernel
  bool igemm_wgmma_ = false;      // ... or its warpgroup-MMA kernel
  bool igemm_cached_ = false;     // the decision came from the timing cache
  ConvGeometry igemm_geometry_;
  float igemm_ms_ = -1, lowp_ms_ = -1;
  std::shared_ptr<void> w_dw_, w_dw4_;  // depthwise W [taps, C] and [taps / 4, C, 4]
  float half_alpha_ = 1.0f;
  std::shared_ptr<void> colscale_half_;
  std::shared_ptr<void> w_scales_dev_, inv_y_scale_, r_scale_dev_, bias16_;
  std::vector<int64_t> y_grid_;  // [R0, R1]: Y written as [R1, R0, N] (fusion/qgemm_epilogues.cpp)
  int64_t y_split_ = 0;  // P > 0: Y written as [P, rows..., N / P] (fusion/qgemm_epilogues.cpp)
  std::string cudnn_refused_;
  CudnnConv conv_int8_;
  std::shared_ptr<void> x_scale_dev_, x_zp_dev_, w_scale_dev_, w_zp_dev_;
  k::QEpilogue epilogue_;
  LtMatmul lt_;
  CudnnConv conv_;
};

}  // namespace trtutils::cuda::qop
