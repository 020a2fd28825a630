// CPU kernels for the tensor op family: data movement (by element size, so every fixed-size
// dtype works; int4/uint4 go through an unpacked one-nibble-per-byte copy) and shape ops.
// Reshape-like ops (Reshape, Flatten, Squeeze, Unsqueeze) return a view sharing the input
// buffer. Resize/Upsample live in resize_kernels.cpp.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <type_traits>
#include <vector>

#include "backends/cpu/copy_util.h"
#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "ops/op_registry.h"
#include "ops/tensor_shapes.h"

namespace trtutils::cpu {

void register_resize_kernels(KernelRegistry& r);  // resize_kernels.cpp

namespace {

using ops::normalize_axis;

const uint8_t* bytes_of(const Tensor& t) {
  return t.data<uint8_t>();
}
uint8_t* bytes_of(Tensor& t) {
  return t.data<uint8_t>();
}

// Runs a data-movement body with int4 unpacking and stores its outputs.
void run_moving(KernelContext& ctx,
                const std::function<std::vector<Tensor>(const std::vector<const Tensor*>&)>& fn) {
  const Tensor& x = ctx.input(0);
  TRT_CHECK(x.dtype() != DataType::kString, ErrorCode::kNotSupported,
            "{}: string tensors are not supported", ctx.node.describe());
  auto outs = with_unpacked_int4(ctx.inputs, fn);
  TRT_INTERNAL_CHECK(outs.size() <= ctx.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) ctx.outputs[i] = std::move(outs[i]);
}

std::vector<int64_t> int_input(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  TRT_CHECK(t.dtype() == DataType::kInt64 || t.dtype() == DataType::kInt32,
            ErrorCode::kInvalidArgument, "{}: '{}' must be int32 or int64, got {}",
            ctx.node.describe(), what, dtype_name(t.dtype()));
  TRT_CHECK(t.rank() <= 1, ErrorCode::kInvalidArgument, "{}: '{}' must be 1-D, got shape {}",
            ctx.node.describe(), what, shape_str(t.shape()));
  return t.to_int64_vector();
}

const Tensor* opt_input(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.inputs[i] : nullptr;
}

// ---- Concat / Split -----------------------------------------------------------------------

void concat_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  TRT_CHECK(node.has_attr("axis"), ErrorCode::kInvalidArgument, "{}: attribute 'axis' is required",
            node.describe());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) (void)ctx.input(i);
  run_moving(ctx, [&](const std::vector<const Tensor*>& ins) {
    const Tensor& first = *ins[0];
    const int64_t rank = static_cast<int64_t>(first.rank());
    const int64_t axis = normalize_axis(node.attr_int("axis", 0), rank, node);
    Shape out_shape = first.shape();
    out_shape[axis] = 0;
    for (const Tensor* t : ins) {
      TRT_CHECK(t->dtype() == first.dtype(), ErrorCode::kInvalidArgument,
                "{}: inputs have dtypes {} and {}", node.describe(), dtype_name(first.dtype()),
                dtype_name(t->dtype()));
      bool ok = static_cast<int64_t>(t->rank()) == rank;
      for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || t->dim(d) == first.dim(d);
      TRT_CHECK(ok, ErrorCode::kInvalidArgument, "{}: cannot concatenate {} and {} on axis {}",
                node.describe(), shape_str(first.shape()), shape_str(t->shape()), axis);
      out_shape[axis] += t->dim(axis);
    }
    const size_t esz = element_bytes(first.dtype(), node);
    Tensor out(first.dtype(), out_shape);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out_shape[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= out_shape[d];
    uint8_t* dst = bytes_of(out);
    for (int64_t o = 0; o < outer; ++o) {
      for (const Tensor* t : ins) {
        const size_t chunk = static_cast<size_t>(t->dim(axis) * inner) * esz;
        if (chunk == 0) continue;
        std::memcpy(dst, bytes_of(*t) + static_cast<size_t>(o) * chunk, chunk);
        dst += chunk;
      }
    }
    return std::vector<Tensor>{out};
  });
}

void split_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor* split = ctx.opset >= 13 ? opt_input(ctx, 1) : nullptr;
  run_moving(ctx, [&](const std::vector<const Tensor*>& ins) {
    const Tensor& x = *ins[0];
    const int64_t rank = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(node.attr_int("axis", 0), rank, node);
    const auto sizes = ops::split_sizes(node, ctx.opset, split, x.dim(axis), node.outputs.size());
    const size_t esz = element_bytes(x.dtype(), node);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
    const size_t in_row = static_cast<size_t>(x.dim(axis) * inner) * esz;
    std::vector<Tensor> outs;
    size_t offset = 0;
    for (int64_t s : sizes) {
      Shape shape = x.shape();
      shape[axis] = s;
      Tensor out(x.dtype(), shape);
      const size_t chunk = static_cast<size_t>(s * inner) * esz;
      if (chunk > 0)
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(bytes_of(out) + static_cast<size_t>(o) * chunk,
                      bytes_of(x) + static_cast<size_t>(o) * in_row + offset, chunk);
      offset += chunk;
      outs.push_back(out);
    }
    return outs;
  });
}

// ---- Slice / Gather -----------------------------------------------------------------------

void slice_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const auto args = ops::slice_args(node, ctx.opset, opt_input(ctx, 1), opt_input(ctx, 2),
                                    opt_input(ctx, 3), opt_input(ctx, 4));
  TRT_CHECK(args.has_value(), ErrorCode::kInvalidArgument,
            "{}: inputs 'starts' and 'ends' are required", node.describe());
  run_moving(ctx, [&](const std::vector<const Tensor*>& ins) {
    const Tensor& x = *ins[0];
    const int64_t rank = static_cast<int64_t>(x.rank());
    const auto axes = ops::normalize_axes(args->axes, rank, node);
    const auto strides = strides_of(x.shape());
    Shape out_shape = x.shape();
    std::vector<std::vector<int64_t>> tables(rank);
    std::vector<ops::SliceRange> ranges(rank);
    for (int64_t d = 0; d < rank; ++d) ranges[d].count = x.dim(d);
    for (size_t i = 0; i < axes.size(); ++i)
      ranges[axes[i]] =
          ops::slice_range(x.dim(axes[i]), args->starts[i], args->ends[i], args->steps[i]);
    for (int64_t d = 0; d < rank; ++d) {
      out_shape[d] = ranges[d].count;
      for (int64_t o = 0; o < ranges[d].count; ++o)
        tables[d].push_back((ranges[d].start + o * ranges[d].step) * strides[d]);
    }
    // gather_separable writes every element: no zero-fill first.
    Tensor out = Tensor::uninitialized(x.dtype(), out_shape);
    if (out.numel() > 0)
      gather_separable(x.raw(), out.raw(), element_bytes(x.dtype(), node), out_shape, tables,
                       nullptr);
    return std::vector<Tensor>{out};
  });
}

void gather_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor& idx_t = ctx.input(1);
  TRT_CHECK(idx_t.dtype() == DataType::kInt32 || idx_t.dtype() == DataType::kInt64,
            ErrorCode::kInvalidArgument, "{}: indices must be int32 or int64, got {}",
            node.describe(), dtype_name(idx_t.dtype()));
  run_moving(ctx, [&](const std::vector<const Tensor*>& ins) {
    const Tensor& x = *ins[0];
    const int64_t rank = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(node.attr_int("axis", 0), rank, node);
    const int64_t n = x.dim(axis);
    std::vector<int64_t> idx = idx_t.to_int64_vector();
    for (auto& i : idx) {
      TRT_CHECK(i >= -n && i < n, ErrorCode::kInvalidArgument,
                "{}: index {} is out of range for axis {} of size {}", node.describe(), i, axis, n);
      if (i < 0) i += n;
    }
    Shape out_shape(x.shape().begin(), x.shape().begin() + axis);
    out_shape.insert(out_shape.end(), idx_t.shape().begin(), idx_t.shape().end());
    out_shape.insert(out_shape.end(), x.shape().begin() + axis + 1, x.shape().end());
    Tensor out(x.dtype(), out_shape);
    const size_t esz = element_bytes(x.dtype(), node);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
    const size_t chunk = static_cast<size_t>(inner) * esz;
    const int64_t k = static_cast<int64_t>(idx.size());
    if (chunk > 0) {
      const uint8_t* src = bytes_of(x);
      uint8_t* dst = bytes_of(out);
#pragma omp parallel for if (outer * k * inner > (1 << 16))
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < k; ++j)
          std::memcpy(dst + static_cast<size_t>(o * k + j) * chunk,
                      src + static_cast<size_t>(o * n + idx[j]) * chunk, chunk);
    }
    return std::vector<Tensor>{out};
  });
}

// ---- Reshape-like (views) -----------------------------------------------------------------

void reshape_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> target =
      ctx.opset < 5 ? node.attr_ints("shape") : ctx.input(1).to_int64_vector();
  if (ctx.opset >= 5)
    TRT_CHECK(ctx.input(1).dtype() == DataType::kInt64, ErrorCode::kInvalidArgument,
              "{}: shape must be int64, got {}", node.describe(), dtype_name(ctx.input(1).dtype()));
  const bool allowzero = ctx.opset >= 14 && node.attr_int("allowzero", 0) != 0;
  const auto out =
      ops::reshape_output(ir::sym_shape_from_static(x.shape()), target, allowzero, node);
  TRT_INTERNAL_CHECK(ir::sym_shape_is_static(out));
  ctx.outputs[0] = x.reshaped(ir::sym_shape_to_static(out));
}

void flatten_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.node.attr_int("axis", 1);
  TRT_CHECK(axis >= -rank && axis <= rank, ErrorCode::kInvalidArgument,
            "{}: axis {} is out of range for rank {}", ctx.node.describe(), axis, rank);
  if (axis < 0) axis += rank;
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? a : b) *= x.dim(d);
  ctx.outputs[0] = x.reshaped({a, b});
}

void squeeze_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool available = true;
  const auto axes = ops::squeeze_axes(ctx.node, ctx.opset, opt_input(ctx, 1), &available);
  const int64_t rank = static_cast<int64_t>(x.rank());
  Shape out;
  if (!axes) {
    for (int64_t d : x.shape())
      if (d != 1) out.push_back(d);
  } else {
    const auto ax = ops::normalize_axes(*axes, rank, ctx.node);
    for (int64_t d = 0; d < rank; ++d) {
      if (std::find(ax.begin(), ax.end(), d) != ax.end()) {
        TRT_CHECK(x.dim(d) == 1, ErrorCode::kInvalidArgument,
                  "{}: cannot squeeze axis {} of size {} (input {})", ctx.node.describe(), d,
                  x.dim(d), shape_str(x.shape()));
      } else {
        out.push_back(x.dim(d));
      }
    }
  }
  ctx.outputs[0] = x.reshaped(out);
}

void unsqueeze_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool available = true;
  const auto axes = ops::squeeze_axes(ctx.node, ctx.opset, opt_input(ctx, 1), &available);
  TRT_CHECK(axes.has_value(), ErrorCode::kInvalidArgument, "{}: 'axes' is required",
            ctx.node.describe());
  const int64_t out_rank = static_cast<int64_t>(x.rank() + axes->size());
  const auto ax = ops::normalize_axes(*axes, out_rank, ctx.node);
  Shape out;
  size_t j = 0;
  for (int64_t d = 0; d < out_rank; ++d)
    out.push_back(std::find(ax.begin(), ax.end(), d) != ax.end() ? 1 : x.dim(j++));
  ctx.outputs[0] = x.reshaped(out);
}

// ---- Transpose / Expand / Tile ------------------------------------------------------------

// The permutation with size-1 axes dropped and runs of input axes that stay adjacent and in
// order merged: NCHW -> NHWC becomes [C, HW] with perm [1, 0].
void simplify_transpose(const Shape& in, const std::vector<int64_t>& perm, Shape* merged_in,
                        std::vector<int64_t>* merged_perm) {
  std::vector<int64_t> kept;  // output order of the input axes kept
  for (int64_t p : perm)
    if (in[p] != 1) kept.push_back(p);
  // Groups of consecutive input axes, in output order.
  std::vector<std::vector<int64_t>> groups;
  for (int64_t p : kept) {
    if (!groups.empty() && groups.back().back() + 1 == p) {
      groups.back().push_back(p);
    } else {
      groups.push_back({p});
    }
  }
  // Input-order rank of each group (groups sorted by their first input axis).
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return groups[a].front() < groups[b].front(); });
  merged_in->assign(groups.size(), 1);
  merged_perm->assign(groups.size(), 0);
  for (size_t r = 0; r < order.size(); ++r) {
    for (int64_t p : groups[order[r]]) (*merged_in)[r] *= in[p];
    (*merged_perm)[order[r]] = static_cast<int64_t>(r);
  }
}

// Transpose whose innermost input axis moves: copied in square tiles so that both the reads
// (strided) and the writes (contiguous) stay in cache.
template <typename T>
void transpose_tiled(const T* src, T* dst, const Shape& in, const std::vector<int64_t>& perm) {
  constexpr int64_t kTile = 32;
  const size_t r = perm.size();
  Shape out(r);
  for (size_t d = 0; d < r; ++d) out[d] = in[perm[d]];
  const auto in_strides = strides_of(in);
  const auto out_strides = strides_of(out);
  const size_t last = r - 1;
  size_t q = 0;  // output axis holding the innermost input axis
  while (perm[q] != static_cast<int64_t>(last)) ++q;
  const int64_t read_stride = in_strides[perm[last]];
  std::vector<size_t> others;
  for (size_t d = 0; d < r; ++d)
    if (d != q && d != last) others.push_back(d);
  int64_t n_other = 1;
  for (size_t d : others) n_other *= out[d];
  const int64_t nq = out[q], nl = out[last], q_blocks = (nq + kTile - 1) / kTile;
#pragma omp parallel for if (n_other * nq * nl > (1 << 15))
  for (int64_t job = 0; job < n_other * q_blocks; ++job) {
    int64_t rem = job / q_blocks, src_base = 0, dst_base = 0;
    for (size_t i = others.size(); i-- > 0;) {
      const size_t d = others[i];
      const int64_t o = rem % out[d];
      rem /= out[d];
      src_base += o * in_strides[perm[d]];
      dst_base += o * out_strides[d];
    }
    const int64_t q0 = (job % q_blocks) * kTile, q1 = std::min(q0 + kTile, nq);
    for (int64_t l0 = 0; l0 < nl; l0 += kTile) {
      const int64_t l1 = std::min(l0 + kTile, nl);
      for (int64_t a = q0; a < q1; ++a) {
        T* d = dst + dst_base + a * out_strides[q];
        const T* s = src + src_base + a;
        for (int64_t l = l0; l < l1; ++l) d[l] = s[l * read_stride];
      }
    }
  }
}

void transpose_kernel(KernelContext& ctx) {
  run_moving(ctx, [&](const std::vector<const Tensor*>& ins) {
    const Tensor& x = *ins[0];
    const auto perm = ops::transpose_perm(ctx.node, x.rank());
    Shape out_shape(x.rank());
    for (size_t d = 0; d < perm.size(); ++d) out_shape[d] = x.dim(perm[d]);
    Shape in_m;
    std::vector<int64_t> perm_m;
    simplify_transpose(x.shape(), perm, &in_m, &perm_m);
    // Only axes of size 1 move (ViT's [1, S, D] -> [S, 1, D]): the bytes keep their order, and
    // the output is a reshaped view of the input, as Reshape's is.
    if (perm_m.size() <= 1) return std::vector<Tensor>{x.reshaped(out_shape)};
    // Every path below writes every element.
    Tensor out = Tensor::uninitialized(x.dtype(), out_shape);
    if (out.numel() == 0) return std::vector<Tensor>{out};
    const size_t esz = element_bytes(x.dtype(), ctx.node);
    if (perm_m.back() != static_cast<int64_t>(perm_m.size() - 1)) {
      switch (esz) {
        case 1:
          transpose_tiled(x.data<uint8_t>(), out.data<uint8_t>(), in_m, perm_m);
          break;
        case 2:
          transpose_tiled(x.data<uint16_t>(), out.data<uint16_t>(), in_m, perm_m);
          break;
        case 4:
          transpose_tiled(x.data<uint32_t>(), out.data<uint32_t>(), in_m, perm_m);
          break;
        default:
          transpose_tiled(x.data<uint64_t>(), out.data<uint64_t>(), in_m, perm_m);
          break;
      }
      return std::vector<Tensor>{out};
    }
    // The innermost axis stays: rows are contiguous copies.
    Shape out_m(perm_m.size());
    const auto strides = strides_of(in_m);
    std::vector<std::vector<int64_t>> tables(perm_m.size());
    for (size_t d = 0; d < perm_m.size(); ++d) {
      out_m[d] = in_m[perm_m[d]];
      for (int64_t o = 0; o < out_m[d]; ++o) tables[d].push_back(o * strides[perm_m[d]]);
    }
    gather_separable(x.raw(), out.raw(), esz, out_m, tables, nullptr);
    return std::vector<Tensor>{out};
  });
}

// Tables that read `x` broadcast (or tiled when `tile`) to `out_shape` (same rank or larger).
std::vector<std::vector<int64_t>> broadcast_tables(const Shape& in, const Shape& out, bool tile) {
  const size_t r = out.size(), lead = r - in.size();
  const auto strides = strides_of(in);
  std::vector<std::vector<int64_t>> tables(r);
  for (size_t d = 0; d < r; ++d) {
    tables[d].resize(out[d], 0);
    if (d < lead) continue;
    const int64_t n = in[d - lead], s = strides[d - lead];
    for (int64_t o = 0; o < out[d]; ++o) tables[d][o] = (tile ? o % n : (n == 1 ? 0 : o)) * s;
  }
  return tables;
}

void expand_kernel(KernelContext& ctx) {
  const std::vector<int64_t> shape = int_input(ctx, 1, "shape");
  run_moving(ctx, [&](const std::vector<const Tensor*>& ins) {
    const Tensor& x = *ins[0];
    const Shape out_shape = ops::broadcast_shapes(x.shape(), shape, ctx.node);
    Tensor out(x.dtype(), out_shape);
    if (out.numel() > 0)
      gather_separable(x.raw(), out.raw(), element_bytes(x.dtype(), ctx.node), out_shape,
                       broadcast_tables(x.shape(), out_shape, false), nullptr);
    return std::vector<Tensor>{out};
  });
}

void tile_kernel(KernelContext& ctx) {
  const std::vector<int64_t> reps = int_input(ctx, 1, "repeats");
  run_moving(ctx, [&](const std::vector<const Tensor*>& ins) {
    const Tensor& x = *ins[0];
    TRT_CHECK(reps.size() == x.rank(), ErrorCode::kInvalidArgument,
              "{}: repeats has {} values for an input of rank {}", ctx.node.describe(), reps.size(),
              x.rank());
    Shape out_shape = x.shape();
    for (size_t d = 0; d < reps.size(); ++d) {
      TRT_CHECK(reps[d] >= 0, ErrorCode::kInvalidArgument, "{}: negative repeat {}",
                ctx.node.describe(), reps[d]);
      out_shape[d] *= reps[d];
    }
    Tensor out(x.dtype(), out_shape);
    if (out.numel() > 0)
      gather_separable(x.raw(), out.raw(), element_bytes(x.dtype(), ctx.node), out_shape,
                       broadcast_tables(x.shape(), out_shape, true), nullptr);
    return std::vector<Tensor>{out};
  });
}

// ---- Dropout (inference) / ScatterND -------------------------------------------------------

void dropout_kernel(KernelContext& ctx) {
  const std::string why = ops::dropout_not_identity(
      ctx.node, ctx.opset, ctx.has_input(1), ctx.has_input(1) ? &ctx.input(1) : nullptr,
      ctx.has_input(2), ctx.has_input(2) ? &ctx.input(2) : nullptr);
  TRT_CHECK(why.empty(), ErrorCode::kNotSupported, "{}", why);
  const Tensor& x = ctx.input(0);
  ctx.outputs.at(0) = x.clone();
  if (ctx.outputs.size() > 1) {
    Tensor& mask = ctx.make_output(1, DataType::kBool, x.shape());
    if (mask.numel() > 0) std::memset(mask.raw(), 1, static_cast<size_t>(mask.numel()));
  }
}

// out[indices[j]] (a slice of data.shape[k:]) = updates[j], or combined with it (reduction add,
// mul, max, min: float32/float64/int32/int64). Indices may be negative (counted from the end).
enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

template <typename T>
void scatter_reduce(T* dst, const T* src, int64_t n, ScatterReduction red) {
  switch (red) {
    case ScatterReduction::kAdd:
      for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
      break;
    case ScatterReduction::kMul:
      for (int64_t i = 0; i < n; ++i) dst[i] *= src[i];
      break;
    case ScatterReduction::kMax:
      for (int64_t i = 0; i < n; ++i) dst[i] = std::max(dst[i], src[i]);
      break;
    case ScatterReduction::kMin:
      for (int64_t i = 0; i < n; ++i) dst[i] = std::min(dst[i], src[i]);
      break;
    case ScatterReduction::kNone:
      std::copy(src, src + n, dst);
      break;
  }
}

void scatter_nd_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor& data = ctx.input(0);
  const Tensor& idx_t = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  TRT_CHECK(idx_t.dtype() == DataType::kInt64 || idx_t.dtype() == DataType::kInt32,
            ErrorCode::kInvalidArgument, "{}: indices must be int64, got {}", node.describe(),
            dtype_name(idx_t.dtype()));
  TRT_CHECK(upd.dtype() == data.dtype(), ErrorCode::kInvalidArgument, "{}: updates are {}, data {}",
            node.describe(), dtype_name(upd.dtype()), dtype_name(data.dtype()));
  const Shape want = ops::scatter_nd_updates_shape(node, data.shape(), idx_t.shape());
  TRT_CHECK(upd.shape() == want, ErrorCode::kInvalidArgument,
            "{}: updates have shape {}, expected {} for data {} and indices {}", node.describe(),
            shape_str(upd.shape()), shape_str(want), shape_str(data.shape()),
            shape_str(idx_t.shape()));
  const std::string red_name = ctx.opset >= 16 ? node.attr_string("reduction", "none") : "none";
  static const std::map<std::string, ScatterReduction> kReductions = {
      {"none", ScatterReduction::kNone},
      {"add", ScatterReduction::kAdd},
      {"mul", ScatterReduction::kMul},
      {"max", ScatterReduction::kMax},
      {"min", ScatterReduction::kMin}};
  const auto found = kReductions.find(red_name);
  TRT_CHECK(found != kReductions.end(), ErrorCode::kNotSupported,
            "{}: reduction '{}' (expected none, add, mul, max, min)", node.describe(), red_name);
  const ScatterReduction red = found->second;
  const int64_t k = idx_t.shape().back();
  const int64_t rank = static_cast<int64_t>(data.rank());
  int64_t slice = 1;
  for (int64_t d = k; d < rank; ++d) slice *= data.dim(d);
  std::vector<int64_t> stride(static_cast<size_t>(k), slice);
  for (int64_t d = k - 2; d >= 0; --d) stride[d] = stride[d + 1] * data.dim(d + 1);
  const std::vector<int64_t> idx = idx_t.to_int64_vector();
  const int64_t n = k > 0 ? static_cast<int64_t>(idx.size()) / k : 0;
  Tensor out = data.clone();
  const size_t esz = element_bytes(data.dtype(), node);
  uint8_t* dst = bytes_of(out);
  const uint8_t* src = bytes_of(upd);
  for (int64_t j = 0; j < n; ++j) {
    int64_t off = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t i = idx[j * k + d];
      const int64_t size = data.dim(d);
      TRT_CHECK(i >= -size && i < size, ErrorCode::kInvalidArgument,
                "{}: index {} is out of range for axis {} of size {}", node.describe(), i, d, size);
      if (i < 0) i += size;
      off += i * stride[d];
    }
    uint8_t* to = dst + static_cast<size_t>(off) * esz;
    const uint8_t* from = src + static_cast<size_t>(j * slice) * esz;
    if (red == ScatterReduction::kNone) {
      std::memcpy(to, from, static_cast<size_t>(slice) * esz);
      continue;
    }
    switch (data.dtype()) {
      case DataType::kFloat32:
        scatter_reduce(reinterpret_cast<float*>(to), reinterpret_cast<const float*>(from), slice,
                       red);
        break;
      case DataType::kFloat64:
        scatter_reduce(reinterpret_cast<double*>(to), reinterpret_cast<const double*>(from), slice,
                       red);
        break;
      case DataType::kInt32:
        scatter_reduce(reinterpret_cast<int32_t*>(to), reinterpret_cast<const int32_t*>(from),
                       slice, red);
        break;
      case DataType::kInt64:
        scatter_reduce(reinterpret_cast<int64_t*>(to), reinterpret_cast<const int64_t*>(from),
                       slice, red);
        break;
      default:
        TRT_CHECK(false, ErrorCode::kNotSupported, "{}: reduction '{}' on {} data", node.describe(),
                  red_name, dtype_name(data.dtype()));
    }
  }
  ctx.outputs.at(0) = std::move(out);
}

// ---- Pad ----------------------------------------------------------------------------------

int64_t pad_source(ops::PadMode mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case ops::PadMode::kConstant:
      return kFill;
    case ops::PadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case ops::PadMode::kWrap:
      return ((i % n) + n) % n;
    case ops::PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return kFill;
}

void pad_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const ops::PadMode mode = ops::pad_mode(node, ctx.opset);
  const Tensor& x0 = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x0.rank());
  const auto pads = ops::pad_amounts(node, ctx.opset, rank, opt_input(ctx, 1), opt_input(ctx, 3),
                                     node.has_input(3));
  TRT_CHECK(pads.has_value(), ErrorCode::kInvalidArgument, "{}: input 'pads' is required",
            node.describe());
  run_moving(ctx, [&](const std::vector<const Tensor*>& ins) {
    const Tensor& x = *ins[0];
    const size_t esz = element_bytes(x.dtype(), node);
    // The fill value, as bytes of x's (possibly unpacked) dtype.
    uint64_t fill = 0;
    if (ctx.opset < 11) {
      store_from_double(x0.dtype(), &fill, node.attr_float("value", 0.0f));
    } else if (ins.size() > 2 && ins[2] && ins[2]->numel() > 0) {
      TRT_CHECK(ins[2]->dtype() == x.dtype(), ErrorCode::kInvalidArgument,
                "{}: constant_value has dtype {} but the data is {}", node.describe(),
                dtype_name(ins[2]->dtype()), dtype_name(x.dtype()));
      std::memcpy(&fill, ins[2]->raw(), esz);
    }
    const auto strides = strides_of(x.shape());
    Shape out_shape(rank);
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t n = x.dim(d), b = (*pads)[d], e = (*pads)[d + rank];
      TRT_CHECK(!__builtin_add_overflow(n, b, &out_shape[d]) &&
                    !__builtin_add_overflow(out_shape[d], e, &out_shape[d]),
                ErrorCode::kOutOfRange, "{}: pads {} overflow axis {}", node.describe(),
                shape_str(*pads), d);
      TRT_CHECK(out_shape[d] >= 0, ErrorCode::kInvalidArgument,
                "{}: pads {} remove more than axis {} of size {}", node.describe(),
                shape_str(*pads), d, n);
      TRT_CHECK(n > 0 || mode == ops::PadMode::kConstant || out_shape[d] == 0,
                ErrorCode::kInvalidArgument, "{}: cannot pad the empty axis {} in this mode",
                node.describe(), d);
    }
    // The output first: its allocation checks --max_memory before the per-axis tables (as
    // large as the output's dims) are built.
    Tensor out(x.dtype(), out_shape);
    if (out.numel() == 0) return std::vector<Tensor>{out};
    std::vector<std::vector<int64_t>> tables(rank);
    for (int64_t d = 0; d < rank; ++d)
      for (int64_t o = 0; o < out_shape[d]; ++o) {
        const int64_t src = pad_source(mode, o - (*pads)[d], x.dim(d));
        tables[d].push_back(src == kFill ? kFill : src * strides[d]);
      }
    gather_separable(x.raw(), out.raw(), esz, out_shape, tables, &fill);
    return std::vector<Tensor>{out};
  });
}

// ---- Shape ops ----------------------------------------------------------------------------

void shape_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  const ops::DimRange r = ops::shape_op_range(ctx.node, ctx.opset, rank);
  std::vector<int64_t> dims;
  for (int64_t d = r.start; d < r.end; ++d) dims.push_back(x.dim(d));
  const int64_t n = static_cast<int64_t>(dims.size());
  ctx.outputs[0] = Tensor::from_vector<int64_t>(DataType::kInt64, {n}, dims);
}

void size_kernel(KernelContext& ctx) {
  ctx.outputs[0] = Tensor::from_vector<int64_t>(DataType::kInt64, {}, {ctx.input(0).numel()});
}

void constant_of_shape_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor& s = ctx.input(0);
  TRT_CHECK(s.dtype() == DataType::kInt64, ErrorCode::kInvalidArgument,
            "{}: the shape input must be int64, got {}", node.describe(), dtype_name(s.dtype()));
  const Shape shape = s.to_int64_vector();
  for (int64_t d : shape)
    TRT_CHECK(d >= 0, ErrorCode::kInvalidArgument, "{}: negative dim in shape {}", node.describe(),
              shape_str(shape));
  const ir::Attribute* a = node.attr("value");
  if (!a) {
    ctx.make_output(0, DataType::kFloat32, shape);
    return;
  }
  TRT_CHECK(a->kind == ir::Attribute::Kind::kTensor && a->t.numel() == 1,
            ErrorCode::kInvalidArgument, "{}: 'value' must be a one-element tensor",
            node.describe());
  const Tensor& v = a->t;
  Tensor& out = ctx.make_output(0, v.dtype(), shape);
  if (is_int4(v.dtype())) {
    const uint8_t nib = v.data<uint8_t>()[0] & 0xf;
    std::memset(out.raw(), nib | (nib << 4), out.nbytes());
    return;
  }
  const size_t esz = element_bytes(v.dtype(), node);
  uint8_t* dst = bytes_of(out);
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(dst + i * esz, v.raw(), esz);
}

void range_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor& c = ctx.input(2);
  const DataType dt = a.dtype();
  TRT_CHECK(b.dtype() == dt && c.dtype() == dt, ErrorCode::kInvalidArgument,
            "{}: start, limit and delta must share a dtype ({}, {}, {})", node.describe(),
            dtype_name(dt), dtype_name(b.dtype()), dtype_name(c.dtype()));
  TRT_CHECK(dtype_is_integer(dt) || dtype_is_float(dt), ErrorCode::kNotSupported,
            "{}: dtype {} is not supported", node.describe(), dtype_name(dt));
  TRT_CHECK(!is_int4(dt), ErrorCode::kNotSupported, "{}: dtype {} is not supported",
            node.describe(), dtype_name(dt));
  const int64_t n = ops::range_length(a, b, c, node);
  Tensor& out = ctx.make_output(0, dt, {n});
  const size_t esz = element_bytes(dt, node);
  uint8_t* dst = bytes_of(out);
  if (dtype_is_integer(dt)) {
    const int64_t s = a.to_int64_vector()[0], d = c.to_int64_vector()[0];
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = s + i * d;
      switch (esz) {
        case 1:
          dst[i] = static_cast<uint8_t>(v);
          break;
        case 2:
          reinterpret_cast<uint16_t*>(dst)[i] = static_cast<uint16_t>(v);
          break;
        case 4:
          reinterpret_cast<uint32_t*>(dst)[i] = static_cast<uint32_t>(v);
          break;
        default:
          reinterpret_cast<int64_t*>(dst)[i] = v;
          break;
      }
    }
    return;
  }
  // Accumulated in the dtype's precision (float for the narrow types), as in ONNX's function
  // body for Range (prev + delta) and ONNX Runtime.
  if (dt == DataType::kFloat64) {
    double v = a.at_double(0);
    const double d = c.at_double(0);
    for (int64_t i = 0; i < n; ++i, v += d) reinterpret_cast<double*>(dst)[i] = v;
    return;
  }
  float v = static_cast<float>(a.at_double(0));
  const float d = static_cast<float>(c.at_double(0));
  for (int64_t i = 0; i < n; ++i, v += d) store_from_double(dt, dst + i * esz, v);
}

// ---- TopK / NonZero / GatherND (detection post-processing) ----------------------------------

// The k largest (or smallest) elements along the axis, in order, equal values by lower index
// first (ONNX); NaN counts as larger than every number. Keys: int64 / uint64 compared as
// integers, everything else as doubles (exact for every other dtype).
template <typename Key>
void topk_slices(const Tensor& x, const std::vector<Key>& keys, int64_t axis, int64_t k,
                 bool largest, Tensor& values, Tensor& indices, size_t esz) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (size_t d = static_cast<size_t>(axis) + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const int64_t n = x.dim(axis);
  auto before = [&](int64_t a, int64_t b, const Key* row, int64_t step) {
    const Key va = row[a * step], vb = row[b * step];
    bool a_nan = false, b_nan = false;
    if constexpr (std::is_floating_point_v<Key>) {
      a_nan = std::isnan(va);
      b_nan = std::isnan(vb);
    }
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return a < b;
      return largest ? a_nan : b_nan;
    }
    if (va != vb) return largest ? va > vb : va < vb;
    return a < b;
  };
  const uint8_t* src = bytes_of(x);
  uint8_t* dst = bytes_of(values);
  int64_t* idx_out = indices.data<int64_t>();
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      const Key* row = keys.data() + base;
      for (int64_t j = 0; j < n; ++j) order[static_cast<size_t>(j)] = j;
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int64_t a, int64_t b) { return before(a, b, row, inner); });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t from = base + order[static_cast<size_t>(j)] * inner;
        const int64_t to = (o * k + j) * inner + i;
        std::memcpy(dst + static_cast<size_t>(to) * esz, src + static_cast<size_t>(from) * esz,
                    esz);
        idx_out[to] = order[static_cast<size_t>(j)];
      }
    }
}

void topk_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor& x = ctx.input(0);
  TRT_CHECK_ARG(x.rank() >= 1, "{}: input X must have rank >= 1", node.describe());
  const int64_t axis =
      normalize_axis(node.attr_int("axis", -1), static_cast<int64_t>(x.rank()), node);
  int64_t k = 0;
  if (ctx.opset < 10) {
    k = node.attr_int("k", -1);
  } else {
    const Tensor& kt = ctx.input(1);
    TRT_CHECK_ARG(kt.numel() == 1, "{}: K must hold one value, got {}", node.describe(),
                  shape_str(kt.shape()));
    k = kt.to_int64_vector()[0];
  }
  TRT_CHECK_ARG(k >= 0 && k <= x.dim(axis), "{}: K = {} is outside [0, {}] (axis {} of {})",
                node.describe(), k, x.dim(axis), axis, shape_str(x.shape()));
  const bool largest = ctx.opset < 11 || node.attr_int("largest", 1) != 0;
  Shape out = x.shape();
  out[static_cast<size_t>(axis)] = k;
  Tensor& values = ctx.make_output(0, x.dtype(), out);
  Tensor tmp_indices;
  Tensor& indices = ctx.outputs.size() > 1 ? ctx.make_output(1, DataType::kInt64, out)
                                           : (tmp_indices = Tensor(DataType::kInt64, out));
  if (values.numel() == 0) return;
  const size_t esz = element_bytes(x.dtype(), node);
  if (x.dtype() == DataType::kInt64 || x.dtype() == DataType::kUInt64) {
    std::vector<int64_t> keys(x.data<int64_t>(), x.data<int64_t>() + x.numel());
    if (x.dtype() == DataType::kUInt64) {  // order-preserving: flip the sign bit
      for (auto& v : keys) v = static_cast<int64_t>(static_cast<uint64_t>(v) ^ (1ull << 63));
    }
    topk_slices(x, keys, axis, k, largest, values, indices, esz);
  } else {
    std::vector<double> keys(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) keys[static_cast<size_t>(i)] = x.at_double(i);
    topk_slices(x, keys, axis, k, largest, values, indices, esz);
  }
}

// The coordinates of the non-zero elements, [rank, count] in row-major order (NaN counts).
void nonzero_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.at_double(i) != 0.0) hits.push_back(i);
  const int64_t count = static_cast<int64_t>(hits.size());
  Tensor& y = ctx.make_output(0, DataType::kInt64, {rank, count});
  int64_t* out = y.data<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = hits[static_cast<size_t>(j)];
    for (int64_t d = rank - 1; d >= 0; --d) {
      out[d * count + j] = rest % x.dim(d);
      rest /= x.dim(d);
    }
  }
}

// data[batch..., indices[batch..., j, :], ...]: slices of data.shape[batch_dims + k:].
void gathernd_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor& data = ctx.input(0);
  const Tensor& idx_t = ctx.input(1);
  TRT_CHECK(idx_t.dtype() == DataType::kInt64 || idx_t.dtype() == DataType::kInt32,
            ErrorCode::kInvalidArgument, "{}: indices must be int64, got {}", node.describe(),
            dtype_name(idx_t.dtype()));
  const int64_t b = ctx.opset >= 12 ? node.attr_int("batch_dims", 0) : 0;
  const int64_t r = static_cast<int64_t>(data.rank()), q = static_cast<int64_t>(idx_t.rank());
  TRT_CHECK_ARG(q >= 1 && b >= 0 && b < q && b <= r, "{}: batch_dims {} for data {} and indices {}",
                node.describe(), b, shape_str(data.shape()), shape_str(idx_t.shape()));
  const int64_t k = idx_t.shape().back();
  TRT_CHECK_ARG(k >= 1 && b + k <= r,
                "{}: indices' last dimension {} does not fit data {} "
                "with batch_dims {}",
                node.describe(), k, shape_str(data.shape()), b);
  for (int64_t d = 0; d < b; ++d)
    TRT_CHECK_ARG(data.dim(d) == idx_t.dim(d),
                  "{}: batch dimension {} differs: data {}, indices {}", node.describe(), d,
                  shape_str(data.shape()), shape_str(idx_t.shape()));
  Shape out(idx_t.shape().begin(), idx_t.shape().end() - 1);
  out.insert(out.end(), data.shape().begin() + b + k, data.shape().end());
  Tensor& y = ctx.make_output(0, data.dtype(), out);
  int64_t batches = 1, slice = 1, per_batch = 1;
  for (int64_t d = 0; d < b; ++d) batches *= data.dim(d);
  for (int64_t d = b + k; d < r; ++d) slice *= data.dim(d);
  for (int64_t d = b; d < q - 1; ++d) per_batch *= idx_t.dim(d);
  std::vector<int64_t> stride(static_cast<size_t>(k), slice);
  for (int64_t d = k - 2; d >= 0; --d) stride[d] = stride[d + 1] * data.dim(b + d + 1);
  const int64_t batch_elems = k > 0 ? stride[0] * data.dim(b) : slice;
  const std::vector<int64_t> idx = idx_t.to_int64_vector();
  const size_t esz = element_bytes(data.dtype(), node);
  const uint8_t* src = bytes_of(data);
  uint8_t* dst = bytes_of(y);
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t j = 0; j < per_batch; ++j) {
      const int64_t* ix = idx.data() + (bi * per_batch + j) * k;
      int64_t off = bi * batch_elems;
      for (int64_t d = 0; d < k; ++d) {
        int64_t i = ix[d];
        const int64_t size = data.dim(b + d);
        TRT_CHECK(i >= -size && i < size, ErrorCode::kInvalidArgument,
                  "{}: index {} is out of range for axis {} of size {}", node.describe(), i, b + d,
                  size);
        if (i < 0) i += size;
        off += i * stride[d];
      }
      std::memcpy(dst + static_cast<size_t>((bi * per_batch + j) * slice) * esz,
                  src + static_cast<size_t>(off) * esz, static_cast<size_t>(slice) * esz);
    }
}

// Greedy non-maximum suppression per batch and class (ONNX NonMaxSuppression, ONNX Runtime's
// order): boxes scoring above score_threshold, by score (equal scores: the lower index first);
// a box is dropped when its IoU with a kept one exceeds iou_threshold; at most
// max_output_boxes_per_class kept (0: none). Output [selected, 3]: batch, class, box.
void nms_kernel(KernelContext& ctx) {
  const auto& node = ctx.node;
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  TRT_CHECK_ARG(boxes.rank() == 3 && boxes.dim(2) == 4 && scores.rank() == 3 &&
                    scores.dim(0) == boxes.dim(0) && scores.dim(2) == boxes.dim(1),
                "{}: boxes {} must be [batches, boxes, 4] and scores {} [batches, classes, boxes]",
                node.describe(), shape_str(boxes.shape()), shape_str(scores.shape()));
  const int64_t max_out =
      ctx.has_input(2) && ctx.input(2).numel() > 0 ? ctx.input(2).to_int64_vector()[0] : 0;
  const double iou_th =
      ctx.has_input(3) && ctx.input(3).numel() > 0 ? ctx.input(3).at_double(0) : 0.0;
  const bool has_score_th = ctx.has_input(4) && ctx.input(4).numel() > 0;
  const double score_th = has_score_th ? ctx.input(4).at_double(0) : 0.0;
  const bool center = node.attr_int("center_point_box", 0) != 0;
  const int64_t nb = boxes.dim(0), n = boxes.dim(1), nc = scores.dim(1);
  // Corners (y1, x1, y2, x2) with y1 <= y2, x1 <= x2.
  std::vector<std::array<double, 4>> c(static_cast<size_t>(nb * n));
  for (int64_t i = 0; i < nb * n; ++i) {
    double v[4];
    for (int d = 0; d < 4; ++d) v[d] = boxes.at_double(i * 4 + d);
    if (center) {  // x_center, y_center, width, height
      c[static_cast<size_t>(i)] = {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2,
                                   v[0] + v[2] / 2};
    } else {
      c[static_cast<size_t>(i)] = {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]),
                                   std::max(v[1], v[3])};
    }
  }
  auto suppressed_by = [&](const std::array<double, 4>& a, const std::array<double, 4>& b) {
    const double ih = std::min(a[2], b[2]) - std::max(a[0], b[0]);
    const double iw = std::min(a[3], b[3]) - std::max(a[1], b[1]);
    if (ih <= 0 || iw <= 0) return false;
    const double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    if (area_a <= 0 || area_b <= 0) return false;
    const double inter = ih * iw;
    return inter / (area_a + area_b - inter) > iou_th;
  };
  std::vector<int64_t> selected;  // triples
  std::vector<int64_t> order;
  std::vector<int64_t> kept;
  std::vector<double> s(static_cast<size_t>(n));  // one class's scores, converted once
  for (int64_t b = 0; b < nb && max_out > 0; ++b)
    for (int64_t cl = 0; cl < nc; ++cl) {
      const int64_t base = (b * nc + cl) * n;
      order.clear();
      for (int64_t i = 0; i < n; ++i) {
        s[static_cast<size_t>(i)] = scores.at_double(base + i);
        if (!has_score_th || s[static_cast<size_t>(i)] > score_th) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return s[static_cast<size_t>(x)] > s[static_cast<size_t>(y)];
      });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const auto& box = c[static_cast<size_t>(b * n + i)];
        bool drop = false;
        for (int64_t k : kept)
          if (suppressed_by(box, c[static_cast<size_t>(b * n + k)])) {
            drop = true;
            break;
          }
        if (drop) continue;
        kept.push_back(i);
        selected.insert(selected.end(), {b, cl, i});
      }
    }
  Tensor& y = ctx.make_output(0, DataType::kInt64, {static_cast<int64_t>(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), y.data<int64_t>());
}

}  // namespace

void register_tensor_kernels(KernelRegistry& r) {
  r.add({"Concat", "", concat_kernel});
  r.add({"Split", "", split_kernel});
  r.add({"Slice", "", slice_kernel});
  r.add({"Gather", "", gather_kernel});
  r.add({"Reshape", "", reshape_kernel});
  r.add({"Flatten", "", flatten_kernel});
  r.add({"Transpose", "", transpose_kernel});
  r.add({"Squeeze", "", squeeze_kernel});
  r.add({"Unsqueeze", "", unsqueeze_kernel});
  r.add({"Expand", "", expand_kernel});
  r.add({"Pad", "", pad_kernel});
  r.add({"Shape", "", shape_kernel});
  r.add({"Size", "", size_kernel});
  r.add({"ConstantOfShape", "", constant_of_shape_kernel});
  r.add({"Range", "", range_kernel});
  r.add({"Tile", "", tile_kernel});
  r.add({"Dropout", "", dropout_kernel});
  r.add({"ScatterND", "", scatter_nd_kernel});
  r.add({"TopK", "", topk_kernel});
  r.add({"NonZero", "", nonzero_kernel});
  r.add({"GatherND", "", gathernd_kernel});
  r.add({"NonMaxSuppression", "", nms_kernel});
  register_resize_kernels(r);
}

}  // namespace trtutils::cpu
