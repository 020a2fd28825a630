// `trtutils detect` and `trtutils classify` on tiny engines with known outputs: the JSON per
// image parses and holds the boxes in the image's pixels, the annotated PNG decodes (our own
// decoder) with the box drawn in its class colour where it belongs; the errors are one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "clean_failure.h"
#include "core/png_chart.h"
#include "data/codecs.h"
#include "engine/detector_models.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

class DetectCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("trtutils_detect_cli_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    dir_ = root_ / "work";
    logs_ = root_ / "logs";
    fs::create_directories(dir_ / "more");
    fs::create_directories(logs_);
    // 1280x720 letterboxed to 640: scale 0.5, 140 rows of padding on top. Class 0's network box
    // (100, 190) - (300, 390) is (200, 100) - (600, 500) in the image.
    test_models::build_fixed_box_detector(dir_, "boxes", 640, 640,
                                          {{100, 190, 300, 390}, {400, 150, 600, 250}});
    chart::write_png(dir_ / "street.png", chart::Canvas(1280, 720, {40, 40, 40}));
    chart::write_png(dir_ / "more" / "tall.png", chart::Canvas(720, 1280, {40, 40, 40}));
    std::ofstream(dir_ / "labels.txt") << "person\r\ncar\r\n\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  test_util::CliRun cli(const std::string& args) { return test_util::run_cli(dir_, args, logs_); }
  nlohmann::json json(const fs::path& p) { return nlohmann::json::parse(test_util::read_all(p)); }
  fs::path root_, dir_, logs_;
};

TEST_F(DetectCli, WritesJsonAndAnAnnotatedPng) {
  auto r =
      cli("detect --engine boxes.engine --input street.png more --output out --labels labels.txt "
          "--backend cpu");
  ASSERT_EQ(r.code, 0) << r.report;
  EXPECT_NE(r.out.find("street.png: 2 detections"), std::string::npos) << r.report;
  EXPECT_NE(r.out.find("2 images on cpu"), std::string::npos) << r.report;

  const nlohmann::json j = json(dir_ / "out" / "street.json");
  EXPECT_EQ(j["width"], 1280);
  EXPECT_EQ(j["height"], 720);
  ASSERT_EQ(j["detections"].size(), 2u);
  const nlohmann::json& d = j["detections"][0];
  EXPECT_EQ(d["class_id"], 0);
  EXPECT_EQ(d["label"], "person");
  EXPECT_NEAR(d["score"].get<double>(), 0.9, 1e-6);
  const std::vector<double> want = {200, 100, 600, 500};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(d["box"][i].get<double>(), want[i], 0.01) << i;
  EXPECT_EQ(j["detections"][1]["label"], "car");
  for (const char* k : {"decode", "preprocess", "inference", "postprocess", "total"})
    EXPECT_TRUE(j["latency_ms"][k].is_number()) << k;
  EXPECT_GT(j["latency_ms"]["inference"].get<double>(), 0.0);

  const data::Image png = data::load_image(dir_ / "out" / "street.png");
  ASSERT_EQ(png.width, 1280);
  ASSERT_EQ(png.height, 720);
  ASSERT_EQ(png.channels, 3);
  const auto px = [&](int64_t x, int64_t y) {
    const uint8_t* p = png.row(y) + x * 3;
    return chart::Rgb{p[0], p[1], p[2]};
  };
  const chart::Rgb color{d["color"][0].get<uint8_t>(), d["color"][1].get<uint8_t>(),
                         d["color"][2].get<uint8_t>()};
  const chart::Rgb gray{40, 40, 40};
  EXPECT_NE(color, gray);
  EXPECT_EQ(px(200, 300), color);  // left edge, half-way down
  EXPECT_EQ(px(599, 300), color);  // right edge: the last pixel column inside x2 = 600
  EXPECT_EQ(px(400, 499), color);  // bottom edge
  EXPECT_EQ(px(199, 300), gray);   // just outside
  EXPECT_EQ(px(601, 300), gray);
  EXPECT_EQ(px(400, 300), gray);  // inside: not filled
  EXPECT_EQ(px(200, 99), color);  // the label tag above the box's top-left corner
  EXPECT_EQ(px(1279, 719), gray);

  // The folder input: the portrait image, the same network box 140 px to the left.
  const nlohmann::json t = json(dir_ / "out" / "tall.json");
  EXPECT_EQ(t["width"], 720);
  const std::vector<double> tall = {(100 - 140) * 2.0, 190 * 2.0, (300 - 140) * 2.0, 390 * 2.0};
  for (size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(t["detections"][0]["box"][i].get<double>(), std::max(tall[i], 0.0), 0.01) << i;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "tall.png"));

  // --conf_threshold above both scores: no detections, the PNG is the image itself.
  r = cli("detect --engine boxes.engine --input street.png --output none --conf_threshold 0.95");
  ASSERT_EQ(r.code, 0) << r.report;
  EXPECT_TRUE(json(dir_ / "none" / "street.json")["detections"].empty());
  const data::Image plain = data::load_image(dir_ / "none" / "street.png");
  EXPECT_EQ(plain.pixels, std::vector<uint8_t>(1280 * 720 * 3, 40));

  // --iterations: the timing line and timing.json (2 images, batch 1: 3 x 2 executions).
  r =
      cli("detect --engine boxes.engine --input street.png more --output timed --iterations 3 "
          "--warmup 1 --preprocess cpu");
  ASSERT_EQ(r.code, 0) << r.report;
  EXPECT_NE(r.out.find("timing: 6 executions of up to 1 image"), std::string::npos) << r.report;
  const nlohmann::json tj = json(dir_ / "timed" / "timing.json");
  EXPECT_EQ(tj["executions"], 6);
  EXPECT_EQ(tj["gpu_preprocessing"], false);
  EXPECT_GT(tj["images_per_s"].get<double>(), 0.0);
  EXPECT_LE(tj["median_ms"].get<double>(), tj["p99_ms"].get<double>());
}

TEST_F(DetectCli, Classify) {
  test_models::build_fixed_logits_classifier(dir_, "logits", {0.5f, 3.0f, 1.0f, -2.0f, 2.5f},
                                             false);
  std::ofstream(dir_ / "five.txt") << "a\nb\nc\nd\ne\n";
  auto r =
      cli("classify --engine logits.engine --input street.png --output cls --top_k 2 "
          "--labels five.txt");
  ASSERT_EQ(r.code, 0) << r.report;
  const nlohmann::json j = json(dir_ / "cls" / "street.json");
  EXPECT_EQ(j["softmax_applied"], true);
  EXPECT_EQ(j["num_classes"], 5);
  ASSERT_EQ(j["top_k"].size(), 2u);
  EXPECT_EQ(j["top_k"][0]["class_id"], 1);
  EXPECT_EQ(j["top_k"][0]["label"], "b");
  EXPECT_EQ(j["top_k"][1]["class_id"], 4);
  EXPECT_EQ(j["top_k"][1]["label"], "e");
  EXPECT_GT(j["top_k"][0]["score"].get<double>(), j["top_k"][1]["score"].get<double>());
  EXPECT_TRUE(j["latency_ms"]["total"].is_number());
}

TEST_F(DetectCli, ErrorsAreOneCleanLine) {
  test_models::build_fixed_logits_classifier(dir_, "logits", {1.0f, 2.0f}, false);
  auto r = cli("detect --engine logits.engine --input street.png --output out");
  test_util::expect_clean_error(r, "build_yolo");
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  r = cli("detect --engine boxes.engine --input street.png --output out --conf_threshold 2");
  test_util::expect_clean_error(r, "--conf_threshold");
  EXPECT_EQ(r.code, 2);
  r = cli("detect --engine boxes.engine --input missing.png --output out");
  test_util::expect_clean_error(r, "missing.png");
  r = cli("detect --engine boxes.engine --input street.png --output out --resize_method crop");
  test_util::expect_clean_error(r, "--resize_method");
  // An output that would replace an input.
  r = cli("detect --engine boxes.engine --input street.png --output .");
  test_util::expect_clean_error(r, "--output");
  r = cli("classify --engine logits.engine --input street.png --output out --top_k 0");
  test_util::expect_clean_error(r, "--top_k");
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
}  // namespace trtutils
