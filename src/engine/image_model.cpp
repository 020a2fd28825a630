#include "engine/image_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "backends/cuda/image_runner.h"
#include "core/check.h"
#include "trtutils/logging.h"

namespace trtutils::detail {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Batch: 1 when dynamic (within the profile); H, W, C: static or the profile's opt size.
Shape fed_shape(const EngineTensorInfo& in, const std::string& path, const char* who) {
  Shape shape = in.shape;
  const bool profile = in.opt_shape.size() == 4;
  for (size_t i = 0; i < 4; ++i) {
    if (shape[i] >= 0) continue;
    if (i == 0) {
      shape[0] = profile ? std::clamp<int64_t>(1, in.min_shape[0], in.max_shape[0]) : 1;
      continue;
    }
    TRT_CHECK_ARG(profile,
                  "{}: engine '{}' input '{}' {} has a dynamic dimension {} and no profile; "
                  "build it with a fixed --shape",
                  who, path, in.name, shape_str(in.shape), i);
    shape[i] = in.opt_shape[i];
  }
  return shape;
}

InputPlan plan_input(const Engine& engine, const PreprocessOptions& p, const char* who) {
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
  plan.shape = fed_shape(in, path, who);
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

std::unique_ptr<cuda::ImageRunner> make_gpu_runner(ExecutionContext& ctx, const Engine& engine,
                                                   const InputPlan& in,
                                                   const std::string& preprocess, const char* who) {
  TRT_CHECK_ARG(preprocess == "auto" || preprocess == "cpu" || preprocess == "gpu",
                "{}: preprocess '{}' must be auto, cpu or gpu", who, preprocess);
  if (preprocess == "cpu") return nullptr;
  if (!cuda::ImageRunner::usable(engine)) {
    TRT_CHECK_ARG(preprocess != "gpu",
                  "{}: preprocess gpu needs an engine running on the CUDA backend; engine '{}' "
                  "runs on the {} backend here",
                  who, engine.path().string(), engine.runtime_backend());
    return nullptr;
  }
  try {
    return std::make_unique<cuda::ImageRunner>(ctx, engine, in.name, in.shape, in.spec);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotSupported || preprocess == "gpu") throw;
    TRT_LOG_INFO("{}: preprocessing on the host: {}", who, e.what());
    return nullptr;
  }
}

}  // namespace

std::string tensor_list(const std::vector<EngineTensorInfo>& ts) {
  std::string s;
  for (const auto& t : ts)
    s += fmt::format("{}{} {} {}", s.empty() ? "" : ", ", t.name, dtype_name(t.dtype),
                     shape_str(t.shape));
  return s.empty() ? "none" : s;
}

const EngineTensorInfo* find_output(const Engine& e, const std::string& name) {
  for (const auto& o : e.outputs())
    if (o.name == name) return &o;
  return nullptr;
}

ImageModel::ImageModel(std::shared_ptr<const Engine> engine, const PreprocessOptions& options,
                       const char* who)
    : engine_(std::move(engine)), who_(who) {
  input_ = plan_input(*engine_, options, who);
  ctx_ = engine_->create_execution_context({.num_threads = options.num_threads});
  gpu_ = make_gpu_runner(*ctx_, *engine_, input_, options.preprocess, who);
}

ImageModel::~ImageModel() = default;
ImageModel::ImageModel(ImageModel&&) noexcept = default;
ImageModel& ImageModel::operator=(ImageModel&&) noexcept = default;

std::map<std::string, Tensor> ImageModel::run(const std::vector<const Image*>& images) {
  TRT_CHECK_ARG(!images.empty() && static_cast<int64_t>(images.size()) <= batch(),
                "{}: {} images for an engine input of batch {}", who_, images.size(), batch());
  latency_ = {};
  auto t0 = Clock::now();
  // Channel conversion (gray -> RGB, RGBA -> RGB, ...) stays on the host: photos rarely need it.
  std::vector<Image> converted;
  converted.reserve(images.size());
  std::vector<const Image*> ready;
  for (const Image* img : images) {
    check_image(*img);
    if (img->channels == input_.channels) {
      ready.push_back(img);
    } else {
      converted.push_back(data::convert_channels(*img, input_.channels));
      ready.push_back(&converted.back());
    }
  }
  if (gpu_) {
    cuda::ImageRunner::Times times;
    std::map<std::string, Tensor> out = gpu_->run(ready, times);
    latency_.preprocess_ms = ms_since(t0) - times.inference_ms;  // the rest of the wall time
    latency_.inference_ms = times.inference_ms;
    return out;
  }
  Tensor x(input_.dtype, input_.shape);
  const size_t slot = x.nbytes() / static_cast<size_t>(batch());
  for (size_t i = 0; i < ready.size(); ++i)
    data::render_image(*ready[i], input_.spec, static_cast<uint8_t*>(x.raw()) + i * slot);
  latency_.preprocess_ms = ms_since(t0);
  t0 = Clock::now();
  std::map<std::string, Tensor> out = ctx_->execute({{input_.name, std::move(x)}});
  latency_.inference_ms = ms_since(t0);
  return out;
}

}  // namespace trtutils::detail
