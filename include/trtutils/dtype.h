// Element types. Values of DataType match ONNX's TensorProto.DataType so that conversion to and
// from ONNX is the identity; names are those of numpy/ONNX ("float32", "float8e4m3fn", ...).
// Narrow float types are stored as their bit patterns in small structs (half, bfloat16,
// float8_e4m3fn, float8_e5m2) with exact round-to-nearest-even conversions from float.
// INT4/UINT4 are packed two per byte, the first element in the low nibble (ONNX's layout).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trtutils {

enum class DataType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,  // recognised so that models load; no kernel computes on it
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,  // recognised, not computed
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,  // recognised, not computed
  kUInt4 = 21,
  kInt4 = 22,
};

// "float32", "float16", "int8", ...; "undefined" for unknown values.
std::string_view dtype_name(DataType t);
// Parses numpy/ONNX style names ("float32", "fp32", "float", "half", "int8", "fp8", ...).
std::optional<DataType> dtype_from_name(std::string_view name);
// ONNX enum value -> DataType; nullopt for values this build does not know.
std::optional<DataType> dtype_from_onnx(int32_t value);
// Bits per element: 4 for int4/uint4, 8 for bool, 0 for string/undefined.
int dtype_bits(DataType t);
// Bytes for n elements (int4 types round up to whole bytes).
size_t dtype_storage_bytes(DataType t, int64_t n);
bool dtype_is_float(DataType t);    // fp64/fp32/fp16/bf16/fp8
bool dtype_is_integer(DataType t);  // signed or unsigned, int4 included, bool excluded
bool dtype_is_signed(DataType t);

// ---- narrow float types -------------------------------------------------------------------
struct half {
  uint16_t bits = 0;
};
struct bfloat16 {
  uint16_t bits = 0;
};
struct float8_e4m3fn {
  uint8_t bits = 0;
};
struct float8_e5m2 {
  uint8_t bits = 0;
};

half float_to_half(float f);
float half_to_float(half h);
bfloat16 float_to_bfloat16(float f);
float bfloat16_to_float(bfloat16 h);
// saturate=true clamps out-of-range finite values to the largest finite value (ONNX default for
// QuantizeLinear/Cast); saturate=false maps them to NaN (e4m3fn has no inf) or inf (e5m2).
float8_e4m3fn float_to_e4m3fn(float f, bool saturate = true);
float e4m3fn_to_float(float8_e4m3fn v);
float8_e5m2 float_to_e5m2(float f, bool saturate = true);
float e5m2_to_float(float8_e5m2 v);

// Reads element i of a buffer of type t as double (int4 aware). Slow; for tests and tools.
double dtype_load_as_double(DataType t, const void* data, int64_t i);

}  // namespace trtutils
