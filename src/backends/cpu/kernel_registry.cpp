#include "backends/cpu/kernel_registry.h"

#include <algorithm>

#include "core/check.h"

namespace trtutils::cpu {

namespace {
bool same_domain(std::string_view a, std::string_view b) {
  auto norm = [](std::string_view d) { return d == "ai.onnx" ? std::string_view{} : d; };
  return norm(a) == norm(b);
}
}  // namespace

const Tensor& KernelContext::input(size_t i) const {
  TRT_CHECK(has_input(i), ErrorCode::kInvalidArgument, "{}: required input {} is missing",
            node.describe(), i);
  return *inputs[i];
}

Tensor& KernelContext::make_output(size_t i, DataType dtype, Shape shape) {
  outputs.at(i) = Tensor(dtype, std::move(shape));
  return outputs[i];
}

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry* r = [] {
    auto* reg = new KernelRegistry();
    register_elementwise_kernels(*reg);
    register_nn_kernels(*reg);
    register_tensor_kernels(*reg);
    register_quant_kernels(*reg);
    register_qlinear_kernels(*reg);
    register_index_kernels(*reg);
    register_nms_kernels(*reg);
    return reg;
  }();
  return *r;
}

void KernelRegistry::add(KernelDef def) {
  kernels_.push_back(std::move(def));
}

const KernelDef* KernelRegistry::find(std::string_view domain, std::string_view op_type) const {
  for (const auto& k : kernels_)
    if (k.op_type == op_type && same_domain(k.domain, domain)) return &k;
  return nullptr;
}

std::vector<std::string> KernelRegistry::op_types() const {
  std::vector<std::string> v;
  for (const auto& k : kernels_) v.push_back(k.op_type);
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<Tensor> run_node(const ir::Node& node, int64_t opset,
                             const std::vector<const Tensor*>& inputs, bool use_reference,
                             std::vector<bool> constant_inputs, std::vector<bool> donated_inputs) {
  const KernelDef* def = KernelRegistry::instance().find(node.domain, node.op_type);
  TRT_CHECK(def != nullptr, ErrorCode::kNotSupported,
            "{}: operator '{}{}{}' is not supported by the CPU backend", node.describe(),
            node.domain, node.domain.empty() ? "" : "::", node.op_type);
  KernelContext ctx{node,
                    opset,
                    inputs,
                    std::vector<Tensor>(node.outputs.size()),
                    use_reference,
                    std::move(constant_inputs),
                    std::move(donated_inputs)};
  try {
    def->fn(ctx);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find(node.describe()) != std::string::npos) throw;
    throw Error(e.code(), node.describe() + ": " + what);
  } catch (const std::bad_alloc&) {
    TRT_THROW(ErrorCode::kOutOfRange, "{}: out of memory", node.describe());
  }
  // Every kernel computes each output its op defines; one left out is one the op does not have
  // (an Atanh listing two outputs, found by build_fuzz): the model's error, said as such.
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    TRT_CHECK(node.outputs[i].empty() || ctx.outputs[i].defined(), ErrorCode::kInvalidArgument,
              "{}: output #{} '{}' is not one that {} computes (the node lists {} outputs)",
              node.describe(), i, node.outputs[i], node.op_type, node.outputs.size());
  }
  return std::move(ctx.outputs);
}

}  // namespace trtutils::cpu
