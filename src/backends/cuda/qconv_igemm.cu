// Implicit-GEMM int8 / float8 convolution on tensor cores, channels-last, with the quantized
// island's epilogue fused (no im2col buffer, no accumulator in global memory).
//
// The GEMM: M = N * OH * OW output positions (rows of Y [M, K]), K output channels, and the
// reduction over R * S * C (taps outer, channels inner: W packed [K][R][S][C], X NHWC), which
// the block walks in 64-byte steps. C % 16 == 0, so every 16-byte chunk of a step lies in one
// tap: its source is one cp.async of 16 input channels of one pixel, zero-filled outside the
// image (the padding; the zero point must be 0) and past the reduction.
//
// A block computes 128 positions x BN channels (BN = 128: 8 warps, 64: 4 warps) with a 4-stage
// cp.async pipeline; each warp owns a 64 x 32 tile: mma.sync m16n8k32 (int8 -> int32, or E4M3
// -> float32 on SM >= 89), operands from shared memory through ldmatrix (16-byte chunks XOR
// swizzled by row so that the eight rows of an 8x8 matrix hit different banks). The epilogue
// stages the sums as float32 in shared memory, then each thread takes 16 consecutive channels of
// a row: x_scale * w_scale[k], bias, residual, activation, the quantization (q_epilogue_kernel's
// arithmetic), with 16-byte loads and stores (fragment-order 2-byte stores were measured 4x
// slower on the memory-bound 1x1 layers).
//
// Plain matrix products in float8 (1x1, stride 1, C and K multiples of 128: ViT's projections)
// take a third kernel, gemm_tma_kernel: a producer warp streams the tiles with the Tensor Memory
// Accelerator, two consumer warpgroups run wgmma, persistent over the tiles (below).
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <type_traits>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/kernel_switches.h"
#include "backends/cuda/wgmma.cuh"

namespace trtutils::cuda::k {

namespace {

constexpr int kBM = 128;    // output positions per block
constexpr int kBK = 64;     // bytes of the reduction per stage
constexpr int kStages = 4;  // cp.async pipeline depth

template <int BN>
__host__ __device__ constexpr int igemm_threads() {
  // mma.sync: 2 x (BN / 32) warps of 64 x 32; wgmma: BN / 64 warpgroups (at most 2)
  return BN <= 128 ? BN * 2 : 256;
}
// Blocks per SM that the wgmma kernel's registers allow: 64 rows x BN / 2 sums per thread of a
// warpgroup, twice for float8 (the running total and the current step's partial sums).
template <int BN, typename Acc>
__host__ __device__ constexpr int wgmma_min_blocks() {
  const int per_thread =
      (igemm_threads<BN>() == 128 ? 2 : 1) * (BN / 2) * (std::is_same_v<Acc, float> ? 2 : 1);
  return (per_thread <= 64 ? 512 : 256) / igemm_threads<BN>();  // <= 128 or <= 255 registers
}
// The wgmma kernel's stages: one more than the mma.sync kernel's, for the step whose MMAs are
// still running while the next step's are issued (BN = 64: four, for four blocks per SM; BN = 256,
// one block per SM: six).
template <int BN>
__host__ __device__ constexpr int wgmma_stages() {
  return BN <= 64 ? 4 : BN <= 128 ? 5 : 6;
}
template <int BN, int Stages = kStages>
__host__ __device__ constexpr size_t igemm_smem() {
  // the pipeline's stages, or the epilogue's float32 [128][BN + 8] tile
  const size_t stages = static_cast<size_t>(Stages) * (kBM + BN) * kBK;
  const size_t tile = static_cast<size_t>(kBM) * (BN + 8) * 4;
  return stages > tile ? stages : tile;
}

// Channels col .. col + 15 of row `row` (element i = row * cols + col) from their sums v:
// 16-byte loads of the residual and 16-byte stores.
__device__ __forceinline__ void epilogue16(const QEpilogue& e, float v[16], int64_t i, int col) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float4 cs = *reinterpret_cast<const float4*>(e.colscale + col + 4 * q);
    v[4 * q] *= cs.x;
    v[4 * q + 1] *= cs.y;
    v[4 * q + 2] *= cs.z;
    v[4 * q + 3] *= cs.w;
    if (e.bias) {
      const float4 b = *reinterpret_cast<const float4*>(e.bias + col + 4 * q);
      v[4 * q] += b.x;
      v[4 * q + 1] += b.y;
      v[4 * q + 2] += b.z;
      v[4 * q + 3] += b.w;
    }
  }
  if (e.residual && e.residual_t == DataType::kFloat32) {
    const float4* r = reinterpret_cast<const float4*>(static_cast<const float*>(e.residual) + i);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float4 rv = r[q];
      v[4 * q] += rv.x;
      v[4 * q + 1] += rv.y;
      v[4 * q + 2] += rv.z;
      v[4 * q + 3] += rv.w;
    }
  } else if (e.residual) {
    const uint4 rv = *reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(e.residual) + i);
    const uint32_t words[4] = {rv.x, rv.y, rv.z, rv.w};
#pragma unroll
    for (int b = 0; b < 16; ++b)
      v[b] +=
          (byte_value(e.residual_t, (words[b / 4] >> (8 * (b % 4))) & 0xffu) - e.r_zp) * e.r_scale;
  }
#pragma unroll
  for (int b = 0; b < 16; ++b) v[b] = apply_act(e.act, v[b], e.alpha, e.beta);
  if (e.y_t == DataType::kFloat32) {
    float4* y = reinterpret_cast<float4*>(static_cast<float*>(e.y) + i);
#pragma unroll
    for (int q = 0; q < 4; ++q)
      y[q] = make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
  } else {
    uint32_t words[4] = {0, 0, 0, 0};
#pragma unroll
    for (int b = 0; b < 16; ++b)
      words[b / 4] |= byte_of(e.y_t, v[b] / e.y_scale, e.y_zp) << (8 * (b % 4));
    *reinterpret_cast<uint4*>(static_cast<uint8_t*>(e.y) + i) =
        make_uint4(words[0], words[1], words[2], words[3]);
  }
}

// v[0..15] = p[0..15] (16-byte aligned, shared memory).
__device__ __forceinline__ void load16(const float* p, float v[16]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float4 t = reinterpret_cast<const float4*>(p)[q];
    v[4 * q] = t.x;
    v[4 * q + 1] = t.y;
    v[4 * q + 2] = t.z;
    v[4 * q + 3] = t.w;
  }
}

// Whether the short epilogue takes e with its activation applied separately: a smooth one (GELU,
// SiLU: ViT's MLP, EfficientNet's expansions) that FastEpilogue's clamps cannot express.
__host__ __device__ inline bool smooth_act(Act a) {
  return a == Act::kGelu || a == Act::kSilu;
}
// The short epilogue's constants, a smooth activation left out (it is applied separately).
__host__ __device__ inline FastEpilogue fast_or_smooth(const QEpilogue& e) {
  QEpilogue plain = e;
  if (smooth_act(e.act)) plain.act = Act::kNone;
  return fast_epilogue(plain);
}
__host__ __device__ inline bool smooth_fast(const QEpilogue& e) {
  return smooth_act(e.act) && fast_or_smooth(e).on;
}

// 16 channels of one row: y = v * a + b (a, b: the column's scale and bias over y_scale), the
// residual's 16 bytes rw, the activation, the conversion, one 16-byte store at element i.
// kSmooth: e.act (GELU, SiLU) on y * y_scale, back to output steps (f: fast_or_smooth(e)).
template <bool kFp8, bool kSmooth = false>
__device__ __forceinline__ void epilogue16_fast(const QEpilogue& e, const FastEpilogue& f,
                                                const float v[16], const float a[16],
                                                const float b[16], uint4 rv, int64_t i) {
  const uint32_t rw[4] = {rv.x, rv.y, rv.z, rv.w};
  float y[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    y[j] = v[j] * a[j] + b[j];
    if (!e.residual) continue;
    if constexpr (kFp8) {
      y[j] += fast_residual<true>((rw[j / 4] >> (8 * (j % 4))) & 0xffu) * f.r_mul + f.r_add;
    } else {
      y[j] += s8_byte_to_float(rw[j / 4] ^ 0x80808080u, j % 4) * f.r_mul + f.r_add;
    }
  }
  if constexpr (kSmooth) {  // one branch per chunk (a switch per element was 4x slower)
    const float ys = e.y_scale;
    if (e.act == Act::kGelu) {
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const float t = y[j] * ys;
        y[j] = gelu_erf(t) * f.inv_y;
      }
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const float t = y[j] * ys;
        y[j] = t * (1.0f / (1.0f + expf(-t))) * f.inv_y;
      }
    }
  }
  uint32_t out[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if constexpr (kFp8) {
      const uint32_t lo = __nv_cvt_float2_to_fp8x2(
          make_float2(f.act(y[4 * q]), f.act(y[4 * q + 1])), __NV_SATFINITE, __NV_E4M3);
      const uint32_t hi = __nv_cvt_float2_to_fp8x2(
          make_float2(f.act(y[4 * q + 2]), f.act(y[4 * q + 3])), __NV_SATFINITE, __NV_E4M3);
      out[q] = lo | (hi << 16);
    } else {
      out[q] = pack4_low(int8_word(y[4 * q], f), int8_word(y[4 * q + 1], f),
                         int8_word(y[4 * q + 2], f), int8_word(y[4 * q + 3], f));
    }
  }
  *reinterpret_cast<uint4*>(static_cast<uint8_t*>(e.y) + i) =
      make_uint4(out[0], out[1], out[2], out[3]);
}

// The residual's 16 bytes at channels n.. of rows m0 + row0 + it * step (zeros past M or
// without a residual), loaded before the main loop so that they arrive while it runs.
template <int kIters>
__device__ __forceinline__ void load_residual(const QEpilogue& e, uint4 res[kIters], int row0,
                                              int step, int m0, int n, int m_total, int cols) {
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int m = m0 + row0 + it * step;
    res[it] = make_uint4(0, 0, 0, 0);
    if (e.residual && m < m_total && n < cols)
      res[it] = *reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(e.residual) +
                                                static_cast<int64_t>(m) * cols + n);
  }
}

// The tile's 16-channel chunks of column `col` (relative to the block), rows row0 + it * step,
// with the residual bytes `res` loaded already: the column's constants in registers once.
template <bool kFp8, int kIters, bool kSmooth = false>
__device__ __forceinline__ void store_fast(const QEpilogue& e, const float* tile, int ld, int row0,
                                           int step, int col, int m0, int n, int m_total, int cols,
                                           const uint4 res[kIters]) {
  const FastEpilogue f = fast_or_smooth(e);
  float a[16], b[16];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float4 cs = *reinterpret_cast<const float4*>(e.colscale + n + 4 * q);
    const float4 bs = e.bias ? *reinterpret_cast<const float4*>(e.bias + n + 4 * q)
                             : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    a[4 * q] = cs.x * f.inv_y;
    a[4 * q + 1] = cs.y * f.inv_y;
    a[4 * q + 2] = cs.z * f.inv_y;
    a[4 * q + 3] = cs.w * f.inv_y;
    b[4 * q] = bs.x * f.inv_y;
    b[4 * q + 1] = bs.y * f.inv_y;
    b[4 * q + 2] = bs.z * f.inv_y;
    b[4 * q + 3] = bs.w * f.inv_y;
  }
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int row = row0 + it * step, m = m0 + row;
    if (m >= m_total) continue;
    float v[16];
    load16(tile + row * ld + col, v);
    epilogue16_fast<kFp8, kSmooth>(e, f, v, a, b, res[it], static_cast<int64_t>(m) * cols + n);
  }
}

// The block's operand copies, one 64-byte reduction step after the other: thread tid copies
// 16-byte chunk tid % 4 of rows tid / 4 + i * kRowStep of the A tile (output positions: the input
// pixels of one tap, zero-filled outside the image and past the reduction) and of the B tile
// (output channels). The thread's tap and channel advance incrementally (no divisions per step).
template <int BN>
struct IgemmLoader {
  static constexpr int kRowStep = igemm_threads<BN>() / 4;
  static constexpr int kARows = kBM / kRowStep;
  static constexpr int kBRows = BN / kRowStep;
  int a_ih[kARows], a_iw[kARows];  // the row's top-left input pixel (outside for rows past M)
  int64_t a_base[kARows];          // its element offset in X
  int64_t b_off;                   // this step's element offset in W of the first B row
  int k, ci, s, r_off, s_off;      // reduction index; its channel, tap column, tap offsets
  int chunk, row0;

  __device__ __forceinline__ IgemmLoader(const IgemmDesc& d, int m0, int n0, int tid)
      : chunk(tid & 3), row0(tid >> 2) {
    const int positions = d.oh * d.ow, m_total = d.n * positions;
    // The first row's (image, output row, column) by division, the others by carries.
    const int m_first = m0 + row0;
    int img = m_first / positions, p = (m_first - img * positions) / d.ow;
    int q = m_first - img * positions - p * d.ow;
    const int dp = kRowStep / d.ow, dq = kRowStep - dp * d.ow;
#pragma unroll
    for (int i = 0; i < kARows; ++i) {
      if (i > 0) {
        q += dq;
        p += dp;
        if (q >= d.ow) {
          q -= d.ow;
          ++p;
        }
        while (p >= d.oh) {
          p -= d.oh;
          ++img;
        }
      }
      a_ih[i] = -(1 << 28);  // rows past M: every tap out of bounds
      a_iw[i] = 0;
      a_base[i] = 0;
      if (m_first + i * kRowStep < m_total) {
        a_ih[i] = p * d.sh - d.ph;
        a_iw[i] = q * d.sw - d.pw;
        a_base[i] = (static_cast<int64_t>(img) * d.h * d.w + static_cast<int64_t>(a_ih[i]) * d.w +
                     a_iw[i]) *
                    d.c;
      }
    }
    k = chunk * 16;
    const int tap = k / d.c, r = tap / d.kw;
    ci = k - tap * d.c;
    s = tap - r * d.kw;
    r_off = r * d.dh;
    s_off = s * d.dw;
    b_off = static_cast<int64_t>(n0 + row0) * d.kh * d.kw * d.c + k;
  }

  // The next reduction step into the swz64-swizzled stages `as` [kBM][64] and `bs` [BN][64].
  __device__ __forceinline__ void load_next(uint8_t* as, uint8_t* bs, const uint8_t* x,
                                            const uint8_t* w, const IgemmDesc& d, int n0, int kg) {
    const bool kvalid = k < kg;
    const int tap_off = (r_off * d.w + s_off) * d.c + ci;
#pragma unroll
    for (int i = 0; i < kARows; ++i) {
      const int row = row0 + i * kRowStep;
      const bool valid = kvalid &&
                         static_cast<unsigned>(a_ih[i] + r_off) < static_cast<unsigned>(d.h) &&
                         static_cast<unsigned>(a_iw[i] + s_off) < static_cast<unsigned>(d.w);
      cp_async16(as + swz64(row, chunk), valid ? x + a_base[i] + tap_off : x, valid);
    }
#pragma unroll
    for (int i = 0; i < kBRows; ++i) {
      const int row = row0 + i * kRowStep;
      const bool valid = kvalid && n0 + row < d.k;
      cp_async16(bs + swz64(row, chunk),
                 valid ? w + b_off + static_cast<int64_t>(i) * kRowStep * kg : w, valid);
    }
    k += kBK;
    b_off += kBK;
    ci += kBK;
    while (ci >= d.c) {  // the next tap (several for C < 64)
      ci -= d.c;
      s_off += d.dw;
      if (++s == d.kw) {
        s = 0;
        s_off = 0;
        r_off += d.dh;
      }
    }
  }
};

// The epilogue's thread layout: thread tid takes the 16-channel chunk column tid % (BN / 16) of
// rows tid / (BN / 16) + it * kStep of the block's [kBM][BN] tile of sums.
template <int BN>
struct IgemmStore {
  static constexpr int kChunksPerRow = BN / 16;
  static constexpr int kStep = igemm_threads<BN>() / kChunksPerRow;
  static constexpr int kIters = kBM / kStep;
  static constexpr int ld = BN + 8;  // floats per row of the staged tile
  int col, row0, n;
  __device__ __forceinline__ IgemmStore(int tid, int n0)
      : col((tid % kChunksPerRow) * 16), row0(tid / kChunksPerRow), n(n0 + col) {}

  // kPrefetch (a residual and the short epilogue): the residual bytes are loaded before the main
  // loop, so that they arrive while it runs (the 1x1 layers' few reduction steps hide no
  // latency); the kernels without use fewer registers.
  template <bool kPrefetch>
  __device__ __forceinline__ void prefetch(const QEpilogue& e, uint4 (&res)[kIters], int m0,
                                           int m_total, int cols) const {
    if constexpr (kPrefetch) load_residual<kIters>(e, res, row0, kStep, m0, n, m_total, cols);
  }

  // The staged float32 sums (tile, after a barrier) through the epilogue to Y.
  template <bool kPrefetch>
  __device__ __forceinline__ void store(const QEpilogue& e, const float* tile, uint4 (&res)[kIters],
                                        int m0, int m_total, int cols) const {
    if (n >= cols) return;
    if (fast_epilogue(e).on) {
      if constexpr (!kPrefetch) load_residual<kIters>(e, res, row0, kStep, m0, n, m_total, cols);
      if (e.y_t == DataType::kInt8) {
        store_fast<false, kIters>(e, tile, ld, row0, kStep, col, m0, n, m_total, cols, res);
      } else {
        store_fast<true, kIters>(e, tile, ld, row0, kStep, col, m0, n, m_total, cols, res);
      }
      return;
    }
    if (smooth_fast(e)) {
      if constexpr (!kPrefetch) load_residual<kIters>(e, res, row0, kStep, m0, n, m_total, cols);
      if (e.y_t == DataType::kInt8) {
        store_fast<false, kIters, true>(e, tile, ld, row0, kStep, col, m0, n, m_total, cols, res);
      } else {
        store_fast<true, kIters, true>(e, tile, ld, row0, kStep, col, m0, n, m_total, cols, res);
      }
      return;
    }
    for (int it = 0; it < kIters; ++it) {
      const int row = row0 + it * kStep, m = m0 + row;
      if (m >= m_total) continue;
      float v[16];
      load16(tile + row * ld + col, v);
      epilogue16(e, v, static_cast<int64_t>(m) * cols + n, n);
    }
  }
};

template <int BN, typename Acc, bool kPrefetch>
__global__ void __launch_bounds__(igemm_threads<BN>(), 256 / BN)
    qconv_igemm_kernel(const uint8_t* __restrict__ x, const uint8_t* __restrict__ w, IgemmDesc d,
                       QEpilogue e) {
  extern __shared__ __align__(1024) uint8_t smem[];
  uint8_t* const as_base = smem;
  uint8_t* const bs_base = smem + kStages * kBM * kBK;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp & 1, warp_n = warp >> 1;
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * BN;
  const int m_total = d.n * d.oh * d.ow;
  const int kg = d.kh * d.kw * d.c;
  const int ktiles = (kg + kBK - 1) / kBK;
  IgemmLoader<BN> loader(d, m0, n0, tid);
  const IgemmStore<BN> out(tid, n0);
  uint4 res[IgemmStore<BN>::kIters];
  out.template prefetch<kPrefetch>(e, res, m0, m_total, d.k);

  Acc acc[4][4][4];
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = Acc(0);

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < ktiles)
      loader.load_next(as_base + s * kBM * kBK, bs_base + s * BN * kBK, x, w, d, n0, kg);
    cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage kt landed for every thread; stage kt - 1 is free again
    const int next = kt + kStages - 1;
    if (next < ktiles)
      loader.load_next(as_base + (next % kStages) * kBM * kBK,
                       bs_base + (next % kStages) * BN * kBK, x, w, d, n0, kg);
    cp_async_commit();
    const uint8_t* as = as_base + (kt % kStages) * kBM * kBK;
    const uint8_t* bs = bs_base + (kt % kStages) * BN * kBK;
    mma_stage64(acc, as, bs, warp_m * 64, warp_n * 32, lane);
  }
  cp_async_wait<0>();
  __syncthreads();  // the stages are free: the tile's sums go through shared memory

  // Sums as float32 into a [128][BN + 8] tile (the padding spreads a fragment store's eight
  // rows over the banks), then 16 consecutive channels per thread for coalesced 16-byte I/O.
  constexpr int ld = IgemmStore<BN>::ld;
  float* tile = reinterpret_cast<float*>(smem);
  for_each_acc_pair(warp_m * 64, warp_n * 32, lane,
                    [&](int mt, int nt, int half, int row, int col) {
                      *reinterpret_cast<float2*>(tile + row * ld + col) =
                          make_float2(static_cast<float>(acc[mt][nt][half * 2]),
                                      static_cast<float>(acc[mt][nt][half * 2 + 1]));
                    });
  __syncthreads();
  out.template store<kPrefetch>(e, tile, res, m0, m_total, d.k);
}

// The same convolution on Hopper's warpgroup MMA (sm_90a): the operand stages (same loader, same
// swizzle) are read by wgmma through shared-memory descriptors instead of ldmatrix + mma.sync.
// BN = 128: two warpgroups, each 64 rows x 128 channels; BN = 64: one warpgroup, two 64 x 64
// tiles; BN = 256 (int8, one block per SM): two warpgroups of 64 x 256. Each reduction step's
// MMAs run asynchronously while the threads issue the copies of a
// later step; the stage those copies overwrite was read by MMAs that every warpgroup has waited
// for before the step's barrier.
template <int BN, typename Acc, bool kPrefetch>
__global__ void __launch_bounds__(igemm_threads<BN>(), (wgmma_min_blocks<BN, Acc>()))
    qconv_wgmma_kernel(const uint8_t* __restrict__ x, const uint8_t* __restrict__ w, IgemmDesc d,
                       QEpilogue e) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kWarpgroups = igemm_threads<BN>() / 128;
  constexpr int kMTiles = kBM / 64 / kWarpgroups;  // 64-row tiles per warpgroup
  // float8: Hopper's tensor cores add float8 products into fewer bits than float32 (the
  // "fast accumulation" that cuBLASLt leaves off by default), so each reduction step's two MMAs
  // go into partial sums that are added to float32 totals here, as mma.sync's do.
  constexpr bool kPromote = std::is_same_v<Acc, float>;
  constexpr int kS = wgmma_stages<BN>();
  extern __shared__ __align__(1024) uint8_t smem[];
  uint8_t* const as_base = smem;
  uint8_t* const bs_base = smem + kS * kBM * kBK;
  if (smem_addr(smem) % 512 != 0) __trap();  // the hardware swizzle needs 512-byte tiles

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp / 4;
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * BN;
  const int m_total = d.n * d.oh * d.ow;
  const int kg = d.kh * d.kw * d.c;
  const int ktiles = (kg + kBK - 1) / kBK;
  IgemmLoader<BN> loader(d, m0, n0, tid);
  const IgemmStore<BN> out(tid, n0);
  uint4 res[IgemmStore<BN>::kIters];
  out.template prefetch<kPrefetch>(e, res, m0, m_total, d.k);

  Acc acc[kMTiles][BN / 2];
  Acc part[kPromote ? kMTiles : 1][kPromote ? BN / 2 : 1];
  auto promote = [&] {
    if constexpr (kPromote) {
#pragma unroll
      for (int t = 0; t < kMTiles; ++t) {
        wgmma_fence_operands(part[t]);
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[t][i] += part[t][i];
      }
    }
  };
#pragma unroll
  for (int t = 0; t < kMTiles; ++t) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[t][i] = Acc(0);
    wgmma_fence_operands(acc[t]);
  }

  // Step kt's MMAs are issued while step kt - 1's may still run (float8: not, its partial sums
  // are added first); the copies then go to the stage of step kt - 2, which every warpgroup has
  // finished reading (wgmma_wait, then the barrier).
  constexpr int kInFlight = kPromote ? 0 : 1;
  constexpr int kAhead = kS - 1 - kInFlight;  // steps whose copies are in flight
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < ktiles)
      loader.load_next(as_base + s * kBM * kBK, bs_base + s * BN * kBK, x, w, d, n0, kg);
    cp_async_commit();
  }
  const uint64_t a_desc = wgmma_desc_sw64(smem_addr(as_base) + wg * kMTiles * 64 * kBK);
  const uint64_t b_desc = wgmma_desc_sw64(smem_addr(bs_base));
  // The stage of step kt and the stage the copies go to, tracked without divisions;
  // descriptors hold start addresses in 16-byte units in their low bits.
  int stage = 0, load_stage = kAhead;
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<kAhead - 1>();
    fence_proxy_async_shared();  // this thread's copies of stage kt, visible to wgmma
    wgmma_wait<kInFlight>();     // this warpgroup's MMAs of step kt - 1 - kInFlight are done
    __syncthreads();             // stage kt landed everywhere; that step's stage is free
    if (kt > 0) promote();
    const uint64_t a_stage = a_desc + stage * (kBM * kBK / 16);
    const uint64_t b_stage = b_desc + stage * (BN * kBK / 16);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
#pragma unroll
      for (int t = 0; t < kMTiles; ++t) {
        const uint64_t da = a_stage + (t * 64 * kBK + kk * 32) / 16, db = b_stage + kk * 32 / 16;
        if constexpr (kPromote) {
          Wgmma<BN, Acc>::run(part[t], da, db, kk);
        } else {
          Wgmma<BN, Acc>::run(acc[t], da, db, 1);
        }
      }
    }
    wgmma_commit();
    if (kt + kAhead < ktiles)
      loader.load_next(as_base + load_stage * kBM * kBK, bs_base + load_stage * BN * kBK, x, w, d,
                       n0, kg);
    cp_async_commit();
    stage = stage + 1 == kS ? 0 : stage + 1;
    load_stage = load_stage + 1 == kS ? 0 : load_stage + 1;
  }
  wgmma_wait<0>();
  promote();
#pragma unroll
  for (int t = 0; t < kMTiles; ++t) wgmma_fence_operands(acc[t]);
  cp_async_wait<0>();
  __syncthreads();  // the stages are free: the tile's sums go through shared memory

  constexpr int ld = IgemmStore<BN>::ld;
  float* tile = reinterpret_cast<float*>(smem);
  const int g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int t = 0; t < kMTiles; ++t) {
    const int row = (wg * kMTiles + t) * 64 + (warp % 4) * 16 + g;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        *reinterpret_cast<float2*>(tile + (row + 8 * half) * ld + j * 8 + 2 * q) =
            make_float2(static_cast<float>(acc[t][4 * j + 2 * half]),
                        static_cast<float>(acc[t][4 * j + 2 * half + 1]));
  }
  __syncthreads();
  out.template store<kPrefetch>(e, tile, res, m0, m_total, d.k);
#else
  __trap();  // launched only where wgmma_available()
#endif
}

template <int BN, typename Acc, bool kWgmma, bool kPrefetch>
constexpr auto igemm_kernel() {
  if constexpr (kWgmma) {
    return qconv_wgmma_kernel<BN, Acc, kPrefetch>;
  } else {
    return qconv_igemm_kernel<BN, Acc, kPrefetch>;
  }
}

template <int BN, typename Acc, bool kWgmma>
cudaError_t launch_igemm(const void* x, const void* w, const IgemmDesc& d, const QEpilogue& e,
                         cudaStream_t stream) {
  const bool prefetch = e.residual && (fast_epilogue(e).on || smooth_fast(e));
  auto* kernel =
      prefetch ? igemm_kernel<BN, Acc, kWgmma, true>() : igemm_kernel<BN, Acc, kWgmma, false>();
  constexpr size_t smem = kWgmma ? igemm_smem<BN, wgmma_stages<BN>()>() : igemm_smem<BN>();
  static const cudaError_t attr = [] {
    const cudaError_t a = cudaFuncSetAttribute(igemm_kernel<BN, Acc, kWgmma, true>(),
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    return a != cudaSuccess
               ? a
               : cudaFuncSetAttribute(igemm_kernel<BN, Acc, kWgmma, false>(),
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  }();
  if (attr != cudaSuccess) return attr;
  const int64_t m = static_cast<int64_t>(d.n) * d.oh * d.ow;
  const dim3 grid(static_cast<unsigned>((d.k + BN - 1) / BN),
                  static_cast<unsigned>((m + kBM - 1) / kBM));
  kernel<<<grid, igemm_threads<BN>(), smem, stream>>>(static_cast<const uint8_t*>(x),
                                                      static_cast<const uint8_t*>(w), d, e);
  return cudaGetLastError();
}

// The device's compute capability and SM count, read once per device (ordinal < 16).
struct DeviceInfo {
  int cc = 0, sms = 0;
};
DeviceInfo device_info() {
  static std::atomic<int> cc[16] = {}, sms[16] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 16) return {};
  if (cc[dev].load(std::memory_order_relaxed) == 0) {
    int major = 0, minor = 0, count = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      return {};
    sms[dev].store(count, std::memory_order_relaxed);
    cc[dev].store(major * 10 + minor, std::memory_order_relaxed);
  }
  return {cc[dev].load(std::memory_order_relaxed), sms[dev].load(std::memory_order_relaxed)};
}

template <typename Acc, bool kWgmma>
cudaError_t launch_igemm(const void* x, const void* w, const IgemmDesc& d, const QEpilogue& e,
                         cudaStream_t stream) {
  if constexpr (kWgmma && std::is_same_v<Acc, int32_t>) {
    // 128 x 256 tiles (one block per SM) read each operand byte fewer times than two blocks of
    // 128 x 128, which pays where the grid still fills the GPU in >= 2.5 waves (ResNet-50's
    // layer-3 3x3 convolutions: 0.0812 -> 0.0726 ms on the H200; layer 4's 1.5 waves: slower).
    const int64_t m = static_cast<int64_t>(d.n) * d.oh * d.ow;
    const int64_t blocks = (m + kBM - 1) / kBM * ((d.k + 255) / 256);
    if (d.k >= 256 && blocks * 2 >= int64_t{5} * device_info().sms)
      return launch_igemm<256, Acc, true>(x, w, d, e, stream);
  }
  return d.k <= 64 ? launch_igemm<64, Acc, kWgmma>(x, w, d, e, stream)
                   : launch_igemm<128, Acc, kWgmma>(x, w, d, e, stream);
}

bool aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// ---- the matrix products (1x1, stride 1, C and K multiples of 128) on TMA + wgmma, sm_90a -------
// ViT's projections (M = 50,432 tokens, K = 768 / 3,072) ran the kernels above at about half of
// cuBLASLt's rate: every thread copies operands (cp.async) and the block meets at a barrier every
// 64-byte step. Here a producer warp streams 128 x 128-byte tiles of X and W into a 4-stage ring
// with the Tensor Memory Accelerator (128-byte swizzle, completion on an mbarrier), and two
// consumer warpgroups (64 rows x 128 channels each) run four m64n128k32 MMAs per stage, release
// the stage on a second mbarrier and, for float8, add the partial sums to float32 totals every
// two MMAs (64 products: Hopper's float8 MMAs accumulate in fewer bits than float32). The two
// warpgroups synchronise only through the ring, so one's promotion overlaps the other's MMAs.
// The blocks are persistent over the tiles: the producer loads the next tile while the consumers
// run the epilogue, the implicit GEMM's (IgemmStore) on the sums staged as float32 in a tile of
// their own, 16 channels per thread.
constexpr int kTmaBM = 128, kTmaBN = 128, kTmaBK = 128, kTmaStages = 4;
constexpr int kTmaStageBytes = (kTmaBM + kTmaBN) * kTmaBK;
constexpr int kTmaStaging = kTmaBM * IgemmStore<128>::ld * 4;  // the epilogue's float32 tile
constexpr size_t kTmaSmem =
    size_t{kTmaStages} * kTmaStageBytes + kTmaStaging + 2 * kTmaStages * 8 + 1024;

template <bool kFp8>
__global__ void __launch_bounds__(384, 1)
    gemm_tma_kernel(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw,
                    int m_total, int n_total, int k_total, QEpilogue e) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Acc = std::conditional_t<kFp8, float, int32_t>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* const smem =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  float* const tile = reinterpret_cast<float*>(smem + kTmaStages * kTmaStageBytes);
  uint64_t* const full =
      reinterpret_cast<uint64_t*>(smem + kTmaStages * kTmaStageBytes + kTmaStaging);
  uint64_t* const empty = full + kTmaStages;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  // Persistent: block b takes tiles b, b + grid, ... (column tiles fastest: neighbours share X)
  const int col_tiles = n_total / kTmaBN;
  const int tiles = col_tiles * ((m_total + kTmaBM - 1) / kTmaBM);
  const int ktiles = k_total / kTmaBK;
  if (tid == 0) {
    for (int s = 0; s < kTmaStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 8);  // the consumers' eight warps
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp < 4) {  // the producer warpgroup: one thread issues the copies, running ahead into
                   // the next tile while the consumers run the epilogue
    if (tid == 0) {
      int s = 0, phase = 0;
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int n0 = (t % col_tiles) * kTmaBN, m0 = (t / col_tiles) * kTmaBM;
        for (int kt = 0; kt < ktiles; ++kt) {
          mbar_wait(&empty[s], phase ^ 1);
          mbar_expect_tx(&full[s], kTmaStageBytes);
          uint8_t* const a = smem + s * kTmaStageBytes;
          tma_load(a, &tx, &full[s], kt * kTmaBK, m0);
          tma_load(a + kTmaBM * kTmaBK, &tw, &full[s], kt * kTmaBK, n0);
          if (++s == kTmaStages) {
            s = 0;
            phase ^= 1;
          }
        }
      }
    }
    return;
  }
  const int ctid = tid - 128, wg = ctid >> 7;  // consumer thread, warpgroup (rows 64 wg ..)
  const int g = lane >> 2, q = lane & 3, row = wg * 64 + (warp % 4) * 16 + g;
  Acc acc[64], part[kFp8 ? 64 : 1];
  int s = 0, phase = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int n0 = (t % col_tiles) * kTmaBN, m0 = (t / col_tiles) * kTmaBM;
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = Acc(0);
    wgmma_fence_operands(acc);
    for (int kt = 0; kt < ktiles; ++kt) {
      mbar_wait(&full[s], phase);
      const uint32_t a = smem_addr(smem + s * kTmaStageBytes);
      const uint64_t da = wgmma_desc_sw128(a + wg * 64 * kTmaBK);
      const uint64_t db = wgmma_desc_sw128(a + kTmaBM * kTmaBK);
      if constexpr (kFp8) {
        // Two rounds of two k32 MMAs, each added to the float32 totals: every 64 products, as
        // the implicit GEMM (promoting every 128 left 1-2 in 10,000 outputs more than one step
        // off a float64 reference at K = 2,048-3,072 in pw_probe).
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          wgmma_fence();
          Wgmma<128, float>::run(part, da + r * 4, db + r * 4, 0);
          Wgmma<128, float>::run(part, da + r * 4 + 2, db + r * 4 + 2, 1);
          wgmma_commit();
          wgmma_wait<0>();
          if (r == 1 && lane == 0) mbar_arrive(&empty[s]);  // this warp's reads are done
          wgmma_fence_operands(part);
#pragma unroll
          for (int i = 0; i < 64; ++i) acc[i] += part[i];
        }
      } else {
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kTmaBK / 32; ++kk)
          Wgmma<128, int32_t>::run(acc, da + kk * 2, db + kk * 2, 1);
        wgmma_commit();
        wgmma_wait<0>();
        if (lane == 0) mbar_arrive(&empty[s]);
      }
      if (++s == kTmaStages) {
        s = 0;
        phase ^= 1;
      }
    }
    wgmma_fence_operands(acc);
    // The sums through the staging tile (not the ring: the producer is loading the next tile);
    // the barrier also waits for the other warpgroup's stores of the previous tile.
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    constexpr int ld = IgemmStore<128>::ld;
#pragma unroll
    for (int j = 0; j < 16; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        *reinterpret_cast<float2*>(tile + (row + 8 * half) * ld + j * 8 + 2 * q) =
            make_float2(static_cast<float>(acc[4 * j + 2 * half]),
                        static_cast<float>(acc[4 * j + 2 * half + 1]));
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    const IgemmStore<128> out(ctid, n0);
    uint4 res[IgemmStore<128>::kIters];
    out.template store<false>(e, tile, res, m0, m_total, n_total);
  }
#else
  __trap();  // launched only where wgmma_available()
#endif
}

// cuTensorMapEncodeTiled from the driver (cudart is linked statically; no libcuda at link time).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}
// rows x cols bytes, row-major, boxes of 128 x 128 bytes in the 128-byte swizzle.
bool tensor_map(CUtensorMap* map, const void* base, int64_t rows, int64_t cols) {
  auto* encode = tensor_map_encoder();
  if (!encode) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols)};
  const cuuint32_t box[2] = {kTmaBK, kTmaBM}, unit[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims, strides, box,
                unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

cudaError_t launch_tma_gemm(const void* x, const void* w, const IgemmDesc& d, bool fp8,
                            const QEpilogue& e, cudaStream_t stream) {
  const int64_t m = static_cast<int64_t>(d.n) * d.h * d.w;
  CUtensorMap tx, tw;
  if (!tensor_map(&tx, x, m, d.c) || !tensor_map(&tw, w, d.k, d.c)) return cudaErrorNotSupported;
  static const cudaError_t attr = [] {
    const cudaError_t a = cudaFuncSetAttribute(
        gemm_tma_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, kTmaSmem);
    return a != cudaSuccess
               ? a
               : cudaFuncSetAttribute(gemm_tma_kernel<false>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, kTmaSmem);
  }();
  if (attr != cudaSuccess) return attr;
  const int64_t tiles = d.k / kTmaBN * ((m + kTmaBM - 1) / kTmaBM);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles, std::max(1, device_info().sms))));
  if (fp8) {
    gemm_tma_kernel<true>
        <<<grid, 384, kTmaSmem, stream>>>(tx, tw, static_cast<int>(m), d.k, d.c, e);
  } else {
    gemm_tma_kernel<false>
        <<<grid, 384, kTmaSmem, stream>>>(tx, tw, static_cast<int>(m), d.k, d.c, e);
  }
  return cudaGetLastError();
}
bool one_byte(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8 || t == DataType::kFloat8E4M3FN ||
         t == DataType::kFloat8E5M2;
}

}  // namespace

bool wgmma_available() {
#if defined(TRTUTILS_CUDA_SM90A)
  const char* sw = switch_value("TRTUTILS_CUDA_WGMMA");
  if (sw && sw[0] == '0') return false;
  return device_info().cc == 90;  // sm_90a code runs on 9.0 only
#else
  return false;
#endif
}

// Whether the descriptor is a plain matrix product the TMA kernel takes: C a multiple of 128 and
// at least two reduction stages (with one, ResNet-50's 128 -> 512 expansion ran 7% slower than
// the implicit GEMM), K a multiple of 128; float8 (int8 only with
// TRTUTILS_CUDA_TMA_GEMM=2: its products keep the kernels measured on ResNet-50).
// TRTUTILS_CUDA_TMA_GEMM=0 turns it off.
bool qconv_tma_fits(const IgemmDesc& d, bool fp8) {
  const char* sw = switch_value("TRTUTILS_CUDA_TMA_GEMM");
  if ((sw && sw[0] == '0') || (!fp8 && !(sw && sw[0] == '2')) || !wgmma_available()) return false;
  return d.kh == 1 && d.kw == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 && d.pw == 0 &&
         d.oh == d.h && d.ow == d.w && d.c % kTmaBK == 0 && d.c >= 2 * kTmaBK &&
         d.k % kTmaBN == 0 &&
         static_cast<int64_t>(d.n) * d.h * d.w * (d.k / kTmaBN) < (int64_t{1} << 31);
}

cudaError_t qconv_igemm(const void* x, const void* w, const IgemmDesc& d, bool fp8,
                        const QEpilogue& e, cudaStream_t stream) {
  const int64_t m = static_cast<int64_t>(d.n) * d.oh * d.ow;
  const int64_t in = static_cast<int64_t>(d.n) * d.h * d.w * d.c;
  const bool y_float = e.y_t == DataType::kFloat32;
  const bool r_float = e.residual && e.residual_t == DataType::kFloat32;
  if (d.c % 16 != 0 || d.k % 16 != 0 || m <= 0 || d.k <= 0 || !e.colscale ||
      m * d.k >= (int64_t{1} << 31) || in >= (int64_t{1} << 31) || (m + kBM - 1) / kBM > 65535 ||
      !aligned(x, 16) || !aligned(w, 16) || !aligned(e.colscale, 16) ||
      (e.bias && !aligned(e.bias, 16)) || !aligned(e.y, 16) ||
      (e.residual && !aligned(e.residual, 16)) || (!y_float && !one_byte(e.y_t)) ||
      (e.residual && !r_float && !one_byte(e.residual_t)))
    return cudaErrorNotSupported;
  if (qconv_tma_fits(d, fp8)) {
    const cudaError_t tma = launch_tma_gemm(x, w, d, fp8, e, stream);
    if (tma != cudaErrorNotSupported) return tma;
  }
  // 1x1 convolutions it takes (it checks qconv_pointwise_fits): the persistent kernel.
  const cudaError_t pointwise = qconv_pointwise(x, w, d, fp8, e, stream);
  if (pointwise != cudaErrorNotSupported) return pointwise;
  if (wgmma_available())
    return fp8 ? launch_igemm<float, true>(x, w, d, e, stream)
               : launch_igemm<int32_t, true>(x, w, d, e, stream);
  return fp8 ? launch_igemm<float, false>(x, w, d, e, stream)
             : launch_igemm<int32_t, false>(x, w, d, e, stream);
}

}  // namespace trtutils::cuda::k
