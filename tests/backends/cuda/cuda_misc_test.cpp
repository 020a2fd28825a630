// The small GPU ops against the CPU kernels, bytes equal: Tile (host and device repeats, zero
// repeats), IsNaN / IsInf (both signs filtered), CastLike, Hardmax (ties: the first maximum;
// opset 11's 2-D coercion) and ONNX NonMaxSuppression (several chunks of candidates, tied
// scores, flipped corners, center boxes, score thresholds, max_output_boxes_per_class 0 / 1 /
// more than the boxes).
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

Tensor i64(const Shape& s, std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>(DataType::kInt64, s, v);
}

// Values k / steps for random k in [0, steps]: many ties.
Tensor levels(DataType dt, const Shape& s, uint32_t seed, int steps) {
  Tensor t = random_tensor(DataType::kFloat32, s, seed, 0.0f, 1.0f);
  std::vector<float> v = t.to_float_vector();
  for (float& x : v) x = std::round(x * static_cast<float>(steps)) / static_cast<float>(steps);
  const Tensor f = Tensor::from_vector<float>(DataType::kFloat32, s, v);
  if (dt == DataType::kFloat32) return f;
  Tensor h(DataType::kFloat16, s);
  for (int64_t i = 0; i < h.numel(); ++i) h.data<half>()[i] = float_to_half(v[i]);
  return h;
}

TEST(CudaMisc, TileMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  int cases = 0;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64})
    for (const std::vector<int64_t>& r :
         {std::vector<int64_t>{2, 1, 3}, {1, 1, 1}, {0, 2, 1}, {1, 4, 1}}) {
      const Tensor x = dt == DataType::kInt64 ? i64({2, 3, 1}, {1, 2, 3, 4, 5, 6})
                                              : random_tensor(dt, {2, 3, 1}, 3);
      const std::string what = fmt::format("Tile {} repeats {}", dtype_name(dt), fmt::join(r, "x"));
      check_case({"Tile", {feed(x), weight(i64({3}, r))}}, kExact, what);
      check_case({"Tile", {feed(x), feed(i64({3}, r))}}, kExact, what + " (device repeats)");
      ++cases;
    }
  EXPECT_EQ(cases, 12);
}

TEST(CudaMisc, IsNaNIsInfMatchTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> v = {0.0f, -0.0f, 1.5f, -2.0f, inf, -inf, std::nanf(""), 65504.0f};
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    Tensor x = Tensor::from_vector<float>(DataType::kFloat32, {2, 4}, v);
    if (dt == DataType::kFloat16) {
      Tensor h(DataType::kFloat16, {2, 4});
      for (int64_t i = 0; i < 8; ++i) h.data<half>()[i] = float_to_half(v[i]);
      x = h;
    }
    check_case({"IsNaN", {feed(x)}}, kExact, fmt::format("IsNaN {}", dtype_name(dt)));
    for (int64_t neg : {0, 1})
      for (int64_t pos : {0, 1})
        check_case({"IsInf", {feed(x)}, {ai("detect_negative", neg), ai("detect_positive", pos)}},
                   kExact, fmt::format("IsInf {} neg {} pos {}", dtype_name(dt), neg, pos));
  }
}

TEST(CudaMisc, CastLikeMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  const Tensor x = random_tensor(DataType::kFloat32, {3, 5}, 4, -300.0f, 300.0f);
  for (DataType to : {DataType::kFloat16, DataType::kInt32, DataType::kFloat32})
    check_case({"CastLike", {feed(x), feed(Tensor(to, {1}))}, {}, 1, "", 15}, kExact,
               fmt::format("CastLike float32 -> {}", dtype_name(to)));
  const Tensor h = random_tensor(DataType::kFloat16, {4, 2}, 5);
  check_case({"CastLike", {feed(h), weight(Tensor(DataType::kFloat32, {}))}, {}, 1, "", 15}, kExact,
             "CastLike float16 -> float32");
}

TEST(CudaMisc, HardmaxMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  int cases = 0;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16})
    for (int64_t opset : {11, 13})
      for (int64_t axis : {0, 1, -1}) {
        const Tensor x = levels(dt, {3, 7, 5}, 20 + static_cast<uint32_t>(cases), 3);
        check_case({"Hardmax", {feed(x)}, {ai("axis", axis)}, 1, "", opset}, kExact,
                   fmt::format("Hardmax {} opset {} axis {}", dtype_name(dt), opset, axis));
        ++cases;
      }
  EXPECT_EQ(cases, 12);
}

TEST(CudaMisc, NonMaxSuppressionMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  int cases = 0;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16})
    for (int64_t center : {0, 1})
      for (int64_t max_out : {0, 1, 7, 1000})
        for (bool threshold : {false, true}) {
          const uint32_t seed = 100 + static_cast<uint32_t>(cases);
          // 2 images, 600 boxes in a 100 x 100 square (many overlaps; corners may be flipped),
          // 3 classes, scores on 40 levels (ties).
          const Tensor boxes = random_tensor(dt, {2, 600, 4}, seed, 0.0f, 100.0f);
          const Tensor scores = levels(dt, {2, 3, 600}, seed + 1, 40);
          std::vector<In> in = {
              feed(boxes), feed(scores), weight(i64({1}, {max_out})),
              weight(Tensor::from_vector<float>(DataType::kFloat32, {1}, {center ? 0.3f : 0.5f}))};
          if (threshold)
            in.push_back(weight(Tensor::from_vector<float>(DataType::kFloat32, {1}, {0.4f})));
          const std::string what = fmt::format("NonMaxSuppression {} center {} max {} threshold {}",
                                               dtype_name(dt), center, max_out, threshold);
          check_case({"NonMaxSuppression", in, {ai("center_point_box", center)}, 1, "", 11}, kExact,
                     what);
          ++cases;
        }
  EXPECT_EQ(cases, 32);
  // No boxes at all, and scores fed from the device with the limits as graph inputs.
  check_case({"NonMaxSuppression",
              {feed(Tensor(DataType::kFloat32, {1, 0, 4})),
               feed(Tensor(DataType::kFloat32, {1, 2, 0})), weight(i64({1}, {5}))}},
             kExact, "NonMaxSuppression without boxes");
  check_case({"NonMaxSuppression",
              {feed(random_tensor(DataType::kFloat32, {1, 300, 4}, 9, 0.0f, 50.0f)),
               feed(levels(DataType::kFloat32, {1, 2, 300}, 10, 10)), feed(i64({1}, {20})),
               feed(Tensor::from_vector<float>(DataType::kFloat32, {1}, {0.45f}))}},
             kExact, "NonMaxSuppression with fed limits");
}

// Ops the op-coverage test found without a GPU test of their own.
TEST(CudaMisc, DropoutModAndScatterMatchTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  check_case({"Dropout", {feed(random_tensor(DataType::kFloat32, {3, 4}, 1))}, {}, 1, "", 13},
             kExact, "Dropout (inference: identity)");
  const Tensor a = i64({2, 3}, {7, -7, 9, -9, 5, 0});
  const Tensor b = i64({2, 3}, {3, 3, -4, -4, 5, 2});
  check_case({"Mod", {feed(a), feed(b)}}, kExact, "Mod int64");
  check_case({"Mod",
              {feed(random_tensor(DataType::kFloat32, {4, 5}, 2, -9.0f, 9.0f)),
               feed(random_tensor(DataType::kFloat32, {4, 5}, 3, 0.5f, 3.0f))},
              {ai("fmod", 1)}},
             kExact, "Mod fmod float32");
  check_case(
      {"Scatter",
       {feed(random_tensor(DataType::kFloat32, {3, 5}, 4)), feed(i64({3, 2}, {0, 4, 1, 3, 2, 2})),
        feed(random_tensor(DataType::kFloat32, {3, 2}, 5))},
       {ai("axis", 1)},
       1,
       "",
       10},
      kExact, "Scatter (opset 10) axis 1");
}

}  // namespace
}  // namespace trtutils
