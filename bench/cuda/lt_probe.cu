// What cuBLASLt offers on this GPU for the engine's row-major products D[M, N] = X[M, K] W[N, K]^T
// (the layout of a quantized Gemm / MatMul: per-tensor X, per-output-channel W): for each
// configuration (operand / output types, scale modes, epilogue), whether the heuristic returns
// an algorithm, and the median time of the fastest of its candidates.
//   nvcc -std=c++17 -O2 -arch=sm_90a bench/cuda/lt_probe.cu -lcublasLt -o lt_probe
//   ./lt_probe [M [N:K,...]] (default 50432 = ViT-B/16's 197 tokens x batch 256, and its four
//   GEMMs)
// Output: one line per (shape, configuration).
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe_check.h"

namespace {

struct Config {
  const char* name;
  cudaDataType_t in;  // A and B
  cudaDataType_t out, c;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  cublasLtEpilogue_t epi;
  int bias;           // -1: none, else the bias type
  bool w_vec, x_vec;  // outer-vector scales for W (N floats) / X (M floats)
  bool d_scale;       // D scale pointer (float8 output)
  bool alpha_vec;     // per-column alpha (int8 requantization)
  bool fast_accum;
};

template <typename T>
void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const T& v) {
  cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v));
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t M = argc > 1 ? std::atoll(argv[1]) : 50432;
  std::vector<std::array<int64_t, 2>> shapes = {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
  if (argc > 2) {  // "N:K,N:K,..."
    shapes.clear();
    for (const char* p = argv[2]; *p;) {
      char* end = nullptr;
      const int64_t n = std::strtoll(p, &end, 10);
      const int64_t k = std::strtoll(end + 1, &end, 10);
      shapes.push_back({n, k});
      p = *end ? end + 1 : end;
    }
  }
  const auto F8 = CUDA_R_8F_E4M3;
  const auto E = CUBLASLT_EPILOGUE_DEFAULT, EB = CUBLASLT_EPILOGUE_BIAS,
             EG = CUBLASLT_EPILOGUE_GELU_BIAS;
  const Config configs[] = {
      {"fp16 -> f16 bias", CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, EB,
       CUDA_R_16F, false, false, false, false, false},
      {"fp16 -> f16 gelu_bias", CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F,
       EG, CUDA_R_16F, false, false, false, false, false},
      {"fp8 -> f16 scalar (now)", F8, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, E, -1,
       false, false, false, false, false},
      {"fp8 -> f16 scalar fast", F8, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, E, -1,
       false, false, false, false, true},
      {"fp8 -> f16 wvec bias", F8, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, EB,
       CUDA_R_16F, true, false, false, false, false},
      {"fp8 -> f16 wvec+xvec bias", F8, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, EB,
       CUDA_R_16F, true, true, false, false, false},
      {"fp8 -> bf16 wvec+xvec bias", F8, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F,
       EB, CUDA_R_16BF, true, true, false, false, false},
      {"fp8 -> f32 wvec+xvec", F8, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, E, -1,
       true, true, false, false, false},
      {"fp8 -> fp8 scalar bias", F8, F8, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, EB, CUDA_R_16F,
       false, false, true, false, false},
      {"fp8 -> fp8 scalar gelu_bias", F8, F8, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, EG,
       CUDA_R_16F, false, false, true, false, false},
      {"fp8 -> fp8 wvec bias", F8, F8, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, EB, CUDA_R_16F,
       true, false, true, false, false},
      {"fp8 -> fp8 wvec+xvec bias", F8, F8, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, EB,
       CUDA_R_16F, true, true, true, false, false},
      {"fp8 -> fp8 wvec+xvec", F8, F8, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, E, -1, true,
       true, true, false, false},
      {"fp8 -> fp8 alpha-vec bias", F8, F8, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, EB,
       CUDA_R_16F, false, false, true, true, false},
      {"fp8 -> fp8 alpha-vec", F8, F8, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, E, -1, false,
       false, true, true, false},
      {"fp8 -> fp8 alpha-vec gelu_bias", F8, F8, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, EG,
       CUDA_R_16F, false, false, true, true, false},
      {"fp8 -> f16 alpha-vec bias", F8, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, EB,
       CUDA_R_16F, false, false, false, true, false},
      {"fp8 -> f32 alpha-vec", F8, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, E, -1,
       false, false, false, true, false},
      {"fp8 -> f32 alpha-vec bias bf16", F8, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F,
       EB, CUDA_R_16BF, false, false, false, true, false},
      {"int8 -> i8 scalar bias", CUDA_R_8I, CUDA_R_8I, CUDA_R_8I, CUBLAS_COMPUTE_32I, CUDA_R_32F,
       EB, CUDA_R_32F, false, false, false, false, false},
      {"int8 -> i32", CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I, E, -1,
       false, false, false, false, false},
      {"int8 -> i8 alpha-vec bias", CUDA_R_8I, CUDA_R_8I, CUDA_R_8I, CUBLAS_COMPUTE_32I, CUDA_R_32F,
       EB, CUDA_R_32F, false, false, false, true, false},
  };
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  const size_t ws_bytes = size_t{64} << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  int64_t maxn = 0, maxk = 0;
  for (auto& s : shapes) maxn = std::max(maxn, s[0]), maxk = std::max(maxk, s[1]);
  void *x, *w, *d, *c, *bias, *vec_m, *vec_n, *scal;
  CK(cudaMalloc(&x, M * maxk * 2));
  CK(cudaMalloc(&w, maxn * maxk * 2));
  CK(cudaMalloc(&d, M * maxn * 4));
  CK(cudaMalloc(&c, M * maxn * 4));
  CK(cudaMalloc(&bias, maxn * 4));
  CK(cudaMemset(x, 0x11, M * maxk * 2));
  CK(cudaMemset(w, 0x11, maxn * maxk * 2));
  CK(cudaMemset(bias, 0, maxn * 4));
  std::vector<float> ones(static_cast<size_t>(std::max(M, maxn)), 0.01f);
  CK(cudaMalloc(&vec_m, M * 4));
  CK(cudaMalloc(&vec_n, maxn * 4));
  CK(cudaMalloc(&scal, 4));
  CK(cudaMemcpy(vec_m, ones.data(), M * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(vec_n, ones.data(), maxn * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(scal, ones.data(), 4, cudaMemcpyHostToDevice));
  cudaEvent_t ev0, ev1;
  CK(cudaEventCreate(&ev0));
  CK(cudaEventCreate(&ev1));
  std::printf("M=%lld\n", static_cast<long long>(M));
  for (auto& s : shapes) {
    const int64_t N = s[0], K = s[1];
    const double flop = 2.0 * M * N * K;
    for (const Config& cf : configs) {
      cublasLtMatmulDesc_t desc;
      cublasLtMatmulDescCreate(&desc, cf.compute, cf.scale);
      set(desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
      set(desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
      set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, cf.epi);
      if (cf.bias >= 0) {
        set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
        set(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(cf.bias));
      }
      if (cf.in == F8) {
        set(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, cf.w_vec ? vec_n : scal);
        set(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, cf.x_vec ? vec_m : scal);
        if (cf.w_vec)
          set(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
              static_cast<int32_t>(CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F));
        if (cf.x_vec)
          set(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
              static_cast<int32_t>(CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F));
        if (cf.d_scale) set(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, scal);
        if (cf.fast_accum) set(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<int8_t>(1));
      }
      if (cf.alpha_vec)
        set(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE,
            static_cast<int32_t>(CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST));
      cublasLtMatrixLayout_t la, lb, lc, ld;
      cublasLtMatrixLayoutCreate(&la, cf.in, K, N, K);
      cublasLtMatrixLayoutCreate(&lb, cf.in, K, M, K);
      cublasLtMatrixLayoutCreate(&lc, cf.c, N, M, N);
      cublasLtMatrixLayoutCreate(&ld, cf.out, N, M, N);
      cublasLtMatmulPreference_t pref;
      cublasLtMatmulPreferenceCreate(&pref);
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &ws_bytes, sizeof(ws_bytes));
      cublasLtMatmulHeuristicResult_t res[8];
      int n = 0;
      const cublasStatus_t st =
          cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, ld, pref, 8, res, &n);
      std::string what;
      float best = -1;
      if (st != CUBLAS_STATUS_SUCCESS || n == 0) {
        what = "no algorithm (status " + std::to_string(static_cast<int>(st)) + ")";
      } else {
        const float falpha = 1.0f, fbeta = 0.0f;
        const int32_t ialpha = 1, ibeta = 0;
        const bool iscale = cf.scale == CUDA_R_32I;
        const void* pa =
            cf.alpha_vec ? vec_n : (iscale ? static_cast<const void*>(&ialpha) : &falpha);
        const void* pb = iscale ? static_cast<const void*>(&ibeta) : &fbeta;
        for (int i = 0; i < n; ++i) {
          auto run = [&] {
            return cublasLtMatmul(lt, desc, pa, w, la, x, lb, pb, c, lc, d, ld, &res[i].algo, ws,
                                  ws_bytes, stream);
          };
          if (run() != CUBLAS_STATUS_SUCCESS || run() != CUBLAS_STATUS_SUCCESS) continue;
          std::vector<float> t;
          for (int r = 0; r < 9; ++r) {
            CK(cudaEventRecord(ev0, stream));
            run();
            CK(cudaEventRecord(ev1, stream));
            CK(cudaEventSynchronize(ev1));
            float ms;
            CK(cudaEventElapsedTime(&ms, ev0, ev1));
            t.push_back(ms);
          }
          std::sort(t.begin(), t.end());
          if (best < 0 || t[4] < best) best = t[4];
        }
        if (best < 0) what = "algorithms fail to run";
        CK(cudaGetLastError());
      }
      if (best > 0)
        std::printf("N=%5lld K=%5lld  %-30s %8.4f ms %7.1f TFLOP/s (%d candidates)\n",
                    static_cast<long long>(N), static_cast<long long>(K), cf.name, best,
                    flop / best * 1e-9, n);
      else
        std::printf("N=%5lld K=%5lld  %-30s %s\n", static_cast<long long>(N),
                    static_cast<long long>(K), cf.name, what.c_str());
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(lc);
      cublasLtMatrixLayoutDestroy(ld);
      cublasLtMatmulDescDestroy(desc);
    }
  }
  return 0;
}
