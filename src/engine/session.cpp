#include "engine/session.h"

#include <omp.h>

#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "backends/cpu/kernel_registry.h"
#include "core/check.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "trtutils/logging.h"

namespace trtutils {

void check_cpu_kernels(const ir::Graph& graph) {
  // Every node must have a kernel: report all unsupported ops at once (on one line: the CLI
  // prints an error as a single "error:" line).
  std::vector<std::string> unsupported;
  for (const auto& n : graph.nodes)
    if (!cpu::KernelRegistry::instance().find(n.domain, n.op_type))
      unsupported.push_back(fmt::format("{} (op '{}{}{}')", n.describe(), n.domain,
                                        n.domain.empty() ? "" : "::", n.op_type));
  if (unsupported.empty()) return;
  std::string list;
  for (size_t i = 0; i < unsupported.size() && i < 10; ++i)
    list += (i ? "; " : " ") + unsupported[i];
  if (unsupported.size() > 10) list += fmt::format("; and {} more", unsupported.size() - 10);
  TRT_THROW(ErrorCode::kNotSupported,
            "{} node(s) use operators the CPU backend does not support:{}", unsupported.size(),
            list);
}

Session Session::from_file(const std::filesystem::path& onnx, SessionOptions options) {
  return Session(onnx_io::load_model(onnx), options);
}

Session::Session(ir::Model model, SessionOptions options)
    : model_(std::move(model)), options_(options), opset_(model_.opset()) {
  ir::Graph& g = model_.graph;
  g.topological_sort();
  std::set<std::string> disabled;
  if (!options_.fold_constants) disabled.insert("constant_folding");
  if (options_.run_passes) passes::run_pipeline(g, opset_, disabled);

  check_cpu_kernels(g);

  // Liveness: free each intermediate after its last reader; graph outputs are never freed.
  std::unordered_set<std::string> keep;
  for (const auto& o : g.outputs) keep.insert(o.name);
  std::unordered_map<std::string, size_t> last;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& in : g.nodes[i].inputs)
      if (!in.empty() && !g.is_initializer(in)) last[in] = i;
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
  if (options_.num_threads > 0) omp_set_num_threads(options_.num_threads);
  const ir::Graph& g = model_.graph;
  std::unordered_map<std::string, Tensor> env;
  for (const auto& [name, t] : feeds) env[name] = t;
  std::vector<const Tensor*> inputs;
  std::vector<bool> constant;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& node = g.nodes[i];
    inputs.clear();
    constant.assign(node.inputs.size(), false);
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
    }
    const auto t0 = options_.profile ? std::chrono::steady_clock::now()
                                     : std::chrono::steady_clock::time_point{};
    std::vector<Tensor> outs =
        cpu::run_node(node, opset_, inputs, options_.use_reference, constant);
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
