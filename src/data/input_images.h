// ImageBatcher options completed from the model input they feed: quantize (calibration_data as
// an image directory) and the weakly typed build (data_batcher) read images through it.
#pragma once

#include "ir/graph.h"
#include "trtutils/image_batcher.h"

namespace trtutils::data {

// `o` with what the caller left open taken from the input `in`:
//   shape (0, 0, 0): the input's H, W, C, read from [N, C, H, W] (order NCHW) or [N, H, W, C]
//                    (NHWC), which must be static;
//   dtype kUndefined: the input's (float32 when the input's is not an image dtype).
// A given shape is checked against the input's static dims; an input of known rank other than
// 4 is refused. Error(kInvalidArgument) naming the input, its shape and what to set
// (input_shape H W C, data_order).
ImageBatcherOptions fit_images_to_input(ImageBatcherOptions o, const ir::ValueInfo& in);

}  // namespace trtutils::data
