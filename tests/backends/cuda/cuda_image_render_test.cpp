// Preprocessing on the GPU (backends/cuda/image_kernels.cu, image_runner.h) against the host's
// data::render_image, which ImageBatcher and generate_calibration run: the same bytes for every
// dtype, layout, resize method, colour order, normalisation and channel count, on images smaller
// and larger than the input, odd sizes included; ImageRunner's batch slots (the unused ones
// zero); Detector and Classifier giving the same results with preprocess "gpu" and "cpu".
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <unistd.h>

#include <random>

#include "backends/cuda/cuda_test_util.h"
#include "backends/cuda/image_runner.h"
#include "data/preprocess.h"
#include "engine/detector_models.h"
#include "trtutils/detector.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

Image random_image(int64_t w, int64_t h, int channels, uint32_t seed) {
  Image img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.pixels.resize(static_cast<size_t>(w * h * channels));
  std::mt19937 rng(seed);
  for (uint8_t& p : img.pixels) p = static_cast<uint8_t>(rng() & 0xff);
  return img;
}

data::RenderSpec spec_of(int64_t h, int64_t w, int c, DataType dt, DataOrder order,
                         ResizeMethod method, ColorOrder color, std::vector<float> mean,
                         std::vector<float> sd) {
  ImageBatcherOptions o;
  o.shape = {h, w, c};
  o.dtype = dt;
  o.order = order;
  o.resize_method = method;
  o.color_order = color;
  o.mean = std::move(mean);
  o.std = std::move(sd);
  data::check_render_options(o);
  return data::make_render_spec(o);
}

std::vector<uint8_t> host_render(const Image& img, const data::RenderSpec& s) {
  std::vector<uint8_t> out(static_cast<size_t>(s.height * s.width * s.channels) *
                           static_cast<size_t>(dtype_bits(s.dtype) / 8));
  data::render_image(img, s, out.data());
  return out;
}

std::vector<uint8_t> device_render(const Image& img, const data::RenderSpec& s) {
  const size_t bytes = static_cast<size_t>(s.height * s.width * s.channels) *
                       static_cast<size_t>(dtype_bits(s.dtype) / 8);
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
  cuda::render_on_device(img, s, d);
  std::vector<uint8_t> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d);
  return out;
}

TEST(CudaImageRender, KernelMatchesTheHostBitForBit) {
  TRT_REQUIRE_CUDA();
  struct Size {
    int64_t w, h;
  };
  // Down- and upscaling, 1-pixel images, odd sizes, both orientations.
  const Size sizes[] = {{1, 1}, {7, 5}, {640, 480}, {333, 999}, {1280, 720}, {50, 64}, {97, 31}};
  const DataType dtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kUInt8,
                             DataType::kInt8};
  int cases = 0;
  uint32_t seed = 1;
  for (const Size& sz : sizes) {
    for (DataType dt : dtypes) {
      for (int variant = 0; variant < 4; ++variant) {
        const int c = variant == 3 ? (dt == DataType::kUInt8 ? 1 : 4) : 3;
        const auto order = variant % 2 ? DataOrder::kNHWC : DataOrder::kNCHW;
        const auto method = variant < 2 ? ResizeMethod::kLetterbox : ResizeMethod::kLinear;
        const auto color = variant == 1 ? ColorOrder::kBGR : ColorOrder::kRGB;
        std::vector<float> mean, sd;
        if (variant == 2 && dt != DataType::kUInt8) mean = {0.485f, 0.456f, 0.406f};
        if (variant == 2 && dt != DataType::kUInt8) sd = {0.229f, 0.224f, 0.225f};
        const auto s = spec_of(variant == 3 ? 61 : 96, variant == 3 ? 45 : 128, c, dt, order,
                               method, color, mean, sd);
        const Image img = random_image(sz.w, sz.h, c, seed++);
        const std::string what =
            fmt::format("{}x{}x{} -> {} variant {}", sz.w, sz.h, c, dtype_name(dt), variant);
        EXPECT_EQ(device_render(img, s), host_render(img, s)) << what;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 7 * 4 * 4);
}

// images [N, 3, H, W] (or [N, H, W, 3]) -> [N, 3 * H * W]: what was fed, as float32.
fs::path passthrough_engine(const fs::path& dir, const std::string& name, DataType dt,
                            Shape shape) {
  ir::GraphBuilder b(name);
  auto x = b.input("images", dt, ir::SymShape(shape.begin(), shape.end()));
  auto f = b.node("Cast", {x}, {ir::attr_int("to", 1)})[0];
  auto y = b.node_with_outputs("Flatten", {f}, {"fed"}, {ir::attr_int("axis", 1)})[0];
  b.output(y, DataType::kFloat32, ir::SymShape{shape[0], shape[1] * shape[2] * shape[3]});
  const fs::path onnx = dir / (name + ".onnx"), engine = dir / (name + ".engine");
  onnx_io::save_model(b.build(17), onnx);
  builder::build_engine(onnx, engine, {.backend = "cuda"});
  return engine;
}

class CudaImagePipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    TRT_REQUIRE_CUDA();
    dir_ = fs::temp_directory_path() / ("trtutils_gpu_images_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CudaImagePipeline, RunnerFillsBatchSlotsLikeTheHost) {
  const fs::path path = passthrough_engine(dir_, "pass", DataType::kFloat16, {3, 3, 96, 128});
  auto engine = Engine::load(path);
  ASSERT_EQ(engine->runtime_backend(), "cuda");
  auto ctx = engine->create_execution_context();
  const auto spec = spec_of(96, 128, 3, DataType::kFloat16, DataOrder::kNCHW,
                            ResizeMethod::kLetterbox, ColorOrder::kRGB, {}, {});
  cuda::ImageRunner runner(*ctx, *engine, "images", {3, 3, 96, 128}, spec);
  const size_t slot = 3 * 96 * 128;
  // Two images, then three larger ones (the staging grows), then one (slots 1, 2 zero again).
  const std::vector<std::vector<Image>> rounds = {
      {random_image(300, 200, 3, 1), random_image(64, 64, 3, 2)},
      {random_image(1280, 720, 3, 3), random_image(333, 999, 3, 4), random_image(5, 3, 3, 5)},
      {random_image(40, 90, 3, 6)}};
  for (const auto& imgs : rounds) {
    std::vector<const Image*> ptrs;
    for (const Image& i : imgs) ptrs.push_back(&i);
    cuda::ImageRunner::Times t;
    const auto out = runner.run(ptrs, t);
    const Tensor& fed = out.at("fed");
    ASSERT_EQ(fed.shape(), (Shape{3, 3 * 96 * 128}));
    for (size_t s = 0; s < 3; ++s) {
      std::vector<float> want(slot, 0.0f);
      if (s < imgs.size()) {
        const std::vector<uint8_t> h = host_render(imgs[s], spec);
        for (size_t i = 0; i < slot; ++i)
          want[i] = half_to_float(reinterpret_cast<const half*>(h.data())[i]);
      }
      const float* got = fed.data<float>() + s * slot;
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got))
          << "slot " << s << " of a round of " << imgs.size();
    }
    EXPECT_GE(t.inference_ms, 0.0);
  }
  std::vector<const Image*> too_many(4, &rounds[0][0]);
  cuda::ImageRunner::Times t;
  EXPECT_THROW(runner.run(too_many, t), Error);
}

TEST_F(CudaImagePipeline, ClassifierAndDetectorAgreeWithTheHost) {
  // NHWC uint8 with a batch of 2: Classifier over the fed pixels (each one a "class").
  const fs::path pass = passthrough_engine(dir_, "pass_u8", DataType::kUInt8, {2, 8, 6, 3});
  Classifier gpu(pass, {.preprocess = "gpu"}), cpu(pass, {.preprocess = "cpu"});
  EXPECT_TRUE(gpu.gpu_preprocessing());
  EXPECT_FALSE(cpu.gpu_preprocessing());
  EXPECT_EQ(gpu.batch_size(), 2);
  std::vector<Image> imgs;
  for (uint32_t i = 0; i < 5; ++i) imgs.push_back(random_image(17 + i * 13, 11 + i * 7, 3, 40 + i));
  const auto a = gpu.classify(imgs, 144), b = cpu.classify(imgs, 144);
  ASSERT_EQ(a.size(), 5u);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    for (size_t k = 0; k < a[i].size(); ++k) {
      EXPECT_EQ(a[i][k].class_id, b[i][k].class_id) << "image " << i << " rank " << k;
      EXPECT_EQ(a[i][k].score, b[i][k].score) << "image " << i << " rank " << k;
    }
  }
  // A build_yolo engine on the GPU: the same detections either way, image by image or as a list.
  const std::vector<std::array<float, 4>> boxes = {{10, 20, 300, 400}, {100, 50, 600, 620}};
  test_models::build_fixed_box_detector(dir_, "boxes", 640, 640, boxes, false, "cuda");
  Detector dg(dir_ / "boxes.engine", {.preprocess = "gpu"});
  Detector dc(dir_ / "boxes.engine", {.preprocess = "cpu"});
  ASSERT_TRUE(dg.gpu_preprocessing());
  const Image photo = random_image(1000, 700, 3, 7);
  const auto g = dg.detect(photo), c = dc.detect(photo);
  ASSERT_EQ(g.size(), 2u);
  ASSERT_EQ(c.size(), 2u);
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(g[i].x1, c[i].x1);
    EXPECT_EQ(g[i].y2, c[i].y2);
    EXPECT_EQ(g[i].class_id, c[i].class_id);
  }
  const auto many = dg.detect(std::vector<Image>{photo, random_image(640, 640, 3, 8)});
  ASSERT_EQ(many.size(), 2u);
  EXPECT_EQ(many[0].size(), 2u);
  EXPECT_EQ(many[0][0].x1, g[0].x1);
  // A box drawn in the image comes back where it was drawn (preprocessed on the GPU).
  test_models::build_bright_box_detector(dir_, "bright", 640, 640, "cuda");
  Detector bright(dir_ / "bright.engine", {.conf_threshold = 0.5f, .preprocess = "gpu"});
  const auto found = bright.detect(test_models::image_with_box(1280, 720, 300, 200, 500, 400));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].x1, 300.0f);
  EXPECT_EQ(found[0].y1, 200.0f);
  EXPECT_EQ(found[0].x2, 500.0f);
  EXPECT_EQ(found[0].y2, 400.0f);
  // preprocess "gpu" for an engine running on the CPU is refused.
  EXPECT_THROW(Classifier(pass, {.backend = "cpu", .preprocess = "gpu"}), Error);
}

}  // namespace
}  // namespace trtutils
