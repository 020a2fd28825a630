// Internal helpers of the elementwise, cast and reduce CPU kernels: the C++ element type of each
// DataType, load/store through a compute type (float for the 16-bit floats), a dtype dispatcher
// over explicit type lists (so each op instantiates only the types ONNX allows), a numpy
// broadcast iterator and an OpenMP parallel loop.
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "trtutils/dtype.h"
#include "trtutils/tensor.h"

namespace trtutils::cpu::ew {

// ---- element types ---------------------------------------------------------------------------
template <DataType D>
struct Elem;
#define TRT_EW_ELEM(D, T) \
  template <>             \
  struct Elem<DataType::D> { using type = T; }
TRT_EW_ELEM(kFloat32, float);
TRT_EW_ELEM(kFloat64, double);
TRT_EW_ELEM(kFloat16, half);
TRT_EW_ELEM(kBFloat16, bfloat16);
TRT_EW_ELEM(kFloat8E4M3FN, float8_e4m3fn);
TRT_EW_ELEM(kFloat8E5M2, float8_e5m2);
TRT_EW_ELEM(kInt8, int8_t);
TRT_EW_ELEM(kUInt8, uint8_t);
TRT_EW_ELEM(kInt16, int16_t);
TRT_EW_ELEM(kUInt16, uint16_t);
TRT_EW_ELEM(kInt32, int32_t);
TRT_EW_ELEM(kUInt32, uint32_t);
TRT_EW_ELEM(kInt64, int64_t);
TRT_EW_ELEM(kUInt64, uint64_t);
TRT_EW_ELEM(kBool, bool);  // tensors hold 0/1 bytes
#undef TRT_EW_ELEM

template <typename T>
inline constexpr bool kIsNarrowFloat =
    std::is_same_v<T, half> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float8_e4m3fn> ||
    std::is_same_v<T, float8_e5m2>;

// The type arithmetic is done in: float for the narrow floats, the type itself otherwise.
template <typename T>
using compute_t = std::conditional_t<kIsNarrowFloat<T>, float, T>;

template <typename T>
inline compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, half>) {
    return half_to_float(v);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return bfloat16_to_float(v);
  } else if constexpr (std::is_same_v<T, float8_e4m3fn>) {
    return e4m3fn_to_float(v);
  } else if constexpr (std::is_same_v<T, float8_e5m2>) {
    return e5m2_to_float(v);
  } else {
    return v;
  }
}

template <typename T, typename C>
inline T store(C v) {
  if constexpr (std::is_same_v<T, half>) {
    return float_to_half(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return float_to_bfloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, float8_e4m3fn>) {
    return float_to_e4m3fn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, float8_e5m2>) {
    return float_to_e5m2(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Wrapping integer arithmetic (signed overflow is UB in C++; ONNX runtimes wrap).
template <typename T>
using wide_unsigned_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
template <typename T>
inline T wrap_add(T a, T b) {
  using U = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
inline T wrap_sub(T a, T b) {
  using U = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
inline T wrap_mul(T a, T b) {
  using U = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <typename T>
inline T wrap_neg(T a) {
  return wrap_sub<T>(T{0}, a);
}

// Float -> integer without UB: NaN -> 0, truncation toward zero, clamped to int64 (uint64 for
// uint64), then wrapped to the width of I (numpy's behaviour through int64 for narrow types).
template <typename I>
inline I float_to_int(double d) {
  if (std::isnan(d)) return I{0};
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (d >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
    if (d >= 9223372036854775808.0) return static_cast<uint64_t>(d);
  }
  if (d >= 9223372036854775808.0) return static_cast<I>(std::numeric_limits<int64_t>::max());
  if (d <= -9223372036854775808.0) return static_cast<I>(std::numeric_limits<int64_t>::min());
  return static_cast<I>(static_cast<int64_t>(d));
}

// ---- dtype dispatch --------------------------------------------------------------------------
template <typename T>
struct Tag {
  using type = T;
};
template <DataType... Ds>
struct Types {};
template <typename A, typename B>
struct ConcatT;
template <DataType... A, DataType... B>
struct ConcatT<Types<A...>, Types<B...>> {
  using type = Types<A..., B...>;
};
template <typename A, typename B>
using Concat = typename ConcatT<A, B>::type;

using FloatTypes = Types<DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                         DataType::kBFloat16>;
using SignedIntTypes = Types<DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64>;
using UnsignedIntTypes =
    Types<DataType::kUInt8, DataType::kUInt16, DataType::kUInt32, DataType::kUInt64>;
using IntTypes = Concat<SignedIntTypes, UnsignedIntTypes>;
using SignedTypes = Concat<FloatTypes, SignedIntTypes>;
using NumericTypes = Concat<FloatTypes, IntTypes>;
using BoolTypes = Types<DataType::kBool>;

template <DataType... Ds, typename F>
bool try_dispatch(DataType t, Types<Ds...>, F&& f) {
  return ((t == Ds && (f(Tag<typename Elem<Ds>::type>{}), true)) || ...);
}

// Calls f(Tag<T>{}) with the C++ type of `t` when t is in the list L; otherwise throws
// Error(kNotSupported) naming the node and `what` (e.g. "input 0").
template <typename L, typename F>
void dispatch(DataType t, const ir::Node& node, std::string_view what, F&& f) {
  if (!try_dispatch(t, L{}, f))
    TRT_THROW(ErrorCode::kNotSupported, "{}: {} has dtype {}, which {} does not support",
              node.describe(), what, dtype_name(t), node.op_type);
}

// ---- parallel loop ---------------------------------------------------------------------------
// Below this many elements a loop runs on the calling thread (thread start-up costs more).
inline constexpr int64_t kParallelMinWork = 1 << 15;

// Calls fn(begin, end) over [0, n) in contiguous pieces, in parallel when n*cost is large.
// fn must not throw (validate before the loop).
template <typename F>
void parallel_for(int64_t n, F&& fn, int64_t cost_per_item = 1) {
  if (n <= 0) return;
  const int threads = omp_get_max_threads();
  if (threads <= 1 || n * cost_per_item < kParallelMinWork || n == 1) {
    fn(int64_t{0}, n);
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

// ---- broadcast iterator ----------------------------------------------------------------------
// Visits the elements of a numpy broadcast of N inputs into a C-order output in runs of
// contiguous output elements. For each run it calls
//   fn(out_offset, in_offsets, in_steps, count)
// where input k's elements are in[k][in_offsets[k] + i * in_steps[k]] for i < count and
// in_steps[k] is 1 or 0 (broadcast). Adjacent dims that are contiguous for every input are
// merged first, so equal shapes and scalar operands become a single run; outer dims advance
// with an odometer (no per-element division). Large outputs are split across OpenMP threads.
template <size_t N>
class BroadcastIter {
 public:
  using Offsets = std::array<int64_t, N>;

  // `out` must be the broadcast of the input shapes (each input dim equals out's or is 1).
  BroadcastIter(const Shape& out, const std::array<const Shape*, N>& ins) {
    numel_ = shape_numel(out);
    const size_t rank = out.size();
    // (size, per-input stride) of every output dim of size > 1, innermost first.
    std::vector<int64_t> sizes;
    std::vector<Offsets> strides;
    Offsets running{};
    running.fill(1);
    for (size_t r = rank; r-- > 0;) {
      Offsets st{};
      for (size_t k = 0; k < N; ++k) {
        const Shape& s = *ins[k];
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
      // Outer dims, outermost first.
      dims_.assign(sizes.rbegin(), sizes.rend() - 1);
      strides_.assign(strides.rbegin(), strides.rend() - 1);
    }
  }

  int64_t numel() const { return numel_; }

  template <typename Fn>
  void run(Fn&& fn) const {
    if (numel_ == 0) return;
    const int64_t rows = numel_ / inner_;
    const int threads = omp_get_max_threads();
    if (threads <= 1 || numel_ < kParallelMinWork) {
      run_tasks(fn, 0, rows, 1, inner_);
      return;
    }
    // Split rows into chunks when there are few rows, so every thread gets work.
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

 private:
  template <typename Fn>
  void run_tasks(Fn& fn, int64_t t0, int64_t t1, int64_t chunks, int64_t chunk_len) const {
    const size_t nd = dims_.size();
    int64_t row = t0 / chunks;
    int64_t chunk = t0 % chunks;
    // Odometer position of `row` over the outer dims (the only divisions: once per call).
    std::vector<int64_t> idx(nd, 0);
    Offsets base{};
    {
      int64_t rem = row;
      for (size_t d = nd; d-- > 0;) {
        idx[d] = rem % dims_[d];
        rem /= dims_[d];
        for (size_t k = 0; k < N; ++k) base[k] += idx[d] * strides_[d][k];
      }
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

  int64_t numel_ = 0;
  int64_t inner_ = 1;
  Offsets inner_step_{};
  std::vector<int64_t> dims_;
  std::vector<Offsets> strides_;
};

// ---- shared entry points between the kernel files -----------------------------------------------
// Converts a tensor to dtype `to` with ONNX Cast semantics (saturate applies to float8 targets).
Tensor cast_tensor(const Tensor& x, DataType to, bool saturate, const ir::Node& node);
// Output shape of a broadcast over the given inputs, naming the node on mismatch.
Shape broadcast_all(const std::vector<const Tensor*>& ins, const ir::Node& node);

void register_unary_kernels(KernelRegistry& r);
void register_cast_kernels(KernelRegistry& r);
void register_reduce_kernels(KernelRegistry& r);
void register_softmax_kernels(KernelRegistry& r);

}  // namespace trtutils::cpu::ew
