// preprocessing_summary (trtutils/image_batcher.h): what quantize and build print about the
// images they calibrate with.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trtutils/image_batcher.h"

namespace trtutils {

namespace {

std::string values(const std::vector<float>& v) {
  return fmt::format("{:g}", fmt::join(v, " "));
}

}  // namespace

std::string preprocessing_summary(const ImageBatcherOptions& o) {
  const bool integer = o.dtype == DataType::kUInt8 || o.dtype == DataType::kInt8;
  std::string s = fmt::format("{}x{}x{} (H x W x C), resize {}", o.shape[0], o.shape[1], o.shape[2],
                              resize_method_name(o.resize_method));
  if (o.resize_method == ResizeMethod::kLetterbox) s += fmt::format(" (pad {:g})", o.pad_value);
  if (o.input_scale)
    s += fmt::format(", scale [{:g}, {:g}]", o.input_scale->first, o.input_scale->second);
  else
    s += integer ? ", scale none (0..255)" : ", scale [0, 1]";
  if (o.mean.empty() && o.std.empty())
    s += ", no mean/std";
  else
    s += fmt::format(", mean {}, std {}", o.mean.empty() ? "0" : values(o.mean),
                     o.std.empty() ? "1" : values(o.std));
  s += fmt::format(", {}, {}, {}", color_order_name(o.color_order), data_order_name(o.order),
                   dtype_name(o.dtype));
  return s;
}

}  // namespace trtutils
