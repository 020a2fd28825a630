// How an ExecutionContext runs a GPU engine (runtime.cpp): the CUDA executor gets the engine's
// stored GPU plan and runs it as it is: its graph (fused by the builder, not fused again), the
// kernel switches and the kernel choices recorded at build. Nothing comes from the environment.
//
// Two cases keep the plain graph, which the executor fuses itself at load as before the plan
// was stored: engines of format 1 (no "gpu_graph"), and mark_all_outputs (compare --layerwise
// wants every tensor of the plain graph by name, and the stored plan has fused most of them
// away; marking them as outputs keeps them, so a marked run may fuse less).
#pragma once

#include "backends/cuda/cuda_executor.h"
#include "engine/engine_file.h"
#include "trtutils/engine.h"

namespace trtutils::engine {

struct GpuExecutorPlan {
  ir::Model model;
  cuda::ExecutorOptions options;
};

// The executor's model and the options the engine and `context` decide (the caller adds its
// own: shared device weights, whether CUDA graphs apply to the inputs).
GpuExecutorPlan gpu_executor_plan(const EngineData& engine, const ContextOptions& context);

// The choices of info "gpu_tactics" (what -> choice), empty when the engine has none.
std::map<std::string, std::string> recorded_gpu_tactics(const nlohmann::json& info);

}  // namespace trtutils::engine
