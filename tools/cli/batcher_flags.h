// The ImageBatcher flags, shared by generate_calibration and build (--calibration_dir): the
// names are those of the Python original's generate_calibration.
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
// shape are required options (generate_calibration) rather than optional (build).
void add_batcher_flags(CLI::App* sub, BatcherFlags& f, bool required);
// The preprocessing flags alone (also used by detect and classify): --resize_method,
// --input_scale, --mean, --std, --color_order, --pad_value. add_batcher_flags adds them too.
void add_preprocess_flags(CLI::App* sub, BatcherFlags& f);
// Checks those flags (messages name the flag) into the matching fields of `b`.
void apply_preprocess_flags(const BatcherFlags& f, ImageBatcherOptions& b);
// Validates the flags (messages name the flag) into ImageBatcher options.
ImageBatcherOptions to_batcher_options(const BatcherFlags& f, const CLI::App* sub);

}  // namespace trtutils::cli
