// The float16 islands of Q/DQ graphs, computed in float32 (promote_half_islands, cuda_ops.h;
// pipeline.cpp runs it before the patterns).
//
// A Q/DQ graph whose un-quantized rest is float16 (`quantize --high_precision_dtype fp16`,
// nvidia-modelopt's default) reaches the executor as quantized products with float32 outputs,
// Casts to float16 after each, float16 Softmax / LayerNorm / GELU / residual chains, and float16
// QuantizeLinear inputs. The executor's fusions (attention, GELU / split / projection epilogues,
// LayerNorm + quantize) are written for float32 activations, so on such a graph every Cast and
// every unfused float16 layer ran as its own pass: ViT-B/16 FP8 at batch 256 took 106 ms on the
// H200, against 33.5 ms for the same model quantized with float32 precision. Here the float16
// values become float32 (float16 constants widened, Casts to float16 retargeted to float32,
// Casts between floats removed), so that the graph is the float32-precision one and every fusion
// applies. The result is at least as precise as the graph asks (no float16 rounding between the
// quantized layers), and it is what the GPU runs, not what the engine file says: the file and the
// CPU backend keep the float16 layers. Only graphs with quantized layers and no float16 input or
// output are promoted. TRTUTILS_CUDA_HALF_AS_FLOAT=0 keeps the float16 layers on the GPU too.
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/fusion/fusion_graph.h"
#include "ir/graph_builder.h"
#include "ops/qlinear_ops.h"
#include "trtutils/logging.h"

namespace trtutils::cuda {

using fusion::default_domain;
using fusion::switch_on;

namespace {

bool quantized_layer(const ir::Node& n) {
  if (n.domain == "com.trtutils")
    return n.op_type == "QGemm" || n.op_type == "QMatMul" || n.op_type == "QConv";
  return default_domain(n) && (n.op_type == "QuantizeLinear" || n.op_type == "QLinearConv" ||
                               n.op_type == "QLinearMatMul");
}

bool float_dtype(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16;
}

Tensor widened(const Tensor& t) {
  return Tensor::from_vector<float>(DataType::kFloat32, t.shape(), t.to_float_vector());
}

}  // namespace

size_t promote_half_islands(ir::Graph& g, std::map<std::string, FusedInto>* absorbed) {
  if (!switch_on("TRTUTILS_CUDA_HALF_AS_FLOAT")) return 0;
  for (const auto& v : g.inputs)
    if (v.dtype == DataType::kFloat16 && !g.is_initializer(v.name)) return 0;
  for (const auto& v : g.outputs)
    if (v.dtype == DataType::kFloat16) return 0;
  bool quantized = false, half_casts = false;
  for (const auto& n : g.nodes) {
    quantized = quantized || quantized_layer(n);
    half_casts = half_casts || (default_domain(n) && n.op_type == "Cast" &&
                                n.attr_int("to", 0) == static_cast<int64_t>(DataType::kFloat16));
    for (const auto& [name, a] : n.attributes)
      if (a.kind == ir::Attribute::Kind::kGraph) return 0;  // control flow: left as it is
  }
  if (!quantized || !half_casts) return 0;
  // Which values are floats (before the change): their types where known, the Casts' targets,
  // and the quantized layers' float outputs.
  std::unordered_map<std::string, DataType> type;
  for (const auto& v : g.inputs) type[v.name] = v.dtype;
  for (const auto& [name, vi] : g.value_info) type[name] = vi.dtype;
  for (const auto& [name, t] : g.initializers) type[name] = t.dtype();
  for (const auto& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0].empty()) continue;
    if (default_domain(n) && n.op_type == "Cast")
      type[n.outputs[0]] = static_cast<DataType>(n.attr_int("to", 0));
    else if (n.domain == "com.trtutils" && quantized_layer(n) &&
             n.inputs.size() <= ops::qlinear::kYScale && !type.count(n.outputs[0]))
      type[n.outputs[0]] = DataType::kFloat32;
  }
  size_t changed = 0;
  for (auto& [name, t] : g.initializers)
    if (t.dtype() == DataType::kFloat16) t = widened(t), ++changed;
  for (auto& [name, vi] : g.value_info)
    if (vi.dtype == DataType::kFloat16) vi.dtype = DataType::kFloat32;
  std::unordered_set<std::string> graph_outputs;
  for (const auto& v : g.outputs) graph_outputs.insert(v.name);
  std::unordered_map<std::string, std::string> renamed;  // removed Cast's output -> its input
  std::vector<ir::Node> kept;
  kept.reserve(g.nodes.size());
  for (auto& n : g.nodes) {
    for (auto& in : n.inputs) {
      auto r = renamed.find(in);
      if (r != renamed.end()) in = r->second;
    }
    if (default_domain(n) && (n.op_type == "Constant" || n.op_type == "ConstantOfShape")) {
      auto a = n.attributes.find("value");
      if (a != n.attributes.end() && a->second.kind == ir::Attribute::Kind::kTensor &&
          a->second.t.dtype() == DataType::kFloat16)
        a->second.t = widened(a->second.t), ++changed;
    }
    if (default_domain(n) && n.op_type == "Cast" && n.inputs.size() == 1 && n.outputs.size() == 1) {
      const int64_t to = n.attr_int("to", 0);
      if (to == static_cast<int64_t>(DataType::kFloat16)) {
        n.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat32));
        ++changed;
      }
      auto it = type.find(n.inputs[0]);
      const bool float_in = it != type.end() && float_dtype(it->second);
      if (float_dtype(static_cast<DataType>(to)) && float_in &&
          !graph_outputs.count(n.outputs[0])) {
        renamed[n.outputs[0]] = n.inputs[0];
        if (absorbed) (*absorbed)[n.name] = FusedInto{"", "the float16 rest runs in float32"};
        ++changed;
        continue;
      }
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  if (changed)
    TRT_LOG_VERBOSE("cuda fusion: float16 layers of a Q/DQ graph computed in float32 ({} changes)",
                    changed);
  return changed;
}

}  // namespace trtutils::cuda
