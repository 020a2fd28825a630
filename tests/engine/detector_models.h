// Tiny models for the Detector / Classifier tests (tests/engine/detector_test.cpp and
// tests/cli/detect_cli_test.cpp): their outputs are constants that still depend on the image
// input (through 0 * ReduceMean(images)), so that the input stays a real binding.
#pragma once

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "trtutils/builder.h"
#include "trtutils/yolo.h"

namespace trtutils::test_models {

// [1] zeros computed from the input `x`.
inline std::string zero_from(ir::GraphBuilder& b, const std::string& x) {
  auto m =
      b.node("ReduceMean", {x}, {ir::attr_ints("axes", {1, 2, 3}), ir::attr_int("keepdims", 0)})[0];
  auto z = b.initializer("zero", Tensor::from_vector<float>(DataType::kFloat32, {1}, {0.0f}));
  return b.node("Mul", {m, z})[0];
}

// images [1, 3, H, W] float32 (or [batch, H, W, 3] uint8) -> boxes [1, A, 4] (the given corners,
// network pixels) and scores [1, A, A]: anchor a is class a with score 0.9 - 0.01 a, every other
// class 0. Through build_yolo (corner coding, conf 0.5): one detection per anchor, class a at
// boxes[a].
inline void build_fixed_box_detector(const std::filesystem::path& dir, const std::string& name,
                                     int64_t h, int64_t w,
                                     const std::vector<std::array<float, 4>>& boxes,
                                     bool nhwc_uint8_dynamic_batch = false,
                                     const std::string& backend = "cpu") {
  const auto a = static_cast<int64_t>(boxes.size());
  ir::GraphBuilder b("fixed_boxes");
  std::string x;
  if (nhwc_uint8_dynamic_batch) {
    x = b.input("images", DataType::kUInt8, {ir::Dim("batch"), h, w, 3});
    x = b.node("Cast", {x}, {ir::attr_int("to", 1)})[0];
  } else {
    x = b.input("images", DataType::kFloat32, {1, 3, h, w});
  }
  auto zero = zero_from(b, x);
  std::vector<float> bv, sv(static_cast<size_t>(a * a), 0.0f);
  for (int64_t i = 0; i < a; ++i) {
    for (float v : boxes[static_cast<size_t>(i)]) bv.push_back(v);
    sv[static_cast<size_t>(i * a + i)] = 0.9f - 0.01f * static_cast<float>(i);
  }
  auto bc =
      b.initializer("box_const", Tensor::from_vector<float>(DataType::kFloat32, {1, a, 4}, bv));
  auto sc =
      b.initializer("score_const", Tensor::from_vector<float>(DataType::kFloat32, {1, a, a}, sv));
  auto ob = b.node_with_outputs("Add", {bc, zero}, {"boxes"})[0];
  auto os = b.node_with_outputs("Add", {sc, zero}, {"scores"})[0];
  b.output(ob, DataType::kFloat32, ir::SymShape{1, a, 4});
  b.output(os, DataType::kFloat32, ir::SymShape{1, a, a});
  const auto onnx = dir / (name + ".onnx");
  onnx_io::save_model(b.build(17), onnx);
  builder::build_yolo_engine(
      onnx, dir / (name + ".engine"),
      {.num_classes = a, .conf_threshold = 0.5f, .top_k = 16, .box_coding = "corner"},
      {.backend = backend});
}

// images [1, 3, h, w] float32 -> one box around the pixels whose channel mean is over 0.5 (pixel
// edges: bright columns xa..xb give x1 = xa, x2 = xb + 1), score 0.9, class 0: a detector whose
// output comes from the pixels, to check the geometry of the whole path (resize, letterbox,
// mapping back) on drawn images.
inline void build_bright_box_detector(const std::filesystem::path& dir, const std::string& name,
                                      int64_t h, int64_t w, const std::string& backend = "cpu") {
  ir::GraphBuilder b("bright_box");
  auto x = b.input("images", DataType::kFloat32, {1, 3, h, w});
  auto g = b.node("ReduceMean", {x}, {ir::attr_ints("axes", {1}), ir::attr_int("keepdims", 0)})[0];
  auto half = b.initializer("half", Tensor::from_vector<float>(DataType::kFloat32, {1}, {0.5f}));
  auto mask = b.node("Cast", {b.node("Greater", {g, half})[0]}, {ir::attr_int("to", 1)})[0];
  // Edges along one axis: mask [1, h, w] reduced over the other axis, then max of (i + 1) and of
  // (n - i) over the set positions.
  auto edges = [&](int64_t axis, int64_t n, const std::string& tag) {
    auto line = b.node(
        "ReduceMax", {mask},
        {ir::attr_ints("axes", {axis == 2 ? 1 : 2}), ir::attr_int("keepdims", 0)})[0];  // [1, n]
    std::vector<float> up(static_cast<size_t>(n)), down(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      up[i] = static_cast<float>(i + 1), down[i] = static_cast<float>(n - i);
    auto hi = b.node(
        "ReduceMax",
        {b.node("Mul", {line, b.initializer(tag + "_up", Tensor::from_vector<float>(
                                                             DataType::kFloat32, {n}, up))})[0]},
        {ir::attr_ints("axes", {1}), ir::attr_int("keepdims", 1)})[0];  // [1, 1]
    auto lo_rev = b.node(
        "ReduceMax",
        {b.node("Mul",
                {line, b.initializer(tag + "_down", Tensor::from_vector<float>(DataType::kFloat32,
                                                                               {n}, down))})[0]},
        {ir::attr_ints("axes", {1}), ir::attr_int("keepdims", 1)})[0];
    auto nn = b.initializer(
        tag + "_n", Tensor::from_vector<float>(DataType::kFloat32, {1}, {static_cast<float>(n)}));
    return std::pair{b.node("Sub", {nn, lo_rev})[0], hi};
  };
  auto [x1, x2] = edges(2, w, "x");
  auto [y1, y2] = edges(1, h, "y");
  auto box = b.node("Concat", {x1, y1, x2, y2}, {ir::attr_int("axis", 1)})[0];  // [1, 4]
  auto shape =
      b.initializer("box_shape", Tensor::from_vector<int64_t>(DataType::kInt64, {3}, {1, 1, 4}));
  auto ob = b.node_with_outputs("Reshape", {box, shape}, {"boxes"})[0];
  auto sc =
      b.initializer("score", Tensor::from_vector<float>(DataType::kFloat32, {1, 1, 1}, {0.9f}));
  auto os = b.node_with_outputs("Add", {sc, zero_from(b, x)}, {"scores"})[0];
  b.output(ob, DataType::kFloat32, ir::SymShape{1, 1, 4});
  b.output(os, DataType::kFloat32, ir::SymShape{1, 1, 1});
  const auto onnx = dir / (name + ".onnx");
  onnx_io::save_model(b.build(17), onnx);
  builder::build_yolo_engine(
      onnx, dir / (name + ".engine"),
      {.num_classes = 1, .conf_threshold = 0.5f, .top_k = 4, .box_coding = "corner"},
      {.backend = backend});
}

// An image of w x h black pixels with a white rectangle at x0..x1, y0..y1 (pixel edges).
inline Image image_with_box(int64_t w, int64_t h, int64_t x0, int64_t y0, int64_t x1, int64_t y1) {
  Image img;
  img.width = w;
  img.height = h;
  img.channels = 3;
  img.pixels.assign(static_cast<size_t>(w * h * 3), 0);
  for (int64_t y = y0; y < y1; ++y)
    for (int64_t x = x0; x < x1; ++x)
      for (int c = 0; c < 3; ++c) img.pixels[static_cast<size_t>((y * w + x) * 3 + c)] = 255;
  return img;
}

// images [1, 3, 8, 8] -> logits [1, C] = the given constants (softmax: Softmax over them).
inline void build_fixed_logits_classifier(const std::filesystem::path& dir, const std::string& name,
                                          const std::vector<float>& logits, bool softmax) {
  ir::GraphBuilder b("fixed_logits");
  auto x = b.input("images", DataType::kFloat32, {1, 3, 8, 8});
  auto zero = zero_from(b, x);
  const auto c = static_cast<int64_t>(logits.size());
  auto lc =
      b.initializer("logit_const", Tensor::from_vector<float>(DataType::kFloat32, {1, c}, logits));
  auto y = b.node("Add", {lc, zero})[0];
  if (softmax) y = b.node("Softmax", {y}, {ir::attr_int("axis", -1)})[0];
  auto out = b.node_with_outputs("Identity", {y}, {"logits"})[0];
  b.output(out, DataType::kFloat32, ir::SymShape{1, c});
  const auto onnx = dir / (name + ".onnx");
  onnx_io::save_model(b.build(17), onnx);
  builder::build_engine(onnx, dir / (name + ".engine"), {.backend = "cpu"});
}

// images [1, 3, 4, 4] -> the mean of each input channel, [1, 3]: what the classifier saw.
inline void build_channel_mean_classifier(const std::filesystem::path& dir,
                                          const std::string& name) {
  ir::GraphBuilder b("channel_mean");
  auto x = b.input("images", DataType::kFloat32, {1, 3, 4, 4});
  auto y = b.node_with_outputs("ReduceMean", {x}, {"means"},
                               {ir::attr_ints("axes", {2, 3}), ir::attr_int("keepdims", 0)})[0];
  b.output(y, DataType::kFloat32, ir::SymShape{1, 3});
  const auto onnx = dir / (name + ".onnx");
  onnx_io::save_model(b.build(17), onnx);
  builder::build_engine(onnx, dir / (name + ".engine"), {.backend = "cpu"});
}

}  // namespace trtutils::test_models
