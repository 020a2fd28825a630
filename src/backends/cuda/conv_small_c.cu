// Float32 convolutions with few input channels (the stem of image models: 3 colour channels,
// 7x7 stride 2 in ResNet) on the TF32 tensor cores, with bias, activation and, optionally, a
// per-tensor quantization of the output fused (the QuantizeLinear that follows the stem in a
// Q/DQ model).
//
// cuDNN's kernels for C = 3 either pad the channels to a tensor-core multiple or run on the
// FMA units (ResNet-50's stem at batch 256: 1.79 ms, 34 TFLOP/s, then 0.53 ms to quantize the
// 822 MB float32 output). Here the reduction runs over the R * S * C taps of one output pixel
// (147 for the stem, padded to a multiple of 8), so nothing is wasted on padding channels:
//   - a block owns one 64-channel slice of K (its weights, packed on the host in mma fragment
//     order and rounded to TF32, stay in shared memory) and walks output tiles of 8 rows x 16
//     columns of one image (a persistent grid-stride loop, so the weights load once);
//   - per tile, the input patch the tile reads ((8 - 1) * sh + (R - 1) * dh + 1 rows,
//     (16 - 1) * sw + (S - 1) * dw + 1 columns, C channels; zeros outside the image) is staged in
//     shared memory by 4-byte cp.async copies (all in flight at once) from NCHW or NHWC X, and
//     rounded to TF32 as the fragments load;
//   - 4 warps, each two output rows (two m16 tiles) x 64 channels: mma.sync m16n8k8 TF32 with
//     float32 accumulation; an A element is patch[pixel base + tap offset] (tap offsets from a
//     table: k = (r * S + s) * C + c);
//   - the epilogue (bias, activation, then float32 or value / y_scale + zero point as int8 /
//     uint8 / float8, QuantizeLinear's arithmetic) stages the tile in shared memory and stores
//     it with 16-byte writes (channels-last Y) or along the rows (NCHW Y).
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cuda/device_util.cuh"

namespace trtutils::cuda::k {

namespace {

constexpr int kTP = 8;   // output rows per tile
constexpr int kTQ = 16;  // output columns per tile (one m16 tile)
constexpr int kBN = 64;  // output channels per block
constexpr int kSmallCThreads = 128;
constexpr int kLd = kBN + 4;  // floats per staged pixel (16-byte rows, fewer bank conflicts)

// f rounded to TF32 (round half away from zero, as cuBLAS's conversions), as mma operand bits.
__device__ __forceinline__ uint32_t tf32_bits(float f) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(f));
  return r;
}

// 4 bytes global -> shared without a register round trip (zeros when !valid).
__device__ __forceinline__ void cp_async4(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 4 : 0)
               : "memory");
}

__device__ __forceinline__ void mma_tf32(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The epilogue after the bias. Fast modes (no activation, ReLU or Clip as a clamp; int8 and
// E4M3 as y * (1 / y_scale), within one step of QuantizeLinear's division): a few instructions
// per element. kGeneric: every activation, uint8 / E5M2 / zero points, QuantizeLinear's exact
// arithmetic (byte_of).
enum Mode : int { kF32 = 0, kI8 = 1, kE4M3 = 2, kGeneric = 3 };
struct Epi {
  float lo = 0, hi = 0, inv_y = 1;
  int zp = 0;
  // kI8: the activation's bounds and int8's saturation as one range of y = v / y_scale before
  // rounding (rounding is monotonic, so clamping first gives QuantizeLinear's bytes)
  float sat_lo = 0, sat_hi = 0;
};
__device__ __forceinline__ float clamp_act(const Epi& e, float v) {
  v = v < e.lo ? e.lo : v;  // NaN stays NaN
  return v > e.hi ? e.hi : v;
}
template <int kMode>
__device__ __forceinline__ float out_float(const SmallCDesc& d, const Epi& e, float v) {
  if constexpr (kMode == kGeneric) return apply_act(d.act, v, d.alpha, d.beta);
  return clamp_act(e, v);
}
template <int kMode>
__device__ __forceinline__ uint32_t out_byte(const SmallCDesc& d, const Epi& e, float v) {
  if constexpr (kMode == kI8) {
    // round half to even without the conversion unit: the low byte of y + 1.5 * 2^23, plus the
    // zero point (NaN sums give the lowest byte of the range)
    const float y = fminf(fmaxf(v * e.inv_y, e.sat_lo), e.sat_hi);
    return (__float_as_uint(y + 12582912.0f) + static_cast<uint32_t>(e.zp)) & 0xffu;
  }
  if constexpr (kMode == kE4M3) return fast_byte<true>(clamp_act(e, v) * e.inv_y, 0);
  return byte_of(d.y_t, apply_act(d.act, v, d.alpha, d.beta) / d.y_scale, d.y_zp);
}
__host__ __device__ inline Mode mode_of(const SmallCDesc& d) {
  const bool fast_act = d.act == Act::kNone || d.act == Act::kRelu || d.act == Act::kClip;
  if (!fast_act) return kGeneric;
  if (d.y_t == DataType::kFloat32) return kF32;
  if (d.y_t == DataType::kInt8) return kI8;
  if (d.y_t == DataType::kFloat8E4M3FN && d.y_zp == 0.0f) return kE4M3;
  return kGeneric;
}

// The quantized fast modes stage bytes ([128][kLdB]), the others float32 ([128][kLd]).
constexpr int kLdB = kBN + 16;
__host__ __device__ constexpr bool byte_stage(int mode) {
  return mode == kI8 || mode == kE4M3;
}

struct Geometry {
  int pr, pc;        // patch rows, columns
  int patch_floats;  // pr * pc * c
  int stage_bytes;   // the epilogue's tile of 128 pixels
  size_t smem;       // weights + max(patch, stage) + tap table (+ 8) + bias
};
__host__ __device__ inline Geometry geometry_of(const SmallCDesc& d) {
  Geometry g;
  g.pr = (kTP - 1) * d.sh + (d.kh - 1) * d.dh + 1;
  g.pc = (kTQ - 1) * d.sw + (d.kw - 1) * d.dw + 1;
  g.patch_floats = g.pr * g.pc * d.c;
  g.stage_bytes = byte_stage(mode_of(d)) ? kTP * kTQ * kLdB : kTP * kTQ * kLd * 4;
  const int patch_bytes = g.patch_floats * 4;
  g.smem = static_cast<size_t>(d.kred_pad) * kBN * 4 +
           static_cast<size_t>(patch_bytes > g.stage_bytes ? patch_bytes : g.stage_bytes) +
           static_cast<size_t>(d.kred_pad + 8) * 4 + kBN * 4;
  return g;
}

template <int kMode>
__global__ void __launch_bounds__(kSmallCThreads, 4)
    conv_small_c_kernel(const float* __restrict__ x, const float* __restrict__ w,
                        const float* __restrict__ bias, void* __restrict__ y, SmallCDesc d) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Geometry geo = geometry_of(d);
  float* wsm = reinterpret_cast<float*>(smem);                 // [kred_pad / 8][4][32][4]
  float* patch = wsm + static_cast<size_t>(d.kred_pad) * kBN;  // [pr][pc][c]
  float* stage = patch;                                        // reuses the patch
  const int region =
      geo.patch_floats * 4 > geo.stage_bytes ? geo.patch_floats * 4 : geo.stage_bytes;
  int* koff = reinterpret_cast<int*>(reinterpret_cast<unsigned char*>(patch) + region);
  float* bsm = reinterpret_cast<float*>(koff + d.kred_pad + 8);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int nb = blockIdx.y, n0 = nb * kBN;
  {
    const float4* src =
        reinterpret_cast<const float4*>(w + static_cast<size_t>(nb) * d.kred_pad * kBN);
    float4* dst = reinterpret_cast<float4*>(wsm);
    for (int i = tid; i < d.kred_pad * kBN / 4; i += kSmallCThreads) dst[i] = __ldg(src + i);
  }
  for (int k = tid; k < d.kred_pad + 8; k += kSmallCThreads) {  // + 8: the loop's prefetch
    int off = 0;  // past the reduction: any finite element (its weight is 0)
    if (k < d.kred) {
      const int c = k % d.c, s = (k / d.c) % d.kw, r = k / (d.c * d.kw);
      off = (r * d.dh * geo.pc + s * d.dw) * d.c + c;
    }
    koff[k] = off;
  }
  for (int i = tid; i < kBN; i += kSmallCThreads)
    bsm[i] = bias && n0 + i < d.k ? bias[n0 + i] : 0.0f;

  const int tiles_p = (d.oh + kTP - 1) / kTP, tiles_q = (d.ow + kTQ - 1) / kTQ;
  const int64_t tiles = static_cast<int64_t>(d.n) * tiles_p * tiles_q;
  const bool quantized =
      kMode == kI8 || kMode == kE4M3 || (kMode == kGeneric && d.y_t != DataType::kFloat32);
  Epi epi;
  epi.lo = d.act == Act::kNone ? -INFINITY : (d.act == Act::kClip ? d.alpha : 0.0f);
  epi.hi = d.act == Act::kClip ? d.beta : INFINITY;
  epi.inv_y = 1.0f / d.y_scale;
  epi.zp = static_cast<int>(d.y_zp);
  epi.sat_lo = fmaxf(epi.lo * epi.inv_y, -128.0f - static_cast<float>(epi.zp));
  epi.sat_hi = fminf(epi.hi * epi.inv_y, 127.0f - static_cast<float>(epi.zp));
  const int ksteps = d.kred_pad / 8;
  // This thread's A rows: output rows 2 * warp + i, columns g and g + 8.
  int base[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      base[i][h] = ((2 * warp + i) * d.sh * geo.pc + (g + 8 * h) * d.sw) * d.c;

  // NCHW staging: this thread's first patch element (channel, row, column) and the step of
  // kSmallCThreads elements in rows and columns.
  const int nchw_dcol = kSmallCThreads % geo.pc, nchw_drow = kSmallCThreads / geo.pc;
  const int nchw_c0 = tid / (geo.pr * geo.pc), nchw_row0 = tid / geo.pc % geo.pr,
            nchw_col0 = tid % geo.pc;

  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int tq = static_cast<int>(tile % tiles_q);
    const int tp = static_cast<int>((tile / tiles_q) % tiles_p);
    const int n = static_cast<int>(tile / (static_cast<int64_t>(tiles_q) * tiles_p));
    const int p0 = tp * kTP, q0 = tq * kTQ;
    const int h0 = p0 * d.sh - d.ph, w0 = q0 * d.sw - d.pw;
    __syncthreads();  // the previous tile's stage is read out; weights / tables written
    // One patch row per warp pass (no index division per element), 4-byte cp.async copies
    // (zeros outside the image), all in flight at once: NHWC rows are pc * c contiguous floats,
    // NCHW rows pc floats of one channel.
    if (d.x_nhwc) {
      const int row_len = geo.pc * d.c, lo = max(0, -w0) * d.c, hi = min(geo.pc, d.w - w0) * d.c;
      for (int row = warp; row < geo.pr; row += kSmallCThreads / 32) {
        const int hh = h0 + row;
        const bool in_h = hh >= 0 && hh < d.h;
        const float* src = x + ((static_cast<int64_t>(n) * d.h + (in_h ? hh : 0)) * d.w + w0) * d.c;
        for (int i = lane; i < row_len; i += 32) {
          const bool valid = in_h && i >= lo && i < hi;
          cp_async4(patch + row * row_len + i, valid ? src + i : x, valid);
        }
      }
    } else {
      // NCHW: the patch's (channel, row, column) elements flattened, this thread's every
      // kSmallCThreads-th one, its indices advanced by carries (no division per element: the
      // per-row loop with a division per channel row cost ~37% of the kernel's instructions).
      const int lo = max(0, -w0), hi = min(geo.pc, d.w - w0);
      const float* img = x + static_cast<int64_t>(n) * d.c * d.h * d.w + w0;
      int c = nchw_c0, row = nchw_row0, col = nchw_col0;
      for (int e = tid; e < geo.patch_floats; e += kSmallCThreads) {
        const int hh = h0 + row;
        const bool valid =
            static_cast<unsigned>(hh) < static_cast<unsigned>(d.h) && col >= lo && col < hi;
        const float* src = img + (static_cast<int64_t>(c) * d.h + hh) * d.w + col;
        cp_async4(patch + (row * geo.pc + col) * d.c + c, valid ? src : x, valid);
        col += nchw_dcol;
        row += nchw_drow;
        while (col >= geo.pc) {
          col -= geo.pc;
          ++row;
        }
        while (row >= geo.pr) {
          row -= geo.pr;
          ++c;
        }
      }
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    float acc[2][8][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
    const float4* wf = reinterpret_cast<const float4*>(wsm) + lane;
    int k0 = koff[t], k1 = koff[t + 4];
#pragma unroll 2
    for (int kk = 0; kk < ksteps; ++kk) {
      uint32_t a[2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        a[i][0] = tf32_bits(patch[base[i][0] + k0]);
        a[i][1] = tf32_bits(patch[base[i][1] + k0]);
        a[i][2] = tf32_bits(patch[base[i][0] + k1]);
        a[i][3] = tf32_bits(patch[base[i][1] + k1]);
      }
      k0 = koff[kk * 8 + 8 + t];  // the next step's taps (the table has 8 spare entries)
      k1 = koff[kk * 8 + 12 + t];
#pragma unroll
      for (int jp = 0; jp < 4; ++jp) {
        const float4 b = wf[(kk * 4 + jp) * 32];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          mma_tf32(acc[i][2 * jp], a[i], __float_as_uint(b.x), __float_as_uint(b.y));
          mma_tf32(acc[i][2 * jp + 1], a[i], __float_as_uint(b.z), __float_as_uint(b.w));
        }
      }
    }
    __syncthreads();  // the patch is dead: the stage reuses it

    const int kvalid = d.k - n0 < kBN ? d.k - n0 : kBN;
    if constexpr (byte_stage(kMode)) {
      // The epilogue on the fragments, the bytes into the stage [128 pixels][kLdB], then 16-byte
      // stores (channels-last, K % 16 == 0) or one byte per job.
      unsigned char* sb = reinterpret_cast<unsigned char*>(stage);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          unsigned char* px = sb + ((2 * warp + i) * kTQ + g + 8 * h) * kLdB;
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const int ch = 8 * j + 2 * t;
            const uint32_t b0 = out_byte<kMode>(d, epi, acc[i][j][2 * h] + bsm[ch]);
            const uint32_t b1 = out_byte<kMode>(d, epi, acc[i][j][2 * h + 1] + bsm[ch + 1]);
            *reinterpret_cast<uint16_t*>(px + ch) = static_cast<uint16_t>(b0 | (b1 << 8));
          }
        }
      __syncthreads();
      unsigned char* yb = static_cast<unsigned char*>(y);
      if (d.y_nhwc && d.k % 16 == 0) {
        const int groups = kvalid / 16;
        for (int e = tid; e < kTP * kTQ * groups; e += kSmallCThreads) {
          const int pix = e / groups, c16 = (e % groups) * 16;
          const int p = p0 + pix / kTQ, q = q0 + pix % kTQ;
          if (p >= d.oh || q >= d.ow) continue;
          *reinterpret_cast<uint4*>(yb + ((static_cast<int64_t>(n) * d.oh + p) * d.ow + q) * d.k +
                                    n0 + c16) =
              *reinterpret_cast<const uint4*>(sb + pix * kLdB + c16);
        }
      } else {
        for (int e = tid; e < kTP * kTQ * kvalid; e += kSmallCThreads) {
          const int pix = d.y_nhwc ? e / kvalid : e % (kTP * kTQ);
          const int ch = d.y_nhwc ? e % kvalid : e / (kTP * kTQ);
          const int p = p0 + pix / kTQ, q = q0 + pix % kTQ;
          if (p >= d.oh || q >= d.ow) continue;
          yb[d.y_nhwc ? ((static_cast<int64_t>(n) * d.oh + p) * d.ow + q) * d.k + n0 + ch
                      : ((static_cast<int64_t>(n) * d.k + n0 + ch) * d.oh + p) * d.ow + q] =
              sb[pix * kLdB + ch];
        }
      }
    } else {
      // The sums (+ bias) into the stage, float32 [128 pixels][kLd]: pixel (row 2 * warp + i,
      // column g + 8 * h), channel 8 * j + 2 * t.
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float* px = stage + ((2 * warp + i) * kTQ + g + 8 * h) * kLd;
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const int ch = 8 * j + 2 * t;
            *reinterpret_cast<float2*>(px + ch) =
                make_float2(acc[i][j][2 * h] + bsm[ch], acc[i][j][2 * h + 1] + bsm[ch + 1]);
          }
        }
      __syncthreads();

      if (d.y_nhwc && d.k % 16 == 0) {
        // 16 channels of one pixel per job: 16-byte loads from the stage, 16-byte stores.
        const int groups = kvalid / 16;
        for (int e = tid; e < kTP * kTQ * groups; e += kSmallCThreads) {
          const int pix = e / groups, c16 = (e % groups) * 16;
          const int p = p0 + pix / kTQ, q = q0 + pix % kTQ;
          if (p >= d.oh || q >= d.ow) continue;
          const int64_t dst = ((static_cast<int64_t>(n) * d.oh + p) * d.ow + q) * d.k + n0 + c16;
          const float4* src = reinterpret_cast<const float4*>(stage + pix * kLd + c16);
          float v[16];
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const float4 f = src[u];
            v[4 * u] = f.x;
            v[4 * u + 1] = f.y;
            v[4 * u + 2] = f.z;
            v[4 * u + 3] = f.w;
          }
          if (quantized) {
            uint32_t word[4] = {0, 0, 0, 0};
#pragma unroll
            for (int u = 0; u < 16; ++u)
              word[u / 4] |= out_byte<kMode>(d, epi, v[u]) << (8 * (u % 4));
            *reinterpret_cast<uint4*>(static_cast<unsigned char*>(y) + dst) =
                make_uint4(word[0], word[1], word[2], word[3]);
          } else {
            float4* yf = reinterpret_cast<float4*>(static_cast<float*>(y) + dst);
#pragma unroll
            for (int u = 0; u < 4; ++u)
              yf[u] = make_float4(
                  out_float<kMode>(d, epi, v[4 * u]), out_float<kMode>(d, epi, v[4 * u + 1]),
                  out_float<kMode>(d, epi, v[4 * u + 2]), out_float<kMode>(d, epi, v[4 * u + 3]));
          }
        }
      } else {
        // One element per job: channels-last (channel fastest) or NCHW (column fastest).
        for (int e = tid; e < kTP * kTQ * kvalid; e += kSmallCThreads) {
          int pix, ch;
          if (d.y_nhwc) {
            pix = e / kvalid;
            ch = e % kvalid;
          } else {
            pix = e % (kTP * kTQ);
            ch = e / (kTP * kTQ);
          }
          const int p = p0 + pix / kTQ, q = q0 + pix % kTQ;
          if (p >= d.oh || q >= d.ow) continue;
          const int64_t dst =
              d.y_nhwc ? ((static_cast<int64_t>(n) * d.oh + p) * d.ow + q) * d.k + n0 + ch
                       : ((static_cast<int64_t>(n) * d.k + n0 + ch) * d.oh + p) * d.ow + q;
          const float v = stage[pix * kLd + ch];
          if (quantized) {
            static_cast<unsigned char*>(y)[dst] =
                static_cast<unsigned char>(out_byte<kMode>(d, epi, v));
          } else {
            static_cast<float*>(y)[dst] = out_float<kMode>(d, epi, v);
          }
        }
      }
    }
  }
}

float tf32_round_host(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) {  // finite: round half away from zero (cvt.rna)
    u += 0x1000u;
    u &= 0xffffe000u;
  }
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

bool small_c_supported(const SmallCDesc& d) {
  if (d.c < 1 || d.c > kSmallCMaxChannels || d.k < 1 || d.kred_pad > kSmallCMaxReduction ||
      d.kred_pad % 8 != 0 || d.kred_pad < d.kred || d.oh < 1 || d.ow < 1 || d.n < 1)
    return false;
  if (d.y_t != DataType::kFloat32 && d.y_t != DataType::kInt8 && d.y_t != DataType::kUInt8 &&
      d.y_t != DataType::kFloat8E4M3FN && d.y_t != DataType::kFloat8E5M2)
    return false;
  const Geometry g = geometry_of(d);
  const int64_t in = static_cast<int64_t>(d.n) * d.c * d.h * d.w;
  const int64_t out = static_cast<int64_t>(d.n) * d.k * d.oh * d.ow;
  return g.patch_floats <= kSmallCMaxPatch && in < (int64_t{1} << 31) && out < (int64_t{1} << 31) &&
         (d.k + kBN - 1) / kBN <= 65535;
}

std::vector<float> small_c_pack_weights(const float* w_kcrs, const SmallCDesc& d) {
  const int nblocks = (d.k + kBN - 1) / kBN;
  std::vector<float> out(static_cast<size_t>(nblocks) * d.kred_pad * kBN, 0.0f);
  // Element (kk, jp, lane, e): channel n0 + 16 jp + 8 (e / 2) + lane / 4, reduction index
  // 8 kk + lane % 4 + 4 (e % 2): the mma's b0 / b1 of n-tiles 2 jp and 2 jp + 1.
  for (int nb = 0; nb < nblocks; ++nb)
    for (int kk = 0; kk < d.kred_pad / 8; ++kk)
      for (int jp = 0; jp < 4; ++jp)
        for (int lane = 0; lane < 32; ++lane)
          for (int e = 0; e < 4; ++e) {
            const int ch = nb * kBN + 16 * jp + 8 * (e / 2) + lane / 4;
            const int kr = 8 * kk + lane % 4 + 4 * (e % 2);
            float v = 0.0f;
            if (ch < d.k && kr < d.kred) {
              const int c = kr % d.c, s = (kr / d.c) % d.kw, r = kr / (d.c * d.kw);
              v = w_kcrs[((static_cast<size_t>(ch) * d.c + c) * d.kh + r) * d.kw + s];
            }
            out[(((static_cast<size_t>(nb) * (d.kred_pad / 8) + kk) * 4 + jp) * 32 + lane) * 4 +
                e] = tf32_round_host(v);
          }
  return out;
}

cudaError_t conv_small_c(const SmallCDesc& d, const float* x, const float* w_packed,
                         const float* bias, void* y, cudaStream_t stream) {
  if (!small_c_supported(d) || reinterpret_cast<uintptr_t>(w_packed) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(y) % 16 != 0)
    return cudaErrorNotSupported;
  const Geometry g = geometry_of(d);
  int device = 0, sms = 0, optin = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e != cudaSuccess) return e;
  if (g.smem > static_cast<size_t>(optin)) return cudaErrorNotSupported;
  const Mode mode = mode_of(d);
  auto* kernel = mode == kF32    ? conv_small_c_kernel<kF32>
                 : mode == kI8   ? conv_small_c_kernel<kI8>
                 : mode == kE4M3 ? conv_small_c_kernel<kE4M3>
                                 : conv_small_c_kernel<kGeneric>;
  // Every problem's shared memory fits under the device's opt-in maximum (set once per mode).
  static cudaError_t attr[4] = {cudaErrorNotReady, cudaErrorNotReady, cudaErrorNotReady,
                                cudaErrorNotReady};
  if (attr[mode] == cudaErrorNotReady)
    attr[mode] = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
  if (attr[mode] != cudaSuccess) return attr[mode];
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kSmallCThreads, g.smem);
  if (e != cudaSuccess) return e;
  const int64_t tiles =
      static_cast<int64_t>(d.n) * ((d.oh + kTP - 1) / kTP) * ((d.ow + kTQ - 1) / kTQ);
  const int64_t nblocks = (d.k + kBN - 1) / kBN;
  const int64_t resident =
      std::max<int64_t>(1, static_cast<int64_t>(std::max(1, sms)) * std::max(1, per_sm) / nblocks);
  const dim3 grid(static_cast<unsigned>(std::min(tiles, resident)), static_cast<unsigned>(nblocks));
  kernel<<<grid, kSmallCThreads, g.smem, stream>>>(x, w_packed, bias, y, d);
  return cudaGetLastError();
}

}  // namespace trtutils::cuda::k
