// The public ONNX-on-the-CPU API (include/trtutils/onnx_session.h) over Session, and
// backend_info (platform.h): what the CLI's run / benchmark / compare / debug_precision and info
// read through the public headers.
#include "trtutils/onnx_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "trtutils/platform.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;

// y = relu(x + 1) with x [batch, 3] float32.
class OnnxSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_onnx_session_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    ir::GraphBuilder b("m");
    auto x = b.input("x", DataType::kFloat32, {ir::Dim("batch"), 3});
    auto one = b.initializer("one", Tensor::from_vector<float>(DataType::kFloat32, {1}, {1.0f}));
    auto sum = b.node("Add", {x, one}, {}, 1, "", "add")[0];
    b.output(b.node("Relu", {sum}, {}, 1, "", "relu")[0], DataType::kFloat32);
    onnx_ = dir_ / "m.onnx";
    onnx_io::save_model(b.build(17), onnx_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_, onnx_;
};

TEST_F(OnnxSessionTest, DescribesAndRunsTheModel) {
  OnnxSession s(onnx_, {.num_threads = 1, .profile = true});
  ASSERT_EQ(s.inputs().size(), 1u);
  const ModelTensorInfo& in = s.inputs()[0];
  EXPECT_EQ(in.name, "x");
  EXPECT_EQ(in.dtype, DataType::kFloat32);
  ASSERT_TRUE(in.shape.has_value());
  ASSERT_EQ(in.shape->size(), 2u);
  EXPECT_FALSE((*in.shape)[0].is_static());
  EXPECT_EQ((*in.shape)[0].param, "batch");
  EXPECT_EQ((*in.shape)[1].value, 3);
  ASSERT_EQ(s.outputs().size(), 1u);
  const std::string out_name = s.outputs()[0].name;

  const Tensor x = Tensor::from_vector<float>(DataType::kFloat32, {2, 3}, {-3, -1, 0, 1, 2, 3});
  auto out = s.run({{"x", x}});
  ASSERT_EQ(out.count(out_name), 1u);
  const Tensor& y = out.at(out_name);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  const float want[] = {0, 0, 1, 2, 3, 4};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], want[i]) << i;
  EXPECT_GT(s.peak_activation_bytes(), 0u);
  EXPECT_EQ(s.weight_bytes(), sizeof(float));
  ASSERT_FALSE(s.profile().empty());
  for (const LayerTiming& t : s.profile()) {
    EXPECT_EQ(t.calls, 1) << t.name;
    EXPECT_FALSE(t.op.empty()) << t.name;
  }
  const auto names = s.node_output_names();
  EXPECT_NE(std::find(names.begin(), names.end(), out_name), names.end());

  // A moved session runs on.
  OnnxSession moved = std::move(s);
  EXPECT_EQ(moved.run({{"x", x}}).at(out_name).numel(), 6);
}

TEST_F(OnnxSessionTest, ChecksItsFeeds) {
  OnnxSession s(onnx_);
  try {
    (void)s.run({{"y", Tensor(DataType::kFloat32, {1, 3})}});
    ADD_FAILURE() << "an unknown input ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
  EXPECT_THROW(OnnxSession(dir_ / "missing.onnx"), Error);
  EXPECT_THROW(OnnxSession(onnx_, {.num_threads = -1}), Error);
}

TEST_F(OnnxSessionTest, MarkAllOutputsReturnsTheIntermediates) {
  OnnxSession s(onnx_, {.mark_all_outputs = true});
  auto out = s.run({{"x", Tensor(DataType::kFloat32, {1, 3})}});
  for (const auto& n : s.node_output_names()) EXPECT_EQ(out.count(n), 1u) << n;
}

TEST_F(OnnxSessionTest, ModelInfoIsTheFileAsLoaded) {
  const OnnxModelInfo info = onnx_model_info(onnx_);
  EXPECT_EQ(info.opset, 17);
  ASSERT_EQ(info.inputs.size(), 1u);  // the initializer "one" is not an input
  EXPECT_EQ(info.inputs[0].name, "x");
  ASSERT_EQ(info.nodes.size(), 2u);
  EXPECT_EQ(info.nodes[0].name, "add");
  EXPECT_EQ(info.nodes[0].op_type, "Add");
  EXPECT_EQ(info.nodes[1].name, "relu");
  EXPECT_EQ(info.nodes[1].domain, "");
  ASSERT_EQ(info.outputs.size(), 1u);
}

TEST(BackendInfo, ListsCpuCudaTensorrt) {
  const auto b = backend_info();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].name, "cpu");
  EXPECT_TRUE(b[0].usable);
  EXPECT_TRUE(b[0].strongly_typed_supported);
  EXPECT_TRUE(b[0].detail.empty());
  EXPECT_EQ(b[1].name, "cuda");
  EXPECT_FALSE(b[1].detail.empty());
  EXPECT_EQ(b[2].name, "tensorrt");
  EXPECT_FALSE(b[2].detail.empty());
}

}  // namespace
}  // namespace trtutils
