// DLA builds for Jetson Orin (SM 87, DLA 2.0, two DLA cores).
//
//   auto report = trtutils::builder::can_run_on_dla("model.onnx");
//   trtutils::builder::build_dla_engine("model.onnx", "model.engine",
//                                       {.dla_core = 0, .build = {.target_sm = 87}});
//
// can_run_on_dla checks every layer against NVIDIA's published DLA restrictions
// (src/precision/dla_rules.cpp holds the table, with the source of each rule) and lists the
// contiguous DLA-able chunks in node order.
//
// build_dla_engine builds with build_engine and records each layer's device: if every layer
// fits, all on the DLA; if none does, GPU-side only; otherwise the largest chunks of at least
// min_layers layers, at most max_chunks of them, on the DLA and the rest GPU-side (TensorRT's GPU
// fallback). The engine's layers then read device "dla (emulated)" (inspect shows it) and its
// info gets "dla": {core, chunks, emulated, ...}. trtutils has no DLA runtime, so DLA layers
// always run on the engine's backend with DLA precisions: weakly typed, FP16 (forced per layer)
// or INT8 where calibrated; strongly typed, the graph's types. Nothing times them as DLA.
//
// Rules (Error(kConfig), CLI exit code 2; nothing is written):
//   target: only Orin (SM 87) has DLA. target_sm 0 (no local GPU and none given), Thor (SM 110 /
//     101, Blackwell, JetPack 7), Xavier (SM 72, DLA 1.0: other rules) and any other GPU are
//     refused. A non-Jetson host may build for SM 87: the DLA layers run emulated there.
//   strongly_typed + data_batcher / calibration_data / calibration_cache / fp8: weakly-typed
//     artefacts (scales come from the graph's Q/DQ nodes); each DLA-bound layer without Q/DQ on
//     its inputs gets a warning (it would run FP16 on the DLA, not INT8); per-layer precision is
//     not applied.
//   weakly typed + fp8: the DLA computes INT8 and FP16 only.
// Error(kInvalidArgument): dla_core outside 0..1, max_chunks outside 1..16 (TensorRT loads at
// most 16 DLA loadables per core), min_layers < 1.
//
// build.backend "tensorrt" hands the build to trtexec (trtutils/tensorrt.h) with
// --useDLACore and --allowGPUFallback; dry_run prints its command instead of running it, for
// trt_version when given (else the installed trtexec's, else kDefaultDryRunVersion's).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trtutils/builder.h"
#include "trtutils/tensor.h"
#include "trtutils/tensorrt.h"

namespace trtutils::builder {

struct DlaLayerReport {
  int64_t index = 0;
  std::string name;
  std::string op;
  bool dla = false;
  std::string rule;    // the failed rule's id ("" when dla)
  std::string detail;  // what broke it
  // The failed rule's entry in the rule table (src/precision/dla_rules.cpp): what it allows
  // ("kernel height and width in [1, 32]") and where NVIDIA says so. Empty when dla, and for a
  // rule outside the table.
  std::string limit{};
  std::string source{};
};

// Layers [begin, end) of the checked graph's node order.
struct DlaChunkReport {
  int64_t begin = 0;
  int64_t end = 0;
  std::string first, last;  // node names
  int64_t layers() const { return end - begin; }
};

struct DlaReport {
  std::vector<DlaLayerReport> layers;
  std::vector<DlaChunkReport> chunks;    // every maximal DLA-able run
  std::vector<DlaChunkReport> selected;  // the ones a DLA build places (max_chunks, min_layers)
  int64_t dla_layers = 0;                // layers that fit
};

struct DlaCheckOptions {
  std::map<std::string, Shape> shapes{};  // fix dynamic inputs (DLA has no dynamic shapes)
  int max_chunks = 1;
  int min_layers = 20;
};

// Loads the model, names its nodes as the builder does, fixes `shapes`, folds constants, infers
// shapes and checks every remaining node. Error(kInvalidArgument) for a missing model or an
// unknown input in `shapes`.
DlaReport can_run_on_dla(const std::filesystem::path& onnx, const DlaCheckOptions& options = {});

struct DlaConfig {
  int dla_core = 0;
  int max_chunks = 1;
  int min_layers = 20;
  bool dry_run = false;  // build.backend "tensorrt" only: print the trtexec command
  // dry_run: the TensorRT version whose trtexec flags are printed (no trtexec is looked for);
  // nullopt: the installed trtexec's. Without dry_run: Error(kInvalidArgument).
  std::optional<tensorrt::TrtVersion> trt_version{};
  // Everything else, as build_engine takes it (strongly_typed, int8 + calibration, target_sm,
  // shapes, timing cache, backend ...). Weakly typed DLA builds always allow FP16.
  BuildConfig build{};
};

struct DlaBuildResult {
  BuildResult build;
  std::vector<DlaChunkReport> chunks;  // placed on the DLA (ONNX node order)
  int64_t dla_layers = 0;              // engine layers marked DLA
  int64_t other_layers = 0;            // engine layers left GPU-side
  bool emulated = true;
  std::string emulation;  // why the DLA layers are emulated
};

DlaBuildResult build_dla_engine(const std::filesystem::path& onnx,
                                const std::filesystem::path& output, const DlaConfig& config = {});

}  // namespace trtutils::builder
