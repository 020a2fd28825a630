// A scaled dot-product attention block (MatMul -> Mul -> Softmax -> MatMul) and a MatMul + bias
// projection, as a model file: the CUDA executor fuses the first into one Attention kernel
// (switch TRTUTILS_CUDA_ATTENTION) and the second into MatMulBias.
#pragma once

#include <filesystem>
#include <string>

#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"

namespace trtutils::testing_models {

inline void save_attention_model(const std::filesystem::path& path) {
  ir::GraphBuilder b("attention");
  const std::string q = b.input("q", DataType::kFloat32, {2, 4, 10, 8});
  const std::string k = b.input("k", DataType::kFloat32, {2, 4, 8, 10});
  const std::string v = b.input("v", DataType::kFloat32, {2, 4, 10, 8});
  Tensor c(DataType::kFloat32, {});
  c.data<float>()[0] = 0.35f;
  const std::string s = b.node("MatMul", {q, k}, {}, 1, "", "scores")[0];
  const std::string ss = b.node("Mul", {s, b.initializer("c", c)}, {}, 1, "", "scale")[0];
  const std::string p = b.node("Softmax", {ss}, {ir::attr_int("axis", -1)}, 1, "", "softmax")[0];
  const std::string o = b.node("MatMul", {p, v}, {}, 1, "", "context")[0];
  Tensor w(DataType::kFloat32, {8, 6}), bias(DataType::kFloat32, {6});
  const std::string h = b.node("MatMul", {o, b.initializer("w", w)}, {}, 1, "", "proj")[0];
  b.output(b.node("Add", {h, b.initializer("bias", bias)}, {}, 1, "", "proj_bias")[0]);
  onnx_io::save_model(b.build(17), path);
}

}  // namespace trtutils::testing_models
