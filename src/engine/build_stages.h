// Stages of build_engine (builder.cpp) that stand on their own: the weakly typed INT8 / FP8
// quantization (calibration or its cache -> Q/DQ placement and scales; build_calibration.cpp),
// and the layer table with its tactics (build_layers.cpp).
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

}  // namespace trtutils::builder
