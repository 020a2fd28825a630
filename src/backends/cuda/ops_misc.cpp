// Small ops on the GPU: Tile (a strided copy), IsNaN / IsInf, CastLike and ONNX
// NonMaxSuppression. Kernels: misc_kernels.cu and the shared strided copy / cast; results equal
// the CPU kernels'. NonMaxSuppression reads its per-class counts on the host (its output's size
// depends on the data: an engine with it runs eagerly, not as a CUDA graph). Hardmax shares
// Softmax's op (ops_nn.cpp).
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/misc_kernels.h"

namespace trtutils::cuda {
namespace {

class TileOp : public GpuOp {
 public:
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& x = *in.at(0);
    TRT_CHECK_ARG(in.size() > 1 && in[1], "{}: repeats is missing", node.describe());
    const std::vector<int64_t> reps = ctx.host(*in[1]).to_int64_vector();
    TRT_CHECK_ARG(reps.size() == x.shape.size(),
                  "{}: repeats has {} values for an input of rank {}", node.describe(), reps.size(),
                  x.shape.size());
    Shape shape = x.shape;
    const std::vector<int64_t> st = strides_of(x.shape);
    // Output [r0 * x0, r1 * x1, ...] read as [r0, x0, r1, x1, ...] with stride 0 over repeats.
    std::vector<std::pair<int64_t, int64_t>> dims;
    for (size_t d = 0; d < reps.size(); ++d) {
      TRT_CHECK_ARG(reps[d] >= 0, "{}: negative repeat {}", node.describe(), reps[d]);
      shape[d] *= reps[d];
      dims.push_back({reps[d], 0});
      dims.push_back({x.shape[d], x.shape[d] == 1 ? 0 : st[d]});
    }
    require_indexable(node, shape_numel(shape));
    void* py = ctx.make(*out.at(0), x.dtype, shape);
    if (shape_numel(shape) == 0) return;
    copy_strided(ctx, element_size(node, x.dtype), ctx.dev(x), py, dims, 0);
  }
};

class FloatClassOp : public GpuOp {
 public:
  explicit FloatClassOp(const ir::Node& n) {
    a_.nan = n.op_type == "IsNaN";
    a_.negative = n.attr_int("detect_negative", 1) != 0;
    a_.positive = n.attr_int("detect_positive", 1) != 0;
  }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    Value& x = *in.at(0);
    TRT_CHECK(x.dtype == DataType::kFloat32 || x.dtype == DataType::kFloat16 ||
                  x.dtype == DataType::kBFloat16 || x.dtype == DataType::kFloat64,
              ErrorCode::kNotSupported, "{}: input of dtype {} on the GPU", ctx.node->describe(),
              dtype_name(x.dtype));
    k::FloatClassArgs a = a_;
    a.x = ctx.dev(x);
    a.dt = x.dtype;
    a.n = x.numel();
    a.y = static_cast<uint8_t*>(ctx.make(*out.at(0), DataType::kBool, x.shape));
    out[0]->nhwc = x.nhwc;
    ctx.check(k::float_class(a, ctx.stream), ctx.node->op_type.c_str());
  }
  void want_layouts(const RunContext&, const std::vector<Value*>&,
                    std::vector<Layout>& want) const override {
    want[0] = Layout::kAny;  // elementwise: NHWC stays NHWC
  }

 private:
  k::FloatClassArgs a_;
};

// CastLike(x, like): Cast to like's dtype (its data is not read).
class CastLikeOp : public GpuOp {
 public:
  explicit CastLikeOp(bool saturate) : saturate_(saturate) {}
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    Value& x = *in.at(0);
    TRT_CHECK_ARG(in.size() > 1 && in[1], "{}: target_type is missing", ctx.node->describe());
    const DataType to = in[1]->dtype;
    TRT_CHECK(k::cast_supported(x.dtype) && k::cast_supported(to), ErrorCode::kNotSupported,
              "{}: casting {} to {} on the GPU", ctx.node->describe(), dtype_name(x.dtype),
              dtype_name(to));
    if (x.dtype == to) {
      ctx.alias(*out.at(0), x, x.shape);
      return;
    }
    const void* px = ctx.dev(x);
    void* py = ctx.make(*out.at(0), to, x.shape);
    ctx.check(k::cast(x.dtype, to, px, py, x.numel(), saturate_, ctx.stream), "CastLike");
  }

 private:
  bool saturate_;
};

class NonMaxSuppressionOp : public GpuOp {
 public:
  explicit NonMaxSuppressionOp(const ir::Node& n) : center_(n.attr_int("center_point_box", 0)) {
    TRT_CHECK_ARG(center_ == 0 || center_ == 1, "{}: center_point_box {} must be 0 or 1",
                  n.describe(), center_);
  }
  std::string kernel() const override { return "CUDA kernel (segmented sort + chunked NMS)"; }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& boxes = *in.at(0);
    Value& scores = *in.at(1);
    TRT_CHECK_ARG(boxes.shape.size() == 3 && boxes.shape[2] == 4 && scores.shape.size() == 3 &&
                      scores.shape[0] == boxes.shape[0] && scores.shape[2] == boxes.shape[1],
                  "{}: boxes {} must be [batches, boxes, 4] and scores {} [batches, classes, "
                  "boxes]",
                  node.describe(), shape_str(boxes.shape), shape_str(scores.shape));
    TRT_CHECK(boxes.dtype == scores.dtype &&
                  (boxes.dtype == DataType::kFloat32 || boxes.dtype == DataType::kFloat16),
              ErrorCode::kNotSupported, "{}: boxes {} and scores {} on the GPU", node.describe(),
              dtype_name(boxes.dtype), dtype_name(scores.dtype));
    TRT_CHECK(!ctx.capturing, ErrorCode::kNotSupported,
              "{}: NonMaxSuppression's output size depends on the data (not capturable in a CUDA "
              "graph)",
              node.describe());
    k::OnnxNmsArgs a = args(ctx, in, boxes, scores);
    TRT_CHECK(
        a.batch * a.classes * a.boxes_n < (int64_t{1} << 31) && a.boxes_n < (int64_t{1} << 31),
        ErrorCode::kNotSupported, "{}: {} x {} x {} scores are too many for the GPU kernel",
        node.describe(), a.batch, a.classes, a.boxes_n);
    std::shared_ptr<void> scratch = ctx.scratch(k::onnx_nms_scratch_bytes(a));
    const int32_t* counts_dev = nullptr;
    ctx.check(k::onnx_nms_select(a, scratch.get(), &counts_dev, ctx.stream), "NonMaxSuppression");
    const int64_t segments = a.batch * a.classes;
    std::vector<int32_t> counts(static_cast<size_t>(segments));
    if (segments > 0) {
      TRT_CUDA_CHECK(cudaMemcpyAsync(counts.data(), counts_dev, counts.size() * 4,
                                     cudaMemcpyDeviceToHost, ctx.stream));
      TRT_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    }
    int64_t total = 0;
    for (int32_t c : counts) total += c;
    auto* py = static_cast<int64_t*>(ctx.make(*out.at(0), DataType::kInt64, {total, 3}));
    if (total > 0)
      ctx.check(k::onnx_nms_emit(a, scratch.get(), py, ctx.stream), "NonMaxSuppression");
  }

 private:
  // The kernel's arguments: shapes, and the optional scalar inputs read on the host.
  k::OnnxNmsArgs args(RunContext& ctx, const std::vector<Value*>& in, Value& boxes,
                      Value& scores) const {
    auto scalar = [&](size_t i) -> const Tensor* {
      if (i >= in.size() || !in[i]) return nullptr;
      const Tensor& t = ctx.host(*in[i]);
      return t.numel() > 0 ? &t : nullptr;
    };
    k::OnnxNmsArgs a;
    a.half = boxes.dtype == DataType::kFloat16;
    a.batch = boxes.shape[0];
    a.boxes_n = boxes.shape[1];
    a.classes = scores.shape[1];
    const Tensor* m = scalar(2);
    a.max_out = m ? std::max<int64_t>(m->to_int64_vector()[0], 0) : 0;
    const Tensor* iou = scalar(3);
    a.iou_threshold = iou ? iou->at_double(0) : 0.0;
    const Tensor* st = scalar(4);
    a.has_score_threshold = st != nullptr;
    a.score_threshold = st ? st->at_double(0) : 0.0;
    a.center = center_ == 1;
    a.boxes = ctx.dev(boxes);
    a.scores = ctx.dev(scores);
    return a;
  }
  int64_t center_;
};

}  // namespace

void register_misc_ops(OpTable& t) {
  t["Tile"] = [](const OpBuild&) -> std::unique_ptr<GpuOp> { return std::make_unique<TileOp>(); };
  for (const char* op : {"IsNaN", "IsInf"})
    t[op] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
      return std::make_unique<FloatClassOp>(b.node);
    };
  t["CastLike"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<CastLikeOp>(b.node.attr_int("saturate", 1) != 0);
  };
  t["NonMaxSuppression"] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    return std::make_unique<NonMaxSuppressionOp>(b.node);
  };
}

}  // namespace trtutils::cuda
