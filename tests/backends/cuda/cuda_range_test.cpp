// Range and ConstantOfShape on the GPU (ops_range.cpp, range_kernels.cu): with start / limit /
// delta on the device the kernel fills the output and equals the CPU kernel bit for bit (integers
// wrap as the CPU's cast does, floats accumulate as ONNX's function body does); with all three
// known on the host (shape arithmetic) the executor keeps Range there. ConstantOfShape of a shape
// computed on the device fills as the CPU does. Range inside a Loop body:
// cuda_control_flow_test.cpp.
#include <array>

#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

template <typename T>
Tensor scalar_of(DataType dt, T v) {
  return Tensor::from_vector<T>(dt, {}, {v});
}

// Inputs fed as graph inputs are device values: the GPU kernel runs (run_gpu checks that no node
// fell back) and equals the CPU's, bit for bit.
TEST(CudaRange, DeviceInputsMatchTheCpu) {
  TRT_REQUIRE_CUDA();
  const std::vector<std::array<int64_t, 3>> ints = {{0, 10, 1}, {5, -7, -3}, {2, 2, 1}, {-4, 9, 4}};
  for (const auto& [s, l, d] : ints) {
    const std::string what =
        "Range " + std::to_string(s) + ", " + std::to_string(l) + ", " + std::to_string(d);
    check_case({"Range",
                {feed(scalar_of<int64_t>(DataType::kInt64, s)),
                 feed(scalar_of<int64_t>(DataType::kInt64, l)),
                 feed(scalar_of<int64_t>(DataType::kInt64, d))}},
               kExact, what + " int64");
    check_case({"Range",
                {feed(scalar_of<int32_t>(DataType::kInt32, static_cast<int32_t>(s))),
                 feed(scalar_of<int32_t>(DataType::kInt32, static_cast<int32_t>(l))),
                 feed(scalar_of<int32_t>(DataType::kInt32, static_cast<int32_t>(d)))}},
               kExact, what + " int32");
  }
  // Long float sequences: each value is the previous plus delta, rounded, as on the CPU.
  const std::vector<std::array<double, 3>> floats = {
      {0.5, 10.3, 0.7}, {3, -2, -0.25}, {1, 1, 0.5}, {-1, 1000, 0.1}};
  for (const auto& [s, l, d] : floats) {
    const std::string what =
        "Range " + std::to_string(s) + ", " + std::to_string(l) + ", " + std::to_string(d);
    check_case({"Range",
                {feed(scalar_of<float>(DataType::kFloat32, static_cast<float>(s))),
                 feed(scalar_of<float>(DataType::kFloat32, static_cast<float>(l))),
                 feed(scalar_of<float>(DataType::kFloat32, static_cast<float>(d)))}},
               kExact, what + " float32");
    check_case({"Range",
                {feed(scalar_of<double>(DataType::kFloat64, s)),
                 feed(scalar_of<double>(DataType::kFloat64, l)),
                 feed(scalar_of<double>(DataType::kFloat64, d))}},
               kExact, what + " float64");
  }
  check_case({"Range",
              {feed(scalar_tensor(DataType::kFloat16, 0.5f)),
               feed(scalar_tensor(DataType::kFloat16, 20.0f)),
               feed(scalar_tensor(DataType::kFloat16, 0.3f))}},
             kExact, "Range float16");
}

// With start, limit and delta known on the host (shape arithmetic) Range stays there.
TEST(CudaRange, HostInputsStayOnTheHost) {
  TRT_REQUIRE_CUDA();
  ir::GraphBuilder b("range_host");
  const std::string x = b.input("x", DataType::kFloat32, {2, 5});
  b.node_with_outputs("Size", {x}, {"n"});
  b.node_with_outputs(
      "Range", {b.initializer("zero", i64({}, {0})), "n", b.initializer("one", i64({}, {1}))},
      {"idx"});
  b.node_with_outputs("Cast", {"idx"}, {"idx_f"},
                      {ir::attr_int("to", static_cast<int64_t>(DataType::kFloat32))});
  b.output("idx_f", DataType::kFloat32);
  const ir::Model m = b.build(17);
  const Tensor xv = random_tensor(DataType::kFloat32, {2, 5}, 28);
  cuda::Executor gpu(m, {});
  const Tensor got = gpu.run({{"x", xv}}).at("idx_f");
  EXPECT_EQ(got.to_float_vector(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(gpu.node_placement().at(1), "host");
}

// A shape fed as a graph input is a device value (as inside Mask R-CNN's Loop body, where it is
// computed there): the GPU fills the output, for every value dtype and without a value.
TEST(CudaConstantOfShape, DeviceShapeMatchesTheCpu) {
  TRT_REQUIRE_CUDA();
  const std::vector<std::pair<std::string, Tensor>> values = {
      {"float32", scalar_tensor(DataType::kFloat32, -2.5f)},
      {"float16", scalar_tensor(DataType::kFloat16, 0.75f)},
      {"int64", Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {-7})},
      {"int32", Tensor::from_vector<int32_t>(DataType::kInt32, {1}, {123456})},
      {"int8", Tensor::from_vector<int8_t>(DataType::kInt8, {1}, {-3})},
      {"bool", Tensor::from_vector<uint8_t>(DataType::kBool, {1}, {1})}};
  const std::vector<Shape> shapes = {{2, 3, 5}, {0, 4}, {}, {1031}};
  for (const Shape& shape : shapes) {
    const Tensor s =
        Tensor::from_vector<int64_t>(DataType::kInt64, {static_cast<int64_t>(shape.size())}, shape);
    for (const auto& [name, v] : values)
      check_case({"ConstantOfShape", {feed(s)}, {ir::attr_tensor("value", v)}}, kExact,
                 "ConstantOfShape " + shape_str(shape) + " " + name);
    check_case({"ConstantOfShape", {feed(s)}}, kExact,
               "ConstantOfShape " + shape_str(shape) + " without a value");
  }
}

}  // namespace
}  // namespace trtutils
