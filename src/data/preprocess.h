// The per-image part of ImageBatcher: channel conversion, OpenCV-compatible bilinear resize,
// letterbox geometry, and the fused scale/normalise/layout/cast into a batch slot.
#pragma once

#include <cstdint>
#include <vector>

#include "data/image.h"
#include "trtutils/image_batcher.h"

namespace trtutils::data {

// `image` with `channels` channels (1, 3 or 4); see image_batcher.h for the rules.
Image convert_channels(Image image, int channels);

// Source taps of one output axis of an INTER_LINEAR resize: out[i] = in[i0] * (1 - w) + in[i1] * w.
struct LinearAxis {
  std::vector<int32_t> i0, i1;
  std::vector<float> w;
};
LinearAxis linear_axis(int64_t src, int64_t dst);

// Streams the rows of a linear resize of `src` (any channel count) to dst_h x dst_w.
class LinearResizer {
 public:
  LinearResizer(const Image& src, int64_t dst_h, int64_t dst_w);
  // Row y (0 <= y < dst_h): dst_w * channels floats, valid until the next call. Rows are
  // cheapest in increasing order.
  const float* row(int64_t y);

 private:
  const float* source_row(int32_t sy);  // horizontally resized source row, cached (two slots)
  const Image& src_;
  int64_t dst_w_;
  LinearAxis ax_, ay_;
  std::vector<float> cache_[2];
  int32_t cached_[2] = {-1, -1};
  int next_slot_ = 0;
  std::vector<float> out_;
};

// The whole resized image as floats (HWC), for tests and tools.
std::vector<float> resize_linear(const Image& src, int64_t dst_h, int64_t dst_w);

// Where the resized image sits on the letterbox canvas.
struct LetterboxBox {
  int64_t height = 0, width = 0;  // resized size
  int64_t top = 0, left = 0;      // offsets on the canvas
};
LetterboxBox letterbox_box(int64_t src_h, int64_t src_w, int64_t dst_h, int64_t dst_w);

// Everything that turns a converted image into its slot of a batch.
struct RenderSpec {
  int64_t height = 0, width = 0;
  int channels = 0;
  ResizeMethod method = ResizeMethod::kLetterbox;
  DataOrder order = DataOrder::kNCHW;
  DataType dtype = DataType::kFloat32;
  float pad_value = 114.0f;
  // Output channel c reads source channel src[c] and is written as raw * scale[c] + bias[c]
  // (raw in 0..255 units).
  int src[4] = {0, 1, 2, 3};
  float scale[4] = {1, 1, 1, 1};
  float bias[4] = {0, 0, 0, 0};
  bool integer_output() const { return dtype == DataType::kUInt8 || dtype == DataType::kInt8; }
};
// Checks the fields of `options` that make_render_spec reads (shape, dtype, input_scale, mean,
// std, pad_value; image_batcher.h has the rules): Error(kInvalidArgument) naming the field, or
// kNotSupported for a dtype other than float32, float16, uint8, int8. ImageBatcher, Detector
// and Classifier call it.
void check_render_options(const ImageBatcherOptions& options);
// Checked options -> spec.
RenderSpec make_render_spec(const ImageBatcherOptions& options);

// Writes one image (already converted to spec.channels) into `dst`: H * W * C elements of
// spec.dtype in spec.order.
void render_image(const Image& image, const RenderSpec& spec, void* dst);

}  // namespace trtutils::data
