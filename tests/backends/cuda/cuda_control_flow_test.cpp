// Control flow in GPU engines (issue 29): If and Loop run their bodies on the GPU through nested
// executors, the host reading the conditions and trip counts (Range inside a Loop body too). On
// a device every case is run by the CPU session (the reference) and by the GPU executor on the
// same graph, and must agree (exactly; within the float32 tolerance where a convolution or
// matrix product sums in another order); the executor must place the If / Loop on the GPU (no
// per-layer fallback) and say where their bodies' nodes ran. Without a device, the plan
// (gpu_coverage, the builder's fallback report, the executor's fusions) must say the same.
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "backends/cuda/cuda_test_util.h"
#include "engine/engine_file.h"
#include "engine/session.h"
#include "ir/graph_builder.h"
#include "onnx/onnx_io.h"
#include "trtutils/builder.h"

namespace trtutils {
namespace {

namespace fs = std::filesystem;
using namespace cuda_testing;  // NOLINT
using Feeds = std::map<std::string, Tensor>;

// ---- graphs ------------------------------------------------------------------------------------

ir::Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
              std::vector<ir::Attribute> attrs = {}) {
  ir::Node n;
  n.name = out.at(0) + "_node";
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  for (auto& a : attrs) n.attributes[a.name] = std::move(a);
  return n;
}

ir::ValueInfo info(const std::string& name, DataType dt) {
  return {name, dt, std::nullopt, {}};
}

ir::Graph body(std::vector<ir::ValueInfo> inputs, std::vector<ir::Node> nodes,
               std::vector<ir::ValueInfo> outputs, std::map<std::string, Tensor> inits = {}) {
  ir::Graph g;
  g.name = "body";
  g.inputs = std::move(inputs);
  g.nodes = std::move(nodes);
  g.outputs = std::move(outputs);
  g.initializers = std::move(inits);
  return g;
}

ir::Node if_node(const std::string& cond, const std::string& out, ir::Graph then_g,
                 ir::Graph else_g) {
  ir::Node n = node("If", {cond}, {out});
  n.name = "if_" + out;
  n.attributes["then_branch"] = ir::attr_graph("then_branch", std::move(then_g));
  n.attributes["else_branch"] = ir::attr_graph("else_branch", std::move(else_g));
  return n;
}

Tensor boolean(bool v) {
  Tensor t(DataType::kBool, {});
  t.data<uint8_t>()[0] = v ? 1 : 0;
  return t;
}

Tensor f32_scalar(float v) {
  return f32({}, {v});
}

Tensor i64_scalar(int64_t v) {
  return i64({}, {v});
}

// x [2, 3]; the condition sum(x) > 0 computed on the GPU; then: relu(x)^2 (a GPU value of the
// outer graph), else: -x (a graph input); a GPU layer (Abs) reads the If's output.
ir::Model if_model() {
  ir::GraphBuilder b("if_model");
  const std::string x = b.input("x", DataType::kFloat32, {2, 3});
  b.node_with_outputs("Relu", {x}, {"r"});
  b.node_with_outputs("ReduceSum", {x}, {"s"}, {ir::attr_int("keepdims", 0)});
  b.node_with_outputs("Greater", {"s", b.initializer("zero", f32_scalar(0))}, {"c"});
  ir::Model m = b.build(17);
  m.graph.nodes.push_back(
      if_node("c", "y", body({}, {node("Mul", {"r", "r"}, {"t_out"})}, {info("t_out", {})}),
              body({}, {node("Neg", {"x"}, {"e_out"})}, {info("e_out", {})})));
  m.graph.nodes.push_back(node("Abs", {"y"}, {"z"}));
  m.graph.outputs = {info("z", DataType::kFloat32)};
  return m;
}

// The If's branches give outputs of different shapes: then concat(x, x) [4, 3], else an empty
// slice [0, 3]; Shape (host) and Relu (GPU) read it.
ir::Model shapes_model() {
  ir::GraphBuilder b("shapes");
  b.input("x", DataType::kFloat32, {2, 3});
  b.input("c", DataType::kBool, {});
  ir::Model m = b.build(17);
  ir::Graph then_g = body({}, {node("Concat", {"x", "x"}, {"t_out"}, {ir::attr_int("axis", 0)})},
                          {info("t_out", DataType::kFloat32)});
  ir::Graph else_g = body({}, {node("Slice", {"x", "st", "en", "ax"}, {"e_out"})},
                          {info("e_out", DataType::kFloat32)},
                          {{"st", i64({1}, {0})}, {"en", i64({1}, {0})}, {"ax", i64({1}, {0})}});
  m.graph.nodes.push_back(if_node("c", "y", then_g, else_g));
  m.graph.nodes.push_back(node("Shape", {"y"}, {"y_shape"}));
  m.graph.nodes.push_back(node("Relu", {"y"}, {"y_relu"}));
  m.graph.outputs = {info("y", DataType::kFloat32), info("y_shape", DataType::kInt64),
                     info("y_relu", DataType::kFloat32)};
  return m;
}

// Branches reading every kind of outer value: a graph input (x), a GPU value (r = relu(x)), an
// outer initializer the branch's Conv takes as its weight (w), and a host value (Shape(x)).
ir::Model outer_reads_model() {
  ir::GraphBuilder b("outer");
  b.input("x", DataType::kFloat32, {1, 2, 4, 4});
  b.input("c", DataType::kBool, {});
  b.initializer("w", random_tensor(DataType::kFloat32, {2, 2, 3, 3}, 11));
  ir::Model m = b.build(17);
  m.graph.nodes.push_back(node("Relu", {"x"}, {"r"}));
  m.graph.nodes.push_back(node("Shape", {"x"}, {"x_shape"}));
  ir::Graph then_g =
      body({},
           {node("Conv", {"r", "w"}, {"conv"}, {ir::attr_ints("pads", {1, 1, 1, 1})}),
            node("Add", {"conv", "x"}, {"sum"}), node("Reshape", {"sum", "x_shape"}, {"t_out"})},
           {info("t_out", DataType::kFloat32)});
  ir::Graph else_g =
      body({}, {node("Mul", {"r", "x"}, {"e_out"})}, {info("e_out", DataType::kFloat32)});
  m.graph.nodes.push_back(if_node("c", "y", then_g, else_g));
  m.graph.nodes.push_back(node("Sigmoid", {"y"}, {"z"}));
  m.graph.outputs = {info("z", DataType::kFloat32)};
  return m;
}

// An If in an If's branch: then relu(x) * k (the branch's initializer); else If(not c): -x
// (read two scopes out) else relu(x).
ir::Model nested_if_model() {
  ir::GraphBuilder b("nested");
  b.input("x", DataType::kFloat32, {3});
  b.input("c", DataType::kBool, {});
  ir::Model m = b.build(17);
  m.graph.nodes.push_back(node("Relu", {"x"}, {"r"}));
  ir::Graph then_g = body({}, {node("Mul", {"r", "k"}, {"t_out"})}, {info("t_out", {})},
                          {{"k", f32({3}, {1, 2, 3})}});
  ir::Graph inner_then = body({}, {node("Neg", {"x"}, {"it_out"})}, {info("it_out", {})});
  ir::Graph inner_else = body({}, {node("Identity", {"r"}, {"ie_out"})}, {info("ie_out", {})});
  ir::Graph else_g =
      body({}, {node("Not", {"c"}, {"not_c"}), if_node("not_c", "e_out", inner_then, inner_else)},
           {info("e_out", {})});
  m.graph.nodes.push_back(if_node("c", "y", then_g, else_g));
  m.graph.outputs = {info("y", DataType::kFloat32)};
  return m;
}

// Loop(M, cond, acc = x) with x [2, 3] > 0 and the scalar `limit` read from the enclosing graph:
//   i_f = float(i) (host), acc' = acc + x * i_f (GPU), cond' = sum(acc') < limit (GPU, read on
//   the host after every iteration); scan outputs -acc' [n, 2, 3] (GPU) and i_f [n] (host).
// has_m / has_cond: whether M / cond are given (graph inputs) or omitted. extra: more body nodes
// (reading acc2) with one more scan output, named extra_out.
ir::Model loop_model(bool has_m, bool has_cond, std::vector<ir::Node> extra = {}) {
  ir::GraphBuilder b("loop");
  b.input("x", DataType::kFloat32, {2, 3});
  if (has_m) b.input("m", DataType::kInt64, {});
  if (has_cond) b.input("c0", DataType::kBool, {});
  b.input("limit", DataType::kFloat32, {});
  ir::Model m = b.build(17);
  std::vector<ir::Node> nodes = {
      node("Cast", {"i"}, {"i_f"}, {ir::attr_int("to", static_cast<int64_t>(DataType::kFloat32))}),
      node("Mul", {"x", "i_f"}, {"step"}),
      node("Add", {"acc", "step"}, {"acc2"}),
      node("ReduceSum", {"acc2"}, {"total"}, {ir::attr_int("keepdims", 0)}),
      node("Less", {"total", "limit"}, {"cond_out"}),
      node("Neg", {"acc2"}, {"neg"})};
  std::vector<ir::ValueInfo> outs = {
      info("cond_out", DataType::kBool), info("acc2", DataType::kFloat32),
      info("neg", DataType::kFloat32), info("i_f", DataType::kFloat32)};
  if (!extra.empty()) outs.push_back(info("extra_out", DataType::kFloat32));
  nodes.insert(nodes.end(), extra.begin(), extra.end());
  ir::Node loop = node("Loop", {has_m ? "m" : "", has_cond ? "c0" : "", "x"},
                       {"acc_final", "scan_neg", "scan_i"});
  if (!extra.empty()) loop.outputs.push_back("scan_extra");
  loop.name = "loop";
  loop.attributes["body"] =
      ir::attr_graph("body", body({info("i", DataType::kInt64), info("cond_in", DataType::kBool),
                                   info("acc", DataType::kFloat32)},
                                  nodes, outs));
  m.graph.nodes.push_back(loop);
  m.graph.nodes.push_back(node("Abs", {"acc_final"}, {"z"}));
  m.graph.outputs.clear();
  for (const auto& o : loop.outputs) m.graph.outputs.push_back(info(o, DataType::kFloat32));
  m.graph.outputs.push_back(info("z", DataType::kFloat32));
  return m;
}

size_t node_index(const ir::Model& m, const std::string& name) {
  for (size_t i = 0; i < m.graph.nodes.size(); ++i)
    if (m.graph.nodes[i].name == name) return i;
  ADD_FAILURE() << "no node " << name;
  return 0;
}

// ---- without a device: the plan --------------------------------------------------------------

TEST(GpuControlFlowPlan, IfAndLoopAreNoLongerFallbackLayers) {
  for (const ir::Model& m : {if_model(), shapes_model(), outer_reads_model(), nested_if_model(),
                             loop_model(true, true), loop_model(false, true)}) {
    const cuda::GpuCoverage cov = cuda::gpu_coverage(m);
    EXPECT_TRUE(cov.unsupported.empty()) << m.graph.name << ": " << cov.unsupported.at(0);
    EXPECT_TRUE(cov.fallback.empty())
        << m.graph.name << ": " << cov.fallback.at(0).node << " " << cov.fallback.at(0).reason;
  }
}

// A body node without a GPU kernel falls back on its own, named under its If / Loop.
TEST(GpuControlFlowPlan, BodyFallbackNodesAreNamedUnderTheirNode) {
  const ir::Model m = loop_model(true, false, {node("Cosh", {"acc2"}, {"extra_out"})});
  const cuda::GpuCoverage cov = cuda::gpu_coverage(m);
  EXPECT_TRUE(cov.unsupported.empty());
  ASSERT_EQ(cov.fallback.size(), 1u);
  EXPECT_EQ(cov.fallback[0].node, "loop/extra_out_node");
  EXPECT_EQ(cov.fallback[0].op, "Cosh");
  EXPECT_EQ(cov.fallback[0].reason, "no CUDA kernel");
}

// A branch no executor can plan (a Constant node: only the CPU's control flow evaluates those)
// sends the whole If to the CPU, as before.
ir::Model constant_branch_model() {
  ir::Model m = if_model();
  ir::Node k = node("Constant", {}, {"k"});
  k.attributes["value"] = ir::attr_tensor("value", f32({3}, {1, 2, 3}));
  ir::Graph then_g = body({}, {k, node("Mul", {"r", "k"}, {"t_out"})}, {info("t_out", {})});
  ir::Node& n = m.graph.nodes.at(node_index(m, "if_y"));
  n.attributes["then_branch"] = ir::attr_graph("then_branch", then_g);
  return m;
}

TEST(GpuControlFlowPlan, AnUnplannableBodySendsTheNodeToTheCpu) {
  const cuda::GpuCoverage cov = cuda::gpu_coverage(constant_branch_model());
  ASSERT_EQ(cov.fallback.size(), 1u);
  EXPECT_EQ(cov.fallback[0].node, "if_y");
  EXPECT_EQ(cov.fallback[0].reason.rfind("control flow:", 0), 0u) << cov.fallback[0].reason;
  EXPECT_NE(cov.fallback[0].reason.find("then_branch"), std::string::npos);
}

// MatMul -> Add(bias), the executor's MatMulBias fusion; with_if: an If's branches also read
// the MatMul's output.
ir::Model matmul_model(bool with_if) {
  ir::GraphBuilder b("fusion");
  b.input("x", DataType::kFloat32, {2, 4});
  b.input("c", DataType::kBool, {});
  b.initializer("w", random_tensor(DataType::kFloat32, {4, 3}, 29));
  b.initializer("bias", random_tensor(DataType::kFloat32, {3}, 30));
  b.node_with_outputs("MatMul", {"x", "w"}, {"mm"});
  b.node_with_outputs("Add", {"mm", "bias"}, {"y"});
  b.output("y", DataType::kFloat32);
  ir::Model m = b.build(17);
  if (!with_if) return m;
  m.graph.nodes.push_back(
      if_node("c", "z", body({}, {node("Neg", {"mm"}, {"t_out"})}, {info("t_out", {})}),
              body({}, {node("Identity", {"mm"}, {"e_out"})}, {info("e_out", {})})));
  m.graph.outputs.push_back(info("z", DataType::kFloat32));
  return m;
}

// The executor's fusions count a body's reads of an outer value: no MatMulBias while a branch
// reads the MatMul's output.
TEST(GpuControlFlowPlan, FusionsKeepTheValuesABodyReads) {
  EXPECT_FALSE(cuda::fusion_plan(matmul_model(false).graph, 17).empty())
      << "the MatMul + bias fusion is expected";
  EXPECT_TRUE(cuda::fusion_plan(matmul_model(true).graph, 17).empty());
}

class GpuControlFlowBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("trtutils_cf_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  builder::BuildResult build(const ir::Model& m, bool no_fallback) {
    onnx_io::save_model(m, dir_ / "m.onnx");
    builder::BuildConfig c;
    c.backend = "cuda";
    c.target_sm = 90;
    c.no_fallback = no_fallback;
    return builder::build_engine(dir_ / "m.onnx", dir_ / "m.engine", c);
  }
  fs::path dir_;
};

// The builder's layer table and fallback report say what the executor does: If and Loop on the
// GPU, accepted with --no_fallback; a body's fallback node is reported (and refused with it).
TEST_F(GpuControlFlowBuild, LayerTableShowsControlFlowOnTheGpu) {
  for (const ir::Model& m : {nested_if_model(), loop_model(true, true)}) {
    const builder::BuildResult r = build(m, true);
    EXPECT_TRUE(r.fallback_layers.empty());
    const engine::EngineData e = engine::read_engine_file(dir_ / "m.engine");
    for (size_t i = 0; i < e.layers.size(); ++i) {
      const ir::Node& n = e.model.graph.nodes[i];
      if (n.op_type != "If" && n.op_type != "Loop") continue;
      EXPECT_EQ(e.layers[i].device, "gpu") << n.name;
      EXPECT_EQ(e.layers[i].kernel, "cuda." + n.op_type + " (host-driven, bodies on the GPU)");
    }
  }
}

TEST_F(GpuControlFlowBuild, BodyFallbackIsReportedAndRefusedWithNoFallback) {
  const ir::Model m = loop_model(true, false, {node("Cosh", {"acc2"}, {"extra_out"})});
  const builder::BuildResult r = build(m, false);
  ASSERT_EQ(r.fallback_layers.size(), 1u);
  EXPECT_EQ(r.fallback_layers[0], "loop/extra_out_node (Cosh): no CUDA kernel");
  try {
    build(m, true);
    FAIL() << "expected Error(kNotSupported)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
    EXPECT_NE(std::string(e.what()).find("loop/extra_out_node (Cosh)"), std::string::npos)
        << e.what();
  }
}

// ---- on the device: GPU against the CPU --------------------------------------------------------

// Runs `m` for every feed set on the CPU session and the GPU executor: outputs equal (dtype,
// shape, every value within `tol`). Returns the executor for placement checks.
std::unique_ptr<cuda::Executor> expect_gpu_matches_cpu(const ir::Model& m,
                                                       const std::vector<Feeds>& feeds,
                                                       Tolerance tol = kExact,
                                                       const cuda::ExecutorOptions& o = {}) {
  SessionOptions so;
  so.run_passes = false;
  Session cpu(m, so);
  auto gpu = std::make_unique<cuda::Executor>(m, o);
  for (size_t f = 0; f < feeds.size(); ++f) {
    const Feeds want = cpu.run(feeds[f]);
    const Feeds got = gpu->run(feeds[f]);
    EXPECT_EQ(got.size(), want.size());
    for (const auto& [name, t] : want) {
      if (!got.count(name)) {
        ADD_FAILURE() << "missing output " << name;
        continue;
      }
      expect_close(got.at(name), t, tol, m.graph.name + " feeds " + std::to_string(f) + " " + name);
    }
  }
  return gpu;
}

// The If / Loop node ran on the GPU (no per-layer fallback) and its kernel says where its
// bodies' nodes ran.
void expect_on_gpu(const cuda::Executor& gpu, const ir::Model& m, const std::string& name,
                   bool body_fallback = false) {
  const size_t i = node_index(m, name);
  EXPECT_EQ(gpu.node_placement().at(i), "gpu") << name;
  const std::string k = gpu.node_kernels().at(i);
  EXPECT_EQ(k.rfind("host-driven " + m.graph.nodes[i].op_type, 0), 0u) << k;
  EXPECT_EQ(k.find("cpu (fallback)") != std::string::npos, body_fallback) << k;
  for (const auto& p : gpu.node_placement()) EXPECT_NE(p, "cpu (fallback)");
}

Tensor signed_input(float sign, uint32_t seed) {
  Tensor x = random_tensor(DataType::kFloat32, {2, 3}, seed, 0.1f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= sign;
  return x;
}

TEST(CudaControlFlow, IfTakesEitherBranchOnTheGpu) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = if_model();
  auto gpu = expect_gpu_matches_cpu(m, {{{"x", signed_input(1, 8)}}, {{"x", signed_input(-1, 9)}}});
  expect_on_gpu(*gpu, m, "if_y");
}

TEST(CudaControlFlow, IfBranchesMayGiveDifferentShapesAndEmptyOutputs) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = shapes_model();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3}, 12);
  auto gpu = expect_gpu_matches_cpu(m, {{{"x", x}, {"c", boolean(true)}},
                                        {{"x", x}, {"c", boolean(false)}},
                                        {{"x", x}, {"c", boolean(true)}}});
  expect_on_gpu(*gpu, m, "if_y");
  EXPECT_EQ(gpu->run({{"x", x}, {"c", boolean(false)}}).at("y").shape(), (Shape{0, 3}));
}

TEST(CudaControlFlow, IfBranchesReadOuterValuesInPlace) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = outer_reads_model();
  const Tensor x = random_tensor(DataType::kFloat32, {1, 2, 4, 4}, 13);
  auto gpu = expect_gpu_matches_cpu(
      m, {{{"x", x}, {"c", boolean(true)}}, {{"x", x}, {"c", boolean(false)}}}, kFp32);
  expect_on_gpu(*gpu, m, "if_y");
  // The branch's Conv took the outer initializer as its weight (a GPU kernel), Reshape read the
  // outer Shape on the host.
  const std::string k = gpu->node_kernels().at(node_index(m, "if_y"));
  EXPECT_NE(k.find("then_branch: 3 gpu"), std::string::npos) << k;
}

TEST(CudaControlFlow, NestedIfRunsOnTheGpu) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = nested_if_model();
  const Tensor x = f32({3}, {-1, 2, -3});
  auto gpu = expect_gpu_matches_cpu(
      m, {{{"x", x}, {"c", boolean(true)}}, {{"x", x}, {"c", boolean(false)}}});
  expect_on_gpu(*gpu, m, "if_y");
  EXPECT_EQ(gpu->run({{"x", x}, {"c", boolean(false)}}).at("y").to_float_vector(),
            (std::vector<float>{1, -2, 3}));  // not c: the inner then branch, -x
}

TEST(CudaControlFlow, BranchReadsAValueTheFusionsWouldTakeAway) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = matmul_model(true);
  const Tensor x = random_tensor(DataType::kFloat32, {2, 4}, 31);
  auto gpu = expect_gpu_matches_cpu(
      m, {{{"x", x}, {"c", boolean(true)}}, {{"x", x}, {"c", boolean(false)}}}, kFp32);
  expect_on_gpu(*gpu, m, "if_z");
}

// A CUDA graph cannot hold host-read conditions: the executor stays eager, results unchanged.
TEST(CudaControlFlow, CudaGraphRunsStayEager) {
  TRT_REQUIRE_CUDA();
  cuda::ExecutorOptions o;
  o.cuda_graph = true;
  const ir::Model m = if_model();
  const Tensor x = signed_input(1, 14);
  expect_gpu_matches_cpu(m, {{{"x", x}}, {{"x", x}}, {{"x", x}}, {{"x", signed_input(-1, 14)}}},
                         kExact, o);
}

Feeds loop_feeds(std::optional<int64_t> m, std::optional<bool> c0, float limit, uint32_t seed) {
  Feeds f{{"x", random_tensor(DataType::kFloat32, {2, 3}, seed, 0.1f, 1.0f)},
          {"limit", f32_scalar(limit)}};
  if (m) f["m"] = i64_scalar(*m);
  if (c0) f["c0"] = boolean(*c0);
  return f;
}

TEST(CudaControlFlow, LoopWithTripCountOnly) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = loop_model(true, false);
  auto gpu = expect_gpu_matches_cpu(
      m, {loop_feeds(5, {}, 1e9f, 15), loop_feeds(1, {}, 1e9f, 16), loop_feeds(7, {}, 1e9f, 15)});
  expect_on_gpu(*gpu, m, "loop");
  EXPECT_EQ(gpu->run(loop_feeds(5, {}, 1e9f, 15)).at("scan_neg").shape(), (Shape{5, 2, 3}));
}

TEST(CudaControlFlow, LoopWithConditionOnly) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = loop_model(false, true);
  auto gpu =
      expect_gpu_matches_cpu(m, {loop_feeds({}, true, 40.0f, 17), loop_feeds({}, true, 5.0f, 18)});
  expect_on_gpu(*gpu, m, "loop");
  const Shape s = gpu->run(loop_feeds({}, true, 40.0f, 17)).at("scan_i").shape();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_GT(s[0], 1) << "the condition should end the loop after a few iterations";
}

TEST(CudaControlFlow, LoopWithTripCountAndCondition) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = loop_model(true, true);
  auto gpu = expect_gpu_matches_cpu(m, {loop_feeds(3, true, 1e9f, 19),     // ends by M
                                        loop_feeds(100, true, 20.0f, 20),  // ends by cond
                                        loop_feeds(4, true, 20.0f, 21)});
  expect_on_gpu(*gpu, m, "loop");
}

// No iteration: the loop-carried values pass through, each scan output is an empty [0] of its
// declared dtype, as on the CPU.
TEST(CudaControlFlow, LoopWithZeroIterations) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = loop_model(true, true);
  auto gpu =
      expect_gpu_matches_cpu(m, {loop_feeds(0, true, 1e9f, 22), loop_feeds(5, false, 1e9f, 23)});
  expect_on_gpu(*gpu, m, "loop");
  const Feeds out = gpu->run(loop_feeds(0, true, 1e9f, 22));
  EXPECT_EQ(out.at("scan_neg").shape(), (Shape{0}));
  EXPECT_EQ(out.at("acc_final").shape(), (Shape{2, 3}));
}

// A body node without a GPU kernel (Cosh) falls back on its own; the Loop stays on the GPU. With
// allow_fallback off the engine is refused, naming it.
TEST(CudaControlFlow, LoopBodyWithAFallbackNode) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = loop_model(true, false, {node("Cosh", {"acc2"}, {"extra_out"})});
  auto gpu = expect_gpu_matches_cpu(m, {loop_feeds(4, {}, 1e9f, 24)}, kFp32Math);
  expect_on_gpu(*gpu, m, "loop", /*body_fallback=*/true);
  cuda::ExecutorOptions strict;
  strict.allow_fallback = false;
  try {
    cuda::Executor ex(m, strict);
    FAIL() << "expected Error(kNotSupported)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported);
    EXPECT_NE(std::string(e.what()).find("Cosh"), std::string::npos) << e.what();
  }
}

// An If in a Loop's body (a nested executor in a nested executor) reading the body's values.
TEST(CudaControlFlow, LoopBodyHoldsAnIf) {
  TRT_REQUIRE_CUDA();
  ir::Node first = node("Equal", {"i", "zero"}, {"first"});
  ir::Node inner = if_node("first", "extra_out",
                           body({}, {node("Identity", {"acc2"}, {"keep"})}, {info("keep", {})}),
                           body({}, {node("Sub", {"acc2", "x"}, {"less"})}, {info("less", {})}));
  ir::Model m = loop_model(true, false, {first, inner});
  auto& attr = m.graph.nodes.at(node_index(m, "loop")).attributes.at("body");
  auto g = std::make_shared<ir::Graph>(*attr.g);
  g->initializers["zero"] = i64_scalar(0);
  attr.g = g;
  auto gpu = expect_gpu_matches_cpu(m, {loop_feeds(4, {}, 1e9f, 25)});
  expect_on_gpu(*gpu, m, "loop");
}

// A branch the GPU cannot plan (a Constant node) runs on the CPU as a whole, as before.
TEST(CudaControlFlow, UnplannableBranchFallsBackToTheCpu) {
  TRT_REQUIRE_CUDA();
  const ir::Model m = constant_branch_model();
  auto gpu =
      expect_gpu_matches_cpu(m, {{{"x", signed_input(1, 26)}}, {{"x", signed_input(-1, 27)}}});
  EXPECT_EQ(gpu->node_placement().at(node_index(m, "if_y")), "cpu (fallback)");
}

// In a Loop's body the iteration number is a host value: Range(0, i + 1) computed from it on the
// host, and from a device value (the loop-carried length) on the GPU.
TEST(CudaRange, InsideALoopBody) {
  TRT_REQUIRE_CUDA();
  ir::GraphBuilder b("range_loop");
  b.input("m", DataType::kInt64, {});
  b.input("len0", DataType::kInt64, {});
  ir::Model m = b.build(17);
  std::map<std::string, Tensor> inits = {{"one", i64_scalar(1)}, {"zero", i64_scalar(0)}};
  ir::Graph g =
      body({info("i", DataType::kInt64), info("cond_in", DataType::kBool),
            info("len", DataType::kInt64)},
           {node("Add", {"len", "one"}, {"len2"}), node("Range", {"zero", "len2", "one"}, {"seq"}),
            node("ReduceSum", {"seq"}, {"seq_sum"}, {ir::attr_int("keepdims", 0)}),
            node("Identity", {"cond_in"}, {"cond_out"})},
           {info("cond_out", DataType::kBool), info("len2", DataType::kInt64),
            info("seq_sum", DataType::kInt64)},
           inits);
  ir::Node loop = node("Loop", {"m", "", "len0"}, {"len_final", "sums"});
  loop.name = "loop";
  loop.attributes["body"] = ir::attr_graph("body", g);
  m.graph.nodes.push_back(loop);
  m.graph.outputs = {info("len_final", DataType::kInt64), info("sums", DataType::kInt64)};
  auto gpu = expect_gpu_matches_cpu(m, {{{"m", i64_scalar(6)}, {"len0", i64_scalar(3)}}});
  expect_on_gpu(*gpu, m, "loop");
  // Add, Range and ReduceSum on the GPU, Identity of the (host) condition on the host.
  const std::string k = gpu->node_kernels().at(node_index(m, "loop"));
  EXPECT_NE(k.find("body: 3 gpu, 1 host"), std::string::npos) << k;
}

}  // namespace
}  // namespace trtutils
