// A per-tensor DequantizeLinear and the global pool reading it into
// com.trtutils.cuda::DequantizeGlobalPool (patterns.h).
#include <utility>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/patterns.h"

namespace trtutils::cuda::fusion {

// DequantizeLinear per tensor (constant scale and zero point, float32 output) read only by a
// GlobalAveragePool / GlobalMaxPool  => com.trtutils.cuda::DequantizeGlobalPool (X, x_scale,
// [x_zero_point]; is_max): the pool reads the quantized bytes and dequantizes them as it sums,
// instead of a pass that writes the float tensor for the pool to read back (the quantized
// squeeze-excite inputs of EfficientNet).
size_t fuse_dequantize_global_pool(FusionGraph& fg, size_t i) {
  const ir::Node& pool = fg.graph.nodes[i];
  if (pool.inputs.size() != 1 || pool.outputs.size() != 1 || pool.inputs[0].empty()) return 0;
  auto it = fg.producer.find(pool.inputs[0]);
  if (it == fg.producer.end() || fg.removed[it->second] || fg.only_reader(pool.inputs[0]) != i)
    return 0;
  const ir::Node& dq = fg.graph.nodes[it->second];
  if (dq.op_type != "DequantizeLinear" || !default_domain(dq) || dq.inputs.size() < 2 ||
      dq.outputs.size() != 1 || dq.inputs[0].empty())
    return 0;
  const Tensor* scale = fg.graph.initializer(dq.inputs[1]);
  const Tensor* zp = dq.has_input(2) ? fg.graph.initializer(dq.inputs[2]) : nullptr;
  if (!scale || scale->numel() != 1 || scale->dtype() != DataType::kFloat32 ||
      (dq.has_input(2) && (!zp || zp->numel() != 1)))
    return 0;
  const auto xi = fg.graph.find_value_info(dq.inputs[0]);
  const DataType xt = zp ? zp->dtype() : (xi ? xi->dtype : DataType::kUndefined);
  if (!(xt == DataType::kInt8 || xt == DataType::kUInt8 || xt == DataType::kFloat8E4M3FN ||
        xt == DataType::kFloat8E5M2))
    return 0;
  ir::Node f;
  f.name = pool.name;
  f.op_type = "DequantizeGlobalPool";
  f.domain = kGpuDomain;
  f.inputs = {dq.inputs[0], dq.inputs[1]};
  if (zp) f.inputs.push_back(dq.inputs[2]);
  f.outputs = pool.outputs;
  set_int(f, "is_max", pool.op_type == "GlobalMaxPool" ? 1 : 0);
  return fg.place(std::move(f), {it->second, i});
}

}  // namespace trtutils::cuda::fusion
