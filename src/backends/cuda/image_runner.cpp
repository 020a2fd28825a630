#include "backends/cuda/image_runner.h"

#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/image_kernels.h"
#include "core/check.h"

namespace trtutils::cuda {

namespace {

// What one slot uploads, in one copy: the resize's taps, then the pixels.
struct SlotLayout {
  size_t x_taps = 0, y_taps = 0;  // offsets of x0 x1 wx (box_w each) and y0 y1 wy (box_h each)
  size_t pixels = 0, bytes = 0;
};

SlotLayout slot_layout(int64_t box_w, int64_t box_h, size_t pixel_bytes) {
  SlotLayout l;
  l.y_taps = static_cast<size_t>(box_w) * 12;
  l.pixels = l.y_taps + static_cast<size_t>(box_h) * 12;
  l.bytes = l.pixels + pixel_bytes;
  return l;
}

// A buffer that only grows.
struct Staging {
  std::shared_ptr<uint8_t> host;  // page-locked
  std::shared_ptr<void> dev;
  size_t capacity = 0;
  void reserve(size_t bytes) {
    if (bytes <= capacity) return;
    host = alloc_pinned(bytes);
    TRT_CHECK(host != nullptr, ErrorCode::kOutOfRange,
              "detect: could not allocate {} bytes of page-locked memory for an image", bytes);
    dev = device_malloc(bytes);
    capacity = bytes;
  }
};

void put_axis(uint8_t* at, const data::LinearAxis& a) {
  const size_t n = a.w.size();
  std::memcpy(at, a.i0.data(), n * 4);
  std::memcpy(at + n * 4, a.i1.data(), n * 4);
  std::memcpy(at + n * 8, a.w.data(), n * 4);
}

}  // namespace

struct ImageRunner::Impl {
  ExecutionContext* ctx = nullptr;
  std::string input;
  Shape shape;
  data::RenderSpec spec;
  size_t slot_bytes = 0;
  std::shared_ptr<void> input_dev;
  std::vector<Staging> slots;
  struct Output {
    std::string name;
    DataType dtype;
    size_t bytes;
    std::shared_ptr<void> dev;
    std::shared_ptr<uint8_t> host;
  };
  std::vector<Output> outputs;
  cudaStream_t stream = nullptr;
  cudaEvent_t ev[2] = {nullptr, nullptr};  // around the engine and the copies back

  ~Impl() {
    for (cudaEvent_t e : ev)
      if (e) cudaEventDestroy(e);
    if (stream) cudaStreamDestroy(stream);
  }
};

bool ImageRunner::usable(const Engine& engine) {
  return engine.runtime_backend() == "cuda" && device_status().usable;
}

ImageRunner::ImageRunner(ExecutionContext& ctx, const Engine& engine, std::string input,
                         Shape input_shape, data::RenderSpec spec)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.ctx = &ctx;
  m.input = std::move(input);
  m.shape = std::move(input_shape);
  m.spec = spec;
  const int64_t n = m.shape.at(0);
  m.slot_bytes = dtype_storage_bytes(spec.dtype, spec.height * spec.width * spec.channels);
  for (const EngineTensorInfo& o : engine.outputs()) {
    int64_t numel = 1;
    for (size_t i = 0; i < o.shape.size(); ++i) {
      const int64_t d = i == 0 && o.shape[0] < 0 ? n : o.shape[i];
      TRT_CHECK(d >= 0, ErrorCode::kNotSupported,
                "output '{}' {} has a dynamic dimension {} besides the batch", o.name,
                shape_str(o.shape), i);
      numel *= d;
    }
    const size_t bytes = std::max<size_t>(1, dtype_storage_bytes(o.dtype, numel));
    m.outputs.push_back({o.name, o.dtype, bytes, device_malloc(bytes), alloc_pinned(bytes)});
    TRT_CHECK(m.outputs.back().host != nullptr, ErrorCode::kOutOfRange,
              "could not allocate {} bytes of page-locked memory for output '{}'", bytes, o.name);
  }
  m.input_dev = device_malloc(m.slot_bytes * static_cast<size_t>(n));
  m.slots.resize(static_cast<size_t>(n));
  TRT_CUDA_CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
  for (cudaEvent_t& e : m.ev) TRT_CUDA_CHECK(cudaEventCreate(&e));
}

ImageRunner::~ImageRunner() = default;

namespace {

// An image ready to go: its taps and pixels in `s`'s page-locked buffer, and the kernel's
// arguments for them once copied (dst unset).
struct Staged {
  SlotLayout layout;
  data::LetterboxBox box;
  k::RenderArgs args;
};

// Sizes `s` for `img` and fills in the arguments (no copying yet: allocation stays serial).
Staged plan_image(const Image& img, const data::RenderSpec& spec, Staging& s) {
  Staged st;
  st.box = {spec.height, spec.width, 0, 0};
  if (spec.method == ResizeMethod::kLetterbox)
    st.box = data::letterbox_box(img.height, img.width, spec.height, spec.width);
  const data::LetterboxBox& box = st.box;
  st.layout = slot_layout(box.width, box.height, img.pixels.size());
  s.reserve(st.layout.bytes);
  const auto* base = static_cast<const uint8_t*>(s.dev.get());
  const auto* xt = reinterpret_cast<const int32_t*>(base + st.layout.x_taps);
  const auto* yt = reinterpret_cast<const int32_t*>(base + st.layout.y_taps);
  k::RenderArgs& a = st.args;
  a.src = base + st.layout.pixels;
  a.src_w = img.width;
  a.channels = spec.channels;
  a.x0 = xt, a.x1 = xt + box.width, a.wx = reinterpret_cast<const float*>(xt + 2 * box.width);
  a.y0 = yt, a.y1 = yt + box.height, a.wy = reinterpret_cast<const float*>(yt + 2 * box.height);
  a.top = box.top, a.left = box.left, a.box_h = box.height, a.box_w = box.width;
  a.height = spec.height, a.width = spec.width;
  a.nchw = spec.order == DataOrder::kNCHW;
  a.dtype = spec.dtype;
  for (int c = 0; c < 4; ++c) {
    a.srcc[c] = spec.src[c];
    a.scale[c] = spec.scale[c];
    a.bias[c] = spec.bias[c];
  }
  a.pad_value = spec.pad_value;
  return st;
}

// The host half: taps and pixels into the page-locked buffer (safe to run for several images
// at once, each with its own Staging).
void fill_staging(const Image& img, const Staged& st, Staging& s) {
  put_axis(s.host.get() + st.layout.x_taps, data::linear_axis(img.width, st.box.width));
  put_axis(s.host.get() + st.layout.y_taps, data::linear_axis(img.height, st.box.height));
  std::memcpy(s.host.get() + st.layout.pixels, img.pixels.data(), img.pixels.size());
}

void upload(const Staged& st, const Staging& s, cudaStream_t stream) {
  TRT_CUDA_CHECK(
      cudaMemcpyAsync(s.dev.get(), s.host.get(), st.layout.bytes, cudaMemcpyHostToDevice, stream));
}

}  // namespace

void render_on_device(const Image& img, const data::RenderSpec& spec, void* dst) {
  TRT_CHECK_ARG(img.channels == spec.channels, "image has {} channels, not {}", img.channels,
                spec.channels);
  Staging s;
  Staged st = plan_image(img, spec, s);
  fill_staging(img, st, s);
  upload(st, s, nullptr);
  st.args.dst = dst;
  TRT_CUDA_CHECK(k::render_image(st.args, nullptr));
  TRT_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

std::map<std::string, Tensor> ImageRunner::run(const std::vector<const Image*>& images,
                                               Times& times) {
  Impl& m = *impl_;
  const auto n = static_cast<size_t>(m.shape[0]);
  TRT_CHECK_ARG(!images.empty() && images.size() <= n, "{} images for an input of {} slots",
                images.size(), n);
  std::vector<Staged> staged;
  for (size_t i = 0; i < images.size(); ++i) {
    TRT_CHECK_ARG(images[i]->channels == m.spec.channels, "image {} has {} channels, not {}", i,
                  images[i]->channels, m.spec.channels);
    staged.push_back(plan_image(*images[i], m.spec, m.slots[i]));
  }
  // The host copies in parallel (a 1280x720 RGB image is 2.7 MB: one thread copies a batch of
  // 32 in about 13 ms); then the uploads and renders in order on the stream.
  const auto count = static_cast<int64_t>(images.size());
#pragma omp parallel for schedule(dynamic, 1) if (count > 1)
  for (int64_t i = 0; i < count; ++i) fill_staging(*images[i], staged[i], m.slots[i]);
  for (size_t i = 0; i < images.size(); ++i) {
    upload(staged[i], m.slots[i], m.stream);
    staged[i].args.dst = static_cast<uint8_t*>(m.input_dev.get()) + i * m.slot_bytes;
    TRT_CUDA_CHECK(k::render_image(staged[i].args, m.stream));
  }
  if (images.size() < n) {
    uint8_t* rest = static_cast<uint8_t*>(m.input_dev.get()) + images.size() * m.slot_bytes;
    TRT_CUDA_CHECK(cudaMemsetAsync(rest, 0, (n - images.size()) * m.slot_bytes, m.stream));
  }
  TRT_CUDA_CHECK(cudaEventRecord(m.ev[0], m.stream));
  std::map<std::string, trtutils::DeviceBuffer> in{
      {m.input, {m.input_dev.get(), m.spec.dtype, m.shape, m.slot_bytes * n}}};
  std::map<std::string, trtutils::DeviceBuffer> out;
  for (const auto& o : m.outputs) out[o.name] = {o.dev.get(), o.dtype, {}, o.bytes};
  m.ctx->enqueue(in, out, m.stream);
  std::map<std::string, Tensor> result;
  for (const auto& o : m.outputs) {
    const trtutils::DeviceBuffer& b = out.at(o.name);
    Tensor t(b.dtype, b.shape);
    TRT_CHECK(t.nbytes() <= o.bytes, ErrorCode::kInternal, "output '{}' outgrew its buffer",
              o.name);
    TRT_CUDA_CHECK(
        cudaMemcpyAsync(o.host.get(), o.dev.get(), t.nbytes(), cudaMemcpyDeviceToHost, m.stream));
    result.emplace(o.name, std::move(t));
  }
  TRT_CUDA_CHECK(cudaEventRecord(m.ev[1], m.stream));
  TRT_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  for (const auto& o : m.outputs) {
    Tensor& t = result.at(o.name);
    std::memcpy(t.raw(), o.host.get(), t.nbytes());
  }
  float engine_ms = 0;
  TRT_CUDA_CHECK(cudaEventElapsedTime(&engine_ms, m.ev[0], m.ev[1]));
  times.inference_ms = engine_ms;
  return result;
}

}  // namespace trtutils::cuda
