// What follows a float-output com.trtutils::QGemm, moved into its epilogue (patterns.h): the GELU
// (and the quantizer after it), the batch-first grid, the packed-QKV split and the residual Add.
// A fused QGemm stays a QGemm, so the pipeline may add another epilogue to it later; each
// pattern refuses the features that do not combine with its own.
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/patterns.h"
#include "ops/qlinear_ops.h"

namespace trtutils::cuda::fusion {

// com.trtutils::QGemm with a float output (no y_scale, residual or activation) -> the erf GELU
// chain [-> QuantizeLinear per tensor]  => the same QGemm with gelu = 1 (and the quantizer's
// y_scale, y_zero_point): the GELU and the quantization run in the product's epilogue instead
// of three passes over float32 activations (a transformer's MLP).
size_t fuse_qgemm_gelu(FusionGraph& fg, size_t i) {
  const ir::Node& g = fg.graph.nodes[i];
  if (!float_qgemm(g, {"gelu"})) return 0;
  std::vector<size_t> chain;
  const std::string y = match_gelu(fg, g.outputs[0], chain);
  if (y.empty()) return 0;
  ir::Node f = g;
  set_int(f, "gelu", 1);
  f.outputs = {y};
  const size_t qi = per_tensor_quantizer_of(fg, y);
  if (qi != SIZE_MAX) {
    f.inputs.resize(ops::qlinear::kYScale);
    f.inputs.push_back(fg.graph.nodes[qi].inputs[1]);
    f.inputs.push_back(fg.graph.nodes[qi].inputs[2]);
    f.outputs = fg.graph.nodes[qi].outputs;
    chain.push_back(qi);
  }
  chain.insert(chain.begin(), i);
  return fg.place(std::move(f), chain);
}

// com.trtutils::QGemm with a float output (no y_scale, residual or activation; W 2-D constant)
// -> Reshape [R0, R1, N] -> Transpose(1, 0, 2) [-> Add(residual of that shape)]  => the QGemm
// with y_grid = [R0, R1] (and the residual as its R): the attention's output projection
// writes the batch-first rows itself and adds the skip connection in its epilogue.
size_t fuse_qgemm_grid(FusionGraph& fg, size_t i) {
  using ops::qlinear::kResidual;
  const ir::Node& g = fg.graph.nodes[i];
  if (!float_qgemm(g, {"y_grid"})) return 0;
  const int64_t n = qgemm_columns(fg, g);
  if (n < 0) return 0;
  ir::Node f = g;
  std::vector<size_t> chain;
  std::string out = match_grid(fg, g.outputs[0], n, f, chain);
  if (chain.empty()) return 0;
  f.inputs.resize(kResidual);
  out = match_residual(fg, out, f, chain);
  if (f.inputs.size() == kResidual) f.inputs = g.inputs;  // no residual
  f.outputs = {out};
  chain.insert(chain.begin(), i);
  return fg.place(std::move(f), chain);
}

// com.trtutils::QGemm with a float output Y [lead..., N] (no y_scale, residual, activation)
// -> Reshape [lead..., P, N / P] -> Unsqueeze (a leading 1) -> Transpose (swapping that 1 and
// P) -> Squeeze (the 1), each read only by the next: torch's split of a packed QKV projection
// into [P, lead..., N / P]  => the QGemm with y_split = P, writing that layout itself (the
// Gathers after it then read contiguous slices).
size_t fuse_qgemm_split(FusionGraph& fg, size_t i) {
  const ir::Node& g = fg.graph.nodes[i];
  if (!float_qgemm(g, {"y_grid"})) return 0;
  const std::vector<int64_t> ys = fg.static_shape(g.outputs[0]);
  if (ys.size() < 2) return 0;
  const int64_t n = ys.back();
  std::vector<size_t> chain{i};
  std::string v = g.outputs[0];
  auto next = [&](const char* op) -> std::vector<int64_t> {
    const size_t r = fg.only_reader(v);
    if (r == SIZE_MAX || fg.graph.nodes[r].op_type != op || !default_domain(fg.graph.nodes[r]) ||
        fg.graph.nodes[r].outputs.size() != 1 || fg.graph.nodes[r].inputs.empty() ||
        fg.graph.nodes[r].inputs[0] != v)
      return {};
    chain.push_back(r);
    v = fg.graph.nodes[r].outputs[0];
    return fg.static_shape(v);
  };
  const std::vector<int64_t> rs = next("Reshape");
  if (rs.size() != ys.size() + 1 || rs.back() <= 0 || n % rs.back() != 0) return 0;
  const int64_t p = n / rs.back(), w = rs.back();
  const size_t r = ys.size() - 1;  // lead rank
  for (size_t a = 0; a < r; ++a)
    if (rs[a] != ys[a]) return 0;
  if (rs[r] != p) return 0;
  std::vector<int64_t> want{1};
  want.insert(want.end(), rs.begin(), rs.end());
  if (next("Unsqueeze") != want) return 0;
  std::swap(want[0], want[r + 1]);
  const size_t t = fg.only_reader(v);
  if (t == SIZE_MAX) return 0;
  std::vector<int64_t> perm(want.size());
  for (size_t a = 0; a < perm.size(); ++a) perm[a] = static_cast<int64_t>(a);
  std::swap(perm[0], perm[r + 1]);
  if (fg.graph.nodes[t].op_type != "Transpose" || perm_of(fg.graph.nodes[t]) != perm) return 0;
  if (next("Transpose") != want) return 0;
  want.erase(want.begin() + static_cast<ptrdiff_t>(r + 1));
  if (next("Squeeze") != want || want.front() != p || want.back() != w) return 0;
  ir::Node f = g;
  set_int(f, "y_split", p);
  f.outputs = {v};
  return fg.place(std::move(f), chain);
}

// com.trtutils::QGemm with a float output (no y_scale, residual, activation or output layout)
// -> Add(float32 residual of its shape)  => the QGemm with the residual as its R (the skip
// connection after a transformer's MLP; the builder fuses it itself in float32 graphs, the
// executor here after promote_half_islands).
size_t fuse_qgemm_residual(FusionGraph& fg, size_t i) {
  using ops::qlinear::kResidual;
  const ir::Node& g = fg.graph.nodes[i];
  if (!float_qgemm(g, {"gelu", "y_grid", "y_split"})) return 0;
  ir::Node f = g;
  f.inputs.resize(kResidual);
  std::vector<size_t> chain{i};
  const std::string out = match_residual(fg, g.outputs[0], f, chain);
  if (f.inputs.size() == kResidual) return 0;
  const auto rt = fg.graph.find_value_info(f.inputs[kResidual]);
  if (!rt || rt->dtype != DataType::kFloat32) return 0;
  f.outputs = {out};
  return fg.place(std::move(f), chain);
}

}  // namespace trtutils::cuda::fusion
