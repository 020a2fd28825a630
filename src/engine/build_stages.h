// Stages of build_engine (builder.cpp) that stand on their own: the weakly typed INT8 / FP8
// quantization (calibration or its cache -> Q/DQ placement and scales; build_calibration.cpp),
// the layer table with its tactics (build_layers.cpp) and a GPU engine's GPU plan
// (build_gpu_plan.cpp).
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/cuda/kernel_switches.h"
#include "engine/engine_file.h"
#include "ir/graph.h"
#include "precision/layer_precision.h"
#include "trtutils/builder.h"

namespace trtutils::builder {

// Weakly typed --int8 / --fp8 of a model without Q/DQ nodes: scales from the calibration cache
// or from calibrating on the data (the cache is then written next to `output` or to
// --calibration_cache), Q/DQ placed as `quantize` places it; layers without a scale stay in
// higher precision (warned). Returns the engine's "calibration" record.
nlohmann::json quantize_weakly_typed(ir::Model& model, const BuildConfig& c,
                                     const precision::LayerPrecisionPlan& plan, bool explicit_qdq,
                                     const std::filesystem::path& output, BuildResult& result);

// CPU engines at optimization level >= 3: the fastest variant per layer, timed at plan_shapes
// (recorded in the nodes' "tactic" attribute, the timing cache read and written). Returns the
// engine's "tactics" record.
nlohmann::json choose_tactics(ir::Model& model, const BuildConfig& c, const std::string& backend,
                              const std::map<std::string, Shape>& plan_shapes);

// One record per layer: precision, device (GPU engines: the CPU fallback layers, warned about
// or refused with no_fallback), kernel (the CUDA executor's fusions named). Fills the result's
// fallback layers, per-precision counts and layer count.
std::vector<engine::LayerRecord> layer_records(const ir::Model& model, const BuildConfig& c,
                                               const std::string& backend, BuildResult& result);

// What the CUDA executor is expected to run a layer with, from the op and dtypes by its rules
// (inspect's kernel column for GPU layers not timed at build): "cublasLt.QGemm (int8)", ...
std::string cuda_kernel_label(const ir::Graph& g, const ir::Node& n);

// GPU engines: the plan the CUDA executor runs, stored in the engine (engine_file.h,
// "gpu_graph"): `model` after the executor's fusions under the kernel switches in effect (the
// recorded ones, `switches`), with one layer record per fused layer. With a usable GPU of the
// target SM here, the executor plans it once at plan_shapes (the opt profile) on random inputs:
// the layer records take the kernels and layouts that ran, and `tactics` (info "gpu_tactics")
// every timed kernel choice, which loading takes as they are. Otherwise `tactics` says
// "untimed" and why (the first load times them). The planning run reads and writes
// c.timing_cache like a load does.
engine::GpuPlanData plan_gpu(const ir::Model& model, const BuildConfig& c,
                             const cuda::KernelSwitches& switches, int engine_sm,
                             const std::map<std::string, Shape>& plan_shapes,
                             nlohmann::json& tactics, BuildResult& result);

}  // namespace trtutils::builder
