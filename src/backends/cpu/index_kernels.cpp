// CPU kernels of the index ops: ArgMax / ArgMin, GatherElements, ScatterElements (Scatter: its
// opset 9-10 name). Elements move by their byte size (every fixed-size dtype); a ScatterElements
// reduction (add, mul: opset 16; max, min: opset 18) combines in double and stores in the data's
// dtype. Indices may be negative (counted from the end of the axis); out of range is an error.
#include <algorithm>
#include <cstring>
#include <map>

#include "backends/cpu/copy_util.h"
#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::cpu {
namespace {

const uint8_t* bytes_in(const Tensor& t) {
  return static_cast<const uint8_t*>(t.raw());
}

// For each position of `idx` (indices' shape), the flat offset into a tensor of shape `data`
// with the axis coordinate replaced by the index value.
std::vector<int64_t> element_offsets(const ir::Node& node, const Shape& data, const Tensor& idx,
                                     int64_t axis) {
  TRT_CHECK_ARG(idx.rank() == data.size(), "{}: indices {} and data {} must have one rank",
                node.describe(), shape_str(idx.shape()), shape_str(data));
  for (size_t d = 0; d < data.size(); ++d)
    TRT_CHECK_ARG(static_cast<int64_t>(d) == axis || idx.dim(d) <= data[d],
                  "{}: indices {} exceed data {} on axis {}", node.describe(),
                  shape_str(idx.shape()), shape_str(data), d);
  const std::vector<int64_t> ds = strides_of(data), is = strides_of(idx.shape());
  const std::vector<int64_t> v = idx.to_int64_vector();
  std::vector<int64_t> off(v.size());
  const int64_t size = data[static_cast<size_t>(axis)];
  for (size_t p = 0; p < v.size(); ++p) {
    int64_t rest = static_cast<int64_t>(p), o = 0;
    for (size_t d = 0; d < data.size(); ++d) {
      const int64_t c = rest / is[d];
      rest %= is[d];
      if (static_cast<int64_t>(d) != axis) {
        o += c * ds[d];
        continue;
      }
      int64_t i = v[p];
      TRT_CHECK_ARG(i >= -size && i < size, "{}: index {} is out of range for axis {} of size {}",
                    node.describe(), i, axis, size);
      o += (i < 0 ? i + size : i) * ds[d];
    }
    off[p] = o;
  }
  return off;
}

void gather_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const int64_t axis = ops::normalize_axis(ctx.node.attr_int("axis", 0),
                                           static_cast<int64_t>(data.rank()), ctx.node);
  const std::vector<int64_t> off = element_offsets(ctx.node, data.shape(), idx, axis);
  Tensor& y = ctx.make_output(0, data.dtype(), idx.shape());
  const size_t esz = element_bytes(data.dtype(), ctx.node);
  auto* dst = static_cast<uint8_t*>(y.raw());
  for (size_t p = 0; p < off.size(); ++p)
    std::memcpy(dst + p * esz, bytes_in(data) + static_cast<size_t>(off[p]) * esz, esz);
}

void scatter_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  TRT_CHECK_ARG(upd.shape() == idx.shape() && upd.dtype() == data.dtype(),
                "{}: updates {} {} must have the indices' shape {} and the data's dtype {}",
                ctx.node.describe(), dtype_name(upd.dtype()), shape_str(upd.shape()),
                shape_str(idx.shape()), dtype_name(data.dtype()));
  const int64_t axis = ops::normalize_axis(ctx.node.attr_int("axis", 0),
                                           static_cast<int64_t>(data.rank()), ctx.node);
  const std::string red = ctx.opset >= 16 ? ctx.node.attr_string("reduction", "none") : "none";
  TRT_CHECK(red == "none" || red == "add" || red == "mul" || red == "max" || red == "min",
            ErrorCode::kNotSupported, "{}: reduction '{}' (expected none, add, mul, max, min)",
            ctx.node.describe(), red);
  const std::vector<int64_t> off = element_offsets(ctx.node, data.shape(), idx, axis);
  Tensor y = data.clone();
  const size_t esz = element_bytes(data.dtype(), ctx.node);
  auto* dst = static_cast<uint8_t*>(y.raw());
  for (size_t p = 0; p < off.size(); ++p) {
    uint8_t* d = dst + static_cast<size_t>(off[p]) * esz;
    if (red == "none") {
      std::memcpy(d, bytes_in(upd) + p * esz, esz);
      continue;
    }
    const double a = y.at_double(off[p]), b = upd.at_double(static_cast<int64_t>(p));
    const double v = red == "add"   ? a + b
                     : red == "mul" ? a * b
                     : red == "max" ? std::max(a, b)
                                    : std::min(a, b);
    store_from_double(data.dtype(), d, v);
  }
  ctx.outputs.at(0) = y;
}

// ArgMax / ArgMin along `axis`: the first index of the extreme value (the last with
// select_last_index); NaN compares as neither larger nor smaller (the first value stays).
template <bool kMax>
void arg_reduce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = ops::normalize_axis(ctx.node.attr_int("axis", 0), rank, ctx.node);
  const bool keep = ctx.node.attr_int("keepdims", 1) != 0;
  const bool last = ctx.opset >= 12 && ctx.node.attr_int("select_last_index", 0) != 0;
  const int64_t n = x.dim(axis);
  TRT_CHECK_ARG(n > 0, "{}: the reduced axis {} is empty", ctx.node.describe(), axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis)
      out.push_back(x.dim(d));
    else if (keep)
      out.push_back(1);
  }
  Tensor& y = ctx.make_output(0, DataType::kInt64, out);
  int64_t* py = y.data<int64_t>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      int64_t best = 0;
      double bv = x.at_double(base);
      for (int64_t k = 1; k < n; ++k) {
        const double v = x.at_double(base + k * inner);
        const bool better = kMax ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
        if (better) best = k, bv = v;
      }
      py[o * inner + i] = best;
    }
}

}  // namespace

void register_roi_align_kernel(KernelRegistry& r);    // roi_align_kernel.cpp
void register_einsum_kernel(KernelRegistry& r);       // einsum_kernel.cpp
void register_cumsum_kernel(KernelRegistry& r);       // cumsum_kernel.cpp
void register_grid_sample_kernel(KernelRegistry& r);  // grid_sample_kernel.cpp

void register_index_kernels(KernelRegistry& r) {
  r.add({"ArgMax", "", arg_reduce_kernel<true>});
  r.add({"ArgMin", "", arg_reduce_kernel<false>});
  r.add({"GatherElements", "", gather_elements_kernel});
  r.add({"ScatterElements", "", scatter_elements_kernel});
  r.add({"Scatter", "", scatter_elements_kernel});
  register_roi_align_kernel(r);
  register_einsum_kernel(r);
  register_cumsum_kernel(r);
  register_grid_sample_kernel(r);
}

}  // namespace trtutils::cpu
