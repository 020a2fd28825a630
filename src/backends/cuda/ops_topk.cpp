// TopK on the GPU (detectors' per-level candidate selection: RetinaNet, FCOS, SSD): float32 and
// float16 inputs, any axis; K from the attribute (opset < 10) or the host value of input 1 (a
// shape computation in exported detectors). Other dtypes fall back to the CPU kernel. Kernels:
// topk_kernels.cu (the CPU kernel's order: value, then the lower index; NaN above numbers).
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/topk_kernels.h"

namespace trtutils::cuda {
namespace {

class TopKOp : public GpuOp {
 public:
  explicit TopKOp(const OpBuild& b) : opset_(b.opset) {
    const DataType dt = b.input_dtype(0);
    TRT_CHECK(dt == DataType::kFloat32 || dt == DataType::kFloat16, ErrorCode::kNotSupported,
              "{}: {} input on the GPU (float32 / float16 only)", b.node.describe(),
              dtype_name(dt));
  }
  std::string kernel() const override { return "CUDA kernel (radix sort of value/index keys)"; }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    const auto rank = static_cast<int64_t>(x.shape.size());
    TRT_CHECK_ARG(rank >= 1, "{}: input X must have rank >= 1", node.describe());
    int64_t axis = node.attr_int("axis", -1);
    if (axis < 0) axis += rank;
    TRT_CHECK_ARG(axis >= 0 && axis < rank, "{}: axis {} outside rank {}", node.describe(),
                  node.attr_int("axis", -1), rank);
    int64_t k = node.attr_int("k", -1);
    if (opset_ >= 10) {
      const Tensor& kt = ctx.host(*in.at(1));
      TRT_CHECK_ARG(kt.numel() == 1, "{}: K must hold one value, got {}", node.describe(),
                    shape_str(kt.shape()));
      k = kt.to_int64_vector()[0];
    }
    const int64_t n = x.shape[static_cast<size_t>(axis)];
    TRT_CHECK_ARG(k >= 0 && k <= n, "{}: K = {} is outside [0, {}] (axis {} of {})",
                  node.describe(), k, n, axis, shape_str(x.shape));
    k::TopKArgs a;
    for (int64_t d = 0; d < axis; ++d) a.outer *= x.shape[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) a.inner *= x.shape[static_cast<size_t>(d)];
    a.n = n;
    a.k = k;
    a.largest = opset_ < 11 || node.attr_int("largest", 1) != 0;
    a.half = x.dtype == DataType::kFloat16;
    TRT_CHECK(a.outer * a.n * a.inner < (int64_t{1} << 31) && n < (int64_t{1} << 32),
              ErrorCode::kNotSupported, "{}: {} elements are too many for the GPU kernel",
              node.describe(), a.outer * a.n * a.inner);
    Shape shape = x.shape;
    shape[static_cast<size_t>(axis)] = k;
    a.x = ctx.dev(x);
    a.values = ctx.make(*out.at(0), x.dtype, shape);
    std::shared_ptr<void> indices_tmp;
    if (out.size() > 1 && out[1] != nullptr) {
      a.indices = static_cast<int64_t*>(ctx.make(*out[1], DataType::kInt64, shape));
    } else {
      indices_tmp = ctx.scratch(static_cast<size_t>(a.outer * k * a.inner) * 8);
      a.indices = static_cast<int64_t*>(indices_tmp.get());
    }
    std::shared_ptr<void> scratch = ctx.scratch(k::topk_scratch_bytes(a));
    ctx.check(k::topk(a, scratch.get(), ctx.stream), "TopK");
  }

 private:
  int64_t opset_;
};

}  // namespace

void register_topk_ops(OpTable& t) {
  t["TopK"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<TopKOp>(b);
  };
}

}  // namespace trtutils::cuda
