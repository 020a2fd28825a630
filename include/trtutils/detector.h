// Detector and Classifier: an engine plus the preprocessing of ImageBatcher (the same code that
// generate_calibration runs), image in, results in the image's own pixel coordinates out.
//
//   trtutils::Detector det("yolov8n.engine", {.conf_threshold = 0.3f});
//   for (const trtutils::Detection& d : det.detect("street.jpg"))
//     fmt::print("{} {:.2f} at ({}, {}) - ({}, {})\n", d.class_id, d.score, d.x1, d.y1, d.x2,
//     d.y2);
//
//   trtutils::Classifier cls("resnet50.engine", {.mean = {0.485f, 0.456f, 0.406f},
//                                                .std = {0.229f, 0.224f, 0.225f}});
//   std::vector<trtutils::Classification> top5 = cls.classify("cat.png", 5);
//
// The model input: the engine's only input, rank 4, float32 / float16 / uint8 / int8. Its
// layout is NCHW when dimension 1 is 1, 3 or 4, else NHWC when dimension 3 is; H and W must be
// static (or fixed by the engine's profile: its opt shape is used). A dynamic batch runs 1
// image per execution; a static batch N runs up to N (detect / classify of a vector of images
// fill the slots in order; a single image goes into slot 0, the others are zero).
//
// Preprocessing (image_batcher.h has the exact rules): the image's channels converted to the
// model's, resized to H x W (letterbox: aspect kept, centred, pad_value around; linear:
// stretched), scaled to input_scale, (x - mean) / std per colour, color_order applied.
// preprocess "auto" (default) runs it on the GPU for an engine that runs on the CUDA backend
// here and on the host otherwise; "gpu" requires the GPU, "cpu" forces the host. Both compute
// the same bytes (checked by the tests). On the GPU the 8-bit image is copied to the device,
// rendered into the model input there and only the engine's outputs come back.
//
// Detector: the engine must have the EfficientNMS outputs num_dets [N, 1] int32, det_boxes
// [N, K, 4] float32 (x1, y1, x2, y2 in the network input's pixels), det_scores [N, K] float32
// and det_classes [N, K] int32, which `trtutils build_yolo` (builder::build_yolo_engine) gives a
// YOLO model; an engine without them (a raw YOLO head) is refused naming build_yolo. Boxes are
// mapped back to the original image exactly: letterbox offsets subtracted and the resize's
// per-axis scale (resized size / original size, after rounding) divided out; for linear each
// axis by W / width and H / height. Coordinates are pixel edges (0 .. width, 0 .. height; a box
// covering the whole image is (0, 0, width, height)), clamped to the image.
//
// Classifier: the engine's first output, [N, classes] (trailing 1s allowed: [N, C, 1, 1]), holds
// one score per class. Softmax is applied unless the row already is a probability
// distribution: every value in [0, 1] and the sum within 1e-3 of 1 (a model ending in Softmax);
// softmax_applied() says which happened for the last image.
//
// Errors (Error, never an abort): kInvalidArgument for an engine whose input or outputs do not
// fit (the message names the engine, the tensors and what is expected), options out of range
// (conf_threshold outside [0, 1], top_k < 1, bad mean / std / input_scale / pad_value), and what
// Engine::load and load_image throw.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trtutils/engine.h"
#include "trtutils/image.h"
#include "trtutils/image_batcher.h"

namespace trtutils {

// Wall-clock milliseconds of the last image, per stage. decode_ms is 0 when the caller passed
// an Image.
struct ImageLatency {
  double decode_ms = 0;
  double preprocess_ms = 0;  // channel conversion, resize, scale / normalise into the input
  double inference_ms = 0;   // ExecutionContext::execute
  double postprocess_ms = 0;
  double total_ms() const { return decode_ms + preprocess_ms + inference_ms + postprocess_ms; }
};

// Field names are those of ImageBatcherOptions (and of the CLI flags).
struct DetectorOptions {
  float conf_threshold = 0.25f;  // kept: score >= conf_threshold (on top of the engine's own)
  ResizeMethod resize_method = ResizeMethod::kLetterbox;
  std::optional<std::pair<float, float>> input_scale{};  // default (0, 1) for float inputs
  std::vector<float> mean{};  // empty: 0; else 1 or C values, R G B order
  std::vector<float> std{};   // empty: 1; else 1 or C values
  ColorOrder color_order = ColorOrder::kRGB;
  float pad_value = 114.0f;         // letterbox padding, 0..255
  std::string backend = "auto";     // Engine::load: "auto" | "cpu" | "cuda"
  int num_threads = 0;              // CPU threads of the context; 0: all cores
  std::string preprocess = "auto";  // "auto" | "cpu" | "gpu"
};

// A box in the original image's pixel coordinates (x1 <= x2, y1 <= y2).
struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  float score = 0;
  int64_t class_id = 0;
};

// The colour of a class's boxes in draw_detections (and in `trtutils detect`'s JSON): a palette
// of 18 distinct hues that read on photos, cycled by class id (negative ids too). R, G, B.
std::array<uint8_t, 3> detection_color(int64_t class_id);

// `image` as RGB (convert_image_channels) with each detection's box outlined in its class colour
// (1 pixel per 300 of the shorter side, inside the box's pixel extent) and a filled tag above it
// (inside when there is no room above) reading "<label> <score>" in the built-in 5x7 font:
// labels[class_id], or "class <id>" past the end of `labels`. The lowest score is drawn first,
// so that the best boxes end on top. What `trtutils detect` writes to <name>.png
// (write_png). Error(kInvalidArgument) / kOutOfRange for an image over 16384 pixels a side or
// 2^25 pixels in all.
Image draw_detections(const Image& image, const std::vector<Detection>& detections,
                      const std::vector<std::string>& labels = {});

class Detector {
 public:
  explicit Detector(const std::filesystem::path& engine, DetectorOptions options = {});
  // An already loaded engine (options.backend is then ignored).
  explicit Detector(std::shared_ptr<const Engine> engine, DetectorOptions options = {});
  ~Detector();
  Detector(Detector&&) noexcept;
  Detector& operator=(Detector&&) noexcept;

  // Detections by descending score (the engine's order). One call at a time per Detector.
  std::vector<Detection> detect(const Image& image);
  std::vector<Detection> detect(const std::filesystem::path& image);
  // Several images, batch_size() per execution: one list of detections per image, in order.
  // last_latency() is then the sum over the executions.
  std::vector<std::vector<Detection>> detect(const std::vector<Image>& images);

  const ImageLatency& last_latency() const;
  const DetectorOptions& options() const;
  int64_t batch_size() const;      // images per execution
  bool gpu_preprocessing() const;  // whether images are preprocessed on the GPU
  const Engine& engine() const;
  int64_t input_height() const;
  int64_t input_width() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct ClassifierOptions {
  ResizeMethod resize_method = ResizeMethod::kLinear;
  std::optional<std::pair<float, float>> input_scale{};
  std::vector<float> mean{};
  std::vector<float> std{};
  ColorOrder color_order = ColorOrder::kRGB;
  float pad_value = 114.0f;
  std::string backend = "auto";
  int num_threads = 0;
  std::string preprocess = "auto";  // "auto" | "cpu" | "gpu"
};

struct Classification {
  int64_t class_id = 0;
  float score = 0;  // probability (after softmax when one was applied)
};

class Classifier {
 public:
  explicit Classifier(const std::filesystem::path& engine, ClassifierOptions options = {});
  explicit Classifier(std::shared_ptr<const Engine> engine, ClassifierOptions options = {});
  ~Classifier();
  Classifier(Classifier&&) noexcept;
  Classifier& operator=(Classifier&&) noexcept;

  // The top_k (>= 1; a top_k over the number of classes gives them all) classes by descending
  // score; equal scores keep the lower class id first.
  std::vector<Classification> classify(const Image& image, int64_t top_k = 5);
  std::vector<Classification> classify(const std::filesystem::path& image, int64_t top_k = 5);
  // Several images, batch_size() per execution: the top_k of each image, in order.
  std::vector<std::vector<Classification>> classify(const std::vector<Image>& images,
                                                    int64_t top_k = 5);

  int64_t num_classes() const;
  int64_t batch_size() const;
  bool gpu_preprocessing() const;
  bool softmax_applied() const;  // for the last image
  const ImageLatency& last_latency() const;
  const ClassifierOptions& options() const;
  const Engine& engine() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trtutils
