#include "batcher_flags.h"

#include "flag_ranges.h"
#include "trtutils/check.h"

namespace trtutils::cli {

void add_preprocess_flags(CLI::App* sub, BatcherFlags& f) {
  sub->add_option("--resize_method", f.resize_method,
                  "letterbox (keep aspect ratio, pad; YOLO) or linear (stretch to H x W)")
      ->capture_default_str();
  sub->add_option(
         "--input_scale", f.input_scale,
         "LO HI: pixel range after scaling (default 0 1 for float types; none for uint8/int8)")
      ->check(in_range(-1e30f, 1e30f));
  sub->add_option("--mean", f.mean,
                  "per-colour mean subtracted after scaling, in R G B order (1 or C values)")
      ->check(in_range(-1e30f, 1e30f));
  sub->add_option("--std", f.std,
                  "per-colour std divided by after the mean, in R G B order (1 or C values)")
      ->check(in_range(1e-30f, 1e30f));
  sub->add_option("--color_order", f.color_order, "channel order the model takes: RGB or BGR")
      ->capture_default_str();
  add_ranged(sub, "--pad_value", f.pad_value, "letterbox padding, in 0..255 pixel units", 0.0f,
             255.0f);
}

CLI::Option* add_image_flags(CLI::App* sub, BatcherFlags& f, bool from_model) {
  const std::string model = from_model ? " (default: the model input's)" : "";
  auto* shape =
      add_ranged(sub, "--input_shape", f.input_shape, "model input H W C (C: 1, 3 or 4)" + model,
                 int64_t{1}, int64_t{1} << 16);
  if (from_model) f.input_dtype.clear();
  auto* dtype =
      sub->add_option("--input_dtype", f.input_dtype, "float32, float16, uint8 or int8" + model);
  if (!from_model) dtype->capture_default_str();
  sub->add_option("--data_order", f.data_order, "NCHW or NHWC")->capture_default_str();
  sub->add_option("--max_images", f.max_images, "use only the first N images (by name)")
      ->check(in_range(int64_t{1}, std::numeric_limits<int64_t>::max()));
  add_preprocess_flags(sub, f);
  return shape;
}

void add_batcher_flags(CLI::App* sub, BatcherFlags& f, bool required) {
  auto* dir = sub->add_option(
      "--calibration_dir", f.calibration_dir,
      "folder of images (*.jpg *.jpeg *.png *.bmp *.webp), used in file-name order");
  auto* shape = add_image_flags(sub, f, /*from_model=*/!required);
  if (required) {
    dir->required();
    shape->required();
  }
  add_ranged(
      sub, "--batch_size", f.batch_size,
      required ? "images per batch" : "images per batch (for a model whose batch is dynamic)",
      int64_t{1}, kMaxBatch);
  sub->add_flag("--keep_partial", f.keep_partial,
                "keep a last batch with fewer than --batch_size images");
  add_threads_flag(sub, f.threads, "decode threads");
}

void apply_preprocess_flags(const BatcherFlags& f, ImageBatcherOptions& b) {
  const auto resize = resize_method_from_name(f.resize_method);
  TRT_CHECK_ARG(resize.has_value(), "--resize_method '{}' is not valid: use letterbox or linear",
                f.resize_method);
  b.resize_method = *resize;
  if (!f.input_scale.empty()) {
    TRT_CHECK_ARG(f.input_scale.size() == 2, "--input_scale takes 2 values LO HI, got {}",
                  f.input_scale.size());
    b.input_scale = std::pair<float, float>{f.input_scale[0], f.input_scale[1]};
  }
  b.mean = f.mean;
  b.std = f.std;
  const auto color = color_order_from_name(f.color_order);
  TRT_CHECK_ARG(color.has_value(), "--color_order '{}' is not valid: use RGB or BGR",
                f.color_order);
  b.color_order = *color;
  b.pad_value = f.pad_value;
}

ImageBatcherOptions to_image_options(const BatcherFlags& f, const CLI::App* sub) {
  ImageBatcherOptions b;
  if (!f.input_shape.empty()) {
    TRT_CHECK_ARG(f.input_shape.size() == 3, "--input_shape takes 3 values H W C, got {}",
                  f.input_shape.size());
    b.shape = {f.input_shape[0], f.input_shape[1], f.input_shape[2]};
  }
  b.dtype = DataType::kUndefined;
  if (!f.input_dtype.empty()) {
    const std::optional<DataType> dt = dtype_from_name(f.input_dtype);
    TRT_CHECK_ARG(dt && (*dt == DataType::kFloat32 || *dt == DataType::kFloat16 ||
                         *dt == DataType::kUInt8 || *dt == DataType::kInt8),
                  "--input_dtype '{}' is not supported: use float32, float16, uint8 or int8",
                  f.input_dtype);
    b.dtype = *dt;
  }
  const auto order = data_order_from_name(f.data_order);
  TRT_CHECK_ARG(order.has_value(), "--data_order '{}' is not valid: use NCHW or NHWC",
                f.data_order);
  b.order = *order;
  if (sub->count("--max_images") > 0) b.max_images = f.max_images;
  apply_preprocess_flags(f, b);
  return b;
}

std::vector<std::string> given_image_flags(const CLI::App* sub) {
  std::vector<std::string> given;
  for (const char* name :
       {"--input_shape", "--input_dtype", "--data_order", "--max_images", "--resize_method",
        "--input_scale", "--mean", "--std", "--color_order", "--pad_value"})
    if (sub->count(name) > 0) given.emplace_back(name);
  return given;
}

ImageBatcherOptions to_batcher_options(const BatcherFlags& f, const CLI::App* sub) {
  ImageBatcherOptions b = to_image_options(f, sub);
  b.image_dir = f.calibration_dir;
  b.batch_size = f.batch_size;
  b.keep_partial = f.keep_partial;
  b.num_threads = f.threads;
  b.progress = true;
  return b;
}

}  // namespace trtutils::cli
