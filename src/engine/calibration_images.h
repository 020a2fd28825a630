// The weakly typed build's calibration batches from images (BuildConfig::data_batcher), fitted
// to the model input they feed.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "trtutils/image_batcher.h"

namespace trtutils::builder {

// Every batch of `options` (data::fit_images_to_input completes the shape and dtype). A fixed
// batch axis of `input` sets the batch (options.batch_size applies to a dynamic batch only; a
// last partial batch is dropped with a warning); fewer images than that batch is an
// Error(kInvalidArgument) saying so. `preprocessing`: set to the images' preprocessing_summary.
std::vector<Tensor> calibration_image_batches(const ImageBatcherOptions& options,
                                              const ir::ValueInfo& input,
                                              std::string& preprocessing);

// Whether `images` leave their shape or dtype to the model input.
bool images_need_model(const ImageBatcherOptions& images);
// `images` with the shape and dtype they leave to the model (data::fit_images_to_input against
// its one input), so that the engine records the preprocessing that was applied: the same
// images given with or without an explicit shape and dtype give the same engine.
ImageBatcherOptions images_fitted_to_model(const ImageBatcherOptions& images,
                                           const ir::Graph& model);

}  // namespace trtutils::builder
