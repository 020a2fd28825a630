// The non-template parts of the elementwise helpers: the parallel loop and the broadcast
// iterator (compiled once; kernels pass their loop bodies through FunctionRef).
#include "backends/cpu/elementwise_common.h"

#include <omp.h>

namespace trtutils::cpu::ew {

void parallel_for(int64_t n, FunctionRef<void(int64_t, int64_t)> fn, int64_t cost_per_item) {
  if (n <= 0) return;
  const int threads = omp_get_max_threads();
  if (threads <= 1 || n == 1 || n * cost_per_item < kParallelMinWork) {
    fn(0, n);
    return;
  }
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads();
    const int64_t t = omp_get_thread_num();
    const int64_t begin = n * t / nt;
    const int64_t end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

template <size_t N>
BroadcastIter<N>::BroadcastIter(const Shape& out, const std::array<const Shape*, N>& ins) {
  numel_ = shape_numel(out);
  const size_t rank = out.size();
  // (size, per-input stride) of every output dim of size > 1, innermost first; a dim merges
  // into the one inside it when every input is contiguous across the two.
  std::vector<int64_t> sizes;
  std::vector<Offsets> strides;
  Offsets running;
  running.fill(1);
  for (size_t r = rank; r-- > 0;) {
    Offsets st{};
    for (size_t k = 0; k < N; ++k) {
      const Shape& s = *ins[k];
      TRT_INTERNAL_CHECK(s.size() <= rank);
      const size_t lead = rank - s.size();
      const int64_t d = r >= lead ? s[r - lead] : 1;
      TRT_INTERNAL_CHECK(d == out[r] || d == 1);
      st[k] = d == 1 ? 0 : running[k];
      running[k] *= d;
    }
    if (out[r] == 1) continue;
    if (!sizes.empty()) {
      bool mergeable = true;
      for (size_t k = 0; k < N; ++k)
        mergeable = mergeable && st[k] == strides.back()[k] * sizes.back();
      if (mergeable) {
        sizes.back() *= out[r];
        continue;
      }
    }
    sizes.push_back(out[r]);
    strides.push_back(st);
  }
  if (sizes.empty()) {
    inner_ = 1;
    inner_step_.fill(0);
  } else {
    inner_ = sizes.front();
    inner_step_ = strides.front();
    dims_.assign(sizes.rbegin(), sizes.rend() - 1);
    strides_.assign(strides.rbegin(), strides.rend() - 1);
  }
}

template <size_t N>
void BroadcastIter<N>::run(RunFn fn) const {
  if (numel_ == 0) return;
  const int64_t rows = numel_ / inner_;
  const int threads = omp_get_max_threads();
  if (threads <= 1 || numel_ < kParallelMinWork) {
    run_tasks(fn, 0, rows, 1, inner_);
    return;
  }
  // Cut rows into chunks when there are too few rows to give every thread work.
  const int64_t want = int64_t{threads} * 4;
  int64_t chunks = rows >= want ? 1 : (want + rows - 1) / rows;
  chunks = std::max<int64_t>(1, std::min(chunks, inner_ / 4096));
  const int64_t chunk_len = (inner_ + chunks - 1) / chunks;
  chunks = (inner_ + chunk_len - 1) / chunk_len;
  const int64_t tasks = rows * chunks;
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads();
    const int64_t t = omp_get_thread_num();
    const int64_t begin = tasks * t / nt;
    const int64_t end = tasks * (t + 1) / nt;
    if (begin < end) run_tasks(fn, begin, end, chunks, chunk_len);
  }
}

template <size_t N>
void BroadcastIter<N>::run_tasks(RunFn fn, int64_t t0, int64_t t1, int64_t chunks,
                                 int64_t chunk_len) const {
  const size_t nd = dims_.size();
  int64_t row = t0 / chunks;
  int64_t chunk = t0 % chunks;
  // Odometer position of `row` over the outer dims (the only divisions: once per call).
  std::vector<int64_t> idx(nd, 0);
  Offsets base{};
  int64_t rem = row;
  for (size_t d = nd; d-- > 0;) {
    idx[d] = rem % dims_[d];
    rem /= dims_[d];
    for (size_t k = 0; k < N; ++k) base[k] += idx[d] * strides_[d][k];
  }
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t b = chunk * chunk_len;
    const int64_t count = std::min(inner_, b + chunk_len) - b;
    Offsets off;
    for (size_t k = 0; k < N; ++k) off[k] = base[k] + b * inner_step_[k];
    fn(row * inner_ + b, off, inner_step_, count);
    if (++chunk == chunks) {
      chunk = 0;
      ++row;
      for (size_t d = nd; d-- > 0;) {
        for (size_t k = 0; k < N; ++k) base[k] += strides_[d][k];
        if (++idx[d] < dims_[d]) break;
        for (size_t k = 0; k < N; ++k) base[k] -= dims_[d] * strides_[d][k];
        idx[d] = 0;
      }
    }
  }
}

template class BroadcastIter<1>;
template class BroadcastIter<2>;
template class BroadcastIter<3>;

}  // namespace trtutils::cpu::ew
