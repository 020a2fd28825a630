// CPU kernels for Cast and CastLike. Every element goes through one of three exact
// intermediates (double for floats, int64 for signed ints, uint64 for unsigned ints and bool), so
// each dtype needs one loader and three storers instead of a loop per (from, to) pair.
#include <cstring>

#include "backends/cpu/elementwise_common.h"
#include "backends/cpu/kernel_registry.h"

namespace trtutils::cpu::ew {
namespace {

constexpr int64_t kChunk = 1024;

// Rounds a double to float with round-to-odd, so that a second rounding to a narrower float
// (fp16/bf16/fp8, at most 11 significant bits) equals a single correct rounding of the double.
float round_to_odd_float(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) --bits;  // truncate toward zero
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}

enum class Inter { kDouble, kInt64, kUInt64 };

Inter intermediate_of(DataType t) {
  if (dtype_is_float(t)) return Inter::kDouble;
  if (dtype_is_signed(t)) return Inter::kInt64;
  return Inter::kUInt64;
}

int nibble(const uint8_t* p, int64_t i) {
  return (p[i >> 1] >> ((i & 1) * 4)) & 0xf;
}

// Loads elements [b, b + n) of x into buf (type I).
template <typename I>
void load_chunk(const Tensor& x, int64_t b, int64_t n, I* buf) {
  const DataType t = x.dtype();
  if (t == DataType::kInt4 || t == DataType::kUInt4) {
    const auto* p = x.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      const int v = nibble(p, b + i);
      buf[i] = static_cast<I>(t == DataType::kInt4 && v >= 8 ? v - 16 : v);
    }
    return;
  }
  using All = Concat<Concat<FloatTypes, Types<DataType::kFloat8E4M3FN, DataType::kFloat8E5M2>>,
                     Concat<IntTypes, BoolTypes>>;
  try_dispatch(t, All{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>() + b;
    for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<I>(load(p[i]));
  });
}

template <typename O, typename I>
O convert(I v, bool saturate) {
  if constexpr (std::is_same_v<O, bool>) {
    return v != I(0);
  } else if constexpr (std::is_same_v<O, float> || std::is_same_v<O, double>) {
    return static_cast<O>(v);
  } else if constexpr (kIsNarrowFloat<O>) {
    const float f = round_to_odd_float(static_cast<double>(v));
    if constexpr (std::is_same_v<O, float8_e4m3fn>) {
      return float_to_e4m3fn(f, saturate);
    } else if constexpr (std::is_same_v<O, float8_e5m2>) {
      return float_to_e5m2(f, saturate);
    } else {
      return store<O>(f);
    }
  } else if constexpr (std::is_same_v<I, double>) {
    return float_to_int<O>(v);
  } else {
    return static_cast<O>(v);  // modular, like numpy's astype
  }
}

template <typename I>
void store_chunk(Tensor& y, int64_t b, int64_t n, const I* buf, bool saturate) {
  const DataType t = y.dtype();
  if (t == DataType::kInt4 || t == DataType::kUInt4) {
    // ONNX: round to nearest even, then clamp to the 4-bit range.
    const bool s = t == DataType::kInt4;
    const int lo = s ? -8 : 0, hi = s ? 7 : 15;
    auto* p = y.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      int v;
      if constexpr (std::is_same_v<I, double>) {
        v = std::isnan(buf[i])
                ? 0
                : static_cast<int>(std::nearbyint(std::clamp<double>(buf[i], lo, hi)));
      } else if constexpr (std::is_signed_v<I>) {
        v = static_cast<int>(std::clamp<I>(buf[i], lo, hi));
      } else {
        v = static_cast<int>(std::min<I>(buf[i], static_cast<I>(hi)));
      }
      const int64_t j = b + i;
      const int shift = static_cast<int>(j & 1) * 4;
      p[j >> 1] = static_cast<uint8_t>((p[j >> 1] & ~(0xf << shift)) | ((v & 0xf) << shift));
    }
    return;
  }
  using All = Concat<Concat<FloatTypes, Types<DataType::kFloat8E4M3FN, DataType::kFloat8E5M2>>,
                     Concat<IntTypes, BoolTypes>>;
  try_dispatch(t, All{}, [&](auto tag) {
    using O = typename decltype(tag)::type;
    O* p = y.data<O>() + b;
    for (int64_t i = 0; i < n; ++i) p[i] = convert<O>(buf[i], saturate);
  });
}

bool castable(DataType t) {
  switch (t) {
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kInt64:
    case DataType::kUInt64:
    case DataType::kBool:
    case DataType::kInt4:
    case DataType::kUInt4:
      return true;
    case DataType::kUndefined:
    case DataType::kString:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2FNUZ:
      return false;
  }
  return false;
}

template <typename I>
void cast_via(const Tensor& x, Tensor& y, bool saturate) {
  const int64_t n = x.numel();
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  auto body = [&](int64_t c0, int64_t c1) {
    I buf[kChunk];
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t b = c * kChunk;
      const int64_t len = std::min(kChunk, n - b);
      load_chunk<I>(x, b, len, buf);
      store_chunk<I>(y, b, len, buf, saturate);
    }
  };
  // Chunks start at even element indices, so packed 4-bit outputs never share a byte between
  // threads.
  parallel_for(chunks, body, kChunk);
}

}  // namespace

Tensor cast_tensor(const Tensor& x, DataType to, bool saturate, const ir::Node& node) {
  TRT_CHECK(castable(x.dtype()), ErrorCode::kNotSupported,
            "{}: cannot cast from dtype {} (not supported by this build)", node.describe(),
            dtype_name(x.dtype()));
  TRT_CHECK(castable(to), ErrorCode::kNotSupported,
            "{}: cannot cast to dtype {} (not supported by this build)", node.describe(),
            dtype_name(to));
  if (x.dtype() == to) return x.clone();
  Tensor y(to, x.shape());
  // Between float32/float16/bfloat16 a direct conversion is one correct rounding (the load is
  // exact): the common mixed-precision casts skip the intermediate.
  using F32Family = Types<DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16>;
  bool done = false;
  try_dispatch(x.dtype(), F32Family{}, [&](auto src) {
    done = try_dispatch(to, F32Family{}, [&](auto dst) {
      using S = typename decltype(src)::type;
      using D = typename decltype(dst)::type;
      const S* px = x.data<S>();
      D* py = y.data<D>();
      parallel_for(x.numel(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = store<D>(load(px[i]));
      });
    });
  });
  if (done) return y;
  switch (intermediate_of(x.dtype())) {
    case Inter::kDouble:
      cast_via<double>(x, y, saturate);
      break;
    case Inter::kInt64:
      cast_via<int64_t>(x, y, saturate);
      break;
    case Inter::kUInt64:
      cast_via<uint64_t>(x, y, saturate);
      break;
  }
  return y;
}

namespace {

DataType cast_target(const KernelContext& ctx) {
  TRT_CHECK(ctx.node.has_attr("to"), ErrorCode::kInvalidArgument,
            "{}: required attribute 'to' is missing", ctx.node.describe());
  const int64_t to = ctx.node.attr_int("to", 0);
  const auto t = dtype_from_onnx(static_cast<int32_t>(to));
  TRT_CHECK(t.has_value() && to == static_cast<int32_t>(to), ErrorCode::kNotSupported,
            "{}: 'to' = {} is not a supported ONNX dtype", ctx.node.describe(), to);
  return *t;
}

}  // namespace

void register_cast_kernels(KernelRegistry& r) {
  r.add({"Cast", "", [](KernelContext& ctx) {
           const bool saturate = ctx.node.attr_int("saturate", 1) != 0;
           ctx.outputs.at(0) = cast_tensor(ctx.input(0), cast_target(ctx), saturate, ctx.node);
         }});
  r.add({"CastLike", "", [](KernelContext& ctx) {
           const bool saturate = ctx.node.attr_int("saturate", 1) != 0;
           ctx.outputs.at(0) = cast_tensor(ctx.input(0), ctx.input(1).dtype(), saturate, ctx.node);
         }});
}

}  // namespace trtutils::cpu::ew
