// Float32 convolutions with few input channels (the stem of image models: 3 colour channels,
// 7x7 stride 2 in ResNet) on the TF32 tensor cores, with bias, activation and, optionally, a
// per-tensor quantization of the output fused (the QuantizeLinear that follows the stem in a
// Q/DQ model).
//
// cuDNN's kernels for C = 3 either pad the channels to a tensor-core multiple or run on the
// FMA units (ResNet-50's stem at batch 256: 1.79 ms, 34 TFLOP/s, then 0.53 ms to quantize the
// 822 MB float32 output). Here the reduction runs over the C * R * S taps of one output pixel
// (147 for the stem, padded to a multiple of 8), so nothing is wasted on padding channels:
//   - a block owns one 64-channel slice of K (its weights, packed on the host in mma fragment
//     order and rounded to TF32, stay in shared memory) and has two warpgroups, each walking its
//     own output tiles of 8 rows x 16 columns of one image (a persistent grid-stride loop, so the
//     weights load once per block);
//   - per tile, the input patch the tile reads ((8 - 1) * sh + (R - 1) * dh + 1 rows,
//     (16 - 1) * sw + (S - 1) * dw + 1 columns, C channels; zeros outside the image) is staged in
//     shared memory, planar ([c][row][column], rows padded to 16 bytes), by cp.async copies: 16
//     bytes from NCHW X whose rows allow it (W % 4 == 0), else 4 bytes; then rounded to TF32 in
//     place once. With a byte output the next tile's patch is copied while this one computes;
//   - each warp computes two output rows (two m16 tiles) x 64 channels: on Hopper (sm_90a) two
//     wgmma m64n64k8 per 8 taps per warpgroup, A from registers, the weights through a shared
//     memory descriptor (stored in wgmma's interleaved K-major layout); elsewhere mma.sync
//     m16n8k8. An A element is patch[pixel base + tap offset] (tap offsets from a table, reduction
//     order k = (c * R + r) * S + s);
//   - the epilogue (bias, activation, then float32 or value / y_scale + zero point as int8 /
//     uint8 / float8, QuantizeLinear's arithmetic; int8 / E4M3 as one FMA by 1 / y_scale plus a
//     per-channel bias * (1 / y_scale), a clamp and the rounding, within one step) stages the tile
//     in shared memory and stores it with 16-byte writes (channels-last Y) or along the rows (NCHW
//     Y).
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/wgmma.cuh"

namespace trtutils::cuda::k {

namespace {

constexpr int kTP = 8;           // output rows per tile
constexpr int kTQ = 16;          // output columns per tile (one m16 tile)
constexpr int kBN = 64;          // output channels per block
constexpr int kWgThreads = 128;  // one warpgroup
constexpr int kWarpgroups = 2;   // per block
constexpr int kSmallCThreads = kWgThreads * kWarpgroups;
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

__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

__device__ __forceinline__ void mma_tf32(float* c, const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The epilogue. Fast modes (no activation, ReLU or Clip as a clamp): float32 output, or int8 and
// E4M3 bytes from one FMA by 1 / y_scale (fold_byte: within one step of QuantizeLinear's
// division), a few instructions per element. kGeneric: every activation, uint8 / E5M2 / zero
// points, QuantizeLinear's exact arithmetic (byte_of).
enum Mode : int { kF32 = 0, kI8 = 1, kE4M3 = 2, kGeneric = 3 };
struct Epi {
  float lo = 0, hi = 0, inv_y = 1;
  // The byte modes' range of y = sum * inv_y + cb before rounding: the activation's bounds (and
  // for kI8 int8's saturation, with the zero point) in y; rounding is monotonic, so clamping
  // first gives QuantizeLinear's bytes.
  float lo_y = 0, hi_y = 0;
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
// The float stages' quantized output (kGeneric).
__device__ __forceinline__ uint32_t out_byte(const SmallCDesc& d, float v) {
  return byte_of(d.y_t, apply_act(d.act, v, d.alpha, d.beta) / d.y_scale, d.y_zp);
}
// The byte stages' epilogue: y = sum * inv_y + cb, cb = bias * inv_y (+ zp for kI8) from the
// block's table, one FMA where the bias add and the scale were two. The byte is the low 8 bits.
template <int kMode>
__device__ __forceinline__ uint32_t fold_byte(const Epi& e, float sum, float cb) {
  float y = fmaf(sum, e.inv_y, cb);
  if constexpr (kMode == kI8) {
    y = fminf(fmaxf(y, e.lo_y), e.hi_y);      // NaN: the lowest byte of the range
    return __float_as_uint(y + 12582912.0f);  // low byte: round half to even, two's complement
  } else {
    y = y < e.lo_y ? e.lo_y : y;  // NaN stays NaN
    return fast_byte<true>(y > e.hi_y ? e.hi_y : y, 0);
  }
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
  int sh4;           // patch column 0 sits at this column of its row (image column = 0 mod 4)
  int pitch;         // floats per patch row: sh4 + pc rounded up to 4
  int patch_floats;  // c * pr * pitch (the patch is planar: [c][pr][pitch])
  int patch_bytes;   // rounded up to 16
  int stage_bytes;   // the epilogue's tile of 128 pixels
  int wg_bytes;      // one warpgroup's patches + stage
  size_t smem;       // weights + kWarpgroups * wg_bytes + tap table + bias
};
__host__ __device__ inline Geometry geometry_of(const SmallCDesc& d) {
  Geometry g;
  g.pr = (kTP - 1) * d.sh + (d.kh - 1) * d.dh + 1;
  g.pc = (kTQ - 1) * d.sw + (d.kw - 1) * d.dw + 1;
  g.sh4 = ((-d.pw) % 4 + 4) % 4;  // tiles start at columns q0 * sw - pw, q0 % 16 == 0
  g.pitch = (g.sh4 + g.pc + 3) / 4 * 4;
  g.patch_floats = d.c * g.pr * g.pitch;
  g.patch_bytes = g.patch_floats * 4;
  // The byte stages prefetch: two patch buffers and a stage of their own.
  const bool prefetch = byte_stage(mode_of(d));
  g.stage_bytes = prefetch ? kTP * kTQ * kLdB : kTP * kTQ * kLd * 4;
  g.wg_bytes = prefetch ? 2 * g.patch_bytes + g.stage_bytes
                        : (g.patch_bytes > g.stage_bytes ? g.patch_bytes : g.stage_bytes);
  g.smem = static_cast<size_t>(d.kred_pad) * kBN * 4 +
           static_cast<size_t>(kWarpgroups) * g.wg_bytes + static_cast<size_t>(d.kred_pad + 8) * 4 +
           kBN * 4;
  return g;
}

// Barrier of one warpgroup's 128 threads (named barrier 1 + wg; 0 is __syncthreads). Immediate
// ids, so that the compiler reserves only the barriers used.
__device__ __forceinline__ void wg_bar(int wg) {
  if (wg == 0) {
    asm volatile("bar.sync 1, 128;\n" ::: "memory");
  } else {
    asm volatile("bar.sync 2, 128;\n" ::: "memory");
  }
}

// A block is kWarpgroups warpgroups that share the 64-channel slice of weights in shared memory;
// each warpgroup walks its own tiles with its own patch and stage (synchronised by wg_bar).
// The byte-output modes prefetch: the next tile's patch copies are issued before this tile's
// MMAs, into a second buffer, so their latency hides behind the MMAs and the epilogue.
// kWgmma (sm_90a, launched only where wgmma_available()): each step's two m64n64k8 MMAs take A
// from the threads' registers (the same fragments) and the weights straight from shared memory,
// stored there in wgmma's K-major interleaved layout; the next step's fragments load while one
// step's MMAs run.
template <int kMode, bool kWgmma>
__global__ void __launch_bounds__(kSmallCThreads, 2)
    conv_small_c_kernel(const float* __restrict__ x, const float* __restrict__ w,
                        const float* __restrict__ bias, void* __restrict__ y, SmallCDesc d) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Geometry geo = geometry_of(d);
  constexpr bool kPrefetch = byte_stage(kMode);
  float* wsm = reinterpret_cast<float*>(smem);  // [kred_pad / 8][4][32][4]
  unsigned char* regions = smem + static_cast<size_t>(d.kred_pad) * kBN * 4;
  // Tap offsets in the patch (bytes), paired per step and lane: koff[kk * 4 + t] = taps
  // kk * 8 + t and + 4; one spare step (the loop loads a step ahead).
  int2* koff = reinterpret_cast<int2*>(regions + static_cast<size_t>(kWarpgroups) * geo.wg_bytes);
  float* bsm = reinterpret_cast<float*>(koff + d.kred_pad / 2 + 4);

  const int tid = threadIdx.x, lane = tid & 31;
  const int wg = tid / kWgThreads, wtid = tid % kWgThreads, warp = wtid >> 5;  // in the warpgroup
  const int g = lane >> 2, t = lane & 3;
  const int nb = blockIdx.y, n0 = nb * kBN;
  // This warpgroup's patch buffers (planar [c][pr][pitch] floats) and stage.
  unsigned char* region = regions + static_cast<size_t>(wg) * geo.wg_bytes;
  auto patch_buffer = [&](int i) {  // i: 0 or 1 (one buffer without prefetch)
    return reinterpret_cast<float*>(region + (kPrefetch ? i * geo.patch_bytes : 0));
  };
  float* const stage = reinterpret_cast<float*>(kPrefetch ? region + 2 * geo.patch_bytes : region);
  {
    const float4* src =
        reinterpret_cast<const float4*>(w + static_cast<size_t>(nb) * d.kred_pad * kBN);
    if constexpr (kWgmma) {
      // Fragment order (k-step kk, n-pair jp, lane, e) -> the interleaved layout: channel
      // 16 jp + 8 (e / 2) + lane / 4, reduction index lane % 4 + 4 (e % 2) of step kk sit at
      // float kk * 512 + (4 jp + e) * 32 + lane (core matrices of 8 channels x 4 taps, 128 B
      // apart along K, 256 B apart along N).
      for (int i = tid; i < d.kred_pad * kBN / 4; i += kSmallCThreads) {
        const float4 v = __ldg(src + i);
        float* dst = wsm + (i >> 5) * 128 + (i & 31);
        dst[0] = v.x;
        dst[32] = v.y;
        dst[64] = v.z;
        dst[96] = v.w;
      }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
      fence_proxy_async_shared();  // the weights, visible to wgmma (after the barrier below)
#endif
    } else {
      float4* dst = reinterpret_cast<float4*>(wsm);
      for (int i = tid; i < d.kred_pad * kBN / 4; i += kSmallCThreads) dst[i] = __ldg(src + i);
    }
  }
  for (int k = tid; k < d.kred_pad + 8; k += kSmallCThreads) {
    int off = 0;       // past the reduction: any finite element (its weight is 0)
    if (k < d.kred) {  // reduction order (c, r, s), s fastest (small_c_pack_weights')
      const int s = k % d.kw, r = (k / d.kw) % d.kh, c = k / (d.kw * d.kh);
      off = ((c * geo.pr + r * d.dh) * geo.pitch + s * d.dw) * 4;
    }
    int* pair = reinterpret_cast<int*>(koff + (k / 8) * 4 + k % 4);
    pair[(k % 8) / 4] = off;
  }
  const bool quantized =
      kMode == kI8 || kMode == kE4M3 || (kMode == kGeneric && d.y_t != DataType::kFloat32);
  Epi epi;
  epi.lo = d.act == Act::kNone ? -INFINITY : (d.act == Act::kClip ? d.alpha : 0.0f);
  epi.hi = d.act == Act::kClip ? d.beta : INFINITY;
  epi.inv_y = 1.0f / d.y_scale;
  const float zp = kMode == kI8 ? d.y_zp : 0.0f;  // kI8's zero point, folded into cb
  epi.lo_y = epi.lo * epi.inv_y + zp;
  epi.hi_y = epi.hi * epi.inv_y + zp;
  if constexpr (kMode == kI8) {  // int8's saturation
    epi.lo_y = fmaxf(epi.lo_y, -128.0f);
    epi.hi_y = fminf(epi.hi_y, 127.0f);
  }
  // Per channel: the bias (float stages), or cb of fold_byte (byte stages).
  for (int i = tid; i < kBN; i += kSmallCThreads) {
    const float b = bias && n0 + i < d.k ? bias[n0 + i] : 0.0f;
    bsm[i] = !byte_stage(kMode) ? b : b * epi.inv_y + zp;
  }
  __syncthreads();  // weights and tables written

  const int tiles_p = (d.oh + kTP - 1) / kTP, tiles_q = (d.ow + kTQ - 1) / kTQ;
  const int ksteps = d.kred_pad / 8;
  // This thread's A rows (output rows 2 * warp + i, columns g and g + 8): the byte offset of the
  // first one's first tap in a patch; the others are i * row_bytes + h * half_bytes further.
  const int base = (2 * warp * d.sh * geo.pitch + g * d.sw + geo.sh4) * 4;
  const int row_bytes = d.sh * geo.pitch * 4, half_bytes = 8 * d.sw * 4;

  // Staging of NCHW X by 16-byte copies (W % 4 == 0, X 16-byte aligned, so that every 4-column
  // chunk of a patch row is wholly inside or outside the image): this thread's chunk column and
  // first (channel, row) patch row; kWgThreads / cpr rows per pass.
  const int cpr = geo.pitch / 4;
  const bool vec4 =
      !d.x_nhwc && d.w % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && cpr <= kWgThreads;
  const int v_rows = vec4 ? kWgThreads / cpr : 1, v_chunk = vec4 ? wtid % cpr : 0;
  const int v_slot = vec4 ? wtid / cpr : kWgThreads;
  const bool v_active = vec4 && wtid < v_rows * cpr;  // the rest would repeat slot v_rows

  // Tile coordinates (image, tile row, tile column), advanced by the grid's stride of tiles
  // with carries (no 64-bit division per tile).
  struct TileAt {
    int n, tp, tq;
  };
  // (int: fewer tiles than outputs, < 2^31 by small_c_supported)
  const int stride = static_cast<int>(gridDim.x) * kWarpgroups;
  const TileAt step{stride / (tiles_q * tiles_p), stride / tiles_q % tiles_p, stride % tiles_q};
  auto advance = [&](TileAt at) {
    at.tq += step.tq;
    const int cq = at.tq >= tiles_q ? 1 : 0;
    at.tq -= cq * tiles_q;
    at.tp += step.tp + cq;
    const int cp = at.tp >= tiles_p ? 1 : 0;
    at.tp -= cp * tiles_p;
    at.n += step.n + cp;
    return at;
  };
  // The copies of a tile's input patch into `patch` (planar [c][pr][pitch]; zeros outside the
  // image), all in flight at once, indices advanced by carries (no division per copy).
  auto load_patch = [&](const TileAt& at, float* patch) {
    const int h0 = at.tp * kTP * d.sh - d.ph;
    const int w0 = at.tq * kTQ * d.sw - d.pw - geo.sh4;  // image column of patch column 0
    if (vec4) {
      if (!v_active) return;
      const int col = w0 + 4 * v_chunk;
      const float* img = x + static_cast<int64_t>(at.n) * d.c * d.h * d.w + col;
      const bool in_w = col >= 0 && col < d.w;
      // Patch row rho = (channel, row): its image row h0 + row, and its offset in the image
      // (int: an image has < 2^31 elements), advanced with rho.
      int row = v_slot, off = (h0 + v_slot) * d.w;
      while (row >= geo.pr) {  // a few times at most: v_slot < kWgThreads
        row -= geo.pr;
        off += (d.h - geo.pr) * d.w;
      }
      float* dst = patch + v_slot * geo.pitch + 4 * v_chunk;
      for (int rho = v_slot; rho < d.c * geo.pr; rho += v_rows) {
        const bool valid = in_w && static_cast<unsigned>(h0 + row) < static_cast<unsigned>(d.h);
        cp_async16(dst, valid ? img + off : x, valid);
        dst += v_rows * geo.pitch;
        row += v_rows;
        off += v_rows * d.w;
        while (row >= geo.pr) {
          row -= geo.pr;
          off += (d.h - geo.pr) * d.w;
        }
      }
    } else if (d.x_nhwc) {
      // One patch row per warp pass; copies strided by C in X (a rare layout for a stem).
      for (int row = warp; row < geo.pr; row += kWgThreads / 32) {
        const int hh = h0 + row;
        const bool in_h = hh >= 0 && hh < d.h;
        const float* src = x + (static_cast<int64_t>(at.n) * d.h + (in_h ? hh : 0)) * d.w * d.c;
        for (int c = 0; c < d.c; ++c)
          for (int col = lane; col < geo.pitch; col += 32) {
            const bool valid = in_h && w0 + col >= 0 && w0 + col < d.w;
            cp_async4(patch + (c * geo.pr + row) * geo.pitch + col,
                      valid ? src + static_cast<int64_t>(w0 + col) * d.c + c : x, valid);
          }
      }
    } else {
      // 4-byte copies: this thread's first patch element (channel, row, column), then steps of
      // kWgThreads elements.
      const float* img = x + static_cast<int64_t>(at.n) * d.c * d.h * d.w;
      const int e_dcol = kWgThreads % geo.pitch, e_drow = kWgThreads / geo.pitch;
      int c = wtid / (geo.pr * geo.pitch), row = wtid / geo.pitch % geo.pr, col = wtid % geo.pitch;
      for (int e = wtid; e < geo.patch_floats; e += kWgThreads) {
        const int hh = h0 + row, ww = w0 + col;
        const bool valid = static_cast<unsigned>(hh) < static_cast<unsigned>(d.h) &&
                           static_cast<unsigned>(ww) < static_cast<unsigned>(d.w);
        cp_async4(patch + e, valid ? img + (static_cast<int64_t>(c) * d.h + hh) * d.w + ww : x,
                  valid);
        col += e_dcol;
        row += e_drow;
        while (col >= geo.pitch) {
          col -= geo.pitch;
          ++row;
        }
        while (row >= geo.pr) {
          row -= geo.pr;
          ++c;
        }
      }
    }
  };

  const int tile0 = static_cast<int>(blockIdx.x) * kWarpgroups + wg;
  TileAt at{tile0 / (tiles_q * tiles_p), tile0 / tiles_q % tiles_p, tile0 % tiles_q};
  if (kPrefetch && at.n < d.n) load_patch(at, patch_buffer(0));
  cp_async_commit();
  for (int it = 0; at.n < d.n; ++it) {
    const int p0 = at.tp * kTP, q0 = at.tq * kTQ, n = at.n;
    float* patch = patch_buffer(it & 1);
    if constexpr (kPrefetch) {
      // The next tile's patch into the other buffer (its last reader, the previous tile's MMAs,
      // finished before that tile's epilogue barrier).
      const TileAt next = advance(at);
      if (next.n < d.n) load_patch(next, patch_buffer((it + 1) & 1));
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      wg_bar(wg);  // the previous tile's stage (the same memory) is read out
      load_patch(at, patch_buffer(0));
      cp_async_commit();
      cp_async_wait<0>();
    }
    wg_bar(wg);  // this tile's patch landed for every thread
    {
      // Rounded to TF32 in place, once per element (the MMAs read each element ~40 times).
      float4* p4 = reinterpret_cast<float4*>(patch);
      for (int i = wtid; i < geo.patch_floats / 4; i += kWgThreads) {
        float4 v = p4[i];
        v.x = __uint_as_float(tf32_bits(v.x));
        v.y = __uint_as_float(tf32_bits(v.y));
        v.z = __uint_as_float(tf32_bits(v.z));
        v.w = __uint_as_float(tf32_bits(v.w));
        p4[i] = v;
      }
      wg_bar(wg);
    }

    // acc[i][4 j + r]: output row 2 * warp + i, n8 tile j, element r of the m16n8 fragment
    // (wgmma's accumulator layout, and mma.sync's per n8 tile): channel 8 j + 2 t + r % 2.
    float acc[2][32];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int r = 0; r < 32; ++r) acc[i][r] = 0.0f;
    // Shared addresses of this thread's A rows in this patch; the taps of the next step.
    uint32_t pa[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        pa[i][h] = smem_addr(patch) + base + i * row_bytes + h * half_bytes;
    int2 knext = koff[t];
    // Step kk's A fragments (taps kk * 8 + t and + 4), then the next step's taps.
    auto load_a = [&](uint32_t(&a)[2][4], int kk) {
      const int2 k = knext;
      knext = koff[kk * 4 + 4 + t];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        a[i][0] = lds32(pa[i][0] + k.x);
        a[i][1] = lds32(pa[i][1] + k.x);
        a[i][2] = lds32(pa[i][0] + k.y);
        a[i][3] = lds32(pa[i][1] + k.y);
      }
    };
    if constexpr (kWgmma) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
      wgmma_fence_operands(acc[0]);
      wgmma_fence_operands(acc[1]);
      // Two fragment sets: a step's MMAs read theirs until wgmma_wait says they are done.
      const uint64_t wdesc = wgmma_desc_interleave(smem_addr(wsm), 128, 256);
      uint32_t a0[2][4], a1[2][4];
      // Step kk's weights: 2048 bytes further (the address field, in the low 32 bits, never
      // carries into the high half).
      const uint32_t wlo = static_cast<uint32_t>(wdesc), whi = static_cast<uint32_t>(wdesc >> 32);
      auto issue = [&](const uint32_t(&a)[2][4], int kk) {
        const uint64_t db = (static_cast<uint64_t>(whi) << 32) | (wlo + kk * (2048 / 16));
        wgmma_fence();
        wgmma_tf32_rs64(acc[0], a[0], db);
        wgmma_tf32_rs64(acc[1], a[1], db);
        wgmma_commit();
      };
      load_a(a0, 0);
      for (int kk = 0; kk < ksteps; kk += 2) {
        issue(a0, kk);
        if (kk + 1 < ksteps) {
          wgmma_wait<1>();  // step kk - 1's MMAs are done: a1 is free
          load_a(a1, kk + 1);
          issue(a1, kk + 1);
        }
        wgmma_wait<1>();  // step kk's are done: a0 is free
        if (kk + 2 < ksteps) load_a(a0, kk + 2);
      }
      wgmma_wait<0>();
      wgmma_fence_operands(acc[0]);
      wgmma_fence_operands(acc[1]);
#else
      __trap();  // launched only where wgmma_available()
#endif
    } else {
      const float4* wf = reinterpret_cast<const float4*>(wsm) + lane;
#pragma unroll 2
      for (int kk = 0; kk < ksteps; ++kk) {
        uint32_t a[2][4];
        load_a(a, kk);
#pragma unroll
        for (int jp = 0; jp < 4; ++jp) {
          const float4 b = wf[(kk * 4 + jp) * 32];
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            mma_tf32(&acc[i][8 * jp], a[i], __float_as_uint(b.x), __float_as_uint(b.y));
            mma_tf32(&acc[i][8 * jp + 4], a[i], __float_as_uint(b.z), __float_as_uint(b.w));
          }
        }
      }
    }
    if constexpr (!kPrefetch) wg_bar(wg);  // the patch is dead: the stage reuses it

    const int kvalid = d.k - n0 < kBN ? d.k - n0 : kBN;
    if constexpr (byte_stage(kMode)) {
      // The epilogue on the fragments, the bytes into the stage [128 pixels][kLdB], then 16-byte
      // stores (channels-last, K % 16 == 0) or one byte per job.
      unsigned char* sb = reinterpret_cast<unsigned char*>(stage);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int ch = 8 * j + 2 * t;
        const float2 cb = *reinterpret_cast<const float2*>(bsm + ch);
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const uint32_t b0 = fold_byte<kMode>(epi, acc[i][4 * j + 2 * h], cb.x);
            const uint32_t b1 = fold_byte<kMode>(epi, acc[i][4 * j + 2 * h + 1], cb.y);
            *reinterpret_cast<uint16_t*>(sb + ((2 * warp + i) * kTQ + g + 8 * h) * kLdB + ch) =
                static_cast<uint16_t>(__byte_perm(b0, b1, 0x0040));
          }
      }
      wg_bar(wg);
      unsigned char* yb = static_cast<unsigned char*>(y);
      if (d.y_nhwc && kvalid == kBN) {
        // A whole 64-channel slice: pixel wtid / 4 + 32 u (rows 2 u apart), 16 channels.
        const int pix = wtid >> 2, c16 = (wtid & 3) * 16, q = q0 + (pix & 15);
        const int p = p0 + (pix >> 4);
        if (q < d.ow) {
          // (int offsets: Y has < 2^31 elements)
          unsigned char* dst = yb + (((n * d.oh + p) * d.ow + q) * d.k + n0 + c16);
          const int rows2 = 2 * d.ow * d.k;
#pragma unroll
          for (int u = 0; u < 4; ++u)
            if (p + 2 * u < d.oh)
              *reinterpret_cast<uint4*>(dst + u * rows2) =
                  *reinterpret_cast<const uint4*>(sb + (pix + 32 * u) * kLdB + c16);
        }
      } else if (d.y_nhwc && d.k % 16 == 0) {
        const int groups = kvalid / 16;
        for (int e = wtid; e < kTP * kTQ * groups; e += kWgThreads) {
          const int pix = e / groups, c16 = (e % groups) * 16;
          const int p = p0 + pix / kTQ, q = q0 + pix % kTQ;
          if (p >= d.oh || q >= d.ow) continue;
          *reinterpret_cast<uint4*>(yb + ((static_cast<int64_t>(n) * d.oh + p) * d.ow + q) * d.k +
                                    n0 + c16) =
              *reinterpret_cast<const uint4*>(sb + pix * kLdB + c16);
        }
      } else {
        for (int e = wtid; e < kTP * kTQ * kvalid; e += kWgThreads) {
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
            *reinterpret_cast<float2*>(px + ch) = make_float2(
                acc[i][4 * j + 2 * h] + bsm[ch], acc[i][4 * j + 2 * h + 1] + bsm[ch + 1]);
          }
        }
      wg_bar(wg);

      if (d.y_nhwc && d.k % 16 == 0) {
        // 16 channels of one pixel per job: 16-byte loads from the stage, 16-byte stores.
        const int groups = kvalid / 16;
        for (int e = wtid; e < kTP * kTQ * groups; e += kWgThreads) {
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
            for (int u = 0; u < 16; ++u) word[u / 4] |= out_byte(d, v[u]) << (8 * (u % 4));
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
        for (int e = wtid; e < kTP * kTQ * kvalid; e += kWgThreads) {
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
            static_cast<unsigned char*>(y)[dst] = static_cast<unsigned char>(out_byte(d, v));
          } else {
            static_cast<float*>(y)[dst] = out_float<kMode>(d, epi, v);
          }
        }
      }
    }
    at = advance(at);
  }
  cp_async_wait<0>();
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
            if (ch < d.k && kr < d.kred) {  // reduction order (c, r, s), s fastest
              const int s = kr % d.kw, r = (kr / d.kw) % d.kh, c = kr / (d.kw * d.kh);
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
  const bool wgmma = wgmma_available();
  auto* kernel = wgmma ? (mode == kF32    ? conv_small_c_kernel<kF32, true>
                          : mode == kI8   ? conv_small_c_kernel<kI8, true>
                          : mode == kE4M3 ? conv_small_c_kernel<kE4M3, true>
                                          : conv_small_c_kernel<kGeneric, true>)
                       : (mode == kF32    ? conv_small_c_kernel<kF32, false>
                          : mode == kI8   ? conv_small_c_kernel<kI8, false>
                          : mode == kE4M3 ? conv_small_c_kernel<kE4M3, false>
                                          : conv_small_c_kernel<kGeneric, false>);
  // Every problem's shared memory fits under the device's opt-in maximum (set once per kernel).
  static cudaError_t attr[8] = {cudaErrorNotReady, cudaErrorNotReady, cudaErrorNotReady,
                                cudaErrorNotReady, cudaErrorNotReady, cudaErrorNotReady,
                                cudaErrorNotReady, cudaErrorNotReady};
  cudaError_t& set = attr[mode + (wgmma ? 4 : 0)];
  if (set == cudaErrorNotReady)
    set = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
  if (set != cudaSuccess) return set;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kSmallCThreads, g.smem);
  if (e != cudaSuccess) return e;
  // Blocks of kWarpgroups tiles at a time.
  const int64_t tiles =
      (static_cast<int64_t>(d.n) * ((d.oh + kTP - 1) / kTP) * ((d.ow + kTQ - 1) / kTQ) +
       kWarpgroups - 1) /
      kWarpgroups;
  const int64_t nblocks = (d.k + kBN - 1) / kBN;
  const int64_t resident =
      std::max<int64_t>(1, static_cast<int64_t>(std::max(1, sms)) * std::max(1, per_sm) / nblocks);
  const dim3 grid(static_cast<unsigned>(std::min(tiles, resident)), static_cast<unsigned>(nblocks));
  kernel<<<grid, kSmallCThreads, g.smem, stream>>>(x, w_packed, bias, y, d);
  return cudaGetLastError();
}

}  // namespace trtutils::cuda::k
