// Einsum on the GPU as one cuBLASLt product: the letters of two operands sort into batch (in
// both operands and the output), M (first operand and output), K (both operands, summed) and N
// (second operand and output); each operand is copied into [batch, M, K] / [batch, K, N] order
// where it is not already (size-1 dimensions broadcast by stride 0), one batched matmul gives
// [batch, M, N], and a last copy puts the output letters in the equation's order. One operand:
// a transpose. Refused at construction (so the builder places the node on the CPU) for forms
// that are not one product: a letter repeated within a term (diagonals), a letter summed inside
// one operand, three or more operands, non-float dtypes.
#include <algorithm>
#include <map>
#include <optional>

#include "backends/cuda/cuda_ops.h"
#include "ops/einsum.h"

namespace trtutils::cuda {
namespace {

struct Classes {
  std::string batch, m, k, n;
};

bool has(const std::string& s, char c) {
  return s.find(c) != std::string::npos;
}

void require_distinct(const ir::Node& node, const std::string& term) {
  for (size_t i = 0; i < term.size(); ++i)
    TRT_CHECK(term.find(term[i], i + 1) == std::string::npos, ErrorCode::kNotSupported,
              "{}: a letter repeated within a term (a diagonal) has no GPU kernel",
              node.describe());
}

// The letter classes of a parsed equation; Error(kNotSupported) for forms that are not one
// product (or one transpose).
Classes classify(const ir::Node& node, const ops::einsum::Equation& e) {
  TRT_CHECK(e.inputs.size() == 1 || e.inputs.size() == 2, ErrorCode::kNotSupported,
            "{}: Einsum of {} operands has no GPU kernel (one or two)", node.describe(),
            e.inputs.size());
  for (const auto& t : e.inputs) require_distinct(node, t);
  require_distinct(node, e.output);
  Classes c;
  if (e.inputs.size() == 1) {
    TRT_CHECK(e.output.size() == e.inputs[0].size(), ErrorCode::kNotSupported,
              "{}: a one-operand Einsum that sums has no GPU kernel (transposes only)",
              node.describe());
    return c;
  }
  const std::string &a = e.inputs[0], &b = e.inputs[1], &o = e.output;
  for (char x : a) {
    if (has(b, x))
      (has(o, x) ? c.batch : c.k).push_back(x);
    else
      TRT_CHECK(has(o, x), ErrorCode::kNotSupported,
                "{}: letter '{}' is summed within one operand (no GPU kernel)", node.describe(), x);
  }
  for (char x : a)
    if (!has(b, x)) c.m.push_back(x);
  for (char x : b) {
    if (has(a, x)) continue;
    TRT_CHECK(has(o, x), ErrorCode::kNotSupported,
              "{}: letter '{}' is summed within one operand (no GPU kernel)", node.describe(), x);
    c.n.push_back(x);
  }
  return c;
}

// The (size, stride) pairs that read `t` (letters `term`, shape `shape`) in the order `order`,
// with sizes from `size` (a size-1 dimension broadcast by stride 0).
std::vector<std::pair<int64_t, int64_t>> reader(const std::string& term, const Shape& shape,
                                                const std::string& order,
                                                const std::map<char, int64_t>& size) {
  const std::vector<int64_t> st = strides_of(shape);
  std::vector<std::pair<int64_t, int64_t>> dims;
  for (char x : order) {
    const size_t d = term.find(x);
    dims.push_back({size.at(x), shape[d] == 1 ? 0 : st[d]});
  }
  return dims;
}

bool plain_order(const std::string& term, const Shape& shape, const std::string& order,
                 const std::map<char, int64_t>& size) {
  if (term != order) return false;
  for (size_t d = 0; d < term.size(); ++d)
    if (shape[d] != size.at(term[d])) return false;
  return true;
}

int64_t product(const std::string& letters, const std::map<char, int64_t>& size) {
  int64_t p = 1;
  for (char x : letters) p *= size.at(x);
  return p;
}

class EinsumOp : public GpuOp {
 public:
  explicit EinsumOp(const OpBuild& b) {
    std::vector<size_t> ranks;
    for (size_t i = 0; i < b.node.inputs.size(); ++i) {
      const DataType dt = b.input_dtype(i);
      TRT_CHECK(dt == DataType::kUndefined || dt == DataType::kFloat32 ||
                    dt == DataType::kFloat16 || dt == DataType::kBFloat16,
                ErrorCode::kNotSupported, "{}: {} operand on the GPU", b.node.describe(),
                dtype_name(dt));
      if (const Tensor* t = b.constant_input(i)) {
        ranks.push_back(t->rank());
      } else if (auto vi = b.graph.find_value_info(b.node.inputs[i]); vi && vi->shape) {
        ranks.push_back(vi->shape->size());
      }
    }
    if (ranks.size() == b.node.inputs.size()) (void)parsed(b.node, ranks);
  }
  std::string kernel() const override { return "cuBLASLt (batched product) + strided copies"; }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    std::vector<size_t> ranks;
    std::vector<Shape> shapes;
    for (const Value* v : in) {
      ranks.push_back(v->shape.size());
      shapes.push_back(v->shape);
    }
    const Parsed& p = parsed(node, ranks);
    const ops::einsum::Equation& e = p.e;
    const Classes& c = p.c;
    const DataType dt = in.at(0)->dtype;
    require_float(node, dt, "operand");
    for (const Value* v : in)
      TRT_CHECK_ARG(v->dtype == dt, "{}: operands of different dtypes ({} and {})", node.describe(),
                    dtype_name(dt), dtype_name(v->dtype));
    const std::map<char, int64_t> size = ops::einsum::letter_sizes(node, e, shapes);
    Shape out_shape;
    for (char x : e.output) out_shape.push_back(size.at(x));
    const size_t esz = static_cast<size_t>(dtype_bits(dt) / 8);
    require_indexable(node, shape_numel(out_shape));
    Value& y = *out.at(0);
    void* py = ctx.make(y, dt, out_shape);
    if (shape_numel(out_shape) == 0) return;
    if (e.inputs.size() == 1) {
      copy_strided(ctx, esz, ctx.dev(*in[0]), py, reader(e.inputs[0], in[0]->shape, e.output, size),
                   0);
      return;
    }
    const std::string a_order = c.batch + c.m + c.k, b_order = c.batch + c.k + c.n;
    const std::string y_order = c.batch + c.m + c.n;
    std::shared_ptr<void> a_tmp, b_tmp;
    const void* pa = operand(ctx, *in[0], e.inputs[0], a_order, size, esz, a_tmp);
    const void* pb = operand(ctx, *in[1], e.inputs[1], b_order, size, esz, b_tmp);
    const int64_t bt = product(c.batch, size), m = product(c.m, size), k = product(c.k, size),
                  n = product(c.n, size);
    const bool direct = y_order == e.output;
    std::shared_ptr<void> y_tmp = direct ? nullptr : ctx.scratch(y.nbytes());
    void* pd = direct ? py : y_tmp.get();
    if (k == 0) {
      TRT_CUDA_CHECK(cudaMemsetAsync(pd, 0, y.nbytes(), ctx.stream));
    } else {
      matmul(ctx, lt_, dt, {bt, m, k}, {bt, k, n}, pa, pb, pd);
    }
    if (!direct) {
      Shape ys;
      for (char x : y_order) ys.push_back(size.at(x));
      copy_strided(ctx, esz, pd, py, reader(y_order, ys, e.output, size), 0);
    }
  }

 private:
  // The equation for operands of these ranks, and its letter classes: parsed once per ranks
  // (Error(kNotSupported) for forms that are not one product).
  struct Parsed {
    std::vector<size_t> ranks;
    ops::einsum::Equation e;
    Classes c;
  };
  const Parsed& parsed(const ir::Node& node, const std::vector<size_t>& ranks) {
    if (!parsed_ || parsed_->ranks != ranks) {
      ops::einsum::Equation e = ops::einsum::parse(node, ranks);
      Classes c = classify(node, e);
      parsed_ = Parsed{ranks, std::move(e), std::move(c)};
    }
    return *parsed_;
  }
  // v's device data in `order` (a copy unless it is already that layout).
  const void* operand(RunContext& ctx, Value& v, const std::string& term, const std::string& order,
                      const std::map<char, int64_t>& size, size_t esz, std::shared_ptr<void>& tmp) {
    const void* p = ctx.dev(v);
    if (plain_order(term, v.shape, order, size)) return p;
    const int64_t count = product(order, size);
    require_indexable(*ctx.node, count);
    tmp = ctx.scratch(static_cast<size_t>(count) * esz);
    copy_strided(ctx, esz, p, tmp.get(), reader(term, v.shape, order, size), 0);
    return tmp.get();
  }
  LtMatmul lt_;
  std::optional<Parsed> parsed_;
};

}  // namespace

void register_einsum_ops(OpTable& t) {
  t["Einsum"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<EinsumOp>(b);
  };
}

}  // namespace trtutils::cuda
