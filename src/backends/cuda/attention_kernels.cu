// Fused attention O = softmax(scale * Q K^T) V for float16 / bfloat16 on tensor cores
// (mma.sync m16n8k16, float accumulation), one pass over the keys with the running (online)
// softmax, so that the [Sq, Sk] score matrix never reaches global memory (the FlashAttention-2
// scheme).
//
// A block takes 64 query rows of one batch entry, four warps of 16 rows each; the warp keeps
// its Q fragments, its scores and its output rows in registers. Per block of 64 keys: K and V
// tiles go to shared memory (zero-filled past Sk and past the head size; cp.async into a double
// buffer, the next block's copy overlapping this block's products); each warp computes
// its 16 x 64 scores, masks the keys past Sk, updates each row's running max (a quad of lanes
// shares a row: two shuffles) and rescales its output rows, turns the probabilities into the
// A fragments of the next product (the accumulator layout of m16n8 is the A layout of
// m16n8k16) and multiplies them with V. Key subtiles wholly past Sk are skipped, and so are
// warps whose rows are all past Sq. Row sums stay per lane until the end.
// Operands are read through (batch, row, column) strides, so transposed views need no copy:
// 16-byte loads when the column stride is 1 and everything is 16-byte aligned, else one element
// at a time with the row index fastest (coalesced for K^T stored [D, Sk]).
#include <algorithm>
#include <cfloat>
#include <type_traits>

#include "backends/cuda/device_util.cuh"

namespace trtutils::cuda::k {

namespace {

constexpr int kRowsPerWarp = 16;
constexpr int kWarps = 4;
constexpr int kBlockM = kRowsPerWarp * kWarps;  // query rows per block
constexpr int kBlockN = 64;                     // keys per iteration
constexpr int kAttnThreads = kWarps * 32;

template <int DP>
struct Smem {
  static constexpr int ldh = DP + 8;  // elements per Q / K / V tile row (16-byte pad: no bank
                                      // conflicts for ldmatrix)
  static constexpr size_t q = size_t{kBlockM} * ldh * 2;
  static constexpr size_t kv = size_t{kBlockN} * ldh * 2;
  static constexpr size_t bytes = q + 4 * kv;  // K and V double-buffered
};

// rows x DP tile of src (rows from row0, all columns < cols, zero elsewhere) into dst (ld ldh):
// cp.async 16-byte copies when vec, else element by element.
template <typename T, int DP>
__device__ void load_tile(T* dst, const T* src, const int64_t st[3], int64_t batch_off,
                          int64_t row0, int64_t rows_total, int64_t cols, bool vec, int rows) {
  constexpr int ldh = Smem<DP>::ldh;
  const T zero = from_float<T>(0.0f);
  if (vec) {  // asynchronous: the caller commits and waits
    constexpr int chunks = DP / 8;
    for (int e = threadIdx.x; e < rows * chunks; e += kAttnThreads) {
      const int r = e / chunks, c = (e % chunks) * 8;
      const int64_t gr = row0 + r;
      const bool valid = gr < rows_total && c < cols;
      cp_async16(dst + r * ldh + c, valid ? src + batch_off + gr * st[1] + c : src, valid);
    }
  } else {
    for (int e = threadIdx.x; e < rows * DP; e += kAttnThreads) {
      const int r = e % rows, c = e / rows;
      const int64_t gr = row0 + r;
      dst[r * ldh + c] =
          (gr < rows_total && c < cols) ? src[batch_off + gr * st[1] + c * st[2]] : zero;
    }
  }
}

// d += a (16x16, row) * b (16x8, col), float accumulators.
template <typename T>
__device__ __forceinline__ void mma16816(float d[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}
// Two floats as a T pair in one register (lower column in the low half).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}
template <typename T>
__device__ __forceinline__ float2 unpack2(uint32_t v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half22float2(*reinterpret_cast<const __half2*>(&v));
  } else {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v));
  }
}

// o += p v for one 16-key step: p the probabilities as A fragments (16 rows x 16 keys), v the
// keys key0 .. key0 + 15 of V in shared memory (pitch DP + 8), DP columns.
template <typename T, int DP>
__device__ __forceinline__ void pv_step(float (&o)[DP / 8][4], const uint32_t (&pf)[4], const T* vs,
                                        int key0, int lane) {
  constexpr int ldh = DP + 8;
  const int key = key0 + (lane % 8) + ((lane / 8) % 2) * 8;
#pragma unroll
  for (int dp = 0; dp < DP / 16; ++dp) {
    uint32_t bf[4];
    ldmatrix_x4_trans(bf, vs + key * ldh + dp * 16 + (lane / 16) * 8);
    mma16816<T>(o[2 * dp], pf, bf[0], bf[1]);
    mma16816<T>(o[2 * dp + 1], pf, bf[2], bf[3]);
  }
}

template <typename T, int DP>
__global__ void __launch_bounds__(kAttnThreads)
    attention_kernel(AttentionDesc a, int64_t q_blocks, bool vq, bool vk, bool vv) {
  using S = Smem<DP>;
  constexpr int ldh = S::ldh;
  constexpr int kSteps = DP / 16;   // k-steps of Q K^T
  constexpr int kNT = kBlockN / 8;  // score n-tiles per key block
  constexpr int kOT = DP / 8;       // output n-tiles
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  // Buffer i: K at q + 2 i kv, V right after it.
  auto kbuf = [&](int i) { return reinterpret_cast<T*>(smem + S::q + 2 * i * S::kv); };
  auto vbuf = [&](int i) { return reinterpret_cast<T*>(smem + S::q + (2 * i + 1) * S::kv); };

  const int64_t qb = static_cast<int64_t>(blockIdx.x) % q_blocks;
  const int64_t b = static_cast<int64_t>(blockIdx.x) / q_blocks;
  const int64_t q0 = qb * kBlockM;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* qp = static_cast<const T*>(a.q);
  const T* kp = static_cast<const T*>(a.k);
  const T* vp = static_cast<const T*>(a.v);

  load_tile<T, DP>(qs, qp, a.q_st, b * a.q_st[0], q0, a.sq, a.d, vq, kBlockM);
  auto load_kv = [&](int buf, int64_t k0) {
    load_tile<T, DP>(kbuf(buf), kp, a.k_st, b * a.k_st[0], k0, a.sk, a.d, vk, kBlockN);
    load_tile<T, DP>(vbuf(buf), vp, a.v_st, b * a.v_st[0], k0, a.sk, a.dv, vv, kBlockN);
  };
  load_kv(0, 0);
  cp_async_commit();  // Q and the first K / V block
  cp_async_wait<0>();
  __syncthreads();
  const bool active = q0 + warp * kRowsPerWarp < a.sq;
  // This warp's Q rows as A fragments, kept for the whole key loop.
  uint32_t qf[kSteps][4];
  {
    const int r = warp * kRowsPerWarp + (lane % 8) + ((lane / 8) % 2) * 8;
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk)
      ldmatrix_x4(qf[kk], qs + r * ldh + kk * 16 + (lane / 16) * 8);
  }
  float o[kOT][4];
#pragma unroll
  for (int t = 0; t < kOT; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
  // Rows lane / 4 and lane / 4 + 8 of the warp's 16: running max (shared by the quad) and
  // this lane's part of the running sum.
  float run_max[2] = {-INFINITY, -INFINITY}, run_sum[2] = {0.0f, 0.0f};
  const float scale2 = a.scale * 1.4426950408889634f;  // exp(x) = exp2(x * log2 e)

  int buf = 0;
  for (int64_t k0 = 0; k0 < a.sk; k0 += kBlockN, buf ^= 1) {
    // Prefetch the next block into the other buffer (its last readers finished at the barrier
    // that ended the previous iteration), then wait for this block.
    if (k0 + kBlockN < a.sk) {
      load_kv(buf ^ 1, k0 + kBlockN);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const T* ks = kbuf(buf);
    const T* vs = vbuf(buf);
    if (!active) {
      __syncthreads();
      continue;
    }
    const int valid = static_cast<int>(a.sk - k0 < kBlockN ? a.sk - k0 : kBlockN);
    const int pairs = (valid + 15) / 16;  // 16-key steps with at least one valid key
    // Scores S[16, 64] = Q[16, DP] K^T[DP, 64]: n-tiles (8 keys) in pairs, one ldmatrix.x4
    // giving both tiles' B fragments.
    float s[kNT][4];
#pragma unroll
    for (int t = 0; t < kNT; ++t) s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.0f;
#pragma unroll
    for (int np = 0; np < kNT / 2; ++np) {
      if (np < pairs) {
        const int key = np * 16 + (lane % 8) + (lane / 16) * 8;
#pragma unroll
        for (int kk = 0; kk < kSteps; ++kk) {
          uint32_t bf[4];
          ldmatrix_x4(bf, ks + key * ldh + kk * 16 + ((lane / 8) % 2) * 8);
          mma16816<T>(s[2 * np], qf[kk], bf[0], bf[1]);
          mma16816<T>(s[2 * np + 1], qf[kk], bf[2], bf[3]);
        }
      }
    }
    // Online softmax. Element (t, e): row lane / 4 (+ 8 for e >= 2), key t * 8 + (lane % 4) * 2
    // + (e & 1).
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int t = 0; t < kNT; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = t * 8 + (lane % 4) * 2 + (e & 1);
        const float v = key < valid ? s[t][e] * scale2 : -INFINITY;
        s[t][e] = v;
        mx[e >> 1] = fmaxf(mx[e >> 1], v);
      }
    }
    float corr[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
      const float nm = fmaxf(run_max[h], mx[h]);
      corr[h] = exp2f(run_max[h] - nm);  // 0 on the first block (run_max = -inf)
      run_max[h] = nm;
      run_sum[h] *= corr[h];
    }
#pragma unroll
    for (int t = 0; t < kOT; ++t) {
      o[t][0] *= corr[0];
      o[t][1] *= corr[0];
      o[t][2] *= corr[1];
      o[t][3] *= corr[1];
    }
    // P = exp2(s - max) as A fragments (two n-tiles per 16-key step), then O += P V.
#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) {
      if (kk < pairs) {
        uint32_t pf[4];
#pragma unroll
        for (int j = 0; j < 2; ++j) {  // n-tile 2 kk + j -> registers {0, 1} or {2, 3}
          const float* st = s[2 * kk + j];
          const float p0 = exp2f(st[0] - run_max[0]), p1 = exp2f(st[1] - run_max[0]);
          const float p2 = exp2f(st[2] - run_max[1]), p3 = exp2f(st[3] - run_max[1]);
          pf[2 * j] = pack2<T>(p0, p1);
          pf[2 * j + 1] = pack2<T>(p2, p3);
          // The sums use the rounded probabilities, as the product does.
          const float2 r01 = unpack2<T>(pf[2 * j]), r23 = unpack2<T>(pf[2 * j + 1]);
          run_sum[0] += r01.x + r01.y;
          run_sum[1] += r23.x + r23.y;
        }
        // A-fragment order: a0 (rows 0-7, k 0-7) = tile 2kk rows 0-7, a1 (rows 8-15, k 0-7),
        // a2 (rows 0-7, k 8-15) = tile 2kk+1, a3 (rows 8-15, k 8-15).
        const uint32_t af[4] = {pf[0], pf[1], pf[2], pf[3]};
        pv_step<T, DP>(o, af, vs, kk * 16, lane);
      }
    }
    __syncthreads();  // this block's buffers may be refilled
  }
  if (!active) return;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    run_sum[h] += __shfl_xor_sync(0xffffffffu, run_sum[h], 1);
    run_sum[h] += __shfl_xor_sync(0xffffffffu, run_sum[h], 2);
  }
  T* op = static_cast<T*>(a.o) + b * a.o_st[0];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t gr = q0 + warp * kRowsPerWarp + lane / 4 + h * 8;
    if (gr >= a.sq) continue;
    const float inv = run_sum[h] > 0.0f ? 1.0f / run_sum[h] : 0.0f;
    T* orow = op + gr * a.o_st[1];
#pragma unroll
    for (int t = 0; t < kOT; ++t) {
      const int c = t * 8 + (lane % 4) * 2;
      if (c < a.dv) orow[c * a.o_st[2]] = from_float<T>(o[t][2 * h] * inv);
      if (c + 1 < a.dv) orow[(c + 1) * a.o_st[2]] = from_float<T>(o[t][2 * h + 1] * inv);
    }
  }
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// 16-byte loads: unit column stride, the other strides and the column count multiples of 8.
bool vector_ok(const void* p, const int64_t st[3], int64_t cols) {
  return aligned16(p) && st[2] == 1 && st[1] % 8 == 0 && st[0] % 8 == 0 && cols % 8 == 0;
}

template <typename T, int DP>
cudaError_t launch_attention(const AttentionDesc& a, cudaStream_t stream) {
  constexpr size_t bytes = Smem<DP>::bytes;
  int dev = 0, optin = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e != cudaSuccess) return e;
  if (static_cast<size_t>(optin) < bytes) return cudaErrorNotSupported;
  e = cudaFuncSetAttribute(attention_kernel<T, DP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(bytes));
  if (e != cudaSuccess) return e;
  const int64_t q_blocks = (a.sq + kBlockM - 1) / kBlockM;
  const int64_t blocks = q_blocks * a.batch;
  if (blocks > 0x7fffffff) return cudaErrorNotSupported;
  attention_kernel<T, DP><<<static_cast<unsigned>(blocks), kAttnThreads, bytes, stream>>>(
      a, q_blocks, vector_ok(a.q, a.q_st, a.d), vector_ok(a.k, a.k_st, a.d),
      vector_ok(a.v, a.v_st, a.dv));
  return cudaGetLastError();
}

template <typename T>
cudaError_t attention_t(const AttentionDesc& a, cudaStream_t stream) {
  const int64_t d = a.d > a.dv ? a.d : a.dv;
  if (d <= 32) return launch_attention<T, 32>(a, stream);
  if (d <= 64) return launch_attention<T, 64>(a, stream);
  return launch_attention<T, 128>(a, stream);
}

// ---- the float8 Q/DQ attention -----------------------------------------------------------
// softmax(scale * dq(q8) dq(k8)^T) with its probabilities quantized, times dq(v8), exactly as
// the Q/DQ graph computes it: q8 = fp8(Q / q_scale) (and k8, v8) on load; float8 values are
// exact in float16, so the tensor-core products are exact and the sums float32. The
// probabilities are quantized after normalisation (p8 = fp8(p / p_scale)), which needs the row
// max and sum first.
//
// Three kernels. The resident ones quantize a batch entry's K and V once into shared memory
// (all keys: a vision transformer's 197 tokens take 2 x 208 x 72 halves for head size 64); their
// warps then take 16-row query strips. Up to 208 keys and head size 64, the one-pass kernel
// (attention_fp8_res3_kernel) keeps a strip's scores in registers; otherwise (or with
// TRTUTILS_CUDA_ATTENTION_FP8_ONE_PASS=0) attention_fp8_res2_kernel computes the row max and
// sum in pass 1 and recomputes the scores in pass 2. Both need scale * qk_dq > 0. Where K and V
// do not fit, the streaming kernel (attention_fp8_kernel) takes 64-key blocks, quantizing them
// again in pass 2.

// Quantizes rows [0, rows_pad) x columns [0, DP) of an operand (rows_total x cols through the
// row / column strides; zero outside) into dst (float16, row pitch DP + 8), by threads
// tid, tid + nthreads, ... vec: unit column stride with 4-element aligned groups (one vector load
// per group), else element by element with the row index fastest (coalesced for K^T). Each
// thread issues U loads before converting any of them (the loop is latency-bound otherwise: one
// global round trip per group).
// The quantized type of the attention's operands; its values are exact in float16.
enum QKind : int { kQE4M3 = 0, kQE5M2 = 1, kQInt8 = 2 };
__device__ __forceinline__ int qkind_of(const AttentionQDesc& aq) {
  return aq.int8 ? kQInt8 : (aq.e4m3 ? kQE4M3 : kQE5M2);
}
// v (already divided by the scale) quantized (saturating; int8: round half to even, NaN -> 0 as
// the QuantizeLinear kernel does), as its float16 value.
__device__ __forceinline__ __half quantized_half(float v, int kind) {
  if (kind == kQInt8)
    return __float2half_rn(isnan(v) ? 0.0f : fminf(fmaxf(rintf(v), -128.0f), 127.0f));
  const __nv_fp8_interpretation_t k = kind == kQE4M3 ? __NV_E4M3 : __NV_E5M2;
  return __half(__nv_cvt_fp8_to_halfraw(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, k), k));
}
// Two at once (lo in the low half): float8 through the paired conversions.
__device__ __forceinline__ __half2 quantized_half2(float lo, float hi, int kind) {
  if (kind == kQInt8) return __halves2half2(quantized_half(lo, kind), quantized_half(hi, kind));
  const __nv_fp8_interpretation_t k = kind == kQE4M3 ? __NV_E4M3 : __NV_E5M2;
  const __nv_fp8x2_storage_t p = __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, k);
  return __half2(__nv_cvt_fp8x2_to_halfraw2(p, k));
}

// How an operand is quantized: the graph's scaling before its quantizer (pre_op 1: x * pre,
// 2: x / pre, rounded to Tin as the graph's own node would), then x / scale.
struct Quantizer {
  float scale = 1, pre = 1;
  int pre_op = 0;
};
template <typename Tin, int DP, int U = 8>
__device__ void quantize_rows(__half* dst, const Tin* src, int64_t s_row, int64_t s_col,
                              int64_t rows_total, int64_t cols, int rows_pad, Quantizer qz,
                              int kind, bool vec, int tid, int nthreads) {
  constexpr int ldh = DP + 8;
  auto pre = [&](float v) {
    if (qz.pre_op != 0) v = to_float(from_float<Tin>(qz.pre_op == 1 ? v * qz.pre : v / qz.pre));
    return v / qz.scale;
  };
  auto q = [&](float v) { return quantized_half(pre(v), kind); };
  // Operands their producer quantized already (float8 or int8 bytes, scale 1, no pre-scaling):
  // the quantization is the identity, so the bytes go to float16 directly (the division and the
  // round trip through float8 per element were most of the resident kernel's instructions).
  constexpr bool kF8 = std::is_same_v<Tin, E4M3> || std::is_same_v<Tin, E5M2>;
  constexpr bool kI8 = std::is_same_v<Tin, int8_t>;
  constexpr int kTinKind = kI8 ? kQInt8 : (std::is_same_v<Tin, E4M3> ? kQE4M3 : kQE5M2);
  constexpr __nv_fp8_interpretation_t kTinInterp =
      std::is_same_v<Tin, E4M3> ? __NV_E4M3 : __NV_E5M2;
  const bool ident = (kF8 || kI8) && qz.pre_op == 0 && qz.scale == 1.0f && kind == kTinKind;
  if (vec && ident) {
    if constexpr (kF8 || kI8) {
      constexpr int groups = DP / 4;
      const int total = rows_pad * groups;
      for (int e0 = tid; e0 < total; e0 += U * nthreads) {
        uint32_t f[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int e = e0 + u * nthreads;
          const int r = e / groups, c = (e % groups) * 4;
          f[u] = e < total && r < rows_total && c < cols
                     ? *reinterpret_cast<const uint32_t*>(src + r * s_row + c)
                     : 0u;
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int e = e0 + u * nthreads;
          if (e >= total) break;
          const int r = e / groups, c = (e % groups) * 4;
          __half2* d2 = reinterpret_cast<__half2*>(dst + r * ldh + c);
          if constexpr (kI8) {  // int8 values are exact in float16
            const auto b = [&](int j) { return static_cast<int8_t>((f[u] >> (8 * j)) & 0xffu); };
            d2[0] = __halves2half2(__int2half_rn(b(0)), __int2half_rn(b(1)));
            d2[1] = __halves2half2(__int2half_rn(b(2)), __int2half_rn(b(3)));
          } else {
            d2[0] = __half2(__nv_cvt_fp8x2_to_halfraw2(
                static_cast<__nv_fp8x2_storage_t>(f[u] & 0xffffu), kTinInterp));
            d2[1] = __half2(__nv_cvt_fp8x2_to_halfraw2(
                static_cast<__nv_fp8x2_storage_t>(f[u] >> 16), kTinInterp));
          }
        }
      }
    }
    return;
  }
  if (vec) {
    constexpr int groups = DP / 4;
    struct alignas(4 * sizeof(Tin)) Four {
      Tin v[4];
    };
    const int total = rows_pad * groups;
    for (int e0 = tid; e0 < total; e0 += U * nthreads) {
      Four f[U];
      bool ok[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e = e0 + u * nthreads;
        const int r = e / groups, c = (e % groups) * 4;
        ok[u] = e < total && r < rows_total && c < cols;
        if (ok[u]) f[u] = *reinterpret_cast<const Four*>(src + r * s_row + c);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e = e0 + u * nthreads;
        if (e >= total) break;
        const int r = e / groups, c = (e % groups) * 4;
        __half h[4] = {__half(0.0f), __half(0.0f), __half(0.0f), __half(0.0f)};
        if (ok[u])
#pragma unroll
          for (int j = 0; j < 4; ++j) h[j] = q(to_float(f[u].v[j]));
        __half2* d2 = reinterpret_cast<__half2*>(dst + r * ldh + c);
        d2[0] = __halves2half2(h[0], h[1]);
        d2[1] = __halves2half2(h[2], h[3]);
      }
    }
  } else {
    const int total = rows_pad * DP;
    for (int e0 = tid; e0 < total; e0 += U * nthreads) {
      float x[U];
      bool ok[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e = e0 + u * nthreads;
        const int r = e % rows_pad, c = e / rows_pad;
        ok[u] = e < total && r < rows_total && c < cols;
        x[u] = ok[u] ? to_float(src[r * s_row + c * s_col]) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e = e0 + u * nthreads;
        if (e >= total) break;
        // the identity: a float8 value is exact in float16
        dst[(e % rows_pad) * ldh + e / rows_pad] =
            ok[u] ? (ident ? __float2half_rn(x[u]) : q(x[u])) : __half(0.0f);
      }
    }
  }
}

__device__ __forceinline__ Quantizer q_quantizer(const AttentionQDesc& aq) {
  return Quantizer{aq.q_scale, aq.q_pre, aq.q_pre_op};
}
__device__ __forceinline__ Quantizer k_quantizer(const AttentionQDesc& aq) {
  return Quantizer{aq.k_scale, aq.k_pre, aq.k_pre_op};
}

// Raw sums s[t][e] = q8 . k8 of the warp's 16 rows against keys ks[t * 8 ..] for key tiles
// t < nt (the others 0, for the caller's mask). Element (t, e): row lane / 4 (+ 8 for e >= 2),
// key t * 8 + (lane % 4) * 2 + (e & 1).
template <int DP, int kStep>
__device__ __forceinline__ void step_scores(float (&s)[kStep / 8][4],
                                            const uint32_t (&qf)[DP / 16][4], const __half* ks,
                                            int nt, int lane) {
  constexpr int ldh = DP + 8;
#pragma unroll
  for (int t = 0; t < kStep / 8; ++t) s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.0f;
#pragma unroll
  for (int np = 0; np < kStep / 16; ++np) {
    if (2 * np < nt) {
      const int key = np * 16 + (lane % 8) + (lane / 16) * 8;
#pragma unroll
      for (int kk = 0; kk < DP / 16; ++kk) {
        uint32_t bf[4];
        ldmatrix_x4(bf, ks + key * ldh + kk * 16 + ((lane / 8) % 2) * 8);
        mma16816<__half>(s[2 * np], qf[kk], bf[0], bf[1]);
        mma16816<__half>(s[2 * np + 1], qf[kk], bf[2], bf[3]);
      }
    }
  }
}
// One warp's 16 query rows (Q as A fragments qf) against a 64-key block at ks (valid keys):
// s[t][e] = sscale * (q8 . k8), -inf past the valid keys. Element (t, e): row lane / 4 (+ 8 for
// e >= 2), key t * 8 + (lane % 4) * 2 + (e & 1).
template <int DP>
__device__ __forceinline__ void fp8_scores(float (&s)[kBlockN / 8][4],
                                           const uint32_t (&qf)[DP / 16][4], const __half* ks,
                                           int valid, float sscale, int lane) {
  constexpr int kNT = kBlockN / 8;
  step_scores<DP, kBlockN>(s, qf, ks, (valid + 7) / 8, lane);
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = t * 8 + (lane % 4) * 2 + (e & 1);
      s[t][e] = key < valid ? s[t][e] * sscale : -INFINITY;
    }
}

// Pass 1 over one key block: the rows' running max (shared by the quad) and this lane's part of
// the running sum of exp. Scores arrive multiplied by log2(e) (fp8_scores), so exp is one exp2
// (the hardware's ex2; within a few ulp of expf, far below a float8 step of the probabilities).
template <int DP>
__device__ __forceinline__ void fp8_row_stats(const float (&s)[kBlockN / 8][4], float (&run_max)[2],
                                              float (&run_sum)[2]) {
  constexpr int kNT = kBlockN / 8;
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) mx[e >> 1] = fmaxf(mx[e >> 1], s[t][e]);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
    const float nm = fmaxf(run_max[h], mx[h]);
    run_sum[h] *= exp2f(run_max[h] - nm);
    run_max[h] = nm;
  }
#pragma unroll
  for (int t = 0; t < kNT; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) run_sum[e >> 1] += exp2f(s[t][e] - run_max[e >> 1]);
}

// The quad's row sums -> 1 / (sum * p_scale).
__device__ __forceinline__ void fp8_row_inverse(float (&run_sum)[2], float p_scale,
                                                float (&inv)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    run_sum[h] += __shfl_xor_sync(0xffffffffu, run_sum[h], 1);
    run_sum[h] += __shfl_xor_sync(0xffffffffu, run_sum[h], 2);
    inv[h] = run_sum[h] > 0.0f ? 1.0f / (run_sum[h] * p_scale) : 0.0f;
  }
}

// Pass 2 over one key block: p8 = fp8(p / p_scale) as A fragments, o += p8 v8 (V block at vs).
// inv[h] is 1 / (row sum * p_scale): one multiplication per probability instead of a
// normalisation and a division (each within an ulp of the graph's; a float8 rounding decision
// changes only where p / p_scale lies that close to its midpoint).
template <int DP>
__device__ __forceinline__ void fp8_accumulate(float (&o)[DP / 8][4],
                                               const float (&s)[kBlockN / 8][4],
                                               const float (&run_max)[2], const float (&inv)[2],
                                               const __half* vs, int valid, int kind, int lane) {
  constexpr int kNT = kBlockN / 8;
  const int pairs = (valid + 15) / 16;

#pragma unroll
  for (int kk = 0; kk < kNT / 2; ++kk) {
    if (kk < pairs) {
      uint32_t pf[4];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const float* st = s[2 * kk + j];
        const __half2 lo = quantized_half2(exp2f(st[0] - run_max[0]) * inv[0],
                                           exp2f(st[1] - run_max[0]) * inv[0], kind);
        const __half2 hi = quantized_half2(exp2f(st[2] - run_max[1]) * inv[1],
                                           exp2f(st[3] - run_max[1]) * inv[1], kind);
        pf[2 * j] = *reinterpret_cast<const uint32_t*>(&lo);
        pf[2 * j + 1] = *reinterpret_cast<const uint32_t*>(&hi);
      }
      pv_step<__half, DP>(o, pf, vs, kk * 16, lane);
    }
  }
}

// The warp's 16 output rows from row0 (pv_dq * o through a.o's strides): float32, or quantized
// (aq.out_t int8 / float8: pv_dq * o times 1 / out_scale, rounded and saturated as
// QuantizeLinear does; the reciprocal's product is within one step of its division), two bytes
// per store where the pair is adjacent.
template <int DP>
__device__ __forceinline__ void fp8_store(const AttentionQDesc& aq, int64_t b, int64_t row0,
                                          const float (&o)[DP / 8][4], int lane) {
  const AttentionDesc& a = aq.a;
  const int kind = aq.out_t == DataType::kFloat32 ? 0 : (aq.out_t == DataType::kInt8 ? 1 : 2);
  const float inv = 1.0f / aq.out_scale;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t gr = row0 + lane / 4 + h * 8;
    if (gr >= a.sq) continue;
    const int64_t row = b * a.o_st[0] + gr * a.o_st[1];
#pragma unroll
    for (int t = 0; t < DP / 8; ++t) {
      const int c = t * 8 + (lane % 4) * 2;
      if (c >= a.dv) continue;
      const float v0 = o[t][2 * h] * aq.pv_dq, v1 = o[t][2 * h + 1] * aq.pv_dq;
      const int64_t at = row + c * a.o_st[2];
      if (kind == 0) {
        float* of = static_cast<float*>(a.o);
        of[at] = v0;
        if (c + 1 < a.dv) of[at + a.o_st[2]] = v1;
        continue;
      }
      uint32_t pair;
      if (kind == 1) {
        const int32_t q0 = min(max(__float2int_rn(v0 * inv), -128), 127);
        const int32_t q1 = min(max(__float2int_rn(v1 * inv), -128), 127);
        pair = (static_cast<uint32_t>(q0) & 0xffu) | ((static_cast<uint32_t>(q1) & 0xffu) << 8);
      } else {
        pair =
            __nv_cvt_float2_to_fp8x2(make_float2(v0 * inv, v1 * inv), __NV_SATFINITE,
                                     aq.out_t == DataType::kFloat8E4M3FN ? __NV_E4M3 : __NV_E5M2);
      }
      uint8_t* ob = static_cast<uint8_t*>(a.o);
      if (c + 1 < a.dv && a.o_st[2] == 1 && (at & 1) == 0) {
        *reinterpret_cast<uint16_t*>(ob + at) = static_cast<uint16_t>(pair);
      } else {
        ob[at] = static_cast<uint8_t>(pair);
        if (c + 1 < a.dv) ob[at + a.o_st[2]] = static_cast<uint8_t>(pair >> 8);
      }
    }
  }
}

// fp8_store for a whole strip when it can: all 16 rows valid, dv == DP, unit column stride and
// even addresses (two bytes or eight for a float pair per store), the output type's branch taken
// once; else fp8_store.
template <int DP>
__device__ __forceinline__ void fp8_store_strip(const AttentionQDesc& aq, int64_t b, int64_t row0,
                                                const float (&o)[DP / 8][4], int lane) {
  const AttentionDesc& a = aq.a;
  const bool full = row0 + kRowsPerWarp <= a.sq && a.dv == DP && a.o_st[2] == 1 &&
                    (a.o_st[1] % 2) == 0 && (a.o_st[0] % 2) == 0 &&
                    reinterpret_cast<uintptr_t>(a.o) % 8 == 0;
  if (!full) {
    fp8_store<DP>(aq, b, row0, o, lane);
    return;
  }
  const int64_t base = b * a.o_st[0] + (row0 + lane / 4) * a.o_st[1] + (lane % 4) * 2;
  const int64_t r8 = 8 * a.o_st[1];
  const float dq = aq.pv_dq;
  if (aq.out_t == DataType::kFloat32) {
    float* of = static_cast<float*>(a.o) + base;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int t = 0; t < DP / 8; ++t)
        *reinterpret_cast<float2*>(of + h * r8 + t * 8) =
            make_float2(o[t][2 * h] * dq, o[t][2 * h + 1] * dq);
    return;
  }
  const float inv = 1.0f / aq.out_scale;
  uint8_t* ob = static_cast<uint8_t*>(a.o) + base;
  auto put = [&](auto conv) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int t = 0; t < DP / 8; ++t)
        *reinterpret_cast<uint16_t*>(ob + h * r8 + t * 8) =
            static_cast<uint16_t>(conv((o[t][2 * h] * dq) * inv, (o[t][2 * h + 1] * dq) * inv));
  };
  if (aq.out_t == DataType::kInt8) {
    put([](float v0, float v1) {
      const int32_t q0 = min(max(__float2int_rn(v0), -128), 127);
      const int32_t q1 = min(max(__float2int_rn(v1), -128), 127);
      return (static_cast<uint32_t>(q0) & 0xffu) | ((static_cast<uint32_t>(q1) & 0xffu) << 8);
    });
  } else if (aq.out_t == DataType::kFloat8E4M3FN) {
    put([](float v0, float v1) {
      return static_cast<uint32_t>(
          __nv_cvt_float2_to_fp8x2(make_float2(v0, v1), __NV_SATFINITE, __NV_E4M3));
    });
  } else {
    put([](float v0, float v1) {
      return static_cast<uint32_t>(
          __nv_cvt_float2_to_fp8x2(make_float2(v0, v1), __NV_SATFINITE, __NV_E5M2));
    });
  }
}

// 16 rows of Q at qs (pitch DP + 8) as A fragments.
template <int DP>
__device__ __forceinline__ void fp8_q_fragments(uint32_t (&qf)[DP / 16][4], const __half* qs,
                                                int lane) {
  constexpr int ldh = DP + 8;
  const int r = (lane % 8) + ((lane / 8) % 2) * 8;
#pragma unroll
  for (int kk = 0; kk < DP / 16; ++kk)
    ldmatrix_x4(qf[kk], qs + r * ldh + kk * 16 + (lane / 16) * 8);
}

// Streaming kernel: a block takes 64 query rows (four warps), K / V in 64-key blocks.
template <typename Tin, int DP>
__global__ void __launch_bounds__(kAttnThreads)
    attention_fp8_kernel(AttentionQDesc aq, int64_t q_blocks, bool vq, bool vk, bool vv) {
  using S = Smem<DP>;
  constexpr int ldh = S::ldh;
  constexpr int kNT = kBlockN / 8;
  constexpr int kOT = DP / 8;
  const AttentionDesc& a = aq.a;
  extern __shared__ __align__(128) unsigned char smem[];
  __half* qs = reinterpret_cast<__half*>(smem);
  __half* ks = reinterpret_cast<__half*>(smem + S::q);
  __half* vs = reinterpret_cast<__half*>(smem + S::q + S::kv);
  const int64_t qb = static_cast<int64_t>(blockIdx.x) % q_blocks;
  const int64_t b = static_cast<int64_t>(blockIdx.x) / q_blocks;
  const int64_t q0 = qb * kBlockM;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const Tin* qp = static_cast<const Tin*>(a.q) + b * a.q_st[0];
  const Tin* kp = static_cast<const Tin*>(a.k) + b * a.k_st[0];
  const Tin* vp = static_cast<const Tin*>(a.v) + b * a.v_st[0];
  const int kind = qkind_of(aq);
  const int tid = static_cast<int>(threadIdx.x);
  quantize_rows<Tin, DP>(qs, qp + q0 * a.q_st[1], a.q_st[1], a.q_st[2], a.sq - q0, a.d, kBlockM,
                         q_quantizer(aq), kind, vq, tid, kAttnThreads);
  __syncthreads();
  const bool active = q0 + warp * kRowsPerWarp < a.sq;
  uint32_t qf[DP / 16][4];
  fp8_q_fragments<DP>(qf, qs + warp * kRowsPerWarp * ldh, lane);
  const float sscale = a.scale * aq.qk_dq * 1.4426950408889634f;  // exp(x) = exp2(x log2 e)
  auto load = [&](__half* dst, const Tin* src, const int64_t st[3], int64_t k0, int64_t cols,
                  Quantizer qz, bool vec) {
    quantize_rows<Tin, DP>(dst, src + k0 * st[1], st[1], st[2], a.sk - k0, cols, kBlockN, qz, kind,
                           vec, tid, kAttnThreads);
  };
  float run_max[2] = {-INFINITY, -INFINITY}, run_sum[2] = {0.0f, 0.0f};
  for (int64_t k0 = 0; k0 < a.sk; k0 += kBlockN) {
    __syncthreads();
    load(ks, kp, a.k_st, k0, a.d, k_quantizer(aq), vk);
    __syncthreads();
    if (!active) continue;
    const int valid = static_cast<int>(a.sk - k0 < kBlockN ? a.sk - k0 : kBlockN);
    float s[kNT][4];
    fp8_scores<DP>(s, qf, ks, valid, sscale, lane);
    fp8_row_stats<DP>(s, run_max, run_sum);
  }
  float inv[2];
  fp8_row_inverse(run_sum, aq.p_scale, inv);
  float o[kOT][4];
#pragma unroll
  for (int t = 0; t < kOT; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
  for (int64_t k0 = 0; k0 < a.sk; k0 += kBlockN) {
    __syncthreads();
    load(ks, kp, a.k_st, k0, a.d, k_quantizer(aq), vk);
    load(vs, vp, a.v_st, k0, a.dv, Quantizer{aq.v_scale}, vv);
    __syncthreads();
    if (!active) continue;
    const int valid = static_cast<int>(a.sk - k0 < kBlockN ? a.sk - k0 : kBlockN);
    float s[kNT][4];
    fp8_scores<DP>(s, qf, ks, valid, sscale, lane);
    fp8_accumulate<DP>(o, s, run_max, inv, vs, valid, kind, lane);
  }
  if (active) fp8_store<DP>(aq, b, q0 + warp * kRowsPerWarp, o, lane);
}

// ldmatrix from a 32-bit shared address (the callers add compile-time offsets to a per-lane
// base instead of converting a generic pointer for every load).
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// rows_pad rows of an operand already quantized by its producer (8-bit Tin, scale 1) into dst
// (float16, pitch DP + 8): 16 bytes per load, rows past rows_total zero. Needs src and s_row
// 16-byte aligned and cols == DP.
template <typename Tin, int DP>
__device__ __forceinline__ void stage16(__half* dst, const Tin* src, int64_t s_row, int rows_total,
                                        int rows_pad, int tid, int nthreads) {
  constexpr int ldh = DP + 8;
  constexpr int chunks = DP / 16;
  constexpr int U = 4;
  const int total = rows_pad * chunks;
  const auto* bytes = reinterpret_cast<const uint8_t*>(src);
  for (int e0 = tid; e0 < total; e0 += U * nthreads) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int e = e0 + u * nthreads;
      const int r = e / chunks, c = e % chunks;
      v[u] = make_uint4(0u, 0u, 0u, 0u);
      if (e < total && r < rows_total)
        v[u] = *reinterpret_cast<const uint4*>(bytes + r * s_row + c * 16);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int e = e0 + u * nthreads;
      if (e >= total) break;
      const int r = e / chunks, c = e % chunks;
      uint32_t h[8];
      const uint32_t w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (std::is_same_v<Tin, int8_t>) {
          const auto b = [&](int i) { return static_cast<int8_t>((w[j] >> (8 * i)) & 0xffu); };
          const __half2 lo = __halves2half2(__int2half_rn(b(0)), __int2half_rn(b(1)));
          const __half2 hi = __halves2half2(__int2half_rn(b(2)), __int2half_rn(b(3)));
          h[2 * j] = *reinterpret_cast<const uint32_t*>(&lo);
          h[2 * j + 1] = *reinterpret_cast<const uint32_t*>(&hi);
        } else {
          constexpr __nv_fp8_interpretation_t k = std::is_same_v<Tin, E4M3> ? __NV_E4M3 : __NV_E5M2;
          const __half2 lo = __half2(
              __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w[j] & 0xffffu), k));
          const __half2 hi =
              __half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(w[j] >> 16), k));
          h[2 * j] = *reinterpret_cast<const uint32_t*>(&lo);
          h[2 * j + 1] = *reinterpret_cast<const uint32_t*>(&hi);
        }
      }
      uint4* d = reinterpret_cast<uint4*>(dst + r * ldh + c * 16);
      d[0] = make_uint4(h[0], h[1], h[2], h[3]);
      d[1] = make_uint4(h[4], h[5], h[6], h[7]);
    }
  }
}

template <typename Tin, int DP>
__device__ __forceinline__ void stage_operand(__half* dst, const Tin* src, const int64_t st[3],
                                              int64_t rows_total, int64_t cols, int rows_pad,
                                              Quantizer qz, int kind, bool vec, int tid,
                                              int nthreads) {
  if constexpr (std::is_same_v<Tin, E4M3> || std::is_same_v<Tin, E5M2> ||
                std::is_same_v<Tin, int8_t>) {
    constexpr int kTinKind =
        std::is_same_v<Tin, int8_t> ? kQInt8 : (std::is_same_v<Tin, E4M3> ? kQE4M3 : kQE5M2);
    if (vec && cols == DP && qz.pre_op == 0 && qz.scale == 1.0f && kind == kTinKind &&
        reinterpret_cast<uintptr_t>(src) % 16 == 0 && st[1] % 16 == 0) {
      stage16<Tin, DP>(dst, src, st[1],
                       static_cast<int>(rows_total < rows_pad ? rows_total : rows_pad), rows_pad,
                       tid, nthreads);
      return;
    }
  }
  quantize_rows<Tin, DP>(dst, src, st[1], st[2], rows_total, cols, rows_pad, qz, kind, vec, tid,
                         nthreads);
}

// ---- the resident float8 attention, 32-key steps -------------------------------------------
// The first resident kernel (64-key blocks with the streaming kernel's per-warp steps; removed
// after the A/B in bench/RESULTS.md, fifteenth measurement) was instruction-bound (ncu on ViT-B/16,
// batch 256: 5,765 warp instructions per 16-row strip, ALU pipe 45%, tensor pipe 17%): every score
// was masked, scaled and compared on its own, exp2f's denormal handling wrapped each MUFU.EX2, the
// quad met in two shuffles per 64-key block, and keys were padded to 64 (197 -> 256). Here, with
// the same exact float16 products:
//  - 32-key steps, the MMAs of key tiles past Sk skipped; the mask only in the last step;
//  - pass 1 keeps a running max and sum per lane (no shuffles until the row ends) and turns each
//    score into exp2(s * ss - m * ss) with one FFMA and one ex2.approx.ftz (a probability that
//    flushes below 2^-126 is 0 after its float8 quantization anyway);
//  - pass 2: the same FFMA and ex2, one multiplication by 1 / (sum * p_scale), the paired
//    conversions to float8 and back, and the products with V;
//  - the block's warps sized to the strips (at most 7; ViT's 13 strips: 7 warps, two rounds),
//    two blocks per SM for head sizes up to 64 (three, at 80 registers, spilled and ran slower).
// It needs scale * qk_dq > 0 (the row max of the raw sums is then the max of the scores).
template <int DP>
size_t resident2_bytes(int64_t skp, int warps) {
  return static_cast<size_t>(2 * skp + warps * kRowsPerWarp) * (DP + 8) * 2;
}

// Keys at or past `valid` (relative to the step) -> -inf.
template <int kStep>
__device__ __forceinline__ void step_mask(float (&s)[kStep / 8][4], int valid, int lane) {
#pragma unroll
  for (int t = 0; t < kStep / 8; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (t * 8 + (lane % 4) * 2 + (e & 1) >= valid) s[t][e] = -INFINITY;
}

constexpr int kRes2Warps = 7;
// kStep: keys per step (32; 64, with more independent MMAs per step and more registers, ran
// ViT-B/16 FP8 0.1-0.2 ms slower on the H200).
template <typename Tin, int DP, int kStep>
__global__ void __launch_bounds__(kRes2Warps * 32, DP <= 64 ? 2 : 1)
    attention_fp8_res2_kernel(AttentionQDesc aq, int qsplit, int skp, bool vq, bool vk, bool vv) {
  constexpr int ldh = DP + 8;
  constexpr int kOT = DP / 8;
  constexpr int kNT = kStep / 8;
  const AttentionDesc& a = aq.a;
  extern __shared__ __align__(128) unsigned char smem[];
  __half* ks = reinterpret_cast<__half*>(smem);
  __half* vs = ks + static_cast<size_t>(skp) * ldh;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps = static_cast<int>(blockDim.x / 32);
  __half* qs = vs + static_cast<size_t>(skp) * ldh + warp * kRowsPerWarp * ldh;
  const int64_t b = static_cast<int64_t>(blockIdx.x) / qsplit;
  const int part = static_cast<int>(blockIdx.x % static_cast<unsigned>(qsplit));
  const int kind = qkind_of(aq);
  const Tin* qp = static_cast<const Tin*>(a.q) + b * a.q_st[0];
  const int tid = static_cast<int>(threadIdx.x), nthreads = static_cast<int>(blockDim.x);
  stage_operand<Tin, DP>(ks, static_cast<const Tin*>(a.k) + b * a.k_st[0], a.k_st, a.sk, a.d, skp,
                         k_quantizer(aq), kind, vk, tid, nthreads);
  stage_operand<Tin, DP>(vs, static_cast<const Tin*>(a.v) + b * a.v_st[0], a.v_st, a.sk, a.dv, skp,
                         Quantizer{aq.v_scale}, kind, vv, tid, nthreads);
  __syncthreads();
  const float ss = a.scale * aq.qk_dq * 1.4426950408889634f;  // exp(x) = exp2(x log2 e)
  const int sk = static_cast<int>(a.sk);
  constexpr uint32_t kRow = ldh * 2;  // bytes per staged row
  const uint32_t q_at =
      smem_addr(qs) + ((lane % 8) + ((lane / 8) % 2) * 8) * kRow + (lane / 16) * 16;
  const uint32_t k_at =
      smem_addr(ks) + ((lane % 8) + (lane / 16) * 8) * kRow + ((lane / 8) % 2) * 16;
  const uint32_t v_at =
      smem_addr(vs) + ((lane % 8) + ((lane / 8) % 2) * 8) * kRow + (lane / 16) * 16;
  // Raw sums of the strip (Q fragments qf) against the kStep keys from k0 (tiles past nt 0).
  auto scores = [&](float(&s)[kNT][4], const uint32_t(&qf)[DP / 16][4], int k0, int nt) {
#pragma unroll
    for (int t = 0; t < kNT; ++t) s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.0f;
    const uint32_t at = k_at + static_cast<uint32_t>(k0) * kRow;
#pragma unroll
    for (int np = 0; np < kStep / 16; ++np)
      if (2 * np < nt) {
#pragma unroll
        for (int kk = 0; kk < DP / 16; ++kk) {
          uint32_t bf[4];
          ldsm_x4(bf, at + np * 16 * kRow + kk * 32);
          mma16816<__half>(s[2 * np], qf[kk], bf[0], bf[1]);
          mma16816<__half>(s[2 * np + 1], qf[kk], bf[2], bf[3]);
        }
      }
  };
  const int64_t strips = (a.sq + kRowsPerWarp - 1) / kRowsPerWarp;
  for (int64_t strip = static_cast<int64_t>(part) * warps + warp; strip < strips;
       strip += static_cast<int64_t>(qsplit) * warps) {
    const int64_t r0 = strip * kRowsPerWarp;
    __syncwarp();  // the previous strip's fragments are loaded
    stage_operand<Tin, DP>(qs, qp + r0 * a.q_st[1], a.q_st, a.sq - r0, a.d, kRowsPerWarp,
                           q_quantizer(aq), kind, vq, lane, 32);
    __syncwarp();
    uint32_t qf[DP / 16][4];
#pragma unroll
    for (int kk = 0; kk < DP / 16; ++kk) ldsm_x4(qf[kk], q_at + kk * 32);
    // Pass 1: this lane's running max (raw sums) and sum of exp2((s - max) * ss) per row.
    float mx[2] = {-INFINITY, -INFINITY}, sm[2] = {0.0f, 0.0f};
    for (int k0 = 0; k0 < sk; k0 += kStep) {
      const int valid = sk - k0;
      float s[kNT][4];
      scores(s, qf, k0, (valid + 7) / 8);
      if (valid < kStep) step_mask<kStep>(s, valid, lane);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float m = mx[h];
#pragma unroll
        for (int t = 0; t < kNT; ++t) m = fmaxf(m, fmaxf(s[t][2 * h], s[t][2 * h + 1]));
        if (m == -INFINITY) continue;        // every key of this lane's row masked so far
        sm[h] *= ex2_ftz((mx[h] - m) * ss);  // ex2(-inf) = 0 on the first finite max
        mx[h] = m;
        const float mss = m * ss;
        float e0 = 0.0f, e1 = 0.0f;  // two chains of additions
#pragma unroll
        for (int t = 0; t < kNT; ++t) {
          e0 += ex2_ftz(fmaf(s[t][2 * h], ss, -mss));
          e1 += ex2_ftz(fmaf(s[t][2 * h + 1], ss, -mss));
        }
        sm[h] += e0 + e1;
      }
    }
    // The quad's rows: max, then the sums rescaled to it.
    float mss[2], inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      float part_sum = mx[h] == -INFINITY ? 0.0f : sm[h] * ex2_ftz((mx[h] - m) * ss);
      part_sum += __shfl_xor_sync(0xffffffffu, part_sum, 1);
      part_sum += __shfl_xor_sync(0xffffffffu, part_sum, 2);
      mss[h] = m * ss;
      inv[h] = part_sum > 0.0f ? 1.0f / (part_sum * aq.p_scale) : 0.0f;
    }
    // Pass 2: p8 = q(exp2(s * ss - m * ss) / (sum * p_scale)) as A fragments, o += p8 v8.
    float o[kOT][4];
#pragma unroll
    for (int t = 0; t < kOT; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
    auto pass2 = [&](auto kind_c) {
      for (int k0 = 0; k0 < sk; k0 += kStep) {
        const int valid = sk - k0;
        float s[kNT][4];
        scores(s, qf, k0, (valid + 7) / 8);
        if (valid < kStep) step_mask<kStep>(s, valid, lane);
#pragma unroll
        for (int kk = 0; kk < kStep / 16; ++kk) {
          if (16 * kk >= valid) continue;
          uint32_t pf[4];
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const float* st = s[2 * kk + j];
            const __half2 lo =
                quantized_half2(ex2_ftz(fmaf(st[0], ss, -mss[0])) * inv[0],
                                ex2_ftz(fmaf(st[1], ss, -mss[0])) * inv[0], kind_c.value);
            const __half2 hi =
                quantized_half2(ex2_ftz(fmaf(st[2], ss, -mss[1])) * inv[1],
                                ex2_ftz(fmaf(st[3], ss, -mss[1])) * inv[1], kind_c.value);
            pf[2 * j] = *reinterpret_cast<const uint32_t*>(&lo);
            pf[2 * j + 1] = *reinterpret_cast<const uint32_t*>(&hi);
          }
          const uint32_t at = v_at + static_cast<uint32_t>(k0 + kk * 16) * kRow;
#pragma unroll
          for (int dp = 0; dp < DP / 16; ++dp) {
            uint32_t bf[4];
            ldsm_x4_trans(bf, at + dp * 32);
            mma16816<__half>(o[2 * dp], pf, bf[0], bf[1]);
            mma16816<__half>(o[2 * dp + 1], pf, bf[2], bf[3]);
          }
        }
      }
    };
    if (kind == kQE4M3)
      pass2(std::integral_constant<int, kQE4M3>{});
    else if (kind == kQE5M2)
      pass2(std::integral_constant<int, kQE5M2>{});
    else
      pass2(std::integral_constant<int, kQInt8>{});
    fp8_store_strip<DP>(aq, b, r0, o, lane);
  }
}

// ---- the one-pass resident float8 attention ------------------------------------------------
// res2 computes every score twice (pass 1 for the row's max and sum, pass 2 for the quantized
// probabilities) because a 16-row strip's scores over all keys did not fit in registers next to
// its output rows. For up to kKeys keys they do: the strip's scores are computed once into
// registers (kKeys / 2 per lane), the quad's row max and sum follow from them, the exponentials
// are taken once, and the quantized probabilities (exact in float16) are packed two per
// register, so that the score registers are free again before the products with V. Same
// numerics as res2 (the row max is the final one, so the sum needs no rescaling). Capacities
// kKeys 64, 128 and 208 (ViT-B/16 and DeiT: 197 / 198 keys), head sizes up to 64.
//
// Its instruction count (ncu source counters on ViT-B/16, batch 256) was first mostly address
// arithmetic: a generic-to-shared conversion and 64-bit index products for every ldmatrix
// (~700 of 3,700 warp instructions per strip), four-byte staging of K and V (~550), a store
// loop testing every pair's bounds (~400) and tile guards around every loop. Here every
// shared-memory operand is one 32-bit base per lane plus compile-time offsets, K and V are staged
// by 16-byte loads, the keys are zero-filled to kKeys so that the loops need no guards (only
// the mask of keys past sk), and whole strips store through row pointers.
constexpr int kRes3Warps = 7;

template <typename Tin, int DP, int kKeys>
__global__ void __launch_bounds__(kRes3Warps * 32, 2)
    attention_fp8_res3_kernel(AttentionQDesc aq, int qsplit, int skp, bool vq, bool vk, bool vv) {
  (void)skp;  // K and V are staged to kKeys rows
  constexpr int ldh = DP + 8;
  constexpr int kOT = DP / 8;
  constexpr int kNT = kKeys / 8;
  constexpr uint32_t kRow = ldh * 2;  // bytes per staged row
  const AttentionDesc& a = aq.a;
  extern __shared__ __align__(128) unsigned char smem[];
  __half* ks = reinterpret_cast<__half*>(smem);
  __half* vs = ks + kKeys * ldh;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps = static_cast<int>(blockDim.x / 32);
  __half* qs = vs + kKeys * ldh + warp * kRowsPerWarp * ldh;
  const int64_t b = static_cast<int64_t>(blockIdx.x) / qsplit;
  const int part = static_cast<int>(blockIdx.x % static_cast<unsigned>(qsplit));
  const int kind = qkind_of(aq);
  const Tin* qp = static_cast<const Tin*>(a.q) + b * a.q_st[0];
  const int tid = static_cast<int>(threadIdx.x), nthreads = static_cast<int>(blockDim.x);
  stage_operand<Tin, DP>(ks, static_cast<const Tin*>(a.k) + b * a.k_st[0], a.k_st, a.sk, a.d, kKeys,
                         k_quantizer(aq), kind, vk, tid, nthreads);
  stage_operand<Tin, DP>(vs, static_cast<const Tin*>(a.v) + b * a.v_st[0], a.v_st, a.sk, a.dv,
                         kKeys, Quantizer{aq.v_scale}, kind, vv, tid, nthreads);
  __syncthreads();
  const float ss = a.scale * aq.qk_dq * 1.4426950408889634f;  // exp(x) = exp2(x log2 e)
  const float p_scale = aq.p_scale;
  const int sk = static_cast<int>(a.sk);
  // Per-lane shared addresses of the ldmatrix operands (offsets below are compile-time).
  const uint32_t q_at =
      smem_addr(qs) + ((lane % 8) + ((lane / 8) % 2) * 8) * kRow + (lane / 16) * 16;
  const uint32_t k_at =
      smem_addr(ks) + ((lane % 8) + (lane / 16) * 8) * kRow + ((lane / 8) % 2) * 16;
  const uint32_t v_at =
      smem_addr(vs) + ((lane % 8) + ((lane / 8) % 2) * 8) * kRow + (lane / 16) * 16;
  const int64_t strips = (a.sq + kRowsPerWarp - 1) / kRowsPerWarp;
  for (int64_t strip = static_cast<int64_t>(part) * warps + warp; strip < strips;
       strip += static_cast<int64_t>(qsplit) * warps) {
    const int64_t r0 = strip * kRowsPerWarp;
    __syncwarp();  // the previous strip's fragments are loaded
    stage_operand<Tin, DP>(qs, qp + r0 * a.q_st[1], a.q_st, a.sq - r0, a.d, kRowsPerWarp,
                           q_quantizer(aq), kind, vq, lane, 32);
    __syncwarp();
    // Raw sums, k-steps outermost: one Q fragment (4 registers) live at a time next to the
    // kKeys / 2 score registers.
    float s[kNT][4];
#pragma unroll
    for (int t = 0; t < kNT; ++t) s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < DP / 16; ++kk) {
      uint32_t qa[4];
      ldsm_x4(qa, q_at + kk * 32);
#pragma unroll
      for (int np = 0; np < kKeys / 16; ++np) {
        uint32_t bf[4];
        ldsm_x4(bf, k_at + np * 16 * kRow + kk * 32);
        mma16816<__half>(s[2 * np], qa, bf[0], bf[1]);
        mma16816<__half>(s[2 * np + 1], qa, bf[2], bf[3]);
      }
    }
    // Keys past sk out (their K rows are zeros, their scores 0).
#pragma unroll
    for (int t = 0; t < kNT; ++t)
      if (t * 8 + 8 > sk)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (t * 8 + (lane % 4) * 2 + (e & 1) >= sk) s[t][e] = -INFINITY;
    // Row max of the raw sums (scale * qk_dq > 0), over the quad; exponentials once, in place;
    // the row sums.
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m0 = -INFINITY, m1 = -INFINITY;
#pragma unroll
      for (int t = 0; t < kNT; ++t) {
        m0 = fmaxf(m0, s[t][2 * h]);
        m1 = fmaxf(m1, s[t][2 * h + 1]);
      }
      float m = fmaxf(m0, m1);
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      const float mss = m * ss;
      float e0 = 0.0f, e1 = 0.0f;  // two chains of additions
#pragma unroll
      for (int t = 0; t < kNT; ++t) {
        s[t][2 * h] = ex2_ftz(fmaf(s[t][2 * h], ss, -mss));
        s[t][2 * h + 1] = ex2_ftz(fmaf(s[t][2 * h + 1], ss, -mss));
        e0 += s[t][2 * h];
        e1 += s[t][2 * h + 1];
      }
      float sum = e0 + e1;
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      inv[h] = sum > 0.0f ? 1.0f / (sum * p_scale) : 0.0f;
    }
    // p8 = q(e / (sum * p_scale)) as A fragments, two per register.
    uint32_t pf[kKeys / 16][4];
    auto quantize_p = [&](auto kind_c) {
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float* st = s[2 * kk + j];
          const __half2 lo = quantized_half2(st[0] * inv[0], st[1] * inv[0], kind_c.value);
          const __half2 hi = quantized_half2(st[2] * inv[1], st[3] * inv[1], kind_c.value);
          pf[kk][2 * j] = *reinterpret_cast<const uint32_t*>(&lo);
          pf[kk][2 * j + 1] = *reinterpret_cast<const uint32_t*>(&hi);
        }
    };
    if (kind == kQE4M3)
      quantize_p(std::integral_constant<int, kQE4M3>{});
    else if (kind == kQE5M2)
      quantize_p(std::integral_constant<int, kQE5M2>{});
    else
      quantize_p(std::integral_constant<int, kQInt8>{});
    float o[kOT][4];
#pragma unroll
    for (int t = 0; t < kOT; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk)
#pragma unroll
      for (int dp = 0; dp < DP / 16; ++dp) {
        uint32_t bf[4];
        ldsm_x4_trans(bf, v_at + kk * 16 * kRow + dp * 32);
        mma16816<__half>(o[2 * dp], pf[kk], bf[0], bf[1]);
        mma16816<__half>(o[2 * dp + 1], pf[kk], bf[2], bf[3]);
      }
    fp8_store_strip<DP>(aq, b, r0, o, lane);
  }
}

// Vector loads of 4 elements of Tin: unit column stride, 4-element aligned base, row and batch
// strides and the column count multiples of 4.
template <typename Tin>
bool vector4_ok(const void* p, const int64_t st[3], int64_t cols) {
  return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(Tin)) == 0 && st[2] == 1 && st[1] % 4 == 0 &&
         st[0] % 4 == 0 && cols % 4 == 0;
}

template <typename Tin, int DP>
cudaError_t launch_attention_fp8(const AttentionQDesc& aq, cudaStream_t stream) {
  const AttentionDesc& a = aq.a;
  int dev = 0, optin = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e != cudaSuccess) return e;
  const bool vq = vector4_ok<Tin>(a.q, a.q_st, a.d), vk = vector4_ok<Tin>(a.k, a.k_st, a.d),
             vv = vector4_ok<Tin>(a.v, a.v_st, a.dv);
  // Keys padded to 16 (the 64-key loops read only the 16-key steps holding valid keys).
  const int64_t skp = (a.sk + 15) / 16 * 16;
  // The resident kernel: the fewest warps (at most 7) that take the strips in as few rounds.
  const int64_t strips = (a.sq + kRowsPerWarp - 1) / kRowsPerWarp;
  if (aq.resident && a.scale * aq.qk_dq > 0.0f) {
    static_assert(kRes3Warps == kRes2Warps, "one block shape for both resident kernels");
    const int64_t rounds = (strips + kRes2Warps - 1) / kRes2Warps;
    const int warps =
        static_cast<int>(std::min<int64_t>(kRes2Warps, (strips + rounds - 1) / rounds));
    size_t bytes = resident2_bytes<DP>(skp, warps);
    auto* kernel = attention_fp8_res2_kernel<Tin, DP, 32>;
    // float16 / bfloat16 operands (a float16 graph with TRTUTILS_CUDA_HALF_AS_FLOAT=0, bfloat16
    // graphs) take the two-pass kernel: 12 instantiations fewer keep CI's build time in bounds.
    constexpr bool kHalfIn = std::is_same_v<Tin, __half> || std::is_same_v<Tin, __nv_bfloat16>;
    if constexpr (DP <= 64 && !kHalfIn) {
      if (aq.one_pass && skp <= 208) {
        const int cap = skp <= 64 ? 64 : (skp <= 128 ? 128 : 208);
        kernel = cap == 64    ? attention_fp8_res3_kernel<Tin, DP, 64>
                 : cap == 128 ? attention_fp8_res3_kernel<Tin, DP, 128>
                              : attention_fp8_res3_kernel<Tin, DP, 208>;
        bytes = resident2_bytes<DP>(cap, warps);
      }
    }
    if (bytes <= static_cast<size_t>(optin)) {
      e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(bytes));
      if (e != cudaSuccess) return e;
      // Query strips split over blocks only where batch entries alone leave SMs idle.
      const int64_t want = (2 * static_cast<int64_t>(sms) + a.batch - 1) / a.batch;
      const int64_t qsplit = std::max<int64_t>(1, std::min(rounds, want));
      const int64_t blocks = a.batch * qsplit;
      if (blocks <= 0x7fffffff) {
        kernel<<<static_cast<unsigned>(blocks), warps * 32, bytes, stream>>>(
            aq, static_cast<int>(qsplit), static_cast<int>(skp), vq, vk, vv);
        return cudaGetLastError();
      }
    }
  }
  constexpr size_t bytes = Smem<DP>::q + 2 * Smem<DP>::kv;
  if (static_cast<size_t>(optin) < bytes) return cudaErrorNotSupported;
  e = cudaFuncSetAttribute(attention_fp8_kernel<Tin, DP>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e != cudaSuccess) return e;
  const int64_t q_blocks = (a.sq + kBlockM - 1) / kBlockM;
  const int64_t blocks = q_blocks * a.batch;
  if (blocks > 0x7fffffff) return cudaErrorNotSupported;
  attention_fp8_kernel<Tin, DP>
      <<<static_cast<unsigned>(blocks), kAttnThreads, bytes, stream>>>(aq, q_blocks, vq, vk, vv);
  return cudaGetLastError();
}

template <typename Tin>
cudaError_t attention_fp8_t(const AttentionQDesc& aq, cudaStream_t stream) {
  const int64_t d = aq.a.d > aq.a.dv ? aq.a.d : aq.a.dv;
  if (d <= 32) return launch_attention_fp8<Tin, 32>(aq, stream);
  if (d <= 64) return launch_attention_fp8<Tin, 64>(aq, stream);
  return launch_attention_fp8<Tin, 128>(aq, stream);
}

}  // namespace

bool attention_supported(DataType dt, int64_t d, int64_t dv) {
  return (dt == DataType::kFloat16 || dt == DataType::kBFloat16) && d >= 1 && dv >= 1 &&
         d <= kAttentionMaxHead && dv <= kAttentionMaxHead;
}

cudaError_t attention(DataType dt, const AttentionDesc& a, cudaStream_t stream) {
  if (!attention_supported(dt, a.d, a.dv) || a.sk < 1) return cudaErrorNotSupported;
  if (a.batch * a.sq == 0) return cudaSuccess;
  if (dt == DataType::kFloat16) return attention_t<__half>(a, stream);
  return attention_t<__nv_bfloat16>(a, stream);
}

}  // namespace trtutils::cuda::k

namespace trtutils::cuda::k {

cudaError_t attention_fp8(DataType in_t, const AttentionQDesc& aq, cudaStream_t stream) {
  const AttentionDesc& a = aq.a;
  if (a.d < 1 || a.dv < 1 || a.d > kAttentionMaxHead || a.dv > kAttentionMaxHead || a.sk < 1)
    return cudaErrorNotSupported;
  if (a.batch * a.sq == 0) return cudaSuccess;
  if (in_t == DataType::kFloat32) return attention_fp8_t<float>(aq, stream);
  if (in_t == DataType::kFloat16) return attention_fp8_t<__half>(aq, stream);
  if (in_t == DataType::kBFloat16) return attention_fp8_t<__nv_bfloat16>(aq, stream);
  // Operands quantized by their producer (scales 1): loaded as they are.
  if (in_t == DataType::kFloat8E4M3FN) return attention_fp8_t<E4M3>(aq, stream);
  if (in_t == DataType::kFloat8E5M2) return attention_fp8_t<E5M2>(aq, stream);
  if (in_t == DataType::kInt8) return attention_fp8_t<int8_t>(aq, stream);
  return cudaErrorNotSupported;
}

}  // namespace trtutils::cuda::k
