// `trtutils generate_calibration` on good and bad input: bad input gives exit code 1, one
// "error:" line that says what is wrong, and no output file.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>

#include "cli_runner.h"
#include "data_pipeline/fixtures.h"

namespace trtutils {
namespace {

using namespace testing_data;

using Result = test_util::CommandResult;

Result run_cli(const std::string& args) {
  return test_util::run_command(std::string(TRTUTILS_CLI) + " generate_calibration " + args);
}

class GenerateCalibrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    images_ = dir_ / "images";
    fs::create_directories(images_);
    fs::copy_file(fixture("photo_astronaut.png"), images_ / "0_astronaut.png");
    fs::copy_file(fixture("photo_coffee.png"), images_ / "1_coffee.png");
    fs::copy_file(fixture("photo_chelsea.png"), images_ / "2_chelsea.png");
    out_ = dir_ / "calib.npy";
  }
  std::string base(const fs::path& dir) const {
    return "--calibration_dir " + dir.string() + " --output " + out_.string() + " ";
  }
  void expect_failure(const std::string& args, const std::string& needle) {
    const Result r = run_cli(args);
    EXPECT_TRUE(r.code == 1 || r.code == 2) << r.output;  // 2: refused by the parser
    size_t errors = 0;
    for (size_t p = r.output.find("error:"); p != std::string::npos;
         p = r.output.find("error:", p + 1))
      ++errors;
    EXPECT_EQ(errors, 1u) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos)
        << "expected '" << needle << "' in: " << r.output;
    EXPECT_FALSE(fs::exists(out_)) << "output written despite the error";
    for (const auto& e : fs::directory_iterator(dir_.path()))
      EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos)
          << "left behind: " << e.path();
  }
  TempDir dir_;
  fs::path images_, out_;
};

TEST_F(GenerateCalibrationTest, WritesTheSeedsDefaultPipeline) {
  const Result r =
      run_cli(base(images_) +
              "--input_shape 64 64 3 --input_dtype float32 --batch_size 1 --data_order NCHW");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote"), std::string::npos) << r.output;
  const Tensor t = npy_load(out_);
  ASSERT_EQ(t.shape(), (Shape{3, 3, 64, 64}));
  const char* names[] = {"astronaut", "coffee", "chelsea"};
  for (int n = 0; n < 3; ++n) {
    const Tensor want = load_ref(fmt::format("ref_{}_letterbox_64x64.npy", names[n]));
    double d = 0;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < 64 * 64; ++i)
        d = std::max(d, std::abs(t.data<float>()[(n * 3 + c) * 4096 + i] -
                                 want.data<uint8_t>()[i * 3 + c] / 255.0));
    EXPECT_LE(d, 1.0 / 255 + 1e-6) << names[n];
  }
}

TEST_F(GenerateCalibrationTest, AllFlags) {
  const Result r =
      run_cli(base(images_) +
              "--input_shape 32 48 3 --input_dtype float16 --batch_size 2 --data_order NHWC "
              "--max_images 3 --resize_method linear --input_scale -1 1 --mean 0.1 0.2 0.3 "
              "--std 0.5 0.5 0.5 --color_order BGR --pad_value 0 --threads 2 --keep_partial");
  ASSERT_EQ(r.code, 0) << r.output;
  const Tensor t = npy_load(out_);
  EXPECT_EQ(t.dtype(), DataType::kFloat16);
  EXPECT_EQ(t.shape(), (Shape{3, 32, 48, 3}));
}

TEST_F(GenerateCalibrationTest, PartialBatchIsDroppedAndSaid) {
  const Result r = run_cli(base(images_) + "--input_shape 16 16 3 --batch_size 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("dropping the last 1 image"), std::string::npos) << r.output;
  EXPECT_EQ(npy_load(out_).shape(), (Shape{2, 3, 16, 16}));
}

// Nothing is left out silently: files that are not images (named), subfolders (not recursed),
// hidden names and the partial last batch (naming --keep_partial as the flag is spelled) are
// each a warning, and a last line counts them.
TEST_F(GenerateCalibrationTest, SkippedEntriesAreNamedAndCounted) {
  write_bytes(images_ / "notes.txt", "not an image");
  write_bytes(images_ / "labels.csv", "a,b");
  write_bytes(images_ / ".DS_Store", "x");
  fs::create_directories(images_ / "more");
  fs::copy_file(fixture("photo_coffee.png"), images_ / "more" / "3_coffee.png");
  const Result r = run_cli(base(images_) + "--input_shape 16 16 3 --batch_size 2");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const std::string& part : std::vector<std::string>{
           "skipped 2 file(s)", "that are not images", "labels.csv, notes.txt",
           "skipped 1 subfolder(s)", "not recursed", "more", "skipped 1 hidden name(s)",
           ".DS_Store", "dropping the last 1 image(s)", "--keep_partial",
           "skipped 5 entries of '" + images_.string() +
               "': 2 not image file(s), 1 subfolder(s) (not recursed), 1 hidden name(s), 1 "
               "image(s) of a partial last batch (--keep_partial keeps them)"})
    EXPECT_NE(r.output.find(part), std::string::npos) << part << " in: " << r.output;
  EXPECT_EQ(npy_load(out_).shape(), (Shape{2, 3, 16, 16}));
}

TEST_F(GenerateCalibrationTest, ManySkippedFilesAreCountedAfterTheFirstNames) {
  for (int k = 0; k < 8; ++k) write_bytes(images_ / fmt::format("note_{}.txt", k), "x");
  const Result r = run_cli(base(images_) + "--input_shape 16 16 3 --batch_size 1 --max_images 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped 8 file(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("note_4.txt and 3 more"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("note_5.txt"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 image(s) past --max_images"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("--keep_partial"), std::string::npos) << r.output;
}

TEST_F(GenerateCalibrationTest, NothingSkippedSaysNothing) {
  const Result r = run_cli(base(images_) + "--input_shape 16 16 3 --batch_size 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("skipped"), std::string::npos) << r.output;
}

TEST_F(GenerateCalibrationTest, ProgressLinesWhenNotATerminal) {
  const Result r =
      run_cli(base(images_) + "--input_shape 16 16 3 --batch_size 1 --input_dtype uint8");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("calibration data: 3/3 images (100%)"), std::string::npos) << r.output;
  EXPECT_EQ(npy_load(out_).dtype(), DataType::kUInt8);
}

TEST_F(GenerateCalibrationTest, Errors) {
  const std::string ok = "--input_shape 16 16 3 --batch_size 1 ";
  expect_failure(base(images_) + ok + "--max_images 0", "--max_images: Value 0 not in range 1");
  expect_failure(base(dir_ / "missing") + ok, "does not exist");
  expect_failure(base(images_ / "0_astronaut.png") + ok, "is a file, not a directory");
  fs::create_directories(dir_ / "empty");
  expect_failure(base(dir_ / "empty") + ok, "no images");
  expect_failure(base(images_) + "--input_shape 16 16 2", "C must be 1, 3 or 4");
  expect_failure(base(images_) + "--input_shape 16 16", "--input_shape takes 3 values");
  expect_failure(base(images_) + ok + "--input_dtype int32", "--input_dtype 'int32'");
  expect_failure(base(images_) + ok + "--input_dtype nonsense", "--input_dtype 'nonsense'");
  expect_failure(base(images_) + ok + "--data_order NCWH", "--data_order 'NCWH'");
  expect_failure(base(images_) + ok + "--resize_method cubic", "--resize_method 'cubic'");
  expect_failure(base(images_) + ok + "--color_order GRB", "--color_order 'GRB'");
  expect_failure(base(images_) + ok + "--mean 1 2", "mean has 2 values");
  expect_failure(base(images_) + ok + "--input_scale 0 1 2", "--input_scale takes 2 values");
  expect_failure(base(images_) + "--input_shape 16 16 3 --batch_size 8",
                 "do not fill one batch of 8");
  write_bytes(images_ / "3_broken.png", read_bytes(fixture("photo_coffee.png")).substr(0, 300));
  expect_failure(base(images_) + ok, "3_broken.png");
}

}  // namespace
}  // namespace trtutils
