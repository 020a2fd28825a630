// Internal helpers of the elementwise, cast and reduce CPU kernels: the C++ element type of each
// DataType, load/store through a compute type (float for the 16-bit floats), a dtype dispatcher
// over explicit type lists (so each op instantiates only the types ONNX allows), a numpy
// broadcast iterator and an OpenMP parallel loop.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
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
#define TRT_EW_ELEM(D, T)    \
  template <>                \
  struct Elem<DataType::D> { \
    using type = T;          \
  }
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

// Inline fp16/bf16 conversions for the hot loops; bit-identical to dtype.h's half_to_float /
// float_to_half / bfloat16 functions (round to nearest even), checked exhaustively in tests.
inline float fast_half_to_float(half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exp = (h.bits >> 10) & 0x1fu;
  const uint32_t man = h.bits & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    if (man != 0) return std::numeric_limits<float>::quiet_NaN();
    bits = sign | 0x7f800000u;
  } else if (exp == 0) {
    const float f = static_cast<float>(man) * 5.9604644775390625e-08f;  // man * 2^-24, exact
    return sign ? -f : f;
  } else {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline half fast_float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x47800000u)  // >= 65536 (beyond the rounding range of 65504), inf or NaN
    return half{static_cast<uint16_t>(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u))};
  if (x < 0x38800000u) {
    // Below 2^-14 the result is subnormal: adding 0.5 puts the half's unit (2^-24) at the
    // float's last mantissa bit, so the FPU does the round-to-nearest-even.
    float a;
    std::memcpy(&a, &x, 4);
    a += 0.5f;
    uint32_t r;
    std::memcpy(&r, &a, 4);
    return half{static_cast<uint16_t>(sign | (r - 0x3f000000u))};
  }
  const uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd;  // rebias the exponent by -112 and round half to even
  return half{static_cast<uint16_t>(sign | (x >> 13))};
}

inline float fast_bfloat16_to_float(bfloat16 h) {
  const uint32_t bits = static_cast<uint32_t>(h.bits) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline bfloat16 fast_float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return bfloat16{static_cast<uint16_t>((x >> 16) | 0x40u)};
  return bfloat16{static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
}

// The type arithmetic is done in: float for the narrow floats, the type itself otherwise.
template <typename T>
using compute_t = std::conditional_t<kIsNarrowFloat<T>, float, T>;

template <typename T>
inline compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, half>) {
    return fast_half_to_float(v);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return fast_bfloat16_to_float(v);
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
    return fast_float_to_half(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return fast_float_to_bfloat16(static_cast<float>(v));
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

using FloatTypes =
    Types<DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16>;
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

// ---- type-erased callables ----------------------------------------------------------------------
// A non-owning reference to a callable (the loops below call it once per chunk or row, so the
// indirect call is cheap, and the OpenMP regions are compiled once instead of per kernel).
template <typename Sig>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef>)
      FunctionRef(F&& f)  // NOLINT: implicit by design, like std::function_ref
      : obj_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, Args... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
        }) {}
  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

// ---- parallel loop ---------------------------------------------------------------------------
// Below this much work (elements times cost_per_item) a loop runs on the calling thread.
inline constexpr int64_t kParallelMinWork = 1 << 15;

// Calls fn(begin, end) over [0, n) in contiguous pieces, one per OpenMP thread when
// n * cost_per_item is large. fn must not throw (validate before the loop).
void parallel_for(int64_t n, FunctionRef<void(int64_t, int64_t)> fn, int64_t cost_per_item = 1);

// ---- broadcast iterator ----------------------------------------------------------------------
// Visits the elements of a numpy broadcast of N inputs into a C-order output in runs of
// contiguous output elements. For each run it calls
//   fn(out_offset, in_offsets, in_steps, count)
// where input k's elements are in[k][in_offsets[k] + i * in_steps[k]] for i < count and
// in_steps[k] is 1 or 0 (broadcast). Adjacent dims that are contiguous for every input are
// merged first, so equal shapes and scalar operands become a single run; outer dims advance
// with an odometer (no per-element division). Large outputs are split across OpenMP threads
// (rows are cut into chunks when there are few). Instantiated for N = 1, 2, 3.
template <size_t N>
class BroadcastIter {
 public:
  using Offsets = std::array<int64_t, N>;
  using RunFn = FunctionRef<void(int64_t, const Offsets&, const Offsets&, int64_t)>;

  // `out` must be the broadcast of the input shapes (each input dim equals out's or is 1).
  BroadcastIter(const Shape& out, const std::array<const Shape*, N>& ins);
  int64_t numel() const { return numel_; }
  void run(RunFn fn) const;

 private:
  void run_tasks(RunFn fn, int64_t t0, int64_t t1, int64_t chunks, int64_t chunk_len) const;

  int64_t numel_ = 0;
  int64_t inner_ = 1;
  Offsets inner_step_{};
  std::vector<int64_t> dims_;     // outer dims (merged), outermost first
  std::vector<Offsets> strides_;  // their per-input strides
};

extern template class BroadcastIter<1>;
extern template class BroadcastIter<2>;
extern template class BroadcastIter<3>;

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
