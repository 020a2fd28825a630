// CPU kernels for the unary elementwise ops: math functions, activations, Clip, Not, IsNaN/IsInf
// and Identity. Narrow floats (fp16/bf16) are computed in float.
#include <cstring>

#include "backends/cpu/elementwise_common.h"
#include "backends/cpu/kernel_registry.h"

namespace trtutils::cpu::ew {
namespace {

template <typename T, typename O, typename Op>
void unary_apply(const Tensor& x, Tensor& y, const Op& op) {
  const T* px = x.data<T>();
  O* py = y.data<O>();
  parallel_for(x.numel(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = store<O>(op(load(px[i])));
  });
}

// Registers a same-type unary op over the type list L. make_op(ctx) returns a functor that
// takes the compute type (a generic lambda).
template <typename L, typename MakeOp>
void add_unary(KernelRegistry& r, const char* name, MakeOp make_op) {
  r.add({name, "", [make_op](KernelContext& ctx) {
           const Tensor& x = ctx.input(0);
           const auto op = make_op(ctx);
           dispatch<L>(x.dtype(), ctx.node, "input 0", [&](auto tag) {
             using T = typename decltype(tag)::type;
             Tensor& y = ctx.make_output(0, x.dtype(), x.shape());
             unary_apply<T, T>(x, y, op);
           });
         }});
}

template <typename Op>
auto fixed(Op op) {
  return [op](const KernelContext&) { return op; };
}

// Typed float constant for a generic lambda's argument type.
template <typename C>
constexpr C k(double v) {
  return static_cast<C>(v);
}

// 1/(1+exp(-v)) for v >= 0 and exp(v)/(1+exp(v)) below: exp never overflows and small results
// keep their precision. Written with a select instead of a branch (random signs mispredict).
template <typename C>
C stable_sigmoid(C v) {
  const C e = std::exp(-std::abs(v));
  return (v >= C(0) ? C(1) : e) / (C(1) + e);
}

template <typename C>
C softplus(C v) {
  // log(1 + exp(v)) without overflow for large v
  return v > C(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

// Value of a scalar min/max input of Clip (opset >= 11) in the compute type of T.
template <typename T>
compute_t<T> clip_bound(const KernelContext& ctx, size_t i, compute_t<T> def) {
  if (!ctx.has_input(i)) return def;
  const Tensor& b = ctx.input(i);
  TRT_CHECK(b.dtype() == ctx.input(0).dtype(), ErrorCode::kInvalidArgument,
            "{}: input {} has dtype {} but the input is {}", ctx.node.describe(), i,
            dtype_name(b.dtype()), dtype_name(ctx.input(0).dtype()));
  TRT_CHECK(b.numel() == 1, ErrorCode::kInvalidArgument,
            "{}: input {} (min/max) must be a scalar, got shape {}", ctx.node.describe(), i,
            shape_str(b.shape()));
  return load(b.data<T>()[0]);
}

void clip_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool attr_form = ctx.node.has_attr("min") || ctx.node.has_attr("max") || ctx.opset < 11;
  dispatch<NumericTypes>(x.dtype(), ctx.node, "input 0", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    C lo = std::numeric_limits<C>::lowest();
    C hi = std::numeric_limits<C>::max();
    if (attr_form) {
      if constexpr (std::is_floating_point_v<C>) {
        if (ctx.node.has_attr("min")) lo = static_cast<C>(ctx.node.attr_float("min", 0));
        if (ctx.node.has_attr("max")) hi = static_cast<C>(ctx.node.attr_float("max", 0));
      } else if (ctx.node.has_attr("min") || ctx.node.has_attr("max")) {
        TRT_THROW(ErrorCode::kNotSupported,
                  "{}: Clip with min/max attributes (opset < 11) is defined for floats only, "
                  "got {}",
                  ctx.node.describe(), dtype_name(x.dtype()));
      }
    } else {
      lo = clip_bound<T>(ctx, 1, lo);
      hi = clip_bound<T>(ctx, 2, hi);
    }
    Tensor& y = ctx.make_output(0, x.dtype(), x.shape());
    // min(max(x, lo), hi): when lo > hi every value becomes hi (ONNX); NaN stays NaN.
    unary_apply<T, T>(x, y, [lo, hi](C v) {
      const C a = v < lo ? lo : v;
      return hi < a ? hi : a;
    });
  });
}

void is_inf_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool neg = ctx.node.attr_int("detect_negative", 1) != 0;
  const bool pos = ctx.node.attr_int("detect_positive", 1) != 0;
  dispatch<FloatTypes>(x.dtype(), ctx.node, "input 0", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.make_output(0, DataType::kBool, x.shape());
    unary_apply<T, bool>(
        x, y, [neg, pos](auto v) { return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg)); });
  });
}

void is_nan_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<FloatTypes>(x.dtype(), ctx.node, "input 0", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.make_output(0, DataType::kBool, x.shape());
    unary_apply<T, bool>(x, y, [](auto v) { return std::isnan(v); });
  });
}

void identity_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  // A copy, not a shared buffer: callers may write outputs in place.
  ctx.outputs.at(0) = x.clone();
}

}  // namespace

void register_unary_kernels(KernelRegistry& r) {
  // Elementwise math on floats.
  add_unary<FloatTypes>(r, "Sqrt", fixed([](auto v) { return std::sqrt(v); }));
  add_unary<FloatTypes>(r, "Exp", fixed([](auto v) { return std::exp(v); }));
  add_unary<FloatTypes>(r, "Log", fixed([](auto v) { return std::log(v); }));
  add_unary<FloatTypes>(r, "Reciprocal", fixed([](auto v) { return decltype(v)(1) / v; }));
  add_unary<FloatTypes>(r, "Floor", fixed([](auto v) { return std::floor(v); }));
  add_unary<FloatTypes>(r, "Ceil", fixed([](auto v) { return std::ceil(v); }));
  // Round half to even: nearbyint in the default rounding mode.
  add_unary<FloatTypes>(r, "Round", fixed([](auto v) { return std::nearbyint(v); }));
  add_unary<FloatTypes>(r, "Sin", fixed([](auto v) { return std::sin(v); }));
  add_unary<FloatTypes>(r, "Cos", fixed([](auto v) { return std::cos(v); }));
  add_unary<FloatTypes>(r, "Tan", fixed([](auto v) { return std::tan(v); }));
  add_unary<FloatTypes>(r, "Asin", fixed([](auto v) { return std::asin(v); }));
  add_unary<FloatTypes>(r, "Acos", fixed([](auto v) { return std::acos(v); }));
  add_unary<FloatTypes>(r, "Atan", fixed([](auto v) { return std::atan(v); }));
  add_unary<FloatTypes>(r, "Sinh", fixed([](auto v) { return std::sinh(v); }));
  add_unary<FloatTypes>(r, "Cosh", fixed([](auto v) { return std::cosh(v); }));
  add_unary<FloatTypes>(r, "Asinh", fixed([](auto v) { return std::asinh(v); }));
  add_unary<FloatTypes>(r, "Acosh", fixed([](auto v) { return std::acosh(v); }));
  add_unary<FloatTypes>(r, "Atanh", fixed([](auto v) { return std::atanh(v); }));
  add_unary<FloatTypes>(r, "Tanh", fixed([](auto v) { return std::tanh(v); }));
  add_unary<FloatTypes>(r, "Erf", fixed([](auto v) { return std::erf(v); }));
  add_unary<FloatTypes>(r, "Sigmoid", fixed([](auto v) { return stable_sigmoid(v); }));
  add_unary<FloatTypes>(r, "Softplus", fixed([](auto v) { return softplus(v); }));
  add_unary<FloatTypes>(r, "Softsign",
                        fixed([](auto v) { return v / (decltype(v)(1) + std::abs(v)); }));
  add_unary<FloatTypes>(r, "Mish", fixed([](auto v) { return v * std::tanh(softplus(v)); }));

  // Integer-capable ones.
  add_unary<SignedTypes>(r, "Neg", fixed([](auto v) -> decltype(v) {
                           if constexpr (std::is_integral_v<decltype(v)>) {
                             return wrap_neg(v);
                           } else {
                             return -v;
                           }
                         }));
  add_unary<NumericTypes>(r, "Abs", fixed([](auto v) -> decltype(v) {
                            using C = decltype(v);
                            if constexpr (std::is_integral_v<C>) {
                              if constexpr (std::is_signed_v<C>) return v < 0 ? wrap_neg(v) : v;
                              return v;
                            } else {
                              return std::abs(v);
                            }
                          }));
  add_unary<NumericTypes>(r, "Sign", fixed([](auto v) -> decltype(v) {
                            using C = decltype(v);
                            if constexpr (std::is_floating_point_v<C>) {
                              if (std::isnan(v)) return v;
                            }
                            return v > C(0) ? C(1) : (v < C(0) ? C(-1) : C(0));
                          }));
  add_unary<SignedTypes>(r, "Relu", fixed([](auto v) {
                           using C = decltype(v);
                           return v < C(0) ? C(0) : v;  // NaN stays NaN
                         }));

  // Activations with attributes.
  add_unary<FloatTypes>(r, "LeakyRelu", [](const KernelContext& ctx) {
    const float alpha = ctx.node.attr_float("alpha", 0.01f);
    return [alpha](auto v) { return v < 0 ? v * k<decltype(v)>(alpha) : v; };
  });
  add_unary<FloatTypes>(r, "Elu", [](const KernelContext& ctx) {
    const float alpha = ctx.node.attr_float("alpha", 1.0f);
    return [alpha](auto v) {
      using C = decltype(v);
      return v < C(0) ? k<C>(alpha) * std::expm1(v) : v;
    };
  });
  add_unary<FloatTypes>(r, "Celu", [](const KernelContext& ctx) {
    const float alpha = ctx.node.attr_float("alpha", 1.0f);
    return [alpha](auto v) {
      using C = decltype(v);
      const C a = k<C>(alpha);
      return std::max(C(0), v) + std::min(C(0), a * std::expm1(v / a));
    };
  });
  add_unary<FloatTypes>(r, "Selu", [](const KernelContext& ctx) {
    const float alpha = ctx.node.attr_float("alpha", 1.67326319217681884765625f);
    const float gamma = ctx.node.attr_float("gamma", 1.05070102214813232421875f);
    return [alpha, gamma](auto v) {
      using C = decltype(v);
      return k<C>(gamma) * (v > C(0) ? v : k<C>(alpha) * std::expm1(v));
    };
  });
  add_unary<FloatTypes>(r, "ThresholdedRelu", [](const KernelContext& ctx) {
    const float alpha = ctx.node.attr_float("alpha", 1.0f);
    return [alpha](auto v) {
      using C = decltype(v);
      return v > k<C>(alpha) ? v : C(0);
    };
  });
  add_unary<FloatTypes>(r, "HardSigmoid", [](const KernelContext& ctx) {
    const float alpha = ctx.node.attr_float("alpha", 0.2f);
    const float beta = ctx.node.attr_float("beta", 0.5f);
    return [alpha, beta](auto v) {
      using C = decltype(v);
      return std::max(C(0), std::min(C(1), k<C>(alpha) * v + k<C>(beta)));
    };
  });
  add_unary<FloatTypes>(r, "HardSwish", fixed([](auto v) {
                          using C = decltype(v);
                          return v * std::max(C(0), std::min(C(1), v / C(6) + C(0.5)));
                        }));
  add_unary<FloatTypes>(r, "Gelu", [](const KernelContext& ctx) {
    const std::string approx = ctx.node.attr_string("approximate", "none");
    TRT_CHECK(approx == "none" || approx == "tanh", ErrorCode::kNotSupported,
              "{}: approximate='{}' is not supported (none|tanh)", ctx.node.describe(), approx);
    const bool tanh_form = approx == "tanh";
    return [tanh_form](auto v) {
      using C = decltype(v);
      if (tanh_form) {
        const C c = k<C>(0.79788456080286535588);  // sqrt(2/pi)
        return C(0.5) * v * (C(1) + std::tanh(c * (v + k<C>(0.044715) * v * v * v)));
      }
      return C(0.5) * v * (C(1) + std::erf(v * k<C>(0.70710678118654752440)));
    };
  });

  r.add({"Clip", "", clip_kernel});
  r.add({"IsNaN", "", is_nan_kernel});
  r.add({"IsInf", "", is_inf_kernel});
  r.add({"Identity", "", identity_kernel});
  r.add({"Not", "", [](KernelContext& ctx) {
           const Tensor& x = ctx.input(0);
           TRT_CHECK(x.dtype() == DataType::kBool, ErrorCode::kNotSupported,
                     "{}: input 0 has dtype {}, Not needs bool", ctx.node.describe(),
                     dtype_name(x.dtype()));
           Tensor& y = ctx.make_output(0, DataType::kBool, x.shape());
           unary_apply<bool, bool>(x, y, [](bool v) { return !v; });
         }});
}

}  // namespace trtutils::cpu::ew
