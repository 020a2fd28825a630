// build_yolo_engine and add_yolo_nms (include/trtutils/yolo.h): each head layout recognised on a
// graph built in code, the rewritten graph computing what the EfficientNMS kernel computes on
// the head's boxes and scores, the errors, and an engine round trip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "backends/cpu/kernel_registry.h"
#include "engine/session.h"
#include "engine/yolo_head.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "ops/detection_ops.h"
#include "trtutils/engine.h"
#include "trtutils/status.h"
#include "trtutils/yolo.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;
using builder::add_yolo_nms;
using builder::YoloConfig;
using builder::YoloLayout;

Tensor uniform(Shape shape, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DataType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Graph inputs passed through Identity to the outputs: the "head" is the input itself.
ir::Model passthrough(const std::vector<std::pair<std::string, ir::SymShape>>& heads,
                      int64_t opset = 17) {
  ir::GraphBuilder b("head");
  for (const auto& [name, shape] : heads) {
    auto x = b.input(name + "_in", DataType::kFloat32, shape);
    auto y = b.node_with_outputs("Identity", {x}, {name})[0];
    b.output(y, DataType::kFloat32, shape);
  }
  return b.build(opset);
}

std::map<std::string, Tensor> run_model(const ir::Model& m,
                                        const std::map<std::string, Tensor>& feeds) {
  Session s(m);
  return s.run(feeds);
}

// The EfficientNMS kernel itself on (boxes, scores), with the attributes `c` gives.
std::vector<Tensor> direct_nms(const YoloConfig& c, const Tensor& boxes, const Tensor& scores) {
  ir::Node n;
  n.name = "direct";
  n.op_type = ops::detection::kEfficientNMS;
  n.domain = ops::detection::kDomain;
  n.inputs = {"b", "s"};
  n.outputs = {"o0", "o1", "o2", "o3"};
  n.attributes["score_threshold"] = ir::attr_float("score_threshold", c.conf_threshold);
  n.attributes["iou_threshold"] = ir::attr_float("iou_threshold", c.iou_threshold);
  n.attributes["max_output_boxes"] = ir::attr_int("max_output_boxes", c.top_k);
  n.attributes["box_coding"] = ir::attr_int("box_coding", c.box_coding == "corner" ? 0 : 1);
  n.attributes["class_agnostic"] = ir::attr_int("class_agnostic", c.class_agnostic);
  return cpu::run_node(n, 17, {&boxes, &scores});
}

void expect_same(const std::map<std::string, Tensor>& got, const std::vector<Tensor>& want) {
  const char* names[] = {"num_dets", "det_boxes", "det_scores", "det_classes"};
  ASSERT_EQ(got.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const Tensor& g = got.at(names[i]);
    ASSERT_EQ(g.shape(), want[static_cast<size_t>(i)].shape()) << names[i];
    ASSERT_EQ(g.dtype(), want[static_cast<size_t>(i)].dtype()) << names[i];
    for (int64_t e = 0; e < g.numel(); ++e)
      ASSERT_EQ(g.at_double(e), want[static_cast<size_t>(i)].at_double(e)) << names[i] << " " << e;
  }
}

// A YOLOv8 raw head [N, 4 + C, A]: centres in [0, 64), sizes in [4, 20), scores in [0, 1).
Tensor v8_head(int64_t n, int64_t c, int64_t a, uint32_t seed) {
  Tensor t = uniform({n, 4 + c, a}, seed, 0.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < 4; ++ch)
      for (int64_t j = 0; j < a; ++j) {
        float& v = p[(i * (4 + c) + ch) * a + j];
        v = ch < 2 ? v * 64.0f : 4.0f + v * 16.0f;
      }
  return t;
}

TEST(YoloHead, YoloV8IsTransposedAndSplit) {
  const int64_t c = 3, a = 40;
  ir::Model m = passthrough({{"output0", {ir::Dim("batch"), 4 + c, a}}});
  YoloConfig cfg{.num_classes = c, .conf_threshold = 0.3f, .iou_threshold = 0.4f, .top_k = 10};
  const auto head = add_yolo_nms(m, cfg, "m.onnx");
  EXPECT_EQ(head.layout, YoloLayout::kYoloV8);
  EXPECT_EQ(head.description, "YOLOv8/v11 head: output0 [batch, 7, 40] (float32)");
  ASSERT_EQ(m.graph.outputs.size(), 4u);
  EXPECT_EQ(m.graph.outputs[1].name, "det_boxes");
  EXPECT_EQ(ir::sym_shape_str(*m.graph.outputs[1].shape), "[batch, 10, 4]");
  EXPECT_EQ(m.graph.nodes.back().domain, "com.trtutils");
  bool imported = false;
  for (const auto& o : m.opset_imports) imported |= o.domain == "com.trtutils" && o.version == 1;
  EXPECT_TRUE(imported);

  const Tensor x = v8_head(2, c, a, 1);
  const auto got = run_model(m, {{"output0_in", x}});
  // The reference: boxes and scores cut out of [N, A, 4 + C] by hand.
  Tensor boxes(DataType::kFloat32, {2, a, 4}), scores(DataType::kFloat32, {2, a, c});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < a; ++j)
      for (int64_t ch = 0; ch < 4 + c; ++ch) {
        const float v = x.data<float>()[(i * (4 + c) + ch) * a + j];
        if (ch < 4)
          boxes.data<float>()[(i * a + j) * 4 + ch] = v;
        else
          scores.data<float>()[(i * a + j) * c + ch - 4] = v;
      }
  const auto want = direct_nms(cfg, boxes, scores);
  EXPECT_GT(want[0].data<int32_t>()[0], 0);
  expect_same(got, want);
}

TEST(YoloHead, YoloV5MultipliesObjectnessAndDropsOtherOutputs) {
  const int64_t c = 2, a = 30;
  for (int64_t opset : {11, 17}) {  // Split's sizes: an attribute before 13, an input since
    ir::Model m = passthrough({{"output0", {1, a, 5 + c}}, {"raw_p3", {1, 3, 2, 5, 5 + c}}}, opset);
    YoloConfig cfg{.num_classes = c,
                   .conf_threshold = 0.2f,
                   .iou_threshold = 0.5f,
                   .top_k = 20,
                   .class_agnostic = true};
    const auto head = add_yolo_nms(m, cfg, "m.onnx");
    EXPECT_EQ(head.layout, YoloLayout::kYoloV5);
    EXPECT_EQ(m.graph.inputs.size(), 2u);
    for (const auto& n : m.graph.nodes) EXPECT_NE(n.outputs[0], "raw_p3") << "dead head kept";
    Tensor x = uniform({1, a, 5 + c}, 2, 0.0f, 1.0f);
    for (int64_t j = 0; j < a; ++j)
      for (int64_t ch = 0; ch < 4; ++ch)
        x.data<float>()[j * (5 + c) + ch] *= ch < 2 ? 40.0f : 15.0f;
    const auto got = run_model(
        m, {{"output0_in", x}, {"raw_p3_in", Tensor(DataType::kFloat32, {1, 3, 2, 5, 5 + c})}});
    Tensor boxes(DataType::kFloat32, {1, a, 4}), scores(DataType::kFloat32, {1, a, c});
    for (int64_t j = 0; j < a; ++j) {
      const float* row = x.data<float>() + j * (5 + c);
      for (int ch = 0; ch < 4; ++ch) boxes.data<float>()[j * 4 + ch] = row[ch];
      for (int64_t k = 0; k < c; ++k) scores.data<float>()[j * c + k] = row[5 + k] * row[4];
    }
    expect_same(got, direct_nms(cfg, boxes, scores));
  }
}

TEST(YoloHead, BoxesAndScoresPairInEitherOrder) {
  YoloConfig cfg{.num_classes = 5, .box_coding = "corner"};
  ir::Model m = passthrough({{"scores", {2, 16, 4}}, {"boxes", {2, 16, 4}}});
  EXPECT_THROW(add_yolo_nms(m, cfg, "m.onnx"), Error) << "no [N, A, 5] scores";
  ir::Model p = passthrough({{"scores", {2, 16, 5}}, {"boxes", {2, 16, 4}}});
  const auto head = add_yolo_nms(p, cfg, "m.onnx");
  EXPECT_EQ(head.layout, YoloLayout::kBoxesScores);
  EXPECT_EQ(head.description,
            "boxes + scores outputs: boxes [2, 16, 4] (float32), scores [2, 16, 5] (float32)");
  const Tensor b = uniform({2, 16, 4}, 3, 0.0f, 30.0f), s = uniform({2, 16, 5}, 4, 0.0f, 1.0f);
  expect_same(run_model(p, {{"scores_in", s}, {"boxes_in", b}}), direct_nms(cfg, b, s));
}

TEST(YoloHead, EndToEndModelsAreLeftAlone) {
  ir::Model m = passthrough({{"output0", {1, 300, 6}}});
  const size_t nodes = m.graph.nodes.size();
  const auto head = add_yolo_nms(m, {.num_classes = 80}, "v10.onnx");
  EXPECT_EQ(head.layout, YoloLayout::kEndToEnd);
  EXPECT_NE(head.description.find("no NMS layer added"), std::string::npos);
  EXPECT_EQ(m.graph.nodes.size(), nodes);
  EXPECT_EQ(m.graph.outputs[0].name, "output0");
}

TEST(YoloHead, UnknownLayoutNamesTheShapesAndTheLayouts) {
  ir::Model m = passthrough({{"output0", {1, 84, 8400}}});
  try {
    add_yolo_nms(m, {.num_classes = 3}, "yolov8n.onnx");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    for (const char* part :
         {"'yolov8n.onnx'", "output0 [1, 84, 8400] (float32)", "YOLOv8/v11 one output [N, 7, A]",
          "YOLOv5/v7 one output [N, A, 8]", "boxes [N, A, 4] + scores [N, A, 3]", "[N, top_k, 6]",
          "--num_classes 3"})
      EXPECT_NE(w.find(part), std::string::npos) << "'" << part << "' not in: " << w;
  }
}

TEST(YoloHead, ConfigAndNameErrors) {
  ir::Model m = passthrough({{"output0", {1, 84, 100}}});
  EXPECT_THROW(add_yolo_nms(m, {.num_classes = 0}, "m"), Error);
  EXPECT_THROW(add_yolo_nms(m, {.conf_threshold = 1.5f}, "m"), Error);
  EXPECT_THROW(add_yolo_nms(m, {.iou_threshold = -0.1f}, "m"), Error);
  EXPECT_THROW(add_yolo_nms(m, {.top_k = 0}, "m"), Error);
  EXPECT_THROW(add_yolo_nms(m, {.box_coding = "xywh"}, "m"), Error);
  ir::Model taken = passthrough({{"output0", {1, 84, 100}}, {"num_dets", {1, 1}}});
  try {
    add_yolo_nms(taken, {}, "m.onnx");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already has a value named 'num_dets'"), std::string::npos)
        << e.what();
  }
}

class YoloBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_yolo_build_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(YoloBuildTest, EngineRunsTheNmsAndNoTemporaryIsLeft) {
  const int64_t c = 4, a = 50;
  const fs::path onnx = dir_ / "v8.onnx", engine = dir_ / "v8.engine";
  onnx_io::save_model(passthrough({{"output0", {ir::Dim("batch"), 4 + c, a}}}), onnx);
  const YoloConfig cfg{.num_classes = c, .conf_threshold = 0.25f, .top_k = 30};
  const auto r = builder::build_yolo_engine(onnx, engine, cfg, {.backend = "cpu"});
  EXPECT_EQ(r.layout, "yolov8");
  ASSERT_TRUE(fs::exists(engine));
  const std::string prefix = "trtutils_yolo_" + std::to_string(::getpid()) + "_";
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path()))
    EXPECT_NE(e.path().filename().string().rfind(prefix, 0), 0u) << "left behind: " << e.path();

  const auto eng = Engine::load(engine);
  ASSERT_EQ(eng->outputs().size(), 4u);
  const Tensor x = v8_head(3, c, a, 5);
  const auto got = eng->create_execution_context()->execute({{"output0_in", x}});
  ir::Model m = passthrough({{"output0", {ir::Dim("batch"), 4 + c, a}}});
  add_yolo_nms(m, cfg, "m");
  const auto want = run_model(m, {{"output0_in", x}});
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    ASSERT_EQ(got.at(name).shape(), t.shape()) << name;
    for (int64_t e = 0; e < t.numel(); ++e)
      ASSERT_EQ(got.at(name).at_double(e), t.at_double(e)) << name << " " << e;
  }
  EXPECT_GT(got.at("num_dets").data<int32_t>()[0], 0);
}

TEST_F(YoloBuildTest, RefusesTheInputAsOutputAndTensorrt) {
  const fs::path onnx = dir_ / "v8.onnx";
  onnx_io::save_model(passthrough({{"output0", {1, 84, 20}}}), onnx);
  EXPECT_THROW(builder::build_yolo_engine(onnx, onnx, {}, {.backend = "cpu"}), Error);
  try {
    builder::build_yolo_engine(onnx, dir_ / "m.engine", {}, {.backend = "tensorrt"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "m.engine"));
}

}  // namespace
}  // namespace trtutils
