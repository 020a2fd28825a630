// Elementwise kernels: unary math/activations, broadcasting binary ops, Where, the convolution
// epilogue. Floats compute in float32 (fp16/bf16 widened), with the
// CPU kernels' formulas so that results agree to float rounding.
#include "backends/cuda/device_util.cuh"

namespace trtutils::cuda::k {

namespace {

__device__ __forceinline__ float stable_sigmoid(float v) {
  const float e = expf(-fabsf(v));
  return (v >= 0.0f ? 1.0f : e) / (1.0f + e);
}
__device__ __forceinline__ float softplus(float v) {
  return v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v));
}

__device__ __forceinline__ float unary_float(Unary op, float v, float alpha, float beta) {
  switch (op) {
    case Unary::kIdentity:
      return v;
    case Unary::kRelu:
      return v < 0.0f ? 0.0f : v;
    case Unary::kSigmoid:
      return stable_sigmoid(v);
    case Unary::kTanh:
      return tanhf(v);
    case Unary::kErf:
      return erff(v);
    case Unary::kSqrt:
      return sqrtf(v);
    case Unary::kExp:
      return expf(v);
    case Unary::kLog:
      return logf(v);
    case Unary::kAbs:
      return fabsf(v);
    case Unary::kNeg:
      return -v;
    case Unary::kReciprocal:
      return 1.0f / v;
    case Unary::kFloor:
      return floorf(v);
    case Unary::kCeil:
      return ceilf(v);
    case Unary::kRound:
      return rintf(v);
    case Unary::kSin:
      return sinf(v);
    case Unary::kCos:
      return cosf(v);
    case Unary::kSign:
      return isnan(v) ? v : (v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : 0.0f));
    case Unary::kHardSwish:
      return v * fmaxf(0.0f, fminf(1.0f, v / 6.0f + 0.5f));
    case Unary::kHardSigmoid:
      return fmaxf(0.0f, fminf(1.0f, alpha * v + beta));
    case Unary::kClip: {
      const float a = v < alpha ? alpha : v;
      return beta < a ? beta : a;
    }
    case Unary::kLeakyRelu:
      return v < 0.0f ? v * alpha : v;
    case Unary::kElu:
      return v < 0.0f ? alpha * expm1f(v) : v;
    case Unary::kSelu:
      return beta * (v > 0.0f ? v : alpha * expm1f(v));
    case Unary::kSoftplus:
      return softplus(v);
    case Unary::kSoftsign:
      return v / (1.0f + fabsf(v));
    case Unary::kMish:
      return v * tanhf(softplus(v));
    case Unary::kGelu:
      return gelu_erf(v);
    case Unary::kGeluTanh: {
      const float c = 0.79788456080286535588f;
      return 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
    }
    case Unary::kScale:
      return alpha * v;
  }
  return v;
}

template <typename T>
__global__ void unary_float_kernel(Unary op, const T* x, T* y, int64_t n, float alpha, float beta) {
  TRT_GRID_STRIDE(i, n) {
    y[i] = from_float<T>(unary_float(op, to_float(x[i]), alpha, beta));
  }
}

// V consecutive elements (16 bytes) per thread.
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <typename T, int V>
__global__ void unary_float_vec_kernel(Unary op, const Vec<T, V>* x, Vec<T, V>* y, int32_t nv,
                                       float alpha, float beta) {
  for (int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x); i < nv;
       i += static_cast<int32_t>(gridDim.x * blockDim.x)) {
    Vec<T, V> r = x[i];
#pragma unroll
    for (int k = 0; k < V; ++k)
      r.v[k] = from_float<T>(unary_float(op, to_float(r.v[k]), alpha, beta));
    y[i] = r;
  }
}

template <typename T>
__global__ void unary_int_kernel(Unary op, const T* x, T* y, int64_t n, float alpha, float beta) {
  TRT_GRID_STRIDE(i, n) {
    const T v = x[i];
    T r = v;
    switch (op) {
      case Unary::kRelu:
        r = v < T(0) ? T(0) : v;
        break;
      case Unary::kAbs:
        r = v < T(0) ? T(-v) : v;
        break;
      case Unary::kNeg:
        r = T(-v);
        break;
      case Unary::kSign:
        r = v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0));
        break;
      case Unary::kClip: {
        const double d = static_cast<double>(v);
        r = d < alpha ? static_cast<T>(alpha) : (d > beta ? static_cast<T>(beta) : v);
        break;
      }
      case Unary::kScale:
        r = static_cast<T>(static_cast<double>(v) * alpha);
        break;
      default:
        break;
    }
    y[i] = r;
  }
}

bool int_unary_ok(Unary op) {
  return op == Unary::kIdentity || op == Unary::kRelu || op == Unary::kAbs || op == Unary::kNeg ||
         op == Unary::kSign || op == Unary::kClip || op == Unary::kScale;
}

// ---- binary ---------------------------------------------------------------------------------
__device__ __forceinline__ float binary_float(Binary op, float a, float b) {
  switch (op) {
    case Binary::kAdd:
      return a + b;
    case Binary::kSub:
      return a - b;
    case Binary::kMul:
      return a * b;
    case Binary::kDiv:
      return a / b;
    case Binary::kPow:
      return powf(a, b);
    case Binary::kMax:
      return (isnan(a) || isnan(b)) ? nanf("") : (a < b ? b : a);
    case Binary::kMin:
      return (isnan(a) || isnan(b)) ? nanf("") : (b < a ? b : a);
    case Binary::kPRelu:
      return a < 0.0f ? a * b : a;
    case Binary::kMod:
    case Binary::kFMod:
      return fmodf(a, b);
    case Binary::kEqual:
      return a == b;
    case Binary::kLess:
      return a < b;
    case Binary::kGreater:
      return a > b;
    case Binary::kLessOrEqual:
      return a <= b;
    case Binary::kGreaterOrEqual:
      return a >= b;
    case Binary::kAnd:
      return (a != 0.0f) && (b != 0.0f);
    case Binary::kOr:
      return (a != 0.0f) || (b != 0.0f);
    case Binary::kXor:
      return (a != 0.0f) != (b != 0.0f);
  }
  return 0.0f;
}

// Integer arithmetic wraps (done in the unsigned type), division truncates (divisors are
// checked non-zero by the host only for constants; a zero divisor yields 0 here).
template <typename T>
__device__ __forceinline__ T binary_int(Binary op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case Binary::kAdd:
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    case Binary::kSub:
      return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
    case Binary::kMul:
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    case Binary::kDiv:
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return static_cast<T>(U(0) - static_cast<U>(a));
      }
      return static_cast<T>(a / b);
    case Binary::kPow: {
      if constexpr (std::is_signed_v<T>) {
        if (b < T(0)) return a == T(1) ? T(1) : (a == T(-1) ? ((b & 1) ? T(-1) : T(1)) : T(0));
      }
      U r = 1, base = static_cast<U>(a);
      for (T e = b; e > T(0); e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
      }
      return static_cast<T>(r);
    }
    case Binary::kMax:
      return a < b ? b : a;
    case Binary::kMin:
      return b < a ? b : a;
    case Binary::kPRelu:
      if constexpr (std::is_signed_v<T>) {
        return a < T(0) ? static_cast<T>(static_cast<U>(a) * static_cast<U>(b)) : a;
      } else {
        return a;
      }
    case Binary::kMod:
    case Binary::kFMod: {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return 0;
        const T r = static_cast<T>(a % b);
        if (op == Binary::kMod && r != 0 && ((r < 0) != (b < 0))) return static_cast<T>(r + b);
        return r;
      } else {
        return static_cast<T>(a % b);
      }
    }
    case Binary::kEqual:
      return a == b;
    case Binary::kLess:
      return a < b;
    case Binary::kGreater:
      return a > b;
    case Binary::kLessOrEqual:
      return a <= b;
    case Binary::kGreaterOrEqual:
      return a >= b;
    case Binary::kAnd:
      return (a != 0) && (b != 0);
    case Binary::kOr:
      return (a != 0) || (b != 0);
    case Binary::kXor:
      return (a != 0) != (b != 0);
  }
  return 0;
}

template <typename T, typename O>
__device__ __forceinline__ O binary_apply(Binary op, T a, T b) {
  if constexpr (kFloatLike<T>) {
    const float r = binary_float(op, to_float(a), to_float(b));
    if constexpr (std::is_same_v<O, bool>) {
      return r != 0.0f;
    } else {
      return from_float<O>(r);
    }
  } else {
    return static_cast<O>(binary_int<T>(op, a, b));
  }
}

// kind 0: same shape (flat); 1: b is one value; 2: a is one value; 3: general broadcast.
template <typename T, typename O, int kKind>
__global__ void binary_kernel(Binary op, const T* a, const T* b, O* y, Broadcast bc, int64_t n) {
  TRT_GRID_STRIDE(i, n) {
    T va, vb;
    if constexpr (kKind == 0) {
      va = a[i];
      vb = b[i];
    } else if constexpr (kKind == 1) {
      va = a[i];
      vb = b[0];
    } else if constexpr (kKind == 2) {
      va = a[0];
      vb = b[i];
    } else {
      va = a[broadcast_offset(bc, 0, static_cast<uint32_t>(i))];
      vb = b[broadcast_offset(bc, 1, static_cast<uint32_t>(i))];
    }
    y[i] = binary_apply<T, O>(op, va, vb);
  }
}

// Float ops on V consecutive elements (16-byte loads) per thread, 32-bit indices. kKind 0: a and
// b flat; 1: b one value; 2: a one value; 4: b repeats every period_v vectors (a bias along the
// trailing axes: MatMul + Add); 5: a repeats; 6: b holds inner_v vectors per period_v output
// vectors, repeated within the period (channels-last [N, H, W, C] x [N, 1, 1, C]: the
// squeeze-excite scale); 7: the same for a. `store` writes the V results of vector i (StoreVec:
// as T; StoreQuantized: quantized).
template <typename T, int V, int kKind, typename S>
__global__ void binary_vec_kernel(Binary op, const T* a, const T* b, S store, int32_t nv,
                                  int32_t period_v, int32_t inner_v = 1) {
  using W = Vec<T, V>;
  const float sa = kKind == 2 ? to_float(a[0]) : 0.0f, sb = kKind == 1 ? to_float(b[0]) : 0.0f;
  for (int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x); i < nv;
       i += static_cast<int32_t>(gridDim.x * blockDim.x)) {
    W va{}, vb{}, r;
    const int32_t per_image = kKind >= 6 ? (i / period_v) * inner_v + i % inner_v : 0;
    if constexpr (kKind != 2)
      va = reinterpret_cast<const W*>(a)[kKind == 5 ? i % period_v : (kKind == 7 ? per_image : i)];
    if constexpr (kKind != 1)
      vb = reinterpret_cast<const W*>(b)[kKind == 4 ? i % period_v : (kKind == 6 ? per_image : i)];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float fa = kKind == 2 ? sa : to_float(va.v[k]);
      const float fb = kKind == 1 ? sb : to_float(vb.v[k]);
      r.v[k] = from_float<T>(binary_float(op, fa, fb));
    }
    store(i, r);
  }
}

template <typename T, int V>
struct StoreVec {
  T* y;
  __device__ __forceinline__ void operator()(int32_t i, const Vec<T, V>& r) const {
    reinterpret_cast<Vec<T, V>*>(y)[i] = r;
  }
};

// The results (rounded to T, as the graph's binary op writes them) quantized per tensor like
// QuantizeLinear: divided by the scale, one byte of dtype t each (byte_of: round half to even,
// saturating).
template <typename T, int V>
struct StoreQuantized {
  uint8_t* y;
  DataType t;
  float scale, zp;
  __device__ __forceinline__ void operator()(int32_t i, const Vec<T, V>& r) const {
    uint32_t w[V / 4];
#pragma unroll
    for (int j = 0; j < V / 4; ++j) {
      w[j] = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k)
        w[j] |= byte_of(t, to_float(r.v[4 * j + k]) / scale, zp) << (8 * k);
    }
    if constexpr (V == 4) {
      reinterpret_cast<uint32_t*>(y)[i] = w[0];
    } else {
      static_assert(V == 8, "4 or 8 elements per vector");
      reinterpret_cast<uint2*>(y)[i] = make_uint2(w[0], w[1]);
    }
  }
};

// The general broadcast with a quantized output (binary_quantize's fallback).
template <typename T>
__global__ void binary_quantize_kernel(Binary op, const T* a, const T* b, uint8_t* y, Broadcast bc,
                                       int64_t n, DataType t, float scale, float zp) {
  TRT_GRID_STRIDE(i, n) {
    const uint32_t j = static_cast<uint32_t>(i);
    const T r = from_float<T>(binary_float(op, to_float(a[broadcast_offset(bc, 0, j)]),
                                           to_float(b[broadcast_offset(bc, 1, j)])));
    y[i] = static_cast<uint8_t>(byte_of(t, to_float(r) / scale, zp));
  }
}

bool is_flat(const Broadcast& bc, int which) {
  int64_t expect = 1;
  for (int d = bc.rank - 1; d >= 0; --d) {
    if (bc.dims[d] != 1 && bc.strides[which][d] != expect) return false;
    expect *= bc.dims[d];
  }
  return true;
}
bool is_scalar(const Broadcast& bc, int which) {
  for (int d = 0; d < bc.rank; ++d)
    if (bc.dims[d] != 1 && bc.strides[which][d] != 0) return false;
  return true;
}

// The number of elements after which input `which` repeats over the flat output (it covers the
// trailing axes contiguously and is broadcast along the leading ones), or 0.
int64_t period_of(const Broadcast& bc, int which) {
  int64_t expect = 1;
  int d = bc.rank - 1;
  for (; d >= 0; --d) {
    if (bc.dims[d] == 1) continue;
    if (bc.strides[which][d] != expect) break;
    expect *= bc.dims[d];
  }
  for (; d >= 0; --d)
    if (bc.dims[d] != 1 && bc.strides[which][d] != 0) return 0;
  return expect;
}

// Input `which` of the shape [N.., 1.., C..] against the output's [N.., M.., C..]: it covers the
// trailing axes contiguously (inner elements), is broadcast along the middle ones (of `middle`
// output elements) and continues contiguously along the leading ones. False otherwise, or when
// there is no middle or no trailing part (the other kinds' cases).
bool per_image_channels(const Broadcast& bc, int which, int64_t& inner, int64_t& middle) {
  int d = bc.rank - 1;
  inner = 1;
  for (; d >= 0; --d) {
    if (bc.dims[d] == 1) continue;
    if (bc.strides[which][d] != inner) break;
    inner *= bc.dims[d];
  }
  middle = 1;
  for (; d >= 0; --d) {
    if (bc.dims[d] == 1) continue;
    if (bc.strides[which][d] != 0) break;
    middle *= bc.dims[d];
  }
  int64_t expect = inner;
  for (; d >= 0; --d) {
    if (bc.dims[d] == 1) continue;
    if (bc.strides[which][d] != expect) return false;
    expect *= bc.dims[d];
  }
  return inner > 1 && middle > 1;
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// The vectorised float path; false when the shapes or pointers do not allow it.
// Results go through `py` (a StoreVec or StoreQuantized for V = 16 / sizeof(T) elements).
template <typename T, typename S>
bool launch_binary_vec(Binary op, const void* a, const void* b, S py, const Broadcast& bc,
                       int64_t n, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  if (n % V != 0 || n / V >= (int64_t{1} << 31)) return false;
  const bool fa = is_flat(bc, 0), fb = is_flat(bc, 1);
  const bool sa = is_scalar(bc, 0), sb = is_scalar(bc, 1);
  const int64_t pa = fa ? 0 : period_of(bc, 0), pb = fb ? 0 : period_of(bc, 1);
  const T* xa = static_cast<const T*>(a);
  const T* xb = static_cast<const T*>(b);
  const int32_t nv = static_cast<int32_t>(n / V);
  const unsigned g = blocks_for(nv);
  auto ok_vec = [&](const void* p, int64_t period) { return aligned16(p) && period % V == 0; };
  if (fa && fb && aligned16(a) && aligned16(b)) {
    binary_vec_kernel<T, V, 0, S><<<g, kThreads, 0, s>>>(op, xa, xb, py, nv, 1);
  } else if (fa && sb && aligned16(a)) {
    binary_vec_kernel<T, V, 1, S><<<g, kThreads, 0, s>>>(op, xa, xb, py, nv, 1);
  } else if (fb && sa && aligned16(b)) {
    binary_vec_kernel<T, V, 2, S><<<g, kThreads, 0, s>>>(op, xa, xb, py, nv, 1);
  } else if (fa && pb > 0 && aligned16(a) && ok_vec(b, pb)) {
    binary_vec_kernel<T, V, 4, S>
        <<<g, kThreads, 0, s>>>(op, xa, xb, py, nv, static_cast<int32_t>(pb / V));
  } else if (fb && pa > 0 && aligned16(b) && ok_vec(a, pa)) {
    binary_vec_kernel<T, V, 5, S>
        <<<g, kThreads, 0, s>>>(op, xa, xb, py, nv, static_cast<int32_t>(pa / V));
  } else {
    int64_t inner = 0, middle = 0;
    if (fa && per_image_channels(bc, 1, inner, middle) && inner % V == 0 && aligned16(a) &&
        aligned16(b)) {
      binary_vec_kernel<T, V, 6, S><<<g, kThreads, 0, s>>>(op, xa, xb, py, nv,
                                                           static_cast<int32_t>(inner * middle / V),
                                                           static_cast<int32_t>(inner / V));
    } else if (fb && per_image_channels(bc, 0, inner, middle) && inner % V == 0 && aligned16(a) &&
               aligned16(b)) {
      binary_vec_kernel<T, V, 7, S><<<g, kThreads, 0, s>>>(op, xa, xb, py, nv,
                                                           static_cast<int32_t>(inner * middle / V),
                                                           static_cast<int32_t>(inner / V));
    } else {
      return false;
    }
  }
  return true;
}

template <typename T, typename O>
void launch_binary(Binary op, const void* a, const void* b, void* y, const Broadcast& bc, int64_t n,
                   cudaStream_t s) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  O* py = static_cast<O*>(y);
  if constexpr (kFloatLike<T> && std::is_same_v<T, O>) {
    constexpr int V = 16 / sizeof(T);
    if (aligned16(y) && launch_binary_vec<T>(op, a, b, StoreVec<T, V>{py}, bc, n, s)) return;
  }
  const unsigned g = blocks_for(n);
  const bool fa = is_flat(bc, 0), fb = is_flat(bc, 1);
  if (fa && fb) {
    binary_kernel<T, O, 0><<<g, kThreads, 0, s>>>(op, pa, pb, py, bc, n);
  } else if (fa && is_scalar(bc, 1)) {
    binary_kernel<T, O, 1><<<g, kThreads, 0, s>>>(op, pa, pb, py, bc, n);
  } else if (fb && is_scalar(bc, 0)) {
    binary_kernel<T, O, 2><<<g, kThreads, 0, s>>>(op, pa, pb, py, bc, n);
  } else {
    binary_kernel<T, O, 3><<<g, kThreads, 0, s>>>(op, pa, pb, py, bc, n);
  }
}

template <typename T>
void launch_binary_typed(Binary op, const void* a, const void* b, void* y, const Broadcast& bc,
                         int64_t n, cudaStream_t s) {
  if (binary_is_comparison(op)) {
    launch_binary<T, bool>(op, a, b, y, bc, n, s);
  } else {
    launch_binary<T, T>(op, a, b, y, bc, n, s);
  }
}

template <typename U>
__global__ void where_kernel(const bool* c, const U* x, const U* z, U* y, Broadcast bc, int64_t n) {
  TRT_GRID_STRIDE(i, n) {
    const uint32_t j = static_cast<uint32_t>(i);
    y[i] = c[broadcast_offset(bc, 0, j)] ? x[broadcast_offset(bc, 1, j)]
                                         : z[broadcast_offset(bc, 2, j)];
  }
}

// ---- epilogues ---------------------------------------------------------------------------
template <typename T>
__global__ void bias_act_kernel(T* y, const T* bias, const T* residual, int64_t n, int64_t channels,
                                int64_t inner, Act act, float alpha, float beta) {
  TRT_GRID_STRIDE(i, n) {
    float v = to_float(y[i]);
    if (bias) v += to_float(bias[(i / inner) % channels]);
    if (residual) v += to_float(residual[i]);
    y[i] = from_float<T>(apply_act(act, v, alpha, beta));
  }
}

}  // namespace

bool binary_is_comparison(Binary op) {
  return op == Binary::kEqual || op == Binary::kLess || op == Binary::kGreater ||
         op == Binary::kLessOrEqual || op == Binary::kGreaterOrEqual || op == Binary::kAnd ||
         op == Binary::kOr || op == Binary::kXor;
}

cudaError_t unary(Unary op, DataType dt, const void* x, void* y, int64_t n, float alpha, float beta,
                  cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const unsigned g = blocks_for(n);
  const bool done = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = 16 / sizeof(T);
    if (n % V == 0 && n / V < (int64_t{1} << 31) && aligned16(x) && aligned16(y)) {
      const int32_t nv = static_cast<int32_t>(n / V);
      unary_float_vec_kernel<T, V><<<blocks_for(nv), kThreads, 0, stream>>>(
          op, static_cast<const Vec<T, V>*>(x), static_cast<Vec<T, V>*>(y), nv, alpha, beta);
      return;
    }
    unary_float_kernel<T><<<g, kThreads, 0, stream>>>(op, static_cast<const T*>(x),
                                                      static_cast<T*>(y), n, alpha, beta);
  });
  if (done) return cudaGetLastError();
  if (!int_unary_ok(op)) return cudaErrorNotSupported;
  if (dt == DataType::kInt8) {
    unary_int_kernel<int8_t><<<g, kThreads, 0, stream>>>(op, static_cast<const int8_t*>(x),
                                                         static_cast<int8_t*>(y), n, alpha, beta);
  } else if (dt == DataType::kInt32) {
    unary_int_kernel<int32_t><<<g, kThreads, 0, stream>>>(op, static_cast<const int32_t*>(x),
                                                          static_cast<int32_t*>(y), n, alpha, beta);
  } else if (dt == DataType::kInt64) {
    unary_int_kernel<int64_t><<<g, kThreads, 0, stream>>>(op, static_cast<const int64_t*>(x),
                                                          static_cast<int64_t*>(y), n, alpha, beta);
  } else {
    return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

cudaError_t binary(Binary op, DataType dt, const void* a, const void* b, void* y,
                   const Broadcast& bc, int64_t numel, cudaStream_t stream) {
  if (numel <= 0) return cudaSuccess;
  const bool logic = op == Binary::kAnd || op == Binary::kOr || op == Binary::kXor;
  if (logic) {
    if (dt != DataType::kBool) return cudaErrorNotSupported;
    launch_binary<uint8_t, bool>(op, a, b, y, bc, numel, stream);
    return cudaGetLastError();
  }
  if (dispatch_float(dt, [&](auto tag) {
        launch_binary_typed<decltype(tag)>(op, a, b, y, bc, numel, stream);
      }))
    return cudaGetLastError();
  if (dt == DataType::kInt32) {
    launch_binary_typed<int32_t>(op, a, b, y, bc, numel, stream);
  } else if (dt == DataType::kInt64) {
    launch_binary_typed<int64_t>(op, a, b, y, bc, numel, stream);
  } else if (dt == DataType::kInt8) {
    launch_binary_typed<int8_t>(op, a, b, y, bc, numel, stream);
  } else if (dt == DataType::kUInt8) {
    launch_binary_typed<uint8_t>(op, a, b, y, bc, numel, stream);
  } else if (dt == DataType::kBool && op == Binary::kEqual) {
    launch_binary<uint8_t, bool>(op, a, b, y, bc, numel, stream);
  } else {
    return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

cudaError_t binary_quantize(Binary op, DataType dt, const void* a, const void* b, void* y,
                            const Broadcast& bc, int64_t numel, DataType yt, float scale, float zp,
                            cudaStream_t stream) {
  if (numel <= 0) return cudaSuccess;
  if (binary_is_comparison(op) || op == Binary::kAnd || op == Binary::kOr || op == Binary::kXor ||
      !(yt == DataType::kInt8 || yt == DataType::kUInt8 || yt == DataType::kFloat8E4M3FN ||
        yt == DataType::kFloat8E5M2))
    return cudaErrorNotSupported;
  uint8_t* py = static_cast<uint8_t*>(y);
  if (dispatch_float(dt, [&](auto tag) {
        using T = decltype(tag);
        constexpr int V = 16 / sizeof(T);
        if (aligned16(y) && launch_binary_vec<T>(op, a, b, StoreQuantized<T, V>{py, yt, scale, zp},
                                                 bc, numel, stream))
          return;
        binary_quantize_kernel<T><<<blocks_for(numel), kThreads, 0, stream>>>(
            op, static_cast<const T*>(a), static_cast<const T*>(b), py, bc, numel, yt, scale, zp);
      }))
    return cudaGetLastError();
  return cudaErrorNotSupported;
}

cudaError_t where(size_t esz, const void* cond, const void* x, const void* z, void* y,
                  const Broadcast& bc, int64_t numel, cudaStream_t stream) {
  if (numel <= 0) return cudaSuccess;
  const bool ok = dispatch_size(esz, [&](auto tag) {
    using U = decltype(tag);
    where_kernel<U><<<blocks_for(numel), kThreads, 0, stream>>>(
        static_cast<const bool*>(cond), static_cast<const U*>(x), static_cast<const U*>(z),
        static_cast<U*>(y), bc, numel);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

cudaError_t bias_act(DataType dt, void* y, const void* bias, const void* residual, int64_t n,
                     int64_t channels, int64_t inner, Act act, float alpha, float beta,
                     cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const bool ok = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    bias_act_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), static_cast<const T*>(residual), n,
        channels, inner, act, alpha, beta);
  });
  return ok ? cudaGetLastError() : cudaErrorNotSupported;
}

namespace {
__global__ void probe_kernel(int* p) {
  if (p) *p = 1;
}
}  // namespace

cudaError_t probe_kernels() {
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes(&attr, probe_kernel);
}

}  // namespace trtutils::cuda::k
