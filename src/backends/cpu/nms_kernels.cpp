// com.trtutils::EfficientNMS on the CPU: the plain reference (contract and the plugin's rules
// this follows: ops/detection_ops.h). Per image: filter, stable sort, greedy suppression.
#include <algorithm>
#include <array>
#include <numeric>

#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "ops/detection_ops.h"

namespace trtutils::cpu {

namespace {

using namespace ops::detection;

using Box = std::array<float, 4>;  // x1, y1, x2, y2

// The plugin's BoxCenterSize -> BoxCorner conversion (half sizes, then subtract / add).
Box to_corners(const float* b, bool center_size) {
  if (!center_size) return {b[0], b[1], b[2], b[3]};
  const float w2 = b[2] * 0.5f, h2 = b[3] * 0.5f;
  return {b[0] - w2, b[1] - h2, b[0] + w2, b[1] + h2};
}

float area(const Box& b) {
  const float w = b[2] - b[0], h = b[3] - b[1];
  return (w <= 0 || h <= 0) ? 0.0f : w * h;
}

float iou(Box a, Box b) {
  for (Box* p : {&a, &b}) {  // corners in either order (reorder() in the plugin)
    if ((*p)[0] > (*p)[2]) std::swap((*p)[0], (*p)[2]);
    if ((*p)[1] > (*p)[3]) std::swap((*p)[1], (*p)[3]);
  }
  const Box inter = {std::max(a[0], b[0]), std::max(a[1], b[1]), std::min(a[2], b[2]),
                     std::min(a[3], b[3])};
  const float ia = area(inter);
  if (ia <= 0) return 0.0f;
  const float ua = area(a) + area(b) - ia;
  return ua <= 0 ? 0.0f : ia / ua;
}

void efficient_nms_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& boxes_t = ctx.input(0);
  const Tensor& scores_t = ctx.input(1);
  TRT_CHECK_ARG(boxes_t.rank() == 3 && boxes_t.dim(2) == 4 && scores_t.rank() == 3 &&
                    scores_t.dim(0) == boxes_t.dim(0) && scores_t.dim(1) == boxes_t.dim(1),
                "{}: boxes {} must be [N, A, 4] and scores {} [N, A, C]", node.describe(),
                shape_str(boxes_t.shape()), shape_str(scores_t.shape()));
  for (const Tensor* t : {&boxes_t, &scores_t})
    TRT_CHECK(t->dtype() == DataType::kFloat32 || t->dtype() == DataType::kFloat16,
              ErrorCode::kNotSupported, "{}: boxes and scores must be float32 or float16, got {}",
              node.describe(), dtype_name(t->dtype()));
  const int64_t k = node.attr_int("max_output_boxes", 100);
  TRT_CHECK_ARG(k >= 1, "{}: max_output_boxes must be >= 1, got {}", node.describe(), k);
  const int64_t coding = node.attr_int("box_coding", kBoxCodingCorner);
  TRT_CHECK_ARG(coding == kBoxCodingCorner || coding == kBoxCodingCenterSize,
                "{}: box_coding must be 0 or 1, got {}", node.describe(), coding);
  const bool agnostic = node.attr_int("class_agnostic", 0) != 0;
  const int64_t background = node.attr_int("background_class", -1);
  const float score_th = node.attr_float("score_threshold", 0.0f);
  const float iou_th = node.attr_float("iou_threshold", 0.5f);

  const int64_t n = boxes_t.dim(0), a = boxes_t.dim(1), c = scores_t.dim(2);
  const std::vector<float> boxes = boxes_t.to_float_vector();
  const std::vector<float> scores = scores_t.to_float_vector();
  Tensor& num = ctx.make_output(0, DataType::kInt32, {n, 1});
  Tensor& det_boxes = ctx.make_output(1, DataType::kFloat32, {n, k, 4});
  Tensor& det_scores = ctx.make_output(2, DataType::kFloat32, {n, k});
  Tensor& det_classes = ctx.make_output(3, DataType::kInt32, {n, k});

  std::vector<int64_t> cand;  // element indices anchor * C + class
  std::vector<Box> kept_boxes;
  std::vector<int64_t> kept_classes;
  for (int64_t img = 0; img < n; ++img) {
    const float* s = scores.data() + img * a * c;
    cand.clear();
    for (int64_t e = 0; e < a * c; ++e)
      if (s[e] >= score_th && e % c != background) cand.push_back(e);
    std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
    kept_boxes.clear();
    kept_classes.clear();
    for (int64_t e : cand) {
      if (static_cast<int64_t>(kept_boxes.size()) >= k) break;
      const int64_t anchor = e / c, cls = e % c;
      const Box box = to_corners(boxes.data() + (img * a + anchor) * 4, coding != 0);
      bool drop = false;
      for (size_t j = 0; j < kept_boxes.size() && !drop; ++j)
        drop = (agnostic || kept_classes[j] == cls) && iou(box, kept_boxes[j]) >= iou_th;
      if (drop) continue;
      const int64_t slot = img * k + static_cast<int64_t>(kept_boxes.size());
      std::copy(box.begin(), box.end(), det_boxes.data<float>() + slot * 4);
      det_scores.data<float>()[slot] = s[e];
      det_classes.data<int32_t>()[slot] = static_cast<int32_t>(cls);
      kept_boxes.push_back(box);
      kept_classes.push_back(cls);
    }
    num.data<int32_t>()[img] = static_cast<int32_t>(kept_boxes.size());
  }
}

}  // namespace

void register_nms_kernels(KernelRegistry& r) {
  r.add({kEfficientNMS, kDomain, efficient_nms_kernel});
}

}  // namespace trtutils::cpu
