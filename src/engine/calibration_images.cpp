#include "engine/calibration_images.h"

#include "core/check.h"
#include "data/input_images.h"
#include "trtutils/logging.h"

namespace trtutils::builder {

namespace {

// The input's batch when its batch axis is fixed, else 0.
int64_t fixed_batch(const ir::ValueInfo& in) {
  if (!in.shape || in.shape->empty() || !(*in.shape)[0].is_static()) return 0;
  return (*in.shape)[0].value;
}

}  // namespace

bool images_need_model(const ImageBatcherOptions& images) {
  return images.shape.size() != 3 || images.dtype == DataType::kUndefined;
}

ImageBatcherOptions images_fitted_to_model(const ImageBatcherOptions& images,
                                           const ir::Graph& model) {
  TRT_CHECK_ARG(model.inputs.size() == 1,
                "calibration images feed one input, but the model has {} inputs",
                model.inputs.size());
  return data::fit_images_to_input(images, model.inputs[0]);
}

std::vector<Tensor> calibration_image_batches(const ImageBatcherOptions& options,
                                              const ir::ValueInfo& input,
                                              std::string& preprocessing) {
  ImageBatcherOptions o = data::fit_images_to_input(options, input);
  const int64_t fixed = fixed_batch(input);
  if (fixed > 0) {
    if (fixed != o.batch_size)
      TRT_LOG_INFO(
          "model input '{}' has a fixed batch of {}: calibration images in batches of {} "
          "(batch_size {} applies to a dynamic batch)",
          input.name, fixed, fixed, o.batch_size);
    o.batch_size = fixed;
    o.keep_partial = true;  // counted here, so that too few images get this message
  }
  ImageBatcher batcher(std::move(o));
  TRT_CHECK_ARG(fixed == 0 || batcher.num_images() >= fixed,
                "{} image(s) in '{}' do not fill one batch: the model input '{}' {} has a fixed "
                "batch of {}; give at least {} images",
                batcher.num_images(), batcher.options().image_dir.string(), input.name,
                ir::sym_shape_str(*input.shape), fixed, fixed);
  preprocessing = preprocessing_summary(batcher.options());
  TRT_LOG_INFO("calibration images: {}", preprocessing);
  std::vector<Tensor> batches;
  for (Tensor t = batcher.next_batch(); !t.empty(); t = batcher.next_batch()) {
    if (fixed > 0 && t.dim(0) < fixed) {
      TRT_LOG_WARN("dropping the last {} image(s): they do not fill the model input's batch of {}",
                   t.dim(0), fixed);
      break;
    }
    batches.push_back(std::move(t));
  }
  return batches;
}

}  // namespace trtutils::builder
