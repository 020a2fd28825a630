// Index ops on the GPU: ArgMax / ArgMin, GatherElements, ScatterElements (and Scatter, its opset
// 9-10 name), GatherND, ScatterND, NonZero, CumSum, and Not. Kernels: index_kernels.cu (results
// equal to the CPU kernels'). Host-known indices are checked like the CPU kernels check them;
// NonZero reads its count on the host (its output's size depends on the data: an engine with
// NonZero runs eagerly, not as a CUDA graph). A dtype the kernels lack is refused at
// construction, so the builder plans the node on the CPU (fallback) instead.
#include <cstring>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/index_kernels.h"
#include "ops/op_registry.h"
#include "ops/tensor_shapes.h"

namespace trtutils::cuda {
namespace {

bool typed_index_dtype(DataType dt) {
  return dt == DataType::kFloat32 || dt == DataType::kFloat16 || dt == DataType::kBFloat16 ||
         dt == DataType::kInt32 || dt == DataType::kInt64;
}

void require_indices(const ir::Node& node, DataType dt) {
  TRT_CHECK_ARG(dt == DataType::kInt32 || dt == DataType::kInt64,
                "{}: indices must be int32 or int64, got {}", node.describe(), dtype_name(dt));
}

void require_rank(const ir::Node& node, size_t rank) {
  TRT_CHECK(rank <= static_cast<size_t>(k::kIndexMaxRank), ErrorCode::kNotSupported,
            "{}: rank {} is over the CUDA index kernels' {}", node.describe(), rank,
            k::kIndexMaxRank);
}

k::ScatterReduce scatter_reduction(const ir::Node& node, int64_t opset) {
  const std::string r = opset >= 16 ? node.attr_string("reduction", "none") : "none";
  if (r == "none") return k::ScatterReduce::kNone;
  if (r == "add") return k::ScatterReduce::kAdd;
  if (r == "mul") return k::ScatterReduce::kMul;
  if (r == "max") return k::ScatterReduce::kMax;
  TRT_CHECK(r == "min", ErrorCode::kNotSupported,
            "{}: reduction '{}' (expected none, add, mul, max, min)", node.describe(), r);
  return k::ScatterReduce::kMin;
}

// A scatter's reduction needs a typed kernel: refused at construction for other dtypes.
void require_scatter_dtype(const OpBuild& b) {
  const DataType dt = b.input_dtype(0);
  if (scatter_reduction(b.node, b.opset) == k::ScatterReduce::kNone) return;
  TRT_CHECK(dt == DataType::kUndefined || typed_index_dtype(dt), ErrorCode::kNotSupported,
            "{}: reduction over {} on the GPU (float32 / float16 / bfloat16 / int32 / int64)",
            b.node.describe(), dtype_name(dt));
}

// Host-known indices checked as the CPU kernels check them.
void check_host_indices(const ir::Node& node, const Value& idx, int64_t size, int64_t axis) {
  if (!idx.host.defined()) return;
  for (int64_t i : idx.host.to_int64_vector())
    TRT_CHECK_ARG(i >= -size && i < size, "{}: index {} is out of range for axis {} of size {}",
                  node.describe(), i, axis, size);
}

// GatherND's / ScatterND's addressing: index tuples of k coordinates into the axes first_axis ..
// first_axis + k - 1 of data, each addressing a slice of the axes after them (batches and
// per_batch left to the caller).
k::NdDesc nd_desc(const ir::Node& node, const Shape& data, int64_t first_axis, int64_t kk) {
  require_rank(node, data.size());
  k::NdDesc d;
  d.k = static_cast<int>(kk);
  for (size_t a = static_cast<size_t>(first_axis + kk); a < data.size(); ++a) d.slice *= data[a];
  int64_t stride = d.slice;
  for (int64_t c = kk - 1; c >= 0; --c) {
    d.dims[c] = data[static_cast<size_t>(first_axis + c)];
    d.strides[c] = stride;
    stride *= d.dims[c];
  }
  d.batch_elems = stride;
  return d;
}

// Host-known index tuples of GatherND / ScatterND checked (coordinate c addresses axis
// first_axis + c).
void check_host_tuples(const ir::Node& node, const Value& idx, const k::NdDesc& d,
                       int64_t first_axis) {
  if (!idx.host.defined()) return;
  const std::vector<int64_t> v = idx.host.to_int64_vector();
  for (size_t p = 0; p < v.size(); ++p) {
    const int64_t c = static_cast<int64_t>(p) % d.k, size = d.dims[c];
    TRT_CHECK_ARG(v[p] >= -size && v[p] < size,
                  "{}: index {} is out of range for axis {} of size {}", node.describe(), v[p],
                  first_axis + c, size);
  }
}

// y = a device copy of data (the scatters' starting point).
void* copy_of(RunContext& ctx, Value& data, Value& y) {
  const void* src = ctx.dev(data);
  void* dst = ctx.make(y, data.dtype, data.shape);
  if (data.nbytes())
    TRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, data.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream));
  return dst;
}

class ArgReduceOp : public GpuOp {
 public:
  ArgReduceOp(const OpBuild& b, bool max) : max_(max) {
    const DataType dt = b.input_dtype(0);
    TRT_CHECK(dt == DataType::kUndefined || typed_index_dtype(dt) || dt == DataType::kInt8 ||
                  dt == DataType::kUInt8,
              ErrorCode::kNotSupported, "{}: {} input on the GPU", b.node.describe(),
              dtype_name(dt));
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = ops::normalize_axis(node.attr_int("axis", 0), rank, node);
    k::ArgReduceArgs a;
    a.n = x.shape[static_cast<size_t>(axis)];
    TRT_CHECK_ARG(a.n > 0, "{}: the reduced axis {} is empty", node.describe(), axis);
    for (int64_t d = 0; d < axis; ++d) a.outer *= x.shape[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) a.inner *= x.shape[static_cast<size_t>(d)];
    Shape shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis)
        shape.push_back(x.shape[static_cast<size_t>(d)]);
      else if (node.attr_int("keepdims", 1) != 0)
        shape.push_back(1);
    }
    a.x = ctx.dev(x);
    a.dt = x.dtype;
    a.max = max_;
    a.last = ctx.opset >= 12 && node.attr_int("select_last_index", 0) != 0;
    a.y = static_cast<int64_t*>(ctx.make(*out.at(0), DataType::kInt64, shape));
    ctx.check(k::arg_reduce(a, ctx.stream), max_ ? "ArgMax" : "ArgMin");
  }

 private:
  bool max_;
};

k::ElementsDesc elements_desc(const ir::Node& node, const Shape& data, const Shape& idx,
                              int64_t axis) {
  TRT_CHECK_ARG(idx.size() == data.size(), "{}: indices {} and data {} must have one rank",
                node.describe(), shape_str(idx), shape_str(data));
  require_rank(node, data.size());
  k::ElementsDesc d;
  d.rank = static_cast<int>(data.size());
  d.axis = static_cast<int>(axis);
  d.axis_len = data[static_cast<size_t>(axis)];
  const std::vector<int64_t> st = strides_of(data);
  for (size_t k = 0; k < data.size(); ++k) {
    TRT_CHECK_ARG(static_cast<int64_t>(k) == axis || idx[k] <= data[k],
                  "{}: indices {} exceed data {} on axis {}", node.describe(), shape_str(idx),
                  shape_str(data), k);
    d.idx_dims[k] = idx[k];
    d.data_strides[k] = st[k];
  }
  return d;
}

// GatherElements' / ScatterElements' addressing: the axis attribute, the descriptor, and the
// host-known indices checked.
k::ElementsDesc elements_of(const ir::Node& node, const Value& data, const Value& idx) {
  require_indices(node, idx.dtype);
  const int64_t axis =
      ops::normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(data.shape.size()), node);
  const k::ElementsDesc d = elements_desc(node, data.shape, idx.shape, axis);
  check_host_indices(node, idx, d.axis_len, axis);
  return d;
}

class GatherElementsOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& data = *in.at(0);
    Value& idx = *in.at(1);
    const k::ElementsDesc d = elements_of(node, data, idx);
    const size_t esz = element_size(node, data.dtype);
    const void* px = ctx.dev(data);
    const void* pi = ctx.dev(idx);
    void* py = ctx.make(*out.at(0), data.dtype, idx.shape);
    ctx.check(k::gather_elements(esz, px, pi, idx.dtype == DataType::kInt64, py, d, ctx.stream),
              "GatherElements");
  }
};

class ScatterElementsOp : public GpuOp {
 public:
  explicit ScatterElementsOp(const OpBuild& b) { require_scatter_dtype(b); }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& data = *in.at(0);
    Value& idx = *in.at(1);
    Value& upd = *in.at(2);
    TRT_CHECK_ARG(upd.shape == idx.shape && upd.dtype == data.dtype,
                  "{}: updates {} {} must have the indices' shape {} and the data's dtype {}",
                  node.describe(), dtype_name(upd.dtype), shape_str(upd.shape),
                  shape_str(idx.shape), dtype_name(data.dtype));
    const k::ElementsDesc d = elements_of(node, data, idx);
    const size_t esz = element_size(node, data.dtype);
    const void* pi = ctx.dev(idx);
    const void* pu = ctx.dev(upd);
    void* py = copy_of(ctx, data, *out.at(0));
    ctx.check(k::scatter_elements(data.dtype, esz, pi, idx.dtype == DataType::kInt64, pu, py, d,
                                  scatter_reduction(node, ctx.opset), ctx.stream),
              "ScatterElements");
  }
};

class GatherNdOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& data = *in.at(0);
    Value& idx = *in.at(1);
    require_indices(node, idx.dtype);
    const int64_t b = ctx.opset >= 12 ? node.attr_int("batch_dims", 0) : 0;
    const int64_t r = static_cast<int64_t>(data.shape.size());
    const int64_t q = static_cast<int64_t>(idx.shape.size());
    TRT_CHECK_ARG(q >= 1 && b >= 0 && b < q && b <= r,
                  "{}: batch_dims {} for data {} and indices {}", node.describe(), b,
                  shape_str(data.shape), shape_str(idx.shape));
    const int64_t kk = idx.shape.back();
    TRT_CHECK_ARG(kk >= 1 && b + kk <= r,
                  "{}: indices' last dimension {} does not fit data {} with batch_dims {}",
                  node.describe(), kk, shape_str(data.shape), b);
    for (int64_t d = 0; d < b; ++d)
      TRT_CHECK_ARG(data.shape[d] == idx.shape[d],
                    "{}: batch dimension {} differs: data {}, indices {}", node.describe(), d,
                    shape_str(data.shape), shape_str(idx.shape));
    k::NdDesc d = nd_desc(node, data.shape, b, kk);
    for (int64_t a = 0; a < b; ++a) d.batches *= data.shape[a];
    for (int64_t a = b; a < q - 1; ++a) d.per_batch *= idx.shape[a];
    check_host_tuples(node, idx, d, b);
    Shape shape(idx.shape.begin(), idx.shape.end() - 1);
    shape.insert(shape.end(), data.shape.begin() + b + kk, data.shape.end());
    const size_t esz = element_size(node, data.dtype);
    const void* px = ctx.dev(data);
    const void* pi = ctx.dev(idx);
    void* py = ctx.make(*out.at(0), data.dtype, shape);
    ctx.check(k::gather_nd(esz, px, pi, idx.dtype == DataType::kInt64, py, d, ctx.stream),
              "GatherND");
  }
};

class ScatterNdOp : public GpuOp {
 public:
  explicit ScatterNdOp(const OpBuild& b) { require_scatter_dtype(b); }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& data = *in.at(0);
    Value& idx = *in.at(1);
    Value& upd = *in.at(2);
    require_indices(node, idx.dtype);
    TRT_CHECK_ARG(upd.dtype == data.dtype, "{}: updates are {}, data {}", node.describe(),
                  dtype_name(upd.dtype), dtype_name(data.dtype));
    const Shape want = ops::scatter_nd_updates_shape(node, data.shape, idx.shape);
    TRT_CHECK_ARG(upd.shape == want,
                  "{}: updates have shape {}, expected {} for data {} and indices {}",
                  node.describe(), shape_str(upd.shape), shape_str(want), shape_str(data.shape),
                  shape_str(idx.shape));
    const int64_t kk = idx.shape.back();
    k::NdDesc d = nd_desc(node, data.shape, 0, kk);
    d.per_batch = kk > 0 ? idx.numel() / kk : 0;
    check_host_tuples(node, idx, d, 0);
    const size_t esz = element_size(node, data.dtype);
    const void* pi = ctx.dev(idx);
    const void* pu = ctx.dev(upd);
    void* py = copy_of(ctx, data, *out.at(0));
    ctx.check(k::scatter_nd(data.dtype, esz, pi, idx.dtype == DataType::kInt64, pu, py, d,
                            scatter_reduction(node, ctx.opset), ctx.stream),
              "ScatterND");
  }
};

class NonZeroOp : public GpuOp {
 public:
  std::string kernel() const override { return "CUDA kernel (flags, cub scan, coordinates)"; }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    require_rank(node, x.shape.size());
    TRT_CHECK(x.numel() < (int64_t{1} << 31), ErrorCode::kNotSupported,
              "{}: {} elements are too many for the GPU kernel", node.describe(), x.numel());
    TRT_CHECK(!ctx.capturing, ErrorCode::kNotSupported,
              "{}: NonZero's output size depends on the data (not capturable in a CUDA graph)",
              node.describe());
    k::NonZeroDesc d;
    d.rank = static_cast<int>(x.shape.size());
    for (size_t a = 0; a < x.shape.size(); ++a) d.dims[a] = x.shape[a];
    d.numel = x.numel();
    d.esz = element_size(node, x.dtype);
    d.sign_mask = x.dtype == DataType::kFloat32 || x.dtype == DataType::kFloat16 ||
                  x.dtype == DataType::kBFloat16 || x.dtype == DataType::kFloat64;
    const void* px = ctx.dev(x);
    std::shared_ptr<void> scratch = ctx.scratch(k::nonzero_scratch_bytes(d.numel));
    const int32_t* count_dev = nullptr;
    ctx.check(k::nonzero_count(px, d, scratch.get(), &count_dev, ctx.stream), "NonZero");
    int32_t count = 0;
    TRT_CUDA_CHECK(cudaMemcpyAsync(&count, count_dev, 4, cudaMemcpyDeviceToHost, ctx.stream));
    TRT_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    auto* py = static_cast<int64_t*>(
        ctx.make(*out.at(0), DataType::kInt64, {static_cast<int64_t>(d.rank), count}));
    ctx.check(k::nonzero_coords(d, scratch.get(), count, py, ctx.stream), "NonZero");
  }
};

class CumSumOp : public GpuOp {
 public:
  explicit CumSumOp(const OpBuild& b) {
    const DataType dt = b.input_dtype(0);
    TRT_CHECK(dt == DataType::kUndefined || typed_index_dtype(dt), ErrorCode::kNotSupported,
              "{}: {} input on the GPU", b.node.describe(), dtype_name(dt));
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const Tensor& at = ctx.host(*in.at(1));
    TRT_CHECK_ARG(at.numel() == 1, "{}: axis must hold one value, got {}", node.describe(),
                  shape_str(at.shape()));
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    TRT_CHECK_ARG(rank >= 1, "{}: input x must have rank >= 1", node.describe());
    const int64_t axis = ops::normalize_axis(at.to_int64_vector()[0], rank, node);
    k::CumSumArgs a;
    a.n = x.shape[static_cast<size_t>(axis)];
    for (int64_t d = 0; d < axis; ++d) a.outer *= x.shape[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) a.inner *= x.shape[static_cast<size_t>(d)];
    a.exclusive = node.attr_int("exclusive", 0) != 0;
    a.reverse = node.attr_int("reverse", 0) != 0;
    a.dt = x.dtype;
    a.x = ctx.dev(x);
    a.y = ctx.make(*out.at(0), x.dtype, x.shape);
    ctx.check(k::cumsum(a, ctx.stream), "CumSum");
  }
};

class NotOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    Value& x = *in.at(0);
    TRT_CHECK_ARG(x.dtype == DataType::kBool, "{}: input must be bool, got {}",
                  ctx.node->describe(), dtype_name(x.dtype));
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), DataType::kBool, x.shape);
    ctx.check(k::xor_bytes(px, py, x.numel(), 1, ctx.stream), "Not");
  }
};

template <typename T>
OpFactory plain() {
  return [](const OpBuild&) -> std::unique_ptr<GpuOp> { return std::make_unique<T>(); };
}
template <typename T>
OpFactory with_build() {
  return [](const OpBuild& b) -> std::unique_ptr<GpuOp> { return std::make_unique<T>(b); };
}

}  // namespace

void register_index_ops(OpTable& t) {
  t["ArgMax"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<ArgReduceOp>(b, true);
  };
  t["ArgMin"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<ArgReduceOp>(b, false);
  };
  t["GatherElements"] = plain<GatherElementsOp>();
  t["ScatterElements"] = with_build<ScatterElementsOp>();
  t["Scatter"] = with_build<ScatterElementsOp>();
  t["GatherND"] = plain<GatherNdOp>();
  t["ScatterND"] = with_build<ScatterNdOp>();
  t["NonZero"] = plain<NonZeroOp>();
  t["CumSum"] = with_build<CumSumOp>();
  t["Not"] = plain<NotOp>();
}

}  // namespace trtutils::cuda
