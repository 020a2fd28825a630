// CUDA elementwise kernels vs the CPU reference: unary ops and activations, broadcasting binary
// ops, comparisons/logic, Where, Cast, variadic ops, PRelu, BatchNormalization.
#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

// 3 x 1000: not a multiple of the block size, so the grid-stride tails are exercised.
const Shape kShape{3, 1000};

TEST(CudaUnary, MatchesCpu) {
  TRT_REQUIRE_CUDA();
  struct U {
    const char* op;
    std::vector<ir::Attribute> attrs;
    float lo, hi;
  };
  const std::vector<U> cases = {
      {"Relu", {}, -3, 3},
      {"Sigmoid", {}, -8, 8},
      {"Tanh", {}, -3, 3},
      {"Erf", {}, -3, 3},
      {"Sqrt", {}, 0.01f, 9},
      {"Exp", {}, -5, 5},
      {"Log", {}, 0.01f, 9},
      {"Abs", {}, -3, 3},
      {"Neg", {}, -3, 3},
      {"Reciprocal", {}, 0.5f, 3},
      {"Floor", {}, -3, 3},
      {"Ceil", {}, -3, 3},
      {"Round", {}, -3, 3},
      {"Sin", {}, -3, 3},
      {"Cos", {}, -3, 3},
      {"Sign", {}, -3, 3},
      {"HardSwish", {}, -4, 4},
      {"Softplus", {}, -5, 5},
      {"Softsign", {}, -3, 3},
      {"Mish", {}, -3, 3},
      {"Identity", {}, -3, 3},
      {"HardSigmoid", {af("alpha", 0.3f), af("beta", 0.4f)}, -4, 4},
      {"LeakyRelu", {af("alpha", 0.1f)}, -3, 3},
      {"Elu", {af("alpha", 0.7f)}, -3, 3},
      {"Selu", {}, -3, 3},
      {"Gelu", {}, -4, 4},
      {"Gelu", {as("approximate", "tanh")}, -4, 4},
  };
  uint32_t seed = 1;
  for (const auto& u : cases) {
    for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
      NodeCase c{u.op, {feed(random_tensor(dt, kShape, seed++, u.lo, u.hi))}, u.attrs};
      if (std::string(u.op) == "Gelu") c.opset = 20;
      check_case(c, dt == DataType::kFloat32 ? kFp32Math : kFp16,
                 std::string(u.op) + " " + std::string(dtype_name(dt)));
    }
  }
}

TEST(CudaUnary, ClipAttributesAndInputs) {
  TRT_REQUIRE_CUDA();
  const Tensor x = random_tensor(DataType::kFloat32, kShape, 7, -3, 3);
  check_case({"Clip", {feed(x)}, {af("min", -0.5f), af("max", 1.5f)}, 1, "", 6}, kExact,
             "Clip opset 6");
  check_case({"Clip", {feed(x), weight(f32({}, {0.0f})), weight(f32({}, {6.0f}))}}, kExact,
             "Clip min max inputs");
  check_case({"Clip", {feed(x), omitted(), weight(f32({}, {0.25f}))}}, kExact, "Clip max only");
  check_case({"Clip", {feed(x)}}, kExact, "Clip no bounds");
}

TEST(CudaBinary, BroadcastShapes) {
  TRT_REQUIRE_CUDA();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 5, 7}, {2, 3, 5, 7}}, {{2, 3, 5, 7}, {7}},       {{2, 3, 5, 7}, {3, 1, 1}},
      {{2, 1, 5, 1}, {1, 3, 1, 7}}, {{2, 3, 5, 7}, {}},        {{}, {4, 33}},
      {{1, 197, 768}, {197, 768}},  {{8, 1, 1}, {1, 1, 1, 1}},
  };
  uint32_t seed = 100;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (const auto& [sa, sb] : shapes) {
      for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
        Tensor a = random_tensor(dt, sa, seed++, -2, 2);
        Tensor b = random_tensor(dt, sb, seed++, 0.5f, 2);  // no zero divisors
        check_case({op, {feed(a), feed(b)}}, dt == DataType::kFloat32 ? kFp32Math : kFp16,
                   std::string(op) + " " + shape_str(sa) + " " + shape_str(sb) + " " +
                       std::string(dtype_name(dt)));
      }
      Tensor a = random_tensor(DataType::kFloat32, sa, seed++, -2, 2);
      Tensor b = random_tensor(DataType::kFloat32, sb, seed++, 0.5f, 2);
      check_case({op, {feed(a), weight(b)}}, kFp32Math,
                 std::string(op) + " with a constant operand " + shape_str(sb));
    }
  }
}

TEST(CudaBinary, IntegersPowAndComparisons) {
  TRT_REQUIRE_CUDA();
  const Shape sa{4, 5, 6}, sb{5, 1};
  uint32_t seed = 300;
  for (DataType dt : {DataType::kInt32, DataType::kInt64}) {
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
      const Tensor a = random_tensor(dt, sa, seed++, -100, 100);
      const Tensor b = random_tensor(dt, sb, seed++, 1, 9);
      check_case({op, {feed(a), feed(b)}}, kExact,
                 std::string(op) + " " + std::string(dtype_name(dt)));
    }
  }
  const Tensor base = random_tensor(DataType::kFloat32, sa, seed++, 0.1f, 3);
  check_case({"Pow", {feed(base), weight(f32({}, {2.0f}))}}, kFp32Math, "Pow square");
  check_case({"Pow", {feed(base), feed(random_tensor(DataType::kFloat32, sb, seed++, -2, 2))}},
             kFp32Math, "Pow broadcast");
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    const Tensor a = random_tensor(DataType::kInt64, sa, seed++, -3, 3);
    const Tensor b = random_tensor(DataType::kInt64, sb, seed++, -3, 3);
    check_case({op, {feed(a), feed(b)}}, kExact, std::string(op) + " int64");
    const Tensor fa = random_tensor(DataType::kFloat32, sa, seed++, -3, 3);
    check_case({op, {feed(fa), feed(fa)}}, kExact, std::string(op) + " float32 self");
  }
  Tensor p(DataType::kBool, {2, 3}), q(DataType::kBool, {3});
  for (int64_t i = 0; i < 6; ++i) p.data<bool>()[i] = (i % 2) == 0;
  for (int64_t i = 0; i < 3; ++i) q.data<bool>()[i] = i == 1;
  for (const char* op : {"And", "Or", "Xor"}) check_case({op, {feed(p), feed(q)}}, kExact, op);
}

TEST(CudaBinary, WhereVariadicPRelu) {
  TRT_REQUIRE_CUDA();
  Tensor cond(DataType::kBool, {2, 1, 4});
  for (int64_t i = 0; i < 8; ++i) cond.data<bool>()[i] = (i * 7) % 3 == 0;
  check_case({"Where",
              {feed(cond), feed(random_tensor(DataType::kFloat32, {1, 3, 4}, 1)),
               feed(random_tensor(DataType::kFloat32, {}, 2))}},
             kExact, "Where");
  const Shape s{2, 3, 4};
  for (const char* op : {"Sum", "Mean", "Max", "Min"})
    check_case({op,
                {feed(random_tensor(DataType::kFloat32, s, 3)),
                 feed(random_tensor(DataType::kFloat32, {4}, 4)),
                 feed(random_tensor(DataType::kFloat32, {3, 1}, 5))}},
               kFp32Math, op);
  check_case({"PRelu",
              {feed(random_tensor(DataType::kFloat32, {2, 3, 5, 5}, 6)),
               weight(random_tensor(DataType::kFloat32, {3, 1, 1}, 7))}},
             kFp32Math, "PRelu per channel");
}

TEST(CudaCast, Conversions) {
  TRT_REQUIRE_CUDA();
  const Tensor f = random_tensor(DataType::kFloat32, {5, 77}, 11, -300, 300);
  const std::vector<DataType> to = {
      DataType::kFloat16,      DataType::kBFloat16,  DataType::kInt32, DataType::kInt64,
      DataType::kInt8,         DataType::kUInt8,     DataType::kBool,  DataType::kFloat64,
      DataType::kFloat8E4M3FN, DataType::kFloat8E5M2};
  for (DataType t : to)
    check_case({"Cast", {feed(f)}, {ai("to", static_cast<int64_t>(t))}, 1, "", 19}, kExact,
               "Cast float32 -> " + std::string(dtype_name(t)));
  const Tensor i = random_tensor(DataType::kInt64, {3, 50}, 12, -1000, 1000);
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32, DataType::kBool})
    check_case({"Cast", {feed(i)}, {ai("to", static_cast<int64_t>(t))}}, kExact,
               "Cast int64 -> " + std::string(dtype_name(t)));
  const Tensor h = random_tensor(DataType::kFloat16, {3, 50}, 13, -10, 10);
  check_case({"Cast", {feed(h)}, {ai("to", static_cast<int64_t>(DataType::kFloat32))}}, kExact,
             "Cast float16 -> float32");
}

TEST(CudaNorm, BatchNormalization) {
  TRT_REQUIRE_CUDA();
  const int64_t c = 5;
  check_case({"BatchNormalization",
              {feed(random_tensor(DataType::kFloat32, {2, c, 7, 9}, 21)),
               weight(random_tensor(DataType::kFloat32, {c}, 22)),
               weight(random_tensor(DataType::kFloat32, {c}, 23)),
               weight(random_tensor(DataType::kFloat32, {c}, 24)),
               weight(random_tensor(DataType::kFloat32, {c}, 25, 0.5f, 2))},
              {af("epsilon", 1e-3f)}},
             kFp32, "BatchNormalization");
}

}  // namespace
}  // namespace trtutils
