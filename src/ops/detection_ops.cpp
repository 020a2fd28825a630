// Shape/type inference for com.trtutils::EfficientNMS (contract: ops/detection_ops.h).
#include "ops/detection_ops.h"

#include <cmath>

#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::ops {

namespace {

using namespace detection;

bool box_dtype(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16;
}

// Two dims that must be equal: both static and different is an error; otherwise the static one.
ir::Dim same_dim(const ir::Dim& a, const ir::Dim& b, const ir::Node& node, const char* what) {
  if (a.is_static() && b.is_static())
    TRT_CHECK_ARG(a.value == b.value, "{}: boxes and scores disagree on {}: {} vs {}",
                  node.describe(), what, a.value, b.value);
  return a.is_static() ? a : b.is_static() ? b : (a == b ? a : ir::Dim());
}

void infer_efficient_nms(InferContext& ctx) {
  const ir::Node& node = ctx.node;
  TRT_CHECK_ARG(ctx.num_inputs() == 2 && ctx.has_input(0) && ctx.has_input(1),
                "{}: needs exactly two inputs, boxes [N, A, 4] and scores [N, A, C]",
                node.describe());
  TRT_CHECK_ARG(node.outputs.size() == 4,
                "{}: has four outputs (num_dets, det_boxes, det_scores, det_classes), got {}",
                node.describe(), node.outputs.size());
  for (size_t i = 0; i < 2; ++i)
    TRT_CHECK(box_dtype(ctx.input_dtype(i)), ErrorCode::kNotSupported,
              "{}: {} must be float32 or float16, got {}", node.describe(),
              i == 0 ? "boxes" : "scores", dtype_name(ctx.input_dtype(i)));
  const int64_t k = node.attr_int("max_output_boxes", 100);
  TRT_CHECK_ARG(k >= 1, "{}: max_output_boxes must be >= 1, got {}", node.describe(), k);
  const int64_t coding = node.attr_int("box_coding", kBoxCodingCorner);
  TRT_CHECK_ARG(coding == kBoxCodingCorner || coding == kBoxCodingCenterSize,
                "{}: box_coding must be 0 (corners) or 1 (center-size), got {}", node.describe(),
                coding);
  const int64_t agnostic = node.attr_int("class_agnostic", 0);
  TRT_CHECK_ARG(agnostic == 0 || agnostic == 1, "{}: class_agnostic must be 0 or 1, got {}",
                node.describe(), agnostic);
  for (const char* a : {"score_threshold", "iou_threshold"}) {
    const float v = node.attr_float(a, 0.0f);
    TRT_CHECK_ARG(std::isfinite(v), "{}: {} must be finite, got {}", node.describe(), a, v);
  }

  ir::Dim n;
  const auto& bs = ctx.input_shape(0);
  const auto& ss = ctx.input_shape(1);
  if (bs) {
    TRT_CHECK_ARG(bs->size() == 3 && (!(*bs)[2].is_static() || (*bs)[2].value == 4),
                  "{}: boxes must be [N, A, 4], got {}", node.describe(), ir::sym_shape_str(*bs));
    n = (*bs)[0];
  }
  if (ss) {
    TRT_CHECK_ARG(ss->size() == 3, "{}: scores must be [N, A, C], got {}", node.describe(),
                  ir::sym_shape_str(*ss));
    n = bs ? same_dim((*bs)[0], (*ss)[0], node, "the batch size") : (*ss)[0];
    if (bs) (void)same_dim((*bs)[1], (*ss)[1], node, "the number of anchors");
  }
  ctx.set_output(0, DataType::kInt32, ir::SymShape{n, 1});
  ctx.set_output(1, DataType::kFloat32, ir::SymShape{n, k, 4});
  ctx.set_output(2, DataType::kFloat32, ir::SymShape{n, k});
  ctx.set_output(3, DataType::kInt32, ir::SymShape{n, k});
}

}  // namespace

void register_detection_ops(OpRegistry& r) {
  r.add({kEfficientNMS, kDomain, infer_efficient_nms});
}

}  // namespace trtutils::ops
