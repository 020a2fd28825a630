// Engine / ExecutionContext on the CPU backend: the engine's graph (already optimized by the
// builder) is executed by a Session per context, sharing the engine's mapped weights.
#include <chrono>
#include <mutex>

#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/device_weights.h"
#include "core/check.h"
#include "engine/engine_file.h"
#include "engine/gpu_context.h"
#include "engine/session.h"
#include "trtutils/engine.h"
#include "trtutils/logging.h"
#include "trtutils/platform.h"

namespace trtutils {

using nlohmann::json;

struct Engine::Impl {
  std::filesystem::path path;
  engine::EngineData data;
  std::vector<EngineTensorInfo> inputs, outputs;
  std::vector<EngineLayerInfo> layers;
  std::string backend;
  std::string runtime_backend;
  int target_sm = 0;
  bool strongly_typed = false;
  uint64_t weight_bytes = 0;
  uint64_t arena_bytes = 0;
  // Device copies of the weights, shared by every GPU context of this engine.
  std::shared_ptr<cuda::DeviceWeights> device_weights = std::make_shared<cuda::DeviceWeights>();
};

struct ExecutionContext::Impl {
  std::shared_ptr<const Engine::Impl> engine;
  std::unique_ptr<Session> session;     // cpu runtime
  std::unique_ptr<cuda::Executor> gpu;  // cuda runtime
  std::vector<LayerTiming> profile;
  IoTimes last_times;
  std::mutex mu;  // one execute() at a time per context
};

namespace {

std::string shape_text(const ir::Graph& g, const std::string& name) {
  if (name.empty()) return "";
  auto vi = g.find_value_info(name);
  if (!vi || !vi->shape) return "?";
  return ir::sym_shape_str(*vi->shape);
}

Shape json_shape(const json& j) {
  Shape s;
  if (!j.is_array()) return s;
  for (const auto& d : j)
    if (d.is_number_integer()) s.push_back(d.get<int64_t>());
  return s;
}

EngineTensorInfo tensor_info(const ir::ValueInfo& v, const json& io) {
  EngineTensorInfo t;
  t.name = v.name;
  t.dtype = v.dtype;
  if (v.shape)
    for (const auto& d : *v.shape) {
      t.shape.push_back(d.is_static() ? d.value : -1);
      t.dim_names.push_back(d.param);
    }
  if (io.is_object()) {
    if (io.contains("format") && io["format"].is_string()) t.format = io["format"];
    if (io.contains("min")) t.min_shape = json_shape(io["min"]);
    if (io.contains("opt")) t.opt_shape = json_shape(io["opt"]);
    if (io.contains("max")) t.max_shape = json_shape(io["max"]);
  }
  return t;
}

const json& io_entry(const json& info, const char* list, const std::string& name) {
  static const json kNone;
  if (!info.contains("io") || !info["io"].contains(list)) return kNone;
  for (const auto& e : info["io"][list])
    if (e.is_object() && e.value("name", "") == name) return e;
  return kNone;
}

std::vector<EngineLayerInfo> layer_infos(const ir::Graph& g,
                                         const std::vector<engine::LayerRecord>& records) {
  std::vector<EngineLayerInfo> layers;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    const engine::LayerRecord& l = records[i];
    EngineLayerInfo li;
    li.index = static_cast<int64_t>(i);
    li.name = n.name;
    li.op = n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type;
    li.precision = l.precision;
    li.device = l.device;
    li.kernel = l.kernel;
    li.tactic = l.tactic;
    li.layout = l.layout;
    li.inputs = n.inputs;
    li.outputs = n.outputs;
    for (const auto& in : n.inputs) li.input_shapes.push_back(shape_text(g, in));
    for (const auto& o : n.outputs) li.output_shapes.push_back(shape_text(g, o));
    layers.push_back(std::move(li));
  }
  return layers;
}

}  // namespace

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

std::shared_ptr<Engine> Engine::load(const std::filesystem::path& path,
                                     const EngineLoadOptions& options) {
  TRT_CHECK_ARG(options.backend == "auto" || options.backend == "cpu" || options.backend == "cuda",
                "invalid backend '{}': choose one of auto, cpu, cuda", options.backend);
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->data = engine::read_engine_file(path);
  const json& info = impl->data.info;
  impl->backend = info.value("backend", "cpu");
  impl->target_sm = info.value("target_sm", 0);
  impl->strongly_typed = info.value("strongly_typed", false);
  if (impl->backend != "cpu" && impl->backend != "cuda")
    TRT_THROW(ErrorCode::kInvalidArgument, "{}: built for an unknown backend '{}'", path.string(),
              impl->backend);
  impl->runtime_backend = impl->backend == "cpu" ? "cpu" : "cpu (reference for a cuda engine)";
  const cuda::DeviceStatus dev = cuda::device_status();
  if (options.backend == "cuda") {
    TRT_CHECK(impl->backend == "cuda", ErrorCode::kInvalidArgument,
              "{} was built for the {} backend: rebuild it with `trtutils build --backend cuda` "
              "to run it on the GPU",
              path.string(), impl->backend);
    TRT_CHECK(dev.usable, ErrorCode::kNotSupported,
              "{} needs a GPU, but none is usable here ({}); run it with --backend cpu",
              path.string(), dev.why);
    TRT_CHECK(dev.sm == impl->target_sm, ErrorCode::kInvalidArgument,
              "{} was built for SM {} but this GPU ({}) is SM {}: rebuild the engine here (or "
              "with --target_sm {})",
              path.string(), impl->target_sm, dev.name, dev.sm, dev.sm);
    impl->runtime_backend = "cuda";
  } else if (options.backend == "auto" && impl->backend == "cuda" && dev.usable &&
             dev.sm == impl->target_sm) {
    impl->runtime_backend = "cuda";
  }

  const ir::Graph& g = impl->data.model.graph;
  for (const auto& v : g.inputs)
    impl->inputs.push_back(tensor_info(v, io_entry(info, "inputs", v.name)));
  for (const auto& v : g.outputs)
    impl->outputs.push_back(tensor_info(v, io_entry(info, "outputs", v.name)));
  // A GPU engine's layer table is its GPU plan's, whichever backend runs it here.
  const engine::GpuPlanData* gpu = impl->data.gpu ? &*impl->data.gpu : nullptr;
  impl->layers = layer_infos(gpu ? gpu->graph : g, gpu ? gpu->layers : impl->data.layers);
  if (impl->runtime_backend == "cuda" && !gpu)
    TRT_LOG_INFO(
        "{}: engine format version {} stores no GPU plan: the CUDA executor derives it (fusions, "
        "kernel choices) at load; rebuild the engine to store it",
        path.string(), impl->data.format_version);
  for (const auto& [name, t] : g.initializers) impl->weight_bytes += t.nbytes();
  if (info.contains("memory") && info["memory"].is_object())
    impl->arena_bytes = info["memory"].value("activation_arena_bytes", uint64_t{0});
  // Every layer must have a kernel: checked now (a context would fail later otherwise).
  if (impl->runtime_backend != "cuda") {
    Session probe(impl->data.model, {.run_passes = false});
    (void)probe;
  }
  return std::shared_ptr<Engine>(new Engine(std::move(impl)));
}

const std::vector<EngineTensorInfo>& Engine::inputs() const {
  return impl_->inputs;
}
const std::vector<EngineTensorInfo>& Engine::outputs() const {
  return impl_->outputs;
}
const std::vector<EngineLayerInfo>& Engine::layers() const {
  return impl_->layers;
}
bool Engine::has_gpu_plan() const {
  return impl_->data.gpu.has_value();
}
std::string Engine::backend() const {
  return impl_->backend;
}
std::string Engine::runtime_backend() const {
  return impl_->runtime_backend;
}
int Engine::target_sm() const {
  return impl_->target_sm;
}
bool Engine::strongly_typed() const {
  return impl_->strongly_typed;
}
uint64_t Engine::weight_bytes() const {
  return impl_->weight_bytes;
}
uint64_t Engine::device_weight_bytes() const {
  return impl_->device_weights->bytes();
}
uint64_t Engine::activation_arena_bytes() const {
  return impl_->arena_bytes;
}
std::string Engine::info_json() const {
  return impl_->data.info.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}
uint32_t Engine::format_version() const {
  return impl_->data.format_version;
}
std::string Engine::producer() const {
  return impl_->data.producer;
}
std::filesystem::path Engine::path() const {
  return impl_->path;
}

std::unique_ptr<ExecutionContext> Engine::create_execution_context(
    const ContextOptions& options) const {
  check_thread_count(options.num_threads);
  auto impl = std::make_unique<ExecutionContext::Impl>();
  impl->engine = impl_;
  if (impl_->runtime_backend == "cuda") {
    // The stored GPU plan, run as it is (gpu_context.h).
    engine::GpuExecutorPlan plan = engine::gpu_executor_plan(impl_->data, options);
    bool static_inputs = true;
    for (const auto& in : impl_->inputs)
      for (int64_t d : in.shape) static_inputs = static_inputs && d >= 0;
    plan.options.cuda_graph = options.cuda_graph && static_inputs && !options.profile;
    plan.options.weights = impl_->device_weights;
    impl->gpu = std::make_unique<cuda::Executor>(plan.model, plan.options);
  } else {
    SessionOptions so;
    so.num_threads = options.num_threads;
    so.profile = options.profile;
    so.run_passes = false;
    so.mark_all_outputs = options.mark_all_outputs;
    impl->session = std::make_unique<Session>(impl_->data.model, so);
  }
  return std::make_unique<ExecutionContext>(std::move(impl));
}

ExecutionContext::ExecutionContext(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ExecutionContext::~ExecutionContext() = default;

namespace {

// The optimization profile bounds every input (the graph's dims check the rest).
void check_profile(const Engine::Impl& engine, const std::map<std::string, Shape>& shapes) {
  for (const auto& in : engine.inputs) {
    auto it = shapes.find(in.name);
    if (it == shapes.end() || in.min_shape.empty() || in.max_shape.empty()) continue;
    const Shape& s = it->second;
    bool ok = s.size() == in.min_shape.size() && s.size() == in.max_shape.size();
    for (size_t d = 0; ok && d < s.size(); ++d)
      ok = s[d] >= in.min_shape[d] && s[d] <= in.max_shape[d];
    TRT_CHECK_ARG(ok,
                  "input '{}' has shape {}, outside the engine's optimization profile (min {}, "
                  "max {}): rebuild with --min_shapes/--max_shapes covering it",
                  in.name, shape_str(s), shape_str(in.min_shape), shape_str(in.max_shape));
  }
}

}  // namespace

std::map<std::string, Tensor> ExecutionContext::execute(
    const std::map<std::string, Tensor>& inputs) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::map<std::string, Shape> shapes;
  for (const auto& [name, t] : inputs) shapes[name] = t.shape();
  check_profile(*impl_->engine, shapes);
  if (impl_->gpu) {
    auto out = impl_->gpu->run(inputs);
    const cuda::RunTimes rt = impl_->gpu->last_run_times();
    impl_->last_times = {rt.h2d_ms, rt.compute_ms, rt.d2h_ms};
    const auto& prof = impl_->gpu->profile();
    impl_->profile.resize(prof.size());
    const std::vector<std::string> kernels =
        prof.empty() ? std::vector<std::string>{} : impl_->gpu->node_kernels();
    for (size_t i = 0; i < prof.size(); ++i)
      impl_->profile[i] = {prof[i].name, prof[i].op, prof[i].total_ms, prof[i].calls,
                           i < kernels.size() ? kernels[i] : std::string()};
    return out;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto out = impl_->session->run(inputs);
  impl_->last_times = {
      0, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
      0};
  const auto& prof = impl_->session->profile();
  impl_->profile.resize(prof.size());
  for (size_t i = 0; i < prof.size(); ++i)
    impl_->profile[i] = {prof[i].name, prof[i].op_type, prof[i].total_ms, prof[i].calls, {}};
  return out;
}

void ExecutionContext::enqueue(const std::map<std::string, DeviceBuffer>& inputs,
                               std::map<std::string, DeviceBuffer>& outputs, void* cuda_stream) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  TRT_CHECK(impl_->gpu != nullptr, ErrorCode::kNotSupported,
            "enqueue needs an engine running on the CUDA backend with a GPU (this context runs "
            "on the {} backend): use execute()",
            impl_->engine->runtime_backend);
  std::map<std::string, Shape> shapes;
  for (const auto& [name, b] : inputs) shapes[name] = b.shape;
  check_profile(*impl_->engine, shapes);
  std::map<std::string, cuda::DeviceBuffer> in, out;
  for (const auto& [name, b] : inputs) in[name] = {b.data, b.dtype, b.shape, b.bytes};
  for (const auto& [name, b] : outputs) out[name] = {b.data, b.dtype, b.shape, b.bytes};
  impl_->gpu->enqueue(in, out, cuda_stream);
  for (auto& [name, b] : outputs) {
    const cuda::DeviceBuffer& r = out.at(name);
    b.dtype = r.dtype;
    b.shape = r.shape;
  }
}

const std::vector<LayerTiming>& ExecutionContext::profile() const {
  return impl_->profile;
}
Tensor allocate_host_tensor(DataType dtype, Shape shape) {
  TRT_CHECK(dtype_bits(dtype) > 0, ErrorCode::kNotSupported,
            "tensors of dtype {} are not supported", dtype_name(dtype));
  const uint64_t bytes = (static_cast<uint64_t>(dtype_bits(dtype)) * shape_numel(shape) + 7) / 8;
  if (auto p = cuda::alloc_pinned(bytes)) return Tensor::wrap(dtype, std::move(shape), p);
  return Tensor(dtype, std::move(shape));
}

IoTimes ExecutionContext::last_io_times() const {
  return impl_->last_times;
}
uint64_t ExecutionContext::weight_bytes() const {
  return impl_->gpu ? impl_->gpu->device_weight_bytes() : impl_->engine->weight_bytes;
}
uint64_t ExecutionContext::peak_activation_bytes() const {
  return impl_->gpu ? impl_->gpu->device_activation_bytes()
                    : impl_->session->peak_activation_bytes();
}

}  // namespace trtutils
