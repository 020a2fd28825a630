// ImageBatcher end to end: options and their errors, batching (partial batch, max_images,
// order), layouts, colour order, mean/std, dtypes, grayscale/RGBA/EXIF inputs, determinism
// across thread counts, and the .npy output, against OpenCV references where values matter.
#include "trtutils/image_batcher.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "data_pipeline/fixtures.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

using namespace testing_data;

class ImageBatcherTest : public ::testing::Test {
 protected:
  // Three photos named so that file order is astronaut, coffee, chelsea.
  void add_photos() {
    dir_.add("photo_astronaut.png", "0_astronaut.png");
    dir_.add("photo_coffee.png", "1_coffee.png");
    dir_.add("photo_chelsea.png", "2_chelsea.png");
  }
  ImageBatcherOptions opts(int64_t h = 64, int64_t w = 64, int64_t c = 3) {
    ImageBatcherOptions o;
    o.image_dir = dir_.path();
    o.shape = {h, w, c};
    o.batch_size = 1;
    return o;
  }
  // All batches concatenated (as float64 values) and the batch shapes.
  static std::vector<Tensor> all_batches(ImageBatcher& b) {
    std::vector<Tensor> out;
    for (Tensor t = b.next_batch(); !t.empty(); t = b.next_batch()) out.push_back(t);
    return out;
  }
  void expect_error(const ImageBatcherOptions& o, ErrorCode code, const std::string& needle) {
    try {
      ImageBatcher b(o);
      ADD_FAILURE() << "no error; expected '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  TempDir dir_;
};

TEST_F(ImageBatcherTest, OptionErrors) {
  add_photos();
  ImageBatcherOptions o = opts();
  o.max_images = 0;
  expect_error(o, ErrorCode::kInvalidArgument, "max_images must be at least 1");
  o = opts(64, 64, 2);
  expect_error(o, ErrorCode::kInvalidArgument, "C must be 1, 3 or 4");
  o = opts(64, 64, 5);
  expect_error(o, ErrorCode::kInvalidArgument, "C must be 1, 3 or 4");
  o = opts(0, 64, 3);
  expect_error(o, ErrorCode::kInvalidArgument, "H and W");
  o = opts();
  o.dtype = DataType::kInt32;
  expect_error(o, ErrorCode::kNotSupported, "int32");
  o = opts();
  o.batch_size = 0;
  expect_error(o, ErrorCode::kInvalidArgument, "batch size");
  o = opts();
  o.mean = {1, 2};
  expect_error(o, ErrorCode::kInvalidArgument, "mean has 2 values");
  o = opts();
  o.std = {1, 0, 1};
  expect_error(o, ErrorCode::kInvalidArgument, "non-zero");
  o = opts();
  o.input_scale = std::pair{1.0f, 1.0f};
  expect_error(o, ErrorCode::kInvalidArgument, "input_scale");
  o = opts();
  o.pad_value = 300;
  expect_error(o, ErrorCode::kInvalidArgument, "pad value");
}

TEST_F(ImageBatcherTest, DirectoryErrors) {
  ImageBatcherOptions o = opts();
  o.image_dir = dir_ / "missing";
  expect_error(o, ErrorCode::kIO, "does not exist");
  write_bytes(dir_ / "file.png", "x");
  o.image_dir = dir_ / "file.png";
  expect_error(o, ErrorCode::kInvalidArgument, "is a file, not a directory");
  fs::create_directories(dir_ / "empty");
  write_bytes(dir_ / "empty" / "notes.txt", "not an image");
  write_bytes(dir_ / "empty" / ".hidden.jpg", "skipped");
  fs::create_directories(dir_ / "empty" / "sub.png");  // a folder with an image name
  o.image_dir = dir_ / "empty";
  expect_error(o, ErrorCode::kInvalidArgument, "no images");
}

TEST_F(ImageBatcherTest, FilesAreSortedAndFilteredCaseInsensitively) {
  dir_.add("photo_coffee.png", "b.PNG");
  dir_.add("photo_hubble.jpg", "a.JpG");
  dir_.add("lossy.webp", "c.webp");
  dir_.add("rgb24.bmp", "d.Bmp");
  dir_.add("photo_hubble.jpg", "e.jpeg");
  dir_.add("photo_coffee.png", ".hidden.png");
  write_bytes(dir_ / "notes.txt", "x");
  ImageBatcher b(opts());
  std::vector<std::string> names;
  for (const auto& p : b.image_paths()) names.push_back(p.filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"a.JpG", "b.PNG", "c.webp", "d.Bmp", "e.jpeg"}));
  EXPECT_EQ(all_batches(b).size(), 5u);
}

TEST_F(ImageBatcherTest, PartialBatchDroppedOrKept) {
  for (int i = 0; i < 5; ++i) dir_.add("photo_coffee.png", "img" + std::to_string(i) + ".png");
  ImageBatcherOptions o = opts(16, 16);
  o.batch_size = 2;
  ImageBatcher dropped(o);
  EXPECT_EQ(dropped.num_batches(), 2);
  EXPECT_EQ(dropped.num_images(), 4);
  auto batches = all_batches(dropped);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].shape(), (Shape{2, 3, 16, 16}));
  EXPECT_TRUE(dropped.next_batch().empty());  // and stays done

  o.keep_partial = true;
  ImageBatcher kept(o);
  EXPECT_EQ(kept.num_batches(), 3);
  batches = all_batches(kept);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[2].shape(), (Shape{1, 3, 16, 16}));

  o.keep_partial = false;
  o.batch_size = 8;
  expect_error(o, ErrorCode::kInvalidArgument, "do not fill one batch of 8");
  o.keep_partial = true;
  ImageBatcher one(o);
  EXPECT_EQ(one.num_batches(), 1);
  EXPECT_EQ(one.next_batch().shape(), (Shape{5, 3, 16, 16}));
}

TEST_F(ImageBatcherTest, MaxImagesTakesTheFirstByName) {
  add_photos();
  ImageBatcherOptions o = opts();
  o.max_images = 2;
  ImageBatcher b(o);
  ASSERT_EQ(b.num_images(), 2);
  EXPECT_EQ(b.image_paths()[1].filename(), "1_coffee.png");
}

// Batch `t` (N, C, H, W float32) image n vs an OpenCV uint8 HWC reference / 255.
void expect_nchw_matches(const Tensor& t, int64_t n, const Tensor& want, double tol) {
  const int64_t C = t.dim(1), H = t.dim(2), W = t.dim(3);
  ASSERT_EQ(want.shape(), (Shape{H, W, C}));
  double d = 0;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) {
        const double got = t.at_double(((n * C + c) * H + y) * W + x);
        d = std::max(d, std::abs(got - want.data<uint8_t>()[(y * W + x) * C + c] / 255.0));
      }
  EXPECT_LE(d, tol) << "image " << n;
}

TEST_F(ImageBatcherTest, DefaultPipelineMatchesOpenCVLetterbox) {
  add_photos();
  ImageBatcherOptions o = opts();
  o.batch_size = 3;
  ImageBatcher b(o);
  EXPECT_EQ(b.batch_shape(), (Shape{3, 3, 64, 64}));
  const Tensor t = b.next_batch();
  ASSERT_EQ(t.dtype(), DataType::kFloat32);
  const char* names[] = {"astronaut", "coffee", "chelsea"};
  for (int n = 0; n < 3; ++n)
    expect_nchw_matches(t, n, load_ref(fmt::format("ref_{}_letterbox_64x64.npy", names[n])),
                        1.0 / 255 + 1e-6);
}

TEST_F(ImageBatcherTest, LinearFloat16MatchesOpenCV) {
  add_photos();
  ImageBatcherOptions o = opts(31, 97);
  o.resize_method = ResizeMethod::kLinear;
  o.dtype = DataType::kFloat16;
  o.batch_size = 3;
  ImageBatcher b(o);
  const Tensor t = b.next_batch();
  ASSERT_EQ(t.dtype(), DataType::kFloat16);
  const char* names[] = {"astronaut", "coffee", "chelsea"};
  for (int n = 0; n < 3; ++n)
    expect_nchw_matches(t, n, load_ref(fmt::format("ref_{}_linear_31x97.npy", names[n])),
                        1.0 / 255 + 1.0 / 2048);
}

TEST_F(ImageBatcherTest, NhwcIsTheTransposeOfNchw) {
  add_photos();
  ImageBatcherOptions o = opts(40, 50);
  o.batch_size = 3;
  ImageBatcher nchw(o);
  o.order = DataOrder::kNHWC;
  ImageBatcher nhwc(o);
  EXPECT_EQ(nhwc.batch_shape(), (Shape{3, 40, 50, 3}));
  const Tensor a = nchw.next_batch(), b = nhwc.next_batch();
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = 0; y < 40; ++y)
        for (int64_t x = 0; x < 50; ++x)
          ASSERT_EQ(a.data<float>()[((n * 3 + c) * 40 + y) * 50 + x],
                    b.data<float>()[((n * 40 + y) * 50 + x) * 3 + c]);
}

TEST_F(ImageBatcherTest, BgrMeanStdAndInputScale) {
  add_photos();
  ImageBatcherOptions o = opts(32, 48);
  o.batch_size = 3;
  const Tensor plain = ImageBatcher(o).next_batch();
  o.color_order = ColorOrder::kBGR;
  o.mean = {0.485f, 0.456f, 0.406f};  // R, G, B
  o.std = {0.229f, 0.224f, 0.225f};
  const Tensor bgr = ImageBatcher(o).next_batch();
  o.color_order = ColorOrder::kRGB;
  o.mean = {};
  o.std = {};
  o.input_scale = std::pair{-1.0f, 1.0f};
  const Tensor pm1 = ImageBatcher(o).next_batch();
  const int64_t plane = 32 * 48;
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < plane; ++i) {
        const float v = plain.data<float>()[(n * 3 + c) * plane + i];
        // BGR: output channel 2 - c holds colour c, normalised with colour c's mean/std.
        const float mean[] = {0.485f, 0.456f, 0.406f}, sd[] = {0.229f, 0.224f, 0.225f};
        ASSERT_NEAR(bgr.data<float>()[(n * 3 + (2 - c)) * plane + i], (v - mean[c]) / sd[c], 1e-5);
        ASSERT_NEAR(pm1.data<float>()[(n * 3 + c) * plane + i], v * 2 - 1, 1e-5);
      }
}

TEST_F(ImageBatcherTest, IntegerOutputs) {
  dir_.add("photo_coffee.png");
  ImageBatcherOptions o = opts(48, 64);
  o.resize_method = ResizeMethod::kLinear;
  o.dtype = DataType::kUInt8;
  o.order = DataOrder::kNHWC;
  const Tensor u8 = ImageBatcher(o).next_batch();
  ASSERT_EQ(u8.dtype(), DataType::kUInt8);
  const Tensor want = load_ref("ref_coffee_linear_48x64.npy");
  EXPECT_LE(max_abs_diff(u8.data<uint8_t>(), want.data<uint8_t>(), want.numel()),
            1.0);  // no scaling
  o.dtype = DataType::kInt8;
  o.input_scale = std::pair{-128.0f, 127.0f};
  const Tensor i8 = ImageBatcher(o).next_batch();
  // x - 128 (the scale is exactly 1); float rounding may move a value off a .5 tie.
  for (int64_t i = 0; i < i8.numel(); ++i)
    ASSERT_LE(std::abs(i8.data<int8_t>()[i] - (u8.data<uint8_t>()[i] - 128)), 1) << i;
  o.input_scale.reset();  // int8 without a scale saturates at 127
  const Tensor sat = ImageBatcher(o).next_batch();
  for (int64_t i = 0; i < sat.numel(); ++i)
    ASSERT_EQ(sat.data<int8_t>()[i], std::min<int>(u8.data<uint8_t>()[i], 127));
}

TEST_F(ImageBatcherTest, GrayscaleAndRgbaInputs) {
  dir_.add("gray.png", "a_gray.png");
  dir_.add("rgba.png", "b_rgba.png");
  dir_.add("gray_alpha.png", "c_gray_alpha.png");
  ImageBatcherOptions o = opts(30, 40);  // the fixtures' own size: no resampling
  o.batch_size = 3;
  o.order = DataOrder::kNHWC;
  o.dtype = DataType::kUInt8;
  const Tensor rgb = ImageBatcher(o).next_batch();
  const char* refs[] = {"ref_gray_png.npy", "ref_rgba_png.npy",
                        "ref_gray_alpha_png.npy"};  // IMREAD_COLOR
  for (int n = 0; n < 3; ++n) {
    const Tensor want = load_ref(refs[n]);
    EXPECT_EQ(
        max_abs_diff(rgb.data<uint8_t>() + n * want.numel(), want.data<uint8_t>(), want.numel()), 0)
        << refs[n];
  }
  o.shape = {30, 40, 4};
  const Tensor rgba = ImageBatcher(o).next_batch();
  const Tensor alpha = load_ref("ref_rgba_png_unchanged.npy");
  const int64_t px = 30 * 40;
  for (int64_t i = 0; i < px; ++i) {
    ASSERT_EQ(rgba.data<uint8_t>()[i * 4 + 3], 255);  // gray: opaque
    ASSERT_EQ(rgba.data<uint8_t>()[(px + i) * 4 + 3], alpha.data<uint8_t>()[i * 4 + 3]);
  }
  o.shape = {30, 40, 1};
  const Tensor gray = ImageBatcher(o).next_batch();
  const Tensor g = load_ref("ref_gray_png.npy");
  for (int64_t i = 0; i < px; ++i) ASSERT_EQ(gray.data<uint8_t>()[i], g.data<uint8_t>()[i * 3]);
}

TEST_F(ImageBatcherTest, ExifOrientationIsApplied) {
  dir_.add("orient_6.jpg");
  ImageBatcherOptions o = opts(24, 16);  // rotated: 16 wide, 24 high
  o.dtype = DataType::kUInt8;
  o.order = DataOrder::kNHWC;
  const Tensor t = ImageBatcher(o).next_batch();
  const Tensor want = load_ref("ref_orient_6.npy");
  EXPECT_EQ(max_abs_diff(t.data<uint8_t>(), want.data<uint8_t>(), want.numel()), 0);
}

TEST_F(ImageBatcherTest, DeterministicAcrossThreadsAndPrefetch) {
  for (int i = 0; i < 12; ++i)
    dir_.add(i % 3 == 0   ? "photo_astronaut.png"
             : i % 3 == 1 ? "photo_hubble.jpg"
                          : "lossy.webp",
             fmt::format("{:02}.{}", i,
                         i % 3 == 0   ? "png"
                         : i % 3 == 1 ? "jpg"
                                      : "webp"));
  ImageBatcherOptions o = opts(40, 40);
  o.batch_size = 2;
  o.num_threads = 1;
  o.prefetch_batches = 1;
  ImageBatcher one(o);
  const auto ref_batches = all_batches(one);
  for (auto [threads, prefetch] : {std::pair{4, 1}, std::pair{3, 5}, std::pair{8, 2}}) {
    o.num_threads = threads;
    o.prefetch_batches = prefetch;
    ImageBatcher b(o);
    const auto got = all_batches(b);
    ASSERT_EQ(got.size(), ref_batches.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(std::memcmp(got[i].raw(), ref_batches[i].raw(), got[i].nbytes()), 0)
          << threads << " threads, batch " << i;
  }
  // reset() starts again from the first batch, also in the middle of prefetching.
  o.num_threads = 2;
  ImageBatcher b(o);
  b.next_batch();
  b.next_batch();
  b.reset();
  const Tensor first = b.next_batch();
  EXPECT_EQ(std::memcmp(first.raw(), ref_batches[0].raw(), first.nbytes()), 0);
}

TEST_F(ImageBatcherTest, CorruptImageIsNamed) {
  add_photos();
  write_bytes(dir_ / "1_bad.jpg", read_bytes(fixture("photo_hubble.jpg")).substr(0, 500));
  ImageBatcherOptions o = opts(32, 32);
  o.batch_size = 2;
  ImageBatcher b(o);
  try {
    b.next_batch();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("1_bad.jpg"), std::string::npos) << e.what();
  }
  EXPECT_THROW(b.next_batch(), Error);  // stays failed
  b.reset();
  EXPECT_THROW(b.next_batch(), Error);

  const fs::path out = dir_ / "out" / "calib.npy";
  fs::create_directories(out.parent_path());
  EXPECT_THROW(b.save_calibration_data(out), Error);
  EXPECT_TRUE(fs::is_empty(out.parent_path())) << "output or temporary file left behind";
}

TEST_F(ImageBatcherTest, SaveCalibrationDataIsTheConcatenation) {
  for (int i = 0; i < 7; ++i)
    dir_.add(i % 2 ? "photo_coffee.png" : "photo_chelsea.png", fmt::format("{}.png", i));
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kUInt8}) {
    ImageBatcherOptions o = opts(20, 24);
    o.batch_size = 3;
    o.keep_partial = dt == DataType::kUInt8;
    o.dtype = dt;
    ImageBatcher b(o);
    const fs::path out = dir_ / "calib.npy";
    b.save_calibration_data(out);
    const Tensor saved = npy_load(out);
    ASSERT_EQ(saved.dtype(), dt);
    ASSERT_EQ(saved.shape(), (Shape{o.keep_partial ? 7 : 6, 3, 20, 24}));
    std::string concat;
    for (const Tensor& t : all_batches(b))
      concat.append(reinterpret_cast<const char*>(t.raw()), t.nbytes());
    ASSERT_EQ(concat.size(), saved.nbytes());
    EXPECT_EQ(std::memcmp(concat.data(), saved.raw(), concat.size()), 0) << dtype_name(dt);
    fs::remove(out);
  }
  // Many small batches: saving reuses written batch tensors for later batches.
  for (int i = 7; i < 20; ++i)
    dir_.add(i % 3 ? "photo_astronaut.png" : "lossy.webp", fmt::format("{}.png", i));
  ImageBatcherOptions o = opts(16, 16);
  o.batch_size = 2;
  o.prefetch_batches = 1;
  ImageBatcher many(o);
  many.save_calibration_data(dir_ / "many.npy");
  const Tensor saved = npy_load(dir_ / "many.npy");
  ASSERT_EQ(saved.shape(), (Shape{20, 3, 16, 16}));
  int64_t offset = 0;
  for (const Tensor& t : all_batches(many)) {
    ASSERT_EQ(std::memcmp(static_cast<const char*>(saved.raw()) + offset, t.raw(), t.nbytes()), 0)
        << offset;
    offset += static_cast<int64_t>(t.nbytes());
  }
  // A folder that does not exist: an error, nothing written.
  ImageBatcher b(opts(8, 8));
  EXPECT_THROW(b.save_calibration_data(dir_ / "no" / "calib.npy"), Error);
}

}  // namespace
}  // namespace trtutils
