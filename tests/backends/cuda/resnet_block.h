// A small ResNet-like float32 model for whole-graph tests of the CUDA backend and of the GPU
// engine builder: conv-bn-relu -> conv-bn -> add -> relu -> maxpool -> a downsampling block
// (3x3 stride 2 + 1x1 stride 2 projection, add, relu) -> global average pool -> gemm.
//   x [N, 3, 15, 15] -> logits [N, 10]; channels 3, 12, 20 (not multiples of 8), odd sizes.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ir/graph_builder.h"
#include "trtutils/tensor.h"

namespace trtutils::testing_models {

inline ir::Model resnet_block(ir::Dim batch, uint32_t seed = 4242) {
  ir::GraphBuilder b("resnet_block");
  std::mt19937 rng(seed);
  int n = 0;
  auto param = [&](const Shape& s, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    Tensor t(DataType::kFloat32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    return b.initializer("p" + std::to_string(n++), t);
  };
  auto conv = [&](const std::string& x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                  const std::string& name) {
    const float s = 1.7f / std::sqrt(static_cast<float>(cin * k * k));
    const int64_t p = k / 2;
    return b.node("Conv", {x, param({cout, cin, k, k}, -s, s), param({cout}, -0.1f, 0.1f)},
                  {ir::attr_ints("pads", {p, p, p, p}), ir::attr_ints("strides", {stride, stride})},
                  1, "", name)[0];
  };
  auto bn = [&](const std::string& x, int64_t c, const std::string& name) {
    return b.node("BatchNormalization",
                  {x, param({c}, 0.5f, 1.5f), param({c}, -0.2f, 0.2f), param({c}, -0.1f, 0.1f),
                   param({c}, 0.5f, 2.0f)},
                  {ir::attr_float("epsilon", 1e-5f)}, 1, "", name)[0];
  };
  auto op = [&](const std::string& type, const std::vector<std::string>& in,
                std::vector<ir::Attribute> attrs = {}) {
    return b.node(type, in, std::move(attrs))[0];
  };

  const std::string x = b.input("x", DataType::kFloat32, {batch, 3, 15, 15});
  const std::string h1 = op("Relu", {bn(conv(x, 3, 12, 3, 1, "conv1"), 12, "bn1")});
  const std::string c2 = bn(conv(h1, 12, 12, 3, 1, "conv2"), 12, "bn2");
  const std::string a = op("Relu", {op("Add", {c2, h1})});
  const std::string p = op("MaxPool", {a},
                           {ir::attr_ints("kernel_shape", {3, 3}), ir::attr_ints("strides", {2, 2}),
                            ir::attr_ints("pads", {1, 1, 1, 1})});      // [N, 12, 8, 8]
  const std::string d1 = op("Relu", {conv(p, 12, 20, 3, 2, "conv3")});  // [N, 20, 4, 4]
  const std::string proj = conv(p, 12, 20, 1, 2, "proj");
  const std::string d2 = conv(d1, 20, 20, 3, 1, "conv4");
  const std::string o = op("Relu", {op("Add", {d2, proj})});
  const std::string f = op("Flatten", {op("GlobalAveragePool", {o})});
  const std::string y = b.node("Gemm", {f, param({10, 20}, -0.4f, 0.4f), param({10}, -0.1f, 0.1f)},
                               {ir::attr_int("transB", 1)}, 1, "", "fc")[0];
  b.output(y, DataType::kFloat32);
  return b.build(17);
}

}  // namespace trtutils::testing_models
