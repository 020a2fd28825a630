// The part Detector and Classifier share: the model input planned once from the engine's
// bindings (layout, size, render spec), and images run through the engine with the
// preprocessing on the host (data::render_image) or, for an engine running on the GPU, on the
// device (cuda::ImageRunner: the same bytes, and only the outputs are copied back).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/preprocess.h"
#include "trtutils/detector.h"

namespace trtutils::cuda {
class ImageRunner;
}

namespace trtutils::detail {

// The preprocessing fields of DetectorOptions and ClassifierOptions.
struct PreprocessOptions {
  ResizeMethod resize_method;
  std::optional<std::pair<float, float>> input_scale;
  std::vector<float> mean, std;
  ColorOrder color_order;
  float pad_value;
  std::string preprocess;  // "auto" | "cpu" | "gpu"
  int num_threads;
};

// The model input as Detector / Classifier feed it.
struct InputPlan {
  std::string name;
  DataType dtype = DataType::kFloat32;
  Shape shape;  // what is fed: [N, C, H, W] or [N, H, W, C]
  int64_t height = 0, width = 0;
  int channels = 0;
  data::RenderSpec spec;
};

std::string tensor_list(const std::vector<EngineTensorInfo>& ts);
const EngineTensorInfo* find_output(const Engine& e, const std::string& name);

class ImageModel {
 public:
  // `who` ("detect", "classify") starts every error message.
  ImageModel(std::shared_ptr<const Engine> engine, const PreprocessOptions& options,
             const char* who);
  ~ImageModel();
  ImageModel(ImageModel&&) noexcept;
  ImageModel& operator=(ImageModel&&) noexcept;

  // Images into batch slots 0, 1, ... (at most batch() of them; the other slots zero); the
  // engine's outputs. Sets latency() (preprocess and inference; decode and postprocess are the
  // caller's).
  std::map<std::string, Tensor> run(const std::vector<const Image*>& images);

  int64_t batch() const { return input_.shape[0]; }
  const InputPlan& input() const { return input_; }
  const Engine& engine() const { return *engine_; }
  bool gpu_preprocessing() const { return gpu_ != nullptr; }
  ImageLatency& latency() { return latency_; }

 private:
  std::shared_ptr<const Engine> engine_;
  InputPlan input_;
  std::unique_ptr<ExecutionContext> ctx_;
  std::unique_ptr<cuda::ImageRunner> gpu_;
  ImageLatency latency_;
  const char* who_;
};

}  // namespace trtutils::detail
