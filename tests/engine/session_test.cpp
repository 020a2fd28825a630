#include "engine/session.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/nn_kernels.h"
#include "ir/graph_builder.h"
#include "trtutils/npy.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

ir::Node make_node(std::string op, std::vector<std::string> in, std::vector<std::string> out) {
  ir::Node n;
  n.op_type = std::move(op);
  n.name = n.op_type + "_" + out[0];
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// y = reshape(x + b, shape_of(x)[0], -1): the Shape -> Gather -> Concat chain folds when the
// batch is static, and is computed at run time when it is symbolic.
ir::Model add_reshape_model(ir::Dim batch) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = m.graph;
  g.inputs.push_back({"x", DataType::kFloat32, ir::SymShape{batch, 2, 3}, {}});
  g.initializers["b"] = Tensor::from_vector<float>(DataType::kFloat32, {3}, {1, 2, 3});
  g.initializers["zero"] = Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {0});
  g.initializers["minus1"] = Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {-1});
  g.nodes.push_back(make_node("Add", {"x", "b"}, {"sum"}));
  g.nodes.push_back(make_node("Shape", {"x"}, {"shape"}));
  g.nodes.push_back(make_node("Gather", {"shape", "zero"}, {"n"}));
  auto concat = make_node("Concat", {"n", "minus1"}, {"target"});
  ir::Attribute axis;
  axis.name = "axis";
  axis.kind = ir::Attribute::Kind::kInt;
  axis.i = 0;
  concat.attributes["axis"] = axis;
  g.nodes.push_back(concat);
  g.nodes.push_back(make_node("Reshape", {"sum", "target"}, {"y"}));
  g.outputs.push_back({"y", DataType::kFloat32, std::nullopt, {}});
  return m;
}

Tensor iota(Shape shape) {
  Tensor t(DataType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

TEST(Session, RunsAndFoldsShapeChainWhenStatic) {
  Session s(add_reshape_model(ir::Dim(2)));
  EXPECT_EQ(s.model().graph.nodes.size(), 2u) << "Shape/Gather/Concat should fold";
  auto out = s.run({{"x", iota({2, 2, 3})}});
  const Tensor& y = out.at("y");
  EXPECT_EQ(y.shape(), (Shape{2, 6}));
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_FLOAT_EQ(y.data<float>()[i], static_cast<float>(i + 1 + i % 3));
}

TEST(Session, KeepsSymbolicBatchAndBindsItAtRunTime) {
  Session s(add_reshape_model(ir::Dim(std::string("batch"))));
  EXPECT_EQ(s.model().graph.nodes.size(), 5u);
  for (int64_t n : {1, 3}) {
    auto out = s.run({{"x", iota({n, 2, 3})}});
    EXPECT_EQ(out.at("y").shape(), (Shape{n, 6}));
  }
}

TEST(Session, RejectsBadFeedsWithClearMessages) {
  Session s(add_reshape_model(ir::Dim(2)));
  auto expect_error = [&](const std::map<std::string, Tensor>& feeds, const std::string& needle) {
    try {
      s.run(feeds);
      FAIL() << "expected an error containing '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({}, "input 'x' (float32 [2, 2, 3]) is not given");
  expect_error({{"x", Tensor(DataType::kInt32, {2, 2, 3})}},
               "input 'x' must be float32, got int32");
  expect_error({{"x", iota({2, 3, 3})}}, "input 'x' must have shape [2, 2, 3], got [2, 3, 3]");
  expect_error({{"x", iota({2, 2, 3})}, {"z", iota({1})}}, "unknown input 'z'");
}

TEST(Session, UnsupportedOpIsReportedWithNodeAndOp) {
  ir::Model m = add_reshape_model(ir::Dim(2));
  m.graph.nodes.push_back(make_node("NoSuchOp", {"y"}, {"z"}));
  m.graph.outputs = {{"z", DataType::kFloat32, std::nullopt, {}}};
  try {
    Session s(std::move(m));
    FAIL() << "expected kNotSupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
    EXPECT_NE(std::string(e.what()).find("NoSuchOp"), std::string::npos) << e.what();
  }
}

// Unsupported ops are grouped by type with a count and the first node.
TEST(Session, UnsupportedOpsAreGroupedByType) {
  ir::Model m = add_reshape_model(ir::Dim(2));
  m.graph.nodes.push_back(make_node("NoSuchOp", {"y"}, {"z"}));
  m.graph.nodes.push_back(make_node("NoSuchOp", {"z"}, {"z2"}));
  m.graph.outputs = {{"z2", DataType::kFloat32, std::nullopt, {}}};
  try {
    Session s(std::move(m));
    FAIL() << "expected kNotSupported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 node(s) use operators the CPU backend does not "
                                         "support: NoSuchOp (2 nodes: NoSuchOp 'NoSuchOp_z', ...)"),
              std::string::npos)
        << e.what();
  }
}

// If (torchvision's detectors guard their NMS with one): the branch the condition picks runs,
// reading outer values implicitly (kept alive until the If, their producers not removed as
// dead) and its own Constant nodes; an If inside a branch too.
TEST(Session, IfRunsTheChosenBranchWithOuterValues) {
  auto constant = [](const std::string& out, float v) {
    ir::Node n = make_node("Constant", {}, {out});
    ir::Attribute a;
    a.name = "value";
    a.kind = ir::Attribute::Kind::kTensor;
    a.t = Tensor::from_vector<float>(DataType::kFloat32, {}, {v});
    n.attributes["value"] = a;
    return n;
  };
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = m.graph;
  g.inputs.push_back({"x", DataType::kFloat32, ir::SymShape{3}, {}});
  g.inputs.push_back({"c", DataType::kBool, ir::SymShape{}, {}});
  g.nodes.push_back(make_node("Relu", {"x"}, {"r"}));   // read only inside the branches
  g.nodes.push_back(make_node("Neg", {"x"}, {"neg"}));  // read only by the nested If
  ir::Graph then_g;
  then_g.nodes.push_back(constant("two", 2.0f));
  then_g.nodes.push_back(make_node("Mul", {"r", "two"}, {"t_out"}));
  then_g.outputs.push_back({"t_out", DataType::kFloat32, std::nullopt, {}});
  ir::Graph inner;
  inner.nodes.push_back(make_node("Identity", {"neg"}, {"i_out"}));
  inner.outputs.push_back({"i_out", DataType::kFloat32, std::nullopt, {}});
  ir::Graph inner_else;
  inner_else.nodes.push_back(make_node("Identity", {"r"}, {"ie_out"}));
  inner_else.outputs.push_back({"ie_out", DataType::kFloat32, std::nullopt, {}});
  ir::Graph else_g;
  ir::Node nested = make_node("If", {"c"}, {"e_out"});  // c is false here: its else branch
  nested.attributes["then_branch"] = ir::attr_graph("then_branch", inner);
  nested.attributes["else_branch"] = ir::attr_graph("else_branch", inner_else);
  ir::Node neg_c = make_node("Not", {"c"}, {"not_c"});
  ir::Node nested2 = nested;
  nested2.inputs = {"not_c"};
  nested2.outputs = {"e_out2"};
  else_g.nodes.push_back(neg_c);
  else_g.nodes.push_back(nested2);  // not c is true: the inner then branch (Identity of neg)
  else_g.outputs.push_back({"e_out2", DataType::kFloat32, std::nullopt, {}});
  ir::Node if_node = make_node("If", {"c"}, {"y"});
  if_node.attributes["then_branch"] = ir::attr_graph("then_branch", then_g);
  if_node.attributes["else_branch"] = ir::attr_graph("else_branch", else_g);
  g.nodes.push_back(if_node);
  g.outputs.push_back({"y", DataType::kFloat32, std::nullopt, {}});
  EXPECT_EQ(g.nodes.back().implicit_inputs(), (std::vector<std::string>{"c", "neg", "r"}));
  Session s(std::move(m));
  const Tensor x = Tensor::from_vector<float>(DataType::kFloat32, {3}, {-1, 2, -3});
  Tensor yes(DataType::kBool, {}), no(DataType::kBool, {});
  yes.data<uint8_t>()[0] = 1;
  const Tensor a = s.run({{"x", x}, {"c", yes}}).at("y");
  const Tensor b = s.run({{"x", x}, {"c", no}}).at("y");
  EXPECT_EQ(a.to_float_vector(), (std::vector<float>{0, 4, 0}));   // 2 * relu(x)
  EXPECT_EQ(b.to_float_vector(), (std::vector<float>{1, -2, 3}));  // -x
}

// Loop (torchvision's Mask / Keypoint R-CNN paste their masks in one): M iterations, a value
// carried from one to the next, an outer value read implicitly, a scan output stacked on a new
// first axis.
TEST(Session, LoopCarriesValuesAndStacksScanOutputs) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = m.graph;
  g.inputs.push_back({"x", DataType::kFloat32, ir::SymShape{3}, {}});
  g.initializers["m"] = Tensor::from_vector<int64_t>(DataType::kInt64, {}, {3});
  g.initializers["acc0"] = Tensor::from_vector<float>(DataType::kFloat32, {3}, {0, 0, 0});
  ir::Graph body;
  body.inputs = {{"i", DataType::kInt64, ir::SymShape{}, {}},
                 {"cond_in", DataType::kBool, ir::SymShape{}, {}},
                 {"acc", DataType::kFloat32, std::nullopt, {}}};
  body.nodes.push_back(make_node("Add", {"acc", "x"}, {"acc2"}));  // x: from the outer scope
  ir::Node cast = make_node("Cast", {"i"}, {"fi"});
  cast.attributes["to"] = ir::attr_int("to", static_cast<int64_t>(DataType::kFloat32));
  body.nodes.push_back(cast);
  body.nodes.push_back(make_node("Mul", {"acc2", "fi"}, {"scan"}));
  body.nodes.push_back(make_node("Identity", {"cond_in"}, {"cond_out"}));
  body.outputs = {{"cond_out", DataType::kBool, std::nullopt, {}},
                  {"acc2", DataType::kFloat32, std::nullopt, {}},
                  {"scan", DataType::kFloat32, std::nullopt, {}}};
  ir::Node loop = make_node("Loop", {"m", "", "acc0"}, {"acc_final", "scans"});
  loop.attributes["body"] = ir::attr_graph("body", body);
  g.nodes.push_back(loop);
  g.outputs = {{"acc_final", DataType::kFloat32, std::nullopt, {}},
               {"scans", DataType::kFloat32, std::nullopt, {}}};
  Session s(std::move(m));
  const auto out =
      s.run({{"x", Tensor::from_vector<float>(DataType::kFloat32, {3}, {1, -2, 0.5f})}});
  EXPECT_EQ(out.at("acc_final").to_float_vector(), (std::vector<float>{3, -6, 1.5f}));
  const Tensor& scans = out.at("scans");  // iteration k: (k + 1) * x * k
  ASSERT_EQ(scans.shape(), (Shape{3, 3}));
  EXPECT_EQ(scans.to_float_vector(), (std::vector<float>{0, 0, 0, 2, -4, 1, 6, -12, 3}));
}

// The bundled example against PyTorch's own output (examples/make_tiny_cnn.py).
TEST(Session, TinyCnnExampleMatchesPyTorch) {
  const std::string dir = std::string(TRTUTILS_TEST_DATA_DIR) + "/../../examples/";
  for (bool reference : {false, true}) {
    Session s = Session::from_file(dir + "tiny_cnn.onnx", {.use_reference = reference});
    auto out = s.run({{"input", npy_load(dir + "tiny_cnn_input.npy")}});
    const Tensor expected = npy_load(dir + "tiny_cnn_expected.npy");
    const Tensor& got = out.at("probabilities");
    ASSERT_EQ(got.shape(), expected.shape());
    for (int64_t i = 0; i < got.numel(); ++i)
      EXPECT_NEAR(got.data<float>()[i], expected.data<float>()[i], 1e-5)
          << "reference=" << reference;
  }
}

}  // namespace
}  // namespace trtutils

namespace trtutils {
namespace {

// Conv weights produced at run time (DequantizeLinear of int8 weights, as in Q/DQ models) get a
// new buffer every run: the fast path must not cache their packed form, or the cache grows with
// every run.
TEST(Session, RunTimeWeightsAreNotCached) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = m.graph;
  g.inputs.push_back({"x", DataType::kFloat32, ir::SymShape{1, 16, 8, 8}, {}});
  Tensor wq(DataType::kInt8, {16, 16, 3, 3});
  for (int64_t i = 0; i < wq.numel(); ++i) wq.data<int8_t>()[i] = static_cast<int8_t>(i % 7 - 3);
  g.initializers["wq"] = wq;
  g.initializers["scale"] = Tensor::from_vector<float>(DataType::kFloat32, {}, {0.05f});
  g.nodes.push_back(make_node("DequantizeLinear", {"wq", "scale"}, {"w"}));
  g.nodes.push_back(make_node("Conv", {"x", "w"}, {"y"}));
  g.outputs.push_back({"y", DataType::kFloat32, std::nullopt, {}});
  Session s(std::move(m), {.fold_constants = false});
  const Tensor x = iota({1, 16, 8, 8});
  s.run({{"x", x}});
  const auto before = cpu::nn::onednn_stats();
  for (int i = 0; i < 3; ++i) s.run({{"x", x}});
  const auto after = cpu::nn::onednn_stats();
  EXPECT_EQ(after.conv_runs - before.conv_runs, 3) << "the oneDNN fast path should run";
  EXPECT_EQ(after.conv_cache_entries, before.conv_cache_entries);
}

// The fast path's packed weights live as long as the weights they were packed from: once the
// session (and its model) that owned them is gone, its entries are released, while those of
// weights still alive elsewhere stay (quantize: 561 -> 314 MiB peak on ResNet-50).
TEST(Session, PackedWeightsGoWithTheirSession) {
  auto conv_model = [](const Tensor& w) {
    ir::Model m;
    m.opset_imports = {{"", 17}};
    ir::Graph& g = m.graph;
    g.inputs.push_back({"x", DataType::kFloat32, ir::SymShape{1, 16, 8, 8}, {}});
    g.initializers["w"] = w;
    g.nodes.push_back(make_node("Conv", {"x", "w"}, {"y"}));
    g.outputs.push_back({"y", DataType::kFloat32, std::nullopt, {}});
    return m;
  };
  auto weights = [] {
    Tensor w(DataType::kFloat32, {16, 16, 3, 3});
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i % 5) - 2.0f;
    return w;
  };
  const Tensor x = iota({1, 16, 8, 8});
  const Tensor kept = weights();  // alive outside the sessions, like quantize's float model
  const int64_t start = cpu::nn::onednn_stats().conv_cache_entries;
  {
    Session a(conv_model(weights()));
    Session b(conv_model(kept));
    const auto r0 = cpu::nn::onednn_stats().conv_runs;
    a.run({{"x", x}});
    b.run({{"x", x}});
    if (cpu::nn::onednn_stats().conv_runs - r0 < 2) GTEST_SKIP() << "no oneDNN fast path here";
    EXPECT_EQ(cpu::nn::onednn_stats().conv_cache_entries, start + 2);
  }
  // a's weights are gone with it; b's are still held by `kept`.
  EXPECT_EQ(cpu::nn::onednn_stats().conv_cache_entries, start + 1);
  {
    Session c(conv_model(kept));  // the same weights: the entry is found again
    const auto before = cpu::nn::onednn_stats().conv_cache_entries;
    c.run({{"x", x}});
    EXPECT_EQ(cpu::nn::onednn_stats().conv_cache_entries, before);
  }
}

}  // namespace
}  // namespace trtutils
