// CumSum on the CPU: along the axis, in order (from the end with reverse), accumulated in double
// for floating-point inputs and in int64 for integers, each output stored in x's dtype (the
// CUDA kernel, index_kernels.cu, adds in the same order and types, so the two agree exactly).
#include <cstring>

#include "backends/cpu/copy_util.h"
#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "ops/op_registry.h"

namespace trtutils::cpu {
namespace {

bool is_integer(DataType dt) {
  return dt == DataType::kInt8 || dt == DataType::kUInt8 || dt == DataType::kInt16 ||
         dt == DataType::kUInt16 || dt == DataType::kInt32 || dt == DataType::kUInt32 ||
         dt == DataType::kInt64 || dt == DataType::kUInt64;
}

void cumsum_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x = ctx.input(0);
  const Tensor& at = ctx.input(1);
  TRT_CHECK_ARG(at.numel() == 1, "{}: axis must hold one value, got {}", node.describe(),
                shape_str(at.shape()));
  const int64_t rank = static_cast<int64_t>(x.rank());
  TRT_CHECK_ARG(rank >= 1, "{}: input x must have rank >= 1", node.describe());
  const int64_t axis = ops::normalize_axis(at.to_int64_vector()[0], rank, node);
  const bool exclusive = node.attr_int("exclusive", 0) != 0;
  const bool reverse = node.attr_int("reverse", 0) != 0;
  const bool integer = is_integer(x.dtype());
  TRT_CHECK(integer || x.dtype() == DataType::kFloat32 || x.dtype() == DataType::kFloat16 ||
                x.dtype() == DataType::kBFloat16 || x.dtype() == DataType::kFloat64,
            ErrorCode::kNotSupported, "{}: CumSum of {}", node.describe(), dtype_name(x.dtype()));
  const int64_t n = x.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
  Tensor& y = ctx.make_output(0, x.dtype(), x.shape());
  const size_t esz = element_bytes(x.dtype(), node);
  auto* dst = static_cast<uint8_t*>(y.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      int64_t iacc = 0;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t j = reverse ? n - 1 - s : s;
        const int64_t p = (o * n + j) * inner + i;
        const double v = x.at_double(p);
        if (!exclusive) acc += v, iacc += static_cast<int64_t>(v);
        store_from_double(x.dtype(), dst + static_cast<size_t>(p) * esz,
                          integer ? static_cast<double>(iacc) : acc);
        if (exclusive) acc += v, iacc += static_cast<int64_t>(v);
      }
    }
}

}  // namespace

void register_cumsum_kernel(KernelRegistry& r) {
  r.add({"CumSum", "", cumsum_kernel});
}

}  // namespace trtutils::cpu
