// Data-movement kernels (by element size): strided copy (Transpose, Slice, Expand), Gather, Pad,
// and the byte im2cols of the quantized convolutions (channels-last: vectorised chunks).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/kernel_switches.h"

namespace trtutils::cuda::k {

namespace {

template <typename U>
__global__ void strided_copy_kernel(const U* x, U* y, Broadcast bc, int64_t offset, int64_t n) {
  TRT_GRID_STRIDE(i, n) {
    y[i] = x[offset + broadcast_offset(bc, 0, static_cast<uint32_t>(i))];
  }
}

// y[a][c][b] = x[offset + a * sa + b * sb + c]: a batched transpose (the output's inner axis
// strided in the source) through 32 x 32 tiles in shared memory, so that both the reads (along c)
// and the writes (along b) are coalesced; the element-wise strided copy read one element per
// 32-byte sector there (ViT-B/16's patch tokens, [256, 768, 196] -> [256, 196, 768] float32:
// 23% of the bandwidth).
template <typename U>
__global__ void transpose_tile_kernel(const U* x, U* y, int64_t offset, int64_t na, int64_t sa,
                                      int64_t nb, int64_t sb, int64_t nc) {
  __shared__ U tile[32][33];
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * 32,
                b0 = static_cast<int64_t>(blockIdx.y) * 32;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  for (int64_t a = blockIdx.z; a < na; a += gridDim.z) {
    const U* xa = x + offset + a * sa;
    U* ya = y + a * nb * nc;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t b = b0 + ty + 8 * k, c = c0 + tx;
      if (b < nb && c < nc) tile[ty + 8 * k][tx] = xa[b * sb + c];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t c = c0 + ty + 8 * k, b = b0 + tx;
      if (c < nc && b < nb) ya[c * nb + b] = tile[tx][ty + 8 * k];
    }
    __syncthreads();
  }
}

// rows x width bytes between pitched buffers in U-sized words (Concat, Split): a row per
// blockIdx.y (a grid stride beyond 65,535 rows), the row's words over blockIdx.x; short rows
// (kFlat) as one range of rows * words.
template <typename U, bool kFlat>
__global__ void copy_rows_kernel(uint8_t* dst, size_t dpitch, const uint8_t* src, size_t spitch,
                                 int64_t words, int64_t rows) {
  if constexpr (kFlat) {
    const int32_t w = static_cast<int32_t>(words), n = static_cast<int32_t>(words * rows);
    for (int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x); i < n;
         i += static_cast<int32_t>(gridDim.x * blockDim.x)) {
      const int32_t r = i / w, c = i - r * w;
      reinterpret_cast<U*>(dst + static_cast<size_t>(r) * dpitch)[c] =
          reinterpret_cast<const U*>(src + static_cast<size_t>(r) * spitch)[c];
    }
  } else {
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
      const U* s = reinterpret_cast<const U*>(src + static_cast<size_t>(r) * spitch);
      U* d = reinterpret_cast<U*>(dst + static_cast<size_t>(r) * dpitch);
      for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
           i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        d[i] = s[i];
    }
  }
}

template <typename U, typename I>
__global__ void gather_kernel(const U* x, const I* idx, U* y, int64_t axis_len, int64_t k,
                              int64_t inner, int64_t n) {
  TRT_GRID_STRIDE(i, n) {
    const int64_t in = i % inner;
    const int64_t t = i / inner;
    const int64_t j = t % k;
    const int64_t o = t / k;
    int64_t a = static_cast<int64_t>(idx[j]);
    if (a < 0) a += axis_len;
    a = a < 0 ? 0 : (a >= axis_len ? axis_len - 1 : a);  // the host checks host-known indices
    y[i] = x[(o * axis_len + a) * inner + in];
  }
}

template <typename U>
__global__ void pad_kernel(const U* x, U* y, PadDesc p, U value, int64_t n) {
  TRT_GRID_STRIDE(i, n) {
    int64_t rem = i, src = 0, stride = 1;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rem % p.out[d];
      rem /= p.out[d];
      int64_t s = c - p.pad_begin[d];
      const int64_t len = p.in[d];
      if (s < 0 || s >= len) {
        if (p.mode == 0 || len == 0) {
          inside = false;
        } else if (p.mode == 1) {
          s = s < 0 ? 0 : len - 1;
        } else if (p.mode == 2) {
          const int64_t period = 2 * (len - 1);
          if (period == 0) {
            s = 0;
          } else {
            s = s % period;
            if (s < 0) s += period;
            if (s >= len) s = period - s;
          }
        } else {
          s = s % len;
          if (s < 0) s += len;
        }
      }
      src += s * stride;
      stride *= len;
    }
    y[i] = inside ? x[src] : value;
  }
}

__global__ void im2col_kernel(const uint8_t* x, uint8_t* col, Im2ColDesc d, int64_t n) {
  const PoolDesc& g = d.geo;
  const int64_t positions = g.out[0] * g.out[1] * g.out[2];
  const int64_t ksz = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const int64_t kreal = d.channels * ksz;
  TRT_GRID_STRIDE(i, n) {
    const int64_t kc = i % d.kp;
    const int64_t row = i / d.kp;
    if (kc >= kreal) {
      col[i] = 0;
      continue;
    }
    const int64_t b = row / positions, p = row % positions;
    const int64_t c = kc / ksz;
    int64_t kk = kc % ksz;
    const int64_t kw = kk % g.kernel[2];
    kk /= g.kernel[2];
    const int64_t kh = kk % g.kernel[1];
    const int64_t kd = kk / g.kernel[1];
    const int64_t ow = p % g.out[2];
    const int64_t oh = (p / g.out[2]) % g.out[1];
    const int64_t od = p / (g.out[2] * g.out[1]);
    const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
    const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
    const int64_t iw = ow * g.stride[2] - g.pad_begin[2] + kw * g.dilation[2];
    uint8_t v = d.pad_value;
    if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2])
      v = d.channels_last
              ? x[(((b * g.in[0] + id) * g.in[1] + ih) * g.in[2] + iw) * d.channels + c]
              : x[(((b * d.channels + c) * g.in[0] + id) * g.in[1] + ih) * g.in[2] + iw];
    col[i] = v ^ d.xor_mask;
  }
}

// V: the chunk moved per thread (uint8_t, uint32_t, uint2, uint4); 32-bit words of a chunk.
template <typename V>
struct Chunk {
  static constexpr int kWords = sizeof(V) >= 4 ? static_cast<int>(sizeof(V) / 4) : 0;
  __device__ static V fill(uint8_t byte) {
    if constexpr (kWords == 0) {
      return byte;
    } else {
      const uint32_t w = 0x01010101u * byte;
      V v;
      uint32_t* p = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
      for (int k = 0; k < kWords; ++k) p[k] = w;
      return v;
    }
  }
  __device__ static V xor_with(V v, uint8_t byte) {
    if constexpr (kWords == 0) {
      return static_cast<uint8_t>(v ^ byte);
    } else {
      const uint32_t w = 0x01010101u * byte;
      uint32_t* p = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
      for (int k = 0; k < kWords; ++k) p[k] ^= w;
      return v;
    }
  }
};

template <typename V>
__global__ void im2col_nhwc_kernel(const uint8_t* x, uint8_t* col, Im2ColNhwcDesc d, int64_t n) {
  constexpr int kBytes = static_cast<int>(sizeof(V));
  const int64_t per_row = d.kp / kBytes;
  const int32_t kreal = d.kh * d.kw * d.c;
  TRT_GRID_STRIDE(i, n) {
    const int64_t row64 = i / per_row;
    const int32_t q = static_cast<int32_t>(i - row64 * per_row) * kBytes;
    const int32_t row = static_cast<int32_t>(row64);
    V v;
    if (q >= kreal) {
      v = Chunk<V>::fill(0);
    } else {
      const int32_t tap = q / d.c, c = q - tap * d.c;
      const int32_t a = tap / d.kw, b = tap - a * d.kw;
      const int32_t ow = row % d.ow, t = row / d.ow;
      const int32_t oh = t % d.oh, nb = t / d.oh;
      const int32_t ih = oh * d.sh - d.ph + a * d.dh, iw = ow * d.sw - d.pw + b * d.dw;
      if (ih >= 0 && ih < d.h && iw >= 0 && iw < d.w) {
        const int64_t src = ((static_cast<int64_t>(nb) * d.h + ih) * d.w + iw) * d.c + c;
        v = Chunk<V>::xor_with(*reinterpret_cast<const V*>(x + src), d.xor_mask);
      } else {
        v = Chunk<V>::fill(static_cast<uint8_t>(d.pad_value ^ d.xor_mask));
      }
    }
    *reinterpret_cast<V*>(col + i * kBytes) = v;
  }
}

__global__ void xor_kernel(const uint8_t* x, uint8_t* y, int64_t n, uint8_t mask) {
  TRT_GRID_STRIDE(i, n) {
    y[i] = x[i] ^ mask;
  }
}

}  // namespace

namespace {

// The copy's axes with size-1 axes dropped and neighbours merged where the source is contiguous
// across them (the output always is): fewer divisions per element.
Broadcast coalesced(const Broadcast& bc) {
  Broadcast c;
  for (int d = 0; d < bc.rank; ++d) {
    if (bc.dims[d] == 1) continue;
    if (c.rank > 0 &&
        c.strides[0][c.rank - 1] == bc.strides[0][d] * bc.dims[d]) {  // merge into the previous
      c.dims[c.rank - 1] *= bc.dims[d];
      c.strides[0][c.rank - 1] = bc.strides[0][d];
      continue;
    }
    c.dims[c.rank] = bc.dims[d];
    c.strides[0][c.rank] = bc.strides[0][d];
    ++c.rank;
  }
  if (c.rank == 0) {
    c.rank = 1;
    c.dims[0] = 1;
    c.strides[0][0] = 1;
  }
  return c;
}

// Bytes per element the copy can move at once: the innermost axis contiguous in the source,
// its byte length, the other strides, the offset and both pointers multiples of it.
size_t widest(const Broadcast& c, size_t esz, int64_t offset, const void* x, const void* y) {
  if (c.strides[0][c.rank - 1] != 1) return esz;
  const auto ux = reinterpret_cast<uintptr_t>(x), uy = reinterpret_cast<uintptr_t>(y);
  for (size_t w : {size_t{16}, size_t{8}, size_t{4}}) {
    if (w <= esz) break;
    bool ok = (c.dims[c.rank - 1] * esz) % w == 0 && (offset * esz) % w == 0 && ux % w == 0 &&
              uy % w == 0;
    for (int d = 0; ok && d + 1 < c.rank; ++d) ok = (c.strides[0][d] * esz) % w == 0;
    if (ok) return w;
  }
  return esz;
}

template <typename U>
__global__ void resize_nearest_kernel(const U* x, U* y, ResizeNearestDesc d, U fill, int64_t n) {
  TRT_GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    bool outside = false;
#pragma unroll
    for (int a = kMaxRank - 1; a >= 0; --a) {
      if (a >= d.rank) continue;
      const int64_t o = rem % d.out[a];
      rem /= d.out[a];
      const int64_t t = d.table[a][o];
      outside = outside || t < 0;
      off += t;
    }
    y[i] = outside ? fill : x[off];
  }
}

// Element i of the linear resize, in the CPU kernel's (ONNX Runtime's) order: corners of the
// outer resized axes enumerated innermost-fastest, weights multiplied innermost first, the last
// axis' two taps inside each corner. Round-to-nearest products and sums (no FMA contraction),
// as the CPU computes them.
template <typename T>
__global__ void resize_linear_kernel(const T* x, T* y, ResizeLinearDesc d, int64_t n) {
  TRT_GRID_STRIDE(i, n) {
    const int last = d.rank - 1;
    int64_t rem = i, base = 0, o_idx[kMaxRank] = {};
    bool outside = false;
    for (int a = last; a >= 0; --a) {
      const int64_t o = rem % d.out[a];
      rem /= d.out[a];
      o_idx[a] = o;
      if (!d.resized[a]) {
        if (a != last) base += o * d.in_strides[a];
      } else {
        outside = outside || d.outside[a][o] != 0;
      }
    }
    if (outside) {
      y[i] = from_float<T>(d.extrapolation);
      continue;
    }
    int outer[3];
    int kr = 0;
    for (int a = 0; a < last; ++a)
      if (d.resized[a] && kr < 3) outer[kr++] = a;
    const int combos = 1 << kr;
    float acc = 0.0f;
    const int64_t xo = o_idx[last];
    for (int c = 0; c < combos; ++c) {
      int64_t off = base;
      float wc[3];
      for (int j = 0; j < kr; ++j) {  // j = 0: the innermost outer axis
        const int a = outer[kr - 1 - j];
        const bool second = (c >> j) & 1;
        const int64_t o = o_idx[a];
        wc[j] = second ? d.w2[a][o] : d.w1[a][o];
        off += (second ? d.i2[a][o] : d.i1[a][o]) * d.in_strides[a];
      }
      if (!d.resized[last]) {
        float w = kr > 0 ? wc[0] : 1.0f;
        for (int j = 1; j < kr; ++j) w = __fmul_rn(w, wc[j]);
        const float v = to_float(x[off + xo]);
        if (kr == 0) {
          acc = v;
        } else {
          acc = c == 0 ? __fmul_rn(w, v) : __fadd_rn(acc, __fmul_rn(w, v));
        }
        continue;
      }
      float wa = d.w1[last][xo], wb = d.w2[last][xo];
      for (int j = 0; j < kr; ++j) {
        wa = __fmul_rn(wa, wc[j]);
        wb = __fmul_rn(wb, wc[j]);
      }
      const float ta = __fmul_rn(wa, to_float(x[off + d.i1[last][xo]]));
      acc = c == 0 ? ta : __fadd_rn(acc, ta);
      acc = __fadd_rn(acc, __fmul_rn(wb, to_float(x[off + d.i2[last][xo]])));
    }
    y[i] = from_float<T>(acc);
  }
}

}  // namespace

cudaError_t resize_nearest(size_t esz, const void* x, void* y, const ResizeNearestDesc& d,
                           int64_t numel, uint64_t fill, cudaStream_t stream) {
  if (numel <= 0) return cudaSuccess;
  const bool ok = dispatch_size(esz, [&](auto tag) {
    using U = decltype(tag);
    U f;
    memcpy(&f, &fill, sizeof(U));
    resize_nearest_kernel<U><<<blocks_for(numel), kThreads, 0, stream>>>(
        static_cast<const U*>(x), static_cast<U*>(y), d, f, numel);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t resize_linear(DataType dt, const void* x, void* y, const ResizeLinearDesc& d,
                          int64_t numel, cudaStream_t stream) {
  if (numel <= 0) return cudaSuccess;
  const bool ok = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    resize_linear_kernel<T><<<blocks_for(numel), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), d, numel);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t strided_copy(size_t esz, const void* x, void* y, const Broadcast& bc, int64_t offset,
                         int64_t numel, cudaStream_t stream) {
  if (numel <= 0) return cudaSuccess;
  Broadcast c = coalesced(bc);
  // [a,] c, b output axes with c contiguous in the source and b strided: the tiled transpose.
  const int r = c.rank;
  // TRTUTILS_CUDA_TRANSPOSE_TILED=0: the element-wise copy only (A/B).
  const char* tiled_sw = switch_value("TRTUTILS_CUDA_TRANSPOSE_TILED");
  const bool tiled = !(tiled_sw && tiled_sw[0] == '0');
  if (tiled && (r == 2 || r == 3) && c.strides[0][r - 2] == 1 && c.strides[0][r - 1] > 1 &&
      c.dims[r - 2] >= 16 && c.dims[r - 1] >= 16 && (c.dims[r - 1] + 31) / 32 <= 65535) {
    const int64_t na = r == 3 ? c.dims[0] : 1, sa = r == 3 ? c.strides[0][0] : 0;
    const int64_t nc = c.dims[r - 2], nb = c.dims[r - 1], sb = c.strides[0][r - 1];
    const dim3 grid(static_cast<unsigned>((nc + 31) / 32), static_cast<unsigned>((nb + 31) / 32),
                    static_cast<unsigned>(std::min<int64_t>(na, 65535)));
    const bool ok = dispatch_size(esz, [&](auto tag) {
      using U = decltype(tag);
      transpose_tile_kernel<U><<<grid, dim3(32, 8), 0, stream>>>(
          static_cast<const U*>(x), static_cast<U*>(y), offset, na, sa, nb, sb, nc);
    });
    if (ok) return cudaGetLastError();
  }
  const size_t w = widest(c, esz, offset, x, y);
  if (w != esz) {  // whole vectors of the innermost axis per thread
    const int64_t f = static_cast<int64_t>(w / esz);
    for (int d = 0; d + 1 < c.rank; ++d) c.strides[0][d] /= f;
    c.dims[c.rank - 1] /= f;
    offset /= f;
    numel /= f;
  }
  if (w == 16) {
    strided_copy_kernel<uint4><<<blocks_for(numel), kThreads, 0, stream>>>(
        static_cast<const uint4*>(x), static_cast<uint4*>(y), c, offset, numel);
    return cudaGetLastError();
  }
  const bool ok = dispatch_size(w, [&](auto tag) {
    using U = decltype(tag);
    strided_copy_kernel<U><<<blocks_for(numel), kThreads, 0, stream>>>(
        static_cast<const U*>(x), static_cast<U*>(y), c, offset, numel);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t copy_rows(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                      size_t rows, cudaStream_t stream) {
  if (width == 0 || rows == 0) return cudaSuccess;
  // The widest word that divides the width, both pitches and both pointers.
  size_t w = 16;
  const auto fits = [&](size_t v) { return v % w == 0; };
  while (w > 1 &&
         !(fits(width) && fits(dpitch) && fits(spitch) && fits(reinterpret_cast<uintptr_t>(dst)) &&
           fits(reinterpret_cast<uintptr_t>(src))))
    w /= 2;
  const int64_t words = static_cast<int64_t>(width / w), n = static_cast<int64_t>(rows);
  const bool flat = words < 128 && words * n < (int64_t{1} << 30);
  const int64_t per_row = std::min<int64_t>((words + kThreads - 1) / kThreads, 1024);
  const dim3 grid = flat ? dim3(blocks_for(words * n))
                         : dim3(static_cast<unsigned>(per_row),
                                static_cast<unsigned>(std::min<size_t>(rows, 65535)));
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  auto launch = [&](auto tag) {
    using U = decltype(tag);
    if (flat)
      copy_rows_kernel<U, true><<<grid, kThreads, 0, stream>>>(d, dpitch, s, spitch, words, n);
    else
      copy_rows_kernel<U, false><<<grid, kThreads, 0, stream>>>(d, dpitch, s, spitch, words, n);
  };
  if (w == 16) {
    launch(uint4{});
    return cudaGetLastError();
  }
  return dispatch_size(w, launch) ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t gather(size_t esz, const void* x, const void* indices, bool indices_int64, void* y,
                   int64_t outer, int64_t axis_len, int64_t num_indices, int64_t inner,
                   cudaStream_t stream) {
  const int64_t n = outer * num_indices * inner;
  if (n <= 0) return cudaSuccess;
  const bool ok = dispatch_size(esz, [&](auto tag) {
    using U = decltype(tag);
    if (indices_int64)
      gather_kernel<U, int64_t><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const U*>(x), static_cast<const int64_t*>(indices), static_cast<U*>(y),
          axis_len, num_indices, inner, n);
    else
      gather_kernel<U, int32_t><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const U*>(x), static_cast<const int32_t*>(indices), static_cast<U*>(y),
          axis_len, num_indices, inner, n);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t pad(size_t esz, const void* x, void* y, const PadDesc& p, int64_t numel,
                cudaStream_t stream) {
  if (numel <= 0) return cudaSuccess;
  const bool ok = dispatch_size(esz, [&](auto tag) {
    using U = decltype(tag);
    pad_kernel<U><<<blocks_for(numel), kThreads, 0, stream>>>(
        static_cast<const U*>(x), static_cast<U*>(y), p, static_cast<U>(p.value), numel);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t im2col(const void* x, void* col, const Im2ColDesc& d, cudaStream_t stream) {
  const int64_t rows = d.batch * d.geo.out[0] * d.geo.out[1] * d.geo.out[2];
  const int64_t n = rows * d.kp;
  if (n <= 0) return cudaSuccess;
  im2col_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint8_t*>(x),
                                                        static_cast<uint8_t*>(col), d, n);
  return cudaGetLastError();
}

cudaError_t im2col_nhwc(const void* x, void* col, const Im2ColNhwcDesc& d, cudaStream_t stream) {
  const int64_t rows = static_cast<int64_t>(d.batch) * d.oh * d.ow;
  if (rows <= 0 || d.kp <= 0) return cudaSuccess;
  if (rows >= (int64_t{1} << 31)) return cudaErrorNotSupported;
  const auto* xp = static_cast<const uint8_t*>(x);
  auto* cp = static_cast<uint8_t*>(col);
  // Vector loads need the chunk to divide C (and kp) and both buffers aligned to it.
  const auto aligned = [&](int b) {
    return d.c % b == 0 && d.kp % b == 0 && reinterpret_cast<uintptr_t>(x) % b == 0 &&
           reinterpret_cast<uintptr_t>(col) % b == 0;
  };
  if (aligned(16)) {
    const int64_t n = rows * (d.kp / 16);
    im2col_nhwc_kernel<uint4><<<blocks_for(n), kThreads, 0, stream>>>(xp, cp, d, n);
  } else if (aligned(8)) {
    const int64_t n = rows * (d.kp / 8);
    im2col_nhwc_kernel<uint2><<<blocks_for(n), kThreads, 0, stream>>>(xp, cp, d, n);
  } else if (aligned(4)) {
    const int64_t n = rows * (d.kp / 4);
    im2col_nhwc_kernel<uint32_t><<<blocks_for(n), kThreads, 0, stream>>>(xp, cp, d, n);
  } else {
    const int64_t n = rows * d.kp;
    im2col_nhwc_kernel<uint8_t><<<blocks_for(n), kThreads, 0, stream>>>(xp, cp, d, n);
  }
  return cudaGetLastError();
}

cudaError_t xor_bytes(const void* x, void* y, int64_t n, uint8_t mask, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  xor_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint8_t*>(x),
                                                     static_cast<uint8_t*>(y), n, mask);
  return cudaGetLastError();
}

}  // namespace trtutils::cuda::k
