// SIGINT / SIGTERM during a long command leave neither the output nor a temporary file behind:
// generate_calibration streams its .npy into a temporary file for its whole run, so an interrupt
// always lands while the temporary exists.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cli_runner.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

class InterruptTest : public ::testing::TestWithParam<const char*> {};

TEST_P(InterruptTest, LeavesNoPartialOutput) {
  const fs::path dir =
      fs::temp_directory_path() / ("trtutils_interrupt_" + std::to_string(::getpid()) + GetParam());
  fs::remove_all(dir);
  fs::create_directories(dir / "images");
  const fs::path src = fs::path(TRTUTILS_TEST_DATA_DIR) / "images" / "photo_astronaut.png";
  for (int i = 0; i < 1500; ++i)
    fs::copy_file(src, dir / "images" / ("img" + std::to_string(i) + ".png"));
  const fs::path out = dir / "calib.npy";
  // Large images (512x512 float32: 3 MiB each) on one thread: the run takes seconds.
  const std::string cmd = std::string("timeout -s ") + GetParam() + " 1 " + TRTUTILS_CLI +
                          " generate_calibration --calibration_dir " + (dir / "images").string() +
                          " --input_shape 512 512 3 --batch_size 4 --threads 1 --output " +
                          out.string();
  const auto r = test_util::run_command(cmd, 60);
  EXPECT_NE(r.code, 0) << "the command finished before the signal; make it longer\n" << r.output;
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename(), "images") << "left behind: " << e.path();
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Signals, InterruptTest, ::testing::Values("INT", "TERM"));

}  // namespace
}  // namespace trtutils
