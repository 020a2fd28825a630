// Dtype-agnostic data movement for the CPU kernels of the tensor family: elements are moved by
// their byte size, so every fixed-size dtype works. Packed int4/uint4 tensors are first
// unpacked to one nibble per byte (as uint8) and packed again afterwards (with_unpacked_int4).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph.h"

namespace trtutils::cpu {

// Bytes per element for data movement; throws Error(kNotSupported) naming the node for string
// and int4 (callers unpack int4 first) and other types without a fixed byte size.
size_t element_bytes(DataType dt, const ir::Node& node);

bool is_int4(DataType dt);
// [N, C, spatial...] -> [N, spatial..., C] (to_last) or back; elements of 1, 2, 4 or 8 bytes.
Tensor permute_channels(const Tensor& t, bool to_last);
// int4/uint4 tensor -> uint8 tensor of the same shape holding one nibble per byte.
Tensor unpack_int4(const Tensor& t);
// uint8 tensor of nibbles -> packed tensor of dtype `dt` (int4 or uint4), same shape.
Tensor pack_int4(const Tensor& nibbles, DataType dt);
// Runs `fn` on byte-addressable stand-ins of `inputs`: int4 inputs (nullptr allowed) are
// unpacked; every output `fn` returns is packed back to int4 when inputs[0] was int4.
std::vector<Tensor> with_unpacked_int4(
    const std::vector<const Tensor*>& inputs,
    const std::function<std::vector<Tensor>(const std::vector<const Tensor*>&)>& fn);

// Separable gather: out[o_0, ..., o_{r-1}] = src[sum_d tables[d][o_d]] (offsets in elements),
// or `fill` when any tables[d][o_d] == kFill. tables[d] has out_shape[d] entries.
constexpr int64_t kFill = -1;
void gather_separable(const void* src, void* dst, size_t elem_bytes, const Shape& out_shape,
                      const std::vector<std::vector<int64_t>>& tables, const void* fill);

// Writes v converted to dtype `dt` (round-to-nearest-even for narrow floats, integers
// truncated toward zero and saturated) to dst. int4 types are written as one nibble per byte.
void store_from_double(DataType dt, void* dst, double v);

// Row-major strides (in elements) of a shape.
std::vector<int64_t> strides_of(const Shape& shape);

}  // namespace trtutils::cpu
