// trtutils generate_calibration --calibration_dir DIR --input_shape H W C --output calib.npy
//   [--input_dtype float32] [--batch_size 8] [--data_order NCHW] [--max_images N]
//   [--resize_method letterbox|linear] [--input_scale LO HI] [--mean R G B] [--std R G B]
//   [--color_order RGB|BGR] [--pad_value 114] [--keep_partial] [--threads N]
// The flag names are those of the Python original's generate_calibration.
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "batcher_flags.h"
#include "commands.h"
#include "trtutils/check.h"
#include "trtutils/image_batcher.h"
#include "trtutils/logging.h"

namespace trtutils::cli {

namespace {
struct GenerateCalibrationOptions {
  BatcherFlags batcher;
  std::string output;
};

// "skipped 4 entries of 'photos/': 1 not an image, 1 subfolder (not recursed), 2 images of a
// partial last batch (--keep_partial keeps them)"; empty when nothing was skipped. The names are
// in the warnings the batcher logged.
std::string calibration_skip_summary(const ImageDirSkips& s, const std::string& dir) {
  std::vector<std::string> parts;
  const auto add = [&](size_t n, const char* what) {
    if (n) parts.push_back(fmt::format("{} {}", n, what));
  };
  add(s.not_images.size(), "not image file(s)");
  add(s.subfolders.size(), "subfolder(s) (not recursed)");
  add(s.hidden.size(), "hidden name(s)");
  add(static_cast<size_t>(s.past_max_images), "image(s) past --max_images");
  add(static_cast<size_t>(s.partial_batch),
      "image(s) of a partial last batch (--keep_partial keeps them)");
  if (parts.empty()) return "";
  return fmt::format("skipped {} entr{} of '{}': {}", s.total(), s.total() == 1 ? "y" : "ies", dir,
                     fmt::join(parts, ", "));
}

void generate(const GenerateCalibrationOptions& o, const CLI::App* sub) {
  ImageBatcherOptions b = to_batcher_options(o.batcher, sub);
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
  const std::string skipped =
      calibration_skip_summary(batcher.skipped(), batcher.options().image_dir.string());
  if (!skipped.empty()) fmt::print("{}\n", skipped);
}
}  // namespace

void add_generate_calibration_command(CLI::App& app) {
  auto o = std::make_shared<GenerateCalibrationOptions>();
  CLI::App* sub = app.add_subcommand(
      "generate_calibration",
      "Preprocess a directory of images into calibration data (.npy, all batches along axis 0)");
  add_batcher_flags(sub, o->batcher, /*required=*/true);
  sub->add_option("--output", o->output, "the .npy to write")->required();
  sub->callback([o, sub] { generate(*o, sub); });
}

}  // namespace trtutils::cli
