#include "backends/cpu/copy_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/check.h"

namespace trtutils::cpu {

size_t element_bytes(DataType dt, const ir::Node& node) {
  const int bits = dtype_bits(dt);
  TRT_CHECK(bits >= 8 && bits % 8 == 0, ErrorCode::kNotSupported,
            "{}: dtype {} is not supported by this kernel", node.describe(), dtype_name(dt));
  return static_cast<size_t>(bits / 8);
}

bool is_int4(DataType dt) {
  return dt == DataType::kInt4 || dt == DataType::kUInt4;
}

Tensor unpack_int4(const Tensor& t) {
  Tensor out(DataType::kUInt8, t.shape());
  const uint8_t* s = t.data<uint8_t>();
  uint8_t* d = out.data<uint8_t>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = (s[i / 2] >> (4 * (i % 2))) & 0xf;
  return out;
}

Tensor pack_int4(const Tensor& nibbles, DataType dt) {
  Tensor out(dt, nibbles.shape());
  const uint8_t* s = nibbles.data<uint8_t>();
  uint8_t* d = out.data<uint8_t>();
  for (int64_t i = 0; i < nibbles.numel(); ++i)
    d[i / 2] = static_cast<uint8_t>(d[i / 2] | ((s[i] & 0xf) << (4 * (i % 2))));
  return out;
}

std::vector<Tensor> with_unpacked_int4(
    const std::vector<const Tensor*>& inputs,
    const std::function<std::vector<Tensor>(const std::vector<const Tensor*>&)>& fn) {
  const bool packed = !inputs.empty() && inputs[0] && is_int4(inputs[0]->dtype());
  if (!packed) return fn(inputs);
  std::vector<Tensor> storage(inputs.size());
  std::vector<const Tensor*> ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] && is_int4(inputs[i]->dtype())) {
      storage[i] = unpack_int4(*inputs[i]);
      ptrs[i] = &storage[i];
    } else {
      ptrs[i] = inputs[i];
    }
  }
  std::vector<Tensor> outs = fn(ptrs);
  for (auto& o : outs)
    if (o.defined() && o.dtype() == DataType::kUInt8) o = pack_int4(o, inputs[0]->dtype());
  return outs;
}

namespace {
template <typename T>
void store_int(void* dst, double v) {
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  T t;
  if (std::isnan(v)) {
    t = 0;
  } else if (v <= lo) {
    t = std::numeric_limits<T>::lowest();
  } else if (v >= hi) {
    t = std::numeric_limits<T>::max();
  } else {
    t = static_cast<T>(v);
  }
  std::memcpy(dst, &t, sizeof(T));
}
}  // namespace

void store_from_double(DataType dt, void* dst, double v) {
  auto* b = static_cast<uint8_t*>(dst);
  switch (dt) {
    case DataType::kFloat32: {
      const float f = static_cast<float>(v);
      std::memcpy(dst, &f, 4);
      return;
    }
    case DataType::kFloat64:
      std::memcpy(dst, &v, 8);
      return;
    case DataType::kFloat16: {
      const half h = float_to_half(static_cast<float>(v));
      std::memcpy(dst, &h, 2);
      return;
    }
    case DataType::kBFloat16: {
      const bfloat16 h = float_to_bfloat16(static_cast<float>(v));
      std::memcpy(dst, &h, 2);
      return;
    }
    case DataType::kFloat8E4M3FN:
      b[0] = float_to_e4m3fn(static_cast<float>(v)).bits;
      return;
    case DataType::kFloat8E5M2:
      b[0] = float_to_e5m2(static_cast<float>(v)).bits;
      return;
    case DataType::kBool:
      b[0] = v != 0 ? 1 : 0;
      return;
    case DataType::kUInt8:
      return store_int<uint8_t>(dst, v);
    case DataType::kInt8:
      return store_int<int8_t>(dst, v);
    case DataType::kUInt16:
      return store_int<uint16_t>(dst, v);
    case DataType::kInt16:
      return store_int<int16_t>(dst, v);
    case DataType::kInt32:
      return store_int<int32_t>(dst, v);
    case DataType::kUInt32:
      return store_int<uint32_t>(dst, v);
    case DataType::kInt64:
      return store_int<int64_t>(dst, v);
    case DataType::kUInt64:
      return store_int<uint64_t>(dst, v);
    case DataType::kUInt4:
      b[0] = static_cast<uint8_t>(std::clamp(std::isnan(v) ? 0.0 : std::trunc(v), 0.0, 15.0));
      return;
    case DataType::kInt4:
      b[0] = static_cast<uint8_t>(
          static_cast<int>(std::clamp(std::isnan(v) ? 0.0 : std::trunc(v), -8.0, 7.0)) & 0xf);
      return;
    case DataType::kUndefined:
    case DataType::kString:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2FNUZ:
      break;
  }
  TRT_THROW(ErrorCode::kNotSupported, "cannot store values of dtype {}", dtype_name(dt));
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

namespace {

template <typename T>
void gather_t(const T* src, T* dst, const Shape& out, const std::vector<std::vector<int64_t>>& tab,
              T fill) {
  const size_t r = out.size();
  if (r == 0) {
    dst[0] = src[0];
    return;
  }
  const int64_t inner = out[r - 1];
  const int64_t total = shape_numel(out);
  if (total == 0) return;
  const int64_t rows = total / inner;
  const auto& last = tab[r - 1];
  bool contiguous = true;
  for (int64_t i = 0; i < inner && contiguous; ++i)
    contiguous = last[i] >= 0 && last[i] == last[0] + i;
#pragma omp parallel for if (total > (1 << 16))
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rem = row, base = 0;
    bool fill_row = false;
    for (size_t d = r - 1; d-- > 0;) {
      const int64_t v = tab[d][rem % out[d]];
      rem /= out[d];
      if (v < 0) fill_row = true;
      base += v;
    }
    T* o = dst + row * inner;
    if (fill_row) {
      for (int64_t i = 0; i < inner; ++i) o[i] = fill;
    } else if (contiguous) {
      std::memcpy(o, src + base + last[0], static_cast<size_t>(inner) * sizeof(T));
    } else {
      for (int64_t i = 0; i < inner; ++i) o[i] = last[i] < 0 ? fill : src[base + last[i]];
    }
  }
}

template <typename T>
void gather_typed(const void* src, void* dst, const Shape& out,
                  const std::vector<std::vector<int64_t>>& tab, const void* fill) {
  T f{};
  if (fill) std::memcpy(&f, fill, sizeof(T));
  gather_t(static_cast<const T*>(src), static_cast<T*>(dst), out, tab, f);
}

}  // namespace

void gather_separable(const void* src, void* dst, size_t elem_bytes, const Shape& out_shape,
                      const std::vector<std::vector<int64_t>>& tables, const void* fill) {
  TRT_INTERNAL_CHECK(tables.size() == out_shape.size());
  switch (elem_bytes) {
    case 1:
      return gather_typed<uint8_t>(src, dst, out_shape, tables, fill);
    case 2:
      return gather_typed<uint16_t>(src, dst, out_shape, tables, fill);
    case 4:
      return gather_typed<uint32_t>(src, dst, out_shape, tables, fill);
    case 8:
      return gather_typed<uint64_t>(src, dst, out_shape, tables, fill);
    default:
      break;
  }
  TRT_THROW(ErrorCode::kInternal, "gather_separable: element size {} not handled", elem_bytes);
}

}  // namespace trtutils::cpu
