// `trtutils build_yolo`: a YOLOv8-style model (its head a graph input, built in code) through
// build_yolo and run; the flags it shares with build; its errors as one clean line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "clean_failure.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "trtutils/npy.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

// output0 = Identity(head): [N, 4 + C, A] with C = 2, A = 24 (or `shape`).
void write_head_model(const fs::path& path, const ir::SymShape& shape) {
  ir::GraphBuilder b("head");
  auto x = b.input("head", DataType::kFloat32, shape);
  auto y = b.node_with_outputs("Identity", {x}, {"output0"})[0];
  b.output(y, DataType::kFloat32, shape);
  onnx_io::save_model(b.build(17), path);
}

class BuildYoloCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("trtutils_build_yolo_cli_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    dir_ = root_ / "work";
    logs_ = root_ / "logs";
    fs::create_directories(dir_);
    fs::create_directories(logs_);
  }
  void TearDown() override { fs::remove_all(root_); }
  test_util::CliRun cli(const std::string& args) { return test_util::run_cli(dir_, args, logs_); }
  fs::path root_, dir_, logs_;
};

TEST_F(BuildYoloCli, BuildsAndRunsAYoloV8Head) {
  write_head_model(dir_ / "v8.onnx", {ir::Dim("batch"), 6, 24});
  Tensor x(DataType::kFloat32, {2, 6, 24});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t ch = (i / 24) % 6;
    x.data<float>()[i] = ch < 2 ? 32 * u(rng) : ch < 4 ? 2 + 8 * u(rng) : u(rng);
  }
  npy_save(dir_ / "x.npy", x);
  auto r =
      cli("build_yolo --onnx v8.onnx --output v8.engine --num_classes 2 --conf_threshold 0.5 "
          "--iou_threshold 0.45 --top_k 7 --backend cpu");
  ASSERT_EQ(r.code, 0) << r.report;
  EXPECT_NE(r.out.find("YOLOv8/v11 head: output0 [batch, 6, 24] (float32)"), std::string::npos)
      << r.report;
  EXPECT_NE(r.out.find("built v8.engine"), std::string::npos) << r.report;
  r = cli("run --engine v8.engine --input head=x.npy --output_dir out");
  ASSERT_EQ(r.code, 0) << r.report;
  const Tensor num = npy_load(dir_ / "out" / "num_dets.npy");
  EXPECT_EQ(num.dtype(), DataType::kInt32);
  EXPECT_EQ(num.shape(), (Shape{2, 1}));
  const Tensor boxes = npy_load(dir_ / "out" / "det_boxes.npy");
  EXPECT_EQ(boxes.shape(), (Shape{2, 7, 4}));
  const Tensor scores = npy_load(dir_ / "out" / "det_scores.npy");
  const Tensor classes = npy_load(dir_ / "out" / "det_classes.npy");
  for (int64_t img = 0; img < 2; ++img) {
    const int32_t n = num.data<int32_t>()[img];
    EXPECT_GT(n, 0);
    for (int32_t i = 0; i < n; ++i) {
      const float s = scores.data<float>()[img * 7 + i];
      EXPECT_GE(s, 0.5f);
      if (i > 0) {
        EXPECT_LE(s, scores.data<float>()[img * 7 + i - 1]);
      }
      EXPECT_LT(classes.data<int32_t>()[img * 7 + i], 2);
    }
  }
  // The same engine again with --class_agnostic: never more detections.
  r =
      cli("build_yolo --onnx v8.onnx --output agn.engine --num_classes 2 --conf_threshold 0.5 "
          "--iou_threshold 0.45 --top_k 7 --class_agnostic --backend cpu");
  ASSERT_EQ(r.code, 0) << r.report;
  r = cli("run --engine agn.engine --input head=x.npy --output_dir agn");
  ASSERT_EQ(r.code, 0) << r.report;
  const Tensor num_agn = npy_load(dir_ / "agn" / "num_dets.npy");
  for (int64_t img = 0; img < 2; ++img)
    EXPECT_LE(num_agn.data<int32_t>()[img], num.data<int32_t>()[img]);
}

TEST_F(BuildYoloCli, SharesTheBuildFlags) {
  const auto yolo = cli("build_yolo --help");
  const auto build = cli("build --help");
  ASSERT_EQ(yolo.code, 0) << yolo.report;
  for (const char* flag : {"--num_classes", "--conf_threshold", "--iou_threshold", "--top_k",
                           "--box_coding", "--class_agnostic"})
    EXPECT_NE(yolo.out.find(flag), std::string::npos) << flag;
  // Every flag of build's help is in build_yolo's.
  std::stringstream lines(build.out);
  int flags = 0;
  for (std::string line; std::getline(lines, line);) {
    const size_t p = line.find("--");
    if (p == std::string::npos || line.find_first_not_of(' ') != p) continue;
    const std::string flag = line.substr(p, line.find_first_of(" ,=", p) - p);
    ++flags;
    EXPECT_NE(yolo.out.find(flag), std::string::npos) << flag << " missing from build_yolo";
  }
  EXPECT_GT(flags, 25);
}

TEST_F(BuildYoloCli, ErrorsAreOneCleanLine) {
  write_head_model(dir_ / "cls.onnx", {1, 1000});
  auto r = cli("build_yolo --onnx cls.onnx --output m.engine --backend cpu");
  test_util::expect_clean_error(r, "no known detection head among its outputs output0 [1, 1000]");
  EXPECT_FALSE(fs::exists(dir_ / "m.engine"));
  r = cli("build_yolo --onnx cls.onnx --output m.engine --conf_threshold 1.5");
  test_util::expect_clean_error(r, "--conf_threshold");
  EXPECT_EQ(r.code, 2);
  r = cli("build_yolo --onnx cls.onnx --output m.engine --box_coding xywh");
  test_util::expect_clean_error(r, "--box_coding");
  write_head_model(dir_ / "v8.onnx", {1, 84, 30});
  r = cli("build_yolo --onnx v8.onnx --output m.engine --backend tensorrt");
  test_util::expect_clean_error(r, "trtexec not found");
  r = cli("build_yolo --onnx v8.onnx --output v8.onnx --backend cpu");
  test_util::expect_clean_error(r, "--output");
  r = cli("build_yolo --onnx v8.onnx --output m.engine --strongly_typed --fp16 --backend cpu");
  test_util::expect_clean_error(r, "strongly_typed=True derives precision from the ONNX graph");
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "m.engine"));
}

}  // namespace
}  // namespace trtutils
