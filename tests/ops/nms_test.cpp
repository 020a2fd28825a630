// com.trtutils::EfficientNMS (ops/detection_ops.h): hand-made cases for each rule, and the CPU
// kernel against a brute-force reference (per-class greedy NMS over every candidate, then a
// merge) on seeded random boxes with tied scores.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "ops/detection_ops.h"
#include "tensor_test_util.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

using namespace tensor_testing;

struct NmsOptions {
  float score_threshold = 0.0f;
  float iou_threshold = 0.5f;
  int64_t max_output_boxes = 100;
  int64_t box_coding = 0;
  int64_t class_agnostic = 0;
  int64_t background_class = -1;
};

ir::Node nms_node(const NmsOptions& o) {
  ir::Node n = node("EfficientNMS",
                    {af("score_threshold", o.score_threshold), af("iou_threshold", o.iou_threshold),
                     ai("max_output_boxes", o.max_output_boxes), ai("box_coding", o.box_coding),
                     ai("class_agnostic", o.class_agnostic)},
                    4);
  if (o.background_class != -1)
    n.attributes["background_class"] = ai("background_class", o.background_class);
  n.domain = ops::detection::kDomain;
  return n;
}

std::vector<Tensor> run_nms(const NmsOptions& o, const Tensor& boxes, const Tensor& scores) {
  return run(nms_node(o), 17, {boxes, scores});
}

struct Detection {
  std::array<float, 4> box;
  float score;
  int32_t cls;
};

// The detections of image `img` (the first num_dets slots); expects every later slot zero.
std::vector<Detection> detections(const std::vector<Tensor>& out, int64_t img) {
  const int64_t k = out[2].dim(1);
  const int32_t num = out[0].data<int32_t>()[img];
  EXPECT_GE(num, 0);
  EXPECT_LE(num, k);
  std::vector<Detection> d;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t slot = img * k + i;
    const float* b = out[1].data<float>() + slot * 4;
    const float s = out[2].data<float>()[slot];
    const int32_t c = out[3].data<int32_t>()[slot];
    if (i < num) {
      d.push_back({{b[0], b[1], b[2], b[3]}, s, c});
    } else {
      EXPECT_TRUE(b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0 && s == 0 && c == 0)
          << "slot " << i << " past num_dets " << num << " of image " << img << " is not zero";
    }
  }
  return d;
}

TEST(EfficientNms, SuppressesWithinAClassOnly) {
  // Anchors 0 and 1 overlap (IoU 0.81 / 1.0 = 9/11 ~ 0.82); anchor 2 is apart.
  const Tensor boxes = f32({1, 3, 4}, {0, 0, 10, 10, 1, 1, 11, 11, 50, 50, 60, 60});
  // Classes: anchor 0 -> class 0 (0.9), anchor 1 -> class 0 (0.8) and class 1 (0.7).
  const Tensor scores = f32({1, 3, 2}, {0.9f, 0.0f, 0.8f, 0.7f, 0.0f, 0.6f});
  NmsOptions o;
  o.score_threshold = 0.5f;
  o.max_output_boxes = 5;
  auto out = run_nms(o, boxes, scores);
  expect_tensor(out[0], DataType::kInt32, {1, 1}, {3});
  EXPECT_EQ(out[1].shape(), (Shape{1, 5, 4}));
  EXPECT_EQ(out[2].dtype(), DataType::kFloat32);
  EXPECT_EQ(out[3].dtype(), DataType::kInt32);
  auto d = detections(out, 0);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].score, 0.9f);
  EXPECT_EQ(d[0].cls, 0);
  EXPECT_EQ(d[1].score, 0.7f);  // anchor 1, class 1: not suppressed by a class-0 box
  EXPECT_EQ(d[1].cls, 1);
  EXPECT_EQ(d[1].box, (std::array<float, 4>{1, 1, 11, 11}));
  EXPECT_EQ(d[2].score, 0.6f);

  o.class_agnostic = 1;
  d = detections(run_nms(o, boxes, scores), 0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].score, 0.6f);
  EXPECT_EQ(d[1].cls, 1);
}

TEST(EfficientNms, ThresholdsAreInclusiveAsInThePlugin) {
  // IoU of [0,0,2,1] and [1,0,3,1] is 1/3 exactly as float arithmetic computes it.
  const Tensor boxes = f32({1, 2, 4}, {0, 0, 2, 1, 1, 0, 3, 1});
  const Tensor scores = f32({1, 2, 1}, {0.5f, 0.25f});
  NmsOptions o;
  o.score_threshold = 0.25f;  // == the second score: still a candidate
  o.iou_threshold = 1.0f / 3.0f;
  auto d = detections(run_nms(o, boxes, scores), 0);
  ASSERT_EQ(d.size(), 1u) << "IoU == iou_threshold suppresses";
  o.iou_threshold = std::nextafter(1.0f / 3.0f, 1.0f);
  d = detections(run_nms(o, boxes, scores), 0);
  ASSERT_EQ(d.size(), 2u) << "a score == score_threshold is a candidate";
  EXPECT_EQ(d[1].score, 0.25f);
  o.score_threshold = std::nextafter(0.25f, 1.0f);
  EXPECT_EQ(detections(run_nms(o, boxes, scores), 0).size(), 1u);
  // iou_threshold 0: IoU >= 0 always, one box per class.
  o.score_threshold = 0;
  o.iou_threshold = 0;
  const Tensor apart = f32({1, 2, 4}, {0, 0, 1, 1, 5, 5, 6, 6});
  EXPECT_EQ(detections(run_nms(o, apart, scores), 0).size(), 1u);
}

TEST(EfficientNms, TiesGoToTheLowerAnchorThenTheLowerClass) {
  const Tensor boxes = f32({1, 3, 4}, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5});
  const Tensor scores = f32({1, 3, 2}, {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.7f});
  NmsOptions o;
  o.max_output_boxes = 4;
  auto d = detections(run_nms(o, boxes, scores), 0);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].score, 0.7f);
  EXPECT_EQ(d[0].box[0], 4);
  EXPECT_EQ(d[1].box[0], 0);  // anchor 0 class 0, anchor 0 class 1, anchor 1 class 0
  EXPECT_EQ(d[1].cls, 0);
  EXPECT_EQ(d[2].box[0], 0);
  EXPECT_EQ(d[2].cls, 1);
  EXPECT_EQ(d[3].box[0], 2);
  EXPECT_EQ(d[3].cls, 0);
}

TEST(EfficientNms, CenterSizeInputGivesCorners) {
  const Tensor boxes = f32({1, 2, 4}, {10, 20, 4, 6, 10.5f, 20, 4, 6});
  const Tensor scores = f32({1, 2, 1}, {0.9f, 0.8f});
  NmsOptions o;
  o.box_coding = 1;
  auto d = detections(run_nms(o, boxes, scores), 0);
  ASSERT_EQ(d.size(), 1u);  // IoU (3.5 * 6) / (2 * 24 - 21) = 0.78
  EXPECT_EQ(d[0].box, (std::array<float, 4>{8, 17, 12, 23}));
}

TEST(EfficientNms, CornersInEitherOrderArePassedThrough) {
  // x2 < x1 and y2 < y1: the IoU reorders, the output keeps the input's coordinates.
  const Tensor boxes = f32({1, 2, 4}, {10, 10, 0, 0, 1, 1, 11, 11});
  const Tensor scores = f32({1, 2, 1}, {0.9f, 0.8f});
  auto d = detections(run_nms({}, boxes, scores), 0);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].box, (std::array<float, 4>{10, 10, 0, 0}));
}

TEST(EfficientNms, BatchItemsAreIndependentAndSlotsPastNumDetsAreZero) {
  const Tensor boxes = f32({2, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 3, 3, 4, 4});
  const Tensor scores = f32({2, 2, 1}, {0.9f, 0.8f, 0.1f, 0.2f});
  NmsOptions o;
  o.score_threshold = 0.15f;
  o.max_output_boxes = 3;
  auto out = run_nms(o, boxes, scores);
  expect_tensor(out[0], DataType::kInt32, {2, 1}, {1, 1});
  EXPECT_EQ(detections(out, 0)[0].score, 0.9f);
  auto d1 = detections(out, 1);
  EXPECT_EQ(d1[0].score, 0.2f);
  EXPECT_EQ(d1[0].box[0], 3);
}

TEST(EfficientNms, KeepsAtMostMaxOutputBoxesAndSkipsTheBackgroundClass) {
  const Tensor boxes = f32({1, 4, 4}, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7});
  const Tensor scores = f32({1, 4, 2}, {0.1f, 0.9f, 0.2f, 0.8f, 0.3f, 0.7f, 0.4f, 0.6f});
  NmsOptions o;
  o.max_output_boxes = 2;
  auto d = detections(run_nms(o, boxes, scores), 0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].score, 0.8f);
  o.background_class = 1;
  d = detections(run_nms(o, boxes, scores), 0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].score, 0.4f);
  EXPECT_EQ(d[0].cls, 0);
}

TEST(EfficientNms, Float16InputsGiveFloat32Outputs) {
  Tensor boxes(DataType::kFloat16, {1, 2, 4});
  Tensor scores(DataType::kFloat16, {1, 2, 1});
  const float b[] = {0, 0, 1, 1, 2, 2, 3, 3};
  for (int i = 0; i < 8; ++i) boxes.data<half>()[i] = float_to_half(b[i]);
  scores.data<half>()[0] = float_to_half(0.5f);
  scores.data<half>()[1] = float_to_half(0.75f);
  auto out = run_nms({}, boxes, scores);
  auto d = detections(out, 0);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(out[1].dtype(), DataType::kFloat32);
  EXPECT_EQ(d[0].score, 0.75f);
  EXPECT_EQ(d[0].box, (std::array<float, 4>{2, 2, 3, 3}));
}

TEST(EfficientNms, EmptyInputsAndNoCandidates) {
  auto out =
      run_nms({}, Tensor(DataType::kFloat32, {2, 0, 4}), Tensor(DataType::kFloat32, {2, 0, 3}));
  expect_tensor(out[0], DataType::kInt32, {2, 1}, {0, 0});
  NmsOptions o;
  o.score_threshold = 0.5f;
  out = run_nms(o, f32({1, 1, 4}, {0, 0, 1, 1}), f32({1, 1, 1}, {0.4f}));
  expect_tensor(out[0], DataType::kInt32, {1, 1}, {0});
}

TEST(EfficientNms, BadInputsAreErrorsNamingTheNode) {
  try {
    run_nms({}, f32({1, 2, 3}, {0, 0, 0, 0, 0, 0}), f32({1, 2, 1}, {0, 0}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be [N, A, 4]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("EfficientNMS 'n'"), std::string::npos) << e.what();
  }
  NmsOptions o;
  o.max_output_boxes = 0;
  EXPECT_THROW(run_nms(o, f32({1, 1, 4}, {0, 0, 1, 1}), f32({1, 1, 1}, {0.4f})), Error);
  EXPECT_THROW(run_nms({}, f32({1, 1, 4}, {0, 0, 1, 1}), i32({1, 1, 1}, {1})), Error);
}

TEST(EfficientNms, ShapeInference) {
  const ops::OpSchema* s =
      ops::OpRegistry::instance().find(ops::detection::kDomain, "EfficientNMS");
  ASSERT_NE(s, nullptr);
  NmsOptions o;
  o.max_output_boxes = 7;
  ir::Node n = nms_node(o);
  n.inputs = {"b", "s"};
  ir::ValueInfo b{"b", DataType::kFloat16, ir::SymShape{ir::Dim("batch"), 8400, 4}, ""};
  ir::ValueInfo sc{"s", DataType::kFloat32, ir::SymShape{ir::Dim("batch"), 8400, 80}, ""};
  std::vector<ir::ValueInfo> outs(4);
  ops::InferContext ctx{n, 17, {&b, &sc}, {nullptr, nullptr}, outs};
  s->infer(ctx);
  EXPECT_EQ(sym(ctx.outputs[0].shape), "[batch, 1]");
  EXPECT_EQ(ctx.outputs[0].dtype, DataType::kInt32);
  EXPECT_EQ(sym(ctx.outputs[1].shape), "[batch, 7, 4]");
  EXPECT_EQ(ctx.outputs[1].dtype, DataType::kFloat32);
  EXPECT_EQ(sym(ctx.outputs[2].shape), "[batch, 7]");
  EXPECT_EQ(ctx.outputs[3].dtype, DataType::kInt32);
  sc.shape = ir::SymShape{ir::Dim("batch"), 8000, 80};
  ops::InferContext bad{n, 17, {&b, &sc}, {nullptr, nullptr}, outs};
  EXPECT_THROW(s->infer(bad), Error);
}

// ---- brute force: each class on its own (or all together when class-agnostic), greedy over
// every candidate, then the kept boxes of all classes merged in score order and cut at K.

float ref_iou(std::array<float, 4> a, std::array<float, 4> b) {
  auto order = [](std::array<float, 4>& v) {
    if (v[0] > v[2]) std::swap(v[0], v[2]);
    if (v[1] > v[3]) std::swap(v[1], v[3]);
  };
  order(a);
  order(b);
  const float iw = std::min(a[2], b[2]) - std::max(a[0], b[0]);
  const float ih = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  if (iw <= 0 || ih <= 0) return 0;
  const float inter = iw * ih;
  const float aa = (a[2] - a[0]) * (a[3] - a[1]), ab = (b[2] - b[0]) * (b[3] - b[1]);
  if (aa <= 0 || ab <= 0) return 0;  // an empty box never overlaps (area 0 in the plugin)
  const float uni = aa + ab - inter;
  return uni <= 0 ? 0 : inter / uni;
}

std::vector<Detection> reference(const NmsOptions& o, const std::vector<float>& boxes,
                                 const std::vector<float>& scores, int64_t img, int64_t a,
                                 int64_t c) {
  struct Cand {
    int64_t elem;
    float score;
    std::array<float, 4> box;
  };
  std::vector<std::vector<Cand>> groups(o.class_agnostic ? 1 : static_cast<size_t>(c));
  for (int64_t an = 0; an < a; ++an)
    for (int64_t cl = 0; cl < c; ++cl) {
      const float s = scores[static_cast<size_t>((img * a + an) * c + cl)];
      if (!(s >= o.score_threshold)) continue;
      const float* b = &boxes[static_cast<size_t>((img * a + an) * 4)];
      std::array<float, 4> corner = {b[0], b[1], b[2], b[3]};
      if (o.box_coding == 1)
        corner = {b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2};
      groups[o.class_agnostic ? 0 : static_cast<size_t>(cl)].push_back({an * c + cl, s, corner});
    }
  auto before = [](const Cand& x, const Cand& y) {
    return x.score != y.score ? x.score > y.score : x.elem < y.elem;
  };
  std::vector<Cand> kept;
  for (auto& g : groups) {
    std::sort(g.begin(), g.end(), before);
    std::vector<Cand> mine;
    for (const Cand& cand : g) {
      bool drop = false;
      for (const Cand& k : mine) drop = drop || ref_iou(cand.box, k.box) >= o.iou_threshold;
      if (!drop) mine.push_back(cand);
    }
    kept.insert(kept.end(), mine.begin(), mine.end());
  }
  std::sort(kept.begin(), kept.end(), before);
  if (static_cast<int64_t>(kept.size()) > o.max_output_boxes)
    kept.resize(static_cast<size_t>(o.max_output_boxes));
  std::vector<Detection> d;
  for (const Cand& k : kept) d.push_back({k.box, k.score, static_cast<int32_t>(k.elem % c)});
  return d;
}

struct RandomCase {
  float score_threshold, iou_threshold;
  int64_t class_agnostic, box_coding, max_output_boxes;
};

class EfficientNmsRandom : public ::testing::TestWithParam<RandomCase> {};

TEST_P(EfficientNmsRandom, MatchesBruteForce) {
  const RandomCase& p = GetParam();
  NmsOptions o;
  o.score_threshold = p.score_threshold;
  o.iou_threshold = p.iou_threshold;
  o.class_agnostic = p.class_agnostic;
  o.box_coding = p.box_coding;
  o.max_output_boxes = p.max_output_boxes;
  const int64_t n = 3, a = 150, c = 7;
  std::mt19937 rng(static_cast<uint32_t>(1000 * p.score_threshold + 100 * p.iou_threshold +
                                         10 * p.class_agnostic + p.box_coding));
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  // Boxes clustered around a few centres so that many pairs overlap at every IoU level;
  // scores on a grid of 1/20 so that ties are frequent.
  std::vector<float> boxes(static_cast<size_t>(n * a * 4)), scores(static_cast<size_t>(n * a * c));
  for (int64_t i = 0; i < n * a; ++i) {
    const float cx = 10.0f * static_cast<float>(i % 5) + 3.0f * u(rng);
    const float cy = 10.0f * static_cast<float>((i / 5) % 3) + 3.0f * u(rng);
    const float w = 2.0f + 6.0f * u(rng), h = 2.0f + 6.0f * u(rng);
    float* b = &boxes[static_cast<size_t>(i * 4)];
    if (o.box_coding == 1) {
      b[0] = cx, b[1] = cy, b[2] = w, b[3] = h;
    } else if (i % 7 == 0) {  // corners given the other way round
      b[0] = cx + w / 2, b[1] = cy + h / 2, b[2] = cx - w / 2, b[3] = cy - h / 2;
    } else {
      b[0] = cx - w / 2, b[1] = cy - h / 2, b[2] = cx + w / 2, b[3] = cy + h / 2;
    }
  }
  for (auto& s : scores) s = std::floor(u(rng) * 20.0f) / 20.0f;
  const auto out = run_nms(o, Tensor::from_vector(DataType::kFloat32, {n, a, 4}, boxes),
                           Tensor::from_vector(DataType::kFloat32, {n, a, c}, scores));
  for (int64_t img = 0; img < n; ++img) {
    const auto got = detections(out, img);
    const auto want = reference(o, boxes, scores, img, a, c);
    ASSERT_EQ(got.size(), want.size()) << "image " << img;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].score, want[i].score) << "image " << img << " detection " << i;
      EXPECT_EQ(got[i].cls, want[i].cls) << "image " << img << " detection " << i;
      for (int d = 0; d < 4; ++d)
        EXPECT_EQ(got[i].box[d], want[i].box[d]) << "image " << img << " detection " << i;
    }
  }
}

std::vector<RandomCase> random_cases() {
  std::vector<RandomCase> v;
  for (float st : {0.01f, 0.1f, 0.25f, 0.5f})
    for (float it : {0.01f, 0.1f, 0.3f, 0.5f})
      for (int64_t agn : {0, 1})
        for (int64_t coding : {0, 1}) v.push_back({st, it, agn, coding, agn ? 40 : 100});
  v.push_back({0.0f, 0.45f, 0, 0, 1});
  v.push_back({0.0f, 0.7f, 0, 1, 2000});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Nms, EfficientNmsRandom, ::testing::ValuesIn(random_cases()));

// Against ONNX's own NonMaxSuppression (whose CPU kernel passes ONNX's backend tests), run per
// class with no per-class limit, its selections merged by score and cut at max_output_boxes:
// the same detections. Scores and boxes are continuous, so that ONNX's strict thresholds
// (score > t, IoU > t) and EfficientNMS's inclusive ones (>=) decide alike.
TEST(EfficientNms, MatchesOnnxNonMaxSuppressionMergedAcrossClasses) {
  const int64_t n = 2, a = 200, c = 5;
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t coding : {0, 1}) {
    for (float iou : {0.3f, 0.6f}) {
      std::vector<float> boxes(static_cast<size_t>(n * a * 4)),
          scores(static_cast<size_t>(n * a * c));
      for (int64_t i = 0; i < n * a; ++i) {
        const float cx = 40.0f * u(rng), cy = 40.0f * u(rng);
        const float w = 3.0f + 10.0f * u(rng), h = 3.0f + 10.0f * u(rng);
        float* b = &boxes[static_cast<size_t>(i * 4)];
        if (coding == 1) {
          b[0] = cx, b[1] = cy, b[2] = w, b[3] = h;
        } else {
          b[0] = cx - w / 2, b[1] = cy - h / 2, b[2] = cx + w / 2, b[3] = cy + h / 2;
        }
      }
      for (auto& v : scores) v = u(rng);
      NmsOptions o;
      o.score_threshold = 0.2f;
      o.iou_threshold = iou;
      o.max_output_boxes = 60;
      o.box_coding = coding;
      const Tensor tb = Tensor::from_vector(DataType::kFloat32, {n, a, 4}, boxes);
      const auto ours = run_nms(o, tb, Tensor::from_vector(DataType::kFloat32, {n, a, c}, scores));
      // ONNX wants scores [N, C, A].
      std::vector<float> sca(scores.size());
      for (int64_t img = 0; img < n; ++img)
        for (int64_t an = 0; an < a; ++an)
          for (int64_t cl = 0; cl < c; ++cl)
            sca[static_cast<size_t>((img * c + cl) * a + an)] =
                scores[static_cast<size_t>((img * a + an) * c + cl)];
      const auto sel = run(node("NonMaxSuppression", {ai("center_point_box", coding)}), 11,
                           {tb, Tensor::from_vector(DataType::kFloat32, {n, c, a}, sca),
                            Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {a}),
                            Tensor::from_vector<float>(DataType::kFloat32, {1}, {iou}),
                            Tensor::from_vector<float>(DataType::kFloat32, {1}, {0.2f})})[0];
      for (int64_t img = 0; img < n; ++img) {
        struct Pick {
          float score;
          int64_t anchor, cls;
        };
        std::vector<Pick> picks;
        for (int64_t r = 0; r < sel.dim(0); ++r) {
          const int64_t* t = sel.data<int64_t>() + r * 3;
          if (t[0] != img) continue;
          picks.push_back({scores[static_cast<size_t>((img * a + t[2]) * c + t[1])], t[2], t[1]});
        }
        std::sort(picks.begin(), picks.end(), [](const Pick& x, const Pick& y) {
          return x.score != y.score ? x.score > y.score : x.anchor < y.anchor;
        });
        if (picks.size() > 60) picks.resize(60);
        const auto got = detections(ours, img);
        ASSERT_EQ(got.size(), picks.size()) << "coding " << coding << " iou " << iou;
        ASSERT_GT(got.size(), 10u);
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i].score, picks[i].score) << i;
          EXPECT_EQ(got[i].cls, picks[i].cls) << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace trtutils
