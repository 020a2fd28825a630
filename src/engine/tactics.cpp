#include "engine/tactics.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>

#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/nn_kernels.h"
#include "core/check.h"
#include "ir/graph_builder.h"
#include "passes/passes.h"
#include "trtutils/file_util.h"
#include "trtutils/logging.h"

namespace trtutils::engine {

using nlohmann::json;
namespace fs = std::filesystem;

TimingCache TimingCache::load(const fs::path& path) {
  TimingCache c;
  std::error_code ec;
  if (!fs::exists(path, ec)) return c;
  const std::string text = read_file(path, uint64_t{64} << 20);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    TRT_THROW(ErrorCode::kInvalidArgument, "{} is not a trtutils timing cache: {}", path.string(),
              e.what());
  }
  TRT_CHECK_ARG(j.is_object() && j.value("format", "") == "trtutils-timing-cache" &&
                    j.value("version", 0) == 1 && j.contains("entries") && j["entries"].is_object(),
                "{} is not a trtutils timing cache (version 1); delete it or pass another file",
                path.string());
  c.entries_ = j["entries"];
  return c;
}

void TimingCache::save(const fs::path& path) const {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  json j{{"format", "trtutils-timing-cache"}, {"version", 1}, {"entries", entries_}};
  write_file_atomic(path, j.dump(1) + "\n");
}

const json* TimingCache::find(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &*it;
}

void TimingCache::put(const std::string& key, json value) {
  entries_[key] = std::move(value);
  dirty_ = true;
}

fs::path global_timing_cache_path() {
  if (const char* d = std::getenv("TRTUTILS_CACHE_DIR"); d && *d)
    return fs::path(d) / "timing.cache";
  if (const char* h = std::getenv("HOME"); h && *h)
    return fs::path(h) / ".cache" / "trtutils" / "timing.cache";
  return fs::temp_directory_path() / "trtutils-timing.cache";
}

namespace {

std::string attr_text(const ir::Attribute& a) {
  switch (a.kind) {
    case ir::Attribute::Kind::kInt:
      return std::to_string(a.i);
    case ir::Attribute::Kind::kFloat:
      return fmt::format("{}", a.f);
    case ir::Attribute::Kind::kString:
      return a.s;
    case ir::Attribute::Kind::kInts:
      return fmt::format("{}", fmt::join(a.ints, ","));
    case ir::Attribute::Kind::kFloats:
      return fmt::format("{}", fmt::join(a.floats, ","));
    default:
      return "?";
  }
}

Tensor random_like(DataType dt, const Shape& shape, uint32_t seed) {
  Tensor t(dt, shape);
  if (dt != DataType::kFloat32) return t;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

}  // namespace

TacticStats select_tactics(ir::Model& model, const std::map<std::string, Shape>& input_shapes,
                           TimingCache& cache, const std::string& device, int num_threads) {
  TacticStats stats;
  // Shapes at the planned input sizes.
  ir::Model shaped = model;
  for (auto& v : shaped.graph.inputs) {
    auto it = input_shapes.find(v.name);
    if (it != input_shapes.end()) v.shape = ir::sym_shape_from_static(it->second);
  }
  shaped.graph.value_info.clear();
  passes::infer_shapes(shaped.graph, shaped.opset());
  const ir::Graph& sg = shaped.graph;
  if (num_threads > 0) omp_set_num_threads(num_threads);
  const int threads = num_threads > 0 ? num_threads : omp_get_max_threads();
  for (auto& node : model.graph.nodes) {
    const bool conv = (node.op_type == "Conv" && node.domain.empty()) ||
                      (node.op_type == "FusedConv" && node.domain == "com.trtutils");
    if (!conv) continue;
    // Inputs: constants from the graph, activations random at their planned shapes.
    std::vector<Tensor> holders;
    std::vector<const Tensor*> inputs;
    std::vector<bool> constant;
    // "g2": entries of earlier builds timed blocked convolutions whose kernel ignored the tactic.
    std::string key = fmt::format("{}|t{}|g2|{}::{}", device, threads, node.domain, node.op_type);
    bool ok = true;
    for (size_t k = 0; k < node.inputs.size() && ok; ++k) {
      const std::string& in = node.inputs[k];
      if (in.empty()) {
        inputs.push_back(nullptr);
        constant.push_back(false);
        continue;
      }
      if (const Tensor* t = sg.initializer(in)) {
        inputs.push_back(t);
        constant.push_back(true);
        key += fmt::format("|c{}{}", static_cast<int>(t->dtype()), shape_str(t->shape()));
        continue;
      }
      auto vi = sg.find_value_info(in);
      if (!vi || !vi->shape || !ir::sym_shape_is_static(*vi->shape)) {
        ok = false;
        break;
      }
      holders.push_back(random_like(vi->dtype, ir::sym_shape_to_static(*vi->shape),
                                    static_cast<uint32_t>(k + 1)));
      constant.push_back(false);
      key += fmt::format("|a{}{}", static_cast<int>(vi->dtype), shape_str(holders.back().shape()));
    }
    if (!ok) continue;
    // Pointers into holders (filled after all pushes so they stay valid).
    inputs.clear();
    size_t h = 0;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const std::string& in = node.inputs[k];
      if (in.empty())
        inputs.push_back(nullptr);
      else if (const Tensor* t = sg.initializer(in))
        inputs.push_back(t);
      else
        inputs.push_back(&holders[h++]);
    }
    for (const auto& [name, a] : node.attributes)
      if (name != "tactic") key += "|" + name + "=" + attr_text(a);
    // The variants that apply.
    const Tensor* x = inputs.empty() ? nullptr : inputs[0];
    const Tensor* w = inputs.size() > 1 ? inputs[1] : nullptr;
    // The spatial rank from W: X may be channels-last or blocked ([N, C / 16, spatial..., 16]).
    if (!x || !w || x->dtype() != DataType::kFloat32 || w->rank() < 3 || w->rank() > 5) continue;
    cpu::nn::ConvProblem p;
    p.nspatial = w->rank() - 2;
    p.group = node.attr_int("group", 1);
    const auto ks = node.attr_ints("kernel_shape", {});
    const auto st = node.attr_ints("strides", {});
    const auto pads = node.attr_ints("pads", {});
    const auto dil = node.attr_ints("dilations", {});
    const size_t o = 3 - p.nspatial;
    for (size_t d = 0; d < p.nspatial; ++d) {
      p.kernel[o + d] = d < ks.size() ? ks[d] : w->dim(2 + d);
      p.stride[o + d] = d < st.size() ? st[d] : 1;
      p.dilation[o + d] = d < dil.size() ? dil[d] : 1;
      p.pad_begin[o + d] = d < pads.size() ? pads[d] : 0;
      p.pad_end[o + d] = d + p.nspatial < pads.size() ? pads[d + p.nspatial] : 0;
    }
    const auto layout = node.attr_int("blocked", 0) != 0         ? cpu::nn::ActLayout::kBlocked16
                        : node.attr_int("channels_last", 0) != 0 ? cpu::nn::ActLayout::kChannelsLast
                                                                 : cpu::nn::ActLayout::kPlain;
    const std::vector<std::string> tactics = cpu::nn::conv_tactics(p, layout);
    if (tactics.size() < 2) continue;
    std::string best;
    if (const json* hit = cache.find(key); hit && hit->contains("tactic")) {
      best = (*hit)["tactic"].get<std::string>();
      ++stats.cache_hits;
    } else {
      json ms = json::object();
      double best_ms = 0;
      for (const auto& t : tactics) {
        ir::Node trial = node;
        trial.attributes["tactic"] = ir::attr_string("tactic", t);
        std::vector<double> times;
        for (int rep = 0; rep < 4; ++rep) {
          const auto t0 = std::chrono::steady_clock::now();
          (void)cpu::run_node(trial, model.opset(), inputs, false, constant);
          times.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
        }
        std::sort(times.begin() + 1, times.end());  // the first run builds the primitive
        const double med = times[2];
        ms[t] = med;
        if (best.empty() || med < best_ms) {
          best = t;
          best_ms = med;
        }
      }
      cache.put(key, {{"tactic", best}, {"ms", ms}});
      ++stats.layers_timed;
      TRT_LOG_VERBOSE("tactics for {}: {} -> {}", node.describe(), ms.dump(), best);
    }
    node.attributes["tactic"] = ir::attr_string("tactic", best);
  }
  cpu::nn::onednn_clear_caches();  // timing entries hold random-input primitives
  return stats;
}

}  // namespace trtutils::engine
