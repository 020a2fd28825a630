// A small image model (x [B, 3, 16, 16] -> Conv 3->8 -> Relu -> GlobalAveragePool -> Flatten ->
// Gemm 8->4) and a folder of photos, for the tests of calibration from images (quantize
// --calibration_data DIR, build --calibration_dir).
#pragma once

#include <filesystem>
#include <random>
#include <string>

#include "data_pipeline/fixtures.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"

namespace trtutils::image_model {

namespace fs = std::filesystem;

inline Tensor random_weights(Shape s, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  Tensor t(DataType::kFloat32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// batch 0: a dynamic batch axis ("N"); else fixed at `batch`.
inline fs::path write_image_model(const fs::path& path, int64_t batch) {
  ir::GraphBuilder b("image_net");
  const ir::Dim n = batch > 0 ? ir::Dim(batch) : ir::Dim(std::string("N"));
  auto x = b.input("x", DataType::kFloat32, {n, 3, 16, 16});
  auto c = b.node("Conv",
                  {x, b.initializer("w", random_weights({8, 3, 3, 3}, 1, 0.3f)),
                   b.initializer("b", random_weights({8}, 2, 0.1f))},
                  {ir::attr_ints("pads", {1, 1, 1, 1})}, 1, "", "conv")[0];
  auto r = b.node("Relu", {c}, {}, 1, "", "relu")[0];
  auto g = b.node("GlobalAveragePool", {r}, {}, 1, "", "gap")[0];
  auto f = b.node("Flatten", {g}, {}, 1, "", "flatten")[0];
  auto y = b.node("Gemm", {f, b.initializer("wf", random_weights({4, 8}, 3, 0.5f))},
                  {ir::attr_int("transB", 1)}, 1, "", "fc")[0];
  b.output(y, DataType::kFloat32);
  onnx_io::save_model(b.build(17), path);
  return path;
}

// `copies` x the three photo fixtures in `dir` (3 * copies images, distinct names).
inline fs::path write_photos(const fs::path& dir, int copies) {
  fs::create_directories(dir);
  int i = 0;
  for (int k = 0; k < copies; ++k)
    for (const char* name : {"photo_astronaut.png", "photo_coffee.png", "photo_chelsea.png"})
      fs::copy_file(testing_data::fixture(name),
                    dir / (std::to_string(100 + i++) + "_" + std::string(name)));
  return dir;
}

}  // namespace trtutils::image_model
