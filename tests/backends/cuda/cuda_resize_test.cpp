// Resize / Upsample on the GPU vs the CPU kernel (the same plan, coordinates and taps): nearest
// (every rounding mode, int8 and float, up- and downsampling, tf_crop_and_resize fill), linear
// (half_pixel, align_corners, pytorch_half_pixel, asymmetric; 1, 2 and 3 resized axes; float32
// exact to rounding, float16), cubic (the CPU's separable passes: coefficients, exclude_outside,
// 1 to 3 resized axes, float16, tf_crop_and_resize), sizes instead of scales, Upsample (opset 9).
#include <iostream>

#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

In floats(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return weight(Tensor::from_vector<float>(DataType::kFloat32, {n}, std::move(v)));
}
In int64s(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return weight(Tensor::from_vector<int64_t>(DataType::kInt64, {n}, std::move(v)));
}

NodeCase resize(Tensor x, In roi, In scales, In sizes, std::vector<ir::Attribute> attrs) {
  return NodeCase("Resize", {feed(std::move(x)), roi, scales, sizes}, std::move(attrs));
}

TEST(CudaResize, NearestMatchesCpu) {
  TRT_REQUIRE_CUDA();
  const Tensor xf = random_tensor(DataType::kFloat32, {2, 3, 7, 9}, 1);
  const Tensor xi = random_tensor(DataType::kInt8, {2, 3, 7, 9}, 2, -100, 100);
  for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
    for (const char* ct : {"asymmetric", "half_pixel", "align_corners", "tf_half_pixel_for_nn"})
      for (const std::vector<float>& s :
           {std::vector<float>{1, 1, 2, 2}, std::vector<float>{1, 1, 0.6f, 1.7f}}) {
        const std::string what = std::string("nearest ") + nm + " " + ct + " " +
                                 std::to_string(s[2]) + "x" + std::to_string(s[3]);
        const std::vector<ir::Attribute> at = {as("mode", "nearest"), as("nearest_mode", nm),
                                               as("coordinate_transformation_mode", ct)};
        check_case(resize(xf, omitted(), floats(s), omitted(), at), kExact, what + " float32");
        check_case(resize(xi, omitted(), floats(s), omitted(), at), kExact, what + " int8");
      }
}

TEST(CudaResize, LinearMatchesCpu) {
  TRT_REQUIRE_CUDA();
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    const Tensor x = random_tensor(dt, {2, 3, 7, 9}, 3);
    const Tolerance tol = dt == DataType::kFloat32 ? Tolerance{1e-6, 1e-6} : kFp16;
    for (const char* ct : {"half_pixel", "align_corners", "pytorch_half_pixel", "asymmetric"})
      for (const std::vector<float>& s :
           {std::vector<float>{1, 1, 2, 2}, std::vector<float>{1, 1, 0.5f, 1.5f},
            std::vector<float>{1, 1, 1, 3}, std::vector<float>{1, 2, 2, 1}}) {
        const std::string what = std::string("linear ") + ct + " " + std::to_string(s[1]) + "," +
                                 std::to_string(s[2]) + "," + std::to_string(s[3]) + " " +
                                 std::string(dtype_name(dt));
        check_case(resize(x, omitted(), floats(s), omitted(),
                          {as("mode", "linear"), as("coordinate_transformation_mode", ct)}),
                   tol, what);
      }
    // sizes instead of scales.
    check_case(resize(x, omitted(), omitted(), int64s({2, 3, 13, 4}),
                      {as("mode", "linear"), as("coordinate_transformation_mode", "half_pixel")}),
               tol, std::string("linear sizes ") + std::string(dtype_name(dt)));
  }
}

TEST(CudaResize, CropAndResizeFillsOutside) {
  TRT_REQUIRE_CUDA();
  const Tensor x = random_tensor(DataType::kFloat32, {1, 2, 6, 6}, 4);
  const In roi = floats({0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f});
  for (const char* mode : {"nearest", "linear"})
    check_case(resize(x, roi, floats({1, 1, 1.5f, 1.5f}), omitted(),
                      {as("mode", mode), as("coordinate_transformation_mode", "tf_crop_and_resize"),
                       af("extrapolation_value", -7.0f)}),
               Tolerance{1e-6, 1e-6}, std::string("tf_crop_and_resize ") + mode);
}

TEST(CudaResize, UpsampleOpset9) {
  TRT_REQUIRE_CUDA();
  NodeCase up("Upsample",
              {feed(random_tensor(DataType::kFloat32, {1, 2, 5, 4}, 5)), floats({1, 1, 2, 3})},
              {as("mode", "nearest")});
  up.opset = 9;
  check_case(up, kExact, "Upsample opset 9");
}

// Cubic runs on the GPU (check_case fails on a CPU fallback) as the CPU's passes do: float32
// to rounding (the same products and sums, in the same order), float16 within its rounding.
// Split in four so that a failure (the first GPU run of this test hung, 2026-12-07; Keypoint
// R-CNN's cubic Resize ran and matched in the same call) names its case.
void check_cubic(DataType dt, const std::vector<const char*>& modes) {
  const Tensor x = random_tensor(dt, {2, 3, 7, 9}, 6);
  const Tolerance tol = dt == DataType::kFloat32 ? Tolerance{1e-6, 1e-6} : kFp16;
  for (const char* ct : modes)
    for (const std::vector<float>& s :
         {std::vector<float>{1, 1, 2, 2}, std::vector<float>{1, 1, 0.5f, 1.5f},
          std::vector<float>{1, 1, 1, 3}, std::vector<float>{1, 2, 2, 1.25f}})
      for (int exclude : {0, 1}) {
        const std::string what = std::string("cubic ") + ct + " " + std::to_string(s[1]) + "," +
                                 std::to_string(s[2]) + "," + std::to_string(s[3]) +
                                 " exclude_outside " + std::to_string(exclude) + " " +
                                 std::string(dtype_name(dt));
        check_case(
            resize(x, omitted(), floats(s), omitted(),
                   {as("mode", "cubic"), as("coordinate_transformation_mode", ct),
                    af("cubic_coeff_a", exclude ? -0.5f : -0.75f), ai("exclude_outside", exclude)}),
            tol, what);
      }
}

TEST(CudaResize, CubicHalfPixelMatchesCpu) {
  TRT_REQUIRE_CUDA();
  check_cubic(DataType::kFloat32, {"half_pixel", "pytorch_half_pixel"});
}

TEST(CudaResize, CubicOtherModesMatchCpu) {
  TRT_REQUIRE_CUDA();
  check_cubic(DataType::kFloat32, {"align_corners", "asymmetric"});
}

TEST(CudaResize, CubicFloat16MatchesCpu) {
  TRT_REQUIRE_CUDA();
  check_cubic(DataType::kFloat16, {"half_pixel", "align_corners"});
}

TEST(CudaResize, CubicSizesIdentityAndCrop) {
  TRT_REQUIRE_CUDA();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 7, 9}, 6);
  check_case(resize(x, omitted(), omitted(), int64s({2, 3, 13, 4}), {as("mode", "cubic")}),
             Tolerance{1e-6, 1e-6}, "cubic sizes");
  check_case(resize(x, omitted(), floats({1, 1, 1, 1}), omitted(), {as("mode", "cubic")}), kExact,
             "cubic identity");
  const In roi = floats({0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f});
  check_case(
      resize(random_tensor(DataType::kFloat32, {1, 2, 6, 6}, 7), roi, floats({1, 1, 1.5f, 1.5f}),
             omitted(),
             {as("mode", "cubic"), as("coordinate_transformation_mode", "tf_crop_and_resize"),
              af("extrapolation_value", -7.0f)}),
      Tolerance{1e-6, 1e-6}, "cubic tf_crop_and_resize");
}

}  // namespace
}  // namespace trtutils
