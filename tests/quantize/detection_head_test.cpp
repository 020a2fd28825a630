// quantize/detection_head.h: which nodes are a detection head's decode, on graphs built in code
// (a YOLO-style head with DFL, a ViT-style patch flattening, a classifier).
#include "quantize/detection_head.h"

#include <gtest/gtest.h>

#include <random>

#include "ir/graph_builder.h"
#include "passes/passes.h"

namespace trtutils::quantize {
namespace {

using Names = std::vector<std::string>;

Tensor randn(Shape s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.1f);
  Tensor t(DataType::kFloat32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

Names decode_of(ir::GraphBuilder& b) {
  ir::Model m = b.build(17);
  passes::infer_shapes(m.graph, 17);
  return detection_head_decode_nodes(m.graph);
}

std::string shape_const(ir::GraphBuilder& b, const std::string& name, std::vector<int64_t> s) {
  const auto n = static_cast<int64_t>(s.size());
  return b.initializer(name, Tensor::from_vector<int64_t>(DataType::kInt64, {n}, s));
}

TEST(DetectionHead, YoloStyleHeadWithDfl) {
  ir::GraphBuilder b("yolo");
  auto x = b.input("x", DataType::kFloat32, {1, 3, 8, 8});
  auto f = b.node("Conv", {x, b.initializer("w1", randn({32, 3, 3, 3}, 1))},
                  {ir::attr_ints("pads", {1, 1, 1, 1})}, 1, "", "feat")[0];
  // The prediction conv: 4 x 16 DFL bins + 3 classes per position.
  auto p = b.node("Conv", {f, b.initializer("w2", randn({67, 32, 1, 1}, 2))}, {}, 1, "", "pred")[0];
  auto flat = b.node("Reshape", {p, shape_const(b, "s1", {1, 67, 64})}, {}, 1, "", "flatten")[0];
  auto parts = b.node("Split", {flat, shape_const(b, "split", {64, 3})}, {ir::attr_int("axis", 1)},
                      2, "", "split");
  auto bins =
      b.node("Reshape", {parts[0], shape_const(b, "s2", {1, 4, 16, 64})}, {}, 1, "", "bins")[0];
  auto t = b.node("Transpose", {bins}, {ir::attr_ints("perm", {0, 2, 1, 3})}, 1, "", "t")[0];
  auto sm = b.node("Softmax", {t}, {ir::attr_int("axis", 1)}, 1, "", "softmax")[0];
  // The DFL expectation: a fixed [1, 16, 1, 1] conv, not a feature layer.
  auto dfl =
      b.node("Conv", {sm, b.initializer("arange", randn({1, 16, 1, 1}, 3))}, {}, 1, "", "dfl")[0];
  auto box = b.node("Reshape", {dfl, shape_const(b, "s3", {1, 4, 64})}, {}, 1, "", "box")[0];
  auto scaled = b.node("Mul", {box, b.initializer("stride", randn({1, 1, 64}, 4))}, {}, 1, "",
                       "stride_mul")[0];
  auto cls = b.node("Sigmoid", {parts[1]}, {}, 1, "", "sigmoid")[0];
  auto out = b.node("Concat", {scaled, cls}, {ir::attr_int("axis", 1)}, 1, "", "concat")[0];
  b.output(out, DataType::kFloat32);
  EXPECT_EQ(decode_of(b), (Names{"flatten", "split", "bins", "t", "softmax", "dfl", "box",
                                 "stride_mul", "sigmoid", "concat"}));
}

TEST(DetectionHead, PatchFlatteningFollowedByFeatureLayersIsNoHead) {
  ir::GraphBuilder b("vit");
  auto x = b.input("x", DataType::kFloat32, {1, 3, 16, 16});
  auto p = b.node("Conv", {x, b.initializer("w", randn({32, 3, 4, 4}, 1))},
                  {ir::attr_ints("strides", {4, 4})}, 1, "", "patch")[0];
  auto flat = b.node("Reshape", {p, shape_const(b, "s", {1, 32, 16})}, {}, 1, "", "flatten")[0];
  auto t = b.node("Transpose", {flat}, {ir::attr_ints("perm", {0, 2, 1})}, 1, "", "t")[0];
  auto y = b.node("MatMul", {t, b.initializer("wq", randn({32, 32}, 2))}, {}, 1, "", "fc")[0];
  auto s = b.node("Sigmoid", {y}, {}, 1, "", "act")[0];
  b.output(s, DataType::kFloat32);
  // Only what follows the last feature layer, and that is not after a flattening point.
  EXPECT_EQ(decode_of(b), Names{});
}

TEST(DetectionHead, ClassifierFlattenAfterGlobalPoolingIsNoHead) {
  ir::GraphBuilder b("cls");
  auto x = b.input("x", DataType::kFloat32, {ir::Dim("N"), 3, 8, 8});
  auto c = b.node("Conv", {x, b.initializer("w", randn({32, 3, 3, 3}, 1))}, {}, 1, "", "conv")[0];
  auto g = b.node("GlobalAveragePool", {c}, {}, 1, "", "gap")[0];
  auto fl = b.node("Flatten", {g}, {}, 1, "", "flat")[0];
  auto y = b.node("Gemm", {fl, b.initializer("fc", randn({10, 32}, 2))},
                  {ir::attr_int("transB", 1)}, 1, "", "fc")[0];
  auto s = b.node("Softmax", {y}, {}, 1, "", "softmax")[0];
  b.output(s, DataType::kFloat32);
  EXPECT_EQ(decode_of(b), Names{});
}

}  // namespace
}  // namespace trtutils::quantize
