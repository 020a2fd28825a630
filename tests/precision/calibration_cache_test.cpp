#include "precision/calibration_cache.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

#include "trtutils/status.h"

namespace trtutils::precision {
namespace {

namespace fs = std::filesystem;

// The error a call throws; fails the test if it throws none.
Error error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no trtutils::Error thrown";
  return Error(ErrorCode::kInternal, "");
}

// Expects parsing `text` to fail with kInvalidArgument and a message containing each part.
void expect_parse_error(const std::string& text, const std::vector<std::string>& parts) {
  const Error e = error_of([&] { parse_calibration_cache(text, "calib.cache"); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  for (const auto& p : parts)
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
        << "'" << p << "' not in: " << e.what();
}

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ =
        fs::temp_directory_path() / fmt::format("trtutils_calib_{}_{}", ::getpid(), info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// As TensorRT 8.6 writes it (names of the kinds its ONNX parser gives).
constexpr const char* kTrtCache =
    "TRT-8601-EntropyCalibration2\n"
    "images: 3c010a14\n"
    "/model.0/conv/Conv_output_0: 3d8a8ed6\n"
    "(Unnamed Layer* 8) [Constant]_output: 39137939\n"
    "output0: 40b7daf4\n";

TEST(CalibrationCache, ParsesTensorRtCache) {
  const CalibrationCache c = parse_calibration_cache(kTrtCache, "calib.cache");
  EXPECT_EQ(c.trt_version, "8601");
  EXPECT_EQ(c.algorithm, "EntropyCalibration2");
  ASSERT_EQ(c.scales.size(), 4u);
  EXPECT_EQ(c.scales[0].first, "images");
  EXPECT_EQ(bits(c.scales[0].second), 0x3c010a14u);
  EXPECT_NEAR(c.scales[0].second * 127.0f, 1.0f, 1e-3f);  // amax ~1: inputs in [0, 1]
  EXPECT_EQ(c.scales[2].first, "(Unnamed Layer* 8) [Constant]_output");
  EXPECT_EQ(bits(c.scales[2].second), 0x39137939u);
  EXPECT_EQ(c.scales[3].first, "output0");
  ASSERT_TRUE(c.scale("/model.0/conv/Conv_output_0").has_value());
  EXPECT_EQ(bits(*c.scale("/model.0/conv/Conv_output_0")), 0x3d8a8ed6u);
  EXPECT_FALSE(c.scale("missing").has_value());
  // What we write is what TensorRT writes.
  EXPECT_EQ(format_calibration_cache(c), kTrtCache);
}

TEST(CalibrationCache, AcceptsEveryAlgorithmAndVersion) {
  for (const char* header : {"TRT-100300-MinMaxCalibration", "TRT-7000-EntropyCalibration",
                             "TRT-5105-LegacyCalibration", "TRT-8XXX-EntropyCalibration2"}) {
    const CalibrationCache c = parse_calibration_cache(std::string(header) + "\nx: 3f800000\n", "");
    EXPECT_EQ("TRT-" + c.trt_version + "-" + c.algorithm, header);
    EXPECT_EQ(c.scale("x"), 1.0f);
  }
  const CalibrationCache empty = parse_calibration_cache("TRT-8601-EntropyCalibration2", "");
  EXPECT_TRUE(empty.scales.empty());
}

TEST(CalibrationCache, RoundTripIsBitExact) {
  CalibrationCache c;
  c.trt_version = "8601";
  c.algorithm = "MinMaxCalibration";
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_positive(1, 0x7f7fffffu);  // finite, > 0
  for (int i = 0; i < 2000; ++i)
    c.scales.emplace_back(fmt::format("t{}", i), std::bit_cast<float>(any_positive(rng)));
  c.scales.emplace_back("max", std::numeric_limits<float>::max());
  c.scales.emplace_back("min_normal", std::numeric_limits<float>::min());
  c.scales.emplace_back("min_subnormal", std::numeric_limits<float>::denorm_min());
  const std::string text = format_calibration_cache(c);
  const CalibrationCache back = parse_calibration_cache(text, "");
  EXPECT_EQ(back.trt_version, c.trt_version);
  EXPECT_EQ(back.algorithm, c.algorithm);
  ASSERT_EQ(back.scales.size(), c.scales.size());
  for (size_t i = 0; i < c.scales.size(); ++i) {
    EXPECT_EQ(back.scales[i].first, c.scales[i].first);
    EXPECT_EQ(bits(back.scales[i].second), bits(c.scales[i].second)) << c.scales[i].first;
  }
  EXPECT_EQ(format_calibration_cache(back), text);
  EXPECT_NE(text.find("min_subnormal: 00000001\n"), std::string::npos);  // 8 digits, padded
}

TEST(CalibrationCache, NamesMayContainColonsAndSpaces) {
  CalibrationCache c;
  c.scales = {{"a:b", 1.0f}, {"x:", 2.0f}, {"::", 0.5f}, {"layer 3: out", 0.25f}, {" lead", 4.0f}};
  const std::string text = format_calibration_cache(c);
  EXPECT_NE(text.find("\na:b: 3f800000\n"), std::string::npos);
  EXPECT_NE(text.find("\nx:: 40000000\n"), std::string::npos);
  const CalibrationCache back = parse_calibration_cache(text, "");
  ASSERT_EQ(back.scales.size(), c.scales.size());
  for (size_t i = 0; i < c.scales.size(); ++i) EXPECT_EQ(back.scales[i], c.scales[i]);
}

TEST(CalibrationCache, ToleratesCrlfBlankLinesAndShortHex) {
  const CalibrationCache c = parse_calibration_cache(
      "TRT-8601-EntropyCalibration2\r\n"
      "a: 3C010A14\r\n"
      "\r\n"
      "b:3f800000  \r\n"
      "c: 1000000\r\n"  // Python's hex() drops leading zeros (NVIDIA TAO writes caches so)
      "d: 40000000",
      "");
  ASSERT_EQ(c.scales.size(), 4u);
  EXPECT_EQ(c.scales[0].first, "a");
  EXPECT_EQ(bits(c.scales[0].second), 0x3c010a14u);
  EXPECT_EQ(c.scales[1], (std::pair<std::string, float>{"b", 1.0f}));
  EXPECT_EQ(bits(c.scales[2].second), 0x1000000u);
  EXPECT_EQ(c.scales[3], (std::pair<std::string, float>{"d", 2.0f}));
}

TEST(CalibrationCache, BadHeadersAreRefused) {
  expect_parse_error("", {"calib.cache", "empty file", "TRT-<version>-<algorithm>"});
  expect_parse_error("\n", {"calib.cache:1:", "not a TensorRT calibration cache"});
  expect_parse_error("images: 3c010a14\n",
                     {"calib.cache:1:", "not a TensorRT calibration cache", "'images: 3c010a14'"});
  expect_parse_error("TRT-8601\n", {"calib.cache:1:", "expected a header"});
  expect_parse_error("TRT--EntropyCalibration2\n",
                     {"calib.cache:1:", "TensorRT version '' must be letters and digits"});
  expect_parse_error("TRT-8.6-EntropyCalibration2\n", {"calib.cache:1:", "version '8.6'"});
  expect_parse_error("TRT-8601-KLCalibration\r\n",
                     {"calib.cache:1:", "unknown calibration algorithm 'KLCalibration'",
                      "EntropyCalibration2, EntropyCalibration, MinMaxCalibration"});
}

TEST(CalibrationCache, BadLinesNameTheLine) {
  const std::string h = "TRT-8601-EntropyCalibration2\r\na: 3c010a14\r\n\r\n";  // lines 1-3
  expect_parse_error(h + "conv1 3c010a14\r\n",
                     {"calib.cache:4:", "found no ':'", "'conv1 3c010a14'"});
  expect_parse_error(h + ": 3c010a14\n", {"calib.cache:4:", "empty tensor name"});
  expect_parse_error(h + "b: 3c01zz14\n",
                     {"calib.cache:4:", "tensor 'b'", "'3c01zz14'", "not 8 hex digits"});
  expect_parse_error(h + "b: 3c010a140\n", {"calib.cache:4:", "'3c010a140'", "not 8 hex digits"});
  expect_parse_error(h + "b:\n", {"calib.cache:4:", "tensor 'b' is ''", "not 8 hex digits"});
  expect_parse_error(h + "b: 0x3c010a14\n", {"calib.cache:4:", "not 8 hex digits"});
  expect_parse_error(h + "b: 3c010a14\nb: 3c010a14\n",
                     {"calib.cache:5:", "duplicate tensor 'b' (first on line 4)"});
  expect_parse_error(h + "a: 3c010a14\n",
                     {"calib.cache:4:", "duplicate tensor 'a' (first on line 2)"});
  // Control bytes in the echoed text are escaped.
  expect_parse_error(h + "bad\x01line\n", {"'bad\\x01line'"});
}

TEST(CalibrationCache, UnusableScalesAreRefused) {
  const std::string h = "TRT-8601-EntropyCalibration2\nx: 3c010a14\n";
  expect_parse_error(h + "t: 7fc00000\n", {"calib.cache:3:", "tensor 't'", "7fc00000", "is NaN"});
  expect_parse_error(h + "t: 7f800000\n",
                     {"calib.cache:3:", "is infinite", "finite and positive", "recalibrate"});
  expect_parse_error(h + "t: bc010a14\n", {"calib.cache:3:", "is negative"});
  expect_parse_error(h + "t: 80000000\n", {"calib.cache:3:", "is negative"});
  expect_parse_error(h + "t: 00000000\n", {"calib.cache:3:", "is zero", "all zeros"});
  expect_parse_error(h + "t: 0\n", {"calib.cache:3:", "is zero"});
  // A short hex whose float is subnormal: not a scale (it was read as 8.6e-43).
  expect_parse_error(h + "t: 3c0\n", {"calib.cache:3:", "3 hex digits", "subnormal"});
}

TEST(CalibrationCache, ReadAndWriteFiles) {
  TempDir dir;
  const fs::path p = dir / "model.cache";
  CalibrationCache c;
  c.scales = {{"input", 1.0f / 127}, {"conv/out:0", 0.05f}};
  write_calibration_cache(p, c);
  const CalibrationCache back = read_calibration_cache(p);
  EXPECT_EQ(back.trt_version, "100300");
  EXPECT_EQ(back.algorithm, "EntropyCalibration2");
  EXPECT_EQ(back.scales, c.scales);
  // Only the cache is left in the folder (the temporary file was renamed).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);

  // Errors name the path.
  std::ofstream(dir / "bad.cache") << "TRT-8601-EntropyCalibration2\nx 1\n";
  const Error bad = error_of([&] { read_calibration_cache(dir / "bad.cache"); });
  EXPECT_EQ(bad.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(bad.what()).find((dir / "bad.cache").string() + ":2:"), std::string::npos)
      << bad.what();

  const Error missing = error_of([&] { read_calibration_cache(dir / "nope.cache"); });
  EXPECT_EQ(missing.code(), ErrorCode::kIO);
  EXPECT_NE(std::string(missing.what()).find("'" + (dir / "nope.cache").string() + "' not found"),
            std::string::npos)
      << missing.what();

  const Error dir_error = error_of([&] { read_calibration_cache(dir.path()); });
  EXPECT_EQ(dir_error.code(), ErrorCode::kIO);
  EXPECT_NE(std::string(dir_error.what()).find("it is a directory"), std::string::npos)
      << dir_error.what();

  // Over 64 MiB (a sparse file: nothing is written).
  const fs::path big = dir / "big.cache";
  std::ofstream(big) << "TRT-8601-EntropyCalibration2\n";
  fs::resize_file(big, kMaxCalibrationCacheBytes + 1);
  const Error too_big = error_of([&] { read_calibration_cache(big); });
  EXPECT_EQ(too_big.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(std::string(too_big.what()).find(big.string()), std::string::npos) << too_big.what();
}

TEST(CalibrationCache, WritingRefusesWhatCouldNotBeReadBack) {
  TempDir dir;
  const auto expect_refused = [&](const CalibrationCache& c, const std::string& part) {
    const Error e = error_of([&] { write_calibration_cache(dir / "out.cache", c); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_FALSE(fs::exists(dir / "out.cache"));
  };
  CalibrationCache c;
  c.scales = {{"a", std::numeric_limits<float>::quiet_NaN()}};
  expect_refused(c, "tensor 'a' (nan) is NaN");
  c.scales = {{"a", 0.0f}};
  expect_refused(c, "is zero");
  c.scales = {{"a", -1.0f}};
  expect_refused(c, "is negative");
  c.scales = {{"a", std::numeric_limits<float>::infinity()}};
  expect_refused(c, "is infinite");
  c.scales = {{"a\nb", 1.0f}};
  expect_refused(c, "line break");
  c.scales = {{"", 1.0f}};
  expect_refused(c, "is empty");
  c.scales = {{"a", 1.0f}, {"b", 1.0f}, {"a", 2.0f}};
  expect_refused(c, "duplicate tensor 'a' (entries 0 and 2)");
  c.scales = {};
  c.algorithm = "Percentile";
  expect_refused(c, "unknown calibration algorithm 'Percentile'");
  c.algorithm = "MinMaxCalibration";
  c.trt_version = "10.3";
  expect_refused(c, "version '10.3'");
}

}  // namespace
}  // namespace trtutils::precision
