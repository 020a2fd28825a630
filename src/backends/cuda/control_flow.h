// Internal to the CUDA backend: ONNX If and Loop with their bodies on the GPU, the host driving
// the control flow (control_flow.cpp).
//
//   - If: the condition (one value) is read on the host (a 1-byte download when it was computed
//     on the device), the branch it picks runs through its nested executor
//     (subgraph_executor.h, one per branch, planned with the parent), reading the enclosing
//     values in place; its outputs become the node's outputs (branches may differ in shapes).
//   - Loop: M and cond (both optional) are read on the host, then the body runs while
//     i < M and the body's condition output (read on the host after every iteration) holds;
//     loop-carried values stay on the device between iterations and each scan output's
//     iterations are stacked on the device along a new axis 0 (no iteration: an empty [0] of the
//     body output's dtype). The CPU kernel's semantics (engine/session.cpp), check for check.
//   - The GpuOp receives the node's inputs followed by one value per Node::implicit_inputs()
//     name (the executor lists them for liveness) and refuses CUDA graph capture (the host reads
//     the condition), so an engine with control flow runs eagerly.
#pragma once

#include <memory>
#include <string>

#include "backends/cuda/subgraph_executor.h"

namespace trtutils::cuda {

// Why an If / Loop may run on the CPU instead (the whole node, through run_control_flow_on_cpu).
inline constexpr const char* kControlFlowReason =
    "control flow: the host runs the branch / loop body on the CPU";

// Makes the If / Loop node's GPU op into `op` (its bodies planned with `options`); returns "" or
// why its bodies cannot run on the GPU (a body node no kernel runs, or one without a GPU kernel
// when options.allow_fallback is off). Other errors (a malformed node) propagate.
std::string make_control_flow_op(const ir::Node& node, const std::vector<ir::OpsetImport>& opsets,
                                 const ExecutorOptions& options, const OuterScope& outer,
                                 std::unique_ptr<GpuOp>& op);

// gpu_coverage's entries for an If / Loop node: its body nodes that fall back to the CPU, named
// "node/body_node"; or the node itself (kControlFlowReason) when a body cannot run on the GPU.
void control_flow_coverage(const ir::Node& node, const std::vector<ir::OpsetImport>& opsets,
                           const OuterScope& outer, GpuCoverage& cov);

}  // namespace trtutils::cuda
