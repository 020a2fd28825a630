// The CLI on good and bad input: bad input must give exit code != 0 and one clear "error:" line,
// never a crash, a hang or an output file.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "trtutils/file_util.h"
#include "trtutils/npy.h"

namespace fs = std::filesystem;

namespace trtutils {
namespace {

using Result = test_util::CommandResult;
using test_util::run_cli;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    example_ = fs::path(TRTUTILS_TEST_DATA_DIR) / "../../examples";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Bad input: exit 1, exactly one "error:" line mentioning `needle`, no output written.
  void expect_clean_failure(const std::string& args, const std::string& needle) {
    const fs::path out = dir_ / "out";
    const Result r = run_cli(args + " --output_dir " + out.string());
    EXPECT_EQ(r.code, 1) << r.output;
    size_t errors = 0;
    for (size_t p = r.output.find("error:"); p != std::string::npos;
         p = r.output.find("error:", p + 1))
      ++errors;
    EXPECT_EQ(errors, 1u) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos)
        << "expected '" << needle << "' in: " << r.output;
    EXPECT_TRUE(!fs::exists(out) || fs::is_empty(out)) << "output written despite the error";
  }

  std::string write(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }

  fs::path dir_;
  fs::path example_;
};

TEST_F(CliTest, RunsTheExampleAndWritesOutputs) {
  const Result r = run_cli("run --onnx " + (example_ / "tiny_cnn.onnx").string() +
                           " --input input=" + (example_ / "tiny_cnn_input.npy").string() +
                           " --output_dir " + dir_.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const Tensor out = npy_load(dir_ / "probabilities.npy");
  const Tensor ref = npy_load(example_ / "tiny_cnn_expected.npy");
  ASSERT_EQ(out.shape(), ref.shape());
  for (int64_t i = 0; i < out.numel(); ++i)
    EXPECT_NEAR(out.data<float>()[i], ref.data<float>()[i], 1e-5);
}

TEST_F(CliTest, RandomInputWhenOmittedIsSeeded) {
  auto run_seed = [&](int seed, const std::string& sub) {
    const fs::path d = dir_ / sub;
    const Result r = run_cli("run --onnx " + (example_ / "tiny_cnn.onnx").string() + " --seed " +
                             std::to_string(seed) + " --output_dir " + d.string());
    EXPECT_EQ(r.code, 0) << r.output;
    return npy_load(d / "probabilities.npy");
  };
  const Tensor a = run_seed(7, "a"), b = run_seed(7, "b"), c = run_seed(8, "c");
  EXPECT_EQ(std::string(static_cast<const char*>(a.raw()), a.nbytes()),
            std::string(static_cast<const char*>(b.raw()), b.nbytes()));
  EXPECT_NE(std::string(static_cast<const char*>(a.raw()), a.nbytes()),
            std::string(static_cast<const char*>(c.raw()), c.nbytes()));
}

// --shapes gives a dynamic input's random data its shape (run and benchmark); a wrong name, rank
// or fixed dimension is refused naming the input.
TEST_F(CliTest, ShapesSetTheRandomDataOfADynamicInput) {
  const std::string onnx = (example_ / "tiny_cnn.onnx").string();
  Result r =
      run_cli("run --onnx " + onnx + " --shapes input:3x3x32x32 --output_dir " + dir_.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(npy_load(dir_ / "probabilities.npy").shape(), (Shape{3, 10}));
  const fs::path json = dir_ / "b.json";
  r = run_cli("benchmark --onnx " + onnx + " --shapes input:2x3x32x32 --iterations 2 --json " +
              json.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("batch: 2"), std::string::npos) << r.output;
  expect_clean_failure("run --onnx " + onnx + " --shapes images:1x3x32x32", "no input 'images'");
  expect_clean_failure("run --onnx " + onnx + " --shapes input:1x3x32", "has rank 4");
  expect_clean_failure("run --onnx " + onnx + " --shapes input:1x4x32x32", "is fixed at 3");
}

// benchmark --duration: the timed iterations go on until that much time has passed, and the
// report and JSON count the iterations that ran.
TEST_F(CliTest, BenchmarkDurationRunsAtLeastThatLong) {
  const fs::path json = dir_ / "d.json";
  const Result r = run_cli("benchmark --onnx " + (example_ / "tiny_cnn.onnx").string() +
                           " --iterations 1 --duration 0.3 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string text = read_file(json);
  const auto at = text.find("\"iterations\":");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_GT(std::stoi(text.substr(at + 13)), 1) << text;
}

TEST_F(CliTest, InfoPrintsPlatformFlags) {
  const Result r = run_cli("info");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("IS_BLACKWELL:"), std::string::npos);
  EXPECT_NE(r.output.find("STRONGLY_TYPED_SUPPORTED: True"), std::string::npos);
}

TEST_F(CliTest, TruncatedAndGarbageModels) {
  const std::string model = read_file(example_ / "tiny_cnn.onnx");
  expect_clean_failure("run --onnx " + write("trunc.onnx", model.substr(0, model.size() / 2)),
                       "trunc.onnx");
  expect_clean_failure("run --onnx " + write("garbage.onnx", std::string(1000, '\xff')),
                       "garbage.onnx");
  expect_clean_failure("run --onnx " + write("empty.onnx", ""), "empty.onnx");
  expect_clean_failure("run --onnx " + (dir_ / "missing.onnx").string(), "missing.onnx");
}

onnx::ModelProto single_node_model(const std::string& op) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("the_node");
  n->add_input("x");
  n->add_output("y");
  for (auto* v : {g->add_input(), g->add_output()}) {
    v->set_name(v == &g->input(0) ? "x" : "y");
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(4);
  }
  return m;
}

TEST_F(CliTest, UnknownOpNamesNodeAndOp) {
  const std::string p = write("unknown.onnx", single_node_model("FancyNewOp").SerializeAsString());
  expect_clean_failure("run --onnx " + p, "FancyNewOp");
}

TEST_F(CliTest, WrongInputShapeOrDtype) {
  const std::string onnx = (example_ / "tiny_cnn.onnx").string();
  npy_save(dir_ / "small.npy", Tensor(DataType::kFloat32, {1, 3, 16, 16}));
  npy_save(dir_ / "ints.npy", Tensor(DataType::kInt32, {1, 3, 32, 32}));
  expect_clean_failure("run --onnx " + onnx + " --input input=" + (dir_ / "small.npy").string(),
                       "must have shape");
  expect_clean_failure("run --onnx " + onnx + " --input input=" + (dir_ / "ints.npy").string(),
                       "must be float32, got int32");
  expect_clean_failure("run --onnx " + onnx + " --input nope=" + (dir_ / "ints.npy").string(),
                       "unknown input 'nope'");
}

TEST_F(CliTest, NpyWithMismatchedDims) {
  // Header promises 1x3x32x32 float32, the data holds 10 floats.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 32, 32), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header + std::string(40, '\0');
  const std::string p = write("short.npy", bytes);
  expect_clean_failure(
      "run --onnx " + (example_ / "tiny_cnn.onnx").string() + " --input input=" + p, "short.npy");
}

TEST_F(CliTest, ExternalDataOutsideTheModelFolderIsRefused) {
  fs::create_directories(dir_ / "model");
  write("secret.bin", std::string(16, '\1'));
  onnx::ModelProto m = single_node_model("Relu");
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("../secret.bin");
  const std::string p = write("model/evil.onnx", m.SerializeAsString());
  expect_clean_failure("run --onnx " + p, "../secret.bin");
}

}  // namespace
}  // namespace trtutils
