// com.trtutils::EfficientNMS on the GPU against the CPU reference (backends/cpu/nms_kernels.cpp):
// the same bytes on every output, for clustered boxes with tied scores (a 1/20 grid), score
// thresholds 0 to 0.5, IoU thresholds 0 to 0.7, per class and class-agnostic, corner and
// center-size coding, float32 and float16, a background class, and a YOLOv8-sized head (8400
// anchors, 80 classes, threshold 0.001: tens of thousands of candidates across many chunks).
#include <random>
#include <string>

#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

Tensor clustered_boxes(int64_t n, int64_t a, uint32_t seed, bool center_size) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Tensor t(DataType::kFloat32, {n, a, 4});
  float* p = t.data<float>();
  for (int64_t i = 0; i < n * a; ++i) {
    const float cx = 40.0f * std::floor(u(rng) * 8) + 6.0f * u(rng);  // 8 clusters per axis
    const float cy = 40.0f * std::floor(u(rng) * 8) + 6.0f * u(rng);
    const float w = 10.0f + 30.0f * u(rng), h = 10.0f + 30.0f * u(rng);
    if (center_size) {
      p[4 * i + 0] = cx, p[4 * i + 1] = cy, p[4 * i + 2] = w, p[4 * i + 3] = h;
    } else if (u(rng) < 0.2f) {  // corners given in the other order
      p[4 * i + 0] = cx + w / 2, p[4 * i + 1] = cy + h / 2, p[4 * i + 2] = cx - w / 2,
                p[4 * i + 3] = cy - h / 2;
    } else {
      p[4 * i + 0] = cx - w / 2, p[4 * i + 1] = cy - h / 2, p[4 * i + 2] = cx + w / 2,
                p[4 * i + 3] = cy + h / 2;
    }
  }
  return t;
}

Tensor grid_scores(int64_t n, int64_t a, int64_t c, uint32_t seed, int steps) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, steps);
  Tensor t(DataType::kFloat32, {n, a, c});
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(u(rng)) / static_cast<float>(steps);
  return t;
}

Tensor as_half(const Tensor& t) {
  const std::vector<float> v = t.to_float_vector();
  Tensor h(DataType::kFloat16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) h.data<half>()[i] = float_to_half(v[i]);
  return h;
}

NodeCase nms_case(Tensor boxes, Tensor scores, float score_th, float iou_th, int64_t k, bool center,
                  bool agnostic, int64_t background = -1) {
  NodeCase c("EfficientNMS", {feed(std::move(boxes)), feed(std::move(scores))},
             {af("score_threshold", score_th), af("iou_threshold", iou_th),
              ai("max_output_boxes", k), ai("box_coding", center ? 1 : 0),
              ai("class_agnostic", agnostic ? 1 : 0), ai("background_class", background)},
             4, "com.trtutils");
  return c;
}

TEST(CudaEfficientNms, MatchesTheCpuReference) {
  TRT_REQUIRE_CUDA();
  uint32_t seed = 1;
  for (bool center : {false, true})
    for (bool agnostic : {false, true})
      for (float score_th : {0.0f, 0.05f, 0.25f, 0.5f})
        for (float iou_th : {0.0f, 0.45f, 0.7f}) {
          const std::string what = "center " + std::to_string(center) + " agnostic " +
                                   std::to_string(agnostic) + " score " + std::to_string(score_th) +
                                   " iou " + std::to_string(iou_th);
          check_case(
              nms_case(clustered_boxes(3, 300, seed, center), grid_scores(3, 300, 4, seed, 20),
                       score_th, iou_th, 50, center, agnostic),
              {0, 0}, what);
          ++seed;
        }
}

TEST(CudaEfficientNms, HalfInputsBackgroundAndFewBoxes) {
  TRT_REQUIRE_CUDA();
  check_case(nms_case(as_half(clustered_boxes(2, 500, 7, true)),
                      as_half(grid_scores(2, 500, 3, 7, 20)), 0.1f, 0.5f, 100, true, false),
             {0, 0}, "float16");
  check_case(nms_case(clustered_boxes(2, 200, 8, false), grid_scores(2, 200, 5, 8, 20), 0.0f, 0.5f,
                      20, false, false, 0),
             {0, 0}, "background class 0");
  check_case(nms_case(clustered_boxes(1, 3, 9, false), grid_scores(1, 3, 2, 9, 20), 0.9f, 0.5f, 10,
                      false, false),
             {0, 0}, "few candidates");
}

TEST(CudaEfficientNms, YoloSizedHead) {
  TRT_REQUIRE_CUDA();
  check_case(nms_case(clustered_boxes(2, 8400, 11, true), grid_scores(2, 8400, 80, 11, 1000),
                      0.001f, 0.65f, 300, true, false),
             {0, 0}, "8400 x 80, per class");
  check_case(nms_case(clustered_boxes(1, 8400, 12, true), grid_scores(1, 8400, 80, 12, 1000), 0.25f,
                      0.45f, 100, true, true),
             {0, 0}, "8400 x 80, agnostic");
}

}  // namespace
}  // namespace trtutils
