#include "engine/session.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/nn_kernels.h"
#include "core/check.h"
#include "core/tensor_pool.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils {

namespace {

bool is_if(const ir::Node& n) {
  return (n.domain.empty() || n.domain == "ai.onnx") && n.op_type == "If";
}
bool is_loop(const ir::Node& n) {
  return (n.domain.empty() || n.domain == "ai.onnx") && n.op_type == "Loop";
}

// Every node of g and of its If branches and Loop bodies (where Constant nodes are run by the
// interpreter).
template <typename F>
void for_each_node(const ir::Graph& g, bool branch, F&& f) {
  for (const auto& n : g.nodes) {
    if (is_if(n) || is_loop(n)) {
      for (const char* b : {"then_branch", "else_branch", "body"})
        if (const ir::Attribute* a = n.attr(b); a && a->g) for_each_node(*a->g, true, f);
      continue;
    }
    if (branch && n.op_type == "Constant" && (n.domain.empty() || n.domain == "ai.onnx")) continue;
    f(n);
  }
}

// A Constant node's value (inside If branches: the main graph's are folded into initializers).
Tensor constant_value(const ir::Node& n) {
  if (const ir::Attribute* a = n.attr("value"); a && a->kind == ir::Attribute::Kind::kTensor)
    return a->t;
  if (n.has_attr("value_float"))
    return Tensor::from_vector<float>(DataType::kFloat32, {}, {n.attr_float("value_float", 0)});
  if (n.has_attr("value_floats")) {
    const auto v = n.attr_floats("value_floats");
    return Tensor::from_vector<float>(DataType::kFloat32, {static_cast<int64_t>(v.size())}, v);
  }
  if (n.has_attr("value_int"))
    return Tensor::from_vector<int64_t>(DataType::kInt64, {}, {n.attr_int("value_int", 0)});
  if (n.has_attr("value_ints")) {
    const auto v = n.attr_ints("value_ints");
    return Tensor::from_vector<int64_t>(DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
  }
  TRT_THROW(ErrorCode::kNotSupported,
            "{}: only value, value_float(s) and value_int(s) are "
            "supported",
            n.describe());
}

using Lookup = std::function<const Tensor*(const std::string&)>;

std::vector<Tensor> run_if(const ir::Node& node, int64_t opset, bool reference,
                           const Lookup& outer);
std::vector<Tensor> run_loop(const ir::Node& node, int64_t opset, bool reference,
                             const Lookup& outer);

// Runs an If branch: its values, then its initializers, then the enclosing scope's.
std::vector<Tensor> run_branch(const ir::Graph& sub, int64_t opset, bool reference,
                               const Lookup& outer) {
  std::unordered_map<std::string, Tensor> env;
  const Lookup lookup = [&](const std::string& name) -> const Tensor* {
    if (auto it = env.find(name); it != env.end()) return &it->second;
    if (const Tensor* t = sub.initializer(name)) return t;
    return outer(name);
  };
  std::vector<const Tensor*> inputs;
  std::vector<bool> constant;  // the branch's initializers (kernels may cache what they derive)
  for (const auto& node : sub.nodes) {
    std::vector<Tensor> outs;
    if (node.op_type == "Constant" && (node.domain.empty() || node.domain == "ai.onnx")) {
      outs.push_back(constant_value(node));
    } else if (is_if(node)) {
      outs = run_if(node, opset, reference, lookup);
    } else if (is_loop(node)) {
      outs = run_loop(node, opset, reference, lookup);
    } else {
      inputs.clear();
      constant.clear();
      for (const auto& in : node.inputs) {
        const Tensor* t = in.empty() ? nullptr : lookup(in);
        TRT_CHECK(in.empty() || t, ErrorCode::kInternal, "{}: input '{}' was not computed",
                  node.describe(), in);
        inputs.push_back(t);
        constant.push_back(!in.empty() && sub.initializer(in) != nullptr);
      }
      outs = cpu::run_node(node, opset, inputs, reference, constant);
    }
    for (size_t k = 0; k < outs.size() && k < node.outputs.size(); ++k)
      if (!node.outputs[k].empty()) env[node.outputs[k]] = std::move(outs[k]);
  }
  std::vector<Tensor> result;
  for (const auto& o : sub.outputs) {
    const Tensor* t = lookup(o.name);
    TRT_CHECK(t, ErrorCode::kInternal, "branch output '{}' was not computed", o.name);
    result.push_back(*t);
  }
  return result;
}

std::vector<Tensor> run_if(const ir::Node& node, int64_t opset, bool reference,
                           const Lookup& outer) {
  TRT_CHECK_ARG(!node.inputs.empty() && !node.inputs[0].empty(), "{}: the condition is missing",
                node.describe());
  const Tensor* cond = outer(node.inputs[0]);
  TRT_CHECK(cond, ErrorCode::kInternal, "{}: the condition was not computed", node.describe());
  TRT_CHECK_ARG(cond->numel() == 1, "{}: the condition must hold one value, got {}",
                node.describe(), shape_str(cond->shape()));
  const char* which = cond->at_double(0) != 0.0 ? "then_branch" : "else_branch";
  const ir::Attribute* a = node.attr(which);
  TRT_CHECK_ARG(a && a->g, "{}: attribute {} is missing", node.describe(), which);
  std::vector<Tensor> outs = run_branch(*a->g, opset, reference, outer);
  TRT_CHECK_ARG(outs.size() == node.outputs.size(), "{}: {} has {} outputs, the node {}",
                node.describe(), which, outs.size(), node.outputs.size());
  return outs;
}

// A Loop's scan output: the iterations' values stacked on a new first axis (all of one shape).
Tensor stack_iterations(const ir::Node& node, const std::vector<Tensor>& parts, DataType dt) {
  if (parts.empty()) return Tensor(dt == DataType::kUndefined ? DataType::kFloat32 : dt, {0});
  Shape shape = parts[0].shape();
  for (const Tensor& t : parts)
    TRT_CHECK_ARG(t.shape() == shape && t.dtype() == parts[0].dtype(),
                  "{}: a scan output changes shape between iterations ({} and {})", node.describe(),
                  shape_str(shape), shape_str(t.shape()));
  shape.insert(shape.begin(), static_cast<int64_t>(parts.size()));
  Tensor out = Tensor::uninitialized(parts[0].dtype(), shape);
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (const Tensor& t : parts) {
    std::memcpy(dst, t.raw(), t.nbytes());
    dst += t.nbytes();
  }
  return out;
}

// Loop (opsets 1-21): up to M iterations while cond holds; the body's inputs are the iteration
// number, the condition and the loop-carried values, its outputs the next condition, the
// loop-carried values and the scan outputs. A loop with neither M nor a condition that ever
// turns false stops with an error after kMaxLoopIterations.
constexpr int64_t kMaxLoopIterations = int64_t{1} << 24;

std::vector<Tensor> run_loop(const ir::Node& node, int64_t opset, bool reference,
                             const Lookup& outer) {
  const ir::Attribute* a = node.attr("body");
  TRT_CHECK_ARG(a && a->g, "{}: attribute body is missing", node.describe());
  const ir::Graph& body = *a->g;
  auto input = [&](size_t i) -> const Tensor* {
    if (i >= node.inputs.size() || node.inputs[i].empty()) return nullptr;
    const Tensor* t = outer(node.inputs[i]);
    TRT_CHECK(t, ErrorCode::kInternal, "{}: input '{}' was not computed", node.describe(),
              node.inputs[i]);
    return t;
  };
  const size_t carried = node.inputs.size() >= 2 ? node.inputs.size() - 2 : 0;
  TRT_CHECK_ARG(body.inputs.size() == carried + 2 &&
                    body.outputs.size() == node.outputs.size() + 1 &&
                    node.outputs.size() >= carried,
                "{}: the body's {} inputs and {} outputs do not match {} loop-carried values",
                node.describe(), body.inputs.size(), body.outputs.size(), carried);
  int64_t trip = std::numeric_limits<int64_t>::max();
  if (const Tensor* m = input(0)) {
    TRT_CHECK_ARG(m->numel() == 1, "{}: M must hold one value", node.describe());
    trip = m->to_int64_vector()[0];
  }
  bool keep = true;
  if (const Tensor* c = input(1)) {
    TRT_CHECK_ARG(c->numel() == 1, "{}: cond must hold one value", node.describe());
    keep = c->at_double(0) != 0.0;
  }
  std::vector<Tensor> values;
  for (size_t k = 0; k < carried; ++k) {
    const Tensor* v = input(2 + k);
    TRT_CHECK_ARG(v, "{}: loop-carried input {} is missing", node.describe(), k);
    values.push_back(*v);
  }
  std::vector<std::vector<Tensor>> scans(node.outputs.size() - carried);
  for (int64_t i = 0; i < trip && keep; ++i) {
    TRT_CHECK_ARG(i < kMaxLoopIterations, "{}: the loop did not end after {} iterations",
                  node.describe(), kMaxLoopIterations);
    std::unordered_map<std::string, Tensor> bound;
    bound[body.inputs[0].name] = Tensor::from_vector<int64_t>(DataType::kInt64, {}, {i});
    Tensor c(DataType::kBool, {});
    static_cast<uint8_t*>(c.raw())[0] = 1;
    bound[body.inputs[1].name] = c;
    for (size_t k = 0; k < carried; ++k) bound[body.inputs[2 + k].name] = values[k];
    const Lookup inner = [&](const std::string& name) -> const Tensor* {
      auto it = bound.find(name);
      return it != bound.end() ? &it->second : outer(name);
    };
    std::vector<Tensor> outs = run_branch(body, opset, reference, inner);
    TRT_CHECK_ARG(outs[0].numel() == 1, "{}: the body's condition must hold one value",
                  node.describe());
    keep = outs[0].at_double(0) != 0.0;
    for (size_t k = 0; k < carried; ++k) values[k] = outs[1 + k];
    for (size_t s = 0; s < scans.size(); ++s) scans[s].push_back(outs[1 + carried + s]);
  }
  for (size_t s = 0; s < scans.size(); ++s)
    values.push_back(stack_iterations(node, scans[s], body.outputs[1 + carried + s].dtype));
  return values;
}

std::vector<Tensor> run_control_flow(const ir::Node& node, int64_t opset, bool reference,
                                     const Lookup& outer) {
  return is_loop(node) ? run_loop(node, opset, reference, outer)
                       : run_if(node, opset, reference, outer);
}

}  // namespace

bool is_control_flow(const ir::Node& node) {
  return is_if(node) || is_loop(node);
}

std::vector<Tensor> run_control_flow_on_cpu(
    const ir::Node& node, int64_t opset,
    const std::function<const Tensor*(const std::string&)>& outer) {
  return run_control_flow(node, opset, /*reference=*/false, outer);
}

void check_cpu_kernels(const ir::Graph& graph) {
  // Every node must have a kernel: report every unsupported op type at once, with its node
  // count and the first node (on one line: the CLI prints an error as a single "error:" line).
  std::vector<std::string> order;  // op types in order of first appearance
  std::unordered_map<std::string, std::pair<size_t, std::string>> seen;
  size_t total = 0;
  for_each_node(graph, false, [&](const ir::Node& n) {
    if (cpu::KernelRegistry::instance().find(n.domain, n.op_type)) return;
    const std::string op = n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type;
    auto [it, fresh] = seen.try_emplace(op, 0, n.describe());
    if (fresh) order.push_back(op);
    ++it->second.first;
    ++total;
  });
  if (total == 0) return;
  std::string list;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& [count, first] = seen.at(order[i]);
    list += fmt::format("{}{} ({} node{}: {}{})", i ? "; " : " ", order[i], count,
                        count == 1 ? "" : "s", first, count == 1 ? "" : ", ...");
  }
  TRT_THROW(ErrorCode::kNotSupported,
            "{} node(s) use operators the CPU backend does not support:{}", total, list);
}

void mark_every_node_output(ir::Graph& graph) {
  std::unordered_set<std::string> have;
  for (const auto& v : graph.inputs) have.insert(v.name);
  for (const auto& v : graph.outputs) have.insert(v.name);
  std::vector<ir::ValueInfo> added;
  for (const auto& n : graph.nodes)
    for (const auto& o : n.outputs) {
      if (o.empty() || !have.insert(o).second) continue;
      std::optional<ir::ValueInfo> vi = graph.find_value_info(o);
      if (!vi) {
        vi.emplace();
        vi->name = o;
      }
      added.push_back(std::move(*vi));
    }
  for (auto& v : added) graph.outputs.push_back(std::move(v));
}

Session Session::from_file(const std::filesystem::path& onnx, SessionOptions options) {
  return Session(onnx_io::load_model(onnx), options);
}

// Free buffers a session's pool keeps at most (beyond: returned to the system).
constexpr size_t kPoolMaxFreeBytes = size_t{1} << 30;

Session::ReleaseStaleCaches::~ReleaseStaleCaches() {
  cpu::nn::onednn_release_stale();
}

Session::Session(ir::Model model, SessionOptions options)
    : model_(std::move(model)), options_(options), opset_(model_.opset()) {
  check_thread_count(options_.num_threads);
  pool_ = TensorPool::create(kPoolMaxFreeBytes);
  ir::Graph& g = model_.graph;
  g.topological_sort();
  std::set<std::string> disabled;
  if (!options_.fold_constants) disabled.insert("constant_folding");
  if (options_.run_passes) {
    passes::run_pipeline(g, opset_, disabled);
    // The reference runs the plain graph; the fast kernels get the CPU plan's layouts, except
    // when every node output is returned (compare --layerwise matches NCHW values by name).
    if (!options_.use_reference && !options_.mark_all_outputs)
      passes::run_cpu_layout_pipeline(
          g, disabled, {cpu::nn::pointwise_depthwise_native, cpu::nn::permuted_matmul_native});
  }

  check_cpu_kernels(g);
  if (options_.mark_all_outputs) mark_every_node_output(g);

  // Liveness: free each intermediate after its last reader; graph outputs are never freed.
  std::unordered_set<std::string> keep;
  for (const auto& o : g.outputs) keep.insert(o.name);
  std::unordered_map<std::string, size_t> last;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& in : g.nodes[i].inputs)
      if (!in.empty() && !g.is_initializer(in)) last[in] = i;
    for (const auto& in : g.nodes[i].implicit_inputs())  // read by an If branch
      if (!g.is_initializer(in)) last[in] = i;
  }
  // A node output nobody reads is freed right after the node.
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty() && !last.count(o)) last[o] = i;
  last_use_.assign(g.nodes.size(), {});
  for (const auto& [name, i] : last)
    if (!keep.count(name)) last_use_[i].push_back(name);
  if (options_.profile)
    for (const auto& n : g.nodes) profile_.push_back({n.name, n.op_type, 0.0, 0});
}

void Session::check_feeds(const std::map<std::string, Tensor>& feeds) const {
  const ir::Graph& g = model_.graph;
  for (const auto& [name, t] : feeds) {
    const bool known =
        std::any_of(g.inputs.begin(), g.inputs.end(),
                    [&name = name](const ir::ValueInfo& v) { return v.name == name; });
    if (!known) {
      std::string names;
      for (const auto& v : g.inputs) names += (names.empty() ? "'" : ", '") + v.name + "'";
      TRT_THROW(ErrorCode::kInvalidArgument, "unknown input '{}'; the model's inputs are {}", name,
                names);
    }
  }
  std::map<std::string, int64_t> bound;  // symbolic dim -> size
  for (const auto& v : g.inputs) {
    auto it = feeds.find(v.name);
    TRT_CHECK(it != feeds.end(), ErrorCode::kInvalidArgument, "input '{}' ({} {}) is not given",
              v.name, dtype_name(v.dtype), v.shape ? ir::sym_shape_str(*v.shape) : "[?]");
    const Tensor& t = it->second;
    TRT_CHECK(v.dtype == DataType::kUndefined || t.dtype() == v.dtype, ErrorCode::kInvalidArgument,
              "input '{}' must be {}, got {}", v.name, dtype_name(v.dtype), dtype_name(t.dtype()));
    if (!v.shape) continue;
    const auto& s = *v.shape;
    bool ok = s.size() == t.rank();
    for (size_t d = 0; ok && d < s.size(); ++d) {
      if (s[d].is_static()) {
        ok = s[d].value == t.dim(d);
      } else if (!s[d].param.empty()) {
        auto [b, inserted] = bound.emplace(s[d].param, t.dim(d));
        TRT_CHECK(inserted || b->second == t.dim(d), ErrorCode::kInvalidArgument,
                  "input '{}' has {} = {} but another input bound it to {}", v.name, s[d].param,
                  t.dim(d), b->second);
      }
    }
    TRT_CHECK(ok, ErrorCode::kInvalidArgument, "input '{}' must have shape {}, got {}", v.name,
              ir::sym_shape_str(s), shape_str(t.shape()));
  }
}

size_t Session::weight_bytes() const {
  size_t n = 0;
  for (const auto& [name, t] : model_.graph.initializers) n += t.nbytes();
  return n;
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& feeds) {
  check_feeds(feeds);
  const TensorPoolScope pool_scope(pool_.get());
  if (options_.num_threads > 0) omp_set_num_threads(options_.num_threads);
  const ir::Graph& g = model_.graph;
  std::unordered_map<std::string, Tensor> env;
  for (const auto& [name, t] : feeds) env[name] = t;
  const auto dies_at = [&](size_t i, const std::string& v) {
    const auto& dead = last_use_[i];
    return std::find(dead.begin(), dead.end(), v) != dead.end();
  };
  std::vector<const Tensor*> inputs;
  std::vector<bool> constant, donated;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& node = g.nodes[i];
    inputs.clear();
    constant.assign(node.inputs.size(), false);
    donated.assign(node.inputs.size(), false);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const std::string& in = node.inputs[k];
      if (in.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      if (const Tensor* t = g.initializer(in)) {
        inputs.push_back(t);
        constant[k] = true;
        continue;
      }
      auto it = env.find(in);
      TRT_CHECK(it != env.end(), ErrorCode::kInternal, "{}: input '{}' was not computed",
                node.describe(), in);
      inputs.push_back(&it->second);
      // The value dies here and this env entry holds its buffer alone (no view, no feed, no
      // graph output: those are never in last_use_): the kernel may overwrite it.
      donated[k] = dies_at(i, in) && it->second.weak_buffer().use_count() == 1 &&
                   std::count(node.inputs.begin(), node.inputs.end(), in) == 1;
    }
    const auto t0 = options_.profile ? std::chrono::steady_clock::now()
                                     : std::chrono::steady_clock::time_point{};
    std::vector<Tensor> outs =
        is_control_flow(node)
            ? run_control_flow(node, opset_, options_.use_reference,
                               [&](const std::string& name) -> const Tensor* {
                                 if (const Tensor* t = g.initializer(name)) return t;
                                 auto it = env.find(name);
                                 return it == env.end() ? nullptr : &it->second;
                               })
            : cpu::run_node(node, opset_, inputs, options_.use_reference, constant, donated);
    if (options_.profile) {
      profile_[i].total_ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ++profile_[i].calls;
    }
    for (size_t k = 0; k < outs.size(); ++k)
      if (!node.outputs[k].empty()) env[node.outputs[k]] = std::move(outs[k]);
    for (const auto& dead : last_use_[i]) env.erase(dead);
    // High-water mark of live activation bytes (buffers shared by views counted once).
    std::unordered_set<const void*> seen;
    size_t live = 0;
    for (const auto& [name, t] : env)
      if (seen.insert(t.raw()).second) live += t.nbytes();
    peak_activation_bytes_ = std::max(peak_activation_bytes_, live);
  }
  std::map<std::string, Tensor> result;
  for (const auto& o : g.outputs) {
    if (const Tensor* t = g.initializer(o.name)) {
      result[o.name] = *t;
      continue;
    }
    auto it = env.find(o.name);
    TRT_CHECK(it != env.end(), ErrorCode::kInternal, "output '{}' was not computed", o.name);
    result[o.name] = it->second;
  }
  return result;
}

}  // namespace trtutils
