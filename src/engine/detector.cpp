// Detector / Classifier over an ImageModel (engine/image_model.h: input plan, preprocessing on
// the host or the GPU): the engine's outputs turned into detections or classes.
#include "trtutils/detector.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "engine/image_model.h"

namespace trtutils {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
using detail::ImageModel;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::shared_ptr<const Engine> load_engine(const fs::path& path, const std::string& backend) {
  return Engine::load(path, {.backend = backend});
}

template <typename Options>
detail::PreprocessOptions preprocess_of(const Options& o) {
  return {o.resize_method, o.input_scale, o.mean,       o.std,
          o.color_order,   o.pad_value,   o.preprocess, o.num_threads};
}

// Runs `images` batch() at a time; `take(outputs, slot, image index)` reads each image's part.
// The latency is summed over the executions (plus decode_ms kept from the caller).
template <typename Take>
void run_batches(ImageModel& model, const std::vector<const Image*>& images, Take take) {
  ImageLatency sum;
  const auto n = static_cast<size_t>(model.batch());
  for (size_t first = 0; first < images.size(); first += n) {
    const std::vector<const Image*> chunk(
        images.begin() + static_cast<std::ptrdiff_t>(first),
        images.begin() + static_cast<std::ptrdiff_t>(std::min(images.size(), first + n)));
    std::map<std::string, Tensor> out = model.run(chunk);
    const auto t0 = Clock::now();
    for (size_t s = 0; s < chunk.size(); ++s) take(out, static_cast<int64_t>(s), first + s);
    ImageLatency& l = model.latency();
    l.postprocess_ms = ms_since(t0);
    sum.preprocess_ms += l.preprocess_ms;
    sum.inference_ms += l.inference_ms;
    sum.postprocess_ms += l.postprocess_ms;
  }
  model.latency() = sum;
}

std::vector<const Image*> pointers(const std::vector<Image>& images) {
  std::vector<const Image*> p;
  p.reserve(images.size());
  for (const Image& i : images) p.push_back(&i);
  return p;
}

void check_nms_outputs(const Engine& e) {
  struct Want {
    const char* name;
    DataType dtype;
    size_t rank;
  };
  static constexpr Want kWant[] = {{"num_dets", DataType::kInt32, 2},
                                   {"det_boxes", DataType::kFloat32, 3},
                                   {"det_scores", DataType::kFloat32, 2},
                                   {"det_classes", DataType::kInt32, 2}};
  for (const Want& w : kWant) {
    const EngineTensorInfo* o = detail::find_output(e, w.name);
    TRT_CHECK_ARG(o != nullptr,
                  "detect: engine '{}' has no output '{}': it needs the EfficientNMS outputs "
                  "num_dets, det_boxes, det_scores, det_classes, and its outputs are {}. Build "
                  "the detector with `trtutils build_yolo` (builder::build_yolo_engine), which "
                  "adds NMS and these outputs",
                  e.path().string(), w.name, detail::tensor_list(e.outputs()));
    TRT_CHECK_ARG(
        o->dtype == w.dtype && o->shape.size() == w.rank && (w.rank != 3 || o->shape[2] == 4),
        "detect: engine '{}' output '{}' is {} {}; EfficientNMS (build_yolo) writes it "
        "as {} of rank {}{}",
        e.path().string(), w.name, dtype_name(o->dtype), shape_str(o->shape), dtype_name(w.dtype),
        w.rank, w.rank == 3 ? " ending in 4" : "");
  }
}

// Network pixels -> original pixels: x_orig = (x - left) * sx. The resize maps pixel edges
// linearly (half-pixel centres), so this inverts it exactly.
struct BoxMap {
  double w, h, sx, sy, left = 0, top = 0;
  BoxMap(const Image& img, const detail::InputPlan& in, ResizeMethod method)
      : w(static_cast<double>(img.width)),
        h(static_cast<double>(img.height)),
        sx(w / static_cast<double>(in.width)),
        sy(h / static_cast<double>(in.height)) {
    if (method != ResizeMethod::kLetterbox) return;
    const data::LetterboxBox b = data::letterbox_box(img.height, img.width, in.height, in.width);
    sx = w / static_cast<double>(b.width);
    sy = h / static_cast<double>(b.height);
    left = static_cast<double>(b.left);
    top = static_cast<double>(b.top);
  }
  float x(float v) const {
    return static_cast<float>(std::clamp((static_cast<double>(v) - left) * sx, 0.0, w));
  }
  float y(float v) const {
    return static_cast<float>(std::clamp((static_cast<double>(v) - top) * sy, 0.0, h));
  }
};

// Image `slot`'s detections from the EfficientNMS outputs.
std::vector<Detection> read_detections(const std::map<std::string, Tensor>& out, int64_t slot,
                                       const BoxMap& map, float conf_threshold) {
  const Tensor& num = out.at("num_dets");
  const Tensor& boxes = out.at("det_boxes");
  const Tensor& scores = out.at("det_scores");
  const Tensor& classes = out.at("det_classes");
  TRT_CHECK(boxes.rank() == 3 && scores.rank() == 2 && classes.rank() == 2 && num.numel() > slot &&
                boxes.dim(0) > slot && scores.dim(1) == boxes.dim(1) &&
                classes.dim(1) == boxes.dim(1),
            ErrorCode::kInternal, "detect: EfficientNMS outputs of unexpected shapes {} {} {} {}",
            shape_str(num.shape()), shape_str(boxes.shape()), shape_str(scores.shape()),
            shape_str(classes.shape()));
  const int64_t k = boxes.dim(1);
  const int64_t n = std::clamp<int64_t>(num.data<int32_t>()[slot], 0, k);
  const float* bx = boxes.data<float>() + slot * k * 4;
  const float* sc = scores.data<float>() + slot * k;
  const int32_t* cl = classes.data<int32_t>() + slot * k;
  std::vector<Detection> dets;
  dets.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (!(sc[i] >= conf_threshold)) continue;
    const float* b = bx + i * 4;
    Detection d;
    // EfficientNMS passes corner boxes through as given: order them.
    d.x1 = map.x(std::min(b[0], b[2]));
    d.x2 = map.x(std::max(b[0], b[2]));
    d.y1 = map.y(std::min(b[1], b[3]));
    d.y2 = map.y(std::max(b[1], b[3]));
    d.score = sc[i];
    d.class_id = cl[i];
    dets.push_back(d);
  }
  return dets;
}

}  // namespace

// ---- Detector ---------------------------------------------------------------------------------

struct Detector::Impl {
  DetectorOptions opt;
  ImageModel model;

  std::vector<std::vector<Detection>> detect(const std::vector<const Image*>& images) {
    std::vector<std::vector<Detection>> all(images.size());
    run_batches(
        model, images, [&](const std::map<std::string, Tensor>& out, int64_t slot, size_t i) {
          all[i] = read_detections(out, slot, BoxMap(*images[i], model.input(), opt.resize_method),
                                   opt.conf_threshold);
        });
    return all;
  }
};

Detector::Detector(const fs::path& engine, DetectorOptions options)
    // A copy, not a move: the order in which the two arguments are evaluated is unspecified.
    : Detector(load_engine(engine, options.backend), options) {}

Detector::Detector(std::shared_ptr<const Engine> engine, DetectorOptions options) {
  TRT_CHECK_ARG(engine != nullptr, "detect: no engine");
  TRT_CHECK_ARG(options.conf_threshold >= 0.0f && options.conf_threshold <= 1.0f,
                "detect: conf_threshold {} must be in [0, 1]", options.conf_threshold);
  check_nms_outputs(*engine);
  ImageModel model(std::move(engine), preprocess_of(options), "detect");
  impl_ = std::make_unique<Impl>(Impl{std::move(options), std::move(model)});
}

Detector::~Detector() = default;
Detector::Detector(Detector&&) noexcept = default;
Detector& Detector::operator=(Detector&&) noexcept = default;

std::vector<Detection> Detector::detect(const fs::path& image) {
  const auto t0 = Clock::now();
  const Image img = load_image(image);
  const double decode_ms = ms_since(t0);
  std::vector<Detection> r = detect(img);
  impl_->model.latency().decode_ms = decode_ms;
  return r;
}

std::vector<Detection> Detector::detect(const Image& img) {
  return std::move(impl_->detect({&img})[0]);
}

std::vector<std::vector<Detection>> Detector::detect(const std::vector<Image>& images) {
  return impl_->detect(pointers(images));
}

const ImageLatency& Detector::last_latency() const {
  return impl_->model.latency();
}
const DetectorOptions& Detector::options() const {
  return impl_->opt;
}
const Engine& Detector::engine() const {
  return impl_->model.engine();
}
int64_t Detector::input_height() const {
  return impl_->model.input().height;
}
int64_t Detector::input_width() const {
  return impl_->model.input().width;
}
int64_t Detector::batch_size() const {
  return impl_->model.batch();
}
bool Detector::gpu_preprocessing() const {
  return impl_->model.gpu_preprocessing();
}

// ---- Classifier -------------------------------------------------------------------------------

namespace {

// Image `slot`'s top_k from scores [N, C, ...]; `softmax` says whether one was applied.
std::vector<Classification> top_classes(const Tensor& y, int64_t slot, int64_t top_k,
                                        bool& softmax) {
  const int64_t c = y.numel() / y.dim(0);
  TRT_CHECK_ARG(c >= 1, "classify: output {} has no classes", shape_str(y.shape()));
  std::vector<double> p(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) p[static_cast<size_t>(j)] = y.at_double(slot * c + j);
  double sum = 0;
  bool probabilities = true;
  for (double v : p) {
    probabilities = probabilities && v >= 0.0 && v <= 1.0;
    sum += v;
  }
  probabilities = probabilities && std::abs(sum - 1.0) <= 1e-3;
  softmax = !probabilities;
  if (softmax) {
    const double mx = *std::max_element(p.begin(), p.end());
    double z = 0;
    for (double& v : p) z += (v = std::exp(v - mx));
    for (double& v : p) v /= z;
  }
  std::vector<int64_t> idx(static_cast<size_t>(c));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  const int64_t k = std::min(top_k, c);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int64_t a, int64_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  std::vector<Classification> r;
  r.reserve(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) r.push_back({idx[i], static_cast<float>(p[idx[i]])});
  return r;
}

const Tensor& scores_of(const std::map<std::string, Tensor>& out, const std::string& name,
                        int64_t slot) {
  const Tensor& y = out.at(name);
  TRT_CHECK(y.rank() >= 2 && y.dim(0) > slot, ErrorCode::kInternal,
            "classify: output '{}' of unexpected shape {}", name, shape_str(y.shape()));
  return y;
}

}  // namespace

struct Classifier::Impl {
  ClassifierOptions opt;
  ImageModel model;
  std::string output;
  int64_t num_classes = -1;  // -1 until known (a dynamic class dimension)
  bool softmax = false;

  std::vector<std::vector<Classification>> classify(const std::vector<const Image*>& images,
                                                    int64_t top_k) {
    TRT_CHECK_ARG(top_k >= 1, "classify: top_k {} must be at least 1", top_k);
    std::vector<std::vector<Classification>> all(images.size());
    run_batches(model, images,
                [&](const std::map<std::string, Tensor>& out, int64_t slot, size_t i) {
                  const Tensor& y = scores_of(out, output, slot);
                  num_classes = y.numel() / y.dim(0);
                  all[i] = top_classes(y, slot, top_k, softmax);
                });
    return all;
  }
};

Classifier::Classifier(const fs::path& engine, ClassifierOptions options)
    // A copy, not a move: the order in which the two arguments are evaluated is unspecified.
    : Classifier(load_engine(engine, options.backend), options) {}

Classifier::Classifier(std::shared_ptr<const Engine> engine, ClassifierOptions options) {
  TRT_CHECK_ARG(engine != nullptr, "classify: no engine");
  const auto& outs = engine->outputs();
  TRT_CHECK_ARG(!outs.empty(), "classify: engine '{}' has no outputs", engine->path().string());
  const EngineTensorInfo& o = outs[0];
  bool ok = o.shape.size() >= 2 && o.shape[1] != 0;
  for (size_t i = 2; i < o.shape.size(); ++i) ok = ok && o.shape[i] == 1;
  TRT_CHECK_ARG(ok,
                "classify: engine '{}' output '{}' is {}; a classifier's first output is "
                "[N, classes] (trailing 1s allowed)",
                engine->path().string(), o.name, shape_str(o.shape));
  std::string output = o.name;
  const int64_t classes = o.shape[1];
  ImageModel model(std::move(engine), preprocess_of(options), "classify");
  impl_ = std::make_unique<Impl>(
      Impl{std::move(options), std::move(model), std::move(output), classes, false});
}

Classifier::~Classifier() = default;
Classifier::Classifier(Classifier&&) noexcept = default;
Classifier& Classifier::operator=(Classifier&&) noexcept = default;

std::vector<Classification> Classifier::classify(const fs::path& image, int64_t top_k) {
  const auto t0 = Clock::now();
  const Image img = load_image(image);
  const double decode_ms = ms_since(t0);
  std::vector<Classification> r = classify(img, top_k);
  impl_->model.latency().decode_ms = decode_ms;
  return r;
}

std::vector<Classification> Classifier::classify(const Image& img, int64_t top_k) {
  return std::move(impl_->classify({&img}, top_k)[0]);
}

std::vector<std::vector<Classification>> Classifier::classify(const std::vector<Image>& images,
                                                              int64_t top_k) {
  return impl_->classify(pointers(images), top_k);
}

int64_t Classifier::num_classes() const {
  return impl_->num_classes;
}
bool Classifier::softmax_applied() const {
  return impl_->softmax;
}
const ImageLatency& Classifier::last_latency() const {
  return impl_->model.latency();
}
const ClassifierOptions& Classifier::options() const {
  return impl_->opt;
}
const Engine& Classifier::engine() const {
  return impl_->model.engine();
}
int64_t Classifier::batch_size() const {
  return impl_->model.batch();
}
bool Classifier::gpu_preprocessing() const {
  return impl_->model.gpu_preprocessing();
}

}  // namespace trtutils
