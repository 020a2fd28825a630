// Elementwise op family: CPU kernels through cpu::run_node and shape inference through the op
// registry. Values are checked against hand-computed results and a naive broadcast reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/elementwise_common.h"
#include "core/check.h"
#include "ops/elementwise_test_util.h"

namespace trtutils {
namespace {

using namespace ew_testing;  // NOLINT

// ---- broadcasting ------------------------------------------------------------------------------
void expect_add_matches_naive(const Shape& a_shape, const Shape& b_shape, const Shape& want) {
  const Tensor a = random_f32(a_shape, 1);
  const Tensor b = random_f32(b_shape, 2);
  const Tensor y = run1(make_node("Add", 2), 17, {a, b});
  ASSERT_EQ(y.shape(), want);
  ASSERT_EQ(y.dtype(), DataType::kFloat32);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float ref = a.data<float>()[broadcast_source(want, a_shape, i)] +
                      b.data<float>()[broadcast_source(want, b_shape, i)];
    ASSERT_EQ(y.data<float>()[i], ref) << "element " << i;
  }
}

TEST(ElementwiseBroadcast, ShapesFromTheBrief) {
  expect_add_matches_naive({2, 3, 4}, {3, 1}, {2, 3, 4});
  expect_add_matches_naive({1}, {2, 3}, {2, 3});
  expect_add_matches_naive({}, {2, 3}, {2, 3});
  expect_add_matches_naive({2, 3}, {}, {2, 3});
  expect_add_matches_naive({}, {}, {});
  expect_add_matches_naive({2, 3, 4}, {2, 3, 4}, {2, 3, 4});
  expect_add_matches_naive({2, 1, 4}, {1, 3, 1}, {2, 3, 4});
  expect_add_matches_naive({5, 1, 1, 7}, {1, 6, 2, 1}, {5, 6, 2, 7});
  expect_add_matches_naive({0, 3}, {3}, {0, 3});
}

TEST(ElementwiseBroadcast, LargeTensorsUseTheParallelPathCorrectly) {
  expect_add_matches_naive({64, 128, 33}, {128, 1}, {64, 128, 33});
  expect_add_matches_naive({3, 100000}, {1}, {3, 100000});
  expect_add_matches_naive({2, 70000}, {2, 70000}, {2, 70000});
  expect_add_matches_naive({70000, 2}, {70000, 1}, {70000, 2});
  expect_add_matches_naive({1, 3, 200, 300}, {3, 1, 1}, {1, 3, 200, 300});
}

TEST(ElementwiseBroadcast, IncompatibleShapesThrowNamingTheNode) {
  const ir::Node node = make_node("Mul", 2);
  try {
    run1(node, 17, {random_f32({2, 3}, 1), random_f32({4}, 2)});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(node.describe()), std::string::npos) << e.what();
  }
}

TEST(ElementwiseBroadcast, MixedDtypesAreRejected) {
  EXPECT_THROW(run1(make_node("Add", 2), 17, {f32({1}, {1}), i64({1}, {1})}), Error);
}

// ---- binary arithmetic -------------------------------------------------------------------------
TEST(ElementwiseBinary, FloatArithmeticKnownValues) {
  const Tensor a = f32({4}, {1, -2, 3, 8});
  const Tensor b = f32({4}, {2, 4, -1, 0.5f});
  EXPECT_EQ(values(run1(make_node("Add", 2), 14, {a, b})), (std::vector<float>{3, 2, 2, 8.5f}));
  EXPECT_EQ(values(run1(make_node("Sub", 2), 14, {a, b})), (std::vector<float>{-1, -6, 4, 7.5f}));
  EXPECT_EQ(values(run1(make_node("Mul", 2), 14, {a, b})), (std::vector<float>{2, -8, -3, 4}));
  EXPECT_EQ(values(run1(make_node("Div", 2), 14, {a, b})),
            (std::vector<float>{0.5f, -0.5f, -3, 16}));
  EXPECT_EQ(values(run1(make_node("Pow", 2), 15, {a, f32({}, {2})})),
            (std::vector<float>{1, 4, 9, 64}));
}

TEST(ElementwiseBinary, IntegerDivTruncatesAndRejectsZero) {
  const Tensor a = i32({4}, {7, -7, 7, std::numeric_limits<int32_t>::min()});
  const Tensor b = i32({4}, {2, 2, -2, -1});
  const Tensor y = run1(make_node("Div", 2), 14, {a, b});
  ASSERT_EQ(y.dtype(), DataType::kInt32);
  EXPECT_EQ(y.to_int64_vector(),
            (std::vector<int64_t>{3, -3, -3, std::numeric_limits<int32_t>::min()}));  // wraps
  EXPECT_THROW(run1(make_node("Div", 2), 14, {a, i32({1}, {0})}), Error);
}

TEST(ElementwiseBinary, IntegerTypesWrapAndBroadcast) {
  const Tensor a = Tensor::from_vector<int8_t>(DataType::kInt8, {2, 2}, {100, -100, 5, 6});
  const Tensor b = Tensor::from_vector<int8_t>(DataType::kInt8, {2, 1}, {100, 2});
  const Tensor y = run1(make_node("Add", 2), 14, {a, b});
  EXPECT_EQ(y.to_int64_vector(), (std::vector<int64_t>{-56, 0, 7, 8}));
  const Tensor u = Tensor::from_vector<uint8_t>(DataType::kUInt8, {3}, {1, 200, 255});
  const Tensor v = Tensor::from_vector<uint8_t>(DataType::kUInt8, {1}, {2});
  EXPECT_EQ(run1(make_node("Sub", 2), 14, {u, v}).to_int64_vector(),
            (std::vector<int64_t>{255, 198, 253}));
  EXPECT_EQ(run1(make_node("Mul", 2), 14, {u, v}).to_int64_vector(),
            (std::vector<int64_t>{2, 144, 254}));
  const Tensor big = i64({2}, {std::numeric_limits<int64_t>::max(), 3});
  EXPECT_EQ(run1(make_node("Add", 2), 14, {big, i64({}, {1})}).to_int64_vector(),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 4}));
  for (DataType t : {DataType::kUInt16, DataType::kInt16, DataType::kUInt32, DataType::kUInt64}) {
    Tensor x(t, {3});
    Tensor z(t, {});
    for (int i = 0; i < 3; ++i) {
      if (t == DataType::kUInt16) x.data<uint16_t>()[i] = static_cast<uint16_t>(i + 10);
      if (t == DataType::kInt16) x.data<int16_t>()[i] = static_cast<int16_t>(i + 10);
      if (t == DataType::kUInt32) x.data<uint32_t>()[i] = static_cast<uint32_t>(i + 10);
      if (t == DataType::kUInt64) x.data<uint64_t>()[i] = static_cast<uint64_t>(i + 10);
    }
    if (t == DataType::kUInt16) z.data<uint16_t>()[0] = 3;
    if (t == DataType::kInt16) z.data<int16_t>()[0] = 3;
    if (t == DataType::kUInt32) z.data<uint32_t>()[0] = 3;
    if (t == DataType::kUInt64) z.data<uint64_t>()[0] = 3;
    const Tensor q = run1(make_node("Div", 2), 14, {x, z});
    EXPECT_EQ(q.dtype(), t);
    EXPECT_EQ(q.to_int64_vector(), (std::vector<int64_t>{3, 3, 4})) << dtype_name(t);
  }
}

TEST(ElementwiseBinary, HalfAndBFloat16ComputeInFloat) {
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    Tensor a(t, {3}), b(t, {1});
    const float av[3] = {1.5f, -2.0f, 0.25f};
    for (int i = 0; i < 3; ++i) {
      if (t == DataType::kFloat16) a.data<half>()[i] = float_to_half(av[i]);
      if (t == DataType::kBFloat16) a.data<bfloat16>()[i] = float_to_bfloat16(av[i]);
    }
    if (t == DataType::kFloat16) b.data<half>()[0] = float_to_half(2.0f);
    if (t == DataType::kBFloat16) b.data<bfloat16>()[0] = float_to_bfloat16(2.0f);
    const Tensor y = run1(make_node("Mul", 2), 14, {a, b});
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(values(y), (std::vector<float>{3.0f, -4.0f, 0.5f}));
    const Tensor c = run1(make_node("Less", 2), 13, {a, b});
    EXPECT_EQ(c.dtype(), DataType::kBool);
    EXPECT_EQ(c.to_int64_vector(), (std::vector<int64_t>{1, 1, 1}));
  }
}

TEST(ElementwiseBinary, PowMixedTypes) {
  // float base, int exponent
  EXPECT_EQ(values(run1(make_node("Pow", 2), 15, {f32({3}, {1, 2, 3}), i64({3}, {4, 5, 6})})),
            (std::vector<float>{1, 32, 729}));
  // int base, float exponent (result truncated to the base type)
  const Tensor y = run1(make_node("Pow", 2), 15, {i32({3}, {1, 2, 4}), f32({3}, {1, 2, 0.5f})});
  EXPECT_EQ(y.dtype(), DataType::kInt32);
  EXPECT_EQ(y.to_int64_vector(), (std::vector<int64_t>{1, 4, 2}));
  // int base, int exponent, negative exponents truncate
  const Tensor z =
      run1(make_node("Pow", 2), 15, {i64({4}, {2, -3, 2, -1}), i32({4}, {10, 3, -1, -3})});
  EXPECT_EQ(z.to_int64_vector(), (std::vector<int64_t>{1024, -27, 0, -1}));
}

TEST(ElementwiseBinary, ModFollowsFmodAttribute) {
  const Tensor a = i32({4}, {-4, 7, 5, -7});
  const Tensor b = i32({4}, {3, -3, 3, -3});
  EXPECT_EQ(run1(make_node("Mod", 2), 13, {a, b}).to_int64_vector(),
            (std::vector<int64_t>{2, -2, 2, -1}));  // sign of the divisor
  EXPECT_EQ(run1(make_node("Mod", 2, {attr_i("fmod", 1)}), 13, {a, b}).to_int64_vector(),
            (std::vector<int64_t>{-1, 1, 2, -1}));  // sign of the dividend
  EXPECT_EQ(values(run1(make_node("Mod", 2, {attr_i("fmod", 1)}), 13,
                        {f32({2}, {-4.5f, 7.5f}), f32({1}, {2})})),
            (std::vector<float>{-0.5f, 1.5f}));
  EXPECT_THROW(run1(make_node("Mod", 2), 13, {f32({1}, {1}), f32({1}, {1})}), Error);
  EXPECT_THROW(run1(make_node("Mod", 2), 13, {a, i32({1}, {0})}), Error);
}

TEST(ElementwiseBinary, ComparisonsAndLogic) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3}, {2, 2, 7});
  auto cmp = [&](const char* op) { return run1(make_node(op, 2), 16, {a, b}).to_int64_vector(); };
  EXPECT_EQ(cmp("Equal"), (std::vector<int64_t>{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(cmp("Less"), (std::vector<int64_t>{1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(cmp("Greater"), (std::vector<int64_t>{0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(cmp("LessOrEqual"), (std::vector<int64_t>{1, 1, 1, 0, 0, 1}));
  EXPECT_EQ(cmp("GreaterOrEqual"), (std::vector<int64_t>{0, 1, 0, 1, 1, 0}));
  EXPECT_EQ(run1(make_node("Equal", 2), 16, {i64({3}, {1, 2, 3}), i64({}, {2})}).dtype(),
            DataType::kBool);
  const Tensor p = boolean({4}, {true, true, false, false});
  const Tensor q = boolean({4}, {true, false, true, false});
  EXPECT_EQ(run1(make_node("And", 2), 7, {p, q}).to_int64_vector(),
            (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(run1(make_node("Or", 2), 7, {p, q}).to_int64_vector(),
            (std::vector<int64_t>{1, 1, 1, 0}));
  EXPECT_EQ(run1(make_node("Xor", 2), 7, {p, q}).to_int64_vector(),
            (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(run1(make_node("Not", 1), 7, {p}).to_int64_vector(),
            (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(run1(make_node("Equal", 2), 11, {p, q}).to_int64_vector(),
            (std::vector<int64_t>{1, 0, 0, 1}));
}

TEST(ElementwiseBinary, WhereBroadcastsAllThree) {
  const Tensor c = boolean({2, 1}, {true, false});
  const Tensor x = i64({3}, {1, 2, 3});
  const Tensor y = i64({}, {-1});
  const Tensor out = run1(make_node("Where", 3), 16, {c, x, y});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(out.to_int64_vector(), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
  const Tensor f = run1(make_node("Where", 3), 16,
                        {boolean({2}, {false, true}), f32({2}, {1, 2}), f32({2}, {3, 4})});
  EXPECT_EQ(values(f), (std::vector<float>{3, 2}));
}

TEST(ElementwiseBinary, PReluBroadcastsSlopeOverChannels) {
  const Tensor x = f32({1, 2, 1, 2}, {-1, 2, -3, 4});
  const Tensor slope = f32({2, 1, 1}, {0.5f, 0.25f});
  EXPECT_EQ(values(run1(make_node("PRelu", 2), 16, {x, slope})),
            (std::vector<float>{-0.5f, 2, -0.75f, 4}));
  EXPECT_THROW(run1(make_node("PRelu", 2), 16, {f32({2}, {1, 2}), f32({2, 2}, {1, 2, 3, 4})}),
               Error);
  // Legacy per-channel slope [C] (opset <= 6 models): applied along axis 1.
  const Tensor y = run1(make_node("PRelu", 2), 7,
                        {f32({1, 2, 3}, {-1, -1, -1, -2, -2, -2}), f32({2}, {0.5f, 0.25f})});
  EXPECT_EQ(values(y), (std::vector<float>{-0.5f, -0.5f, -0.5f, -0.5f, -0.5f, -0.5f}));
  const auto inferred = infer(make_node("PRelu", 2), 7,
                              {InferInput{DataType::kFloat32, sym({ir::Dim("N"), 2, 3})},
                               InferInput{DataType::kFloat32, sym({2})}});
  EXPECT_EQ(*inferred.shape, sym({ir::Dim("N"), 2, 3}));
}

TEST(ElementwiseVariadic, SumMeanMaxMin) {
  const Tensor a = f32({3}, {1, 2, 3});
  const Tensor b = f32({1}, {4});
  const Tensor c = f32({2, 1}, {0, 10});
  EXPECT_EQ(values(run1(make_node("Sum", 3), 13, {a, b, c})),
            (std::vector<float>{5, 6, 7, 15, 16, 17}));
  EXPECT_EQ(values(run1(make_node("Mean", 2), 13, {a, b})), (std::vector<float>{2.5f, 3, 3.5f}));
  EXPECT_EQ(values(run1(make_node("Max", 3), 13, {a, b, c})),
            (std::vector<float>{4, 4, 4, 10, 10, 10}));
  EXPECT_EQ(values(run1(make_node("Min", 2), 13, {a, b})), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(values(run1(make_node("Sum", 1), 13, {a})), (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(std::isnan(values(run1(make_node("Max", 2), 13, {f32({1}, {NAN}), b}))[0]));
  EXPECT_EQ(run1(make_node("Max", 2), 13, {i64({2}, {-5, 5}), i64({1}, {0})}).to_int64_vector(),
            (std::vector<int64_t>{0, 5}));
}

// ---- unary -----------------------------------------------------------------------------------
float unary1(const char* op, float v, const std::vector<ir::Attribute>& attrs = {},
             int64_t opset = 17) {
  return values(run1(make_node(op, 1, attrs), opset, {f32({1}, {v})}))[0];
}

TEST(ElementwiseUnary, MathKnownValues) {
  EXPECT_FLOAT_EQ(unary1("Sqrt", 9), 3);
  EXPECT_FLOAT_EQ(unary1("Exp", 1), std::exp(1.0f));
  EXPECT_FLOAT_EQ(unary1("Log", 2), std::log(2.0f));
  EXPECT_FLOAT_EQ(unary1("Reciprocal", 4), 0.25f);
  EXPECT_FLOAT_EQ(unary1("Neg", 4), -4);
  EXPECT_FLOAT_EQ(unary1("Abs", -4), 4);
  EXPECT_FLOAT_EQ(unary1("Floor", -1.5f), -2);
  EXPECT_FLOAT_EQ(unary1("Ceil", -1.5f), -1);
  EXPECT_FLOAT_EQ(unary1("Sin", 0.5f), std::sin(0.5f));
  EXPECT_FLOAT_EQ(unary1("Cos", 0.5f), std::cos(0.5f));
  EXPECT_FLOAT_EQ(unary1("Tanh", 0.5f), std::tanh(0.5f));
  EXPECT_FLOAT_EQ(unary1("Erf", 0.5f), std::erf(0.5f));
  EXPECT_FLOAT_EQ(unary1("Sign", -3), -1);
  EXPECT_FLOAT_EQ(unary1("Sign", 0), 0);
  EXPECT_EQ(
      values(run1(make_node("Round", 1), 11, {f32({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f})})),
      (std::vector<float>{0, 2, 2, -0, -2, 2}));
}

TEST(ElementwiseUnary, ActivationsKnownValues) {
  EXPECT_FLOAT_EQ(unary1("Relu", -1), 0);
  EXPECT_FLOAT_EQ(unary1("Relu", 2), 2);
  EXPECT_FLOAT_EQ(unary1("LeakyRelu", -1), -0.01f);
  EXPECT_FLOAT_EQ(unary1("LeakyRelu", -1, {attr_f("alpha", 0.1f)}), -0.1f);
  EXPECT_FLOAT_EQ(unary1("Elu", -1), std::expm1(-1.0f));
  EXPECT_FLOAT_EQ(unary1("HardSigmoid", 1), 0.7f);
  EXPECT_FLOAT_EQ(unary1("HardSigmoid", 10), 1);
  EXPECT_FLOAT_EQ(unary1("HardSigmoid", 1, {attr_f("alpha", 0.5f), attr_f("beta", 0.1f)}), 0.6f);
  EXPECT_FLOAT_EQ(unary1("HardSwish", 1), 1.0f * (1.0f / 6 + 0.5f));
  EXPECT_FLOAT_EQ(unary1("HardSwish", -4), 0);
  EXPECT_FLOAT_EQ(unary1("Softplus", 1), std::log(1 + std::exp(1.0f)));
  EXPECT_FLOAT_EQ(unary1("Softplus", 100), 100);  // no overflow
  EXPECT_FLOAT_EQ(unary1("Sigmoid", 0), 0.5f);
  EXPECT_FLOAT_EQ(unary1("Sigmoid", 2), 1 / (1 + std::exp(-2.0f)));
}

TEST(ElementwiseUnary, SigmoidIsStableForLargeMagnitudes) {
  const Tensor y = run1(make_node("Sigmoid", 1), 13, {f32({4}, {-1000, -88.8f, 88.8f, 1000})});
  const auto v = values(y);
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_GT(v[1], 0.0f);
  EXPECT_LT(v[1], 1e-38f);
  EXPECT_EQ(v[2], 1.0f);
  EXPECT_EQ(v[3], 1.0f);
  for (float f : v) EXPECT_FALSE(std::isnan(f));
}

TEST(ElementwiseUnary, GeluExactAndTanh) {
  for (float x : {-3.0f, -0.5f, 0.0f, 0.7f, 2.0f}) {
    const double exact = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    EXPECT_NEAR(unary1("Gelu", x, {}, 20), exact, 1e-6);
    const double t = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(unary1("Gelu", x, {attr_s("approximate", "tanh")}, 20), t, 1e-6);
  }
  EXPECT_THROW(unary1("Gelu", 1, {attr_s("approximate", "fast")}, 20), Error);
}

TEST(ElementwiseUnary, IntegerUnaryOps) {
  const Tensor a = i32({3}, {-5, 0, 7});
  EXPECT_EQ(run1(make_node("Abs", 1), 13, {a}).to_int64_vector(), (std::vector<int64_t>{5, 0, 7}));
  EXPECT_EQ(run1(make_node("Neg", 1), 13, {a}).to_int64_vector(), (std::vector<int64_t>{5, 0, -7}));
  EXPECT_EQ(run1(make_node("Relu", 1), 14, {a}).to_int64_vector(), (std::vector<int64_t>{0, 0, 7}));
  EXPECT_EQ(run1(make_node("Sign", 1), 13, {a}).to_int64_vector(),
            (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_THROW(run1(make_node("Sqrt", 1), 13, {a}), Error);
  try {
    run1(make_node("Exp", 1), 13, {a});
    FAIL() << "Exp on int32 should be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
  }
}

TEST(ElementwiseUnary, ClipAttributeAndInputForms) {
  const Tensor x = f32({5}, {-3, -1, 0, 1, 3});
  // opset 6: attributes
  EXPECT_EQ(values(run1(make_node("Clip", 1, {attr_f("min", -1), attr_f("max", 2)}), 6, {x})),
            (std::vector<float>{-1, -1, 0, 1, 2}));
  EXPECT_EQ(values(run1(make_node("Clip", 1, {attr_f("max", 0)}), 6, {x})),
            (std::vector<float>{-3, -1, 0, 0, 0}));
  // opset 13: optional inputs
  EXPECT_EQ(values(run1(make_node("Clip", 3), 13, {x, f32({}, {-1}), f32({}, {2})})),
            (std::vector<float>{-1, -1, 0, 1, 2}));
  EXPECT_EQ(values(run1(make_node("Clip", 3, {}, {1}), 13, {x, Tensor(), f32({}, {0})})),
            (std::vector<float>{-3, -1, 0, 0, 0}));
  EXPECT_EQ(values(run1(make_node("Clip", 2), 13, {x, f32({}, {0})})),
            (std::vector<float>{0, 0, 0, 1, 3}));
  EXPECT_EQ(values(run1(make_node("Clip", 1), 13, {x})), values(x));
  // min > max: everything becomes max
  EXPECT_EQ(values(run1(make_node("Clip", 3), 13, {x, f32({}, {2}), f32({}, {1})})),
            (std::vector<float>{1, 1, 1, 1, 1}));
  // integers (opset 12+)
  const Tensor xi = Tensor::from_vector<int8_t>(DataType::kInt8, {3}, {-100, 5, 100});
  const Tensor lo = Tensor::from_vector<int8_t>(DataType::kInt8, {}, {-10});
  EXPECT_EQ(run1(make_node("Clip", 2), 13, {xi, lo}).to_int64_vector(),
            (std::vector<int64_t>{-10, 5, 100}));
  EXPECT_THROW(run1(make_node("Clip", 2), 13, {x, f32({2}, {0, 1})}), Error);
}

TEST(ElementwiseUnary, IdentityCopies) {
  const Tensor x = i64({2}, {4, 5});
  const Tensor y = run1(make_node("Identity", 1), 16, {x});
  EXPECT_EQ(y.to_int64_vector(), x.to_int64_vector());
  EXPECT_NE(y.raw(), x.raw());
}

TEST(ElementwiseUnary, IsNaNIsInf) {
  const Tensor x = f32({4}, {NAN, INFINITY, -INFINITY, 1});
  EXPECT_EQ(run1(make_node("IsNaN", 1), 13, {x}).to_int64_vector(),
            (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(run1(make_node("IsInf", 1, {attr_i("detect_negative", 0)}), 10, {x}).to_int64_vector(),
            (std::vector<int64_t>{0, 1, 0, 0}));
}

TEST(ElementwiseUnary, LargeTensorParallelMatchesSerial) {
  const Tensor x = random_f32({300000}, 7, -20, 20);
  const Tensor y = run1(make_node("Sigmoid", 1), 13, {x});
  for (int64_t i = 0; i < x.numel(); i += 997) {
    const double v = x.data<float>()[i];
    EXPECT_NEAR(y.data<float>()[i], 1 / (1 + std::exp(-v)), 1e-6);
  }
}

// ---- shape inference ---------------------------------------------------------------------------
TEST(ElementwiseInfer, BroadcastKeepsSymbolicDims) {
  const auto out = infer(make_node("Add", 2), 17,
                         {InferInput{DataType::kFloat32, sym({ir::Dim("N"), 3, 1})},
                          InferInput{DataType::kFloat32, sym({1, 4})}});
  EXPECT_EQ(out.dtype, DataType::kFloat32);
  ASSERT_TRUE(out.shape.has_value());
  EXPECT_EQ(*out.shape, sym({ir::Dim("N"), 3, 4}));
  const auto cmp = infer(
      make_node("Less", 2), 17,
      {InferInput{DataType::kInt64, sym({ir::Dim("N")})}, InferInput{DataType::kInt64, sym({})}});
  EXPECT_EQ(cmp.dtype, DataType::kBool);
  EXPECT_EQ(*cmp.shape, sym({ir::Dim("N")}));
  const auto unknown = infer(
      make_node("Mul", 2), 17,
      {InferInput{DataType::kFloat32, std::nullopt}, InferInput{DataType::kFloat32, sym({2})}});
  EXPECT_FALSE(unknown.shape.has_value());
  EXPECT_THROW(infer(make_node("Add", 2), 17,
                     {InferInput{DataType::kFloat32, sym({2, 3})},
                      InferInput{DataType::kFloat32, sym({4})}}),
               Error);
}

TEST(ElementwiseInfer, WhereCastClipPReluUnary) {
  const auto w =
      infer(make_node("Where", 3), 16,
            {InferInput{DataType::kBool, sym({ir::Dim("B"), 1})},
             InferInput{DataType::kInt64, sym({5})}, InferInput{DataType::kInt64, sym({})}});
  EXPECT_EQ(w.dtype, DataType::kInt64);
  EXPECT_EQ(*w.shape, sym({ir::Dim("B"), 5}));
  const auto c = infer(make_node("Cast", 1, {attr_i("to", 10)}), 13,
                       {InferInput{DataType::kFloat32, sym({ir::Dim("B"), 3})}});
  EXPECT_EQ(c.dtype, DataType::kFloat16);
  EXPECT_EQ(*c.shape, sym({ir::Dim("B"), 3}));
  const auto cl = infer(make_node("Clip", 3, {}, {1}), 13,
                        {InferInput{DataType::kFloat32, sym({2})}, std::nullopt,
                         InferInput{DataType::kFloat32, sym({})}});
  EXPECT_EQ(*cl.shape, sym({2}));
  const auto p = infer(make_node("PRelu", 2), 16,
                       {InferInput{DataType::kFloat32, sym({ir::Dim("N"), 8, 4, 4})},
                        InferInput{DataType::kFloat32, sym({8, 1, 1})}});
  EXPECT_EQ(*p.shape, sym({ir::Dim("N"), 8, 4, 4}));
  const auto g = infer(make_node("Gelu", 1), 20, {InferInput{DataType::kBFloat16, sym({3})}});
  EXPECT_EQ(g.dtype, DataType::kBFloat16);
  const auto n = infer(make_node("IsNaN", 1), 20, {InferInput{DataType::kFloat32, sym({3})}});
  EXPECT_EQ(n.dtype, DataType::kBool);
  const auto s = infer(
      make_node("Sum", 3), 13,
      {InferInput{DataType::kFloat32, sym({3, 1})}, InferInput{DataType::kFloat32, sym({1, 4})},
       InferInput{DataType::kFloat32, sym({4})}});
  EXPECT_EQ(*s.shape, sym({3, 4}));
}

// ---- Cast
// ----------------------------------------------------------------------------------------
Tensor cast(const Tensor& x, DataType to, int64_t opset = 19,
            std::optional<int64_t> saturate = {}) {
  std::vector<ir::Attribute> attrs = {attr_i("to", static_cast<int64_t>(to))};
  if (saturate) attrs.push_back(attr_i("saturate", *saturate));
  return run1(make_node("Cast", 1, attrs), opset, {x});
}

TEST(CastTest, Fp32Fp16RoundTrip) {
  const Tensor x = f32({6}, {1.0f, -2.5f, 65504.0f, 1e-8f, 70000.0f, 1.0f + 1.0f / 2048});
  const Tensor h = cast(x, DataType::kFloat16, 13);
  ASSERT_EQ(h.dtype(), DataType::kFloat16);
  EXPECT_EQ(h.data<half>()[0].bits, 0x3c00);
  EXPECT_EQ(h.data<half>()[2].bits, 0x7bff);
  EXPECT_EQ(h.data<half>()[4].bits, 0x7c00);  // overflow -> inf (fp16 has no saturate)
  EXPECT_EQ(h.data<half>()[5].bits, 0x3c00);  // tie to even
  const Tensor back = cast(h, DataType::kFloat32, 13);
  EXPECT_EQ(values(back)[0], 1.0f);
  EXPECT_EQ(values(back)[1], -2.5f);
  EXPECT_EQ(values(back)[2], 65504.0f);
  EXPECT_TRUE(std::isinf(values(back)[4]));
}

// The kernels' inline fp16/bf16 conversions must equal dtype.h's reference ones bit for bit.
TEST(CastTest, FastHalfConversionsMatchDtypeReference) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const half h{static_cast<uint16_t>(b)};
    const float ref = half_to_float(h);
    const float got = cpu::ew::fast_half_to_float(h);
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(got)) << b;
    } else {
      ASSERT_EQ(std::memcmp(&ref, &got, 4), 0) << b;
    }
    const bfloat16 bf{static_cast<uint16_t>(b)};
    const float bref = bfloat16_to_float(bf);
    const float bgot = cpu::ew::fast_bfloat16_to_float(bf);
    ASSERT_EQ(std::memcmp(&bref, &bgot, 4), 0) << b;
    // Floats at, next to and halfway between fp16 values (ties included).
    uint32_t fb;
    std::memcpy(&fb, &ref, 4);
    for (int64_t d : {-0x1001, -0x1000, -0xfff, -1, 0, 1, 0xfff, 0x1000, 0x1001}) {
      const uint32_t q = static_cast<uint32_t>(static_cast<int64_t>(fb) + d);
      float f;
      std::memcpy(&f, &q, 4);
      ASSERT_EQ(cpu::ew::fast_float_to_half(f).bits, float_to_half(f).bits) << std::hex << q;
      ASSERT_EQ(cpu::ew::fast_float_to_bfloat16(f).bits, float_to_bfloat16(f).bits)
          << std::hex << q;
    }
  }
  for (uint64_t q = 0; q < 0x100000000ull; q += 4099) {
    float f;
    const uint32_t q32 = static_cast<uint32_t>(q);
    std::memcpy(&f, &q32, 4);
    ASSERT_EQ(cpu::ew::fast_float_to_half(f).bits, float_to_half(f).bits) << std::hex << q32;
    ASSERT_EQ(cpu::ew::fast_float_to_bfloat16(f).bits, float_to_bfloat16(f).bits)
        << std::hex << q32;
  }
}

TEST(CastTest, DoubleToHalfRoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the fp16 tie between 1 and 1+2^-10; rounding through float
  // first would land on the tie and round to even (1.0). The correct result is 1 + 2^-10.
  const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  const Tensor x = Tensor::from_vector<double>(DataType::kFloat64, {1}, {d});
  EXPECT_EQ(cast(x, DataType::kFloat16, 13).data<half>()[0].bits, 0x3c01);
}

TEST(CastTest, Float8SaturateAttribute) {
  const Tensor x = f32({5}, {1000.0f, -1000.0f, INFINITY, 0.3f, NAN});
  const Tensor sat = cast(x, DataType::kFloat8E4M3FN);
  EXPECT_EQ(sat.data<uint8_t>()[0], 0x7e);  // 448
  EXPECT_EQ(sat.data<uint8_t>()[1], 0xfe);
  EXPECT_EQ(sat.data<uint8_t>()[2], 0x7e);
  EXPECT_EQ(values(sat)[3], e4m3fn_to_float(float_to_e4m3fn(0.3f)));
  EXPECT_TRUE(std::isnan(values(sat)[4]));
  const Tensor nosat = cast(x, DataType::kFloat8E4M3FN, 19, 0);
  EXPECT_TRUE(std::isnan(values(nosat)[0]));
  EXPECT_TRUE(std::isnan(values(nosat)[2]));
  const Tensor e5 = cast(x, DataType::kFloat8E5M2);
  EXPECT_EQ(values(e5)[0], 1024.0f);
  EXPECT_EQ(values(cast(f32({1}, {1e6f}), DataType::kFloat8E5M2))[0], 57344.0f);
  EXPECT_TRUE(std::isinf(values(cast(f32({1}, {1e6f}), DataType::kFloat8E5M2, 19, 0))[0]));
}

TEST(CastTest, Fp32Fp16Fp8RoundTrips) {
  // Every finite e4m3fn value survives fp8 -> fp32 -> fp16 -> fp8.
  Tensor all(DataType::kFloat8E4M3FN, {254});
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if ((b & 0x7f) != 0x7f) all.data<uint8_t>()[n++] = static_cast<uint8_t>(b);
  const Tensor f = cast(all, DataType::kFloat32);
  const Tensor h = cast(f, DataType::kFloat16);
  const Tensor back = cast(h, DataType::kFloat8E4M3FN);
  for (int i = 0; i < 254; ++i) EXPECT_EQ(back.data<uint8_t>()[i], all.data<uint8_t>()[i]) << i;
  const Tensor b16 = cast(cast(f, DataType::kBFloat16), DataType::kFloat8E4M3FN);
  for (int i = 0; i < 254; ++i) EXPECT_EQ(b16.data<uint8_t>()[i], all.data<uint8_t>()[i]) << i;
}

TEST(CastTest, FloatToIntAndBool) {
  const Tensor x = f32({6}, {1.9f, -1.9f, 0.0f, NAN, 300.0f, -0.0f});
  EXPECT_EQ(cast(x, DataType::kInt32).to_int64_vector(),
            (std::vector<int64_t>{1, -1, 0, 0, 300, 0}));
  EXPECT_EQ(cast(x, DataType::kUInt8).to_int64_vector(),
            (std::vector<int64_t>{1, 255, 0, 0, 44, 0}));  // wraps through int64 like numpy
  EXPECT_EQ(cast(x, DataType::kBool).to_int64_vector(), (std::vector<int64_t>{1, 1, 0, 1, 1, 0}));
  const Tensor huge = f32({2}, {1e30f, -1e30f});
  EXPECT_EQ(cast(huge, DataType::kInt64).to_int64_vector(),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min()}));
}

TEST(CastTest, IntegerConversions) {
  const Tensor x = i64({4}, {300, -1, std::numeric_limits<int64_t>::max(), 0});
  EXPECT_EQ(cast(x, DataType::kInt8).to_int64_vector(), (std::vector<int64_t>{44, -1, -1, 0}));
  const Tensor u = cast(x, DataType::kUInt64);
  EXPECT_EQ(u.data<uint64_t>()[1], std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(cast(u, DataType::kInt64).to_int64_vector(), x.to_int64_vector());
  EXPECT_EQ(values(cast(i64({1}, {16777217}), DataType::kFloat32))[0], 16777216.0f);
  EXPECT_EQ(cast(boolean({2}, {true, false}), DataType::kFloat32).to_float_vector(),
            (std::vector<float>{1, 0}));
  EXPECT_EQ(cast(i32({3}, {0, 5, -2}), DataType::kBool).to_int64_vector(),
            (std::vector<int64_t>{0, 1, 1}));
}

TEST(CastTest, Int4PackAndClamp) {
  const Tensor x = f32({5}, {-9.0f, 2.5f, 3.5f, 7.6f, -1.0f});
  const Tensor q = cast(x, DataType::kInt4, 21);
  ASSERT_EQ(q.dtype(), DataType::kInt4);
  EXPECT_EQ(q.nbytes(), 3u);
  EXPECT_EQ(q.to_int64_vector(), (std::vector<int64_t>{-8, 2, 4, 7, -1}));
  EXPECT_EQ(values(cast(q, DataType::kFloat32, 21)), (std::vector<float>{-8, 2, 4, 7, -1}));
  const Tensor uq = cast(i32({3}, {-3, 9, 20}), DataType::kUInt4, 21);
  EXPECT_EQ(uq.to_int64_vector(), (std::vector<int64_t>{0, 9, 15}));
  EXPECT_EQ(cast(uq, DataType::kInt4, 21).to_int64_vector(), (std::vector<int64_t>{0, 7, 7}));
}

TEST(CastTest, StringIsNotSupported) {
  try {
    cast(f32({1}, {1}), DataType::kString);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
  }
}

TEST(CastTest, CastLikeAndLargeParallel) {
  const Tensor x = random_f32({100000}, 3, -100, 100);
  const Tensor like = Tensor(DataType::kFloat16, {1});
  const Tensor y = run1(make_node("CastLike", 2), 15, {x, like});
  ASSERT_EQ(y.dtype(), DataType::kFloat16);
  for (int64_t i = 0; i < x.numel(); i += 101)
    EXPECT_EQ(y.data<half>()[i].bits, float_to_half(x.data<float>()[i]).bits);
}

}  // namespace
}  // namespace trtutils
