// CPU kernels for the elementwise op family: broadcasting binary arithmetic, comparisons and
// logic, Pow, Mod, PRelu, Where and the variadic Min/Max/Sum/Mean. Unary ops, Cast and the
// reductions/softmax live in unary_kernels.cpp, cast_kernels.cpp and reduce_kernels.cpp and are
// registered from register_elementwise_kernels().
#include <cstring>

#include "backends/cpu/elementwise_common.h"
#include "backends/cpu/kernel_registry.h"
#include "ops/op_registry.h"

namespace trtutils::cpu {
namespace ew {

Shape broadcast_all(const std::vector<const Tensor*>& ins, const ir::Node& node) {
  Shape out = ins.at(0)->shape();
  for (size_t i = 1; i < ins.size(); ++i) out = ops::broadcast_shapes(out, ins[i]->shape(), node);
  return out;
}

namespace {

// out = op(a, b) with broadcasting; A/B are the input element types, O the output's.
template <typename A, typename B, typename O, typename Op>
void binary_apply(const Tensor& a, const Tensor& b, Tensor& out, const Op& op) {
  const BroadcastIter<2> it(out.shape(), {&a.shape(), &b.shape()});
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  it.run([&](int64_t o, const auto& off, const auto& step, int64_t n) {
    const A* x = pa + off[0];
    const B* y = pb + off[1];
    O* z = po + o;
    if (step[0] && step[1]) {
      for (int64_t i = 0; i < n; ++i) z[i] = store<O>(op(load(x[i]), load(y[i])));
    } else if (step[0]) {
      const auto yv = load(*y);
      for (int64_t i = 0; i < n; ++i) z[i] = store<O>(op(load(x[i]), yv));
    } else if (step[1]) {
      const auto xv = load(*x);
      for (int64_t i = 0; i < n; ++i) z[i] = store<O>(op(xv, load(y[i])));
    } else {
      std::fill(z, z + n, store<O>(op(load(*x), load(*y))));
    }
  });
}

void check_same_dtype(const KernelContext& ctx, size_t i, size_t j) {
  const DataType a = ctx.input(i).dtype(), b = ctx.input(j).dtype();
  TRT_CHECK(a == b, ErrorCode::kInvalidArgument,
            "{}: inputs {} and {} have different dtypes ({} and {}); insert a Cast",
            ctx.node.describe(), i, j, dtype_name(a), dtype_name(b));
}

// Runs a same-type binary op over the type list L; the output has the inputs' type, or bool
// when kBoolOut.
template <typename L, bool kBoolOut = false, typename MakeOp>
Tensor binary_same_type(const KernelContext& ctx, const Tensor& a, const Tensor& b,
                        MakeOp make_op) {
  TRT_CHECK(a.dtype() == b.dtype(), ErrorCode::kInvalidArgument,
            "{}: inputs have different dtypes ({} and {}); insert a Cast", ctx.node.describe(),
            dtype_name(a.dtype()), dtype_name(b.dtype()));
  const Shape shape = ops::broadcast_shapes(a.shape(), b.shape(), ctx.node);
  Tensor out(kBoolOut ? DataType::kBool : a.dtype(), shape);
  dispatch<L>(a.dtype(), ctx.node, "input 0", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto op = make_op(tag);
    if constexpr (kBoolOut) {
      binary_apply<T, T, bool>(a, b, out, op);
    } else {
      binary_apply<T, T, T>(a, b, out, op);
    }
  });
  return out;
}

template <typename L, bool kBoolOut = false, typename MakeOp>
void add_binary(KernelRegistry& r, const char* name, MakeOp make_op) {
  r.add({name, "", [make_op](KernelContext& ctx) {
           ctx.outputs.at(0) =
               binary_same_type<L, kBoolOut>(ctx, ctx.input(0), ctx.input(1), make_op);
         }});
}

template <typename T>
void check_no_zero_divisor(const KernelContext& ctx, const Tensor& b) {
  const T* p = b.data<T>();
  for (int64_t i = 0; i < b.numel(); ++i)
    TRT_CHECK(p[i] != 0, ErrorCode::kInvalidArgument,
              "{}: integer division by zero (divisor element {})", ctx.node.describe(), i);
}

// ---- Pow: base and exponent may have different types (opset >= 12) --------------------------
template <typename T>
T int_pow(T base, int64_t e) {
  if (e < 0) {  // 1/base^|e| truncated toward zero
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (e & 1) ? T(-1) : T(1);
    }
    return 0;
  }
  T result = 1;
  while (e > 0) {
    if (e & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return result;
}

void pow_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  const Shape shape = ops::broadcast_shapes(x.shape(), y.shape(), ctx.node);
  Tensor out(x.dtype(), shape);
  const bool int_base = dtype_is_integer(x.dtype());
  TRT_CHECK(dtype_is_integer(y.dtype()) || dtype_is_float(y.dtype()), ErrorCode::kNotSupported,
            "{}: exponent dtype {} is not supported", ctx.node.describe(), dtype_name(y.dtype()));
  if (!int_base) {
    // Float base: the exponent is converted to the base's compute type.
    const DataType et = x.dtype() == DataType::kFloat64 ? DataType::kFloat64 : DataType::kFloat32;
    const Tensor e = y.dtype() == et ? y : cast_tensor(y, et, true, ctx.node);
    dispatch<FloatTypes>(x.dtype(), ctx.node, "input 0 (base)", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      binary_apply<T, C, T>(x, e, out, [](C a, C b) { return std::pow(a, b); });
    });
  } else if (dtype_is_integer(y.dtype())) {
    const Tensor e =
        y.dtype() == DataType::kInt64 ? y : cast_tensor(y, DataType::kInt64, true, ctx.node);
    dispatch<IntTypes>(x.dtype(), ctx.node, "input 0 (base)", [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_apply<T, int64_t, T>(x, e, out, [](T a, int64_t b) { return int_pow<T>(a, b); });
    });
  } else {
    // Integer base, float exponent: computed in double, truncated like numpy's astype.
    const Tensor e =
        y.dtype() == DataType::kFloat64 ? y : cast_tensor(y, DataType::kFloat64, true, ctx.node);
    dispatch<IntTypes>(x.dtype(), ctx.node, "input 0 (base)", [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_apply<T, double, T>(x, e, out, [](T a, double b) {
        return float_to_int<T>(std::pow(static_cast<double>(a), b));
      });
    });
  }
  ctx.outputs.at(0) = std::move(out);
}

// ---- Mod ------------------------------------------------------------------------------------
void mod_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  check_same_dtype(ctx, 0, 1);
  const bool fmod = ctx.node.attr_int("fmod", 0) != 0;
  if (dtype_is_float(a.dtype())) {
    TRT_CHECK(fmod, ErrorCode::kInvalidArgument,
              "{}: Mod on floating-point inputs requires fmod=1 (ONNX spec)", ctx.node.describe());
    ctx.outputs.at(0) = binary_same_type<FloatTypes>(ctx, a, b, [](auto tag) {
      using C = compute_t<typename decltype(tag)::type>;
      return [](C x, C y) { return std::fmod(x, y); };
    });
    return;
  }
  dispatch<IntTypes>(b.dtype(), ctx.node, "input 1", [&](auto tag) {
    check_no_zero_divisor<typename decltype(tag)::type>(ctx, b);
  });
  ctx.outputs.at(0) = binary_same_type<IntTypes>(ctx, a, b, [fmod](auto tag) {
    using T = typename decltype(tag)::type;
    return [fmod](T x, T y) -> T {
      if constexpr (std::is_signed_v<T>) {
        if (y == -1) return 0;  // avoids the INT_MIN % -1 trap
        const T r = static_cast<T>(x % y);
        if (!fmod && r != 0 && ((r < 0) != (y < 0))) return static_cast<T>(r + y);
        return r;
      } else {
        return static_cast<T>(x % y);
      }
    };
  });
}

// ---- Div --------------------------------------------------------------------------------------
void div_kernel(KernelContext& ctx) {
  const Tensor& b = ctx.input(1);
  if (dtype_is_integer(b.dtype())) {
    dispatch<IntTypes>(b.dtype(), ctx.node, "input 1", [&](auto tag) {
      check_no_zero_divisor<typename decltype(tag)::type>(ctx, b);
    });
  }
  ctx.outputs.at(0) = binary_same_type<NumericTypes>(ctx, ctx.input(0), b, [](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    return [](C x, C y) -> C {
      if constexpr (std::is_integral_v<C>) {
        if constexpr (std::is_signed_v<C>) {
          if (y == -1) return wrap_neg(x);
        }
        return static_cast<C>(x / y);  // truncates toward zero, as ONNX specifies
      } else {
        return x / y;
      }
    };
  });
}

// ---- PRelu: slope broadcasts to X (unidirectional) ---------------------------------------------
void prelu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor slope = ctx.input(1);
  // Opset <= 6 models (and converters that kept them) give a per-channel slope of shape [C];
  // where numpy broadcasting would fail, apply it along axis 1 as those opsets did.
  if (slope.rank() == 1 && x.rank() >= 3 && slope.dim(0) == x.dim(1) && slope.dim(0) != 1 &&
      slope.dim(0) != x.shape().back()) {
    Shape s(x.rank() - 1, 1);
    s[0] = slope.dim(0);
    slope = slope.reshaped(s);
  }
  const Shape shape = ops::broadcast_shapes(x.shape(), slope.shape(), ctx.node);
  TRT_CHECK(shape == x.shape(), ErrorCode::kInvalidArgument,
            "{}: slope of shape {} does not broadcast to X of shape {}", ctx.node.describe(),
            shape_str(slope.shape()), shape_str(x.shape()));
  using L = Concat<FloatTypes,
                   Types<DataType::kInt32, DataType::kInt64, DataType::kUInt32, DataType::kUInt64>>;
  ctx.outputs.at(0) = binary_same_type<L>(ctx, x, slope, [](auto tag) {
    using C = compute_t<typename decltype(tag)::type>;
    return [](C v, C s) -> C {
      if constexpr (std::is_integral_v<C>) {
        return v < C{0} ? wrap_mul(v, s) : v;
      } else {
        return v < C{0} ? v * s : v;
      }
    };
  });
}

// ---- Where: type-agnostic, by element size ------------------------------------------------------
void where_kernel(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  TRT_CHECK(c.dtype() == DataType::kBool, ErrorCode::kInvalidArgument,
            "{}: condition must be bool, got {}", ctx.node.describe(), dtype_name(c.dtype()));
  check_same_dtype(ctx, 1, 2);
  const int bits = dtype_bits(x.dtype());
  TRT_CHECK(bits >= 8, ErrorCode::kNotSupported, "{}: dtype {} is not supported",
            ctx.node.describe(), dtype_name(x.dtype()));
  const Shape shape = broadcast_all({&c, &x, &y}, ctx.node);
  Tensor& out = ctx.make_output(0, x.dtype(), shape);
  const BroadcastIter<3> it(shape, {&c.shape(), &x.shape(), &y.shape()});
  auto run = [&](auto tag) {
    using U = typename decltype(tag)::type;
    const bool* pc = c.data<bool>();
    const U* px = x.data<U>();
    const U* py = y.data<U>();
    U* po = out.data<U>();
    it.run([&](int64_t o, const auto& off, const auto& step, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        po[o + i] = pc[off[0] + i * step[0]] ? px[off[1] + i * step[1]] : py[off[2] + i * step[2]];
    });
  };
  switch (bits) {
    case 8:
      run(Tag<uint8_t>{});
      break;
    case 16:
      run(Tag<uint16_t>{});
      break;
    case 32:
      run(Tag<uint32_t>{});
      break;
    case 64:
      run(Tag<uint64_t>{});
      break;
    default:
      TRT_THROW(ErrorCode::kNotSupported, "{}: dtype {} is not supported", ctx.node.describe(),
                dtype_name(x.dtype()));
  }
}

// ---- variadic Min/Max/Sum/Mean
// --------------------------------------------------------------------
template <typename L, typename MakeOp>
void variadic(KernelContext& ctx, MakeOp make_op, bool mean) {
  const size_t n = ctx.num_inputs();
  TRT_CHECK(n >= 1, ErrorCode::kInvalidArgument, "{}: needs at least one input",
            ctx.node.describe());
  for (size_t i = 0; i < n; ++i) ctx.input(i);  // throws on omitted inputs
  for (size_t i = 1; i < n; ++i) check_same_dtype(ctx, 0, i);
  Tensor acc;
  if (n == 1) {
    dispatch<L>(ctx.input(0).dtype(), ctx.node, "input 0", [](auto) {});
    acc = ctx.input(0).clone();
  } else {
    acc = binary_same_type<L>(ctx, ctx.input(0), ctx.input(1), make_op);
    for (size_t i = 2; i < n; ++i) acc = binary_same_type<L>(ctx, acc, ctx.input(i), make_op);
  }
  if (mean && n > 1) {
    dispatch<FloatTypes>(acc.dtype(), ctx.node, "input 0", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      T* p = acc.data<T>();
      const C inv = C(1) / static_cast<C>(n);
      parallel_for(acc.numel(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = store<T>(load(p[i]) * inv);
      });
    });
  }
  ctx.outputs.at(0) = std::move(acc);
}

// Min/Max propagate NaN like numpy's minimum/maximum.
struct MaxOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
    }
    return a < b ? b : a;
  }
};
struct MinOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
    }
    return b < a ? b : a;
  }
};
struct AddOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return wrap_add(a, b);
    } else {
      return a + b;
    }
  }
};
struct SubOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return wrap_sub(a, b);
    } else {
      return a - b;
    }
  }
};
struct MulOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return wrap_mul(a, b);
    } else {
      return a * b;
    }
  }
};

template <typename Op>
auto make(Op op) {
  return [op](auto) { return op; };
}

}  // namespace
}  // namespace ew

void register_elementwise_kernels(KernelRegistry& r) {
  using namespace ew;  // NOLINT
  add_binary<NumericTypes>(r, "Add", make(AddOp{}));
  add_binary<NumericTypes>(r, "Sub", make(SubOp{}));
  add_binary<NumericTypes>(r, "Mul", make(MulOp{}));
  r.add({"Div", "", div_kernel});
  r.add({"Pow", "", pow_kernel});
  r.add({"Mod", "", mod_kernel});
  r.add({"PRelu", "", prelu_kernel});
  r.add({"Where", "", where_kernel});

  using EqTypes = Concat<NumericTypes, BoolTypes>;
  add_binary<EqTypes, true>(r, "Equal", make([](auto a, auto b) { return a == b; }));
  add_binary<NumericTypes, true>(r, "Less", make([](auto a, auto b) { return a < b; }));
  add_binary<NumericTypes, true>(r, "Greater", make([](auto a, auto b) { return a > b; }));
  add_binary<NumericTypes, true>(r, "LessOrEqual", make([](auto a, auto b) { return a <= b; }));
  add_binary<NumericTypes, true>(r, "GreaterOrEqual", make([](auto a, auto b) { return a >= b; }));
  add_binary<BoolTypes, true>(r, "And", make([](bool a, bool b) { return a && b; }));
  add_binary<BoolTypes, true>(r, "Or", make([](bool a, bool b) { return a || b; }));
  add_binary<BoolTypes, true>(r, "Xor", make([](bool a, bool b) { return a != b; }));

  r.add({"Max", "", [](KernelContext& ctx) { variadic<NumericTypes>(ctx, make(MaxOp{}), false); }});
  r.add({"Min", "", [](KernelContext& ctx) { variadic<NumericTypes>(ctx, make(MinOp{}), false); }});
  r.add({"Sum", "", [](KernelContext& ctx) { variadic<FloatTypes>(ctx, make(AddOp{}), false); }});
  r.add({"Mean", "", [](KernelContext& ctx) { variadic<FloatTypes>(ctx, make(AddOp{}), true); }});

  register_unary_kernels(r);
  register_cast_kernels(r);
  register_reduce_kernels(r);
  register_softmax_kernels(r);
}

}  // namespace trtutils::cpu
