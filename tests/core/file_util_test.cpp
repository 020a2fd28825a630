// The file helpers every reader and writer goes through (trtutils/file_util.h) and the escaping
// of control characters in messages (trtutils/status.h).
#include "trtutils/file_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "trtutils/npy.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

class FileUtilTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trtutils_file_util_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "sub");
    std::ofstream(dir_ / "a.bin") << "abc";
    ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0644), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The message of the Error `fn` throws ("" if none).
  template <typename F>
  static std::string error_of(F fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(FileUtilTest, ReadersSayWhatAPathIsInsteadOfOpeningIt) {
  EXPECT_EQ(error_of([&] { require_regular_file(dir_ / "a.bin"); }), "");
  EXPECT_NE(error_of([&] {
              require_regular_file(dir_ / "sub", "ONNX model");
            }).find("cannot read ONNX model '" + (dir_ / "sub").string() + "': it is a directory"),
            std::string::npos);
  // A FIFO would block read_file and npy_load forever: both refuse it at once.
  EXPECT_NE(error_of([&] { (void)read_file(dir_ / "fifo"); }).find("is a FIFO"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)npy_load(dir_ / "fifo"); }).find("is a FIFO"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)npy_read_header(dir_ / "fifo"); }).find("is a FIFO"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)open_regular_file("/dev/zero"); }).find("character device"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)read_file(dir_ / "none"); }).find("not found"), std::string::npos);
  const int fd = open_regular_file(dir_ / "a.bin");
  EXPECT_GE(fd, 0);
  char buf[4] = {};
  EXPECT_EQ(::read(fd, buf, 3), 3);  // the descriptor blocks normally again
  ::close(fd);
}

TEST_F(FileUtilTest, AnOutputThatIsAnInputIsRefused) {
  const fs::path a = dir_ / "a.bin";
  ASSERT_EQ(::link(a.c_str(), (dir_ / "hard.bin").c_str()), 0);
  fs::create_symlink("a.bin", dir_ / "soft.bin");
  for (const fs::path& out :
       {a, dir_ / "sub" / ".." / "a.bin", dir_ / "hard.bin", dir_ / "soft.bin", dir_ / "./a.bin"})
    EXPECT_NE(error_of([&] {
                check_output_is_not_input("--output", out, {{"--onnx", a}});
              }).find("is the same file as --onnx"),
              std::string::npos)
        << out;
  // Other files, missing ones and empty paths pass.
  EXPECT_EQ(error_of([&] {
              check_output_is_not_input("--output", dir_ / "b.bin", {{"--onnx", a}, {"--x", ""}});
            }),
            "");
  EXPECT_EQ(error_of([&] { check_output_is_not_input("--output", "", {{"--onnx", a}}); }), "");
}

TEST(EscapeControlCharacters, MessagesStayOnePrintableLine) {
  EXPECT_EQ(escape_control_characters("plain 'name' \\ ok"), "plain 'name' \\ ok");
  EXPECT_EQ(escape_control_characters(std::string("a\nerror: b\tc\rd\0e\x7f", 17)),
            "a\\nerror: b\\tc\\rd\\x00e\\x7f");
  const Error e(ErrorCode::kInvalidArgument, std::string("tensor 'x\ny\0z'", 14));
  EXPECT_EQ(std::string(e.what()), "tensor 'x\\ny\\x00z'");
}

}  // namespace
}  // namespace trtutils
