// Images in, an engine's outputs out, with the preprocessing on the GPU: each 8-bit image goes
// to the device as it was decoded (3 bytes a pixel instead of the 12 of a float32 CHW tensor),
// is rendered into its slot of the model input there (image_kernels.h: the same bytes as
// data::render_image, which ImageBatcher and generate_calibration run on the host), the
// engine runs with ExecutionContext::enqueue on the same stream, and only the outputs come
// back (for a build_yolo engine: the NMS results, never the raw boxes).
//
// Detector and Classifier use it for engines that run on the CUDA backend here; usable() says
// whether that is the case. The constructor throws Error(kNotSupported) for an engine whose
// outputs have a dynamic dimension other than the batch (their buffers could not be sized);
// the caller then preprocesses on the host.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/preprocess.h"
#include "trtutils/engine.h"

namespace trtutils::cuda {

class ImageRunner {
 public:
  struct Times {
    double inference_ms = 0;  // the engine and the outputs' copy back (CUDA events)
  };
  // input_shape: the fed shape, [N, C, H, W] or [N, H, W, C] as spec.order says (N slots).
  ImageRunner(ExecutionContext& ctx, const Engine& engine, std::string input, Shape input_shape,
              data::RenderSpec spec);
  ~ImageRunner();
  ImageRunner(const ImageRunner&) = delete;
  ImageRunner& operator=(const ImageRunner&) = delete;

  // At most N images, each with spec.channels channels, into slots 0, 1, ...; the other slots
  // are zero. Blocks until the outputs are on the host.
  std::map<std::string, Tensor> run(const std::vector<const Image*>& images, Times& times);

  static bool usable(const Engine& engine);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One image (spec.channels channels) rendered on the device into `dst` (device memory: H * W * C
// elements of spec.dtype in spec.order), synchronously; what ImageRunner does per slot.
void render_on_device(const Image& image, const data::RenderSpec& spec, void* dst);

}  // namespace trtutils::cuda
