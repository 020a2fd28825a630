// The parts of the GPU plan that need no device: the graph the executor runs (made by the
// builder and stored in GPU engines, or by the executor itself for a graph without one) and the
// device that timed kernel choices hold for.
#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/cuda_ops.h"

namespace trtutils::cuda {

ir::Graph plan_gpu_graph(const ir::Graph& graph, int64_t opset) {
  ir::Graph g = graph;
  if (kernel_switch("TRTUTILS_CUDA_FUSION", true)) fuse_for_gpu(g, opset);
  return g;
}

std::string timing_device() {
  const DeviceStatus s = device_status();
  if (!s.usable) return "";
  return fmt::format("cuda {} sm{} ({}) trtutils {}", s.name, s.sm, s.libraries, TRTUTILS_VERSION);
}

}  // namespace trtutils::cuda
