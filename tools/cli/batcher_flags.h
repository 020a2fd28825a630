// The ImageBatcher flags, shared by generate_calibration, build (--calibration_dir) and quantize
// (--calibration_data DIR): the names are those of the Python original's generate_calibration.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "trtutils/image_batcher.h"

namespace trtutils::cli {

struct BatcherFlags {
  std::string calibration_dir;
  std::vector<int64_t> input_shape;
  std::string input_dtype = "float32";
  int64_t batch_size = 8;
  std::string data_order = "NCHW";
  int64_t max_images = 0;
  std::string resize_method = "letterbox";
  std::vector<float> input_scale;
  std::vector<float> mean, std;
  std::string color_order = "RGB";
  float pad_value = 114.0f;
  bool keep_partial = false;
  int threads = 0;
};

// Registers --calibration_dir, --input_shape, ... on `sub`; `required`: the directory and the
// shape are required options (generate_calibration) rather than optional (build, where the
// shape and dtype default to the model input's).
void add_batcher_flags(CLI::App* sub, BatcherFlags& f, bool required);
// What one image becomes, without the directory and the batching: --input_shape, --input_dtype,
// --data_order, --max_images and the preprocessing flags. `from_model`: --input_shape and
// --input_dtype default to the model input's (f.input_dtype is cleared) instead of being
// required / float32. add_batcher_flags adds them; quantize adds them alone. Returns
// --input_shape.
CLI::Option* add_image_flags(CLI::App* sub, BatcherFlags& f, bool from_model);
// The preprocessing flags alone (also used by detect and classify): --resize_method,
// --input_scale, --mean, --std, --color_order, --pad_value. add_image_flags adds them too.
void add_preprocess_flags(CLI::App* sub, BatcherFlags& f);
// Checks those flags (messages name the flag) into the matching fields of `b`.
void apply_preprocess_flags(const BatcherFlags& f, ImageBatcherOptions& b);
// Validates add_image_flags' flags (messages name the flag) into ImageBatcher options: shape
// (0, 0, 0) without --input_shape, dtype kUndefined with an empty input_dtype (the model's).
ImageBatcherOptions to_image_options(const BatcherFlags& f, const CLI::App* sub);
// add_image_flags' flags given on the command line, by name ("--mean", ...).
std::vector<std::string> given_image_flags(const CLI::App* sub);
// Validates the flags (messages name the flag) into ImageBatcher options.
ImageBatcherOptions to_batcher_options(const BatcherFlags& f, const CLI::App* sub);

}  // namespace trtutils::cli
