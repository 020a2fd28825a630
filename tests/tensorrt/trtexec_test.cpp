// The TensorRT hand-off: version parsing, the BuildConfig -> trtexec flag mapping flag by flag
// for TensorRT 8.6 / 10.x / 11.x, the error mapping, a fake trtexec (a shell script) run end to
// end, and an integration test with the real trtexec where one is installed.
#include "tensorrt/trtexec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "trtutils/file_util.h"
#include "trtutils/status.h"
#include "trtutils/yolo.h"

namespace trtutils::tensorrt {
namespace {

namespace fs = std::filesystem;
using builder::BuildConfig;

const TrtVersion k86{8, 6, 1};
const TrtVersion k100{10, 0, 1};
const TrtVersion k103{10, 3, 0};
const TrtVersion k108{10, 8, 0};
const TrtVersion k111{11, 1, 0};
const TrtVersion k1141{11, 4, 1};

std::vector<std::string> args(const BuildConfig& c, const TrtVersion& v,
                              const TrtexecOptions& o = {}) {
  return trtexec_args("m.onnx", "m.engine", c, v, o).args;
}
bool has(const std::vector<std::string>& a, const std::string& flag) {
  return std::find(a.begin(), a.end(), flag) != a.end();
}
bool has_prefix(const std::vector<std::string>& a, const std::string& prefix) {
  return std::any_of(a.begin(), a.end(), [&](const auto& s) { return s.rfind(prefix, 0) == 0; });
}
// Expects trtexec_args to throw `code` with `text` in the message.
void expect_error(const BuildConfig& c, const TrtVersion& v, ErrorCode code,
                  const std::string& text, const TrtexecOptions& o = {}) {
  try {
    (void)trtexec_args("m.onnx", "m.engine", c, v, o);
    ADD_FAILURE() << "no error for TensorRT " << v.str() << "; expected: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(TrtVersion, DecodeAndParse) {
  EXPECT_EQ(decode_trt_version(8601).str(), "8.6.1");
  EXPECT_EQ(decode_trt_version(100300).str(), "10.3.0");
  EXPECT_EQ(decode_trt_version(100700).str(), "10.7.0");
  EXPECT_EQ(decode_trt_version(110401).str(), "11.4.1");
  EXPECT_EQ(parse_trt_version("&&&& RUNNING TensorRT.trtexec [TensorRT v100300] [b17] # trtexec "
                              "--help")
                .str(),
            "10.3.0");
  EXPECT_EQ(parse_trt_version("[I] TensorRT version: 8.6.1\n").str(), "8.6.1");
  EXPECT_EQ(parse_trt_version("10.7").str(), "10.7.0");
  EXPECT_FALSE(parse_trt_version("Unknown option: --version").known());
  EXPECT_TRUE(k103.at_least(10, 1));
  EXPECT_FALSE(k100.at_least(10, 1));
}

TEST(TrtexecArgs, AlwaysPresent) {
  for (const auto& v : {k86, k103, k111}) {
    const auto a = args({}, v);
    EXPECT_EQ(a[0], "--onnx=m.onnx");
    EXPECT_EQ(a[1], "--saveEngine=m.engine");
    EXPECT_TRUE(has(a, "--skipInference")) << v.str();
    EXPECT_TRUE(has(a, "--builderOptimizationLevel=3")) << v.str();
    EXPECT_FALSE(has_prefix(a, "--fp16") || has_prefix(a, "--int8") || has_prefix(a, "--useDLA"));
  }
  expect_error({}, TrtVersion{8, 5, 3}, ErrorCode::kNotSupported, "older than 8.6");
}

TEST(TrtexecArgs, StronglyTyped) {
  const BuildConfig c{.strongly_typed = true};
  // STRONGLY_TYPED_SUPPORTED is false before 10.1: the seed's message.
  expect_error(c, k86, ErrorCode::kNotSupported,
               "Installed TensorRT does not support strongly-typed networks");
  expect_error(c, k100, ErrorCode::kNotSupported,
               "Installed TensorRT does not support strongly-typed networks");
  EXPECT_TRUE(has(args(c, k103), "--stronglyTyped"));
  // 11.x: always strongly typed, the flag is a deprecated no-op: not passed.
  EXPECT_FALSE(has(args(c, k111), "--stronglyTyped"));
  // Weakly typed on 11.x: a warning that it builds strongly typed anyway.
  EXPECT_FALSE(trtexec_args("m.onnx", "m.engine", {}, k111).warnings.empty());
}

TEST(TrtexecArgs, PrecisionFlags) {
  for (const auto& v : {k86, k103}) {
    EXPECT_TRUE(has(args({.fp16 = true}, v), "--fp16"));
    EXPECT_TRUE(has(args({.int8 = true}, v), "--int8"));
    EXPECT_TRUE(has(args({.fp8 = true}, v), "--fp8"));
  }
  // TensorRT 11 dropped weak typing.
  expect_error({.fp16 = true}, k111, ErrorCode::kConfig, "dropped weak typing");
  expect_error({.int8 = true}, k111, ErrorCode::kConfig, "int8 cannot be passed");
  expect_error({.fp8 = true}, k111, ErrorCode::kConfig, "fp8 cannot be passed");
}

class TrtexecFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_trtexec_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }
  fs::path dir_;
};

TEST_F(TrtexecFiles, Calibration) {
  const fs::path cache = write("calib.cache", "TRT-100300-EntropyCalibration2\nx: 3c010a14\n");
  BuildConfig c{.int8 = true, .calibration_cache = cache};
  EXPECT_TRUE(has(args(c, k103), "--calib=" + cache.string()));
  EXPECT_TRUE(has(args(c, k86), "--calib=" + cache.string()));
  // trtexec reads caches only.
  expect_error({.int8 = true, .calibration_cache = dir_ / "missing.cache"}, k103,
               ErrorCode::kInvalidArgument, "calibration cache not found");
  expect_error({.int8 = true, .calibration_data = "calib.npy"}, k103, ErrorCode::kNotSupported,
               "cannot calibrate from calibration data");
  // int8 with no cache: placeholder ranges, a warning.
  EXPECT_FALSE(trtexec_args("m.onnx", "m.engine", {.int8 = true}, k103).warnings.empty());
  expect_error(c, k111, ErrorCode::kConfig, "calibration");
}

TEST(TrtexecArgs, LayerPrecisions) {
  BuildConfig c;
  c.layer_precision = {{"conv1", DataType::kFloat16}, {"1", DataType::kInt8}};
  c.precision_constraints = "obey";
  TrtexecOptions o;
  o.layer_names = {"conv1", "fc"};
  const auto a = args(c, k103, o);
  EXPECT_TRUE(has(a, "--precisionConstraints=obey"));
  EXPECT_TRUE(has(a, "--layerPrecisions=conv1:fp16,fc:int8"));
  EXPECT_TRUE(has(args(c, k86, o), "--layerPrecisions=conv1:fp16,fc:int8"));
  // An index needs the model's names.
  expect_error(c, k103, ErrorCode::kInvalidArgument, "layer index 1");
  c.layer_precision = {{"conv1", DataType::kFloat8E4M3FN}};
  expect_error(c, k103, ErrorCode::kNotSupported, "--layerPrecisions takes fp32, fp16 or int8");
  expect_error(c, k111, ErrorCode::kConfig, "layer_precision");
  // Constraints alone.
  EXPECT_TRUE(
      has(args({.precision_constraints = "prefer"}, k103), "--precisionConstraints=prefer"));
}

TEST(TrtexecArgs, IoFormats) {
  BuildConfig c;
  c.input_tensor_formats = {builder::parse_tensor_format("fp16:HWC"),
                            builder::parse_tensor_format("LINEAR")};
  c.output_tensor_formats = {builder::parse_tensor_format("int8:CHW32")};
  for (const auto& v : {k86, k103}) {
    const auto a = args(c, v);
    EXPECT_TRUE(has(a, "--inputIOFormats=fp16:hwc,fp32:chw")) << v.str();
    EXPECT_TRUE(has(a, "--outputIOFormats=int8:chw32")) << v.str();
  }
  // 11.x: formats only; a dtype is an error.
  expect_error(c, k111, ErrorCode::kConfig, "IO formats take no dtype");
  BuildConfig f;
  f.input_tensor_formats = {builder::parse_tensor_format("HWC16")};
  EXPECT_TRUE(has(args(f, k111), "--inputIOFormats=hwc16"));
  expect_error(f, k103, ErrorCode::kNotSupported, "no hwc16");
}

TEST(TrtexecArgs, Shapes) {
  BuildConfig c;
  c.min_shapes = {{"x", {1, 3, 8, 8}}};
  c.opt_shapes = {{"x", {4, 3, 8, 8}}};
  c.max_shapes = {{"x", {8, 3, 8, 8}}};
  c.shapes = {{"y", {2, 5}}};
  for (const auto& v : {k86, k103, k111}) {
    const auto a = args(c, v);
    EXPECT_TRUE(has(a, "--minShapes=x:1x3x8x8,y:2x5")) << v.str();
    EXPECT_TRUE(has(a, "--optShapes=x:4x3x8x8,y:2x5")) << v.str();
    EXPECT_TRUE(has(a, "--maxShapes=x:8x3x8x8,y:2x5")) << v.str();
  }
  BuildConfig q;
  q.shapes = {{"in:0", {1, 2}}};  // trtexec's quoting of names with separators
  EXPECT_TRUE(has(args(q, k103), "--minShapes='in:0':1x2"));
}

TEST(TrtexecArgs, CachesLevelsAndMemory) {
  BuildConfig c{.workspace = (3u << 19), .optimization_level = 5, .timing_cache = "/tmp/t.cache"};
  c.verbose = true;
  for (const auto& v : {k86, k103, k111}) {
    const auto a = args(c, v);
    EXPECT_TRUE(has(a, "--timingCacheFile=/tmp/t.cache")) << v.str();
    EXPECT_TRUE(has(a, "--builderOptimizationLevel=5")) << v.str();
    EXPECT_TRUE(has(a, "--memPoolSize=workspace:2")) << v.str();  // 1.5 MiB, rounded up
    EXPECT_TRUE(has(a, "--verbose")) << v.str();
  }
  BuildConfig g{.timing_cache = "global"};
  const auto a = args(g, k103);
  const auto it = std::find_if(a.begin(), a.end(),
                               [](const auto& s) { return s.rfind("--timingCacheFile=", 0) == 0; });
  ASSERT_NE(it, a.end());
  EXPECT_NE(it->find("tensorrt-10.3.0.timing.cache"), std::string::npos) << *it;
}

TEST(TrtexecArgs, Dla) {
  TrtexecOptions o;
  o.dla_core = 1;
  for (const auto& v : {k86, k103, TrtVersion{10, 7, 0}, k1141}) {
    const auto a = args({.fp16 = v.major < 11}, v, o);
    EXPECT_TRUE(has(a, "--useDLACore=1")) << v.str();
    EXPECT_TRUE(has(a, "--allowGPUFallback")) << v.str();
  }
  expect_error({}, k108, ErrorCode::kNotSupported, "10.7 was the last 10.x release with DLA", o);
  expect_error({}, k111, ErrorCode::kNotSupported, "has no DLA support", o);
  expect_error({}, TrtVersion{11, 4, 0}, ErrorCode::kNotSupported, "has no DLA support", o);
}

TEST(TrtexecCommand, ShellQuoting) {
  EXPECT_EQ(shell_command("/usr/bin/trtexec", {"--onnx=a b.onnx", "--fp16", "--x=it's"}),
            "/usr/bin/trtexec '--onnx=a b.onnx' --fp16 '--x=it'\\''s'");
}

TEST(TrtexecResult, ErrorMapping) {
  EXPECT_NO_THROW(check_trtexec_result(0, "&&&& PASSED", {}));
  const std::string out =
      "[I] Building\n[E] Error[9]: IBuilder::buildSerializedNetwork: Error Code 9: API Usage "
      "Error (...)\n&&&& FAILED\n";
  try {
    check_trtexec_result(1, out, {.int8 = true, .fp8 = true});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_EQ(std::string(e.what()).rfind(
                  "INT8+FP8 mixed precision on Blackwell requires strongly_typed=True", 0),
              0u)
        << e.what();
  }
  // Without int8 + fp8, trtexec's own error lines are quoted.
  try {
    check_trtexec_result(1, out, {.fp16 = true});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
    EXPECT_NE(std::string(e.what()).find("Error Code 9: API Usage Error"), std::string::npos);
  }
}

// A fake trtexec on PATH: prints TensorRT's banner for `version`, records its arguments, writes
// the engine (or fails with `fail_text`).
class FakeTrtexec : public TrtexecFiles {
 protected:
  void install(const std::string& version, const std::string& fail_text = "") {
    const fs::path bin = dir_ / "bin";
    fs::create_directories(bin);
    std::string script = "#!/bin/sh\necho \"&&&& RUNNING TensorRT.trtexec [TensorRT v" + version +
                         "] [b1] # trtexec $*\"\necho \"$@\" > \"" + (dir_ / "args.txt").string() +
                         "\"\n";
    if (!fail_text.empty()) {
      script += "echo \"" + fail_text + "\"\nexit 1\n";
    } else {
      script +=
          "for a in \"$@\"; do case \"$a\" in --saveEngine=*) printf plan > "
          "\"${a#--saveEngine=}\";; "
          "esac; done\necho \"&&&& PASSED\"\n";
    }
    const fs::path exe = bin / "trtexec";
    std::ofstream(exe) << script;
    fs::permissions(exe, fs::perms::owner_all);
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", (bin.string() + ":" + old_path_).c_str(), 1);
    ir::GraphBuilder b("m");
    auto x = b.input("x", DataType::kFloat32, {1, 4});
    b.output(b.node("Relu", {x}, {}, 1, "", "relu")[0], DataType::kFloat32);
    onnx_ = dir_ / "m.onnx";
    onnx_io::save_model(b.build(17), onnx_);
  }
  void TearDown() override {
    if (!old_path_.empty()) ::setenv("PATH", old_path_.c_str(), 1);
    TrtexecFiles::TearDown();
  }
  std::string recorded() const { return read_file(dir_ / "args.txt"); }
  std::string old_path_;
  fs::path onnx_;
};

TEST_F(FakeTrtexec, FindsVersionAndBuilds) {
  install("100300");
  const auto exe = find_trtexec();
  ASSERT_TRUE(exe.has_value());
  EXPECT_EQ(*exe, dir_ / "bin" / "trtexec");
  EXPECT_EQ(query_trtexec_version(*exe).str(), "10.3.0");
  const fs::path out = dir_ / "m.engine";
  const auto r = builder::build_with_trtexec(onnx_, out, {.fp16 = true}, false, 0);
  EXPECT_EQ(r.engine_path, out);
  EXPECT_EQ(read_file(out), "plan");
  const std::string a = recorded();
  EXPECT_NE(a.find("--fp16"), std::string::npos) << a;
  EXPECT_NE(a.find("--useDLACore=0 --allowGPUFallback"), std::string::npos) << a;
  // Only the engine is left (no temporary).
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.path().extension() == ".engine";
  EXPECT_EQ(files, 1);
}

TEST_F(FakeTrtexec, DryRunPrintsTheCommand) {
  install("100700");
  const fs::path out = dir_ / "m.engine";
  ::testing::internal::CaptureStdout();
  (void)builder::build_with_trtexec(onnx_, out, {.strongly_typed = true}, true);
  const std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("trtexec --onnx=" + onnx_.string()), std::string::npos) << printed;
  EXPECT_NE(printed.find("--stronglyTyped"), std::string::npos) << printed;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(recorded(), "--help\n");  // only the version query ran
}

TEST_F(FakeTrtexec, ErrorCode9AndNothingLeft) {
  install("100800", "[E] Error[9]: Error Code 9: API Usage Error (int8 + fp8)");
  const fs::path out = dir_ / "m.engine";
  try {
    builder::build_with_trtexec(onnx_, out, {.int8 = true, .fp8 = true}, false);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig) << e.what();
    EXPECT_NE(std::string(e.what()).find("INT8+FP8 mixed precision on Blackwell"),
              std::string::npos);
  }
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find("m.engine"), std::string::npos) << e.path();
}

TEST_F(FakeTrtexec, OldTensorRtRefusesStrongTyping) {
  install("8601");
  try {
    builder::build_with_trtexec(onnx_, dir_ / "m.engine", {.strongly_typed = true}, false);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "Installed TensorRT does not support strongly-typed networks", 0),
              0u)
        << e.what();
  }
}

TEST_F(FakeTrtexec, BuildDlaCliDryRun) {
  install("100300");
  // PATH (with the fake first) is inherited by the CLI.
  const auto r = test_util::run_command(
      std::string(TRTUTILS_CLI) + " build_dla --onnx " + onnx_.string() + " --output " +
      (dir_ / "x.engine").string() + " --dla_core 1 --backend tensorrt --dry_run");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--fp16"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--useDLACore=1 --allowGPUFallback"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "x.engine"));
}

// The real thing, where TensorRT is installed.
TEST(TrtexecIntegration, BuildsWithRealTrtexec) {
  const auto exe = find_trtexec();
  if (!exe)
    GTEST_SKIP() << "trtexec not found on PATH, in /usr/src/tensorrt/bin or $TENSORRT_ROOT/bin: "
                    "TensorRT is not installed on this machine, so the hand-off is only tested "
                    "against a fake trtexec here";
  const fs::path dir =
      fs::temp_directory_path() / ("trtutils_real_trtexec_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ir::GraphBuilder b("m");
  auto x = b.input("x", DataType::kFloat32, {1, 4, 8, 8});
  b.output(b.node("Relu", {x}, {}, 1, "", "relu")[0], DataType::kFloat32);
  onnx_io::save_model(b.build(17), dir / "m.onnx");
  const auto v = query_trtexec_version(*exe);
  BuildConfig c;
  c.fp16 = v.major < 11;
  const auto r = builder::build_with_trtexec(dir / "m.onnx", dir / "m.engine", c, false);
  EXPECT_GT(fs::file_size(r.engine_path), 0u);
  fs::remove_all(dir);
}

// build_yolo --backend tensorrt: the model handed to trtexec carries TensorRT's EfficientNMS_TRT
// plugin node (kept beside the engine), and --dry_run prints the command.
class FakeTrtexecYolo : public FakeTrtexec {
 protected:
  fs::path boxes_scores_model() {
    ir::GraphBuilder b("yolo_pair");
    auto x = b.input("images", DataType::kFloat32, {1, 3, 8, 8});
    auto m = b.node("ReduceMean", {x}, {ir::attr_int("keepdims", 0)})[0];
    auto bx = b.initializer("bx", Tensor(DataType::kFloat32, {1, 6, 4}));
    auto sc = b.initializer("sc", Tensor(DataType::kFloat32, {1, 6, 2}));
    b.output(b.node_with_outputs("Add", {bx, m}, {"boxes"})[0], DataType::kFloat32,
             ir::SymShape{1, 6, 4});
    b.output(b.node_with_outputs("Add", {sc, m}, {"scores"})[0], DataType::kFloat32,
             ir::SymShape{1, 6, 2});
    const fs::path p = dir_ / "yolo.onnx";
    onnx_io::save_model(b.build(17), p);
    return p;
  }
};

TEST_F(FakeTrtexecYolo, WritesThePluginModelAndBuilds) {
  install("100300");
  const fs::path onnx = boxes_scores_model();
  const fs::path out = dir_ / "det.engine";
  const auto r = builder::build_yolo_engine(
      onnx, out, {.num_classes = 2, .conf_threshold = 0.3f, .top_k = 5, .box_coding = "corner"},
      {.fp16 = true, .backend = "tensorrt"});
  EXPECT_EQ(r.layout, "boxes_scores");
  EXPECT_EQ(read_file(out), "plan");
  const fs::path nms = dir_ / "det_nms.onnx";
  EXPECT_NE(recorded().find("--onnx=" + nms.string()), std::string::npos) << recorded();
  const ir::Model m = onnx_io::load_model(nms);
  const ir::Node* plugin = nullptr;
  for (const auto& n : m.graph.nodes)
    if (n.op_type == "EfficientNMS_TRT") plugin = &n;
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->domain, "");
  EXPECT_EQ(plugin->attr_int("max_output_boxes", 0), 5);
  EXPECT_EQ(plugin->attr_int("background_class", 0), -1);
  EXPECT_EQ(plugin->attr_int("box_coding", -1), 0);
  EXPECT_FLOAT_EQ(plugin->attr_float("score_threshold", 0), 0.3f);
  EXPECT_EQ(plugin->attr_string("plugin_version", ""), "1");
  for (const auto& o : m.opset_imports) EXPECT_NE(o.domain, "com.trtutils");
  ASSERT_EQ(m.graph.outputs.size(), 4u);
  EXPECT_EQ(m.graph.outputs[0].name, "num_dets");
}

TEST_F(FakeTrtexecYolo, CliDryRunPrintsTheCommand) {
  install("100300");
  const fs::path onnx = boxes_scores_model();
  const auto r =
      test_util::run_command(std::string(TRTUTILS_CLI) + " build_yolo --onnx " + onnx.string() +
                             " --output " + (dir_ / "d.engine").string() +
                             " --num_classes 2 --box_coding corner --backend tensorrt "
                             "--dry_run --fp16");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("trtexec --onnx=" + (dir_ / "d_nms.onnx").string()), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--fp16"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "d_nms.onnx"));
  EXPECT_FALSE(fs::exists(dir_ / "d.engine"));
}

// --trt_version: the command for that TensorRT, not for the installed (fake) 10.3.
TEST_F(FakeTrtexecYolo, CliDryRunForAGivenVersion) {
  install("100300");
  const fs::path onnx = boxes_scores_model();
  const auto r = test_util::run_command(
      std::string(TRTUTILS_CLI) + " build_yolo --onnx " + onnx.string() + " --output " +
      (dir_ / "d.engine").string() +
      " --num_classes 2 --box_coding corner --backend tensorrt --dry_run --trt_version 11.0");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("trtexec --onnx=" + (dir_ / "d_nms.onnx").string()), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("TensorRT 11.0.0 builds every network strongly typed"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "args.txt"));  // the installed trtexec was not run
  EXPECT_FALSE(fs::exists(dir_ / "d.engine"));
}

}  // namespace
}  // namespace trtutils::tensorrt
