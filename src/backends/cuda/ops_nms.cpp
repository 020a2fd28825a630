// com.trtutils::EfficientNMS on the GPU (build_yolo's NMS layer): the detections are computed on
// the device, so only num_dets and the top-k boxes leave it. Kernels: nms_kernels.cu.
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/kernels.h"
#include "ops/detection_ops.h"

namespace trtutils::cuda {
namespace {

using namespace ops::detection;

class EfficientNmsOp : public GpuOp {
 public:
  explicit EfficientNmsOp(const ir::Node& n) {
    a_.max_out = n.attr_int("max_output_boxes", 100);
    a_.score_threshold = n.attr_float("score_threshold", 0.0f);
    a_.iou_threshold = n.attr_float("iou_threshold", 0.5f);
    a_.center_size = n.attr_int("box_coding", kBoxCodingCorner) == kBoxCodingCenterSize;
    a_.class_agnostic = n.attr_int("class_agnostic", 0) != 0;
    a_.background_class = n.attr_int("background_class", -1);
    const int64_t coding = n.attr_int("box_coding", kBoxCodingCorner);
    TRT_CHECK_ARG(a_.max_out >= 1 && (coding == kBoxCodingCorner || coding == kBoxCodingCenterSize),
                  "{}: max_output_boxes {} must be >= 1 and box_coding {} 0 or 1", n.describe(),
                  a_.max_out, coding);
  }
  std::string kernel() const override { return "CUDA kernel (segmented sort + chunked NMS)"; }
  void run(RunContext& ctx, const std::vector<Value*>& in,
           const std::vector<Value*>& out) override {
    const ir::Node& node = *ctx.node;
    Value& boxes = *in.at(0);
    Value& scores = *in.at(1);
    TRT_CHECK_ARG(boxes.shape.size() == 3 && boxes.shape[2] == 4 && scores.shape.size() == 3 &&
                      scores.shape[0] == boxes.shape[0] && scores.shape[1] == boxes.shape[1],
                  "{}: boxes {} must be [N, A, 4] and scores {} [N, A, C]", node.describe(),
                  shape_str(boxes.shape), shape_str(scores.shape));
    TRT_CHECK(boxes.dtype == scores.dtype &&
                  (boxes.dtype == DataType::kFloat32 || boxes.dtype == DataType::kFloat16),
              ErrorCode::kNotSupported, "{}: boxes {} and scores {} on the GPU", node.describe(),
              dtype_name(boxes.dtype), dtype_name(scores.dtype));
    k::NmsArgs a = a_;
    a.batch = boxes.shape[0];
    a.anchors = boxes.shape[1];
    a.classes = scores.shape[2];
    TRT_CHECK(a.batch * a.anchors * a.classes < (int64_t{1} << 31), ErrorCode::kNotSupported,
              "{}: {} x {} x {} scores are too many for the GPU kernel", node.describe(), a.batch,
              a.anchors, a.classes);
    a.half = boxes.dtype == DataType::kFloat16;
    a.boxes = ctx.dev(boxes);
    a.scores = ctx.dev(scores);
    a.num_dets = static_cast<int*>(ctx.make(*out.at(0), DataType::kInt32, {a.batch, 1}));
    a.det_boxes =
        static_cast<float*>(ctx.make(*out.at(1), DataType::kFloat32, {a.batch, a.max_out, 4}));
    a.det_scores =
        static_cast<float*>(ctx.make(*out.at(2), DataType::kFloat32, {a.batch, a.max_out}));
    a.det_classes = static_cast<int*>(ctx.make(*out.at(3), DataType::kInt32, {a.batch, a.max_out}));
    const k::NmsScratch s = k::nms_scratch_layout(a);
    std::shared_ptr<void> scratch = ctx.scratch(s.total);
    ctx.check(k::efficient_nms(a, scratch.get(), ctx.stream), "EfficientNMS");
  }

 private:
  k::NmsArgs a_;
};

}  // namespace

void register_nms_ops(OpTable& t) {
  t[std::string(kDomain) + "::" + kEfficientNMS] = [](const OpBuild& b) -> std::unique_ptr<GpuOp> {
    TRT_CHECK(b.node.outputs.size() == 4, ErrorCode::kNotSupported,
              "EfficientNMS with {} outputs (expected num_dets, det_boxes, det_scores, "
              "det_classes)",
              b.node.outputs.size());
    return std::make_unique<EfficientNmsOp>(b.node);
  };
}

}  // namespace trtutils::cuda
