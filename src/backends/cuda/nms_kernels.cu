// com.trtutils::EfficientNMS on the GPU (contract and rules: ops/detection_ops.h; the CPU
// reference is backends/cpu/nms_kernels.cpp, and this computes the same bytes). Two steps, both
// batch-parallel:
//   1. sort: per image, every (anchor, class) element gets a 64-bit key, score descending in
//      the high word and the element index ascending in the low word (the reference's stable
//      order), non-candidates (score < threshold, the background class) the largest key; one
//      segmented radix sort (CUB) orders all images at once.
//   2. suppress: one block per image walks its sorted candidates in chunks of one per thread:
//      each thread tests its candidate against the boxes kept so far and builds the mask of the
//      earlier candidates of its chunk that would suppress it; one thread then resolves the
//      chunk in order (a candidate survives when no kept box and no earlier survivor suppresses
//      it), which is the reference's greedy loop, chunk by chunk.
// The IoU arithmetic uses round-to-nearest intrinsics (no multiply-add contraction), as the
// CPU computes it, so that a value on a threshold falls on the same side.
#include <cub/device/device_segmented_radix_sort.cuh>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/kernels.h"

namespace trtutils::cuda::k {
namespace {

constexpr int kChunk = 256;  // candidates per step = threads per block
constexpr uint64_t kNone = ~uint64_t{0};

__device__ __forceinline__ float load(const float* p, int64_t i) {
  return p[i];
}
__device__ __forceinline__ float load(const __half* p, int64_t i) {
  return __half2float(p[i]);
}

template <typename T>
__global__ void make_keys(const T* scores, int64_t per_image, int64_t total, int64_t classes,
                          float threshold, int64_t background, uint64_t* keys) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t e = i % per_image;
  const float s = load(scores, i);
  const bool candidate = s >= threshold && (e % classes) != background;
  keys[i] = candidate ? (static_cast<uint64_t>(descending_bits(s)) << 32) | static_cast<uint64_t>(e)
                      : kNone;
}

__global__ void segment_offsets(int64_t per_image, int n, int* offsets) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) offsets[i] = static_cast<int>(i * per_image);
}

struct Box {
  float x1, y1, x2, y2;
};

template <typename T>
__device__ Box corners(const T* boxes, int64_t anchor, bool center_size) {
  const float a = load(boxes, anchor * 4), b = load(boxes, anchor * 4 + 1),
              c = load(boxes, anchor * 4 + 2), d = load(boxes, anchor * 4 + 3);
  if (!center_size) return {a, b, c, d};
  const float w2 = __fmul_rn(c, 0.5f), h2 = __fmul_rn(d, 0.5f);
  return {__fsub_rn(a, w2), __fsub_rn(b, h2), __fadd_rn(a, w2), __fadd_rn(b, h2)};
}

__device__ __forceinline__ float area(float x1, float y1, float x2, float y2) {
  const float w = __fsub_rn(x2, x1), h = __fsub_rn(y2, y1);
  return (w <= 0.0f || h <= 0.0f) ? 0.0f : __fmul_rn(w, h);
}

__device__ float iou(Box a, Box b) {
  if (a.x1 > a.x2) {
    const float t = a.x1;
    a.x1 = a.x2;
    a.x2 = t;
  }
  if (a.y1 > a.y2) {
    const float t = a.y1;
    a.y1 = a.y2;
    a.y2 = t;
  }
  if (b.x1 > b.x2) {
    const float t = b.x1;
    b.x1 = b.x2;
    b.x2 = t;
  }
  if (b.y1 > b.y2) {
    const float t = b.y1;
    b.y1 = b.y2;
    b.y2 = t;
  }
  const float ia = area(fmaxf(a.x1, b.x1), fmaxf(a.y1, b.y1), fminf(a.x2, b.x2), fminf(a.y2, b.y2));
  if (ia <= 0.0f) return 0.0f;
  const float ua =
      __fsub_rn(__fadd_rn(area(a.x1, a.y1, a.x2, a.y2), area(b.x1, b.y1, b.x2, b.y2)), ia);
  return ua <= 0.0f ? 0.0f : __fdiv_rn(ia, ua);
}

template <typename T>
__global__ void __launch_bounds__(kChunk)
    suppress(const NmsArgs args, const T* boxes_all, const T* scores_all, const uint64_t* sorted,
             Box* kept_boxes, int* kept_classes) {
  const int img = blockIdx.x;
  const int64_t per_image = args.anchors * args.classes;
  const T* boxes = boxes_all + img * args.anchors * 4;
  const T* scores = scores_all + img * per_image;
  const uint64_t* keys = sorted + img * per_image;
  Box* kept = kept_boxes + static_cast<int64_t>(img) * args.max_out;
  int* kept_cls = kept_classes + static_cast<int64_t>(img) * args.max_out;
  __shared__ Box cand[kChunk];
  __shared__ int cand_cls[kChunk];
  __shared__ int64_t cand_elem[kChunk];
  __shared__ bool alive[kChunk];
  __shared__ uint32_t mask[kChunk][kChunk / 32];  // j < i suppresses i
  __shared__ int num_kept, num_valid;
  if (threadIdx.x == 0) num_kept = 0;
  __syncthreads();
  for (int64_t base = 0; base < per_image; base += kChunk) {
    const int t = threadIdx.x;
    const int64_t pos = base + t;
    const uint64_t key = pos < per_image ? keys[pos] : kNone;
    const bool valid = key != kNone;
    if (valid) {
      const int64_t e = static_cast<int64_t>(key & 0xffffffffu);
      cand_elem[t] = e;
      cand_cls[t] = static_cast<int>(e % args.classes);
      cand[t] = corners(boxes, e / args.classes, args.center_size);
    }
    if (t == 0) num_valid = 0;
    __syncthreads();
    if (valid) atomicMax(&num_valid, t + 1);
    // Against the boxes kept before this chunk.
    bool ok = valid;
    for (int j = 0; ok && j < num_kept; ++j)
      if ((args.class_agnostic || kept_cls[j] == cand_cls[t]) &&
          iou(cand[t], kept[j]) >= args.iou_threshold)
        ok = false;
    alive[t] = ok;
    for (int w = 0; w < kChunk / 32; ++w) mask[t][w] = 0;
    if (ok)
      for (int j = 0; j < t; ++j)
        if ((args.class_agnostic || cand_cls[j] == cand_cls[t]) &&
            iou(cand[t], cand[j]) >= args.iou_threshold)
          mask[t][j / 32] |= 1u << (j % 32);
    __syncthreads();
    if (t == 0) {
      uint32_t survivors[kChunk / 32] = {};
      for (int i = 0; i < num_valid && num_kept < args.max_out; ++i) {
        if (!alive[i]) continue;
        bool hit = false;
        for (int w = 0; w <= i / 32 && !hit; ++w) hit = (mask[i][w] & survivors[w]) != 0;
        if (hit) continue;
        survivors[i / 32] |= 1u << (i % 32);
        const int slot = num_kept++;
        kept[slot] = cand[i];
        kept_cls[slot] = cand_cls[i];
        const int64_t out = static_cast<int64_t>(img) * args.max_out + slot;
        args.det_boxes[out * 4 + 0] = cand[i].x1;
        args.det_boxes[out * 4 + 1] = cand[i].y1;
        args.det_boxes[out * 4 + 2] = cand[i].x2;
        args.det_boxes[out * 4 + 3] = cand[i].y2;
        args.det_scores[out] = load(scores, cand_elem[i]);
        args.det_classes[out] = cand_cls[i];
      }
    }
    __syncthreads();
    const bool done = num_kept >= args.max_out || num_valid < kChunk;  // full, or past them
    __syncthreads();  // every thread has read num_valid before thread 0 resets it
    if (done) break;
  }
  if (threadIdx.x == 0) args.num_dets[img] = num_kept;
}

template <typename T>
cudaError_t run(const NmsArgs& a, void* scratch, cudaStream_t stream) {
  const int64_t per_image = a.anchors * a.classes, total = per_image * a.batch;
  NmsScratch s = nms_scratch_layout(a);
  auto* base = static_cast<uint8_t*>(scratch);
  auto* keys = reinterpret_cast<uint64_t*>(base + s.keys);
  auto* sorted = reinterpret_cast<uint64_t*>(base + s.sorted);
  auto* offsets = reinterpret_cast<int*>(base + s.offsets);
  auto* kept = reinterpret_cast<Box*>(base + s.kept_boxes);
  auto* kept_cls = reinterpret_cast<int*>(base + s.kept_classes);
  void* temp = base + s.cub_temp;
  cudaMemsetAsync(a.num_dets, 0, sizeof(int) * a.batch, stream);
  cudaMemsetAsync(a.det_boxes, 0, sizeof(float) * 4 * a.batch * a.max_out, stream);
  cudaMemsetAsync(a.det_scores, 0, sizeof(float) * a.batch * a.max_out, stream);
  cudaMemsetAsync(a.det_classes, 0, sizeof(int) * a.batch * a.max_out, stream);
  if (total == 0) return cudaGetLastError();
  make_keys<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(
      static_cast<const T*>(a.scores), per_image, total, a.classes, a.score_threshold,
      a.background_class, keys);
  segment_offsets<<<(static_cast<int>(a.batch) + 256) / 256, 256, 0, stream>>>(
      per_image, static_cast<int>(a.batch), offsets);
  size_t temp_bytes = s.cub_bytes;
  cudaError_t e = cub::DeviceSegmentedRadixSort::SortKeys(
      temp, temp_bytes, keys, sorted, static_cast<int>(total), static_cast<int>(a.batch), offsets,
      offsets + 1, 0, 64, stream);
  if (e != cudaSuccess) return e;
  suppress<T><<<static_cast<unsigned>(a.batch), kChunk, 0, stream>>>(
      a, static_cast<const T*>(a.boxes), static_cast<const T*>(a.scores), sorted, kept, kept_cls);
  return cudaGetLastError();
}

size_t align256(size_t v) {
  return (v + 255) / 256 * 256;
}

}  // namespace

NmsScratch nms_scratch_layout(const NmsArgs& a) {
  const size_t total = static_cast<size_t>(a.batch * a.anchors * a.classes);
  NmsScratch s;
  size_t at = 0;
  s.keys = at;
  at += align256(total * sizeof(uint64_t));
  s.sorted = at;
  at += align256(total * sizeof(uint64_t));
  s.offsets = at;
  at += align256((static_cast<size_t>(a.batch) + 1) * sizeof(int));
  s.kept_boxes = at;
  at += align256(static_cast<size_t>(a.batch * a.max_out) * sizeof(Box));
  s.kept_classes = at;
  at += align256(static_cast<size_t>(a.batch * a.max_out) * sizeof(int));
  s.cub_temp = at;
  size_t cub_bytes = 0;
  cub::DeviceSegmentedRadixSort::SortKeys(
      nullptr, cub_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<int>(total), static_cast<int>(a.batch), static_cast<const int*>(nullptr),
      static_cast<const int*>(nullptr), 0, 64);
  s.cub_bytes = cub_bytes;
  s.total = at + align256(cub_bytes);
  return s;
}

cudaError_t efficient_nms(const NmsArgs& a, void* scratch, cudaStream_t stream) {
  return a.half ? run<__half>(a, scratch, stream) : run<float>(a, scratch, stream);
}

}  // namespace trtutils::cuda::k
