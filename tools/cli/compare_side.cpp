#include "compare_side.h"

#include <unistd.h>

#include <algorithm>

#include "commands.h"
#include "trtutils/builder.h"
#include "trtutils/check.h"
#include "trtutils/logging.h"
#include "trtutils/npy.h"

namespace trtutils::cli {

namespace fs = std::filesystem;

ScratchDir::ScratchDir(const std::string& what) {
  static int counter = 0;
  path_ = fs::temp_directory_path() / fmt::format("trtutils_{}_{}_{}", what, ::getpid(), counter++);
  fs::remove_all(path_);
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

CompareSide::CompareSide(std::string label, const fs::path& path, const std::string& backend,
                         int threads, const fs::path& scratch)
    : label_(std::move(label)), path_(path), backend_(backend), threads_(threads) {
  std::error_code ec;
  TRT_CHECK_ARG(fs::exists(path, ec),
                "side {}: '{}' does not exist (give an engine file, an "
                "ONNX model or a folder of <output name>.npy files)",
                label_, path.string());
  if (fs::is_directory(path, ec)) {
    kind_ = Kind::kSaved;
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ".npy") outputs_.push_back(e.path().stem().string());
    std::sort(outputs_.begin(), outputs_.end());
    TRT_CHECK_ARG(!outputs_.empty(), "side {}: folder '{}' has no .npy files", label_,
                  path.string());
    return;
  }
  if (path.extension() == ".onnx" && backend != "cuda") {
    kind_ = Kind::kOnnx;
    OnnxSession s(path, {.num_threads = threads});
    inputs_ = s.inputs();
    for (const auto& o : s.outputs()) outputs_.push_back(o.name);
    return;
  }
  kind_ = Kind::kEngine;
  fs::path engine_file = path;
  if (path.extension() == ".onnx") {  // ONNX on the GPU: an fp32 engine, built here
    engine_file = scratch / (label_ + ".engine");
    TRT_LOG_INFO("side {}: building an fp32 cuda engine from {}", label_, path.string());
    builder::build_engine(path, engine_file, {.backend = "cuda", .num_threads = threads});
  }
  engine_ = Engine::load(engine_file, {.backend = backend});
  inputs_ = engine_inputs(*engine_);
  for (const auto& o : engine_->outputs()) outputs_.push_back(o.name);
}

std::string CompareSide::describe() const {
  switch (kind_) {
    case Kind::kSaved:
      return fmt::format("saved outputs {}", path_.string());
    case Kind::kOnnx:
      return fmt::format("ONNX {} (cpu)", path_.string());
    default:
      return fmt::format("{} {} ({})", path_.extension() == ".onnx" ? "ONNX" : "engine",
                         path_.string(), engine_->runtime_backend());
  }
}

std::map<std::string, Tensor> CompareSide::run(const std::map<std::string, Tensor>& feeds) const {
  if (kind_ == Kind::kSaved) {
    std::map<std::string, Tensor> r;
    for (const auto& n : outputs_) r[n] = npy_load(path_ / (n + ".npy"));
    return r;
  }
  if (kind_ == Kind::kOnnx) return OnnxSession(path_, {.num_threads = threads_}).run(feeds);
  return engine_->create_execution_context({.num_threads = threads_})->execute(feeds);
}

std::map<std::string, Tensor> CompareSide::run_marked(const std::map<std::string, Tensor>& feeds,
                                                      std::vector<std::string>& order) const {
  TRT_CHECK_ARG(kind_ != Kind::kSaved,
                "--layerwise needs two models (engines or ONNX): side {} is a folder of saved "
                "outputs",
                label_);
  order.clear();
  if (kind_ == Kind::kOnnx) {
    OnnxSession s(path_, {.num_threads = threads_, .mark_all_outputs = true});
    order = s.node_output_names();
    return s.run(feeds);
  }
  for (const auto& l : engine_->layers())
    for (const auto& o : l.outputs) order.push_back(o);
  return engine_->create_execution_context({.num_threads = threads_, .mark_all_outputs = true})
      ->execute(feeds);
}

}  // namespace trtutils::cli
