#include "data/preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"

namespace trtutils::data {

Image convert_channels(Image img, int channels) {
  if (img.channels == channels) return img;
  Image out = make_image(img.width, img.height, channels, "image");
  const int64_t n = img.width * img.height;
  const int sc = img.channels;
  const uint8_t* s = img.pixels.data();
  uint8_t* d = out.pixels.data();
  for (int64_t i = 0; i < n; ++i, s += sc, d += channels) {
    uint8_t r, g, b, a = 255;
    if (sc <= 2) {
      r = g = b = s[0];
      if (sc == 2) a = s[1];
    } else {
      r = s[0], g = s[1], b = s[2];
      if (sc == 4) a = s[3];
    }
    if (channels == 1) {
      // BT.601 luma in 14-bit fixed point (the weights OpenCV's cvtColor uses).
      d[0] = sc <= 2 ? r : static_cast<uint8_t>((r * 4899 + g * 9617 + b * 1868 + (1 << 13)) >> 14);
    } else {
      d[0] = r, d[1] = g, d[2] = b;
      if (channels == 4) d[3] = a;
    }
  }
  return out;
}

LinearAxis linear_axis(int64_t src, int64_t dst) {
  LinearAxis a;
  a.i0.resize(dst);
  a.i1.resize(dst);
  a.w.resize(dst);
  // OpenCV computes the scale as 1 / (dst / src) in double and the source position in float.
  const double scale = 1.0 / (static_cast<double>(dst) / static_cast<double>(src));
  for (int64_t d = 0; d < dst; ++d) {
    float f = static_cast<float>((static_cast<double>(d) + 0.5) * scale - 0.5);
    int64_t s = static_cast<int64_t>(std::floor(f));
    f -= static_cast<float>(s);
    if (s < 0) s = 0, f = 0;
    if (s >= src - 1) s = src - 1, f = 0;
    a.i0[d] = static_cast<int32_t>(s);
    a.i1[d] = static_cast<int32_t>(std::min(s + 1, src - 1));
    a.w[d] = f;
  }
  return a;
}

LinearResizer::LinearResizer(const Image& src, int64_t dst_h, int64_t dst_w)
    : src_(src),
      dst_w_(dst_w),
      ax_(linear_axis(src.width, dst_w)),
      ay_(linear_axis(src.height, dst_h)) {
  const size_t n = static_cast<size_t>(dst_w * src.channels);
  cache_[0].resize(n);
  cache_[1].resize(n);
  out_.resize(n);
}

const float* LinearResizer::source_row(int32_t sy) {
  for (int k = 0; k < 2; ++k) {
    if (cached_[k] == sy) {
      next_slot_ = 1 - k;  // evict the other one next
      return cache_[k].data();
    }
  }
  const int k = next_slot_;
  next_slot_ = 1 - k;
  cached_[k] = sy;
  const int c = src_.channels;
  const uint8_t* s = src_.row(sy);
  float* o = cache_[k].data();
  for (int64_t x = 0; x < dst_w_; ++x) {
    const uint8_t* p0 = s + static_cast<int64_t>(ax_.i0[x]) * c;
    const uint8_t* p1 = s + static_cast<int64_t>(ax_.i1[x]) * c;
    const float w = ax_.w[x], w0 = 1.0f - w;
    for (int ch = 0; ch < c; ++ch) o[x * c + ch] = p0[ch] * w0 + p1[ch] * w;
  }
  return o;
}

const float* LinearResizer::row(int64_t y) {
  const float w = ay_.w[y];
  const float* r0 = source_row(ay_.i0[y]);
  if (w == 0.0f) return r0;
  const float* r1 = source_row(ay_.i1[y]);
  const float w0 = 1.0f - w;
  const size_t n = out_.size();
  for (size_t i = 0; i < n; ++i) out_[i] = r0[i] * w0 + r1[i] * w;
  return out_.data();
}

std::vector<float> resize_linear(const Image& src, int64_t dst_h, int64_t dst_w) {
  LinearResizer r(src, dst_h, dst_w);
  const size_t row = static_cast<size_t>(dst_w * src.channels);
  std::vector<float> out(row * static_cast<size_t>(dst_h));
  for (int64_t y = 0; y < dst_h; ++y)
    std::memcpy(out.data() + y * row, r.row(y), row * sizeof(float));
  return out;
}

LetterboxBox letterbox_box(int64_t src_h, int64_t src_w, int64_t dst_h, int64_t dst_w) {
  const double r = std::min(static_cast<double>(dst_h) / static_cast<double>(src_h),
                            static_cast<double>(dst_w) / static_cast<double>(src_w));
  LetterboxBox b;
  // Python's round() is half-to-even, as std::nearbyint in the default rounding mode.
  b.height = std::clamp<int64_t>(
      static_cast<int64_t>(std::nearbyint(static_cast<double>(src_h) * r)), 1, dst_h);
  b.width = std::clamp<int64_t>(
      static_cast<int64_t>(std::nearbyint(static_cast<double>(src_w) * r)), 1, dst_w);
  // round(d / 2 - 0.1) for an integer d is floor(d / 2).
  b.top = (dst_h - b.height) / 2;
  b.left = (dst_w - b.width) / 2;
  return b;
}

void check_render_options(const ImageBatcherOptions& o) {
  const auto [h, w, c] = o.shape;
  TRT_CHECK_ARG(h >= 1 && w >= 1 && h <= 16384 && w <= 16384,
                "image shape (H, W, C) = ({}, {}, {}): H and W must be in 1..16384", h, w, c);
  TRT_CHECK_ARG(c == 1 || c == 3 || c == 4,
                "image shape (H, W, C) = ({}, {}, {}): C must be 1, 3 or 4", h, w, c);
  TRT_CHECK(o.dtype == DataType::kFloat32 || o.dtype == DataType::kFloat16 ||
                o.dtype == DataType::kUInt8 || o.dtype == DataType::kInt8,
            ErrorCode::kNotSupported,
            "image data as {} is not supported: use float32, float16, uint8 or int8",
            dtype_name(o.dtype));
  if (o.input_scale) {
    const auto [lo, hi] = *o.input_scale;
    TRT_CHECK_ARG(std::isfinite(lo) && std::isfinite(hi) && lo < hi,
                  "input_scale ({}, {}) must be two finite numbers LO < HI (pixels 0..255 map "
                  "onto LO..HI)",
                  lo, hi);
  }
  const size_t nc = static_cast<size_t>(c);
  TRT_CHECK_ARG(o.mean.empty() || o.mean.size() == 1 || o.mean.size() == nc,
                "mean has {} values; give 1 or C = {}", o.mean.size(), c);
  TRT_CHECK_ARG(o.std.empty() || o.std.size() == 1 || o.std.size() == nc,
                "std has {} values; give 1 or C = {}", o.std.size(), c);
  for (float m : o.mean) TRT_CHECK_ARG(std::isfinite(m), "mean values must be finite, got {}", m);
  for (float s : o.std)
    TRT_CHECK_ARG(std::isfinite(s) && s != 0.0f, "std values must be finite and non-zero, got {}",
                  s);
  TRT_CHECK_ARG(o.pad_value >= 0.0f && o.pad_value <= 255.0f, "pad value {} must be in 0..255",
                o.pad_value);
}

RenderSpec make_render_spec(const ImageBatcherOptions& o) {
  RenderSpec s;
  s.height = o.shape[0];
  s.width = o.shape[1];
  s.channels = static_cast<int>(o.shape[2]);
  s.method = o.resize_method;
  s.order = o.order;
  s.dtype = o.dtype;
  s.pad_value = o.pad_value;
  if (o.color_order == ColorOrder::kBGR && s.channels >= 3) s.src[0] = 2, s.src[2] = 0;
  double base_scale = 1.0, base_bias = 0.0;
  std::optional<std::pair<float, float>> range = o.input_scale;
  if (!range && !s.integer_output()) range = std::pair<float, float>{0.0f, 1.0f};
  if (range) {
    base_scale = (static_cast<double>(range->second) - range->first) / 255.0;
    base_bias = range->first;
  }
  for (int c = 0; c < s.channels; ++c) {
    // mean/std are given per colour (R, G, B, A order): output channel c carries colour src[c].
    const size_t k = static_cast<size_t>(s.src[c]);
    const double mean = o.mean.empty() ? 0.0 : o.mean[o.mean.size() == 1 ? 0 : k];
    const double sd = o.std.empty() ? 1.0 : o.std[o.std.size() == 1 ? 0 : k];
    s.scale[c] = static_cast<float>(base_scale / sd);
    s.bias[c] = static_cast<float>((base_bias - mean) / sd);
  }
  return s;
}

namespace {

template <typename T>
T cast_out(float v);
template <>
float cast_out<float>(float v) {
  return v;
}
template <>
half cast_out<half>(float v) {
  return float_to_half(v);
}
template <>
uint8_t cast_out<uint8_t>(float v) {
  // The comparisons also send NaN to 0.
  const float r = std::nearbyint(v);
  return r >= 255.0f ? 255 : (r > 0.0f ? static_cast<uint8_t>(r) : 0);
}
template <>
int8_t cast_out<int8_t>(float v) {
  const float r = std::nearbyint(v);
  return r >= 127.0f ? 127 : (r > -128.0f ? static_cast<int8_t>(r) : -128);
}

template <typename T>
void render_typed(const Image& img, const RenderSpec& s, T* dst) {
  const int64_t H = s.height, W = s.width;
  const int C = s.channels;
  TRT_INTERNAL_CHECK(img.channels == C);
  LetterboxBox box{H, W, 0, 0};
  if (s.method == ResizeMethod::kLetterbox) box = letterbox_box(img.height, img.width, H, W);
  T pad[4];
  for (int c = 0; c < C; ++c) pad[c] = cast_out<T>(s.pad_value * s.scale[c] + s.bias[c]);
  const bool nchw = s.order == DataOrder::kNCHW;
  // Element (y, x, c) of the output.
  auto at = [&](int64_t y, int64_t x, int c) -> T& {
    return nchw ? dst[(c * H + y) * W + x] : dst[(y * W + x) * C + c];
  };
  auto pad_span = [&](int64_t y, int64_t x0, int64_t x1) {
    for (int64_t x = x0; x < x1; ++x)
      for (int c = 0; c < C; ++c) at(y, x, c) = pad[c];
  };
  LinearResizer resizer(img, box.height, box.width);
  for (int64_t y = 0; y < H; ++y) {
    if (y < box.top || y >= box.top + box.height) {
      pad_span(y, 0, W);
      continue;
    }
    const float* r = resizer.row(y - box.top);
    pad_span(y, 0, box.left);
    for (int c = 0; c < C; ++c) {
      const float* src = r + s.src[c];
      const float a = s.scale[c], b = s.bias[c];
      for (int64_t x = 0; x < box.width; ++x)
        at(y, box.left + x, c) = cast_out<T>(src[x * C] * a + b);
    }
    pad_span(y, box.left + box.width, W);
  }
}

}  // namespace

void render_image(const Image& image, const RenderSpec& spec, void* dst) {
  if (spec.dtype == DataType::kFloat32) return render_typed(image, spec, static_cast<float*>(dst));
  if (spec.dtype == DataType::kFloat16) return render_typed(image, spec, static_cast<half*>(dst));
  if (spec.dtype == DataType::kUInt8) return render_typed(image, spec, static_cast<uint8_t*>(dst));
  if (spec.dtype == DataType::kInt8) return render_typed(image, spec, static_cast<int8_t*>(dst));
  TRT_THROW(ErrorCode::kNotSupported, "image data as {} is not supported", dtype_name(spec.dtype));
}

}  // namespace trtutils::data
