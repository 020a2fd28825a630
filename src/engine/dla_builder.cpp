// can_run_on_dla and build_dla_engine (include/trtutils/dla.h): the DLA verdicts of
// precision/dla_rules.h on the model as the builder names it, chunk selection, then
// build_engine and a rewrite of the engine's layer devices and info["dla"].
#include <algorithm>
#include <map>
#include <set>

#include "core/check.h"
#include "engine/engine_file.h"
#include "onnx/onnx_io.h"
#include "passes/passes.h"
#include "precision/dla_rules.h"
#include "quantize/qdq.h"
#include "tensorrt/trtexec.h"
#include "trtutils/dla.h"
#include "trtutils/logging.h"
#include "trtutils/platform.h"

namespace trtutils::builder {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kOrinSm = 87;
constexpr int kOrinDlaCores = 2;
constexpr int kMaxLoadablesPerCore = 16;  // [G] "only 16 DLA loadable can be loaded ... per core"
constexpr char kDlaDevice[] = "dla (emulated)";

void check_chunk_options(int max_chunks, int min_layers) {
  TRT_CHECK_ARG(max_chunks >= 1 && max_chunks <= kMaxLoadablesPerCore,
                "max_chunks must be in 1..{} (TensorRT loads at most {} DLA loadables per core), "
                "got {}",
                kMaxLoadablesPerCore, kMaxLoadablesPerCore, max_chunks);
  TRT_CHECK_ARG(min_layers >= 1, "min_layers must be >= 1, got {}", min_layers);
}

// The model as build_engine names it (name_nodes right after loading), with `shapes` fixed,
// constants folded and shapes inferred.
ir::Model load_for_check(const fs::path& onnx, const std::map<std::string, Shape>& shapes) {
  ir::Model model = onnx_io::load_model(onnx);
  ir::Graph& g = model.graph;
  quantize::name_nodes(g);
  g.topological_sort();
  for (const auto& [name, shape] : shapes) {
    auto it = std::find_if(g.inputs.begin(), g.inputs.end(),
                           [&name = name](const ir::ValueInfo& v) { return v.name == name; });
    if (it == g.inputs.end()) {
      std::string names;
      for (const auto& v : g.inputs) names += (names.empty() ? "'" : ", '") + v.name + "'";
      TRT_THROW(ErrorCode::kInvalidArgument,
                "--shape: the model has no input '{}'; its inputs are {}", name, names);
    }
    TRT_CHECK_ARG(!it->shape || it->shape->size() == shape.size(),
                  "--shape: input '{}' has rank {}, got {}", name,
                  it->shape ? it->shape->size() : 0, shape_str(shape));
    it->shape = ir::sym_shape_from_static(shape);
  }
  passes::run_pipeline(g, model.opset(), {"conv_fusion", "qdq_fusion", "qdq_layout"});
  g.value_info.clear();
  // Strict, as `build` infers: a model that cannot be valid is refused, not reported on.
  passes::infer_shapes(g, model.opset(), {.strict = true});
  return model;
}

DlaChunkReport chunk_report(const precision::DlaChunk& c) {
  DlaChunkReport r;
  r.begin = static_cast<int64_t>(c.begin);
  r.end = static_cast<int64_t>(c.end);
  if (!c.nodes.empty()) {
    r.first = c.nodes.front();
    r.last = c.nodes.back();
  }
  return r;
}

struct Analysis {
  std::vector<precision::DlaVerdict> verdicts;
  std::vector<precision::DlaChunk> chunks, selected;
};

Analysis analyze(const ir::Graph& g, int max_chunks, int min_layers) {
  Analysis a;
  a.verdicts = precision::dla_verdicts(g);
  a.chunks = precision::dla_chunks(g, a.verdicts);
  a.selected = precision::select_dla_chunks(a.chunks, g.nodes.size(), max_chunks, min_layers);
  return a;
}

// Only Orin has DLA; the target is the one the engine is built for.
void check_dla_target(int target_sm, bool given, const PlatformInfo& p) {
  if (target_sm == kOrinSm) return;
  const std::string where =
      given ? fmt::format("target SM {}", target_sm)
            : (target_sm == 0 ? std::string("this machine (no GPU found, no target_sm given)")
                              : fmt::format("this machine's GPU (SM {}{})", target_sm,
                                            p.is_jetson ? "" : ", not a Jetson"));
  if (target_sm == 0)
    TRT_THROW(ErrorCode::kConfig,
              "DLA builds target Jetson Orin, but {} has no DLA: pass target_sm=87 "
              "(--target_sm 87) to build for Orin; the DLA layers then run emulated here",
              where);
  if (target_sm == 110 || target_sm == 101)
    TRT_THROW(ErrorCode::kConfig,
              "{} is Jetson Thor (Blackwell, JetPack 7), which has no DLA cores: build a GPU "
              "engine with `trtutils build` instead, or target Jetson Orin (SM 87)",
              where);
  if (target_sm == 72)
    TRT_THROW(ErrorCode::kConfig,
              "{} is Jetson Xavier (DLA 1.0), whose DLA rules differ from Orin's DLA 2.0 and are "
              "not implemented: target Jetson Orin (SM 87)",
              where);
  TRT_THROW(ErrorCode::kConfig,
            "{} has no DLA: only Jetson Orin (SM 87) has DLA cores; discrete GPUs and Jetson Thor "
            "have none. Build a GPU engine with `trtutils build`, or pass target_sm=87 to build "
            "for Orin",
            where);
}

void reject_weakly_typed_artefact(const std::string& what) {
  TRT_THROW(
      ErrorCode::kConfig,
      "build_dla_engine(strongly_typed=True): {} is a weakly-typed artefact. A strongly-typed "
      "DLA build takes INT8 scales from the ONNX Q/DQ nodes and FP16 from the graph's types; "
      "remove {} (an existing calibration cache becomes a Q/DQ model with `trtutils "
      "calib_to_qdq`), or build weakly typed.",
      what, what);
}

// Ops given FP16 per layer on the DLA in weakly-typed builds (DLA numerics in emulation). With
// INT8, only activations TensorRT runs in FP16 on the DLA anyway ("TanH, Sigmoid INT8 support is
// supported by auto-upgrading to FP16"): forcing the others would keep them out of the INT8
// islands.
const std::set<std::string> kFp16Ops = {"Conv",
                                        "ConvTranspose",
                                        "Gemm",
                                        "MatMul",
                                        "MaxPool",
                                        "AveragePool",
                                        "GlobalAveragePool",
                                        "GlobalMaxPool",
                                        "Relu",
                                        "Sigmoid",
                                        "Tanh",
                                        "Clip",
                                        "LeakyRelu",
                                        "Add",
                                        "Sub",
                                        "Mul",
                                        "Max",
                                        "Min",
                                        "Softmax"};
const std::set<std::string> kFp16OpsWithInt8 = {"Sigmoid", "Tanh", "Softmax"};

// Layers whose missing Q/DQ is worth a warning under strong typing (shuffles and activations
// follow their producer's precision).
const std::set<std::string> kInt8CandidateOps = {"Conv",
                                                 "ConvTranspose",
                                                 "Gemm",
                                                 "MatMul",
                                                 "MaxPool",
                                                 "AveragePool",
                                                 "GlobalAveragePool",
                                                 "GlobalMaxPool",
                                                 "Add",
                                                 "Sub",
                                                 "Mul",
                                                 "Max",
                                                 "Min",
                                                 "Sum",
                                                 "Concat",
                                                 "Resize",
                                                 "Softmax",
                                                 "BatchNormalization",
                                                 "ReduceMax"};

std::vector<std::string> missing_qdq_warnings(const ir::Graph& g,
                                              const std::set<std::string>& dla_nodes) {
  std::map<std::string, const ir::Node*> producer;
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty()) producer[o] = &n;
  std::vector<std::string> w;
  for (const auto& n : g.nodes) {
    if (!dla_nodes.count(n.name) || !kInt8CandidateOps.count(n.op_type)) continue;
    bool has_dq = false;
    for (const auto& in : n.inputs) {
      if (in.empty() || g.is_initializer(in)) continue;
      auto it = producer.find(in);
      if (it != producer.end() && it->second->op_type == "DequantizeLinear") has_dq = true;
    }
    if (!has_dq)
      w.push_back(
          fmt::format("layer '{}' ({}) is placed on the DLA but has no Q/DQ on its inputs: "
                      "strongly typed, it runs FP16 on the DLA, not INT8",
                      n.name, n.op_type));
  }
  return w;
}

// Devices of the built engine's layers: a layer named after a DLA-placed model node is DLA; a
// layer the builder inserted (casts, Q/DQ, layout transposes) joins the DLA when its own verdict
// is ok and every placed neighbour is DLA.
std::vector<bool> engine_dla_layers(const ir::Graph& eg, const std::set<std::string>& model_nodes,
                                    const std::set<std::string>& dla_nodes) {
  const size_t n = eg.nodes.size();
  enum class State { kUnknown, kDla, kOther };
  std::vector<State> s(n, State::kUnknown);
  for (size_t i = 0; i < n; ++i)
    if (model_nodes.count(eg.nodes[i].name))
      s[i] = dla_nodes.count(eg.nodes[i].name) ? State::kDla : State::kOther;
  std::map<std::string, size_t> producer;
  std::map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < n; ++i) {
    for (const auto& o : eg.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
    for (const auto& in : eg.nodes[i].inputs)
      if (!in.empty()) consumers[in].push_back(i);
  }
  std::vector<bool> verdict_ok(n, false);
  for (size_t i = 0; i < n; ++i)
    if (s[i] == State::kUnknown) verdict_ok[i] = precision::dla_verdict(eg, eg.nodes[i]).ok;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (s[i] != State::kUnknown) continue;
      if (!verdict_ok[i]) {
        s[i] = State::kOther;
        changed = true;
        continue;
      }
      std::vector<size_t> nb;
      for (const auto& in : eg.nodes[i].inputs)
        if (auto it = producer.find(in); !in.empty() && it != producer.end())
          nb.push_back(it->second);
      for (const auto& o : eg.nodes[i].outputs)
        if (auto it = consumers.find(o); !o.empty() && it != consumers.end())
          nb.insert(nb.end(), it->second.begin(), it->second.end());
      bool any_other = false, any_dla = false, any_unknown = false;
      for (size_t j : nb) {
        any_other |= s[j] == State::kOther;
        any_dla |= s[j] == State::kDla;
        any_unknown |= s[j] == State::kUnknown;
      }
      if (any_other || (!any_dla && !any_unknown)) {
        s[i] = State::kOther;
        changed = true;
      } else if (any_dla && !any_unknown) {
        s[i] = State::kDla;
        changed = true;
      }
    }
    if (!changed) {
      // Runs of inserted nodes between DLA layers only (e.g. Q -> DQ): resolve one at a time.
      for (size_t i = 0; i < n && !changed; ++i) {
        if (s[i] != State::kUnknown) continue;
        bool any_other = false;
        for (const auto& in : eg.nodes[i].inputs)
          if (auto it = producer.find(in); !in.empty() && it != producer.end())
            any_other |= s[it->second] == State::kOther;
        s[i] = any_other ? State::kOther : State::kDla;
        changed = true;
      }
    }
  }
  std::vector<bool> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = s[i] == State::kDla;
  return out;
}

json chunk_json(const DlaChunkReport& c) {
  return {{"begin", c.begin},
          {"end", c.end},
          {"layers", c.layers()},
          {"first", c.first},
          {"last", c.last}};
}

}  // namespace

DlaReport can_run_on_dla(const fs::path& onnx, const DlaCheckOptions& o) {
  check_chunk_options(o.max_chunks, o.min_layers);
  const ir::Model model = load_for_check(onnx, o.shapes);
  const ir::Graph& g = model.graph;
  const Analysis a = analyze(g, o.max_chunks, o.min_layers);
  DlaReport r;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto& n = g.nodes[i];
    DlaLayerReport l;
    l.index = static_cast<int64_t>(i);
    l.name = n.name;
    l.op = n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type;
    l.dla = a.verdicts[i].ok;
    l.rule = a.verdicts[i].rule;
    l.detail = a.verdicts[i].detail;
    if (const precision::DlaRule* rule = l.dla ? nullptr : precision::find_dla_rule(l.rule)) {
      l.limit = std::string(rule->limit);
      l.source = std::string(rule->source);
    }
    r.dla_layers += l.dla ? 1 : 0;
    r.layers.push_back(std::move(l));
  }
  for (const auto& c : a.chunks) r.chunks.push_back(chunk_report(c));
  for (const auto& c : a.selected) r.selected.push_back(chunk_report(c));
  return r;
}

DlaBuildResult build_dla_engine(const fs::path& onnx, const fs::path& output, const DlaConfig& dc) {
  TRT_CHECK_ARG(dc.dla_core >= 0 && dc.dla_core < kOrinDlaCores,
                "dla_core {} is out of range: Jetson Orin has DLA cores 0 and 1", dc.dla_core);
  check_chunk_options(dc.max_chunks, dc.min_layers);
  const BuildConfig& in = dc.build;
  if (in.strongly_typed) {
    if (in.data_batcher) reject_weakly_typed_artefact("data_batcher");
    if (!in.calibration_data.empty()) reject_weakly_typed_artefact("calibration_data");
    if (!in.calibration_cache.empty()) reject_weakly_typed_artefact("calibration_cache");
    if (in.fp8) reject_weakly_typed_artefact("fp8");
  } else if (in.fp8) {
    TRT_THROW(ErrorCode::kConfig,
              "the DLA computes INT8 and FP16 only: fp8 cannot run on it; drop fp8 (or build a GPU "
              "engine with `trtutils build --fp8`)");
  }

  DlaBuildResult result;
  if (in.backend == "tensorrt") {
    BuildConfig c = in;
    if (!c.strongly_typed) c.fp16 = true;
    result.build = build_with_trtexec(onnx, output, c, dc.dry_run, dc.dla_core, dc.trt_version);
    result.emulated = false;
    return result;
  }
  TRT_CHECK_ARG(!dc.dry_run, "dry_run needs backend 'tensorrt' (it prints the trtexec command)");
  TRT_CHECK_ARG(!dc.trt_version,
                "trt_version applies to a dry run with backend 'tensorrt' only (the trtexec "
                "command it prints)");

  const PlatformInfo& p = platform_info();
  const int local_sm = p.gpu_count > 0 ? p.gpu.sm_major * 10 + p.gpu.sm_minor : 0;
  const int target_sm = in.target_sm > 0 ? in.target_sm : local_sm;
  check_dla_target(target_sm, in.target_sm > 0, p);

  const ir::Model model = load_for_check(onnx, in.shapes);
  const ir::Graph& g = model.graph;
  const Analysis a = analyze(g, dc.max_chunks, dc.min_layers);
  std::set<std::string> dla_nodes, model_nodes;
  for (const auto& n : g.nodes) model_nodes.insert(n.name);
  for (const auto& c : a.selected) dla_nodes.insert(c.nodes.begin(), c.nodes.end());
  for (const auto& c : a.selected) result.chunks.push_back(chunk_report(c));
  const auto dla_able = std::count_if(a.verdicts.begin(), a.verdicts.end(),
                                      [](const precision::DlaVerdict& v) { return v.ok; });
  TRT_LOG_INFO("DLA: {} of {} layers fit; {} chunk(s) of {} placed on DLA core {}", dla_able,
               g.nodes.size(), a.selected.size(), a.chunks.size(), dc.dla_core);

  BuildConfig c = in;
  std::vector<std::string> warnings;
  if (c.strongly_typed) {
    warnings = missing_qdq_warnings(g, dla_nodes);
    for (const auto& w : warnings) TRT_LOG_WARN("{}", w);
  } else {
    c.fp16 = true;
    if (c.layer_precision.empty()) {
      const auto& ops = c.int8 ? kFp16OpsWithInt8 : kFp16Ops;
      for (const auto& n : g.nodes)
        if (dla_nodes.count(n.name) && n.domain.empty() && ops.count(n.op_type))
          c.layer_precision.emplace_back(n.name, DataType::kFloat16);
      if (!c.layer_precision.empty()) c.precision_constraints = "prefer";
    } else {
      warnings.push_back(
          "layer_precision is given: the DLA layers keep it instead of being forced to FP16");
      TRT_LOG_WARN("{}", warnings.back());
    }
  }
  if (dla_nodes.empty()) {
    warnings.push_back(fmt::format(
        "no DLA chunk of at least {} layers (max_chunks {}): every layer stays GPU-side",
        dc.min_layers, dc.max_chunks));
    TRT_LOG_WARN("{}", warnings.back());
  }

  result.build = build_engine(onnx, output, c);
  try {
    engine::EngineData ed = engine::read_engine_file(output);
    const std::vector<bool> dla = engine_dla_layers(ed.model.graph, model_nodes, dla_nodes);
    for (size_t i = 0; i < ed.layers.size() && i < dla.size(); ++i) {
      if (dla[i]) {
        ed.layers[i].device = kDlaDevice;
        ++result.dla_layers;
      } else {
        ++result.other_layers;
      }
    }
    result.emulation =
        p.is_jetson && local_sm == kOrinSm
            ? "trtutils has no DLA runtime: the DLA layers run on the " +
                  ed.info.value("backend", std::string("cpu")) + " backend with DLA precisions"
            : "no DLA on this machine: the DLA layers run on the " +
                  ed.info.value("backend", std::string("cpu")) + " backend with DLA precisions";
    json chunks = json::array();
    for (const auto& ch : result.chunks) chunks.push_back(chunk_json(ch));
    std::map<std::string, int64_t> failed;
    for (const auto& v : a.verdicts)
      if (!v.ok) ++failed[v.rule];
    ed.info["dla"] = {{"core", dc.dla_core},
                      {"target_sm", target_sm},
                      {"chunks", chunks},
                      {"max_chunks", dc.max_chunks},
                      {"min_layers", dc.min_layers},
                      {"model_layers", g.nodes.size()},
                      {"model_layers_dla_able", dla_able},
                      {"engine_layers_on_dla", result.dla_layers},
                      {"failed_rules", failed},
                      {"precision", c.strongly_typed ? "from the graph (strongly typed)"
                                    : c.int8         ? "int8 where calibrated, else fp16/fp32"
                                                     : "fp16"},
                      {"emulated", true},
                      {"emulation", result.emulation}};
    json& w = ed.info["warnings"];
    if (!w.is_array()) w = json::array();
    for (const auto& s : warnings) w.push_back(s);
    engine::write_engine_file(output, ed);
  } catch (...) {
    std::error_code ec;
    fs::remove(output, ec);
    throw;
  }
  result.build.warnings.insert(result.build.warnings.end(), warnings.begin(), warnings.end());
  TRT_LOG_INFO("DLA: {} engine layer(s) on DLA core {} (emulated), {} GPU-side", result.dla_layers,
               dc.dla_core, result.other_layers);
  return result;
}

}  // namespace trtutils::builder
