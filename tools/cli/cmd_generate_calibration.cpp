// trtutils generate_calibration --calibration_dir DIR --input_shape H W C --output calib.npy
//   [--input_dtype float32] [--batch_size 8] [--data_order NCHW] [--max_images N]
//   [--resize_method letterbox|linear] [--input_scale LO HI] [--mean R G B] [--std R G B]
//   [--color_order RGB|BGR] [--pad_value 114] [--keep_partial] [--threads N]
// The flag names are those of the Python original's generate_calibration.
#include <chrono>
#include <filesystem>

#include "commands.h"
#include "core/check.h"
#include "trtutils/image_batcher.h"
#include "trtutils/logging.h"

namespace trtutils::cli {

namespace {
struct GenerateCalibrationOptions {
  std::string calibration_dir;
  std::vector<int64_t> input_shape;
  std::string input_dtype = "float32";
  int64_t batch_size = 8;
  std::string data_order = "NCHW";
  std::string output;
  int64_t max_images = 0;
  bool max_images_given = false;
  std::string resize_method = "letterbox";
  std::vector<float> input_scale;
  std::vector<float> mean, std;
  std::string color_order = "RGB";
  float pad_value = 114.0f;
  bool keep_partial = false;
  int threads = 0;
};

void generate(const GenerateCalibrationOptions& o) {
  ImageBatcherOptions b;
  b.image_dir = o.calibration_dir;
  TRT_CHECK_ARG(o.input_shape.size() == 3, "--input_shape takes 3 values H W C, got {}",
                o.input_shape.size());
  b.shape = {o.input_shape[0], o.input_shape[1], o.input_shape[2]};
  const std::optional<DataType> dt = dtype_from_name(o.input_dtype);
  TRT_CHECK_ARG(dt && (*dt == DataType::kFloat32 || *dt == DataType::kFloat16 ||
                       *dt == DataType::kUInt8 || *dt == DataType::kInt8),
                "--input_dtype '{}' is not supported: use float32, float16, uint8 or int8",
                o.input_dtype);
  b.dtype = *dt;
  b.batch_size = o.batch_size;
  const auto order = data_order_from_name(o.data_order);
  TRT_CHECK_ARG(order.has_value(), "--data_order '{}' is not valid: use NCHW or NHWC",
                o.data_order);
  b.order = *order;
  if (o.max_images_given) b.max_images = o.max_images;
  const auto resize = resize_method_from_name(o.resize_method);
  TRT_CHECK_ARG(resize.has_value(), "--resize_method '{}' is not valid: use letterbox or linear",
                o.resize_method);
  b.resize_method = *resize;
  if (!o.input_scale.empty()) {
    TRT_CHECK_ARG(o.input_scale.size() == 2, "--input_scale takes 2 values LO HI, got {}",
                  o.input_scale.size());
    b.input_scale = std::pair<float, float>{o.input_scale[0], o.input_scale[1]};
  }
  b.mean = o.mean;
  b.std = o.std;
  const auto color = color_order_from_name(o.color_order);
  TRT_CHECK_ARG(color.has_value(), "--color_order '{}' is not valid: use RGB or BGR",
                o.color_order);
  b.color_order = *color;
  b.pad_value = o.pad_value;
  b.keep_partial = o.keep_partial;
  b.num_threads = o.threads;
  b.progress = true;
  TRT_CHECK_ARG(!o.output.empty(), "--output must name a .npy file");
  TRT_CHECK_ARG(!std::filesystem::is_directory(o.output),
                "--output '{}' is a directory; name a .npy file", o.output);
  const std::filesystem::path parent = std::filesystem::path(o.output).parent_path();
  TRT_CHECK_ARG(parent.empty() || std::filesystem::is_directory(parent),
                "--output '{}': folder '{}' does not exist", o.output, parent.string());

  ImageBatcher batcher(std::move(b));
  const auto t0 = std::chrono::steady_clock::now();
  batcher.save_calibration_data(o.output);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Shape shape = batcher.batch_shape();
  shape[0] = batcher.num_images();
  fmt::print("wrote {}: {} {} ({} images, {} batch(es) of {}) in {:.2f} s, {:.1f} images/s\n",
             o.output, dtype_name(batcher.options().dtype), shape_str(shape), batcher.num_images(),
             batcher.num_batches(), batcher.batch_size(), s,
             s > 0 ? static_cast<double>(batcher.num_images()) / s : 0.0);
}
}  // namespace

void add_generate_calibration_command(CLI::App& app) {
  auto o = std::make_shared<GenerateCalibrationOptions>();
  CLI::App* sub = app.add_subcommand(
      "generate_calibration",
      "Preprocess a directory of images into calibration data (.npy, all batches along axis 0)");
  sub->add_option("--calibration_dir", o->calibration_dir,
                  "folder of images (*.jpg *.jpeg *.png *.bmp *.webp), used in file-name order")
      ->required();
  sub->add_option("--input_shape", o->input_shape, "model input H W C (C: 1, 3 or 4)")->required();
  sub->add_option("--input_dtype", o->input_dtype, "float32, float16, uint8 or int8")
      ->capture_default_str();
  sub->add_option("--batch_size", o->batch_size, "images per batch")->capture_default_str();
  sub->add_option("--data_order", o->data_order, "NCHW or NHWC")->capture_default_str();
  sub->add_option("--output", o->output, "the .npy to write")->required();
  sub->add_option("--max_images", o->max_images, "use only the first N images (by name)");
  sub->add_option("--resize_method", o->resize_method,
                  "letterbox (keep aspect ratio, pad; YOLO) or linear (stretch to H x W)")
      ->capture_default_str();
  sub->add_option(
      "--input_scale", o->input_scale,
      "LO HI: pixel range after scaling (default 0 1 for float types; none for uint8/int8)");
  sub->add_option("--mean", o->mean,
                  "per-colour mean subtracted after scaling, in R G B order (1 or C values)");
  sub->add_option("--std", o->std,
                  "per-colour std divided by after the mean, in R G B order (1 or C values)");
  sub->add_option("--color_order", o->color_order, "channel order the model takes: RGB or BGR")
      ->capture_default_str();
  sub->add_option("--pad_value", o->pad_value, "letterbox padding, in 0..255 pixel units")
      ->capture_default_str();
  sub->add_flag("--keep_partial", o->keep_partial,
                "keep a last batch with fewer than --batch_size images");
  sub->add_option("--threads", o->threads, "decode threads (0: all cores)")->capture_default_str();
  sub->callback([o, sub] {
    o->max_images_given = sub->count("--max_images") > 0;
    generate(*o);
  });
}

}  // namespace trtutils::cli
