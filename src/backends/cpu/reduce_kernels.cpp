// CPU kernels for the reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp)
// and the softmax family (Softmax, LogSoftmax, Hardmax). Float inputs accumulate in double,
// integers in (u)int64 with wrap-around.
#include <vector>

#include "backends/cpu/elementwise_common.h"
#include "backends/cpu/fast_softmax.h"
#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/onednn_softmax.h"
#include "ops/op_registry.h"

namespace trtutils::cpu::ew {
namespace {

// ---- reductions --------------------------------------------------------------------------------
// The input viewed as kept and reduced dim groups (adjacent dims of one kind merged, size-1
// dims dropped). `inner` is the innermost kept group when it is the input's innermost, so each
// output row of `inner` elements accumulates contiguous input rows.
struct ReducePlan {
  Shape out_shape;
  std::vector<int64_t> k_sizes, k_strides;  // kept groups except `inner`, outermost first
  std::vector<int64_t> r_sizes, r_strides;  // reduced groups, outermost first
  int64_t inner = 1;
  int64_t groups = 1;  // output elements / inner
  int64_t count = 1;   // input elements per output element
};

ReducePlan plan_reduce(const Shape& s, const std::vector<bool>& reduced, bool keepdims) {
  ReducePlan p;
  struct G {
    int64_t size, stride;
    bool red;
  };
  std::vector<G> gs;
  int64_t stride = 1;
  std::vector<G> rev;
  for (size_t d = s.size(); d-- > 0;) {
    if (reduced[d]) {
      if (keepdims) p.out_shape.insert(p.out_shape.begin(), 1);
    } else {
      p.out_shape.insert(p.out_shape.begin(), s[d]);
    }
    if (s[d] != 1) {
      if (!rev.empty() && rev.back().red == reduced[d]) {
        rev.back().size *= s[d];
      } else {
        rev.push_back({s[d], stride, reduced[d]});
      }
    }
    stride *= s[d];
  }
  gs.assign(rev.rbegin(), rev.rend());
  if (!gs.empty() && !gs.back().red) {
    p.inner = gs.back().size;
    gs.pop_back();
  }
  for (const G& g : gs) {
    if (g.red) {
      p.r_sizes.push_back(g.size);
      p.r_strides.push_back(g.stride);
      p.count *= g.size;
    } else {
      p.k_sizes.push_back(g.size);
      p.k_strides.push_back(g.stride);
      p.groups *= g.size;
    }
  }
  return p;
}

template <typename T>
using acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double,
                                 std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <typename A>
A acc_add(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return wrap_add(a, b);
  } else {
    return a + b;
  }
}
template <typename A>
A acc_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return wrap_mul(a, b);
  } else {
    return a * b;
  }
}
template <typename A>
A acc_abs(A a) {
  if constexpr (std::is_floating_point_v<A>) {
    return std::fabs(a);
  } else if constexpr (std::is_signed_v<A>) {
    return a < 0 ? wrap_neg(a) : a;
  } else {
    return a;
  }
}

struct SumR {
  template <typename A>
  A init() const {
    return A(0);
  }
  template <typename A>
  A step(A acc, A v) const {
    return acc_add(acc, v);
  }
  template <typename A>
  A finish(A acc, int64_t) const {
    return acc;
  }
};
struct MeanR : SumR {
  template <typename A>
  A finish(A acc, int64_t n) const {
    if constexpr (std::is_integral_v<A>) {
      return n == 0 ? A(0) : static_cast<A>(acc / static_cast<A>(n));
    } else {
      return acc / static_cast<A>(n);  // n == 0 -> NaN
    }
  }
};
struct MaxR {
  template <typename A>
  A init() const {
    if constexpr (std::is_floating_point_v<A>) {
      return -std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::lowest();  // replaced by the type's own minimum below
    }
  }
  template <typename A>
  A step(A acc, A v) const {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(v) || std::isnan(acc)) return std::numeric_limits<A>::quiet_NaN();
    }
    return v > acc ? v : acc;
  }
  template <typename A>
  A finish(A acc, int64_t) const {
    return acc;
  }
};
struct MinR {
  template <typename A>
  A init() const {
    if constexpr (std::is_floating_point_v<A>) {
      return std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::max();
    }
  }
  template <typename A>
  A step(A acc, A v) const {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(v) || std::isnan(acc)) return std::numeric_limits<A>::quiet_NaN();
    }
    return v < acc ? v : acc;
  }
  template <typename A>
  A finish(A acc, int64_t) const {
    return acc;
  }
};
struct ProdR : SumR {
  template <typename A>
  A init() const {
    return A(1);
  }
  template <typename A>
  A step(A acc, A v) const {
    return acc_mul(acc, v);
  }
};
struct L1R : SumR {
  template <typename A>
  A step(A acc, A v) const {
    return acc_add(acc, acc_abs(v));
  }
};
struct SumSquareR : SumR {
  template <typename A>
  A step(A acc, A v) const {
    return acc_add(acc, acc_mul(v, v));
  }
};
struct L2R : SumSquareR {
  template <typename A>
  double finish(A acc, int64_t) const {
    return std::sqrt(static_cast<double>(acc));
  }
};
struct LogSumR : SumR {
  template <typename A>
  double finish(A acc, int64_t) const {
    return std::log(static_cast<double>(acc));
  }
};
// log(sum(exp(x))): the engine shifts by the max (kShiftByMax) so exp never overflows.
struct LogSumExpR : SumR {
  static constexpr bool kShiftByMax = true;
  template <typename A>
  A step(A acc, A v) const {
    return acc + std::exp(v);
  }
  template <typename A>
  A finish(A acc, int64_t) const {
    return std::log(acc);
  }
};

template <typename R>
constexpr bool shift_by_max() {
  if constexpr (requires { R::kShiftByMax; }) {
    return R::kShiftByMax;
  } else {
    return false;
  }
}

template <typename T, typename V>
T to_out(V v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && std::is_floating_point_v<V>) {
    return float_to_int<T>(static_cast<double>(v));
  } else {
    return store<T>(v);
  }
}

template <typename T, typename R>
void reduce_run(const Tensor& x, Tensor& y, const ReducePlan& p, const R& red) {
  using A = acc_t<T>;
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const int64_t inner = p.inner;
  const size_t nk = p.k_sizes.size();
  const size_t nr = p.r_sizes.size();
  A init = red.template init<A>();
  if constexpr (std::is_same_v<R, MaxR> && std::is_integral_v<A>) {
    init = static_cast<A>(std::numeric_limits<T>::lowest());
  } else if constexpr (std::is_same_v<R, MinR> && std::is_integral_v<A>) {
    init = static_cast<A>(std::numeric_limits<T>::max());
  }
  parallel_for(
      p.groups,
      [&](int64_t g0, int64_t g1) {
        std::vector<A> acc(static_cast<size_t>(inner));
        std::vector<A> shift(shift_by_max<R>() ? static_cast<size_t>(inner) : 0);
        std::vector<int64_t> kidx(nk, 0), ridx(nr, 0);
        int64_t base = 0;
        int64_t rem = g0;
        for (size_t d = nk; d-- > 0;) {
          kidx[d] = rem % p.k_sizes[d];
          rem /= p.k_sizes[d];
          base += kidx[d] * p.k_strides[d];
        }
        // Calls f(offset) for every reduced position of the current group, in input order.
        auto for_each_reduced = [&](auto&& f) {
          if (p.count == 0) return;
          if (nr == 0) {
            f(base);
            return;
          }
          std::fill(ridx.begin(), ridx.end(), 0);
          int64_t off = base;
          const int64_t last_n = p.r_sizes[nr - 1], last_s = p.r_strides[nr - 1];
          while (true) {
            for (int64_t i = 0; i < last_n; ++i) f(off + i * last_s);
            size_t d = nr - 1;
            while (d-- > 0) {
              off += p.r_strides[d];
              if (++ridx[d] < p.r_sizes[d]) break;
              off -= p.r_sizes[d] * p.r_strides[d];
              ridx[d] = 0;
            }
            if (d == static_cast<size_t>(-1)) return;
          }
        };
        for (int64_t g = g0; g < g1; ++g) {
          if constexpr (shift_by_max<R>()) {
            std::fill(shift.begin(), shift.end(), -std::numeric_limits<A>::infinity());
            for_each_reduced([&](int64_t off) {
              for (int64_t j = 0; j < inner; ++j)
                shift[j] = std::max(shift[j], static_cast<A>(load(px[off + j])));
            });
            for (A& s : shift)
              if (!std::isfinite(s)) s = 0;
          }
          std::fill(acc.begin(), acc.end(), init);
          for_each_reduced([&](int64_t off) {
            for (int64_t j = 0; j < inner; ++j) {
              A v = static_cast<A>(load(px[off + j]));
              if constexpr (shift_by_max<R>()) v -= shift[j];
              acc[j] = red.step(acc[j], v);
            }
          });
          T* out = py + g * inner;
          for (int64_t j = 0; j < inner; ++j) {
            if constexpr (shift_by_max<R>()) {
              out[j] = to_out<T>(red.finish(acc[j], p.count) + shift[j]);
            } else {
              out[j] = to_out<T>(red.finish(acc[j], p.count));
            }
          }
          for (size_t d = nk; d-- > 0;) {
            base += p.k_strides[d];
            if (++kidx[d] < p.k_sizes[d]) break;
            base -= p.k_sizes[d] * p.k_strides[d];
            kidx[d] = 0;
          }
        }
      },
      std::max<int64_t>(1, p.count * inner));
}

template <typename L, typename R>
void reduce_kernel(KernelContext& ctx, const R& red) {
  const ir::Node& node = ctx.node;
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> axes;
  if (node.has_attr("axes")) {
    axes = node.attr_ints("axes");
  } else if (ctx.has_input(1)) {
    const Tensor& a = ctx.input(1);
    TRT_CHECK(a.dtype() == DataType::kInt64 && a.rank() <= 1, ErrorCode::kInvalidArgument,
              "{}: axes input must be a 1-D int64 tensor, got {} {}", node.describe(),
              dtype_name(a.dtype()), shape_str(a.shape()));
    axes = a.to_int64_vector();
  }
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool noop = node.attr_int("noop_with_empty_axes", 0) != 0;
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty() && !noop);
  for (int64_t a : axes) {
    const int64_t d = ops::normalize_axis(a, rank, node);
    TRT_CHECK(!reduced[d], ErrorCode::kInvalidArgument, "{}: axis {} is repeated in axes",
              node.describe(), a);
    reduced[d] = true;
  }
  const ReducePlan p = plan_reduce(x.shape(), reduced, keepdims);
  dispatch<L>(x.dtype(), node, "input 0", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.make_output(0, x.dtype(), p.out_shape);
    reduce_run<T>(x, y, p, red);
  });
}

template <typename L, typename R>
void add_reduce(KernelRegistry& r, const char* name, R red) {
  r.add({name, "", [red](KernelContext& ctx) { reduce_kernel<L>(ctx, red); }});
}

// ---- softmax family ----------------------------------------------------------------------------
enum class SoftKind { kSoftmax, kLogSoftmax, kHardmax };

template <typename T>
void softmax_run(const Tensor& x, Tensor& y, int64_t outer, int64_t n, int64_t inner,
                 SoftKind kind) {
  using C = compute_t<T>;
  const T* px = x.data<T>();
  T* py = y.data<T>();
  constexpr int64_t kLanes = 64;
  const int64_t blocks = (inner + kLanes - 1) / kLanes;
  parallel_for(
      outer * blocks,
      [&](int64_t t0, int64_t t1) {
        C mx[kLanes];
        double sum[kLanes];
        int64_t arg[kLanes];
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t o = t / blocks;
          const int64_t j0 = (t % blocks) * kLanes;
          const int64_t lanes = std::min(kLanes, inner - j0);
          const T* xs = px + o * n * inner + j0;
          T* ys = py + o * n * inner + j0;
          for (int64_t j = 0; j < lanes; ++j) {
            mx[j] = -std::numeric_limits<C>::infinity();
            sum[j] = 0;
            arg[j] = 0;
          }
          for (int64_t k = 0; k < n; ++k)
            for (int64_t j = 0; j < lanes; ++j) {
              const C v = load(xs[k * inner + j]);
              if (v > mx[j]) {
                mx[j] = v;
                arg[j] = k;
              }
            }
          if (kind == SoftKind::kHardmax) {
            for (int64_t k = 0; k < n; ++k)
              for (int64_t j = 0; j < lanes; ++j) ys[k * inner + j] = store<T>(C(arg[j] == k));
            continue;
          }
          if (kind == SoftKind::kSoftmax && std::is_same_v<T, C>) {
            // Full-precision output type: keep exp(x - max) in the output, then scale.
            for (int64_t k = 0; k < n; ++k)
              for (int64_t j = 0; j < lanes; ++j) {
                const C e = std::exp(load(xs[k * inner + j]) - mx[j]);
                sum[j] += e;
                ys[k * inner + j] = store<T>(e);
              }
            for (int64_t j = 0; j < lanes; ++j) sum[j] = 1.0 / sum[j];
            for (int64_t k = 0; k < n; ++k)
              for (int64_t j = 0; j < lanes; ++j)
                ys[k * inner + j] = store<T>(static_cast<C>(load(ys[k * inner + j]) * sum[j]));
            continue;
          }
          for (int64_t k = 0; k < n; ++k)
            for (int64_t j = 0; j < lanes; ++j) sum[j] += std::exp(load(xs[k * inner + j]) - mx[j]);
          if (kind == SoftKind::kSoftmax) {
            for (int64_t k = 0; k < n; ++k)
              for (int64_t j = 0; j < lanes; ++j)
                ys[k * inner + j] =
                    store<T>(static_cast<C>(std::exp(load(xs[k * inner + j]) - mx[j]) / sum[j]));
          } else {
            for (int64_t k = 0; k < n; ++k)
              for (int64_t j = 0; j < lanes; ++j)
                ys[k * inner + j] =
                    store<T>(static_cast<C>(load(xs[k * inner + j]) - mx[j] - std::log(sum[j])));
          }
        }
      },
      n * std::min<int64_t>(inner, kLanes) * 8);
}

void softmax_kernel(KernelContext& ctx, SoftKind kind) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  // opset < 13: the input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])].
  const bool coerce = ctx.opset < 13;
  const int64_t axis =
      ops::normalize_axis(ctx.node.attr_int("axis", coerce ? 1 : -1), rank, ctx.node);
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) {
      outer *= s[d];
    } else if (d == axis || coerce) {
      n *= s[d];
    } else {
      inner *= s[d];
    }
  }
  dispatch<FloatTypes>(x.dtype(), ctx.node, "input 0", [&](auto tag) {
    using T = typename decltype(tag)::type;
    // In place when the input dies here (attention scores: half the memory traffic); every
    // path below reads each row before it writes it.
    if (ctx.input_is_donated(0))
      ctx.outputs.at(0) = x;
    else
      ctx.make_output(0, x.dtype(), s);
    Tensor& y = ctx.outputs.at(0);
    if (y.numel() == 0) return;
    if constexpr (std::is_same_v<T, float>) {
      const bool log = kind == SoftKind::kLogSoftmax;
      if (kind != SoftKind::kHardmax && !ctx.use_reference &&
          ((inner == 1 && fast_softmax(x.data<float>(), y.data<float>(), outer, n, log)) ||
           onednn_softmax(x.data<float>(), y.data<float>(), outer, n, inner, log)))
        return;
    }
    softmax_run<T>(x, y, outer, n, inner, kind);
  });
}

}  // namespace

void register_reduce_kernels(KernelRegistry& r) {
  // The types ONNX allows (opset 18-20): 32/64-bit ints and floats; Max/Min also 8-bit and bool.
  using RTypes =
      Concat<FloatTypes,
             Types<DataType::kInt32, DataType::kInt64, DataType::kUInt32, DataType::kUInt64>>;
  using MaxMinTypes = Concat<RTypes, Types<DataType::kInt8, DataType::kUInt8, DataType::kBool>>;
  add_reduce<RTypes>(r, "ReduceSum", SumR{});
  add_reduce<RTypes>(r, "ReduceMean", MeanR{});
  add_reduce<MaxMinTypes>(r, "ReduceMax", MaxR{});
  add_reduce<MaxMinTypes>(r, "ReduceMin", MinR{});
  add_reduce<RTypes>(r, "ReduceProd", ProdR{});
  add_reduce<RTypes>(r, "ReduceL1", L1R{});
  add_reduce<RTypes>(r, "ReduceL2", L2R{});
  add_reduce<RTypes>(r, "ReduceSumSquare", SumSquareR{});
  add_reduce<FloatTypes>(r, "ReduceLogSum", LogSumR{});
  add_reduce<FloatTypes>(r, "ReduceLogSumExp", LogSumExpR{});
}

void register_softmax_kernels(KernelRegistry& r) {
  r.add({"Softmax", "", [](KernelContext& ctx) { softmax_kernel(ctx, SoftKind::kSoftmax); }});
  r.add({"LogSoftmax", "", [](KernelContext& ctx) { softmax_kernel(ctx, SoftKind::kLogSoftmax); }});
  r.add({"Hardmax", "", [](KernelContext& ctx) { softmax_kernel(ctx, SoftKind::kHardmax); }});
}

}  // namespace trtutils::cpu::ew
