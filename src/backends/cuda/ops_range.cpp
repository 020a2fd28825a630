// Tensors generated on the GPU from values computed on the device (with every input on the host
// the executor runs these there, as shape arithmetic): ONNX Range (start / limit / delta) and
// ConstantOfShape (its shape; e.g. inside a detector's Loop body). The output's size depends on
// the values: the host reads them (a small download), sizes the output and a kernel
// (range_kernels.cu) fills it; so an engine with such a node runs eagerly, not as a CUDA graph.
#include <cstring>
#include <string>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/range_kernels.h"
#include "ops/tensor_shapes.h"

namespace trtutils::cuda {
namespace {

// int8 .. int64 and uint8 .. uint64 (int4 is sub-byte), float64 / float32 / float16 / bfloat16.
bool range_dtype(DataType dt) {
  if (dtype_is_integer(dt)) return dtype_bits(dt) >= 8;
  return dt == DataType::kFloat64 || dt == DataType::kFloat32 || dt == DataType::kFloat16 ||
         dt == DataType::kBFloat16;
}

class RangeOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    TRT_CHECK_ARG(in.size() == 3 && in[0] && in[1] && in[2],
                  "{}: start, limit and delta are required", node.describe());
    const Tensor& start = ctx.host(*in[0]);
    const Tensor& limit = ctx.host(*in[1]);
    const Tensor& delta = ctx.host(*in[2]);
    const DataType dt = start.dtype();
    TRT_CHECK_ARG(limit.dtype() == dt && delta.dtype() == dt,
                  "{}: start, limit and delta must share a dtype ({}, {}, {})", node.describe(),
                  dtype_name(dt), dtype_name(limit.dtype()), dtype_name(delta.dtype()));
    TRT_CHECK(range_dtype(dt), ErrorCode::kNotSupported, "{}: dtype {} on the GPU", node.describe(),
              dtype_name(dt));
    k::RangeArgs a;
    a.dt = dt;
    a.n = ops::range_length(start, limit, delta, node);
    if (dtype_is_integer(dt)) {
      a.start_int = start.to_int64_vector()[0];
      a.delta_int = delta.to_int64_vector()[0];
      a.esz = element_size(node, dt);
    } else {
      a.start = start.at_double(0);
      a.delta = delta.at_double(0);
    }
    a.y = ctx.make(*out.at(0), dt, {a.n});
    ctx.check(k::range_fill(a, ctx.stream), "Range");
  }
};

// ConstantOfShape's value attribute (a one-element tensor, float32 0 when absent) as bits.
struct FillValue {
  DataType dt = DataType::kFloat32;
  size_t esz = 4;
  uint64_t bits = 0;
};

// Reads the value into v; returns why it cannot be filled on the GPU ("" when it can).
std::string fill_value(const ir::Node& node, FillValue& v) {
  const ir::Attribute* a = node.attr("value");
  if (!a) return "";
  if (a->kind != ir::Attribute::Kind::kTensor || a->t.numel() != 1)
    return "'value' must be a one-element tensor";
  v.dt = a->t.dtype();
  if (dtype_bits(v.dt) % 8 != 0) return fmt::format("value dtype {}", dtype_name(v.dt));
  v.esz = dtype_bits(v.dt) / 8;
  if (v.esz != 1 && v.esz != 2 && v.esz != 4 && v.esz != 8)
    return fmt::format("value dtype {}", dtype_name(v.dt));
  std::memcpy(&v.bits, a->t.raw(), v.esz);
  return "";
}

class ConstantOfShapeOp : public GpuOp {
 public:
  explicit ConstantOfShapeOp(FillValue v) : v_(v) {}
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    TRT_CHECK_ARG(!in.empty() && in[0], "{}: the shape input is required", node.describe());
    const Tensor& s = ctx.host(*in[0]);
    TRT_CHECK_ARG(s.dtype() == DataType::kInt64, "{}: the shape input must be int64, got {}",
                  node.describe(), dtype_name(s.dtype()));
    const Shape shape = s.to_int64_vector();
    for (int64_t d : shape)
      TRT_CHECK_ARG(d >= 0, "{}: negative dim in shape {}", node.describe(), shape_str(shape));
    void* y = ctx.make(*out.at(0), v_.dt, shape);
    ctx.check(k::fill_bits(v_.esz, v_.bits, y, shape_numel(shape), ctx.stream), "ConstantOfShape");
  }

 private:
  FillValue v_;
};

}  // namespace

void register_range_ops(OpTable& t) {
  t["ConstantOfShape"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    FillValue v;
    const std::string why = fill_value(b.node, v);
    TRT_CHECK(why.empty(), ErrorCode::kNotSupported, "{}: {} on the GPU", b.node.describe(), why);
    return std::make_unique<ConstantOfShapeOp>(v);
  };
  t["Range"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    const DataType dt = b.input_dtype(0);
    TRT_CHECK(dt == DataType::kUndefined || range_dtype(dt), ErrorCode::kNotSupported,
              "{}: dtype {} on the GPU", b.node.describe(), dtype_name(dt));
    return std::make_unique<RangeOp>();
  };
}

}  // namespace trtutils::cuda
