// Row-major matrix products through cuBLASLt (column-major): D[m,n] = A[m,k] x B[k,n] is computed
// as D^T[n,m] = B^T x A^T, so cuBLASLt's "A" is our B and its "B" is our A. Plans (descriptors
// plus the algorithm: the fastest of the heuristic's candidates, timed on the first eager call)
// are cached per problem and pointer alignment.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernel_switches.h"

namespace trtutils::cuda {

struct LtMatmul::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
  bool int_scale = false;
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (d) cublasLtMatrixLayoutDestroy(d);
  }
};

LtMatmul::~LtMatmul() = default;

namespace {

cudaDataType_t cuda_type(DataType t) {
  switch (t) {
    case DataType::kFloat16:
      return CUDA_R_16F;
    case DataType::kBFloat16:
      return CUDA_R_16BF;
    case DataType::kInt8:
      return CUDA_R_8I;
    case DataType::kInt32:
      return CUDA_R_32I;
    case DataType::kFloat8E4M3FN:
      return CUDA_R_8F_E4M3;
    case DataType::kFloat8E5M2:
      return CUDA_R_8F_E5M2;
    case DataType::kFloat32:
    case DataType::kUndefined:
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kInt64:
    case DataType::kString:
    case DataType::kBool:
    case DataType::kFloat64:
    case DataType::kUInt32:
    case DataType::kUInt64:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kUInt4:
    case DataType::kInt4:
      break;
  }
  return CUDA_R_32F;
}

template <typename T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const T& v) {
  TRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v)));
}

cublasLtMatrixLayout_t layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld,
                              int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  TRT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, t, static_cast<uint64_t>(rows),
                                              static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    TRT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                      sizeof(count)));
    TRT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return l;
}

uint32_t alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && (v % a) != 0) a /= 2;
  return a;
}

}  // namespace

bool LtMatmul::run(RunContext& ctx, const MatmulProblem& p0, const void* a, const void* b, void* d,
                   float alpha, float beta, const void* bias, const float* a_scale,
                   const float* b_scale, const LtRequant* rq, const LtFp8Out* f8, const void* c) {
  TRT_INTERNAL_CHECK(p0.requant == (rq != nullptr) && p0.fp8_out == (f8 != nullptr) &&
                     (!p0.with_c || (rq && rq->c) || (f8 && f8->c)) && (!c || (!rq && !f8)));
  MatmulProblem p = p0;
  if (p.lda == 0) p.lda = p.trans_a ? p.m : p.k;
  if (p.ldb == 0) p.ldb = p.trans_b ? p.k : p.n;
  if (p.ldd == 0) p.ldd = p.n;
  const bool is_int = p.a_t == DataType::kInt8;
  const bool is_fp8 = p.a_t == DataType::kFloat8E4M3FN || p.a_t == DataType::kFloat8E5M2;
  const uint32_t al_a = alignment(a), al_b = alignment(b), al_d = alignment(d);
  const uint32_t al_bias = bias ? alignment(bias) : 256;
  Plan* pl = nullptr;
  if (last_ && last_p_ == p && last_tf32_ == ctx.allow_tf32 && last_align_[0] == al_a &&
      last_align_[1] == al_b && last_align_[2] == al_d && last_align_[3] == al_bias &&
      last_scales_[0] == (a_scale != nullptr) && last_scales_[1] == (b_scale != nullptr))
    pl = last_;
  if (!pl) {
    const std::string key = fmt::format(
        "{}|{}|{}|{}|{}{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}{}|{}{}", p.m, p.n,
        p.k, p.batch, p.trans_a, p.trans_b, p.lda, p.ldb, p.ldd, p.stride_a, p.stride_b, p.stride_d,
        dtype_name(p.a_t), dtype_name(p.b_t), dtype_name(p.d_t), static_cast<int>(p.epilogue),
        ctx.allow_tf32, al_a, al_b, al_d, al_bias, a_scale != nullptr, b_scale != nullptr,
        p.requant, p.with_c, p.fp8_out, p.b_scale_vector);
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      pl = it->second.get();
    } else {
      auto np = std::make_unique<Plan>();
      cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
      cudaDataType_t scale_t = CUDA_R_32F;
      if (is_int && p.requant) {
        compute = CUBLAS_COMPUTE_32I;  // IMMA with float alpha (vector) / beta / bias
      } else if (is_int) {
        compute = CUBLAS_COMPUTE_32I;
        scale_t = CUDA_R_32I;
        np->int_scale = true;
      } else if (p.a_t == DataType::kFloat32 && ctx.allow_tf32) {
        compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      }
      TRT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&np->desc, compute, scale_t));
      // cuBLASLt's A is our B (op T when B is stored [n, k]); its B is our A.
      const cublasOperation_t ta = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
      const cublasOperation_t tb = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
      set_desc(np->desc, CUBLASLT_MATMUL_DESC_TRANSA, ta);
      set_desc(np->desc, CUBLASLT_MATMUL_DESC_TRANSB, tb);
      cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
      switch (p.epilogue) {
        case MatmulProblem::Epilogue::kNone:
          break;
        case MatmulProblem::Epilogue::kBias:
          epi = CUBLASLT_EPILOGUE_BIAS;
          break;
        case MatmulProblem::Epilogue::kReluBias:
          epi = CUBLASLT_EPILOGUE_RELU_BIAS;
          break;
        case MatmulProblem::Epilogue::kGeluBias:
          epi = CUBLASLT_EPILOGUE_GELU_BIAS;
          break;
        case MatmulProblem::Epilogue::kRelu:
          epi = CUBLASLT_EPILOGUE_RELU;
          break;
        case MatmulProblem::Epilogue::kGelu:
          epi = CUBLASLT_EPILOGUE_GELU;
          break;
      }
      set_desc(np->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
      if (p.requant) {
        set_desc(np->desc, CUBLASLT_MATMUL_DESC_POINTER_MODE,
                 static_cast<int32_t>(CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST));
        if (bias)
          set_desc(np->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(CUDA_R_32F));
      }
      if (is_fp8) {
        if (a_scale) set_desc(np->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scale);
        if (b_scale) set_desc(np->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, b_scale);
        if (p.b_scale_vector)  // our B is cuBLASLt's A: one scale per row of its M (= our N)
          set_desc(np->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                   static_cast<int32_t>(CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F));
        if (p.fp8_out) {
          set_desc(np->desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, f8->d_scale);
          if (bias)
            set_desc(np->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                     static_cast<int32_t>(CUDA_R_16F));
        }
      }
      const cudaDataType_t at = cuda_type(p.a_t), bt = cuda_type(p.b_t), dt = cuda_type(p.d_t);
      np->a = p.trans_b ? layout(bt, p.k, p.n, p.ldb, p.batch, p.stride_b)
                        : layout(bt, p.n, p.k, p.ldb, p.batch, p.stride_b);
      np->b = p.trans_a ? layout(at, p.m, p.k, p.lda, p.batch, p.stride_a)
                        : layout(at, p.k, p.m, p.lda, p.batch, p.stride_a);
      np->d = layout(dt, p.n, p.m, p.ldd, p.batch, p.stride_d);
      if (p.fp8_out) np->c = layout(CUDA_R_16F, p.n, p.m, p.ldd, p.batch, p.stride_d);
      cublasLtMatrixLayout_t cl = np->c ? np->c : np->d;
      cublasLtMatmulPreference_t pref = nullptr;
      TRT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
      const uint64_t ws = ctx.lt_workspace_bytes;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                           sizeof(ws));
      // Our "a" pointer is cuBLASLt's B and vice versa.
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_b,
                                           sizeof(al_b));
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_a,
                                           sizeof(al_a));
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_d,
                                           sizeof(al_d));
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d,
                                           sizeof(al_d));
      if (bias) {
        // Bias pointer is set per call; the heuristic needs it present to pick a bias kernel.
        set_desc(np->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
      }
      cublasLtMatmulHeuristicResult_t results[kMaxCandidates] = {};
      int returned = 0;
      const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
          ctx.lt, np->desc, np->a, np->b, cl, np->d, pref, kMaxCandidates, results, &returned);
      cublasLtMatmulPreferenceDestroy(pref);
      if (st == CUBLAS_STATUS_SUCCESS && returned > 0) {
        np->algo = results[0].algo;
        np->ok = true;
        if (returned > 1 && !ctx.capturing && !ctx.deterministic && timing_enabled()) {
          // The timing cache holds the winner's index among the heuristic's candidates (the
          // same list for the same problem, device and cuBLASLt version).
          const std::string what =
              ctx.timing ? fmt::format("cuBLASLt {}|{}", cublasLtGetVersion(), key) : "";
          const std::string cached = what.empty() ? "" : ctx.timing->find(what);
          int index = -1, of = 0;
          if (!cached.empty() && std::sscanf(cached.c_str(), "%d/%d", &index, &of) == 2 &&
              of == returned && index >= 0 && index < returned &&
              results[index].state == CUBLAS_STATUS_SUCCESS &&
              results[index].workspaceSize <= ctx.lt_workspace_bytes) {
            np->algo = results[index].algo;
          } else {
            Args args = call_args(*np, p, alpha, beta, rq, f8);
            args.c = c;
            float ms = -1;
            np->algo = fastest(ctx, *np, results, returned, args, a, b, d, rq, f8, &index, &ms);
            if (!what.empty() && index >= 0)
              ctx.timing->put(what, fmt::format("{}/{}", index, returned), {{"fastest", ms}});
          }
        }
      } else if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED &&
                 !(p.fp8_out && st == CUBLAS_STATUS_INVALID_VALUE)) {
        // (float8 output: cuBLASLt answers INVALID_VALUE for scale modes / epilogues it lacks
        // on this GPU; the caller falls back.)
        TRT_CUBLAS_CHECK(st);
      }
      pl = np.get();
      plans_.emplace(key, std::move(np));
    }
    last_ = pl;
    last_p_ = p;
    last_tf32_ = ctx.allow_tf32;
    last_align_[0] = al_a;
    last_align_[1] = al_b;
    last_align_[2] = al_d;
    last_align_[3] = al_bias;
    last_scales_[0] = a_scale != nullptr;
    last_scales_[1] = b_scale != nullptr;
  }
  if (!pl->ok) return false;
  if (bias) set_desc(pl->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  if (is_fp8) {
    if (a_scale) set_desc(pl->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scale);
    if (b_scale) set_desc(pl->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, b_scale);
    if (f8) set_desc(pl->desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, f8->d_scale);
  }
  Args args = call_args(*pl, p, alpha, beta, rq, f8);
  args.c = c;
  TRT_CUBLAS_CHECK(launch(ctx, *pl, pl->algo, args, a, b, d, rq, f8));
  return true;
}

// Scalars (or the requantization's device vector) and the C operand of one call.
LtMatmul::Args LtMatmul::call_args(const Plan& pl, const MatmulProblem& p, float alpha, float beta,
                                   const LtRequant* rq, const LtFp8Out* f8) {
  Args r;
  r.falpha = alpha;
  r.fbeta = beta;
  r.ialpha = static_cast<int32_t>(alpha);
  r.ibeta = static_cast<int32_t>(beta);
  r.int_scale = pl.int_scale;
  r.with_c = (rq || f8) && p.with_c;
  if (f8) r.fbeta = f8->beta;
  return r;
}

cublasStatus_t LtMatmul::launch(RunContext& ctx, Plan& pl, const cublasLtMatmulAlgo_t& algo,
                                const Args& args, const void* a, const void* b, void* d,
                                const LtRequant* rq, const LtFp8Out* f8) {
  const void* pa = args.int_scale ? static_cast<const void*>(&args.ialpha) : &args.falpha;
  const void* pbeta = args.int_scale ? static_cast<const void*>(&args.ibeta) : &args.fbeta;
  const void* c = d;
  if (rq) {
    pa = rq->alpha;  // a device vector (pointer mode ALPHA_DEVICE_VECTOR_BETA_HOST)
    pbeta = &rq->beta;
    if (args.with_c) c = rq->c;
  }
  if (f8 && args.with_c) c = f8->c;  // else C (float16) is not read: beta = 0
  if (args.c) c = args.c;
  return cublasLtMatmul(ctx.lt, pl.desc, pa, b, pl.a, a, pl.b, pbeta, c, pl.c ? pl.c : pl.d, d,
                        pl.d, &algo, ctx.lt_workspace, ctx.lt_workspace_bytes, ctx.stream);
}

// Tactic timing (TensorRT's builder does the same on the real shapes): every algorithm the
// heuristic offers runs once to warm up, then kTimedRuns times between CUDA events; the
// fastest median wins. Runs on the eager first run only (never under graph capture), writing
// D (which the real call overwrites right after); skipped when D aliases an input, so that no
// candidate reads what another wrote. Env TRTUTILS_CUDA_LT_TIMING=0 keeps the heuristic's
// first choice.
cublasLtMatmulAlgo_t LtMatmul::fastest(RunContext& ctx, Plan& pl,
                                       const cublasLtMatmulHeuristicResult_t* results, int count,
                                       const Args& args, const void* a, const void* b, void* d,
                                       const LtRequant* rq, const LtFp8Out* f8, int* chosen,
                                       float* chosen_ms) {
  // D also read (as C with a non-zero beta, or as an operand): candidates would compound.
  bool reads_d = rq ? (rq->beta != 0.0f && (!args.with_c || rq->c == d))
                    : ((args.fbeta != 0.0f || args.ibeta != 0) && (!args.c || args.c == d));
  if (f8) reads_d = f8->beta != 0.0f && (!args.with_c || f8->c == d);
  if (d == a || d == b || reads_d) return results[0].algo;
  cudaEvent_t ev[2];
  if (cudaEventCreate(&ev[0]) != cudaSuccess) return results[0].algo;
  if (cudaEventCreate(&ev[1]) != cudaSuccess) {
    cudaEventDestroy(ev[0]);
    return results[0].algo;
  }
  int best = 0;
  float best_ms = 0;
  for (int i = 0; i < count; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS ||
        results[i].workspaceSize > ctx.lt_workspace_bytes)
      continue;
    if (launch(ctx, pl, results[i].algo, args, a, b, d, rq, f8) != CUBLAS_STATUS_SUCCESS) continue;
    float times[kTimedRuns];
    bool ok = true;
    for (int r = 0; r < kTimedRuns && ok; ++r) {
      ok = cudaEventRecord(ev[0], ctx.stream) == cudaSuccess &&
           launch(ctx, pl, results[i].algo, args, a, b, d, rq, f8) == CUBLAS_STATUS_SUCCESS &&
           cudaEventRecord(ev[1], ctx.stream) == cudaSuccess &&
           cudaEventSynchronize(ev[1]) == cudaSuccess &&
           cudaEventElapsedTime(&times[r], ev[0], ev[1]) == cudaSuccess;
    }
    if (!ok) {
      (void)cudaGetLastError();
      continue;
    }
    std::sort(times, times + kTimedRuns);
    const float ms = times[kTimedRuns / 2];
    if (best_ms == 0 || ms < best_ms) {
      best = i;
      best_ms = ms;
    }
  }
  cudaEventDestroy(ev[0]);
  cudaEventDestroy(ev[1]);
  if (best_ms > 0) {
    *chosen = best;
    *chosen_ms = best_ms;
  }
  return results[best].algo;
}

bool LtMatmul::timing_enabled() {
  const char* e = switch_value("TRTUTILS_CUDA_LT_TIMING");
  return !(e && std::string(e) == "0");
}

}  // namespace trtutils::cuda
