// The GPU plan tests' model: a transformer MLP block (x [N, 8, 64] -> MatMul + bias -> exact
// GELU chain -> MatMul + bias -> y), which the CUDA executor fuses into two MatMulBias layers
// (the first with its GELU), and the engine file surgery those tests need.
#pragma once

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "engine/engine_file.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "trtutils/file_util.h"

namespace trtutils::testing_models {

inline Tensor mlp_weight(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.2f, 0.2f);
  Tensor t(DataType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

inline Tensor mlp_scalar(float v) {
  return Tensor::from_vector<float>(DataType::kFloat32, {}, {v});
}

// Batch dimension "N" (build with a profile or --shape).
inline void save_mlp_model(const std::filesystem::path& path) {
  ir::GraphBuilder b("mlp");
  const std::string x = b.input("x", DataType::kFloat32, {ir::Dim("N"), 8, 64});
  const std::string h =
      b.node("MatMul", {x, b.initializer("w1", mlp_weight({64, 128}, 1))}, {}, 1, "", "fc1")[0];
  const std::string hb =
      b.node("Add", {h, b.initializer("b1", mlp_weight({128}, 2))}, {}, 1, "", "fc1_bias")[0];
  const std::string d = b.node("Div", {hb, b.initializer("sqrt2", mlp_scalar(std::sqrt(2.0f)))}, {},
                               1, "", "g_div")[0];
  const std::string e = b.node("Erf", {d}, {}, 1, "", "g_erf")[0];
  const std::string a =
      b.node("Add", {e, b.initializer("one", mlp_scalar(1.0f))}, {}, 1, "", "g_add")[0];
  const std::string m = b.node("Mul", {hb, a}, {}, 1, "", "g_mul")[0];
  const std::string g =
      b.node("Mul", {m, b.initializer("half", mlp_scalar(0.5f))}, {}, 1, "", "g_half")[0];
  const std::string o =
      b.node("MatMul", {g, b.initializer("w2", mlp_weight({128, 64}, 3))}, {}, 1, "", "fc2")[0];
  b.output(b.node("Add", {o, b.initializer("b2", mlp_weight({64}, 4))}, {}, 1, "", "fc2_bias")[0]);
  onnx_io::save_model(b.build(17), path);
}

// A strongly typed int8 model as `quantize` writes one (its first convolution stays float):
// x -> Conv (float) -> Relu -> Q/DQ -> Conv (int8 weight through DequantizeLinear) -> Relu ->
// Q/DQ -> y. The CUDA executor fuses the first into a ConvQuantize, the second into a QConv.
inline void save_qdq_conv_model(const std::filesystem::path& path) {
  ir::GraphBuilder b("qdq_conv");
  const std::string x = b.input("x", DataType::kFloat32, {1, 3, 12, 12});
  const std::string s = b.initializer("s", mlp_scalar(0.05f));
  const std::string z = b.initializer("z", Tensor::from_vector<int8_t>(DataType::kInt8, {}, {0}));
  const ir::Attribute pads = ir::attr_ints("pads", {1, 1, 1, 1});
  const std::string c0 =
      b.node("Conv", {x, b.initializer("w0", mlp_weight({16, 3, 3, 3}, 6))}, {pads})[0];
  const std::string q0 = b.node("QuantizeLinear", {b.node("Relu", {c0})[0], s, z})[0];
  const std::string d0 = b.node("DequantizeLinear", {q0, s, z})[0];
  Tensor w(DataType::kInt8, {16, 16, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<int8_t>()[i] = static_cast<int8_t>(i % 15 - 7);
  const std::string wd = b.node("DequantizeLinear", {b.initializer("w", w), s, z})[0];
  const std::string c1 =
      b.node("Conv", {d0, wd, b.initializer("bias", mlp_weight({16}, 5))}, {pads})[0];
  const std::string q1 = b.node("QuantizeLinear", {b.node("Relu", {c1})[0], s, z})[0];
  b.output(b.node("DequantizeLinear", {q1, s, z})[0]);
  onnx_io::save_model(b.build(17), path);
}

// An engine file's header and metadata, to rewrite (tests of the reader and of old formats).
struct EngineFileParts {
  std::string bytes;
  nlohmann::json meta;
  uint64_t meta_size = 0;
};

inline uint64_t file_u64(const std::string& s, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, s.data() + at, 8);  // little-endian hosts only (as the tests run)
  return v;
}

inline EngineFileParts engine_file_parts(const std::filesystem::path& path) {
  EngineFileParts p;
  p.bytes = read_file(path);
  p.meta_size = file_u64(p.bytes, 32);
  p.meta = nlohmann::json::parse(p.bytes.substr(engine::kHeaderSize, p.meta_size));
  return p;
}

// The file with `meta` and `version` (the weights moved after the new metadata, the header's
// offsets and checksum recomputed): a well-formed file that only the reader's checks can refuse.
inline std::string engine_file_with(const EngineFileParts& p, const nlohmann::json& meta,
                                    uint32_t version) {
  const std::string text = meta.dump();
  const uint64_t blob_off = file_u64(p.bytes, 40), blob_size = file_u64(p.bytes, 48);
  const uint64_t new_off = (engine::kHeaderSize + text.size() + engine::kAlignment - 1) /
                           engine::kAlignment * engine::kAlignment;
  std::string out(new_off + blob_size, '\0');
  std::memcpy(out.data(), p.bytes.data(), engine::kHeaderSize);
  std::memcpy(out.data() + engine::kHeaderSize, text.data(), text.size());
  std::memcpy(out.data() + new_off, p.bytes.data() + blob_off, blob_size);
  auto put = [&](size_t at, uint64_t v) { std::memcpy(out.data() + at, &v, 8); };
  std::memcpy(out.data() + 8, &version, 4);
  put(16, out.size());
  put(32, text.size());
  put(40, new_off);
  const auto* u = reinterpret_cast<const uint8_t*>(out.data());
  put(56, engine::checksum64(u + engine::kHeaderSize, out.size() - engine::kHeaderSize,
                             engine::checksum64(u, 56)));
  return out;
}

// The engine as format 1 wrote it: no GPU plan, no layouts, version 1 in the header.
inline std::string as_format_1(const std::filesystem::path& path) {
  const EngineFileParts p = engine_file_parts(path);
  nlohmann::json meta = p.meta;
  meta.erase("gpu_graph");
  meta["info"].erase("gpu_tactics");
  for (auto& n : meta["graph"]["nodes"]) n.erase("layout");
  return engine_file_with(p, meta, 1);
}

}  // namespace trtutils::testing_models
