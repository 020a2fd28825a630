// ONNX Range on the GPU, for start / limit / delta computed on the device (with all three on the
// host the executor runs Range there, as shape arithmetic). The output's length depends on the
// values: the host reads the three scalars (a small download), sizes the output and the kernel
// (range_kernels.cu) fills it; so an engine with such a Range runs eagerly, not as a CUDA graph.
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

}  // namespace

void register_range_ops(OpTable& t) {
  t["Range"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    const DataType dt = b.input_dtype(0);
    TRT_CHECK(dt == DataType::kUndefined || range_dtype(dt), ErrorCode::kNotSupported,
              "{}: dtype {} on the GPU", b.node.describe(), dtype_name(dt));
    return std::make_unique<RangeOp>();
  };
}

}  // namespace trtutils::cuda
