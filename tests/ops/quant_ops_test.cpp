// QuantizeLinear / DequantizeLinear on known values: rounding ties, saturation, per-axis and
// blocked scales, int4 packing, fp8 saturate, output dtypes per opset, shape errors.
#include <cmath>
#include <cstdint>

#include "ops/tensor_test_util.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

using namespace tensor_testing;

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return static_cast<ErrorCode>(-1);
}

Tensor scalar_f32(float v) {
  return f32({}, {v});
}

TEST(QuantizeLinear, TiesRoundToEvenAndSaturate) {
  const Tensor x = f32({7}, {0, 2.5f, 3.5f, -2.5f, -3.5f, 1000, -1000});
  expect_tensor(run1(node("QuantizeLinear"), 13, {x, scalar_f32(1), i8({}, {0})}), DataType::kInt8,
                {7}, {0, 2, 4, -2, -4, 127, -128});
  // uint8 with a zero point: round(x / 2) + 128
  expect_tensor(
      run1(node("QuantizeLinear"), 10, {f32({4}, {5, 7, -5, -600}), scalar_f32(2), u8({}, {128})}),
      DataType::kUInt8, {4}, {130, 132, 126, 0});
  // scalar scale with a one-element 1-D zero point: still per tensor
  expect_tensor(run1(node("QuantizeLinear"), 13, {f32({2}, {5, 7}), scalar_f32(2), u8({1}, {1})}),
                DataType::kUInt8, {2}, {3, 5});
  // no zero point: uint8, zero 0
  expect_tensor(run1(node("QuantizeLinear"), 13, {f32({3}, {-1, 1.5f, 300}), scalar_f32(1)}),
                DataType::kUInt8, {3}, {0, 2, 255});
  // the quotient is computed in float32: 0.3f / 0.2f rounds to 1.5f exactly -> 2
  expect_tensor(run1(node("QuantizeLinear"), 13, {f32({1}, {0.3f}), scalar_f32(0.2f)}),
                DataType::kUInt8, {1}, {2});  // a double quotient (1.49999999) would give 1
  // int32 input
  expect_tensor(run1(node("QuantizeLinear"), 13, {i32({2}, {-7, 9}), scalar_f32(2), i8({}, {1})}),
                DataType::kInt8, {2}, {-3, 5});
}

TEST(QuantizeLinear, PerAxisAndBlocked) {
  const Tensor x = f32({2, 3}, {4, 4, 4, -6, 9, -10});
  expect_tensor(run1(node("QuantizeLinear"), 13, {x, f32({3}, {1, 2, 4}), i8({3}, {0, 1, -1})}),
                DataType::kInt8, {2, 3}, {4, 3, 0, -6, 5, -3});
  // axis 0
  expect_tensor(
      run1(node("QuantizeLinear", {ai("axis", 0)}), 13, {x, f32({2}, {2, 1}), u8({2}, {10, 20})}),
      DataType::kUInt8, {2, 3}, {12, 12, 12, 14, 29, 10});
  // blocked, block 2 on axis 1: scales [[1, 2], [4, 8]]
  const Tensor xb = f32({2, 4}, {2, 4, 6, 8, 8, 16, 8, 16});
  expect_tensor(run1(node("QuantizeLinear", {ai("axis", 1), ai("block_size", 2)}), 21,
                     {xb, f32({2, 2}, {1, 2, 4, 8}), i8({2, 2}, {0, 0, 0, 1})}),
                DataType::kInt8, {2, 4}, {2, 4, 3, 4, 2, 4, 2, 3});
  // uneven last block: 5 elements, block 2 -> 3 scales
  expect_tensor(
      run1(node("QuantizeLinear", {ai("axis", 1), ai("block_size", 2)}), 21,
           {f32({1, 5}, {1, 1, 1, 1, 1}), f32({1, 3}, {1, 0.5f, 0.25f}), i8({1, 3}, {0, 0, 0})}),
      DataType::kInt8, {1, 5}, {1, 1, 2, 2, 4});
}

TEST(QuantizeLinear, ScaleShapeErrors) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(code_of([&] {
              run1(node("QuantizeLinear"), 13, {x, f32({2}, {1, 1})});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              run1(node("QuantizeLinear"), 13, {x, f32({3}, {1, 1, 1}), u8({2}, {0, 0})});
            }),
            ErrorCode::kInvalidArgument);
  // per-axis scales are opset 13+
  EXPECT_EQ(code_of([&] {
              run1(node("QuantizeLinear"), 10, {x, f32({3}, {1, 1, 1})});
            }),
            ErrorCode::kInvalidArgument);
  // blocked with a wrong block count
  EXPECT_EQ(code_of([&] {
              run1(node("QuantizeLinear", {ai("axis", 1), ai("block_size", 2)}), 21,
                   {x, f32({2, 1}, {1, 1})});
            }),
            ErrorCode::kInvalidArgument);
  // zero point and output_dtype disagree
  EXPECT_EQ(
      code_of([&] {
        run1(node("QuantizeLinear", {ai("output_dtype", 3)}), 21, {x, scalar_f32(1), u8({}, {0})});
      }),
      ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              run1(node("DequantizeLinear"), 13, {u8({3}, {1, 2, 3}), f32({2}, {1, 1})});
            }),
            ErrorCode::kInvalidArgument);
}

TEST(QuantizeLinear, Int4PackingAndWideInts) {
  // int4 via output_dtype (22): 1, -1, 7.6 -> 7 (saturated from 8), -9 -> -8, 3
  const Tensor y = run1(node("QuantizeLinear", {ai("output_dtype", 22)}), 21,
                        {f32({5}, {1, -1, 7.6f, -9, 3}), scalar_f32(1)});
  expect_tensor(y, DataType::kInt4, {5}, {1, -1, 7, -8, 3});
  ASSERT_EQ(y.nbytes(), 3u);
  EXPECT_EQ(y.data<uint8_t>()[0], 0xf1);  // low nibble first
  EXPECT_EQ(y.data<uint8_t>()[1], 0x87);
  EXPECT_EQ(y.data<uint8_t>()[2], 0x03);
  // uint4 with a zero point of 8
  Tensor zp(DataType::kUInt4, {});
  zp.data<uint8_t>()[0] = 8;
  expect_tensor(run1(node("QuantizeLinear"), 21, {f32({4}, {1, -1, 7.6f, -9}), scalar_f32(1), zp}),
                DataType::kUInt4, {4}, {9, 7, 15, 0});
  // int16 / uint16
  expect_tensor(run1(node("QuantizeLinear"), 21,
                     {f32({3}, {40000, -40000, 2.5f}), scalar_f32(1),
                      make<int16_t>(DataType::kInt16, {}, {0})}),
                DataType::kInt16, {3}, {32767, -32768, 2});
  expect_tensor(run1(node("QuantizeLinear", {ai("output_dtype", 4)}), 21,
                     {f32({2}, {70000, -1}), scalar_f32(1)}),
                DataType::kUInt16, {2}, {65535, 0});
}

TEST(QuantizeLinear, Float8SaturateAndHalfInputs) {
  Tensor zp(DataType::kFloat8E4M3FN, {});
  const Tensor x = f32({3}, {1000, 3, -1000});
  const Tensor sat = run1(node("QuantizeLinear"), 19, {x, scalar_f32(2), zp});
  EXPECT_EQ(sat.dtype(), DataType::kFloat8E4M3FN);
  EXPECT_EQ(sat.data<uint8_t>()[0], 0x7e);  // 448
  EXPECT_EQ(sat.data<uint8_t>()[1], 0x3c);  // 1.5
  EXPECT_EQ(sat.data<uint8_t>()[2], 0xfe);  // -448
  const Tensor nosat =
      run1(node("QuantizeLinear", {ai("saturate", 0)}), 19, {x, scalar_f32(2), zp});
  EXPECT_EQ(nosat.data<uint8_t>()[0], 0x7f);  // NaN
  EXPECT_EQ(nosat.data<uint8_t>()[2], 0xff);
  Tensor zp5(DataType::kFloat8E5M2, {});
  const Tensor e5 = run1(node("QuantizeLinear"), 19, {f32({1}, {1e6f}), scalar_f32(1), zp5});
  EXPECT_EQ(e5.data<uint8_t>()[0], 0x7b);
  const Tensor e5n =
      run1(node("QuantizeLinear", {ai("saturate", 0)}), 19, {f32({1}, {1e6f}), scalar_f32(1), zp5});
  EXPECT_EQ(e5n.data<uint8_t>()[0], 0x7c);  // inf
  // float16 x and scale
  Tensor hx(DataType::kFloat16, {2}), hs(DataType::kFloat16, {});
  hx.data<half>()[0] = float_to_half(5);
  hx.data<half>()[1] = float_to_half(-3);
  hs.data<half>()[0] = float_to_half(2);
  expect_tensor(run1(node("QuantizeLinear"), 19, {hx, hs, i8({}, {0})}), DataType::kInt8, {2},
                {2, -2});
}

TEST(DequantizeLinear, PerTensorAxisBlockedAndTypes) {
  expect_tensor(
      run1(node("DequantizeLinear"), 10, {i8({3}, {-128, 0, 127}), scalar_f32(0.5f), i8({}, {-1})}),
      DataType::kFloat32, {3}, {-63.5, 0.5, 64});
  expect_tensor(run1(node("DequantizeLinear"), 13, {u8({2}, {0, 255}), scalar_f32(2)}),
                DataType::kFloat32, {2}, {0, 510});
  // int32 input (bias)
  expect_tensor(run1(node("DequantizeLinear"), 13, {i32({2}, {1000000, -5}), scalar_f32(0.25f)}),
                DataType::kFloat32, {2}, {250000, -1.25});
  // per axis (axis 1 default)
  expect_tensor(run1(node("DequantizeLinear"), 13,
                     {u8({2, 2}, {10, 20, 30, 40}), f32({2}, {1, 0.5f}), u8({2}, {10, 0})}),
                DataType::kFloat32, {2, 2}, {0, 10, 20, 20});
  // blocked on axis 0, block 2: x [3, 1], scales [2, 1]
  expect_tensor(run1(node("DequantizeLinear", {ai("axis", 0), ai("block_size", 2)}), 21,
                     {i8({3, 1}, {1, 2, 3}), f32({2, 1}, {10, 100})}),
                DataType::kFloat32, {3, 1}, {10, 20, 300});
  // int4 input, float16 scale -> float16 output (opset 19+)
  Tensor q(DataType::kInt4, {3});
  q.data<uint8_t>()[0] = 0x8f;  // -1, -8
  q.data<uint8_t>()[1] = 0x07;  // 7
  Tensor hs(DataType::kFloat16, {});
  hs.data<half>()[0] = float_to_half(0.5f);
  expect_tensor(run1(node("DequantizeLinear"), 21, {q, hs}), DataType::kFloat16, {3},
                {-0.5, -4, 3.5});
  // bfloat16 scale, uint16 input with zero point
  Tensor bs(DataType::kBFloat16, {});
  bs.data<bfloat16>()[0] = float_to_bfloat16(2);
  expect_tensor(run1(node("DequantizeLinear"), 21,
                     {make<uint16_t>(DataType::kUInt16, {2}, {65535, 0}), bs,
                      make<uint16_t>(DataType::kUInt16, {}, {32768})}),
                DataType::kBFloat16, {2}, {65536, -65536});  // 65534 rounds in bf16
  // fp8 input
  Tensor f8(DataType::kFloat8E4M3FN, {2});
  f8.data<uint8_t>()[0] = 0x3c;  // 1.5
  f8.data<uint8_t>()[1] = 0xfe;  // -448
  expect_tensor(run1(node("DequantizeLinear"), 19, {f8, scalar_f32(2)}), DataType::kFloat32, {2},
                {3, -896});
}

TEST(QuantInfer, OutputDtypes) {
  const ir::SymShape s = {ir::Dim("N"), ir::Dim(4)};
  auto q = infer(node("QuantizeLinear"), 13,
                 {{DataType::kFloat32, s}, {DataType::kFloat32, ir::SymShape{}}});
  EXPECT_EQ(q[0].dtype, DataType::kUInt8);
  EXPECT_EQ(sym(q[0].shape), "[N, 4]");
  q = infer(node("QuantizeLinear"), 13,
            {{DataType::kFloat32, s},
             {DataType::kFloat32, ir::SymShape{}},
             {DataType::kInt8, ir::SymShape{}}});
  EXPECT_EQ(q[0].dtype, DataType::kInt8);
  q = infer(node("QuantizeLinear", {ai("output_dtype", 22)}), 21,
            {{DataType::kFloat32, s}, {DataType::kFloat32, ir::SymShape{}}});
  EXPECT_EQ(q[0].dtype, DataType::kInt4);
  auto d = infer(node("DequantizeLinear"), 19,
                 {{DataType::kInt8, s}, {DataType::kFloat16, ir::SymShape{}}});
  EXPECT_EQ(d[0].dtype, DataType::kFloat16);
  d = infer(node("DequantizeLinear"), 13,
            {{DataType::kInt8, s}, {DataType::kFloat32, ir::SymShape{}}});
  EXPECT_EQ(d[0].dtype, DataType::kFloat32);
  EXPECT_EQ(sym(d[0].shape), "[N, 4]");
}

}  // namespace
}  // namespace trtutils
