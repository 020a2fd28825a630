// CUDA data-movement ops vs the CPU reference: views (Reshape, Flatten, Squeeze, Unsqueeze),
// Transpose, Slice, Concat, Split, Gather, Expand, Pad; and shape arithmetic on the host
// (Shape -> Gather -> Concat -> Reshape with a symbolic batch).
#include <fmt/format.h>

#include <cmath>

#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

TEST(CudaTensor, Views) {
  TRT_REQUIRE_CUDA();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 4, 5}, 1);
  check_case({"Reshape", {feed(x), weight(i64({3}, {0, -1, 5}))}}, kExact, "Reshape");
  check_case({"Flatten", {feed(x)}, {ai("axis", 2)}}, kExact, "Flatten");
  const Tensor y = random_tensor(DataType::kFloat32, {2, 1, 4, 1}, 2);
  check_case({"Squeeze", {feed(y), weight(i64({1}, {3}))}}, kExact, "Squeeze axis");
  check_case({"Squeeze", {feed(y)}}, kExact, "Squeeze all");
  check_case({"Unsqueeze", {feed(y), weight(i64({2}, {0, -1}))}}, kExact, "Unsqueeze");
  check_case({"Identity", {feed(x)}}, kExact, "Identity");
}

TEST(CudaTensor, Transpose) {
  TRT_REQUIRE_CUDA();
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{2, 3, 4, 5}, {0, 2, 3, 1}},
      {{2, 3, 4, 5}, {3, 2, 1, 0}},
      {{7, 33}, {1, 0}},
      {{1, 197, 12, 64}, {0, 2, 1, 3}},
      {{2, 1, 5, 1}, {1, 0, 3, 2}},
      {{2, 3, 1, 4}, {0, 2, 1, 3}},
      {{2, 3, 4, 5, 6, 2}, {5, 0, 4, 1, 3, 2}},
      // the tiled batched transpose: tile edges, no batch axis, merged strided axes
      {{3, 40, 50}, {0, 2, 1}},
      {{37, 70}, {1, 0}},
      {{2, 5, 16, 17}, {0, 3, 1, 2}},
  };
  uint32_t seed = 10;
  for (const auto& [s, perm] : cases)
    for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt8})
      check_case({"Transpose", {feed(random_tensor(dt, s, seed++, -3, 3))}, {ais("perm", perm)}},
                 kExact, "Transpose " + shape_str(s) + " " + std::string(dtype_name(dt)));
}

TEST(CudaTensor, Slice) {
  TRT_REQUIRE_CUDA();
  const Tensor x = random_tensor(DataType::kFloat32, {4, 10, 6}, 20);
  struct S {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const std::vector<S> cases = {
      {{1}, {3}, {0}, {1}},  // contiguous block (a view)
      {{0}, {1}, {1}, {1}},  // class-token style x[:, 0:1]
      {{2, 1}, {9, 5}, {1, 2}, {2, 1}},
      {{-1}, {-11}, {1}, {-1}},  // reversed
      {{0, 0, 0}, {4, 10, 6}, {0, 1, 2}, {3, 4, 5}},
      {{5}, {100}, {-2}, {1}},
  };
  for (const auto& c : cases) {
    const int64_t n = static_cast<int64_t>(c.starts.size());
    check_case({"Slice",
                {feed(x), weight(i64({n}, c.starts)), weight(i64({n}, c.ends)),
                 weight(i64({n}, c.axes)), weight(i64({n}, c.steps))}},
               kExact, "Slice starts " + shape_str(c.starts));
  }
}

TEST(CudaTensor, ConcatSplitGather) {
  TRT_REQUIRE_CUDA();
  for (int64_t axis : {0, 1, 2, -1}) {
    Shape a{2, 3, 4}, b{2, 3, 4};
    const int64_t ax = axis < 0 ? axis + 3 : axis;
    b[ax] = 5;
    check_case({"Concat",
                {feed(random_tensor(DataType::kFloat32, a, 30)),
                 weight(random_tensor(DataType::kFloat32, b, 31)),
                 feed(random_tensor(DataType::kFloat32, a, 32))},
                {ai("axis", axis)}},
               kExact, "Concat axis " + std::to_string(axis));
  }
  // Rows long enough for the row-per-block copy: ViT's class token before its patch tokens, and
  // float16 rows of 670 and 938 bytes (2-byte words).
  check_case({"Concat",
              {feed(random_tensor(DataType::kFloat32, {2, 1, 768}, 34)),
               feed(random_tensor(DataType::kFloat32, {2, 196, 768}, 35))},
              {ai("axis", 1)}},
             kExact, "Concat class token");
  check_case({"Concat",
              {feed(random_tensor(DataType::kFloat16, {3, 5, 67}, 36)),
               feed(random_tensor(DataType::kFloat16, {3, 7, 67}, 37))},
              {ai("axis", 1)}},
             kExact, "Concat float16 rows");
  check_case(
      {"Split", {feed(random_tensor(DataType::kFloat32, {2, 300, 7}, 38))}, {ai("axis", 1)}, 2},
      kExact, "Split long rows");
  const Tensor x = random_tensor(DataType::kFloat32, {3, 12, 5}, 33);
  for (int64_t axis : {0, 1})
    check_case({"Split", {feed(x)}, {ai("axis", axis)}, 3}, kExact,
               "Split equal axis " + std::to_string(axis));
  check_case({"Split", {feed(x), weight(i64({2}, {5, 7}))}, {ai("axis", 1)}, 2}, kExact,
             "Split sizes");
  check_case({"Gather", {feed(x), weight(i64({}, {1}))}, {ai("axis", 1)}}, kExact,
             "Gather scalar index");
  check_case({"Gather", {feed(x), weight(i64({}, {-1}))}, {ai("axis", 0)}}, kExact,
             "Gather scalar index (view)");
  check_case({"Gather", {feed(x), feed(i64({2, 2}, {0, -1, 3, 11}))}, {ai("axis", 1)}}, kExact,
             "Gather 2-D indices from the device");
}

TEST(CudaTensor, ExpandPad) {
  TRT_REQUIRE_CUDA();
  check_case(
      {"Expand",
       {feed(random_tensor(DataType::kFloat32, {1, 1, 8}, 40)), weight(i64({3}, {4, 3, 8}))}},
      kExact, "Expand");
  check_case({"Expand",
              {feed(random_tensor(DataType::kFloat32, {3, 1}, 41)), weight(i64({3}, {2, 1, 5}))}},
             kExact, "Expand rank up");
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 5, 6}, 42);
  const Tensor pads = i64({8}, {0, 0, 1, 2, 0, 0, 3, -1});
  for (const char* mode : {"constant", "edge", "reflect"})
    check_case({"Pad", {feed(x), weight(pads), weight(f32({}, {0.5f}))}, {as("mode", mode)}},
               kExact, std::string("Pad ") + mode);
}

// Shape arithmetic runs on the host each run: y = reshape(x + b, [shape(x)[0], -1]) with a
// symbolic batch.
TEST(CudaTensor, HostShapeChainWithSymbolicBatch) {
  TRT_REQUIRE_CUDA();
  ir::GraphBuilder gb("shape_chain");
  const std::string x = gb.input("x", DataType::kFloat32, {ir::Dim("batch"), 3, 4});
  const std::string b = gb.initializer("b", random_tensor(DataType::kFloat32, {4}, 50));
  const std::string zero = gb.initializer("zero", i64({1}, {0}));
  const std::string minus1 = gb.initializer("minus1", i64({1}, {-1}));
  const std::string sum = gb.node("Add", {x, b})[0];
  const std::string shape = gb.node("Shape", {x})[0];
  const std::string n = gb.node("Gather", {shape, zero})[0];
  const std::string target = gb.node("Concat", {n, minus1}, {ai("axis", 0)})[0];
  const std::string y = gb.node("Reshape", {sum, target})[0];
  gb.output(y, DataType::kFloat32);
  const ir::Model m = gb.build(17);
  cuda::Executor ex(m, {});
  const auto placement = ex.node_placement();
  ASSERT_EQ(placement.size(), 5u);
  EXPECT_EQ(placement[0], "gpu");
  EXPECT_EQ(placement[1], "host");
  EXPECT_EQ(placement[2], "host");
  EXPECT_EQ(placement[3], "host");
  EXPECT_EQ(placement[4], "gpu");
  for (int64_t batch : {1, 3}) {
    const Tensor xv = random_tensor(DataType::kFloat32, {batch, 3, 4}, 51);
    const Tensor got = ex.run({{"x", xv}}).at(y);
    ASSERT_EQ(got.shape(), (Shape{batch, 12}));
    const Tensor& bv = m.graph.initializers.at(b);
    for (int64_t i = 0; i < got.numel(); ++i)
      EXPECT_FLOAT_EQ(got.data<float>()[i], xv.data<float>()[i] + bv.data<float>()[i % 4]);
  }
}

// TopK on the GPU against the CPU kernel, bytes equal: any axis (several slices, one slice),
// largest and smallest, K = 0 and K = n, ties by the lower index, NaN above every number, -0
// equal to +0, float16.
TEST(CudaTensor, TopKMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  Tensor ties = random_tensor(DataType::kFloat32, {3, 40, 5}, 7);
  float* t = ties.data<float>();
  for (int64_t i = 0; i < ties.numel(); ++i) t[i] = std::round(t[i] * 4.0f) / 4.0f;  // many ties
  t[3] = std::nanf("");
  t[17] = -std::nanf("");
  t[25] = -0.0f;
  t[30] = 0.0f;
  int cases = 0;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    const Tensor x = dt == DataType::kFloat32
                         ? ties
                         : Tensor::from_vector<half>(DataType::kFloat16, ties.shape(), [&] {
                             std::vector<half> h;
                             for (int64_t i = 0; i < ties.numel(); ++i)
                               h.push_back(float_to_half(t[i]));
                             return h;
                           }());
    for (int64_t axis : {0, 1, 2, -1})
      for (int64_t largest : {1, 0})
        for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{3}}) {
          const int64_t n = x.dim(static_cast<size_t>(axis < 0 ? axis + 3 : axis));
          const int64_t kk = k == 3 ? n : k;  // K = n: every element in order
          NodeCase c{"TopK",
                     {feed(x), weight(Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {kk}))},
                     {ir::attr_int("axis", axis), ir::attr_int("largest", largest)},
                     2};
          const auto want = run_cpu(c);
          const auto got = run_gpu(c);
          const std::string what =
              fmt::format("{} axis {} largest {} k {}", dtype_name(dt), axis, largest, kk);
          ASSERT_EQ(got.at(0).shape(), want.at(0).shape()) << what;
          EXPECT_EQ(std::vector<uint8_t>(got.at(1).bytes().begin(), got.at(1).bytes().end()),
                    std::vector<uint8_t>(want.at(1).bytes().begin(), want.at(1).bytes().end()))
              << "indices " << what;
          EXPECT_EQ(std::vector<uint8_t>(got.at(0).bytes().begin(), got.at(0).bytes().end()),
                    std::vector<uint8_t>(want.at(0).bytes().begin(), want.at(0).bytes().end()))
              << "values " << what;
          ++cases;
        }
  }
  EXPECT_EQ(cases, 48);
}

// An op without a GPU kernel runs on the CPU inside the GPU executor; without fallback (an
// engine built with --no_fallback) it is refused at construction, naming the node.
TEST(CudaTensor, OpsWithoutAGpuKernelFallBackOrAreRefused) {
  TRT_REQUIRE_CUDA();
  NodeCase c{"Cosh", {feed(random_tensor(DataType::kFloat32, {2, 5}, 1))}};
  cuda::Executor ex(make_model(c), {});
  EXPECT_EQ(ex.node_placement().at(0), "cpu (fallback)");
  const auto got = ex.run({{"in0", c.inputs[0].value}});
  expect_close(got.at("out0"), run_cpu(c).at(0), {0, 0}, "Cosh (CPU fallback)");
  cuda::ExecutorOptions strict;
  strict.allow_fallback = false;
  try {
    cuda::Executor refused(make_model(c), strict);
    FAIL() << "expected Error(kNotSupported)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
    EXPECT_NE(std::string(e.what()).find("Cosh"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trtutils
