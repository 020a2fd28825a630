#include "trtutils/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/check.h"

namespace trtutils {

std::string_view dtype_name(DataType t) {
  switch (t) {
    case DataType::kUndefined:
      return "undefined";
    case DataType::kFloat32:
      return "float32";
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kUInt16:
      return "uint16";
    case DataType::kInt16:
      return "int16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kString:
      return "string";
    case DataType::kBool:
      return "bool";
    case DataType::kFloat16:
      return "float16";
    case DataType::kFloat64:
      return "float64";
    case DataType::kUInt32:
      return "uint32";
    case DataType::kUInt64:
      return "uint64";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat8E4M3FN:
      return "float8e4m3fn";
    case DataType::kFloat8E4M3FNUZ:
      return "float8e4m3fnuz";
    case DataType::kFloat8E5M2:
      return "float8e5m2";
    case DataType::kFloat8E5M2FNUZ:
      return "float8e5m2fnuz";
    case DataType::kUInt4:
      return "uint4";
    case DataType::kInt4:
      return "int4";
  }
  return "undefined";
}

std::optional<DataType> dtype_from_name(std::string_view n) {
  struct Alias {
    std::string_view name;
    DataType type;
  };
  static constexpr Alias kAliases[] = {
      {"float32", DataType::kFloat32},
      {"fp32", DataType::kFloat32},
      {"float", DataType::kFloat32},
      {"float16", DataType::kFloat16},
      {"fp16", DataType::kFloat16},
      {"half", DataType::kFloat16},
      {"bfloat16", DataType::kBFloat16},
      {"bf16", DataType::kBFloat16},
      {"float64", DataType::kFloat64},
      {"double", DataType::kFloat64},
      {"int8", DataType::kInt8},
      {"uint8", DataType::kUInt8},
      {"int16", DataType::kInt16},
      {"uint16", DataType::kUInt16},
      {"int32", DataType::kInt32},
      {"uint32", DataType::kUInt32},
      {"int64", DataType::kInt64},
      {"uint64", DataType::kUInt64},
      {"bool", DataType::kBool},
      {"float8e4m3fn", DataType::kFloat8E4M3FN},
      {"fp8", DataType::kFloat8E4M3FN},
      {"e4m3", DataType::kFloat8E4M3FN},
      {"float8e5m2", DataType::kFloat8E5M2},
      {"e5m2", DataType::kFloat8E5M2},
      {"int4", DataType::kInt4},
      {"uint4", DataType::kUInt4},
  };
  for (const auto& a : kAliases)
    if (a.name == n) return a.type;
  return std::nullopt;
}

std::optional<DataType> dtype_from_onnx(int32_t v) {
  if (v < 1 || v > 22 || v == 14 || v == 15) return std::nullopt;  // 14/15: complex
  return static_cast<DataType>(v);
}

int dtype_bits(DataType t) {
  switch (t) {
    case DataType::kUndefined:
    case DataType::kString:
      return 0;
    case DataType::kUInt4:
    case DataType::kInt4:
      return 4;
    case DataType::kBool:
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      return 8;
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 16;
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kFloat32:
      return 32;
    case DataType::kInt64:
    case DataType::kUInt64:
    case DataType::kFloat64:
      return 64;
  }
  return 0;
}

size_t dtype_storage_bytes(DataType t, int64_t n) {
  const int bits = dtype_bits(t);
  return static_cast<size_t>((static_cast<uint64_t>(n) * bits + 7) / 8);
}

bool dtype_is_float(DataType t) {
  switch (t) {
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kFloat64:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      return true;
    default:
      return false;
  }
}

bool dtype_is_integer(DataType t) {
  switch (t) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt32:
    case DataType::kUInt64:
    case DataType::kUInt4:
    case DataType::kInt4:
      return true;
    default:
      return false;
  }
}

bool dtype_is_signed(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kInt4:
      return true;
    default:
      return dtype_is_float(t);
  }
}

namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Format of a small IEEE-like float: mantissa bits, exponent bias, sign position and the codes
// used for overflow and NaN. Rounding is round-to-nearest-even, subnormals included.
struct MiniFloat {
  int mbits;
  int bias;
  int total_bits;
  uint32_t max_finite;  // magnitude bits of the largest finite value
  uint32_t inf;         // magnitude bits of infinity (0 if the format has none)
  uint32_t nan;         // magnitude bits of the canonical NaN
};

uint32_t encode(const MiniFloat& fmt, float f, bool saturate) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 31) << (fmt.total_bits - 1);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | fmt.nan;
  const uint32_t overflow = saturate ? fmt.max_finite : (fmt.inf ? fmt.inf : fmt.nan);
  if (ax == 0x7f800000u) return sign | (saturate ? fmt.max_finite : (fmt.inf ? fmt.inf : fmt.nan));
  if (ax == 0) return sign;
  const int e = static_cast<int>(ax >> 23) - 127;
  const int min_normal_exp = 1 - fmt.bias;
  uint32_t mag;
  if (e < min_normal_exp) {
    // subnormal in the target: count units of 2^(min_normal_exp - mbits), ties to even
    const float q = std::nearbyint(std::ldexp(bits_float(ax), fmt.mbits - min_normal_exp));
    mag = static_cast<uint32_t>(q);  // q == 2^mbits encodes the smallest normal, as wanted
  } else {
    const int shift = 23 - fmt.mbits;
    uint32_t r = (ax & 0x7fffffu) >> shift;
    const uint32_t rem = ax & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1))) ++r;
    uint64_t exp_field = static_cast<uint64_t>(e + fmt.bias);
    if (r == (1u << fmt.mbits)) {
      r = 0;
      ++exp_field;
    }
    const uint64_t m = (exp_field << fmt.mbits) | r;
    mag = m > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(m);
  }
  if (mag > fmt.max_finite) return sign | overflow;
  return sign | mag;
}

float decode(const MiniFloat& fmt, uint32_t v) {
  const uint32_t sign_bit = 1u << (fmt.total_bits - 1);
  const uint32_t mag = v & (sign_bit - 1);
  const float s = (v & sign_bit) ? -1.0f : 1.0f;
  if (fmt.inf && mag == fmt.inf) return s * std::numeric_limits<float>::infinity();
  if (mag > fmt.max_finite) return std::numeric_limits<float>::quiet_NaN();
  const uint32_t exp_field = mag >> fmt.mbits;
  const uint32_t m = mag & ((1u << fmt.mbits) - 1);
  if (exp_field == 0) return s * std::ldexp(static_cast<float>(m), 1 - fmt.bias - fmt.mbits);
  return s * std::ldexp(1.0f + std::ldexp(static_cast<float>(m), -fmt.mbits),
                        static_cast<int>(exp_field) - fmt.bias);
}

constexpr MiniFloat kHalf{10, 15, 16, 0x7bff, 0x7c00, 0x7e00};
constexpr MiniFloat kE4M3FN{3, 7, 8, 0x7e, 0, 0x7f};
constexpr MiniFloat kE5M2{2, 15, 8, 0x7b, 0x7c, 0x7f};

}  // namespace

half float_to_half(float f) {
  return half{static_cast<uint16_t>(encode(kHalf, f, false))};
}
float half_to_float(half h) {
  return decode(kHalf, h.bits);
}

bfloat16 float_to_bfloat16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return bfloat16{static_cast<uint16_t>((x >> 16) | 0x40)};
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return bfloat16{static_cast<uint16_t>((x + rounding) >> 16)};
}
float bfloat16_to_float(bfloat16 h) {
  return bits_float(static_cast<uint32_t>(h.bits) << 16);
}

float8_e4m3fn float_to_e4m3fn(float f, bool saturate) {
  return float8_e4m3fn{static_cast<uint8_t>(encode(kE4M3FN, f, saturate))};
}
float e4m3fn_to_float(float8_e4m3fn v) {
  return decode(kE4M3FN, v.bits);
}
float8_e5m2 float_to_e5m2(float f, bool saturate) {
  return float8_e5m2{static_cast<uint8_t>(encode(kE5M2, f, saturate))};
}
float e5m2_to_float(float8_e5m2 v) {
  return decode(kE5M2, v.bits);
}

double dtype_load_as_double(DataType t, const void* data, int64_t i) {
  const auto* b = static_cast<const uint8_t*>(data);
  switch (t) {
    case DataType::kFloat32:
      return static_cast<const float*>(data)[i];
    case DataType::kFloat64:
      return static_cast<const double*>(data)[i];
    case DataType::kFloat16:
      return half_to_float(static_cast<const half*>(data)[i]);
    case DataType::kBFloat16:
      return bfloat16_to_float(static_cast<const bfloat16*>(data)[i]);
    case DataType::kFloat8E4M3FN:
      return e4m3fn_to_float(float8_e4m3fn{b[i]});
    case DataType::kFloat8E5M2:
      return e5m2_to_float(float8_e5m2{b[i]});
    case DataType::kUInt8:
      return b[i];
    case DataType::kBool:
      return b[i] != 0;
    case DataType::kInt8:
      return static_cast<const int8_t*>(data)[i];
    case DataType::kUInt16:
      return static_cast<const uint16_t*>(data)[i];
    case DataType::kInt16:
      return static_cast<const int16_t*>(data)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(data)[i];
    case DataType::kUInt32:
      return static_cast<const uint32_t*>(data)[i];
    case DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DataType::kUInt64:
      return static_cast<double>(static_cast<const uint64_t*>(data)[i]);
    case DataType::kUInt4:
      return (b[i / 2] >> (4 * (i % 2))) & 0xf;
    case DataType::kInt4: {
      const int v = (b[i / 2] >> (4 * (i % 2))) & 0xf;
      return v >= 8 ? v - 16 : v;
    }
    case DataType::kUndefined:
    case DataType::kString:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2FNUZ:
      break;
  }
  TRT_THROW(ErrorCode::kNotSupported, "cannot read elements of dtype {}", dtype_name(t));
}

}  // namespace trtutils
