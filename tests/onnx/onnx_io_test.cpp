#include "onnx/onnx_io.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include "ir/graph_builder.h"
#include "trtutils/file_util.h"
#include "trtutils/status.h"

namespace trtutils::onnx_io {
namespace {

namespace fs = std::filesystem;
using ir::attr_float;
using ir::attr_floats;
using ir::attr_int;
using ir::attr_ints;
using ir::attr_string;
using ir::attr_strings;
using ir::attr_tensor;
using ir::Dim;
using ir::GraphBuilder;

const fs::path kOnnxData = "/usr/include/onnx/backend/test/data";

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            fmt::format("trtutils_{}_{}_{}", info->test_suite_name(), info->name(), ::getpid());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs f, expects a trtutils::Error with `code` whose message contains every needle.
template <typename F>
void expect_error(F&& f, ErrorCode code, std::initializer_list<std::string_view> needles) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (auto n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

// Deterministic, non-trivial bytes (NaN payloads included for float types).
Tensor patterned(DataType dtype, Shape shape, uint32_t seed) {
  Tensor t(dtype, std::move(shape));
  std::mt19937 rng(seed);
  auto* p = t.data<uint8_t>();
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(rng());
  if (dtype == DataType::kBool)
    for (size_t i = 0; i < t.nbytes(); ++i) p[i] &= 1;
  if ((dtype == DataType::kInt4 || dtype == DataType::kUInt4) && t.numel() % 2)
    p[t.nbytes() - 1] &= 0x0f;
  return t;
}

void expect_bit_equal(const Tensor& a, const Tensor& b, const std::string& what) {
  EXPECT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.nbytes(), b.nbytes()) << what;
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << what;
}

struct WeightCase {
  const char* name;
  DataType dtype;
  Shape shape;
};
const WeightCase kWeights[] = {
    {"w_f32", DataType::kFloat32, {4, 3, 3, 3}},
    {"w_f16", DataType::kFloat16, {5, 7}},
    {"w_bf16", DataType::kBFloat16, {3}},
    {"w_f64", DataType::kFloat64, {2, 2}},
    {"w_i8", DataType::kInt8, {17}},
    {"w_u8", DataType::kUInt8, {2, 3}},
    {"w_i16", DataType::kInt16, {3}},
    {"w_u16", DataType::kUInt16, {3}},
    {"w_i32", DataType::kInt32, {4}},
    {"w_u32", DataType::kUInt32, {4}},
    {"w_i64", DataType::kInt64, {6}},
    {"w_u64", DataType::kUInt64, {2}},
    {"w_bool", DataType::kBool, {5}},
    {"w_i4", DataType::kInt4, {3, 5}},
    {"w_u4", DataType::kUInt4, {4}},
    {"w_e4m3", DataType::kFloat8E4M3FN, {9}},
    {"w_e5m2", DataType::kFloat8E5M2, {2, 4}},
    {"w_scalar", DataType::kFloat32, {}},
    {"w_empty", DataType::kFloat32, {0, 3}},
};

// A model exercising every IR feature the file format carries.
ir::Model make_full_model() {
  GraphBuilder b("full");
  const auto x = b.input("x", DataType::kFloat32, {Dim("batch"), 3, Dim(), 8});
  const auto cond = b.input("cond", DataType::kBool, {});
  uint32_t seed = 1;
  for (const auto& w : kWeights) b.initializer(w.name, patterned(w.dtype, w.shape, seed++));
  const auto conv =
      b.node("Conv", {x, "w_f32", ""},
             {attr_ints("pads", {1, 1, 1, 1}), attr_int("group", 1), attr_float("alpha", 0.25f),
              attr_floats("scales", {1.5f, -0.0f}), attr_string("mode", std::string("a\0b", 3)),
              attr_strings("names", {"p", "", "q"}),
              attr_tensor("t", patterned(DataType::kFloat16, {2, 2}, 99))});
  GraphBuilder then_b("then");
  then_b.initializer("k", patterned(DataType::kFloat32, {2}, 7));
  then_b.node_with_outputs("Add", {"k", conv[0]}, {"then_out"});  // outer-scope reference
  then_b.output("then_out", DataType::kFloat32, ir::SymShape{2});
  GraphBuilder else_b("else");
  else_b.node_with_outputs("Identity", {conv[0]}, {"else_out"});
  else_b.output("else_out");
  const auto y = b.node("If", {cond},
                        {ir::attr_graph("then_branch", then_b.build_graph()),
                         ir::attr_graph("else_branch", else_b.build_graph())});
  const auto z = b.node("Custom", {y[0], "w_i4", "w_e4m3"}, {}, 2, "com.example");
  b.output(z[0], DataType::kFloat32, ir::SymShape{Dim("batch"), 4});
  b.output(z[1]);
  ir::Model m = b.build(17, {{"com.example", 1}});
  m.graph.value_info[conv[0]] = {conv[0], DataType::kFloat32,
                                 ir::SymShape{Dim("batch"), 4, Dim(), 8}, "conv out"};
  m.graph.value_info["unranked"] = {"unranked", DataType::kInt64, std::nullopt, {}};
  m.graph.doc_string = "graph doc";
  m.graph.nodes[0].doc_string = "conv doc";
  m.producer_name = "trtutils-test";
  m.producer_version = "1.2";
  m.domain = "org.example";
  m.model_version = 3;
  m.doc_string = "model doc";
  m.metadata_props = {{"k1", "v1"}, {"k2", ""}};
  return m;
}

void expect_graph_equal(const ir::Graph& a, const ir::Graph& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.doc_string, b.doc_string);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    EXPECT_EQ(a.inputs[i].name, b.inputs[i].name);
    EXPECT_EQ(a.inputs[i].dtype, b.inputs[i].dtype);
    EXPECT_EQ(a.inputs[i].shape, b.inputs[i].shape) << a.inputs[i].name;
  }
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    EXPECT_EQ(a.outputs[i].name, b.outputs[i].name);
    EXPECT_EQ(a.outputs[i].dtype, b.outputs[i].dtype);
    EXPECT_EQ(a.outputs[i].shape, b.outputs[i].shape) << a.outputs[i].name;
  }
  ASSERT_EQ(a.value_info.size(), b.value_info.size());
  for (const auto& [n, v] : a.value_info) {
    ASSERT_TRUE(b.value_info.count(n)) << n;
    EXPECT_EQ(v.dtype, b.value_info.at(n).dtype) << n;
    EXPECT_EQ(v.shape, b.value_info.at(n).shape) << n;
    EXPECT_EQ(v.doc_string, b.value_info.at(n).doc_string) << n;
  }
  ASSERT_EQ(a.initializers.size(), b.initializers.size());
  for (const auto& [n, t] : a.initializers) {
    ASSERT_TRUE(b.is_initializer(n)) << n;
    expect_bit_equal(t, *b.initializer(n), n);
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const ir::Node& na = a.nodes[i];
    const ir::Node& nb = b.nodes[i];
    EXPECT_EQ(na.name, nb.name);
    EXPECT_EQ(na.op_type, nb.op_type);
    EXPECT_EQ(na.domain, nb.domain);
    EXPECT_EQ(na.inputs, nb.inputs);
    EXPECT_EQ(na.outputs, nb.outputs);
    EXPECT_EQ(na.doc_string, nb.doc_string);
    ASSERT_EQ(na.attributes.size(), nb.attributes.size()) << na.describe();
    for (const auto& [n, x] : na.attributes) {
      ASSERT_TRUE(nb.has_attr(n)) << n;
      const ir::Attribute& y = *nb.attr(n);
      EXPECT_EQ(x.kind, y.kind) << n;
      EXPECT_EQ(x.i, y.i) << n;
      EXPECT_EQ(std::memcmp(&x.f, &y.f, 4), 0) << n;
      EXPECT_EQ(x.s, y.s) << n;
      EXPECT_EQ(x.ints, y.ints) << n;
      ASSERT_EQ(x.floats.size(), y.floats.size()) << n;
      if (!x.floats.empty()) {
        EXPECT_EQ(std::memcmp(x.floats.data(), y.floats.data(), x.floats.size() * 4), 0) << n;
      }
      EXPECT_EQ(x.strings, y.strings) << n;
      if (x.kind == ir::Attribute::Kind::kTensor) expect_bit_equal(x.t, y.t, n);
      if (x.kind == ir::Attribute::Kind::kGraph) expect_graph_equal(*x.g, *y.g);
    }
  }
}

void expect_model_equal(const ir::Model& a, const ir::Model& b) {
  EXPECT_EQ(a.producer_name, b.producer_name);
  EXPECT_EQ(a.producer_version, b.producer_version);
  EXPECT_EQ(a.domain, b.domain);
  EXPECT_EQ(a.model_version, b.model_version);
  EXPECT_EQ(a.doc_string, b.doc_string);
  EXPECT_EQ(a.metadata_props, b.metadata_props);
  ASSERT_EQ(a.opset_imports.size(), b.opset_imports.size());
  for (size_t i = 0; i < a.opset_imports.size(); ++i) {
    EXPECT_EQ(a.opset_imports[i].domain, b.opset_imports[i].domain);
    EXPECT_EQ(a.opset_imports[i].version, b.opset_imports[i].version);
  }
  expect_graph_equal(a.graph, b.graph);
}

TEST(OnnxIo, SaveLoadRoundTripIsBitExact) {
  TempDir dir;
  const ir::Model m = make_full_model();
  const fs::path file = dir.path() / "full.onnx";
  save_model(m, file);
  EXPECT_FALSE(fs::exists(dir.path() / "full.onnx.data"));
  const ir::Model r = load_model(file);
  EXPECT_EQ(r.ir_version, 10);  // int4 needs IR 10
  expect_model_equal(m, r);
  // In memory too, and a second save gives the same bytes (deterministic output).
  const ir::Model r2 = load_model_from_bytes(serialize_model(m), "");
  expect_model_equal(m, r2);
  EXPECT_EQ(serialize_model(r), serialize_model(r2));
  // Nothing but the model is left in the folder (no temporary files).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(OnnxIo, TypedTensorFieldsFollowTheSpec) {
  auto load = [](const onnx::TensorProto& p) {
    std::string bytes;
    p.SerializeToString(&bytes);
    return tensor_from_proto_bytes(bytes);
  };
  onnx::TensorProto f;
  f.set_name("f");
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(2);
  f.add_float_data(1.5f);
  f.add_float_data(-2.0f);
  EXPECT_EQ(load(f).to_float_vector(), (std::vector<float>{1.5f, -2.0f}));

  onnx::TensorProto h;  // fp16 bit patterns in int32_data
  h.set_data_type(onnx::TensorProto::FLOAT16);
  h.add_dims(2);
  h.add_int32_data(0x3c00);
  h.add_int32_data(0xc000);
  EXPECT_EQ(load(h).to_float_vector(), (std::vector<float>{1.0f, -2.0f}));

  onnx::TensorProto bf;
  bf.set_data_type(onnx::TensorProto::BFLOAT16);
  bf.add_int32_data(0x3fc0);  // scalar 1.5
  const Tensor bft = load(bf);
  EXPECT_EQ(bft.shape(), Shape{});
  EXPECT_EQ(bft.at_double(0), 1.5);

  onnx::TensorProto i4;  // int4 [1, -2, 3]: packed pairs, the first in the low nibble
  i4.set_data_type(22);
  i4.add_dims(3);
  i4.add_int32_data(0xe1);
  i4.add_int32_data(0x03);
  EXPECT_EQ(load(i4).to_int64_vector(), (std::vector<int64_t>{1, -2, 3}));

  onnx::TensorProto e4;
  e4.set_data_type(17);
  e4.add_dims(1);
  e4.add_int32_data(0x7e);
  EXPECT_EQ(load(e4).at_double(0), 448.0);

  onnx::TensorProto b;
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(3);
  for (int v : {0, 1, 5}) b.add_int32_data(v);
  EXPECT_EQ(load(b).to_int64_vector(), (std::vector<int64_t>{0, 1, 1}));

  onnx::TensorProto i8;
  i8.set_data_type(onnx::TensorProto::INT8);
  i8.add_dims(2);
  i8.add_int32_data(-128);
  i8.add_int32_data(127);
  EXPECT_EQ(load(i8).to_int64_vector(), (std::vector<int64_t>{-128, 127}));

  onnx::TensorProto u32;
  u32.set_data_type(onnx::TensorProto::UINT32);
  u32.add_dims(1);
  u32.add_uint64_data(4000000000u);
  EXPECT_EQ(load(u32).at_double(0), 4000000000.0);

  onnx::TensorProto i64;
  i64.set_data_type(onnx::TensorProto::INT64);
  i64.add_dims(2);
  i64.add_int64_data(-5);
  i64.add_int64_data(int64_t{1} << 40);
  EXPECT_EQ(load(i64).to_int64_vector(), (std::vector<int64_t>{-5, int64_t{1} << 40}));

  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_dims(1);
  d.add_double_data(1e300);
  EXPECT_EQ(load(d).at_double(0), 1e300);

  // Round trip through tensor_to_proto_bytes.
  const Tensor p = patterned(DataType::kInt4, {7}, 3);
  std::string name;
  expect_bit_equal(tensor_from_proto_bytes(tensor_to_proto_bytes(p, "p"), &name), p, "int4");
  EXPECT_EQ(name, "p");
}

TEST(OnnxIo, MalformedTensorsAreRefusedBeforeAllocating) {
  auto load = [](const onnx::TensorProto& p) {
    std::string bytes;
    p.SerializeToString(&bytes);
    return tensor_from_proto_bytes(bytes);
  };
  onnx::TensorProto t;
  t.set_name("bad");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(3);
  t.add_float_data(1);
  expect_error([&] { load(t); }, ErrorCode::kInvalidArgument, {"'bad'", "float_data has 1 values"});
  t.clear_float_data();
  t.set_raw_data(std::string(8, '\0'));
  expect_error([&] { load(t); }, ErrorCode::kInvalidArgument, {"'bad'", "raw_data has 8 bytes"});
  t.set_dims(0, -3);
  expect_error([&] { load(t); }, ErrorCode::kInvalidArgument, {"'bad'", "negative"});
  t.set_dims(0, int64_t{1} << 40);  // 4 TiB promised, 8 bytes given: no allocation attempted
  t.add_dims(int64_t{1} << 20);
  expect_error([&] { load(t); }, ErrorCode::kInvalidArgument, {"'bad'"});
  t.clear_dims();
  t.set_data_type(onnx::TensorProto::STRING);
  expect_error([&] { load(t); }, ErrorCode::kNotSupported, {"'bad'", "string"});
  t.set_data_type(onnx::TensorProto::COMPLEX64);
  expect_error([&] { load(t); }, ErrorCode::kNotSupported, {"'bad'", "complex"});
  t.set_data_type(0);
  expect_error([&] { load(t); }, ErrorCode::kInvalidArgument, {"'bad'", "data_type"});
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  expect_error([&] { load(t); }, ErrorCode::kInvalidArgument, {"'bad'"});
  expect_error([] { tensor_from_proto_bytes("\xff\xff\xff garbage"); }, ErrorCode::kInvalidArgument,
               {"TensorProto"});
}

TEST(OnnxIo, ConstantNodesBecomeInitializers) {
  GraphBuilder b("consts");
  const auto x = b.input("x", DataType::kFloat32, {3});
  const Tensor tv = Tensor::from_vector<float>(DataType::kFloat32, {3}, {1, 2, 3});
  b.node_with_outputs("Constant", {}, {"c_t"}, {attr_tensor("value", tv)});
  b.node_with_outputs("Constant", {}, {"c_f"}, {attr_float("value_float", 2.5f)});
  b.node_with_outputs("Constant", {}, {"c_fs"}, {attr_floats("value_floats", {1, -1})});
  b.node_with_outputs("Constant", {}, {"c_i"}, {attr_int("value_int", -7)});
  b.node_with_outputs("Constant", {}, {"c_is"}, {attr_ints("value_ints", {4, 5, 6})});
  b.node_with_outputs("Sum", {x, "c_t", "c_f", "c_fs", "c_i", "c_is"}, {"y"});
  b.output("y", DataType::kFloat32);
  b.output("c_i");  // a constant that is also a graph output stays available
  const ir::Model m = load_model_from_bytes(serialize_model(b.build(13)), "");
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].op_type, "Sum");
  ASSERT_EQ(m.graph.initializers.size(), 5u);
  expect_bit_equal(*m.graph.initializer("c_t"), tv, "c_t");
  EXPECT_EQ(m.graph.initializer("c_f")->shape(), Shape{});
  EXPECT_EQ(m.graph.initializer("c_f")->to_float_vector(), std::vector<float>{2.5f});
  EXPECT_EQ(m.graph.initializer("c_fs")->to_float_vector(), (std::vector<float>{1, -1}));
  EXPECT_EQ(m.graph.initializer("c_i")->dtype(), DataType::kInt64);
  EXPECT_EQ(m.graph.initializer("c_i")->shape(), Shape{});
  EXPECT_EQ(m.graph.initializer("c_i")->to_int64_vector(), std::vector<int64_t>{-7});
  EXPECT_EQ(m.graph.initializer("c_is")->to_int64_vector(), (std::vector<int64_t>{4, 5, 6}));

  GraphBuilder s;
  s.node_with_outputs("Constant", {}, {"c"}, {attr_string("value_string", "hi")});
  s.output("c");
  expect_error([&] { load_model_from_bytes(serialize_model(s.build(13)), ""); },
               ErrorCode::kNotSupported, {"Constant", "string"});
}

TEST(OnnxIo, InitializersListedAsInputsAreConstants) {
  GraphBuilder b;
  b.input("x", DataType::kFloat32, {2});
  b.initializer("w", patterned(DataType::kFloat32, {2}, 5));
  b.node_with_outputs("Add", {"x", "w"}, {"y"});
  b.output("y", DataType::kFloat32);
  ir::Model m = b.build(8);
  m.ir_version = 3;
  m.graph.inputs.push_back({"w", DataType::kFloat32, ir::SymShape{2}, {}});  // IR 3 style
  const ir::Model r = load_model_from_bytes(serialize_model(m), "");
  ASSERT_EQ(r.graph.inputs.size(), 1u);
  EXPECT_EQ(r.graph.inputs[0].name, "x");
  EXPECT_TRUE(r.graph.is_initializer("w"));
}

TEST(OnnxIo, ExternalDataRoundTrip) {
  TempDir dir;
  const ir::Model m = make_full_model();
  const fs::path file = dir.path() / "ext.onnx";
  save_model(m, file, SaveOptions{.external_data_threshold = 16});
  ASSERT_TRUE(fs::exists(dir.path() / "ext.onnx.data"));
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(read_file(file)));
  int external = 0;
  for (const auto& t : proto.graph().initializer()) {
    const bool big = m.graph.initializer(t.name())->nbytes() > 16;
    EXPECT_EQ(t.data_location() == onnx::TensorProto::EXTERNAL, big) << t.name();
    EXPECT_EQ(t.has_raw_data(), !big) << t.name();
    external += big;
  }
  EXPECT_EQ(external, 5);  // f32, f16, f64, i8 (17 bytes), i64
  expect_model_equal(m, load_model(file));
  // Loaded through a relative path (the model folder is then relative too).
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  EXPECT_NO_THROW(load_model("ext.onnx"));
  fs::current_path(cwd);
  // From memory there is no folder to read from.
  expect_error([&] { load_model_from_bytes(read_file(file), ""); }, ErrorCode::kInvalidArgument,
               {"external data", "ext.onnx.data", "load_model(path)"});
  // The byte budget covers the external data.
  expect_error([&] { load_model(file, LoadOptions{.max_bytes = fs::file_size(file) + 100}); },
               ErrorCode::kOutOfRange, {"limit"});
}

// Saves `m` with external data, then rewrites the location (and optionally offset/length) of
// initializer `name` and returns the model path.
fs::path save_with_location(const fs::path& dir, const std::string& name, const std::string& loc,
                            const std::string& offset = "", const std::string& length = "") {
  GraphBuilder b;
  b.input("x", DataType::kFloat32, {64});
  b.initializer(name, patterned(DataType::kFloat32, {64}, 11));
  b.node_with_outputs("Add", {"x", name}, {"y"});
  b.output("y", DataType::kFloat32);
  const fs::path file = dir / "m.onnx";
  save_model(b.build(17), file, SaveOptions{.external_data_threshold = 1});
  onnx::ModelProto proto;
  EXPECT_TRUE(proto.ParseFromString(read_file(file)));
  auto* t = proto.mutable_graph()->mutable_initializer(0);
  for (auto& kv : *t->mutable_external_data()) {
    if (kv.key() == "location") kv.set_value(loc);
    if (kv.key() == "offset" && !offset.empty()) kv.set_value(offset);
    if (kv.key() == "length" && !length.empty()) kv.set_value(length);
  }
  write_file_atomic(file, proto.SerializeAsString());
  return file;
}

TEST(OnnxIo, ExternalDataMustStayInsideTheModelFolder) {
  TempDir root;
  const fs::path dir = root.path() / "model";
  fs::create_directories(dir / "sub");
  // A real data file outside the model folder, with the right size.
  write_file_atomic(root.path() / "x.data", std::string(64 * 4, '\1'));
  const std::string abs = (root.path() / "x.data").string();
  for (const std::string& loc : {std::string("../x.data"), std::string("sub/../../x.data"), abs,
                                 std::string("..\\x.data")}) {
    const fs::path file = save_with_location(dir, "weight", loc);
    expect_error([&] { load_model(file); }, ErrorCode::kInvalidArgument,
                 {"'weight'", loc, "external data must be inside the model folder"});
  }
  // A symlink inside the folder that points outside it.
  fs::create_symlink(root.path() / "x.data", dir / "link.data");
  const fs::path file = save_with_location(dir, "weight", "link.data");
  expect_error([&] { load_model(file); }, ErrorCode::kInvalidArgument,
               {"'weight'", "link.data", "external data must be inside the model folder"});
  // A symlinked subfolder leaving the model folder, too.
  fs::create_directory_symlink(root.path(), dir / "up");
  expect_error([&] { load_model(save_with_location(dir, "weight", "up/x.data")); },
               ErrorCode::kInvalidArgument, {"'weight'", "inside the model folder"});
  // A symlink that stays inside is fine.
  fs::rename(dir / "m.onnx.data", dir / "sub" / "real.data");
  fs::create_symlink(dir / "sub" / "real.data", dir / "inside.data");
  EXPECT_NO_THROW(load_model(save_with_location(dir, "weight", "inside.data")));
  EXPECT_NO_THROW(load_model(save_with_location(dir, "weight", "sub/real.data")));
  // A missing file is an I/O error naming the file.
  expect_error([&] { load_model(save_with_location(dir, "weight", "missing.data")); },
               ErrorCode::kIO, {"'weight'", "missing.data"});
}

TEST(OnnxIo, ExternalDataRangesAreChecked) {
  TempDir dir;
  // Offset/length past the end of the data file, wrong length, junk numbers.
  expect_error([&] { load_model(save_with_location(dir.path(), "wt", "m.onnx.data", "300")); },
               ErrorCode::kInvalidArgument, {"'wt'", "offset"});
  expect_error(
      [&] { load_model(save_with_location(dir.path(), "wt", "m.onnx.data", "64", "256")); },
      ErrorCode::kInvalidArgument, {"'wt'", "past the end"});
  expect_error([&] { load_model(save_with_location(dir.path(), "wt", "m.onnx.data", "0", "128")); },
               ErrorCode::kInvalidArgument, {"'wt'", "length is 128 bytes"});
  expect_error([&] { load_model(save_with_location(dir.path(), "wt", "m.onnx.data", "-1")); },
               ErrorCode::kInvalidArgument, {"'wt'", "offset"});
  expect_error([&] { load_model(save_with_location(dir.path(), "wt", "m.onnx.data", "0", "12x")); },
               ErrorCode::kInvalidArgument, {"'wt'", "length"});
  EXPECT_NO_THROW(load_model(save_with_location(dir.path(), "wt", "m.onnx.data", "0", "256")));
}

TEST(OnnxIo, TruncatedAndGarbageFilesAreRefused) {
  TempDir dir;
  const std::string bytes = serialize_model(make_full_model());
  // Every prefix either loads (a cut exactly between trailing fields) or throws
  // kInvalidArgument; none crashes.
  int refused = 0;
  for (size_t n = 0; n < bytes.size(); n += (n < 64 ? 1 : 7)) {
    try {
      load_model_from_bytes(bytes.substr(0, n), "");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << n << ": " << e.what();
      ++refused;
    }
  }
  EXPECT_GT(refused, 10);
  const fs::path cut = dir.path() / "cut.onnx";
  write_file_atomic(cut, bytes.substr(0, bytes.size() / 2));
  expect_error([&] { load_model(cut); }, ErrorCode::kInvalidArgument,
               {cut.string(), "is not a valid ONNX model (protobuf parse failed)"});
  const fs::path text = dir.path() / "text.onnx";
  write_file_atomic(text, "this is certainly not an ONNX model\n");
  expect_error([&] { load_model(text); }, ErrorCode::kInvalidArgument,
               {"is not a valid ONNX model"});
  const fs::path empty = dir.path() / "empty.onnx";
  write_file_atomic(empty, "");
  expect_error([&] { load_model(empty); }, ErrorCode::kInvalidArgument,
               {"is not a valid ONNX model"});
  expect_error([&] { load_model(dir.path() / "nope.onnx"); }, ErrorCode::kIO, {"nope.onnx"});
  // Random bytes and random byte flips: a clean Error, never a crash.
  std::mt19937 rng(42);
  for (int i = 0; i < 300; ++i) {
    std::string g;
    if (i % 2) {
      g.resize(rng() % 2000);
      for (auto& c : g) c = static_cast<char>(rng());
    } else {
      g = bytes;
      for (int k = 0; k < 4; ++k) g[rng() % g.size()] = static_cast<char>(rng());
    }
    try {
      load_model_from_bytes(g, dir.path());
    } catch (const Error& e) {
      EXPECT_NE(e.code(), ErrorCode::kInternal) << e.what();
    }
  }
}

TEST(OnnxIo, OpsetRangeIsEnforced) {
  GraphBuilder b;
  b.input("x", DataType::kFloat32, {2});
  b.node_with_outputs("Relu", {"x"}, {"y"});
  b.output("y", DataType::kFloat32);
  for (int64_t opset : {6, 22}) {
    const std::string needle = fmt::format("opset {};", opset);
    expect_error([&] { load_model_from_bytes(serialize_model(b.build(opset)), ""); },
                 ErrorCode::kNotSupported, {needle, "opsets 7 to 21"});
  }
  for (int64_t opset : {7, 21})
    EXPECT_NO_THROW(load_model_from_bytes(serialize_model(b.build(opset)), ""));
  ir::Model m = b.build(13);
  m.opset_imports = {{"ai.onnx", 13}, {"com.microsoft", 1}};  // "ai.onnx" is the default domain
  EXPECT_EQ(load_model_from_bytes(serialize_model(m), "").opset(), 13);
  m.opset_imports = {{"com.microsoft", 1}};
  expect_error([&] { load_model_from_bytes(serialize_model(m), ""); }, ErrorCode::kNotSupported,
               {"no opset of the default ONNX domain"});
  m.opset_imports.clear();
  expect_error([&] { load_model_from_bytes(serialize_model(m), ""); }, ErrorCode::kInvalidArgument,
               {"no opset_import"});
}

TEST(OnnxIo, GraphIsValidatedOnLoad) {
  GraphBuilder b;
  b.input("x", DataType::kFloat32, {2});
  b.node_with_outputs("Relu", {"nowhere"}, {"y"});
  b.output("y", DataType::kFloat32);
  expect_error([&] { load_model_from_bytes(serialize_model(b.build(13)), ""); },
               ErrorCode::kInvalidArgument, {"'nowhere'"});
  GraphBuilder seq;  // non-tensor graph inputs are refused as unsupported
  seq.input("x", DataType::kFloat32, {2});
  seq.node_with_outputs("Relu", {"x"}, {"y"});
  seq.output("y", DataType::kFloat32);
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(serialize_model(seq.build(13))));
  proto.mutable_graph()->mutable_input(0)->mutable_type()->mutable_sequence_type();
  expect_error([&] { load_model_from_bytes(proto.SerializeAsString(), ""); },
               ErrorCode::kNotSupported, {"'x'", "sequence"});
}

// ---- real files from ONNX's backend test data ----

TEST(OnnxIo, LoadsOnnxBackendConvModel) {
  const fs::path p = kOnnxData / "node/test_conv_with_strides_padding/model.onnx";
  if (!fs::exists(p)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const ir::Model m = load_model(p);
  EXPECT_EQ(m.opset(), 11);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].op_type, "Conv");
  EXPECT_EQ(m.graph.nodes[0].attr_ints("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(m.graph.initializers.size(), 0u);
  ASSERT_EQ(m.graph.inputs.size(), 2u);
  EXPECT_EQ(m.graph.inputs[0].name, "x");
  EXPECT_EQ(*m.graph.inputs[0].shape, (ir::SymShape{1, 1, 7, 5}));
  EXPECT_EQ(m.graph.inputs[1].name, "W");
  ASSERT_EQ(m.graph.outputs.size(), 1u);
  const Tensor x =
      tensor_from_proto_bytes(read_file(p.parent_path() / "test_data_set_0/input_0.pb"));
  EXPECT_EQ(x.dtype(), DataType::kFloat32);
  EXPECT_EQ(x.shape(), (Shape{1, 1, 7, 5}));
}

TEST(OnnxIo, LoadsPytorchConvertedConv2d) {
  const fs::path p = kOnnxData / "pytorch-converted/test_Conv2d/model.onnx";
  if (!fs::exists(p)) GTEST_SKIP() << "libonnx-testdata is not installed";
  // The file is opset 6 (IR 3), below the supported range.
  expect_error([&] { load_model(p); }, ErrorCode::kNotSupported, {"opset 6"});
  // Declared as opset 7 (Conv is unchanged between them) it loads; its weights are IR 3
  // style initializers that are also graph inputs.
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(read_file(p)));
  proto.mutable_opset_import(0)->set_version(7);
  const ir::Model m = load_model_from_bytes(proto.SerializeAsString(), p.parent_path());
  EXPECT_EQ(m.ir_version, 3);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].op_type, "Conv");
  EXPECT_EQ(m.graph.initializers.size(), 2u);
  EXPECT_EQ(m.graph.initializer("1")->shape(), (Shape{4, 3, 3, 2}));
  EXPECT_EQ(m.graph.initializer("2")->shape(), Shape{4});
  ASSERT_EQ(m.graph.inputs.size(), 1u);
  EXPECT_EQ(m.graph.inputs[0].name, "0");
  // Saving and reloading keeps the weights bit-exact (and upgrades to IR 4).
  const ir::Model r = load_model_from_bytes(serialize_model(m), "");
  EXPECT_EQ(r.ir_version, 4);
  expect_model_equal(m, r);
}

TEST(OnnxIo, FoldsTheBackendConstantModel) {
  const fs::path p = kOnnxData / "node/test_constant/model.onnx";
  if (!fs::exists(p)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const ir::Model m = load_model(p);
  EXPECT_EQ(m.graph.nodes.size(), 0u);
  ASSERT_EQ(m.graph.outputs.size(), 1u);
  const Tensor* v = m.graph.initializer(m.graph.outputs[0].name);
  ASSERT_NE(v, nullptr);
  const Tensor expected =
      tensor_from_proto_bytes(read_file(p.parent_path() / "test_data_set_0/output_0.pb"));
  expect_bit_equal(*v, expected, "constant");
}

// Every model in the backend test data loads or is refused cleanly (never kInternal, never a
// crash), and every one that loads survives a save/load round trip unchanged.
TEST(OnnxIo, LoadsEveryBackendTestModel) {
  if (!fs::exists(kOnnxData / "node")) GTEST_SKIP() << "libonnx-testdata is not installed";
  int loaded = 0, refused = 0, inputs_checked = 0;
  std::map<std::string, int> reasons;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    for (const auto& entry : fs::directory_iterator(kOnnxData / suite)) {
      const fs::path p = entry.path() / "model.onnx";
      if (!fs::exists(p)) continue;
      try {
        const ir::Model m = load_model(p);
        ++loaded;
        expect_model_equal(m, load_model_from_bytes(serialize_model(m), ""));
        // Its test inputs parse and match the declared input types.
        for (size_t i = 0; i < m.graph.inputs.size(); ++i) {
          const fs::path pb = entry.path() / fmt::format("test_data_set_0/input_{}.pb", i);
          const ir::ValueInfo& in = m.graph.inputs[i];
          if (!fs::exists(pb) || in.dtype == DataType::kString) continue;
          std::string name;
          const Tensor t = tensor_from_proto_bytes(read_file(pb), &name);
          ++inputs_checked;
          // Known quirks of ONNX 1.12's data: bfloat16 inputs are stored as uint16 bits, and
          // CastLike's "like" input is a 1-element tensor though declared [3, 4].
          if (!(in.dtype == DataType::kBFloat16 && t.dtype() == DataType::kUInt16)) {
            EXPECT_EQ(t.dtype(), in.dtype) << pb;
          }
          const bool castlike = entry.path().filename().string().starts_with("test_castlike");
          if (in.shape && sym_shape_is_static(*in.shape) && !castlike) {
            EXPECT_EQ(t.shape(), sym_shape_to_static(*in.shape)) << pb;
          }
        }
      } catch (const Error& e) {
        ++refused;
        EXPECT_NE(e.code(), ErrorCode::kInternal) << p << ": " << e.what();
        EXPECT_NE(e.code(), ErrorCode::kIO) << p << ": " << e.what();
        ++reasons[std::string(error_code_name(e.code()))];
        if (std::getenv("SHOWREFUSED")) std::cout << e.what() << "\n";
      }
    }
  }
  // 1.12's test data: ~130 files use opset < 7; a few use sequences/optionals/strings.
  EXPECT_GT(loaded, 800);
  EXPECT_GT(inputs_checked, 1000);
  RecordProperty("loaded", loaded);
  RecordProperty("refused", refused);
  std::cout << "loaded " << loaded << ", refused " << refused << " (";
  for (const auto& [code, count] : reasons) std::cout << code << ": " << count << " ";
  std::cout << "), test inputs parsed: " << inputs_checked << "\n";
}

}  // namespace
}  // namespace trtutils::onnx_io
