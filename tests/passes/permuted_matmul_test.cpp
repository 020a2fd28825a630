// fold_matmul_permutes and com.trtutils::PermutedMatMul: an attention block's Transposes and
// 1/sqrt(d) scaling fold into the MatMuls, which then read and write strided views, computing
// what the plain graph computes (oneDNN where it takes the views, the plain nodes elsewhere).
#include "ops/permuted_matmul.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/nn_kernels.h"
#include "ir/graph_builder.h"
#include "passes/pass_test_util.h"
#include "passes/passes.h"

namespace trtutils {
namespace {

using namespace pass_testing;  // NOLINT

struct Case {
  Shape a, b;  // the sources, before their Transposes
  std::vector<int64_t> pa, pb, py;
  float alpha;
  bool native;  // oneDNN 2.6 takes the views (not a product written transposed)
};

// The node's fast run and reference run against its plain nodes on the reference kernels.
void check_case(const Case& c, uint32_t seed) {
  const Tensor a = random_tensor(c.a, seed), b = random_tensor(c.b, seed + 1);
  ir::Node node;
  node.name = "pm";
  node.op_type = "PermutedMatMul";
  node.domain = "com.trtutils";
  node.inputs = {"a", "b"};
  node.outputs = {"y"};
  if (!c.pa.empty()) node.attributes["perm_a"] = ir::attr_ints("perm_a", c.pa);
  if (!c.pb.empty()) node.attributes["perm_b"] = ir::attr_ints("perm_b", c.pb);
  if (!c.py.empty()) node.attributes["perm_y"] = ir::attr_ints("perm_y", c.py);
  node.attributes["alpha"] = ir::attr_float("alpha", c.alpha);
  std::map<std::string, Tensor> v{{"a", a}, {"b", b}};
  for (const ir::Node& step : ops::split_permuted_matmul(node)) {
    std::vector<const Tensor*> in;
    for (const std::string& name : step.inputs) in.push_back(&v.at(name));
    v[step.outputs[0]] = cpu::run_node(step, kOpset, in, true).at(0);
    if (step.op_type == "MatMul") {
      float* p = v[step.outputs[0]].data<float>();
      for (int64_t i = 0; i < v[step.outputs[0]].numel(); ++i) p[i] *= c.alpha;
    }
  }
  const Tensor& want = v.at("y");
  const auto before = cpu::nn::onednn_stats();
  const Tensor fast = cpu::run_node(node, kOpset, {&a, &b}, false).at(0);
  const auto after = cpu::nn::onednn_stats();
  if (c.native) {
    EXPECT_EQ(after.matmul_runs, before.matmul_runs + 1) << "oneDNN did not run it";
    EXPECT_EQ(after.matmul_fallbacks, before.matmul_fallbacks);
  }
  const Tensor ref = cpu::run_node(node, kOpset, {&a, &b}, true).at(0);
  ASSERT_EQ(fast.shape(), want.shape());
  expect_close(fast, want);
  expect_close(ref, want);
  ir::Graph g;  // what the builder asks: the kernel's own answer
  g.value_info["a"] = ir::ValueInfo{"a", DataType::kFloat32, ir::sym_shape_from_static(c.a), {}};
  g.value_info["b"] = ir::ValueInfo{"b", DataType::kFloat32, ir::sym_shape_from_static(c.b), {}};
  EXPECT_EQ(cpu::nn::permuted_matmul_native(g, node), c.native);
}

TEST(PermutedMatMul, KernelMatchesThePlainNodes) {
  // Multi-head attention's views (L = 197 tokens, 12 heads of 64, batch 1 and 3; sequence
  // first as torch's MultiheadAttention exports), Swin's windows (batch-first, 4-D), odd sizes,
  // a broadcast batch, and products written transposed (their last axis strided: oneDNN 2.6
  // has no kernel, the plain nodes run).
  const Case cases[] = {
      {{197, 12, 64}, {197, 12, 64}, {1, 0, 2}, {1, 2, 0}, {}, 0.125f, true},
      {{36, 197, 197}, {197, 36, 64}, {}, {1, 0, 2}, {1, 0, 2}, 1.0f, true},
      {{2, 49, 3, 32}, {2, 49, 3, 32}, {0, 2, 1, 3}, {0, 2, 3, 1}, {}, 0.1767767f, true},
      {{2, 3, 49, 49}, {2, 49, 3, 32}, {}, {0, 2, 1, 3}, {0, 2, 1, 3}, 1.0f, true},
      {{7, 5, 3}, {5, 3, 9}, {1, 0, 2}, {}, {}, 2.0f, true},
      {{1, 13, 11}, {4, 11, 6}, {}, {}, {0, 2, 1}, 1.0f, false},
      {{11, 13}, {6, 11}, {1, 0}, {1, 0}, {1, 0}, -0.5f, false},
  };
  uint32_t seed = 3;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "a " << shape_str(c.a) << " b " << shape_str(c.b));
    check_case(c, seed += 7);
  }
}

// torch.nn.MultiheadAttention as exported (sequence first): in-projection, q / k / v sliced and
// split into heads by Reshape + Transpose, q divided by sqrt(d), k transposed for the product,
// Softmax, the heads merged back by Transpose + Reshape.
TEST(PermutedMatMul, PassFoldsAnAttentionBlock) {
  const int64_t l = 10, n = 2, h = 3, d = 8, e = h * d;
  ir::GraphBuilder b("attention");
  const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({l, n, e}));
  auto shape = [&](const std::string& name, const Shape& s) {
    return b.initializer(
        name, Tensor::from_vector<int64_t>(DataType::kInt64, {static_cast<int64_t>(s.size())}, s));
  };
  auto heads = [&](const std::string& t, const std::vector<int64_t>& perm) {
    const auto r = b.node("Reshape", {t, shape("heads" + t, {l, n * h, d})})[0];
    return b.node("Transpose", {r}, {ir::attr_ints("perm", perm)})[0];
  };
  const auto wq = b.initializer("wq", random_tensor({e, e}, 1, 0.3f));
  const auto wk = b.initializer("wk", random_tensor({e, e}, 2, 0.3f));
  const auto wv = b.initializer("wv", random_tensor({e, e}, 3, 0.3f));
  const auto q = heads(b.node("MatMul", {x, wq})[0], {1, 0, 2});
  const auto k = heads(b.node("MatMul", {x, wk})[0], {1, 2, 0});
  const auto v = heads(b.node("MatMul", {x, wv})[0], {1, 0, 2});
  const auto scale =
      b.initializer("scale", Tensor::from_vector<float>(DataType::kFloat32, {}, {2.8284271f}));
  const auto qs = b.node("Div", {q, scale})[0];
  const auto att = b.node("Softmax", {b.node("MatMul", {qs, k})[0]}, {ir::attr_int("axis", -1)});
  const auto o = b.node("MatMul", {att[0], v})[0];
  const auto merged = b.node("Transpose", {o}, {ir::attr_ints("perm", {1, 0, 2})})[0];
  const auto y = b.node("Reshape", {merged, shape("merged", {l, n, e})})[0];
  b.output(y, DataType::kFloat32);
  const ir::Model model = b.build(kOpset);
  const std::map<std::string, Tensor> feeds{{"x", random_tensor({l, n, e}, 9)}};
  const auto [plain, plan] = plain_and_cpu_plan(model);
  EXPECT_EQ(count_op(plan, "PermutedMatMul"), 2u);
  EXPECT_EQ(count_op(plan, "Transpose"), 0u);
  EXPECT_EQ(count_op(plan, "Div"), 0u);
  const auto [plain2, unfolded] = plain_and_cpu_plan(model, {"matmul_permutes"});
  EXPECT_EQ(count_op(unfolded, "PermutedMatMul"), 0u);
  ir::Graph asked = plain2;  // the CPU backend's answer, as sessions and the builder ask it
  passes::run_cpu_layout_pipeline(asked, {}, {nullptr, cpu::nn::permuted_matmul_native});
  EXPECT_EQ(count_op(asked, "PermutedMatMul"), 2u);
  expect_plan_matches_plain(plain, plan, feeds, y, "[10, 2, 24]");
}

// A Transpose that another node also reads stays, and so does its MatMul's plain form.
TEST(PermutedMatMul, SharedTransposesStay) {
  ir::GraphBuilder b("shared");
  const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({4, 5, 6}));
  const auto w = b.input("w", DataType::kFloat32, ir::sym_shape_from_static({4, 5, 3}));
  const auto xt = b.node("Transpose", {x}, {ir::attr_ints("perm", {0, 2, 1})})[0];
  const auto y = b.node("MatMul", {xt, w})[0];
  const auto z = b.node("Relu", {xt})[0];
  b.output(y, DataType::kFloat32);
  b.output(z, DataType::kFloat32);
  const auto [plain, plan] = plain_and_cpu_plan(b.build(kOpset));
  EXPECT_EQ(count_op(plan, "PermutedMatMul"), 0u);
  EXPECT_EQ(count_op(plan, "MatMul"), 1u);
}

// A product written with its last two axes swapped has no oneDNN kernel: with the backend's
// answer the MatMul still reads its operand through the view, and the output Transpose stays.
TEST(PermutedMatMul, UnsupportedOutputViewKeepsItsTranspose) {
  ir::GraphBuilder b("out_view");
  const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({4, 6, 5}));
  const auto w = b.input("w", DataType::kFloat32, ir::sym_shape_from_static({4, 6, 3}));
  const auto xt = b.node("Transpose", {x}, {ir::attr_ints("perm", {0, 2, 1})})[0];
  const auto p = b.node("MatMul", {xt, w})[0];
  const auto y = b.node("Transpose", {p}, {ir::attr_ints("perm", {0, 2, 1})})[0];
  b.output(y, DataType::kFloat32);
  const ir::Model model = b.build(kOpset);
  ir::Graph plain = model.graph, plan = model.graph;
  passes::run_pipeline(plain, kOpset);
  passes::run_pipeline(plan, kOpset);
  passes::run_cpu_layout_pipeline(plan, {}, {nullptr, cpu::nn::permuted_matmul_native});
  EXPECT_EQ(count_op(plan, "PermutedMatMul"), 1u);
  EXPECT_EQ(count_op(plan, "Transpose"), 1u);
  const std::map<std::string, Tensor> feeds{{"x", random_tensor({4, 6, 5}, 5)},
                                            {"w", random_tensor({4, 6, 3}, 6)}};
  expect_plan_matches_plain(plain, plan, feeds, y, "[4, 3, 5]");
}

// A Transpose without perm (the axes reversed) and one with negative axes fold like any other.
TEST(PermutedMatMul, DefaultAndNegativePermsFold) {
  ir::GraphBuilder b("perms");
  const auto x = b.input("x", DataType::kFloat32, ir::sym_shape_from_static({7, 5}));
  const auto w = b.input("w", DataType::kFloat32, ir::sym_shape_from_static({3, 7, 4}));
  const auto xt = b.node("Transpose", {x})[0];  // [5, 7]
  const auto wt = b.node("Transpose", {w}, {ir::attr_ints("perm", {-3, -2, -1})})[0];
  const auto y = b.node("MatMul", {xt, wt})[0];
  b.output(y, DataType::kFloat32);
  const auto [plain, plan] = plain_and_cpu_plan(b.build(kOpset));
  EXPECT_EQ(count_op(plan, "PermutedMatMul"), 1u);
  EXPECT_EQ(count_op(plan, "Transpose"), 0u);
  const std::map<std::string, Tensor> feeds{{"x", random_tensor({7, 5}, 7)},
                                            {"w", random_tensor({3, 7, 4}, 8)}};
  expect_plan_matches_plain(plain, plan, feeds, y, "[3, 5, 4]");
}

}  // namespace
}  // namespace trtutils
