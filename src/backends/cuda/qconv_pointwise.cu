// Pointwise (1x1, unpadded) int8 / float8 convolutions, channels-last, as a persistent streaming
// GEMM: the memory-bound layers of ResNet-style bottlenecks (ResNet-50's expand layer, C = 64 ->
// K = 256 over 802,816 positions at batch 256, moves 461 MB for 26 GOP).
//
// qconv_igemm.cu computes one 128 x BN tile per block, its phases in sequence (load, products,
// epilogue, store) and two blocks per SM: the 1x1 layers, with one to four reduction steps per
// tile, had little in flight and reached 0.9-1.8 TB/s of the ~4.3. Here each block walks many
// tiles, and its cp.async ring runs over the flattened sequence of (tile, reduction step): the
// loads of the next tiles (X rows, W rows, and the residual tile, carried by the stage of its
// tile's last step) are in flight while the current tile's products and epilogue run.
//
// Per stage: A [128][64] and B [BN][64] (swz64 swizzle, ldmatrix + mma.sync m16n8k32 as in
// qconv_igemm), R [128][BN + 16] bytes (the residual; the padding spreads a fragment's eight rows
// over the banks). The epilogue is the short one (FastEpilogue) on the accumulator fragments:
// each element's residual byte is read from R and its output byte written in its place, then
// the tile leaves with 16-byte stores. Only that epilogue: int8 / E4M3 output, a residual of the
// output's dtype or none, no activation, ReLU or Clip; other cases are cudaErrorNotSupported.
#include <cstdlib>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/kernel_switches.h"

namespace trtutils::cuda::k {

namespace {

constexpr int kPwBM = 128;    // output positions per tile
constexpr int kPwStages = 3;  // cp.async ring depth (stages in flight: kPwStages - 1)

template <int BN>
struct Pw {
  static constexpr int kThreads = BN * 2;  // 2 x (BN / 32) warps of 64 x 32
  static constexpr int kLd = BN + 16;      // bytes per row of the residual / output tile
  static constexpr int kA = kPwBM * 64, kB = BN * 64, kR = kPwBM * kLd;
  static constexpr int kStage = kA + kB + kR;
  static constexpr size_t kSmem = static_cast<size_t>(kPwStages) * kStage;
  static constexpr int kRowStep = kThreads / 4;  // rows between a thread's A / B copies
  static constexpr int kChunks = BN / 16;        // 16-byte chunks per row of the R tile
  static constexpr int kRIters = kPwBM * kChunks / kThreads;
};

struct PwShape {
  int m_total, ntiles, ktiles, positions;
  bool direct;  // stride 1: row m is pixel m
};

// kExact22 (int8 with C <= 256, so |sum| <= 2^22): the sums start at the bits of 1.5 * 2^23 and
// are read as floats (i2f_exact22 without its add). The grid is a multiple of the column tiles,
// so a block keeps its column tile (its epilogue constants) and walks row tiles first + j * grid.
template <int BN, bool kFp8, bool kExact22>
__global__ void __launch_bounds__(Pw<BN>::kThreads, 2)
    qconv_pointwise_kernel(const uint8_t* __restrict__ x, const uint8_t* __restrict__ w,
                           IgemmDesc d, PwShape p, QEpilogue e) {
  using C = Pw<BN>;
  using Acc = std::conditional_t<kFp8, float, int32_t>;
  extern __shared__ __align__(128) uint8_t smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp & 1, warp_n = warp >> 1;
  const int chunk = tid & 3, row0 = tid >> 2;
  const int nt = blockIdx.x % p.ntiles, n0 = nt * BN;
  const int mt0 = blockIdx.x / p.ntiles, mt_step = gridDim.x / p.ntiles;
  const int mtiles = (p.m_total + kPwBM - 1) / kPwBM;
  if (mt0 >= mtiles) return;
  const int total = (mtiles - mt0 + mt_step - 1) / mt_step * p.ktiles;
  const bool residual = e.residual != nullptr;
  const uint8_t* r_bytes = static_cast<const uint8_t*>(e.residual);

  // The loads of the next step (row tile lj, reduction step ls) into stage lq % kPwStages; the
  // residual rides with the tile's last step.
  int lq = 0, lj = 0, ls = 0;
  auto load_next = [&] {
    const int m0 = (mt0 + lj * mt_step) * kPwBM;
    uint8_t* stage = smem + (lq % kPwStages) * C::kStage;
    const int k = ls * 64 + chunk * 16;
    const bool kvalid = k < d.c;
    if (p.direct) {
      const uint8_t* src = x + (static_cast<int64_t>(m0) + row0) * d.c + k;
      const int64_t step = static_cast<int64_t>(C::kRowStep) * d.c;
#pragma unroll
      for (int i = 0; i < kPwBM / C::kRowStep; ++i) {
        const int row = row0 + i * C::kRowStep;
        const bool valid = kvalid && m0 + row < p.m_total;
        cp_async16(stage + swz64(row, chunk), valid ? src + i * step : x, valid);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kPwBM / C::kRowStep; ++i) {
        const int row = row0 + i * C::kRowStep, m = m0 + row;
        const bool valid = kvalid && m < p.m_total;
        int64_t pixel = 0;
        if (valid) {
          const int img = m / p.positions, rem = m - img * p.positions;
          const int oy = rem / d.ow, ox = rem - oy * d.ow;
          pixel = (static_cast<int64_t>(img) * d.h + oy * d.sh) * d.w + ox * d.sw;
        }
        cp_async16(stage + swz64(row, chunk), valid ? x + pixel * d.c + k : x, valid);
      }
    }
#pragma unroll
    for (int i = 0; i < BN / C::kRowStep; ++i) {
      const int row = row0 + i * C::kRowStep;
      const bool valid = kvalid && n0 + row < d.k;
      cp_async16(stage + C::kA + swz64(row, chunk),
                 valid ? w + static_cast<int64_t>(n0 + row) * d.c + k : w, valid);
    }
    if (residual && ls == p.ktiles - 1) {
#pragma unroll
      for (int i = 0; i < C::kRIters; ++i) {
        const int ci = tid + i * C::kThreads;
        const int row = ci / C::kChunks, col = (ci - row * C::kChunks) * 16;
        const int m = m0 + row;
        const bool valid = m < p.m_total && n0 + col < d.k;
        cp_async16(stage + C::kA + C::kB + row * C::kLd + col,
                   valid ? r_bytes + static_cast<int64_t>(m) * d.k + n0 + col : r_bytes, valid);
      }
    }
    ++lq;
    if (++ls == p.ktiles) ls = 0, ++lj;
  };

  // The thread's eight columns: scale and bias in output steps.
  const FastEpilogue f = fast_epilogue(e);
  const int tq = lane & 3;
  float ca[8], cb[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int n = n0 + warp_n * 32 + (i / 2) * 8 + tq * 2 + (i & 1);
    ca[i] = n < d.k ? e.colscale[n] * f.inv_y : 0.0f;
    cb[i] = n < d.k && e.bias ? e.bias[n] * f.inv_y : 0.0f;
  }
  const Acc init = kExact22 ? Acc(0x4B400000) : Acc(0);
  Acc acc[4][4][4];

#pragma unroll
  for (int i = 0; i < kPwStages - 1; ++i) {
    if (i < total) load_next();
    cp_async_commit();
  }
  int s = 0, m0 = mt0 * kPwBM;  // the reduction step and first row of step q
  for (int q = 0; q < total; ++q) {
    cp_async_wait<kPwStages - 2>();
    __syncthreads();  // stage q landed for every thread; stage q - 1 is free again
    if (q + kPwStages - 1 < total) load_next();
    cp_async_commit();
    uint8_t* stage = smem + (q % kPwStages) * C::kStage;
    if (s == 0) {
      mma_stage64<true>(acc, stage, stage + C::kA, warp_m * 64, warp_n * 32, lane, init);
    } else {
      mma_stage64(acc, stage, stage + C::kA, warp_m * 64, warp_n * 32, lane);
    }
    if (++s < p.ktiles) continue;
    s = 0;

    // The tile's epilogue on the fragments: element (row, col) reads its residual byte from R
    // and leaves its output byte there. Specialised for a residual and a zero point, uniform
    // branches that would otherwise sit around every pair of elements.
    uint8_t* tile = stage + C::kA + C::kB;
    auto epilogue = [&](auto with_residual, auto with_zp) {
      constexpr bool kRes = decltype(with_residual)::value;
      [[maybe_unused]] constexpr bool kZp = decltype(with_zp)::value;  // int8 only
      for_each_acc_pair(
          warp_m * 64, warp_n * 32, lane, [&](int mi, int ni, int half, int row, int col) {
            uint16_t* cell = reinterpret_cast<uint16_t*>(tile + row * C::kLd + col);
            uint32_t rb = 0;
            if constexpr (kRes) rb = *cell;
            float y[2];
#pragma unroll
            for (int b = 0; b < 2; ++b) {
              const Acc v = acc[mi][ni][half * 2 + b];
              float fv;
              if constexpr (kFp8) {
                fv = v;
              } else if constexpr (kExact22) {
                fv = __int_as_float(v) - 12582912.0f;
              } else {
                fv = static_cast<float>(v);
              }
              y[b] = fv * ca[ni * 2 + b] + cb[ni * 2 + b];
            }
            if constexpr (kFp8) {
              if constexpr (kRes) {
#pragma unroll
                for (int b = 0; b < 2; ++b)
                  y[b] += fast_residual<true>((rb >> (8 * b)) & 0xffu) * f.r_mul + f.r_add;
              }
              *cell = __nv_cvt_float2_to_fp8x2(make_float2(f.act(y[0]), f.act(y[1])),
                                               __NV_SATFINITE, __NV_E4M3);
            } else {
              if constexpr (kRes) {
                const uint32_t rx = rb ^ 0x8080u;
#pragma unroll
                for (int b = 0; b < 2; ++b) y[b] += s8_byte_to_float(rx, b) * f.r_mul + f.r_add;
              }
              uint32_t wd[2];
#pragma unroll
              for (int b = 0; b < 2; ++b) {
                wd[b] = __float_as_uint(fminf(fmaxf(y[b], f.sat_lo), f.sat_hi) + 12582912.0f);
                if constexpr (kZp) wd[b] += static_cast<uint32_t>(f.y_zp);
              }
              *cell = static_cast<uint16_t>(__byte_perm(wd[0], wd[1], 0x0040));
            }
          });
    };
    if (residual) {
      if (!kFp8 && f.y_zp != 0) {
        epilogue(std::true_type{}, std::true_type{});
      } else {
        epilogue(std::true_type{}, std::false_type{});
      }
    } else if (!kFp8 && f.y_zp != 0) {
      epilogue(std::false_type{}, std::true_type{});
    } else {
      epilogue(std::false_type{}, std::false_type{});
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < C::kRIters; ++i) {
      const int ci = tid + i * C::kThreads;
      const int row = ci / C::kChunks, col = (ci - row * C::kChunks) * 16;
      const int m = m0 + row;
      if (m < p.m_total && n0 + col < d.k)
        *reinterpret_cast<uint4*>(static_cast<uint8_t*>(e.y) + static_cast<int64_t>(m) * d.k + n0 +
                                  col) = *reinterpret_cast<const uint4*>(tile + row * C::kLd + col);
    }
    m0 += mt_step * kPwBM;
  }
  cp_async_wait<0>();
}

template <int BN, bool kFp8, bool kExact22>
cudaError_t launch_pointwise(const void* x, const void* w, const IgemmDesc& d, const QEpilogue& e,
                             cudaStream_t stream) {
  using C = Pw<BN>;
  auto* kernel = qconv_pointwise_kernel<BN, kFp8, kExact22>;
  // Blocks that fit on the device at once (the persistent grid), once per instantiation.
  static const int resident = [&] {
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem) !=
        cudaSuccess)
      return 0;
    int dev = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, C::kThreads, C::kSmem) !=
            cudaSuccess)
      return 0;
    return sms * per_sm;
  }();
  if (resident <= 0) {
    (void)cudaGetLastError();
    return cudaErrorNotSupported;
  }
  PwShape p;
  p.positions = d.oh * d.ow;
  p.m_total = d.n * p.positions;
  p.ntiles = (d.k + BN - 1) / BN;
  p.ktiles = (d.c + 63) / 64;
  p.direct = d.sh == 1 && d.sw == 1;
  const int64_t mtiles = (p.m_total + kPwBM - 1) / kPwBM;
  // A multiple of the column tiles, at most the row tiles' worth of each.
  int64_t rows = resident / p.ntiles;
  if (rows < 1) rows = 1;
  if (rows > mtiles) rows = mtiles;
  const int64_t grid = rows * p.ntiles;
  if (grid > 0x7fffffff || mtiles * p.ktiles > 0x7fffffff) return cudaErrorNotSupported;
  kernel<<<static_cast<unsigned>(grid), C::kThreads, C::kSmem, stream>>>(
      static_cast<const uint8_t*>(x), static_cast<const uint8_t*>(w), d, p, e);
  return cudaGetLastError();
}

}  // namespace

bool qconv_pointwise_fits(const IgemmDesc& d, const QEpilogue& e) {
  const char* sw = switch_value("TRTUTILS_CUDA_QPOINTWISE");
  if (sw && sw[0] == '0') return false;
  // Measured on the H200 against qconv_igemm over ResNet-50's pointwise layers (bench/RESULTS.md,
  // tenth and eleventh measurements): against its mma.sync kernel, faster up to C = 1024 at
  // stride 1 and C = 256 at stride 2, where each tile reads few rows; slower with longer
  // reductions (C = 2048) or sparser reads (stride 2 at C >= 512), where the per-tile pipeline
  // of qconv_igemm keeps more of each tile in flight. Against its wgmma kernel (Hopper): faster
  // up to C * stride^2 = 256 (int8 with K <= 128: 512), slower above (e.g. int8 C = 1024 -> K =
  // 256: 0.058 vs 0.044 ms; C = 512 -> K = 128: 0.063 vs 0.070 ms).
  const int64_t limit =
      !wgmma_available() ? 1024 : (e.y_t == DataType::kInt8 && d.k <= 128 ? 512 : 256);
  const bool fast = fast_epilogue(e).on;
  return fast && d.kh == 1 && d.kw == 1 && d.ph == 0 && d.pw == 0 && d.oh == (d.h - 1) / d.sh + 1 &&
         d.ow == (d.w - 1) / d.sw + 1 && d.c % 16 == 0 && d.k % 16 == 0 &&
         static_cast<int64_t>(d.c) * d.sh * d.sw <= limit;
}

cudaError_t qconv_pointwise(const void* x, const void* w, const IgemmDesc& d, bool fp8,
                            const QEpilogue& e, cudaStream_t stream) {
  if (!qconv_pointwise_fits(d, e)) return cudaErrorNotSupported;
  if (fp8)
    return d.k <= 64 ? launch_pointwise<64, true, false>(x, w, d, e, stream)
                     : launch_pointwise<128, true, false>(x, w, d, e, stream);
  // |sum| <= C * 128 * 128 <= 2^22
  if (d.c <= 256)
    return d.k <= 64 ? launch_pointwise<64, false, true>(x, w, d, e, stream)
                     : launch_pointwise<128, false, true>(x, w, d, e, stream);
  return d.k <= 64 ? launch_pointwise<64, false, false>(x, w, d, e, stream)
                   : launch_pointwise<128, false, false>(x, w, d, e, stream);
}

}  // namespace trtutils::cuda::k
