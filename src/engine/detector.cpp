// Detector / Classifier: the model input planned once from the engine's bindings, each image
// rendered into it by the batcher's own code (data/preprocess.h), and the outputs read back.
#include "trtutils/detector.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "data/preprocess.h"

namespace trtutils {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string tensor_list(const std::vector<EngineTensorInfo>& ts) {
  std::string s;
  for (const auto& t : ts)
    s += fmt::format("{}{} {} {}", s.empty() ? "" : ", ", t.name, dtype_name(t.dtype),
                     shape_str(t.shape));
  return s.empty() ? "none" : s;
}

// The preprocessing fields shared by DetectorOptions and ClassifierOptions.
struct Preprocess {
  ResizeMethod resize_method;
  std::optional<std::pair<float, float>> input_scale;
  std::vector<float> mean, std;
  ColorOrder color_order;
  float pad_value;
};

// The model input as Detector / Classifier feed it.
struct InputPlan {
  std::string name;
  DataType dtype = DataType::kFloat32;
  Shape shape;  // what is fed: [N, C, H, W] or [N, H, W, C]
  int64_t height = 0, width = 0;
  int channels = 0;
  data::RenderSpec spec;
};

InputPlan plan_input(const Engine& engine, const Preprocess& p, const char* who) {
  const std::string path = engine.path().string();
  const auto& ins = engine.inputs();
  TRT_CHECK_ARG(ins.size() == 1, "{}: engine '{}' has {} inputs ({}); an image model has one", who,
                path, ins.size(), tensor_list(ins));
  const EngineTensorInfo& in = ins[0];
  TRT_CHECK_ARG(in.shape.size() == 4,
                "{}: engine '{}' input '{}' is {}; an image input has rank 4 (NCHW or NHWC)", who,
                path, in.name, shape_str(in.shape));
  InputPlan plan;
  plan.name = in.name;
  plan.dtype = in.dtype;
  plan.shape = in.shape;
  // Batch: 1 when dynamic (within the profile); H, W, C: static or the profile's opt size.
  for (size_t i = 0; i < 4; ++i) {
    if (plan.shape[i] >= 0) continue;
    const bool profile = in.opt_shape.size() == 4;
    if (i == 0) {
      plan.shape[0] = profile ? std::clamp<int64_t>(1, in.min_shape[0], in.max_shape[0]) : 1;
      continue;
    }
    TRT_CHECK_ARG(profile,
                  "{}: engine '{}' input '{}' {} has a dynamic dimension {} and no profile; "
                  "build it with a fixed --shape",
                  who, path, in.name, shape_str(in.shape), i);
    plan.shape[i] = in.opt_shape[i];
  }
  const auto is_channels = [](int64_t d) { return d == 1 || d == 3 || d == 4; };
  DataOrder order;
  if (is_channels(plan.shape[1])) {
    order = DataOrder::kNCHW;
    plan.channels = static_cast<int>(plan.shape[1]);
    plan.height = plan.shape[2];
    plan.width = plan.shape[3];
  } else if (is_channels(plan.shape[3])) {
    order = DataOrder::kNHWC;
    plan.channels = static_cast<int>(plan.shape[3]);
    plan.height = plan.shape[1];
    plan.width = plan.shape[2];
  } else {
    TRT_THROW(ErrorCode::kInvalidArgument,
              "{}: engine '{}' input '{}' {} is neither NCHW nor NHWC with 1, 3 or 4 channels", who,
              path, in.name, shape_str(plan.shape));
  }
  ImageBatcherOptions o;
  o.shape = {plan.height, plan.width, plan.channels};
  o.dtype = plan.dtype;
  o.order = order;
  o.resize_method = p.resize_method;
  o.input_scale = p.input_scale;
  o.mean = p.mean;
  o.std = p.std;
  o.color_order = p.color_order;
  o.pad_value = p.pad_value;
  data::check_render_options(o);
  plan.spec = data::make_render_spec(o);
  return plan;
}

void check_image(const Image& img) {
  TRT_CHECK_ARG(img.width >= 1 && img.height >= 1 && img.channels >= 1 && img.channels <= 4,
                "image of {}x{} pixels with {} channels: need a size of at least 1x1 and 1 to 4 "
                "channels",
                img.width, img.height, img.channels);
  TRT_CHECK_ARG(img.pixels.size() == static_cast<size_t>(img.width * img.height * img.channels),
                "image of {}x{}x{} holds {} bytes, not {}", img.width, img.height, img.channels,
                img.pixels.size(), img.width * img.height * img.channels);
}

// The input tensor for `img` (slot 0; other batch slots stay zero).
Tensor render(const InputPlan& plan, const Image& img) {
  check_image(img);
  Tensor t(plan.dtype, plan.shape);
  if (img.channels == plan.channels) {
    data::render_image(img, plan.spec, t.raw());
  } else {
    data::render_image(data::convert_channels(img, plan.channels), plan.spec, t.raw());
  }
  return t;
}

std::shared_ptr<const Engine> load_engine(const fs::path& path, const std::string& backend) {
  return Engine::load(path, {.backend = backend});
}

const EngineTensorInfo* find_output(const Engine& e, const std::string& name) {
  for (const auto& o : e.outputs())
    if (o.name == name) return &o;
  return nullptr;
}

}  // namespace

// ---- Detector ---------------------------------------------------------------------------------

struct Detector::Impl {
  DetectorOptions opt;
  std::shared_ptr<const Engine> engine;
  std::unique_ptr<ExecutionContext> ctx;
  InputPlan input;
  ImageLatency latency;
};

namespace {

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
    const EngineTensorInfo* o = find_output(e, w.name);
    TRT_CHECK_ARG(o != nullptr,
                  "detect: engine '{}' has no output '{}': it needs the EfficientNMS outputs "
                  "num_dets, det_boxes, det_scores, det_classes, and its outputs are {}. Build "
                  "the detector with `trtutils build_yolo` (builder::build_yolo_engine), which "
                  "adds NMS and these outputs",
                  e.path().string(), w.name, tensor_list(e.outputs()));
    TRT_CHECK_ARG(
        o->dtype == w.dtype && o->shape.size() == w.rank && (w.rank != 3 || o->shape[2] == 4),
        "detect: engine '{}' output '{}' is {} {}; EfficientNMS (build_yolo) writes it "
        "as {} of rank {}{}",
        e.path().string(), w.name, dtype_name(o->dtype), shape_str(o->shape), dtype_name(w.dtype),
        w.rank, w.rank == 3 ? " ending in 4" : "");
  }
}

}  // namespace

Detector::Detector(const fs::path& engine, DetectorOptions options)
    // A copy, not a move: the order in which the two arguments are evaluated is unspecified.
    : Detector(load_engine(engine, options.backend), options) {}

Detector::Detector(std::shared_ptr<const Engine> engine, DetectorOptions options)
    : impl_(std::make_unique<Impl>()) {
  TRT_CHECK_ARG(engine != nullptr, "detect: no engine");
  TRT_CHECK_ARG(options.conf_threshold >= 0.0f && options.conf_threshold <= 1.0f,
                "detect: conf_threshold {} must be in [0, 1]", options.conf_threshold);
  check_nms_outputs(*engine);
  impl_->input = plan_input(*engine,
                            {options.resize_method, options.input_scale, options.mean, options.std,
                             options.color_order, options.pad_value},
                            "detect");
  impl_->ctx = engine->create_execution_context({.num_threads = options.num_threads});
  impl_->engine = std::move(engine);
  impl_->opt = std::move(options);
}

Detector::~Detector() = default;
Detector::Detector(Detector&&) noexcept = default;
Detector& Detector::operator=(Detector&&) noexcept = default;

std::vector<Detection> Detector::detect(const fs::path& image) {
  const auto t0 = Clock::now();
  const Image img = load_image(image);
  const double decode_ms = ms_since(t0);
  std::vector<Detection> r = detect(img);
  impl_->latency.decode_ms = decode_ms;
  return r;
}

std::vector<Detection> Detector::detect(const Image& img) {
  Impl& m = *impl_;
  m.latency = {};
  auto t0 = Clock::now();
  Tensor x = render(m.input, img);
  m.latency.preprocess_ms = ms_since(t0);

  t0 = Clock::now();
  std::map<std::string, Tensor> out = m.ctx->execute({{m.input.name, std::move(x)}});
  m.latency.inference_ms = ms_since(t0);

  t0 = Clock::now();
  const Tensor& num = out.at("num_dets");
  const Tensor& boxes = out.at("det_boxes");
  const Tensor& scores = out.at("det_scores");
  const Tensor& classes = out.at("det_classes");
  TRT_CHECK(boxes.rank() == 3 && scores.rank() == 2 && classes.rank() == 2 && num.numel() >= 1 &&
                scores.dim(1) == boxes.dim(1) && classes.dim(1) == boxes.dim(1),
            ErrorCode::kInternal, "detect: EfficientNMS outputs of unexpected shapes {} {} {} {}",
            shape_str(num.shape()), shape_str(boxes.shape()), shape_str(scores.shape()),
            shape_str(classes.shape()));
  const int64_t k = boxes.dim(1);
  const int64_t n = std::clamp<int64_t>(num.data<int32_t>()[0], 0, k);

  // Network pixels -> original pixels: x_orig = (x - left) * sx. The resize maps pixel edges
  // linearly (half-pixel centres), so this inverts it exactly.
  const auto w = static_cast<double>(img.width), h = static_cast<double>(img.height);
  double sx = w / static_cast<double>(m.input.width), sy = h / static_cast<double>(m.input.height);
  double left = 0, top = 0;
  if (m.opt.resize_method == ResizeMethod::kLetterbox) {
    const data::LetterboxBox b =
        data::letterbox_box(img.height, img.width, m.input.height, m.input.width);
    sx = w / static_cast<double>(b.width);
    sy = h / static_cast<double>(b.height);
    left = static_cast<double>(b.left);
    top = static_cast<double>(b.top);
  }
  const auto map_x = [&](float v) {
    return static_cast<float>(std::clamp((static_cast<double>(v) - left) * sx, 0.0, w));
  };
  const auto map_y = [&](float v) {
    return static_cast<float>(std::clamp((static_cast<double>(v) - top) * sy, 0.0, h));
  };
  std::vector<Detection> dets;
  dets.reserve(static_cast<size_t>(n));
  const float* bx = boxes.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const float s = scores.data<float>()[i];
    if (!(s >= m.opt.conf_threshold)) continue;
    const float* b = bx + i * 4;
    Detection d;
    // EfficientNMS passes corner boxes through as given: order them.
    d.x1 = map_x(std::min(b[0], b[2]));
    d.x2 = map_x(std::max(b[0], b[2]));
    d.y1 = map_y(std::min(b[1], b[3]));
    d.y2 = map_y(std::max(b[1], b[3]));
    d.score = s;
    d.class_id = classes.data<int32_t>()[i];
    dets.push_back(d);
  }
  m.latency.postprocess_ms = ms_since(t0);
  return dets;
}

const ImageLatency& Detector::last_latency() const {
  return impl_->latency;
}
const DetectorOptions& Detector::options() const {
  return impl_->opt;
}
const Engine& Detector::engine() const {
  return *impl_->engine;
}
int64_t Detector::input_height() const {
  return impl_->input.height;
}
int64_t Detector::input_width() const {
  return impl_->input.width;
}

// ---- Classifier -------------------------------------------------------------------------------

struct Classifier::Impl {
  ClassifierOptions opt;
  std::shared_ptr<const Engine> engine;
  std::unique_ptr<ExecutionContext> ctx;
  InputPlan input;
  std::string output;
  int64_t num_classes = -1;  // -1 until known (a dynamic class dimension)
  bool softmax = false;
  ImageLatency latency;
};

Classifier::Classifier(const fs::path& engine, ClassifierOptions options)
    // A copy, not a move: the order in which the two arguments are evaluated is unspecified.
    : Classifier(load_engine(engine, options.backend), options) {}

Classifier::Classifier(std::shared_ptr<const Engine> engine, ClassifierOptions options)
    : impl_(std::make_unique<Impl>()) {
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
  impl_->output = o.name;
  impl_->num_classes = o.shape[1];
  impl_->input = plan_input(*engine,
                            {options.resize_method, options.input_scale, options.mean, options.std,
                             options.color_order, options.pad_value},
                            "classify");
  impl_->ctx = engine->create_execution_context({.num_threads = options.num_threads});
  impl_->engine = std::move(engine);
  impl_->opt = std::move(options);
}

Classifier::~Classifier() = default;
Classifier::Classifier(Classifier&&) noexcept = default;
Classifier& Classifier::operator=(Classifier&&) noexcept = default;

std::vector<Classification> Classifier::classify(const fs::path& image, int64_t top_k) {
  const auto t0 = Clock::now();
  const Image img = load_image(image);
  const double decode_ms = ms_since(t0);
  std::vector<Classification> r = classify(img, top_k);
  impl_->latency.decode_ms = decode_ms;
  return r;
}

std::vector<Classification> Classifier::classify(const Image& img, int64_t top_k) {
  Impl& m = *impl_;
  TRT_CHECK_ARG(top_k >= 1, "classify: top_k {} must be at least 1", top_k);
  m.latency = {};
  auto t0 = Clock::now();
  Tensor x = render(m.input, img);
  m.latency.preprocess_ms = ms_since(t0);

  t0 = Clock::now();
  std::map<std::string, Tensor> out = m.ctx->execute({{m.input.name, std::move(x)}});
  m.latency.inference_ms = ms_since(t0);

  t0 = Clock::now();
  const Tensor& y = out.at(m.output);
  TRT_CHECK(y.rank() >= 2 && y.dim(0) >= 1, ErrorCode::kInternal,
            "classify: output '{}' of unexpected shape {}", m.output, shape_str(y.shape()));
  const int64_t c = y.numel() / y.dim(0);
  TRT_CHECK_ARG(c >= 1, "classify: output '{}' {} has no classes", m.output, shape_str(y.shape()));
  m.num_classes = c;
  const std::vector<float> all = y.to_float_vector();
  std::vector<double> p(all.begin(), all.begin() + c);  // image 0
  double sum = 0;
  bool probabilities = true;
  for (double v : p) {
    probabilities = probabilities && v >= 0.0 && v <= 1.0;
    sum += v;
  }
  probabilities = probabilities && std::abs(sum - 1.0) <= 1e-3;
  m.softmax = !probabilities;
  if (m.softmax) {
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
  m.latency.postprocess_ms = ms_since(t0);
  return r;
}

int64_t Classifier::num_classes() const {
  return impl_->num_classes;
}
bool Classifier::softmax_applied() const {
  return impl_->softmax;
}
const ImageLatency& Classifier::last_latency() const {
  return impl_->latency;
}
const ClassifierOptions& Classifier::options() const {
  return impl_->opt;
}
const Engine& Classifier::engine() const {
  return *impl_->engine;
}

}  // namespace trtutils
