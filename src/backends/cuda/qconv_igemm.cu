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
#include "backends/cuda/device_util.cuh"

namespace trtutils::cuda::k {

namespace {

constexpr int kBM = 128;    // output positions per block
constexpr int kBK = 64;     // bytes of the reduction per stage
constexpr int kStages = 4;  // cp.async pipeline depth

template <int BN>
__host__ __device__ constexpr int igemm_threads() {
  return BN * 2;  // 2 x (BN / 32) warps of 64 x 32
}
template <int BN>
__host__ __device__ constexpr size_t igemm_smem() {
  // the pipeline's stages, or the epilogue's float32 [128][BN + 8] tile
  const size_t stages = static_cast<size_t>(kStages) * (kBM + BN) * kBK;
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

// 16 channels of one row: y = v * a + b (a, b: the column's scale and bias over y_scale), the
// residual's 16 bytes rw, the activation, the conversion, one 16-byte store at element i.
template <bool kFp8>
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
template <bool kFp8, int kIters>
__device__ __forceinline__ void store_fast(const QEpilogue& e, const float* tile, int ld, int row0,
                                           int step, int col, int m0, int n, int m_total, int cols,
                                           const uint4 res[kIters]) {
  const FastEpilogue f = fast_epilogue(e);
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
    epilogue16_fast<kFp8>(e, f, v, a, b, res[it], static_cast<int64_t>(m) * cols + n);
  }
}

template <int BN, typename Acc, bool kPrefetch>
__global__ void __launch_bounds__(igemm_threads<BN>(), 256 / BN)
    qconv_igemm_kernel(const uint8_t* __restrict__ x, const uint8_t* __restrict__ w, IgemmDesc d,
                       QEpilogue e) {
  constexpr int kThreadsB = igemm_threads<BN>();
  constexpr int kRowStep = kThreadsB / 4;  // rows between a thread's chunks
  constexpr int kARows = kBM / kRowStep;
  constexpr int kBRows = BN / kRowStep;
  extern __shared__ __align__(128) uint8_t smem[];
  uint8_t* const as_base = smem;
  uint8_t* const bs_base = smem + kStages * kBM * kBK;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp & 1, warp_n = warp >> 1;
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * BN;
  const int positions = d.oh * d.ow;
  const int m_total = d.n * positions;
  const int kg = d.kh * d.kw * d.c;
  const int ktiles = (kg + kBK - 1) / kBK;

  // This thread's copies: chunk column tid % 4 of rows tid / 4 + i * kRowStep.
  const int chunk = tid & 3, row0 = tid >> 2;
  int a_ih[kARows], a_iw[kARows];
  const uint8_t* a_src[kARows];
#pragma unroll
  for (int i = 0; i < kARows; ++i) {
    const int m = m0 + row0 + i * kRowStep;
    a_ih[i] = -(1 << 28);  // rows past M: every tap out of bounds
    a_iw[i] = 0;
    a_src[i] = x;
    if (m < m_total) {
      const int img = m / positions, rem = m - img * positions;
      const int p = rem / d.ow, q = rem - p * d.ow;
      a_ih[i] = p * d.sh - d.ph;
      a_iw[i] = q * d.sw - d.pw;
      a_src[i] = x + static_cast<int64_t>(img) * d.h * d.w * d.c;
    }
  }

  auto load_stage = [&](int stage, int kt) {
    const int k = kt * kBK + chunk * 16;
    const bool kvalid = k < kg;
    int ci = 0, r = 0, s = 0;
    if (kvalid) {
      const int tap = k / d.c;
      ci = k - tap * d.c;
      r = tap / d.kw;
      s = tap - r * d.kw;
    }
    uint8_t* as = as_base + stage * kBM * kBK;
#pragma unroll
    for (int i = 0; i < kARows; ++i) {
      const int row = row0 + i * kRowStep;
      const int ih = a_ih[i] + r * d.dh, iw = a_iw[i] + s * d.dw;
      const bool valid = kvalid && static_cast<unsigned>(ih) < static_cast<unsigned>(d.h) &&
                         static_cast<unsigned>(iw) < static_cast<unsigned>(d.w);
      const uint8_t* src = valid ? a_src[i] + (static_cast<int64_t>(ih) * d.w + iw) * d.c + ci : x;
      cp_async16(as + swz64(row, chunk), src, valid);
    }
    uint8_t* bs = bs_base + stage * BN * kBK;
#pragma unroll
    for (int i = 0; i < kBRows; ++i) {
      const int row = row0 + i * kRowStep;
      const bool valid = kvalid && n0 + row < d.k;
      const uint8_t* src = valid ? w + static_cast<int64_t>(n0 + row) * kg + k : w;
      cp_async16(bs + swz64(row, chunk), src, valid);
    }
  };

  // The short epilogue's thread layout (below). kPrefetch (a residual and the short epilogue):
  // its residual bytes are loaded now, so that they arrive during the main loop (the 1x1 layers'
  // few reduction steps hide no latency); the kernels without use fewer registers.
  constexpr int kChunksPerRow = BN / 16;
  constexpr int kStep = kThreadsB / kChunksPerRow;
  constexpr int kIters = kBM / kStep;
  const int col = (tid % kChunksPerRow) * 16, erow0 = tid / kChunksPerRow, n = n0 + col;
  const bool fast = fast_epilogue(e).on;
  uint4 res[kIters];
  if constexpr (kPrefetch) load_residual<kIters>(e, res, erow0, kStep, m0, n, m_total, d.k);

  Acc acc[4][4][4];
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = Acc(0);

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < ktiles) load_stage(s, s);
    cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage kt landed for every thread; stage kt - 1 is free again
    const int next = kt + kStages - 1;
    if (next < ktiles) load_stage(next % kStages, next);
    cp_async_commit();
    const uint8_t* as = as_base + (kt % kStages) * kBM * kBK;
    const uint8_t* bs = bs_base + (kt % kStages) * BN * kBK;
    mma_stage64(acc, as, bs, warp_m * 64, warp_n * 32, lane);
  }
  cp_async_wait<0>();
  __syncthreads();  // the stages are free: the tile's sums go through shared memory

  // Sums as float32 into a [128][BN + 8] tile (the padding spreads a fragment store's eight
  // rows over the banks), then 16 consecutive channels per thread for coalesced 16-byte I/O.
  constexpr int ld = BN + 8;
  float* tile = reinterpret_cast<float*>(smem);
  for_each_acc_pair(warp_m * 64, warp_n * 32, lane,
                    [&](int mt, int nt, int half, int row, int col) {
                      *reinterpret_cast<float2*>(tile + row * ld + col) =
                          make_float2(static_cast<float>(acc[mt][nt][half * 2]),
                                      static_cast<float>(acc[mt][nt][half * 2 + 1]));
                    });
  __syncthreads();
  // Thread tid takes the chunk column tid % (BN / 16) of rows tid / (BN / 16) + it * step.
  if (n >= d.k) return;
  if (fast) {
    if constexpr (!kPrefetch) load_residual<kIters>(e, res, erow0, kStep, m0, n, m_total, d.k);
    if (e.y_t == DataType::kInt8) {
      store_fast<false, kIters>(e, tile, ld, erow0, kStep, col, m0, n, m_total, d.k, res);
    } else {
      store_fast<true, kIters>(e, tile, ld, erow0, kStep, col, m0, n, m_total, d.k, res);
    }
    return;
  }
  for (int it = 0; it < kIters; ++it) {
    const int row = erow0 + it * kStep, m = m0 + row;
    if (m >= m_total) continue;
    float v[16];
    load16(tile + row * ld + col, v);
    epilogue16(e, v, static_cast<int64_t>(m) * d.k + n, n);
  }
}

template <int BN, typename Acc>
cudaError_t launch_igemm(const void* x, const void* w, const IgemmDesc& d, const QEpilogue& e,
                         cudaStream_t stream) {
  const bool prefetch = e.residual && fast_epilogue(e).on;
  auto* kernel = prefetch ? qconv_igemm_kernel<BN, Acc, true> : qconv_igemm_kernel<BN, Acc, false>;
  constexpr size_t smem = igemm_smem<BN>();
  static const cudaError_t attr = [] {
    const cudaError_t a = cudaFuncSetAttribute(qconv_igemm_kernel<BN, Acc, true>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    return a != cudaSuccess
               ? a
               : cudaFuncSetAttribute(qconv_igemm_kernel<BN, Acc, false>,
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

bool aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}
bool one_byte(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUInt8 || t == DataType::kFloat8E4M3FN ||
         t == DataType::kFloat8E5M2;
}

}  // namespace

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
  // 1x1 convolutions it takes (it checks qconv_pointwise_fits): the persistent kernel.
  const cudaError_t pointwise = qconv_pointwise(x, w, d, fp8, e, stream);
  if (pointwise != cudaErrorNotSupported) return pointwise;
  if (fp8)
    return d.k <= 64 ? launch_igemm<64, float>(x, w, d, e, stream)
                     : launch_igemm<128, float>(x, w, d, e, stream);
  return d.k <= 64 ? launch_igemm<64, int32_t>(x, w, d, e, stream)
                   : launch_igemm<128, int32_t>(x, w, d, e, stream);
}

}  // namespace trtutils::cuda::k
