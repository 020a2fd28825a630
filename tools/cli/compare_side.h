// One side of `trtutils compare`: an engine file, an ONNX model run on a backend, or a folder of
// saved outputs (<output name>.npy). ONNX models run on the CPU backend through an OnnxSession (as
// `run --onnx` does); with --backend cuda they are built into an fp32 engine in a temporary
// folder first and run as an engine, through the same ExecutionContext as engine files.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trtutils/engine.h"
#include "trtutils/onnx_session.h"
#include "trtutils/tensor.h"

namespace trtutils::cli {

// A fresh folder under the system's temporary directory, removed with everything in it when
// this goes out of scope.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& what);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

class CompareSide {
 public:
  // `path`: a folder (saved outputs), a .onnx file, or an engine file. `backend`: auto, cpu or
  // cuda. `scratch`: a folder for the engine an ONNX model on cuda is built into.
  CompareSide(std::string label, const std::filesystem::path& path, const std::string& backend,
              int threads, const std::filesystem::path& scratch);

  bool is_saved() const { return kind_ == Kind::kSaved; }
  const std::string& label() const { return label_; }
  std::string describe() const;
  const std::vector<ModelTensorInfo>& inputs() const { return inputs_; }
  const std::vector<std::string>& output_names() const { return outputs_; }
  // The outputs of a normal run (nothing marked). Saved outputs: the folder's .npy files by
  // file name without .npy.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds) const;
  // A separate run with every layer output marked; `order` gets the tensor names in the order
  // the layers run (topological). Not for saved outputs.
  std::map<std::string, Tensor> run_marked(const std::map<std::string, Tensor>& feeds,
                                           std::vector<std::string>& order) const;

 private:
  enum class Kind { kEngine, kOnnx, kSaved };
  Kind kind_ = Kind::kSaved;
  std::string label_;
  std::filesystem::path path_;
  std::string backend_;
  int threads_ = 0;
  std::shared_ptr<Engine> engine_;
  std::vector<ModelTensorInfo> inputs_;
  std::vector<std::string> outputs_;
};

}  // namespace trtutils::cli
