// IsNaN / IsInf, Hardmax and ONNX NonMaxSuppression (contracts: misc_kernels.h).
// NonMaxSuppression, in two steps like com.trtutils::EfficientNMS (nms_kernels.cu):
//   1. sort: each (batch, class) segment's boxes get a 64-bit key, score descending in the high
//      word and the box index ascending in the low word (the CPU's stable order), non-candidates
//      the largest key; one segmented radix sort (CUB) orders every segment at once.
//   2. suppress: one block per segment walks its sorted candidates in chunks of one per thread:
//      each thread tests its candidate against the boxes kept so far and marks the earlier
//      candidates of its chunk that would suppress it; one thread then resolves the chunk in
//      order, which is the CPU's greedy loop, chunk by chunk. Corners and IoU are computed in
//      double with round-to-nearest intrinsics (no multiply-add contraction), as the CPU does.
// The host reads the per-segment counts, sizes the output and a last kernel writes the triples.
#include <cub/device/device_segmented_radix_sort.cuh>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/misc_kernels.h"

namespace trtutils::cuda::k {
namespace {

// ---- IsNaN / IsInf --------------------------------------------------------------------------
template <typename T>
__global__ void float_class_kernel(FloatClassArgs a) {
  const T* x = static_cast<const T*>(a.x);
  TRT_GRID_STRIDE(i, a.n) {
    double v;
    if constexpr (std::is_same_v<T, double>)
      v = x[i];
    else
      v = static_cast<double>(to_float(x[i]));
    a.y[i] = a.nan ? isnan(v) : (isinf(v) && ((v > 0 && a.positive) || (v < 0 && a.negative)));
  }
}

// ---- Hardmax --------------------------------------------------------------------------------
template <typename T>
__global__ void hardmax_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  TRT_GRID_STRIDE(e, outer * inner) {
    const int64_t o = e / inner, j = e - o * inner;
    const T* xs = x + o * n * inner + j;
    T* ys = y + o * n * inner + j;
    float mx = -INFINITY;
    int64_t arg = 0;
    for (int64_t k = 0; k < n; ++k) {
      const float v = to_float(xs[k * inner]);
      if (v > mx) {
        mx = v;
        arg = k;
      }
    }
    for (int64_t k = 0; k < n; ++k) ys[k * inner] = from_float<T>(k == arg ? 1.0f : 0.0f);
  }
}

// ---- NonMaxSuppression ----------------------------------------------------------------------
constexpr int kChunk = 256;  // candidates per step = threads per block
constexpr uint64_t kNone = ~uint64_t{0};

struct Corners {
  double c[4];  // y1, x1, y2, x2 (the CPU kernel's order)
};

template <typename T>
__device__ __forceinline__ double load_d(const T* p, int64_t i) {
  return static_cast<double>(to_float(p[i]));
}

template <typename T>
__device__ Corners corners(const T* boxes, int64_t box, bool center) {
  double v[4];
  for (int d = 0; d < 4; ++d) v[d] = load_d(boxes, box * 4 + d);
  if (center) {  // x_center, y_center, width, height
    const double h2 = __ddiv_rn(v[3], 2.0), w2 = __ddiv_rn(v[2], 2.0);
    return {{__dsub_rn(v[1], h2), __dsub_rn(v[0], w2), __dadd_rn(v[1], h2), __dadd_rn(v[0], w2)}};
  }
  return {{fmin(v[0], v[2]), fmin(v[1], v[3]), fmax(v[0], v[2]), fmax(v[1], v[3])}};
}

__device__ bool suppresses(const Corners& a, const Corners& b, double th) {
  const double ih = __dsub_rn(fmin(a.c[2], b.c[2]), fmax(a.c[0], b.c[0]));
  const double iw = __dsub_rn(fmin(a.c[3], b.c[3]), fmax(a.c[1], b.c[1]));
  if (ih <= 0 || iw <= 0) return false;
  const double area_a = __dmul_rn(__dsub_rn(a.c[2], a.c[0]), __dsub_rn(a.c[3], a.c[1]));
  const double area_b = __dmul_rn(__dsub_rn(b.c[2], b.c[0]), __dsub_rn(b.c[3], b.c[1]));
  if (area_a <= 0 || area_b <= 0) return false;
  const double inter = __dmul_rn(ih, iw);
  return __ddiv_rn(inter, __dsub_rn(__dadd_rn(area_a, area_b), inter)) > th;
}

template <typename T>
__global__ void nms_keys(OnnxNmsArgs a, uint64_t* keys) {
  const T* scores = static_cast<const T*>(a.scores);
  TRT_GRID_STRIDE(i, a.batch * a.classes * a.boxes_n) {
    const float s = to_float(scores[i]);
    const bool candidate = !a.has_score_threshold || static_cast<double>(s) > a.score_threshold;
    keys[i] = candidate ? (static_cast<uint64_t>(descending_bits(s)) << 32) |
                              static_cast<uint64_t>(i % a.boxes_n)
                        : kNone;
  }
}

__global__ void nms_offsets(int64_t per_segment, int segments, int* offsets) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= segments) offsets[i] = static_cast<int>(i * per_segment);
}

struct Layout {
  size_t keys, sorted, offsets, kept, kept_corners, counts, cub_temp, cub_bytes, total;
  int64_t cap;  // kept boxes per segment at most
};

size_t align256(size_t v) {
  return (v + 255) / 256 * 256;
}

Layout layout(const OnnxNmsArgs& a) {
  const int64_t segments = a.batch * a.classes;
  const size_t total = static_cast<size_t>(segments * a.boxes_n);
  Layout s{};
  s.cap = a.max_out < a.boxes_n ? a.max_out : a.boxes_n;
  size_t at = 0;
  auto take = [&](size_t& field, size_t bytes) {
    field = at;
    at += align256(bytes);
  };
  take(s.keys, total * sizeof(uint64_t));
  take(s.sorted, total * sizeof(uint64_t));
  take(s.offsets, static_cast<size_t>(segments + 1) * sizeof(int));
  take(s.kept, static_cast<size_t>(segments * s.cap) * sizeof(int32_t));
  take(s.kept_corners, static_cast<size_t>(segments * s.cap) * sizeof(Corners));
  take(s.counts, static_cast<size_t>(segments) * sizeof(int32_t));
  s.cub_temp = at;
  cub::DeviceSegmentedRadixSort::SortKeys(
      nullptr, s.cub_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<int>(total), static_cast<int>(segments), static_cast<const int*>(nullptr),
      static_cast<const int*>(nullptr), 0, 64);
  s.total = at + align256(s.cub_bytes);
  return s;
}

template <typename T>
__global__ void __launch_bounds__(kChunk)
    nms_suppress(const OnnxNmsArgs a, const uint64_t* sorted, int64_t cap, int32_t* kept_all,
                 Corners* kept_corners, int32_t* counts) {
  const int64_t seg = blockIdx.x;
  const int64_t b = seg / a.classes;
  const T* boxes = static_cast<const T*>(a.boxes) + b * a.boxes_n * 4;
  const uint64_t* keys = sorted + seg * a.boxes_n;
  int32_t* kept = kept_all + seg * cap;
  Corners* kc = kept_corners + seg * cap;
  __shared__ Corners cand[kChunk];
  __shared__ int32_t cand_box[kChunk];
  __shared__ bool alive[kChunk];
  __shared__ uint32_t mask[kChunk][kChunk / 32];  // j < i suppresses i
  __shared__ int num_kept, num_valid;
  if (threadIdx.x == 0) num_kept = 0;
  __syncthreads();
  for (int64_t base = 0; base < a.boxes_n && cap > 0; base += kChunk) {
    const int t = threadIdx.x;
    const int64_t pos = base + t;
    const uint64_t key = pos < a.boxes_n ? keys[pos] : kNone;
    const bool valid = key != kNone;
    if (valid) {
      cand_box[t] = static_cast<int32_t>(key & 0xffffffffu);
      cand[t] = corners(boxes, cand_box[t], a.center);
    }
    if (t == 0) num_valid = 0;
    __syncthreads();
    if (valid) atomicMax(&num_valid, t + 1);
    bool ok = valid;
    for (int j = 0; ok && j < num_kept; ++j)
      if (suppresses(cand[t], kc[j], a.iou_threshold)) ok = false;
    alive[t] = ok;
    for (int w = 0; w < kChunk / 32; ++w) mask[t][w] = 0;
    if (ok)
      for (int j = 0; j < t; ++j)
        if (suppresses(cand[t], cand[j], a.iou_threshold)) mask[t][j / 32] |= 1u << (j % 32);
    __syncthreads();
    if (t == 0) {
      uint32_t survivors[kChunk / 32] = {};
      for (int i = 0; i < num_valid && num_kept < cap; ++i) {
        if (!alive[i]) continue;
        bool hit = false;
        for (int w = 0; w <= i / 32 && !hit; ++w) hit = (mask[i][w] & survivors[w]) != 0;
        if (hit) continue;
        survivors[i / 32] |= 1u << (i % 32);
        kc[num_kept] = cand[i];
        kept[num_kept++] = cand_box[i];
      }
    }
    __syncthreads();
    const bool done = num_kept >= cap || num_valid < kChunk;  // full, or past the candidates
    __syncthreads();  // every thread has read num_valid before thread 0 resets it
    if (done) break;
  }
  if (threadIdx.x == 0) counts[seg] = num_kept;
}

// One block per segment: its offset is the sum of the earlier segments' counts.
__global__ void nms_emit(OnnxNmsArgs a, const int32_t* kept_all, const int32_t* counts, int64_t cap,
                         int64_t* y) {
  const int64_t seg = blockIdx.x;
  __shared__ int64_t offset;
  if (threadIdx.x == 0) {
    int64_t o = 0;
    for (int64_t s = 0; s < seg; ++s) o += counts[s];
    offset = o;
  }
  __syncthreads();
  const int64_t b = seg / a.classes, c = seg % a.classes;
  for (int i = threadIdx.x; i < counts[seg]; i += blockDim.x) {
    int64_t* row = y + (offset + i) * 3;
    row[0] = b;
    row[1] = c;
    row[2] = kept_all[seg * cap + i];
  }
}

template <typename T>
cudaError_t select(const OnnxNmsArgs& a, void* scratch, const int32_t** counts_out,
                   cudaStream_t stream) {
  const Layout s = layout(a);
  auto* base = static_cast<uint8_t*>(scratch);
  auto* keys = reinterpret_cast<uint64_t*>(base + s.keys);
  auto* sorted = reinterpret_cast<uint64_t*>(base + s.sorted);
  auto* offsets = reinterpret_cast<int*>(base + s.offsets);
  auto* counts = reinterpret_cast<int32_t*>(base + s.counts);
  *counts_out = counts;
  const int64_t segments = a.batch * a.classes, total = segments * a.boxes_n;
  cudaError_t e = cudaMemsetAsync(counts, 0, sizeof(int32_t) * segments, stream);
  if (e != cudaSuccess || total == 0 || s.cap == 0) return e;
  nms_keys<T><<<blocks_for(total), kThreads, 0, stream>>>(a, keys);
  nms_offsets<<<static_cast<unsigned>((segments + 256) / 256), 256, 0, stream>>>(
      a.boxes_n, static_cast<int>(segments), offsets);
  size_t temp_bytes = s.cub_bytes;
  e = cub::DeviceSegmentedRadixSort::SortKeys(base + s.cub_temp, temp_bytes, keys, sorted,
                                              static_cast<int>(total), static_cast<int>(segments),
                                              offsets, offsets + 1, 0, 64, stream);
  if (e != cudaSuccess) return e;
  nms_suppress<T><<<static_cast<unsigned>(segments), kChunk, 0, stream>>>(
      a, sorted, s.cap, reinterpret_cast<int32_t*>(base + s.kept),
      reinterpret_cast<Corners*>(base + s.kept_corners), counts);
  return cudaGetLastError();
}

}  // namespace

cudaError_t float_class(const FloatClassArgs& a, cudaStream_t stream) {
  if (a.n <= 0) return cudaSuccess;
  const unsigned blocks = blocks_for(a.n);
  if (a.dt == DataType::kFloat64) {
    float_class_kernel<double><<<blocks, kThreads, 0, stream>>>(a);
    return cudaGetLastError();
  }
  const bool known = dispatch_float(a.dt, [&](auto tag) {
    float_class_kernel<decltype(tag)><<<blocks, kThreads, 0, stream>>>(a);
  });
  return known ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t hardmax(DataType dt, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                    cudaStream_t stream) {
  if (outer * inner <= 0 || n <= 0) return cudaSuccess;
  const bool known = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    hardmax_kernel<T><<<blocks_for(outer * inner), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), outer, n, inner);
  });
  return known ? cudaGetLastError() : cudaErrorNotSupported;
}

size_t onnx_nms_scratch_bytes(const OnnxNmsArgs& a) {
  return layout(a).total;
}

cudaError_t onnx_nms_select(const OnnxNmsArgs& a, void* scratch, const int32_t** counts,
                            cudaStream_t stream) {
  return a.half ? select<__half>(a, scratch, counts, stream)
                : select<float>(a, scratch, counts, stream);
}

cudaError_t onnx_nms_emit(const OnnxNmsArgs& a, const void* scratch, int64_t* y,
                          cudaStream_t stream) {
  const Layout s = layout(a);
  const auto* base = static_cast<const uint8_t*>(scratch);
  const int64_t segments = a.batch * a.classes;
  if (segments == 0 || s.cap == 0) return cudaSuccess;
  nms_emit<<<static_cast<unsigned>(segments), 128, 0, stream>>>(
      a, reinterpret_cast<const int32_t*>(base + s.kept),
      reinterpret_cast<const int32_t*>(base + s.counts), s.cap, y);
  return cudaGetLastError();
}

}  // namespace trtutils::cuda::k
