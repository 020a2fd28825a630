// The CUDA Executor: classifies nodes (constant / host / gpu), runs them in order on one stream,
// frees every activation after its last reader (the caching allocator reuses it in stream
// order) and copies only graph inputs and outputs (and shape values) between host and device.
// Layouts: before each op it converts the inputs the op wants in the other layout (NCHW <->
// NHWC, see GpuOp::want_layouts), once per value; graph outputs are converted back to NCHW.
#include "backends/cuda/cuda_executor.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_map>

#include "backends/cpu/elementwise_common.h"
#include "backends/cpu/kernel_registry.h"
#include "backends/cuda/control_flow.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/device_weights.h"
#include "backends/cuda/kernel_switches.h"
#include "backends/cuda/subgraph_executor.h"
#include "engine/session.h"
#include "ops/tensor_shapes.h"
#include "trtutils/logging.h"

namespace trtutils::cuda {

namespace {

// kHost: shape arithmetic on host values; kFallback: a node without a GPU kernel, on the CPU
// backend (device inputs downloaded, outputs uploaded when a GPU node reads them).
enum class Placement { kConstant, kHost, kGpu, kFallback };

std::string op_key(const ir::Node& n) {
  const bool def = n.domain.empty() || n.domain == "ai.onnx";
  return def ? n.op_type : n.domain + "::" + n.op_type;
}

// Makes b.node's GPU op into `op`; returns "" or why the GPU cannot run it (no kernel, or the
// factory's kNotSupported: attributes its kernel lacks). Other errors propagate.
std::string make_gpu_op(const OpTable& table, const OpBuild& b, std::unique_ptr<GpuOp>& op) {
  auto it = table.find(op_key(b.node));
  if (it == table.end()) return "no CUDA kernel";
  try {
    op = it->second(b);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotSupported) throw;
    return e.what();
  }
  return "";
}

std::vector<std::string> placement_names(const std::vector<Placement>& placement) {
  std::vector<std::string> v;
  for (Placement p : placement)
    v.push_back(p == Placement::kGpu        ? "gpu"
                : p == Placement::kHost     ? "host"
                : p == Placement::kFallback ? "cpu (fallback)"
                                            : "constant");
  return v;
}

bool has_cpu_kernel(const ir::Node& n) {
  return cpu::KernelRegistry::instance().find(n.domain, n.op_type) != nullptr;
}

// A fallback node's float16 inputs as float32 (the CPU kernels compute in float32, as TensorRT
// runs a layer without an FP16 kernel in FP32).
std::vector<Tensor> widen_half_inputs(const ir::Node& node, std::vector<const Tensor*>& ins) {
  std::vector<Tensor> held;
  held.reserve(ins.size());
  for (auto& t : ins)
    if (t && t->dtype() == DataType::kFloat16) {
      held.push_back(cpu::ew::cast_tensor(*t, DataType::kFloat32, true, node));
      t = &held.back();
    }
  return held;
}

bool debug_sync() {
  static const bool on = [] {
    const char* e = std::getenv("TRTUTILS_CUDA_SYNC");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

}  // namespace

struct Executor::Impl {
  ExecutorOptions options;
  ir::Model model;
  int64_t opset = 0;
  DeviceStatus status;

  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  std::unique_ptr<TimingChoices> timing;  // options.timing_cache
  cublasLtHandle_t lt = nullptr;
  std::shared_ptr<void> lt_workspace;
  size_t lt_workspace_bytes = size_t{32} << 20;
  // Declared before the values and ops so that it outlives every block they hold.
  DeviceAllocator alloc;

  std::unordered_map<std::string, size_t> ids;  // value name -> index into values
  std::vector<Value> values;
  std::vector<bool> is_constant;  // per value: persistent across runs
  std::vector<Placement> placement;
  std::vector<std::unique_ptr<GpuOp>> ops;             // per node (gpu nodes)
  std::vector<std::vector<size_t>> node_in, node_out;  // value ids (SIZE_MAX: omitted)
  std::vector<std::vector<size_t>> frees;              // per node: values dead after it
  std::vector<size_t> input_ids, output_ids;
  std::vector<std::string> input_names;
  std::set<std::string> host_inputs;  // a control-flow body's inputs known on the host
  uint64_t weight_bytes = 0;
  std::vector<LayerTime> profile;
  std::vector<cudaEvent_t> events;
  std::vector<bool> node_nhwc;  // per node: output 0 was channels-last in the last run
  int64_t conversions = 0;      // NCHW <-> NHWC conversions in the last run
  // Run split: before the input copies, before the nodes, before the output copies, after them.
  cudaEvent_t io_events[4] = {nullptr, nullptr, nullptr, nullptr};
  RunTimes last_times;
  std::string last_signature;  // inputs of the previous run (no_data_transfers)
  // CUDA graph state (options.cuda_graph).
  std::string graph_signature;
  cudaGraphExec_t graph_exec = nullptr;
  bool graph_failed = false, capturing = false;
  std::vector<void*> graph_inputs;

  ~Impl() {
    if (graph_exec) {
      cudaStreamSynchronize(stream);
      cudaGraphExecDestroy(graph_exec);
    }
    values.clear();
    ops.clear();
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    for (cudaEvent_t e : io_events)
      if (e) cudaEventDestroy(e);
    if (user_ready) cudaEventDestroy(user_ready);
    if (done) cudaEventDestroy(done);
    if (stream) cudaStreamSynchronize(stream);
    lt_workspace.reset();
    if (lt) cublasLtDestroy(lt);
    if (cudnn) cudnnDestroy(cudnn);
    if (stream) cudaStreamDestroy(stream);
  }

  size_t id_of(const std::string& name) {
    auto it = ids.find(name);
    if (it != ids.end()) return it->second;
    const size_t id = values.size();
    ids.emplace(name, id);
    values.emplace_back();
    is_constant.push_back(false);
    return id;
  }

  void set_constant(size_t id, const Tensor& t) {
    Value v;
    v.dtype = t.dtype();
    v.shape = t.shape();
    v.host = t;
    v.constant = true;
    values[id] = std::move(v);
    is_constant[id] = true;
  }

  void build();
  void plan();
  OuterScope scope(const std::vector<bool>& host_value) const;
  RunContext context(const ir::Node* node);
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds);
  std::map<std::string, Tensor> run_eager(const std::map<std::string, Tensor>& feeds);
  void upload_inputs(const std::map<std::string, Tensor>& feeds, RunContext& ctx);
  void enqueue(const std::map<std::string, DeviceBuffer>& inputs,
               std::map<std::string, DeviceBuffer>& outputs, cudaStream_t user);
  void bind_device_inputs(const std::map<std::string, DeviceBuffer>& inputs, RunContext& ctx,
                          bool own_copies);
  void copy_outputs(std::map<std::string, DeviceBuffer>& outputs, bool check_only);
  bool capture_graph(RunContext& ctx);
  cudaEvent_t user_ready = nullptr, done = nullptr;
  void run_nodes(RunContext& ctx);
  std::map<std::string, Tensor> collect_outputs(bool download = true);
  void mark(int k) {
    if (!io_events[k]) TRT_CUDA_CHECK(cudaEventCreate(&io_events[k]));
    TRT_CUDA_CHECK(cudaEventRecord(io_events[k], stream));
  }
  void read_times();
  // What the checks and the graph signature need of a feed (host tensor or device buffer).
  struct FeedSpec {
    DataType dtype;
    Shape shape;
  };
  using FeedSpecs = std::map<std::string, FeedSpec>;
  static FeedSpecs specs_of(const std::map<std::string, Tensor>& feeds);
  std::string signature(const FeedSpecs& feeds) const;
  void destroy_graph();
  void run_host_node(size_t i, RunContext& ctx);
  void store_host_outputs(size_t i, std::vector<Tensor>& outs, bool narrow);
  void check_feeds(const FeedSpecs& feeds) const;
  void reset_activations();
  Value& in_layout(RunContext& ctx, Value& v, bool nhwc);
};

// v in the layout asked for: v itself, or its converted copy (made once, kept in v.other).
Value& Executor::Impl::in_layout(RunContext& ctx, Value& v, bool nhwc) {
  if (v.nhwc == nhwc) return v;
  if (v.other && v.other->nhwc == nhwc) return *v.other;
  TRT_CHECK(v.shape.size() == 4 && dtype_bits(v.dtype) % 8 == 0, ErrorCode::kInternal,
            "{}: an NCHW <-> NHWC conversion of a {} {} value",
            ctx.node ? ctx.node->describe() : std::string("?"), dtype_name(v.dtype),
            shape_str(v.shape));
  const void* src = ctx.dev(v);
  auto o = std::make_shared<Value>();
  void* dst = ctx.make(*o, v.dtype, v.shape);
  convert_layout(ctx, static_cast<size_t>(dtype_bits(v.dtype) / 8), v.shape, src, dst, nhwc);
  ++conversions;
  o->nhwc = nhwc;
  v.other = o;
  return *o;
}

void Executor::Impl::build() {
  ir::Graph& g = model.graph;
  opset = model.opset();
  if (!options.graph_is_fused) g = plan_gpu_graph(g, opset);
  TRT_CUDA_CHECK(cudaSetDevice(options.device));
  TRT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  TRT_CUDNN_CHECK(cudnnCreate(&cudnn));
  TRT_CUDNN_CHECK(cudnnSetStream(cudnn, stream));
  TRT_CUBLAS_CHECK(cublasLtCreate(&lt));
  lt_workspace = device_malloc(lt_workspace_bytes);
  // Every timed choice goes through `timing` (in memory without a timing cache file), so that
  // the builder can record them (timing_decisions) and an engine's recorded ones are taken.
  timing = std::make_unique<TimingChoices>(options.timing_cache, timing_device());
  timing->preload(options.tactics);
  plan();
}

// The nodes' placement, GPU ops, liveness and profile slots (a control-flow body: this alone).
void Executor::Impl::plan() {
  const ir::Graph& g = model.graph;
  for (const auto& [name, t] : g.initializers) set_constant(id_of(name), t);
  for (const auto& in : g.inputs) {
    if (g.is_initializer(in.name)) continue;
    input_ids.push_back(id_of(in.name));
    input_names.push_back(in.name);
  }
  std::vector<bool> host_value(values.size(), false);
  for (size_t k = 0; k < input_ids.size(); ++k)
    host_value[input_ids[k]] = host_inputs.count(input_names[k]) != 0;
  auto is_host = [&](size_t id) { return id < host_value.size() && host_value[id]; };
  std::vector<std::string> unsupported;
  const OpTable& table = op_table();
  const size_t n = g.nodes.size();
  placement.assign(n, Placement::kGpu);
  ops.resize(n);
  node_in.resize(n);
  node_out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Node& node = g.nodes[i];
    bool all_const = true, all_host = true;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      if (node.inputs[j].empty()) {
        node_in[i].push_back(SIZE_MAX);
        continue;
      }
      const size_t id = id_of(node.inputs[j]);
      node_in[i].push_back(id);
      all_const = all_const && is_constant[id];
      all_host = all_host && (is_constant[id] || is_host(id));
    }
    for (const auto& o : node.outputs) node_out[i].push_back(o.empty() ? SIZE_MAX : id_of(o));
    if (is_control_flow(node)) {
      // The bodies read the implicit inputs: listed after the node's own (liveness, GPU op).
      for (const auto& v : node.implicit_inputs()) node_in[i].push_back(id_of(v));
      host_value.resize(values.size(), false);
      const std::string why =
          make_control_flow_op(node, model.opset_imports, options, scope(host_value), ops[i]);
      if (why.empty()) continue;
      if (options.allow_fallback) {
        placement[i] = Placement::kFallback;
        TRT_LOG_VERBOSE("{} runs on the CPU ({}): {}", node.describe(), kControlFlowReason, why);
      } else {
        unsupported.push_back(fmt::format("{} (op {}): {}", node.describe(), node.op_type, why));
      }
      continue;
    }
    host_value.resize(values.size(), false);
    const bool shape_op = node.op_type == "Shape" || node.op_type == "Size";
    if (all_const && !shape_op) {
      // Evaluated now, once, on the CPU (folding that the passes left, e.g. DequantizeLinear
      // of weights).
      placement[i] = Placement::kConstant;
      std::vector<const Tensor*> ins;
      for (size_t id : node_in[i]) ins.push_back(id == SIZE_MAX ? nullptr : &values[id].host);
      std::vector<Tensor> outs = cpu::run_node(node, opset, ins);
      for (size_t k = 0; k < node_out[i].size() && k < outs.size(); ++k)
        if (node_out[i][k] != SIZE_MAX) set_constant(node_out[i][k], outs[k]);
      continue;
    }
    if (shape_op || all_host) {
      placement[i] = Placement::kHost;
      if (!shape_op && !cpu::KernelRegistry::instance().find(node.domain, node.op_type))
        unsupported.push_back(fmt::format("{} (op {})", node.describe(), op_key(node)));
      for (size_t id : node_out[i])
        if (id != SIZE_MAX) host_value[id] = true;
      continue;
    }
    OpBuild b{node, opset, g,
              [this](const std::string& name) -> const Tensor* {
                auto f = ids.find(name);
                if (f == ids.end() || !is_constant[f->second]) return nullptr;
                return &values[f->second].host;
              },
              &weight_bytes};
    const std::string why = make_gpu_op(table, b, ops[i]);
    if (why.empty()) continue;
    if (options.allow_fallback && has_cpu_kernel(node)) {
      placement[i] = Placement::kFallback;
      TRT_LOG_VERBOSE("{} runs on the CPU (fallback): {}", node.describe(), why);
      continue;
    }
    unsupported.push_back(fmt::format("{} (op {}): {}", node.describe(), op_key(node), why));
  }
  if (!unsupported.empty()) {
    std::string list;
    for (const auto& u : unsupported) list += "\n  " + u;
    TRT_THROW(ErrorCode::kNotSupported, "{} node(s) cannot run on the GPU:{}\n{}",
              unsupported.size(), list,
              options.allow_fallback
                  ? "they have no CPU kernel either: remove these ops or replace them"
                  : "the engine was built with --no_fallback: rebuild without it to run them on "
                    "the CPU, or use the cpu backend");
  }
  for (const auto& out : g.outputs) output_ids.push_back(id_of(out.name));
  // Liveness: a non-constant value dies after its last reader (graph outputs never).
  std::vector<size_t> last(values.size(), SIZE_MAX);
  for (size_t i = 0; i < n; ++i) {
    for (size_t id : node_in[i])
      if (id != SIZE_MAX) last[id] = i;
    for (size_t id : node_out[i])
      if (id != SIZE_MAX && last[id] == SIZE_MAX) last[id] = i;  // unread outputs die at once
  }
  for (size_t id : output_ids) last[id] = SIZE_MAX;
  frees.assign(n, {});
  for (size_t id = 0; id < values.size(); ++id)
    if (!is_constant[id] && last[id] != SIZE_MAX) frees[last[id]].push_back(id);
  if (options.profile) {
    profile.resize(n);
    for (size_t i = 0; i < n; ++i) profile[i] = {g.nodes[i].name, g.nodes[i].op_type, 0.0, 0};
    events.resize(2 * n);
    for (auto& e : events) TRT_CUDA_CHECK(cudaEventCreate(&e));
  }
}

// What a control-flow body may read from this graph, as planned so far (host_value: per value,
// computed on the host every run).
OuterScope Executor::Impl::scope(const std::vector<bool>& host_value) const {
  return {[this](const std::string& name) -> const Tensor* {
            auto f = ids.find(name);
            return f == ids.end() || !is_constant[f->second] ? nullptr : &values[f->second].host;
          },
          [this, &host_value](const std::string& name) {
            auto f = ids.find(name);
            return f != ids.end() && f->second < host_value.size() && host_value[f->second];
          },
          [this](const std::string& name) { return model.graph.find_value_info(name); }};
}

RunContext Executor::Impl::context(const ir::Node* node) {
  RunContext c;
  c.stream = stream;
  c.cudnn = cudnn;
  c.lt = lt;
  c.lt_workspace = lt_workspace.get();
  c.lt_workspace_bytes = lt_workspace_bytes;
  c.allow_tf32 = options.allow_tf32;
  c.sm = status.sm;
  c.opset = opset;
  c.node = node;
  c.alloc = &alloc;
  c.weight_bytes = &weight_bytes;
  c.timing = options.deterministic ? nullptr : timing.get();
  c.deterministic = options.deterministic;
  // TRTUTILS_CUDA_CHANNELS_LAST=0 turns channels-last off for A/B measurements.
  c.channels_last = options.channels_last && kernel_switch("TRTUTILS_CUDA_CHANNELS_LAST", true);
  c.channels_last_min_batch = options.channels_last_min_batch;
  if (const char* e = switch_value("TRTUTILS_CUDA_NHWC_MIN_BATCH"))
    c.channels_last_min_batch = std::atoll(e);
  return c;
}

Executor::Impl::FeedSpecs Executor::Impl::specs_of(const std::map<std::string, Tensor>& feeds) {
  FeedSpecs r;
  for (const auto& [name, t] : feeds) r[name] = {t.dtype(), t.shape()};
  return r;
}

void Executor::Impl::check_feeds(const FeedSpecs& feeds) const {
  const ir::Graph& g = model.graph;
  std::map<std::string, int64_t> symbols;
  for (const auto& in : g.inputs) {
    if (g.is_initializer(in.name)) continue;
    auto it = feeds.find(in.name);
    TRT_CHECK_ARG(it != feeds.end(), "missing input '{}'", in.name);
    const FeedSpec& t = it->second;
    TRT_CHECK_ARG(in.dtype == DataType::kUndefined || t.dtype == in.dtype,
                  "input '{}' has dtype {}, expected {}", in.name, dtype_name(t.dtype),
                  dtype_name(in.dtype));
    if (!in.shape) continue;
    const ir::SymShape& s = *in.shape;
    TRT_CHECK_ARG(t.shape.size() == s.size(), "input '{}' has shape {}, expected {}", in.name,
                  shape_str(t.shape), ir::sym_shape_str(s));
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d].is_static()) {
        TRT_CHECK_ARG(t.shape[d] == s[d].value, "input '{}' has shape {}, expected {}", in.name,
                      shape_str(t.shape), ir::sym_shape_str(s));
      } else if (!s[d].param.empty()) {
        auto [pos, fresh] = symbols.emplace(s[d].param, t.shape[d]);
        TRT_CHECK_ARG(fresh || pos->second == t.shape[d],
                      "input '{}' dim {} ('{}') is {}, but another input bound '{}' to {}", in.name,
                      d, s[d].param, t.shape[d], s[d].param, pos->second);
      }
    }
  }
  for (const auto& [name, t] : feeds) {
    bool known = false;
    for (const auto& in : g.inputs) known = known || in.name == name;
    TRT_CHECK_ARG(known, "unknown input '{}'", name);
  }
}

void Executor::Impl::reset_activations() {
  for (size_t id = 0; id < values.size(); ++id)
    if (!is_constant[id]) values[id] = Value{};
}

void Executor::Impl::run_host_node(size_t i, RunContext& ctx) {
  const ir::Node& node = model.graph.nodes[i];
  if (node.op_type == "Shape" || node.op_type == "Size") {
    const Value& x = values.at(node_in[i].at(0));
    Tensor t;
    if (node.op_type == "Size") {
      t = Tensor::from_vector<int64_t>(DataType::kInt64, {}, {x.numel()});
    } else {
      const ops::DimRange r =
          ops::shape_op_range(node, opset, static_cast<int64_t>(x.shape.size()));
      std::vector<int64_t> dims;
      for (int64_t d = r.start; d < r.end; ++d) dims.push_back(x.shape[d]);
      t = Tensor::from_vector<int64_t>(DataType::kInt64, {static_cast<int64_t>(dims.size())}, dims);
    }
    Value& out = values.at(node_out[i].at(0));
    out = Value{};
    out.dtype = t.dtype();
    out.shape = t.shape();
    out.host = t;
    return;
  }
  std::vector<Tensor> outs;
  if (is_control_flow(node)) {
    outs = run_control_flow_on_cpu(node, opset, [&](const std::string& name) -> const Tensor* {
      auto f = ids.find(name);
      if (f == ids.end() || !values[f->second].defined()) return nullptr;
      return &ctx.host(values[f->second]);
    });
    store_host_outputs(i, outs, false);
    return;
  }
  std::vector<const Tensor*> ins;
  for (size_t id : node_in[i]) ins.push_back(id == SIZE_MAX ? nullptr : &ctx.host(values[id]));
  const bool fallback = placement[i] == Placement::kFallback;
  const std::vector<Tensor> widened =
      fallback ? widen_half_inputs(node, ins) : std::vector<Tensor>{};
  outs = cpu::run_node(node, opset, ins);
  store_host_outputs(i, outs, !widened.empty());
}

// A host-run node's outputs become host values (uploaded when a GPU node reads them); after
// float16 inputs were widened, float32 outputs go back to the model's float16.
void Executor::Impl::store_host_outputs(size_t i, std::vector<Tensor>& outs, bool narrow) {
  const ir::Node& node = model.graph.nodes[i];
  for (size_t k = 0; k < node_out[i].size() && k < outs.size(); ++k) {
    if (node_out[i][k] == SIZE_MAX) continue;
    if (narrow && outs[k].dtype() == DataType::kFloat32)
      outs[k] = cpu::ew::cast_tensor(outs[k], DataType::kFloat16, true, node);
    Value& v = values[node_out[i][k]];
    v = Value{};
    v.dtype = outs[k].dtype();
    v.shape = outs[k].shape();
    v.host = outs[k];
  }
}

void Executor::Impl::upload_inputs(const std::map<std::string, Tensor>& feeds, RunContext& ctx) {
  for (size_t k = 0; k < input_ids.size(); ++k) {
    const Tensor& t = feeds.at(input_names[k]);
    Value& v = values[input_ids[k]];
    v = Value{};
    v.dtype = t.dtype();
    v.shape = t.shape();
    v.host = t;
    ctx.dev(v);
  }
}

void Executor::Impl::run_nodes(RunContext& ctx) {
  const ir::Graph& g = model.graph;
  std::vector<Value*> ins, outs;
  std::vector<Layout> want;
  node_nhwc.assign(g.nodes.size(), false);
  conversions = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (placement[i] == Placement::kConstant) continue;
    const ir::Node& node = g.nodes[i];
    ctx.node = &node;
    if (options.profile) TRT_CUDA_CHECK(cudaEventRecord(events[2 * i], stream));
    try {
      if (placement[i] == Placement::kHost || placement[i] == Placement::kFallback) {
        run_host_node(i, ctx);
      } else {
        ins.clear();
        outs.clear();
        for (size_t id : node_in[i]) ins.push_back(id == SIZE_MAX ? nullptr : &values[id]);
        for (size_t id : node_out[i]) outs.push_back(id == SIZE_MAX ? nullptr : &values[id]);
        for (size_t k = 0; k < ins.size(); ++k)
          TRT_CHECK(!ins[k] || ins[k]->defined(), ErrorCode::kInternal,
                    "{}: input '{}' has no value", node.describe(),
                    k < node.inputs.size() ? node.inputs[k] : std::string("(implicit)"));
        // Layouts: NHWC values reach only ops that take them; others get NCHW copies.
        want.assign(ins.size(), Layout::kNchw);
        ops[i]->want_layouts(ctx, ins, want);
        for (size_t k = 0; k < ins.size(); ++k)
          if (ins[k] && want[k] != Layout::kAny && ins[k]->nhwc != (want[k] == Layout::kNhwc))
            ins[k] = &in_layout(ctx, *ins[k], want[k] == Layout::kNhwc);
        ops[i]->run(ctx, ins, outs);
        node_nhwc[i] = !outs.empty() && outs[0] && outs[0]->nhwc;
        if (debug_sync() && !capturing) TRT_CUDA_CHECK(cudaStreamSynchronize(stream));
      }
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find(node.describe()) != std::string::npos) throw;
      throw Error(e.code(), node.describe() + ": " + what);
    }
    if (options.profile) TRT_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], stream));
    for (size_t id : frees[i]) values[id] = Value{};
  }
  // Graph outputs leave NCHW.
  for (size_t id : output_ids) {
    Value& v = values[id];
    if (!v.defined() || !v.nhwc) continue;
    Value c = in_layout(ctx, v, false);
    v = std::move(c);
  }
  if (timing && !capturing) timing->save_if_changed();  // the first eager run's choices
}

// Called after mark(0) and mark(1) were recorded for this run.
std::map<std::string, Tensor> Executor::Impl::collect_outputs(bool download) {
  const ir::Graph& g = model.graph;
  std::map<std::string, Tensor> result;
  mark(2);
  for (size_t k = 0; download && k < output_ids.size(); ++k) {
    Value& v = values[output_ids[k]];
    TRT_CHECK(v.defined(), ErrorCode::kInternal, "graph output '{}' was not computed",
              g.outputs[k].name);
    Tensor t = v.host.defined() ? v.host.clone() : Tensor::uninitialized(v.dtype, v.shape);
    if (!v.host.defined() && t.nbytes())
      TRT_CUDA_CHECK(cudaMemcpyAsync(t.raw(), v.ptr, t.nbytes(), cudaMemcpyDeviceToHost, stream));
    result[g.outputs[k].name] = t;
  }
  mark(3);
  TRT_CUDA_CHECK(cudaStreamSynchronize(stream));
  read_times();
  return result;
}

void Executor::Impl::read_times() {
  float ms[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k)
    TRT_CUDA_CHECK(cudaEventElapsedTime(&ms[k], io_events[k], io_events[k + 1]));
  last_times = {ms[0], ms[1], ms[2]};
}

std::map<std::string, Tensor> Executor::Impl::run_eager(
    const std::map<std::string, Tensor>& feeds) {
  struct Reset {
    Impl* impl;
    ~Reset() { impl->reset_activations(); }
  } reset{this};
  RunContext ctx = context(nullptr);
  mark(0);
  upload_inputs(feeds, ctx);
  mark(1);
  run_nodes(ctx);
  std::map<std::string, Tensor> result = collect_outputs();
  if (options.profile) {
    for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
      if (placement[i] == Placement::kConstant) continue;
      float ms = 0;
      TRT_CUDA_CHECK(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]));
      profile[i].total_ms += ms;
      ++profile[i].calls;
    }
  }
  return result;
}

std::string Executor::Impl::signature(const FeedSpecs& feeds) const {
  std::string s;
  for (const auto& name : input_names) {
    const FeedSpec& t = feeds.at(name);
    s += fmt::format("{}:{}{};", name, static_cast<int>(t.dtype), shape_str(t.shape));
  }
  return s;
}

void Executor::Impl::destroy_graph() {
  if (graph_exec) {
    cudaStreamSynchronize(stream);
    cudaGraphExecDestroy(graph_exec);
    graph_exec = nullptr;
  }
  graph_inputs.clear();
  reset_activations();
}

// CUDA graphs: the first run with new input shapes runs eagerly (planning: cudnnFind,
// cuBLASLt heuristics, weight uploads); the second is captured into a graph with the same
// allocations (the pool then belongs to the graph: nothing else allocates until the shapes
// change); later runs copy the inputs into the captured buffers and launch the graph. A graph
// that cannot be captured (host values uploaded mid-run, ...) leaves the executor eager.
std::map<std::string, Tensor> Executor::Impl::run(const std::map<std::string, Tensor>& feeds) {
  const FeedSpecs specs = specs_of(feeds);
  check_feeds(specs);
  if (!options.cuda_graph || options.profile) return run_eager(feeds);
  const std::string sig = signature(specs);
  if (sig != graph_signature) {
    destroy_graph();
    graph_signature = sig;
    graph_failed = false;
    return run_eager(feeds);
  }
  if (!graph_exec && !graph_failed) {
    RunContext ctx = context(nullptr);
    upload_inputs(feeds, ctx);
    if (!capture_graph(ctx)) return run_eager(feeds);
  }
  if (graph_failed) return run_eager(feeds);
  // The buffers still hold the previous run's inputs when the shapes are the same (the graph's
  // own nodes never write to them).
  const bool transfers = !options.no_data_transfers || last_signature != sig;
  last_signature = sig;
  mark(0);
  for (size_t k = 0; transfers && k < input_ids.size(); ++k) {
    const Tensor& t = feeds.at(input_names[k]);
    if (t.nbytes())
      TRT_CUDA_CHECK(
          cudaMemcpyAsync(graph_inputs[k], t.raw(), t.nbytes(), cudaMemcpyHostToDevice, stream));
  }
  mark(1);
  TRT_CUDA_CHECK(cudaGraphLaunch(graph_exec, stream));
  return collect_outputs(!options.no_data_transfers);
}

// Captures run_nodes into graph_exec with the inputs already in values (their buffers become
// graph_inputs); false (and the executor eager from now on) when capture fails.
bool Executor::Impl::capture_graph(RunContext& ctx) {
  for (size_t id : input_ids) graph_inputs.push_back(values[id].ptr);
  TRT_CUDA_CHECK(cudaStreamSynchronize(stream));
  TRT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  capturing = ctx.capturing = true;
  std::string why;
  try {
    run_nodes(ctx);
  } catch (const std::exception& e) {
    why = e.what();
  }
  capturing = ctx.capturing = false;
  cudaGraph_t graph = nullptr;
  cudaError_t e = cudaStreamEndCapture(stream, &graph);
  if (why.empty() && e == cudaSuccess) e = cudaGraphInstantiate(&graph_exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  if (why.empty() && e == cudaSuccess) return true;
  (void)cudaGetLastError();
  if (why.empty()) why = cudaGetErrorString(e);
  TRT_LOG_WARN("CUDA graph capture failed, running eagerly: {}", why);
  graph_exec = nullptr;
  graph_failed = true;
  graph_inputs.clear();
  reset_activations();
  return false;
}

// The graph inputs as Values over the caller's device memory (an eager run reads it in place)
// or, with own_copies, over executor buffers filled by device-to-device copies (graph capture:
// the graph keeps reading those buffers).
void Executor::Impl::bind_device_inputs(const std::map<std::string, DeviceBuffer>& inputs,
                                        RunContext& ctx, bool own_copies) {
  for (size_t k = 0; k < input_ids.size(); ++k) {
    const DeviceBuffer& b = inputs.at(input_names[k]);
    Value& v = values[input_ids[k]];
    v = Value{};
    v.dtype = b.dtype;
    v.shape = b.shape;
    if (own_copies) {
      void* dst = ctx.make(v, b.dtype, b.shape);
      if (v.nbytes())
        TRT_CUDA_CHECK(cudaMemcpyAsync(dst, b.data, v.nbytes(), cudaMemcpyDeviceToDevice, stream));
    } else {
      v.ptr = b.data;
    }
  }
}

// Every graph output into its caller buffer (device to device, or host to device for values
// known on the host), dtype and shape written back; check_only: the sizes alone.
void Executor::Impl::copy_outputs(std::map<std::string, DeviceBuffer>& outputs, bool check_only) {
  const ir::Graph& g = model.graph;
  for (size_t k = 0; k < output_ids.size(); ++k) {
    const std::string& name = g.outputs[k].name;
    Value& v = values[output_ids[k]];
    auto it = outputs.find(name);
    TRT_CHECK_ARG(it != outputs.end(), "enqueue: no buffer for output '{}'", name);
    TRT_CHECK(v.defined(), ErrorCode::kInternal, "graph output '{}' was not computed", name);
    DeviceBuffer& b = it->second;
    TRT_CHECK_ARG(b.bytes >= v.nbytes(),
                  "enqueue: the buffer for output '{}' holds {} bytes, the output {} {} needs {}",
                  name, b.bytes, dtype_name(v.dtype), shape_str(v.shape), v.nbytes());
    if (check_only) continue;
    b.dtype = v.dtype;
    b.shape = v.shape;
    if (!v.nbytes()) continue;
    if (v.ptr) {
      TRT_CUDA_CHECK(cudaMemcpyAsync(b.data, v.ptr, v.nbytes(), cudaMemcpyDeviceToDevice, stream));
    } else {
      TRT_CUDA_CHECK(
          cudaMemcpyAsync(b.data, v.host.raw(), v.nbytes(), cudaMemcpyHostToDevice, stream));
    }
  }
}

void Executor::Impl::enqueue(const std::map<std::string, DeviceBuffer>& inputs,
                             std::map<std::string, DeviceBuffer>& outputs, cudaStream_t user) {
  // The checks of run() (names, dtypes, ranks, static and symbolic dims), on the buffers.
  FeedSpecs specs;
  for (const auto& [name, b] : inputs) {
    TRT_CHECK_ARG(b.data || shape_numel(b.shape) == 0, "enqueue: input '{}' has no device pointer",
                  name);
    specs[name] = {b.dtype, b.shape};
  }
  check_feeds(specs);
  const std::string sig = signature(specs);
  if (!user_ready) TRT_CUDA_CHECK(cudaEventCreateWithFlags(&user_ready, cudaEventDisableTiming));
  if (!done) TRT_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  TRT_CUDA_CHECK(cudaEventRecord(user_ready, user));
  TRT_CUDA_CHECK(cudaStreamWaitEvent(stream, user_ready, 0));
  const bool use_graph = options.cuda_graph && !options.profile;
  auto eager = [&] {
    struct Reset {
      Impl* impl;
      ~Reset() { impl->reset_activations(); }
    } reset{this};
    RunContext ctx = context(nullptr);
    bind_device_inputs(inputs, ctx, false);
    run_nodes(ctx);
    copy_outputs(outputs, true);  // all sizes checked before any output copy
    copy_outputs(outputs, false);
  };
  if (!use_graph || sig != graph_signature) {
    if (use_graph) {
      destroy_graph();
      graph_signature = sig;
      graph_failed = false;
    }
    eager();
  } else {
    if (!graph_exec && !graph_failed) {
      RunContext ctx = context(nullptr);
      bind_device_inputs(inputs, ctx, true);
      capture_graph(ctx);
    }
    if (graph_exec) {
      copy_outputs(outputs, true);
      for (size_t k = 0; k < input_ids.size(); ++k) {
        const DeviceBuffer& b = inputs.at(input_names[k]);
        const size_t bytes = dtype_storage_bytes(b.dtype, shape_numel(b.shape));
        if (bytes)
          TRT_CUDA_CHECK(
              cudaMemcpyAsync(graph_inputs[k], b.data, bytes, cudaMemcpyDeviceToDevice, stream));
      }
      TRT_CUDA_CHECK(cudaGraphLaunch(graph_exec, stream));
      copy_outputs(outputs, false);
    } else {
      eager();
    }
  }
  TRT_CUDA_CHECK(cudaEventRecord(done, stream));
  TRT_CUDA_CHECK(cudaStreamWaitEvent(user, done, 0));
}

GpuCoverage gpu_coverage(const ir::Model& model) {
  return gpu_coverage(model, {});
}

GpuCoverage gpu_coverage(const ir::Model& model, const std::set<std::string>& host_inputs) {
  // The same walk as Executor::Impl::plan, by name: constants folded (on the CPU, as the
  // executor does, so factories see the weights it will see), host shape arithmetic, then GPU
  // factories (they check attributes and make no CUDA calls); control-flow bodies recursively.
  const ir::Graph& g = model.graph;
  std::map<std::string, Tensor> constant(g.initializers.begin(), g.initializers.end());
  std::set<std::string> host = host_inputs;
  const OpTable& table = op_table();
  GpuCoverage cov;
  auto constant_of = [&](const std::string& name) -> const Tensor* {
    auto f = constant.find(name);
    return f == constant.end() ? nullptr : &f->second;
  };
  for (const ir::Node& node : g.nodes) {
    bool all_const = true, all_host = true;
    for (const auto& in : node.inputs) {
      if (in.empty()) continue;
      all_const = all_const && constant.count(in);
      all_host = all_host && (constant.count(in) || host.count(in));
    }
    if (is_control_flow(node)) {
      const OuterScope outer{constant_of, [&](const std::string& v) { return host.count(v) != 0; },
                             [&](const std::string& v) { return g.find_value_info(v); }};
      control_flow_coverage(node, model.opset_imports, outer, cov);
      continue;
    }
    const bool shape_op = node.op_type == "Shape" || node.op_type == "Size";
    if (!shape_op && (all_const || all_host) && !has_cpu_kernel(node)) {
      cov.unsupported.push_back(
          fmt::format("{} (op {}): no kernel", node.describe(), op_key(node)));
      continue;
    }
    if (all_const && !shape_op) {
      std::vector<const Tensor*> ins;
      for (const auto& in : node.inputs) ins.push_back(in.empty() ? nullptr : constant_of(in));
      std::vector<Tensor> outs = cpu::run_node(node, model.opset(), ins);
      for (size_t k = 0; k < node.outputs.size() && k < outs.size(); ++k)
        if (!node.outputs[k].empty()) constant[node.outputs[k]] = outs[k];
      continue;
    }
    if (shape_op || all_host) {
      for (const auto& o : node.outputs)
        if (!o.empty()) host.insert(o);
      continue;
    }
    std::unique_ptr<GpuOp> op;
    const std::string why = make_gpu_op(table, {node, model.opset(), g, constant_of, nullptr}, op);
    if (why.empty()) continue;
    if (has_cpu_kernel(node))
      cov.fallback.push_back({node.name, op_key(node), why});
    else
      cov.unsupported.push_back(fmt::format("{} (op {}): {}", node.describe(), op_key(node), why));
  }
  return cov;
}

SubgraphExecutor::SubgraphExecutor(const ir::Graph& body,
                                   const std::vector<ir::OpsetImport>& opsets,
                                   const ExecutorOptions& options, const OuterScope& outer,
                                   const std::vector<size_t>& host_formals)
    : impl_(std::make_unique<Executor::Impl>()) {
  BodyModel b = make_body_model(body, opsets, outer, host_formals);
  outer_inputs_ = std::move(b.outer_inputs);
  impl_->status = device_status();
  impl_->options = body_options(options);
  impl_->model = std::move(b.model);
  impl_->opset = impl_->model.opset();
  impl_->host_inputs = std::move(b.host_inputs);
  impl_->plan();
}

SubgraphExecutor::~SubgraphExecutor() = default;

std::vector<Value> SubgraphExecutor::run(RunContext& ctx, const std::vector<Value>& inputs) {
  Executor::Impl& m = *impl_;
  TRT_CHECK(inputs.size() == m.input_ids.size(), ErrorCode::kInternal,
            "a control-flow body takes {} inputs, given {}", m.input_ids.size(), inputs.size());
  // The body runs on the caller's stream (debug syncs included); its values go when it ends.
  struct Reset {
    Executor::Impl& m;
    const ir::Node* node;
    RunContext& ctx;
    ~Reset() {
      m.reset_activations();
      m.stream = nullptr;
      ctx.node = node;
    }
  } reset{m, ctx.node, ctx};
  m.stream = ctx.stream;
  for (size_t k = 0; k < inputs.size(); ++k) m.values[m.input_ids[k]] = inputs[k];
  m.run_nodes(ctx);
  std::vector<Value> outs;
  for (size_t k = 0; k < m.output_ids.size(); ++k) {
    Value v = m.values[m.output_ids[k]];
    TRT_CHECK(v.defined(), ErrorCode::kInternal, "body output '{}' was not computed",
              m.model.graph.outputs[k].name);
    v.constant = false;  // a constant's device copy (if any) stays shared through v.owner
    outs.push_back(std::move(v));
  }
  return outs;
}

std::vector<std::string> SubgraphExecutor::node_placement() const {
  return placement_names(impl_->placement);
}

Executor::Executor(const ir::Model& model, const ExecutorOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->status = device_status();
  TRT_CHECK(impl_->status.usable, ErrorCode::kNotSupported,
            "the CUDA backend cannot run here: {}; use the cpu backend", impl_->status.why);
  impl_->options = options;
  impl_->model = model;
  const SwitchScope scope(&impl_->options.switches);
  const DeviceWeightsScope weights(impl_->options.weights.get());
  impl_->build();
}

Executor::~Executor() = default;

std::map<std::string, Tensor> Executor::run(const std::map<std::string, Tensor>& feeds) {
  const SwitchScope scope(&impl_->options.switches);
  const DeviceWeightsScope weights(impl_->options.weights.get());
  return impl_->run(feeds);
}

void Executor::enqueue(const std::map<std::string, DeviceBuffer>& inputs,
                       std::map<std::string, DeviceBuffer>& outputs, void* stream) {
  const SwitchScope scope(&impl_->options.switches);
  const DeviceWeightsScope weights(impl_->options.weights.get());
  impl_->enqueue(inputs, outputs, static_cast<cudaStream_t>(stream));
}

const std::vector<LayerTime>& Executor::profile() const {
  return impl_->profile;
}

int64_t Executor::timing_cache_hits() const {
  return impl_->timing ? impl_->timing->hits() : 0;
}
int64_t Executor::timing_cache_recorded() const {
  return impl_->timing ? impl_->timing->recorded() : 0;
}

std::map<std::string, std::string> Executor::timing_decisions() const {
  return impl_->options.deterministic ? std::map<std::string, std::string>{}
                                      : impl_->timing->decisions();
}

uint64_t Executor::device_weight_bytes() const {
  return impl_->weight_bytes;
}

uint64_t Executor::device_activation_bytes() const {
  return impl_->alloc.peak_bytes();
}

std::shared_ptr<uint8_t> alloc_pinned(size_t bytes) {
  if (!device_status().usable || bytes == 0) return nullptr;
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  std::memset(p, 0, bytes);
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { cudaFreeHost(q); });
}

RunTimes Executor::last_run_times() const {
  return impl_->last_times;
}

std::vector<std::string> Executor::node_placement() const {
  return placement_names(impl_->placement);
}

std::vector<std::string> Executor::node_kernels() const {
  std::vector<std::string> v;
  for (size_t i = 0; i < impl_->placement.size(); ++i) {
    const Placement p = impl_->placement[i];
    std::string k = p == Placement::kGpu        ? impl_->ops[i]->kernel()
                    : p == Placement::kHost     ? "host"
                    : p == Placement::kFallback ? "cpu fallback"
                                                : "constant";
    if (i < impl_->node_nhwc.size() && impl_->node_nhwc[i] && k.find("NHWC") == std::string::npos)
      k += " NHWC";
    v.push_back(k);
  }
  return v;
}

int64_t Executor::layout_conversions() const {
  return impl_->conversions;
}

}  // namespace trtutils::cuda
