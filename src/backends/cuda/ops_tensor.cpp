// GPU ops of the tensor family. Reshape, Flatten, Squeeze, Unsqueeze (and contiguous slices)
// are views of their input (no copy); Concat and Split are 2-D memcpys; Transpose, Slice and
// Expand are one strided-copy kernel; Gather and Pad have their own kernels. Shape arguments
// (target shapes, axes, starts/ends, pads) are read on the host.
#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_ops.h"
#include "ops/op_registry.h"
#include "ops/tensor_shapes.h"

namespace trtutils::cuda {

namespace {

const Tensor* opt_host(RunContext& ctx, const std::vector<Value*>& in, size_t i) {
  return i < in.size() && in[i] ? &ctx.host(*in[i]) : nullptr;
}

// A view of x at element offset `offset` with `shape` (x must be on the device).
void view_at(Value& out, const Value& x, int64_t offset, Shape shape) {
  Value v;
  v.dtype = x.dtype;
  v.shape = std::move(shape);
  v.owner = x.owner;
  v.ptr = static_cast<uint8_t*>(x.ptr) + offset * static_cast<int64_t>(dtype_bits(x.dtype) / 8);
  out = std::move(v);
}

// y = x read through per-dim (size, stride) pairs (outermost first) from `offset`.
void strided(RunContext& ctx, Value& x, Value& out, const Shape& out_shape,
             const std::vector<std::pair<int64_t, int64_t>>& dims, int64_t offset) {
  const size_t esz = element_size(*ctx.node, x.dtype);
  require_indexable(*ctx.node, shape_numel(out_shape));
  const void* px = ctx.dev(x);
  void* py = ctx.make(out, x.dtype, out_shape);
  copy_strided(ctx, esz, px, py, dims, offset);
}

// ---- views ----------------------------------------------------------------------------------
class ReshapeOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    std::vector<int64_t> target;
    if (ctx.opset < 5) {
      target = node.attr_ints("shape");
    } else {
      const Tensor& s = ctx.host(*in.at(1));
      TRT_CHECK_ARG(s.dtype() == DataType::kInt64, "{}: shape must be int64, got {}",
                    node.describe(), dtype_name(s.dtype()));
      target = s.to_int64_vector();
    }
    const bool allowzero = ctx.opset >= 14 && node.attr_int("allowzero", 0) != 0;
    const auto shape =
        ops::reshape_output(ir::sym_shape_from_static(x.shape), target, allowzero, node);
    TRT_CHECK_ARG(ir::sym_shape_is_static(shape), "{}: cannot reshape {} to {}", node.describe(),
                  shape_str(x.shape), shape_str(target));
    ctx.alias(*out.at(0), x, ir::sym_shape_to_static(shape));
  }
};

class FlattenOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    Value& x = *in.at(0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = ctx.node->attr_int("axis", 1);
    TRT_CHECK_ARG(axis >= -rank && axis <= rank, "{}: axis {} is out of range for rank {}",
                  ctx.node->describe(), axis, rank);
    if (axis < 0) axis += rank;
    int64_t a = 1, b = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? a : b) *= x.shape[d];
    ctx.alias(*out.at(0), x, {a, b});
  }
};

class SqueezeOp : public GpuOp {
 public:
  explicit SqueezeOp(bool unsqueeze) : unsqueeze_(unsqueeze) {}
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    bool available = true;
    const auto axes = ops::squeeze_axes(node, ctx.opset, opt_host(ctx, in, 1), &available);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    Shape shape;
    if (unsqueeze_) {
      TRT_CHECK_ARG(axes.has_value(), "{}: 'axes' is required", node.describe());
      const int64_t out_rank = rank + static_cast<int64_t>(axes->size());
      const auto ax = ops::normalize_axes(*axes, out_rank, node);
      size_t j = 0;
      for (int64_t d = 0; d < out_rank; ++d)
        shape.push_back(std::find(ax.begin(), ax.end(), d) != ax.end() ? 1 : x.shape[j++]);
    } else if (!axes) {
      for (int64_t d : x.shape)
        if (d != 1) shape.push_back(d);
    } else {
      const auto ax = ops::normalize_axes(*axes, rank, node);
      for (int64_t d = 0; d < rank; ++d) {
        if (std::find(ax.begin(), ax.end(), d) != ax.end()) {
          TRT_CHECK_ARG(x.shape[d] == 1, "{}: cannot squeeze axis {} of size {}", node.describe(),
                        d, x.shape[d]);
        } else {
          shape.push_back(x.shape[d]);
        }
      }
    }
    ctx.alias(*out.at(0), x, shape);
  }

 private:
  bool unsqueeze_;
};

// ---- copies ---------------------------------------------------------------------------------
// The 4-D permutations between NCHW and NHWC, which the builder inserts around channels-last
// quantized convolutions: on a value already in the target memory order they are views.
bool is_perm(const std::vector<int64_t>& perm, std::initializer_list<int64_t> want) {
  return perm.size() == want.size() && std::equal(perm.begin(), perm.end(), want.begin());
}

class TransposeOp : public GpuOp {
 public:
  std::string kernel() const override {
    return view_ ? "view (layout already in place)" : "CUDA kernel";
  }
  void want_layouts(const RunContext& ctx, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    if (!in.at(0) || in[0]->shape.size() != 4) return;
    if (is_perm(ops::transpose_perm(*ctx.node, 4), {0, 2, 3, 1})) want[0] = Layout::kAny;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    Value& x = *in.at(0);
    const auto perm = ops::transpose_perm(*ctx.node, x.shape.size());
    view_ = false;
    if (x.shape.size() == 4 && !x.host.defined()) {
      const Shape ys{x.shape[perm[0]], x.shape[perm[1]], x.shape[perm[2]], x.shape[perm[3]]};
      if (x.nhwc && is_perm(perm, {0, 2, 3, 1})) {
        // NCHW -> NHWC of a value stored NHWC: its memory is the result, in plain order.
        ctx.alias(*out.at(0), x, ys);
        view_ = true;
        return;
      }
      if (!x.nhwc && ctx.channels_last && is_perm(perm, {0, 3, 1, 2})) {
        // NHWC -> NCHW: the same memory is the result stored channels-last; readers that
        // need NCHW get a copy from the executor, channels-last ones (pools) read it as is.
        ctx.alias(*out.at(0), x, ys);
        out[0]->nhwc = true;
        view_ = true;
        return;
      }
    }
    TRT_CHECK(!x.nhwc, ErrorCode::kInternal, "{}: a channels-last input", ctx.node->describe());
    const auto st = strides_of(x.shape);
    Shape out_shape;
    std::vector<std::pair<int64_t, int64_t>> dims;
    bool identity = true;
    int64_t last = -1;
    for (int64_t p : perm) {
      out_shape.push_back(x.shape[p]);
      dims.push_back({x.shape[p], st[p]});
      if (x.shape[p] != 1) {
        identity = identity && p > last;
        last = p;
      }
    }
    if (identity) {  // only size-1 axes move: a view
      ctx.alias(*out.at(0), x, out_shape);
      return;
    }
    strided(ctx, x, *out.at(0), out_shape, dims, 0);
  }

 private:
  bool view_ = false;
};

class ExpandOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const Tensor& s = ctx.host(*in.at(1));
    TRT_CHECK_ARG(s.rank() <= 1, "{}: shape must be 1-D", node.describe());
    const Shape shape = ops::broadcast_shapes(x.shape, s.to_int64_vector(), node);
    const size_t lead = shape.size() - x.shape.size();
    const auto st = strides_of(x.shape);
    std::vector<std::pair<int64_t, int64_t>> dims;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t xd = d >= lead ? x.shape[d - lead] : 1;
      dims.push_back({shape[d], xd == 1 ? 0 : st[d - lead]});
    }
    if (shape == x.shape) {
      ctx.alias(*out.at(0), x, shape);
      return;
    }
    strided(ctx, x, *out.at(0), shape, dims, 0);
  }
};

class SliceOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const auto args = ops::slice_args(node, ctx.opset, opt_host(ctx, in, 1), opt_host(ctx, in, 2),
                                      opt_host(ctx, in, 3), opt_host(ctx, in, 4));
    TRT_CHECK_ARG(args.has_value(), "{}: inputs 'starts' and 'ends' are required", node.describe());
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const auto axes = ops::normalize_axes(args->axes, rank, node);
    std::vector<ops::SliceRange> ranges(rank);
    for (int64_t d = 0; d < rank; ++d) ranges[d].count = x.shape[d];
    for (size_t i = 0; i < axes.size(); ++i)
      ranges[axes[i]] =
          ops::slice_range(x.shape[axes[i]], args->starts[i], args->ends[i], args->steps[i]);
    const auto st = strides_of(x.shape);
    Shape shape;
    std::vector<std::pair<int64_t, int64_t>> dims;
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) {
      shape.push_back(ranges[d].count);
      if (ranges[d].count > 0) offset += ranges[d].start * st[d];
      dims.push_back({ranges[d].count, ranges[d].step * st[d]});
    }
    // A contiguous block when every axis of size > 1 has the stride of a packed output.
    bool contiguous = true;
    int64_t expect = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (shape[d] != 1 && dims[d].second != expect) contiguous = false;
      expect *= shape[d];
    }
    if (shape_numel(shape) == 0) {
      ctx.make(*out.at(0), x.dtype, shape);
      return;
    }
    if (contiguous) {
      ctx.dev(x);
      view_at(*out.at(0), x, offset, shape);
      return;
    }
    strided(ctx, x, *out.at(0), shape, dims, offset);
  }
};

// Concat of 4-D values on the channel axis, when one of them is channels-last (DenseNet's
// growing feature maps between NHWC convolutions): the others are converted and the result is
// NHWC too (rows of N*H*W pixels, each input's channels side by side), so that no reader needs
// an NCHW copy of it.
bool channel_concat(const ir::Node& node, const std::vector<Value*>& in) {
  if (in.empty() || !in[0] || in[0]->shape.size() != 4 || !node.has_attr("axis")) return false;
  const int64_t axis = node.attr_int("axis", 0);
  if (axis != 1 && axis != -3) return false;
  bool any = false;
  for (const Value* v : in) {
    if (!v || v->shape.size() != 4 || v->host.defined()) return false;
    any = any || v->nhwc;
  }
  return any;
}

class ConcatOp : public GpuOp {
 public:
  void want_layouts(const RunContext& ctx, const std::vector<Value*>& in,
                    std::vector<Layout>& want) const override {
    if (!ctx.node || !channel_concat(*ctx.node, in)) return;
    for (size_t i = 0; i < in.size(); ++i)
      want[i] = in[i]->nhwc || layout_free(in[i]->shape) ? Layout::kAny : Layout::kNhwc;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    TRT_CHECK_ARG(node.has_attr("axis"), "{}: attribute 'axis' is required", node.describe());
    TRT_CHECK_ARG(!in.empty() && in[0], "{}: needs inputs", node.describe());
    const Value& first = *in[0];
    const int64_t rank = static_cast<int64_t>(first.shape.size());
    const int64_t axis = ops::normalize_axis(node.attr_int("axis", 0), rank, node);
    if (channel_concat(node, in)) return run_nhwc(ctx, in, *out.at(0));
    Shape shape = first.shape;
    shape[axis] = 0;
    for (const Value* t : in) {
      TRT_CHECK_ARG(t && t->dtype == first.dtype, "{}: inputs must be present with one dtype",
                    node.describe());
      bool ok = static_cast<int64_t>(t->shape.size()) == rank;
      for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || t->shape[d] == first.shape[d];
      TRT_CHECK_ARG(ok, "{}: cannot concatenate {} and {} on axis {}", node.describe(),
                    shape_str(first.shape), shape_str(t->shape), axis);
      shape[axis] += t->shape[axis];
    }
    const size_t esz = element_size(node, first.dtype);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
    uint8_t* dst = static_cast<uint8_t*>(ctx.make(*out.at(0), first.dtype, shape));
    const size_t dpitch = static_cast<size_t>(shape[axis] * inner) * esz;
    size_t col = 0;
    for (Value* t : in) {
      const size_t width = static_cast<size_t>(t->shape[axis] * inner) * esz;
      if (width == 0 || outer == 0) continue;
      const void* src = ctx.dev(*t);
      ctx.check(k::copy_rows(dst + col, dpitch, src, width, width, static_cast<size_t>(outer),
                             ctx.stream),
                "Concat");
      col += width;
    }
  }

 private:
  static void run_nhwc(RunContext& ctx, const std::vector<Value*>& in, Value& out) {
    const ir::Node& node = *ctx.node;
    const Value& first = *in[0];
    Shape shape = first.shape;
    shape[1] = 0;
    for (const Value* t : in) {
      TRT_CHECK_ARG(t->dtype == first.dtype && t->shape[0] == first.shape[0] &&
                        t->shape[2] == first.shape[2] && t->shape[3] == first.shape[3],
                    "{}: cannot concatenate {} and {} on axis 1", node.describe(),
                    shape_str(first.shape), shape_str(t->shape));
      shape[1] += t->shape[1];
    }
    const size_t esz = element_size(node, first.dtype);
    const auto rows = static_cast<size_t>(shape[0] * shape[2] * shape[3]);
    uint8_t* dst = static_cast<uint8_t*>(ctx.make(out, first.dtype, shape));
    out.nhwc = true;
    const size_t dpitch = static_cast<size_t>(shape[1]) * esz;
    size_t col = 0;
    for (Value* t : in) {
      const size_t width = static_cast<size_t>(t->shape[1]) * esz;
      if (width == 0 || rows == 0) continue;
      ctx.check(k::copy_rows(dst + col, dpitch, ctx.dev(*t), width, width, rows, ctx.stream),
                "Concat (NHWC)");
      col += width;
    }
  }
};

class SplitOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = ops::normalize_axis(node.attr_int("axis", 0), rank, node);
    const Tensor* split = ctx.opset >= 13 ? opt_host(ctx, in, 1) : nullptr;
    const auto sizes = ops::split_sizes(node, ctx.opset, split, x.shape[axis], out.size());
    const size_t esz = element_size(node, x.dtype);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[d];
    const uint8_t* src = static_cast<const uint8_t*>(ctx.dev(x));
    const size_t spitch = static_cast<size_t>(x.shape[axis] * inner) * esz;
    size_t col = 0;
    for (size_t i = 0; i < sizes.size() && i < out.size(); ++i) {
      Shape s = x.shape;
      s[axis] = sizes[i];
      const size_t width = static_cast<size_t>(sizes[i] * inner) * esz;
      if (!out[i]) {
        col += width;
        continue;
      }
      if (outer == 1) {  // a contiguous block: a view
        ctx.dev(x);
        view_at(*out[i], x, static_cast<int64_t>(col / esz), s);
      } else {
        void* dst = ctx.make(*out[i], x.dtype, s);
        if (width > 0 && outer > 0)
          ctx.check(k::copy_rows(dst, width, src + col, spitch, width, static_cast<size_t>(outer),
                                 ctx.stream),
                    "Split");
      }
      col += width;
    }
  }
};

class GatherOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    Value& idx = *in.at(1);
    TRT_CHECK_ARG(idx.dtype == DataType::kInt32 || idx.dtype == DataType::kInt64,
                  "{}: indices must be int32 or int64, got {}", node.describe(),
                  dtype_name(idx.dtype));
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = ops::normalize_axis(node.attr_int("axis", 0), rank, node);
    const int64_t n = x.shape[axis];
    if (idx.host.defined()) {  // host-known indices are checked like the CPU kernel does
      for (int64_t i : idx.host.to_int64_vector())
        TRT_CHECK_ARG(i >= -n && i < n, "{}: index {} is out of range for axis {} of size {}",
                      node.describe(), i, axis, n);
    }
    Shape shape(x.shape.begin(), x.shape.begin() + axis);
    shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
    shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[d];
    const size_t esz = element_size(node, x.dtype);
    if (outer == 1 && idx.numel() == 1 && idx.host.defined()) {  // one contiguous block: a view
      int64_t i = idx.host.to_int64_vector()[0];
      if (i < 0) i += n;
      ctx.dev(x);
      view_at(*out.at(0), x, i * inner, shape);
      return;
    }
    const void* px = ctx.dev(x);
    const void* pi = ctx.dev(idx);
    void* py = ctx.make(*out.at(0), x.dtype, shape);
    ctx.check(k::gather(esz, px, pi, idx.dtype == DataType::kInt64, py, outer, n, idx.numel(),
                        inner, ctx.stream),
              "Gather");
  }
};

class PadOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    TRT_CHECK(rank <= k::kMaxRank, ErrorCode::kNotSupported, "{}: rank {} is over {}",
              node.describe(), rank, k::kMaxRank);
    const ops::PadMode mode = ops::pad_mode(node, ctx.opset);
    const auto pads = ops::pad_amounts(node, ctx.opset, rank, opt_host(ctx, in, 1),
                                       opt_host(ctx, in, 3), node.has_input(3));
    TRT_CHECK_ARG(pads.has_value(), "{}: input 'pads' is required", node.describe());
    const size_t esz = element_size(node, x.dtype);
    k::PadDesc p;
    p.rank = static_cast<int>(rank);
    p.mode = mode == ops::PadMode::kConstant  ? 0
             : mode == ops::PadMode::kEdge    ? 1
             : mode == ops::PadMode::kReflect ? 2
                                              : 3;
    Shape shape(rank);
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t len = x.shape[d], b = (*pads)[d], e = (*pads)[d + rank];
      shape[d] = len + b + e;
      TRT_CHECK_ARG(shape[d] >= 0, "{}: pads remove more than axis {} of size {}", node.describe(),
                    d, len);
      TRT_CHECK_ARG(len > 0 || p.mode == 0 || shape[d] == 0,
                    "{}: cannot pad the empty axis {} in this mode", node.describe(), d);
      p.in[d] = len;
      p.out[d] = shape[d];
      p.pad_begin[d] = b;
    }
    if (ctx.opset < 11) {
      const float value = node.attr_float("value", 0.0f);
      TRT_CHECK(x.dtype == DataType::kFloat32 || value == 0.0f, ErrorCode::kNotSupported,
                "{}: a non-zero pad value for {} (opset < 11)", node.describe(),
                dtype_name(x.dtype));
      if (x.dtype == DataType::kFloat32) std::memcpy(&p.value, &value, 4);
    } else if (const Tensor* c = opt_host(ctx, in, 2); c && c->numel() > 0) {
      TRT_CHECK_ARG(c->dtype() == x.dtype, "{}: constant_value has dtype {} but the data is {}",
                    node.describe(), dtype_name(c->dtype()), dtype_name(x.dtype));
      std::memcpy(&p.value, c->raw(), esz);
    }
    const int64_t n = shape_numel(shape);
    require_indexable(node, n);
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), x.dtype, shape);
    ctx.check(k::pad(esz, px, py, p, n, ctx.stream), "Pad");
  }
};

template <typename T>
OpFactory simple() {
  return [](const OpBuild&) -> std::unique_ptr<GpuOp> { return std::make_unique<T>(); };
}

}  // namespace

void register_tensor_ops(OpTable& t) {
  t["Reshape"] = simple<ReshapeOp>();
  t["Flatten"] = simple<FlattenOp>();
  t["Squeeze"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<SqueezeOp>(false);
  };
  t["Unsqueeze"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> {
    return std::make_unique<SqueezeOp>(true);
  };
  t["Transpose"] = simple<TransposeOp>();
  t["Expand"] = simple<ExpandOp>();
  t["Slice"] = simple<SliceOp>();
  t["Concat"] = simple<ConcatOp>();
  t["Split"] = simple<SplitOp>();
  t["Gather"] = simple<GatherOp>();
  t["Pad"] = simple<PadOp>();
}

}  // namespace trtutils::cuda
