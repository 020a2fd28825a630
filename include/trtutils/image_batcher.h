// ImageBatcher: a directory of images -> the exact tensors a vision model sees, in batches, for
// calibration (in-process through next_batch(), or saved as one .npy).
//
// Per image: decode (JPEG with its EXIF orientation, PNG, BMP, WebP) -> convert to C channels
// -> resize to H x W (linear, or letterbox) -> scale to input_scale -> (x - mean) / std ->
// layout (NCHW / NHWC) -> dtype, in that order; images are processed on a thread pool with a
// bounded prefetch, and come out in file-name order whatever the thread count.
//
// Files: the extension selects the candidates, the content decides the decoder. A truncated
// or corrupt file (JPEG entropy-data errors included) is an error naming it, never skipped.
// BMP: 1/4/8-bit paletted, 16/24/32-bit uncompressed or bit fields; RLE is refused.
//
// Channels: gray is replicated to RGB; RGB -> gray is BT.601 luma (0.299 R + 0.587 G + 0.114 B,
// rounded); an alpha channel is dropped (not composited) unless C = 4, where images without
// alpha get 255. color_order BGR swaps channels 0 and 2 of the output (RGBA -> BGRA).
//
// Resize: "linear" is OpenCV's INTER_LINEAR (half-pixel centres, edge pixels replicated, no
// antialiasing) straight to H x W. "letterbox" (the YOLO/ultralytics LetterBox): scale
// r = min(H / h, W / w), resized size (round(h r), round(w r)) with Python's round (half to
// even), linear resize to it, centred on an H x W canvas of pad_value with
// top = round(dh - 0.1), left = round(dw - 0.1) for dh = (H - new_h) / 2, dw = (W - new_w) / 2
// (so the odd pixel of padding goes to the bottom / right). Resized values are not rounded to
// 8 bits before scaling (OpenCV's are), so results differ from an OpenCV pipeline by < 1/255
// of the input range.
//
// Values: with input_scale (lo, hi), a pixel x in 0..255 (pad_value included) becomes
// x / 255 * (hi - lo) + lo, then (v - mean[c]) / std[c]. For float32/float16 input_scale
// defaults to (0, 1). For uint8/int8 it defaults to none: values stay 0..255 and are rounded
// to nearest and saturated by the cast (int8 clips at 127: pass input_scale (-128, 127) to
// centre). mean/std are listed per colour in R, G, B (, A) order whatever color_order is; one
// value applies to every channel.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trtutils/dtype.h"
#include "trtutils/tensor.h"

namespace trtutils {

enum class DataOrder { kNCHW, kNHWC };
enum class ResizeMethod { kLetterbox, kLinear };
enum class ColorOrder { kRGB, kBGR };

// Case-insensitive names: "NCHW"/"NHWC", "letterbox"/"linear", "RGB"/"BGR".
std::optional<DataOrder> data_order_from_name(std::string_view name);
std::optional<ResizeMethod> resize_method_from_name(std::string_view name);
std::optional<ColorOrder> color_order_from_name(std::string_view name);
std::string_view data_order_name(DataOrder order);
std::string_view resize_method_name(ResizeMethod method);
std::string_view color_order_name(ColorOrder order);

// Field names follow the Python original's keyword arguments where it has them.
struct ImageBatcherOptions {
  std::filesystem::path image_dir{};  // *.jpg *.jpeg *.png *.bmp *.webp (any case); not recursive;
                                      // names starting with '.' are skipped
  std::array<int64_t, 3> shape{0, 0, 0};  // (H, W, C), C in {1, 3, 4}
  DataType dtype = DataType::kFloat32;    // float32, float16, uint8 or int8
  int64_t batch_size = 8;
  DataOrder order = DataOrder::kNCHW;
  std::optional<int64_t> max_images{};  // the first N files by name; >= 1
  ResizeMethod resize_method = ResizeMethod::kLetterbox;
  std::optional<std::pair<float, float>> input_scale{};  // (lo, hi); see above for the default
  std::vector<float> mean{};                             // empty: 0; else 1 or C values
  std::vector<float> std{};                              // empty: 1; else 1 or C values, non-zero
  ColorOrder color_order = ColorOrder::kRGB;
  float pad_value = 114.0f;   // letterbox padding, in 0..255 pixel units
  bool keep_partial = false;  // keep a last batch with fewer than batch_size images
  int num_threads = 0;        // decode/resize threads; 0: the cores this process may use
  int prefetch_batches = 2;   // batches prepared ahead of next_batch(); bounds the memory used
  bool progress = false;      // progress bar on a terminal (stderr), log lines otherwise
};

// What an ImageBatcher left out of its directory, and why. Each kind is also logged as one
// warning when the batcher is made (up to kImageSkipNamesShown names, then a count).
struct ImageDirSkips {
  std::vector<std::filesystem::path> not_images;  // files without an image extension
  std::vector<std::filesystem::path> hidden;      // names starting with '.'
  std::vector<std::filesystem::path> subfolders;  // not recursed into
  int64_t past_max_images = 0;                    // images after the first max_images
  int64_t partial_batch = 0;  // the last images, that do not fill a batch (no keep_partial)
  // Images (by extension) found but not used: past_max_images + partial_batch.
  int64_t images_left_out() const { return past_max_images + partial_batch; }
  // Everything left out: files, folders and images.
  int64_t total() const {
    return static_cast<int64_t>(not_images.size() + hidden.size() + subfolders.size()) +
           images_left_out();
  }
};
inline constexpr size_t kImageSkipNamesShown = 5;

// One line saying what the options do to each image, e.g. "224x224x3 (H x W x C), resize linear,
// scale [0, 1], mean 0.485 0.456 0.406, std 0.229 0.224 0.225, RGB, NCHW, float32" (input_scale
// as it applies: the dtype's default when unset; letterbox adds its pad value).
std::string preprocessing_summary(const ImageBatcherOptions& options);

class ImageBatcher {
 public:
  // Validates the options and lists the directory. Throws Error (kInvalidArgument for bad
  // options, a file given as the directory, no images, fewer images than one batch; kIO for a
  // missing directory; kNotSupported for an unsupported dtype) before anything is decoded.
  explicit ImageBatcher(ImageBatcherOptions options);
  ~ImageBatcher();
  ImageBatcher(ImageBatcher&&) noexcept;
  ImageBatcher& operator=(ImageBatcher&&) noexcept;

  int64_t num_batches() const;
  int64_t batch_size() const;
  // Images used: num_batches() * batch_size(), or all of them with keep_partial.
  int64_t num_images() const;
  // The files used, in batch order.
  const std::vector<std::filesystem::path>& image_paths() const;
  // What was found in the directory but not used, and why.
  const ImageDirSkips& skipped() const;
  // Shape of a full batch: [B, C, H, W] (NCHW) or [B, H, W, C] (NHWC).
  Shape batch_shape() const;
  const ImageBatcherOptions& options() const;

  // The next batch; an empty Tensor after the last one. A file that fails to decode throws
  // Error naming it (kInvalidArgument for corrupt data); the batcher then stays failed until
  // reset().
  Tensor next_batch();
  // Back to the first batch (stops any prefetching).
  void reset();
  // All batches concatenated along axis 0 as one .npy, written as it is produced (memory stays
  // bounded by the prefetch) to a temporary file renamed over `path` at the end: on any error
  // nothing is left at `path`. Starts from the first batch and leaves the batcher reset.
  void save_calibration_data(const std::filesystem::path& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trtutils
