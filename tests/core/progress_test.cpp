// Progress (core/progress.h) through a console sink: the redrawn bar of a terminal, the lines
// otherwise (every 10%, and every line_interval while items complete), an early finish, and
// silence when disabled or at log level kError.
#include "core/progress.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "trtutils/console.h"
#include "trtutils/logging.h"

namespace trtutils {
namespace {

class ProgressTest : public ::testing::Test {
 protected:
  void sink(bool terminal) {
    set_console_sink(ConsoleSink{[this](std::string_view t) { out_ += t; }, terminal});
  }
  void TearDown() override { set_console_sink(std::nullopt); }
  static size_t count(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
    return n;
  }
  std::string out_;
};

TEST_F(ProgressTest, LinesAtEvery10PercentWhenNotATerminal) {
  sink(false);
  {
    Progress p("calibration", 20, true, "batches");
    for (int i = 0; i <= 20; ++i) p.update(i);
  }
  EXPECT_EQ(count(out_, "[trtutils] calibration: "), 10u) << out_;
  EXPECT_NE(out_.find("[trtutils] calibration: 2/20 batches (10%), "), std::string::npos) << out_;
  EXPECT_NE(out_.find("[trtutils] calibration: 20/20 batches (100%), "), std::string::npos);
  EXPECT_NE(out_.find(" batches/s, "), std::string::npos);
  EXPECT_EQ(out_.find('\r'), std::string::npos);
}

TEST_F(ProgressTest, LinesEveryIntervalBetweenTheTenths) {
  sink(false);
  Progress p("min_sqnr sensitivity", 1000, true, "layers", std::chrono::milliseconds(20));
  p.update(1);
  EXPECT_TRUE(out_.empty()) << out_;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  p.update(2);  // under 10%, but the interval has passed
  EXPECT_NE(out_.find("min_sqnr sensitivity: 2/1000 layers (0%)"), std::string::npos) << out_;
  EXPECT_NE(out_.find(" s left"), std::string::npos) << out_;
}

TEST_F(ProgressTest, BarOnATerminalEndsWithANewline) {
  sink(true);
  {
    Progress p("calibration", 4, true, "batches");
    for (int i = 0; i <= 4; ++i) p.update(i);
  }
  EXPECT_NE(out_.find("\rcalibration [##############################] 4/4 batches, "),
            std::string::npos)
      << out_;
  EXPECT_EQ(out_.back(), '\n');
  EXPECT_EQ(count(out_, "\n"), 1u);
}

TEST_F(ProgressTest, FinishEndsEarlyOnce) {
  sink(false);
  Progress p("min_sqnr fallback", 50, true, "layers");
  p.finish(3);
  p.update(4);
  p.finish(5);
  EXPECT_EQ(out_.rfind("[trtutils] min_sqnr fallback: 3/50 layers (6%), ", 0), 0u) << out_;
  EXPECT_EQ(count(out_, "\n"), 1u) << out_;
}

TEST_F(ProgressTest, SilentWhenDisabledOrQuiet) {
  sink(false);
  {
    Progress p("calibration", 3, false, "batches");
    p.update(3);
  }
  const LogLevel level = log_level();
  set_log_level(LogLevel::kError);
  {
    Progress p("calibration", 3, true, "batches");
    p.update(3);
  }
  set_log_level(level);
  EXPECT_TRUE(out_.empty()) << out_;
}

}  // namespace
}  // namespace trtutils
