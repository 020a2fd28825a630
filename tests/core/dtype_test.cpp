#include "trtutils/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trtutils {
namespace {

TEST(DType, HalfRoundTripsAndRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f).bits, 0x3c00);
  EXPECT_EQ(float_to_half(65504.0f).bits, 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f).bits, 0x7c00);            // rounds up to inf
  EXPECT_EQ(float_to_half(5.96046448e-08f).bits, 0x0001);     // smallest subnormal
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048).bits, 0x3c00);  // tie -> even
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048).bits, 0x3c02);
  for (uint32_t b = 0; b < 0x7c00; ++b)
    EXPECT_EQ(float_to_half(half_to_float(half{static_cast<uint16_t>(b)})).bits, b);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
}

TEST(DType, Float8E4M3FN) {
  EXPECT_EQ(e4m3fn_to_float(float8_e4m3fn{0x7e}), 448.0f);
  EXPECT_EQ(float_to_e4m3fn(1000.0f).bits, 0x7e);         // saturate
  EXPECT_EQ(float_to_e4m3fn(1000.0f, false).bits, 0x7f);  // NaN
  EXPECT_EQ(float_to_e4m3fn(-INFINITY).bits, 0xfe);
  EXPECT_EQ(e4m3fn_to_float(float8_e4m3fn{0x01}), std::ldexp(1.0f, -9));
  for (uint32_t b = 0; b < 0x7f; ++b)
    EXPECT_EQ(float_to_e4m3fn(e4m3fn_to_float(float8_e4m3fn{static_cast<uint8_t>(b)})).bits, b);
}

TEST(DType, Float8E5M2) {
  EXPECT_EQ(e5m2_to_float(float8_e5m2{0x7b}), 57344.0f);
  EXPECT_EQ(float_to_e5m2(1e6f).bits, 0x7b);
  EXPECT_EQ(float_to_e5m2(1e6f, false).bits, 0x7c);
  for (uint32_t b = 0; b < 0x7c; ++b)
    EXPECT_EQ(float_to_e5m2(e5m2_to_float(float8_e5m2{static_cast<uint8_t>(b)})).bits, b);
}

TEST(DType, BFloat16AndNames) {
  EXPECT_EQ(float_to_bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(3.140625f)), 3.140625f);
  EXPECT_EQ(dtype_from_name("fp16"), DataType::kFloat16);
  EXPECT_EQ(dtype_name(DataType::kFloat8E4M3FN), "float8e4m3fn");
  EXPECT_EQ(dtype_storage_bytes(DataType::kInt4, 3), 2u);
}

}  // namespace
}  // namespace trtutils
