// The CUDA backend in a build without the CUDA toolkit: no device is ever usable and an
// Executor cannot be made (compiled instead of the real backend; see CMakeLists.txt).
#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/image_runner.h"
#include "core/check.h"

namespace trtutils::cuda {

DeviceStatus device_status() {
  DeviceStatus s;
  s.why = "this build has no CUDA backend (the CUDA toolkit was not found at configure time)";
  return s;
}

std::vector<std::string> supported_ops() {
  return {};
}

GpuCoverage gpu_coverage(const ir::Model&) {
  return {{}, {device_status().why}};
}

std::map<std::string, FusedInto> fusion_plan(const ir::Graph&, int64_t) {
  return {};
}

ir::Graph plan_gpu_graph(const ir::Graph& graph, int64_t) {
  return graph;
}

std::string timing_device() {
  return "";
}

struct Executor::Impl {};

Executor::Executor(const ir::Model&, const ExecutorOptions&) {
  TRT_THROW(ErrorCode::kNotSupported, "the CUDA backend cannot run here: {}", device_status().why);
}
Executor::~Executor() = default;
std::map<std::string, Tensor> Executor::run(const std::map<std::string, Tensor>&) {
  TRT_THROW(ErrorCode::kNotSupported, "the CUDA backend cannot run here: {}", device_status().why);
}
void Executor::enqueue(const std::map<std::string, DeviceBuffer>&,
                       std::map<std::string, DeviceBuffer>&, void*) {
  TRT_THROW(ErrorCode::kNotSupported, "the CUDA backend cannot run here: {}", device_status().why);
}
const std::vector<LayerTime>& Executor::profile() const {
  static const std::vector<LayerTime> none;
  return none;
}
uint64_t Executor::device_weight_bytes() const {
  return 0;
}
uint64_t Executor::device_activation_bytes() const {
  return 0;
}
std::shared_ptr<uint8_t> alloc_pinned(size_t) {
  return nullptr;
}
RunTimes Executor::last_run_times() const {
  return {};
}
std::vector<std::string> Executor::node_placement() const {
  return {};
}
std::vector<std::string> Executor::node_kernels() const {
  return {};
}
int64_t Executor::layout_conversions() const {
  return 0;
}
int64_t Executor::timing_cache_hits() const {
  return 0;
}
int64_t Executor::timing_cache_recorded() const {
  return 0;
}
std::map<std::string, std::string> Executor::timing_decisions() const {
  return {};
}

struct ImageRunner::Impl {};
bool ImageRunner::usable(const Engine&) {
  return false;
}
ImageRunner::ImageRunner(ExecutionContext&, const Engine&, std::string, Shape, data::RenderSpec) {
  TRT_THROW(ErrorCode::kNotSupported, "the CUDA backend cannot run here: {}", device_status().why);
}
ImageRunner::~ImageRunner() = default;
std::map<std::string, Tensor> ImageRunner::run(const std::vector<const Image*>&, Times&) {
  TRT_THROW(ErrorCode::kNotSupported, "the CUDA backend cannot run here: {}", device_status().why);
}
void render_on_device(const Image&, const data::RenderSpec&, void*) {
  TRT_THROW(ErrorCode::kNotSupported, "the CUDA backend cannot run here: {}", device_status().why);
}

}  // namespace trtutils::cuda
