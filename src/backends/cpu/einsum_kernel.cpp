// Einsum on the CPU: the plain reference. Every letter of the equation (ops/einsum.h) is a loop;
// the output letters index the result, the others are summed over; a letter repeated in one
// operand reads its diagonal, a size-1 dimension broadcasts. Accumulates in double, stores in
// the operands' dtype. (The GPU runs it through this kernel today: per-layer fallback.)
#include <map>
#include <vector>

#include "backends/cpu/copy_util.h"
#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "ops/einsum.h"

namespace trtutils::cpu {
namespace {

void einsum_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  std::vector<size_t> ranks;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) ranks.push_back(ctx.input(i).rank());
  const ops::einsum::Equation e = ops::einsum::parse(node, ranks);
  const DataType dt = ctx.input(0).dtype();
  std::vector<Shape> shapes;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const Tensor& t = ctx.input(i);
    TRT_CHECK_ARG(t.dtype() == dt, "{}: operands of different dtypes ({} and {})", node.describe(),
                  dtype_name(dt), dtype_name(t.dtype()));
    shapes.push_back(t.shape());
  }
  const std::map<char, int64_t> size = ops::einsum::letter_sizes(node, e, shapes);
  // Loop order: output letters, then the summed ones.
  std::string letters = e.output;
  for (const auto& [c, n] : size)
    if (letters.find(c) == std::string::npos) letters.push_back(c);
  const size_t L = letters.size();
  std::vector<int64_t> extent(L);
  for (size_t l = 0; l < L; ++l) extent[l] = size.at(letters[l]);
  // Per operand, its element stride for each loop letter (0 when it lacks it or broadcasts).
  std::vector<std::vector<int64_t>> stride(e.inputs.size(), std::vector<int64_t>(L, 0));
  std::vector<std::vector<double>> data;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const Tensor& t = ctx.input(i);
    const std::vector<int64_t> st = strides_of(t.shape());
    for (size_t d = 0; d < e.inputs[i].size(); ++d)
      if (t.dim(static_cast<int64_t>(d)) != 1) stride[i][letters.find(e.inputs[i][d])] += st[d];
    std::vector<double> v(static_cast<size_t>(t.numel()));
    for (int64_t k = 0; k < t.numel(); ++k) v[static_cast<size_t>(k)] = t.at_double(k);
    data.push_back(std::move(v));
  }
  Shape out_shape;
  int64_t out_n = 1, sum_n = 1;
  for (size_t l = 0; l < L; ++l) (l < e.output.size() ? out_n : sum_n) *= extent[l];
  for (size_t l = 0; l < e.output.size(); ++l) out_shape.push_back(extent[l]);
  std::vector<double> out(static_cast<size_t>(out_n), 0.0);
  std::vector<int64_t> idx(L, 0), off(e.inputs.size(), 0);
  if (out_n > 0 && sum_n > 0) {
    for (int64_t flat = 0; flat < out_n * sum_n; ++flat) {
      double p = 1.0;
      for (size_t i = 0; i < data.size(); ++i) p *= data[i][static_cast<size_t>(off[i])];
      out[static_cast<size_t>(flat / sum_n)] += p;
      for (size_t l = L; l-- > 0;) {  // mixed-radix increment, offsets updated incrementally
        ++idx[l];
        for (size_t i = 0; i < off.size(); ++i) off[i] += stride[i][l];
        if (idx[l] < extent[l]) break;
        for (size_t i = 0; i < off.size(); ++i) off[i] -= stride[i][l] * extent[l];
        idx[l] = 0;
      }
    }
  }
  Tensor& y = ctx.make_output(0, dt, out_shape);
  const size_t esz = element_bytes(dt, node);
  for (size_t k = 0; k < out.size(); ++k)
    store_from_double(dt, static_cast<uint8_t*>(y.raw()) + k * esz, out[k]);
}

}  // namespace

void register_einsum_kernel(KernelRegistry& r) {
  r.add({"Einsum", "", einsum_kernel});
}

}  // namespace trtutils::cpu
