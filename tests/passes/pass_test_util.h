// Helpers of the graph-pass tests: random float32 tensors, the graph's nodes run in order on the
// CPU backend (a pass's result against the graph before it), element comparison, op counts.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernel_registry.h"
#include "backends/cpu/nn_kernels.h"
#include "ir/graph.h"
#include "ir/graph_builder.h"
#include "passes/passes.h"

namespace trtutils::pass_testing {

inline constexpr int64_t kOpset = 17;

// Normal(0, scale) values.
inline Tensor random_tensor(Shape shape, uint32_t seed, float scale = 1.0f) {
  Tensor t(DataType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Runs the graph's nodes in order on the CPU backend.
inline std::map<std::string, Tensor> execute(const ir::Graph& g,
                                             const std::map<std::string, Tensor>& feeds,
                                             bool reference = false) {
  std::map<std::string, Tensor> env = feeds;
  for (const auto& [name, t] : g.initializers) env[name] = t;
  for (const auto& n : g.nodes) {
    std::vector<const Tensor*> in;
    for (const auto& v : n.inputs) in.push_back(v.empty() ? nullptr : &env.at(v));
    auto outs = cpu::run_node(n, kOpset, in, reference);
    for (size_t k = 0; k < outs.size(); ++k) env[n.outputs[k]] = outs[k];
  }
  std::map<std::string, Tensor> r;
  for (const auto& o : g.outputs) r[o.name] = env.at(o.name);
  return r;
}

// float32 elements within tol relative to max(1, |b|) (the first five misses reported).
inline void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-4) {
  ASSERT_EQ(a.shape(), b.shape());
  int bad = 0;
  for (int64_t i = 0; i < a.numel() && bad < 5; ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    if (!(std::abs(x - y) <= tol * std::max(1.0, std::abs(y)))) {
      ADD_FAILURE() << "element " << i << ": " << x << " vs " << y;
      ++bad;
    }
  }
}

// The model's graph after the standard pipeline, and after it plus the CPU plan's layout step
// (run_cpu_layout_pipeline with `disabled`).
inline std::pair<ir::Graph, ir::Graph> plain_and_cpu_plan(
    const ir::Model& model, const std::set<std::string>& disabled = {}) {
  ir::Graph plain = model.graph, plan = model.graph;
  passes::run_pipeline(plain, kOpset);
  passes::run_pipeline(plan, kOpset);
  passes::run_cpu_layout_pipeline(plan, disabled);
  return {std::move(plain), std::move(plan)};
}

// A com.trtutils::FusedConv reading x, w, b [, r] with `attrs` [and activation `act`].
inline ir::Node fused_conv_node(bool residual, const std::vector<ir::Attribute>& attrs,
                                const std::string& act = "") {
  ir::Node node;
  node.name = "fused";
  node.op_type = "FusedConv";
  node.domain = "com.trtutils";
  node.inputs = {"x", "w", "b"};
  if (residual) node.inputs.push_back("r");
  node.outputs = {"y"};
  for (const auto& a : attrs) node.attributes[a.name] = a;
  if (!act.empty()) node.attributes["activation"] = ir::attr_string("activation", act);
  return node;
}

// The node's first output on the fast path (which must run one oneDNN convolution or our blocked
// depthwise kernel) and on the
// reference kernels.
inline std::pair<Tensor, Tensor> fast_and_reference(const ir::Node& node,
                                                    const std::vector<const Tensor*>& in) {
  const auto before = cpu::nn::onednn_stats();
  auto fast = cpu::run_node(node, kOpset, in, false);
  const auto after = cpu::nn::onednn_stats();
  EXPECT_EQ(after.conv_runs + after.depthwise_runs, before.conv_runs + before.depthwise_runs + 1)
      << "the fast path did not run";
  auto ref = cpu::run_node(node, kOpset, in, true);
  return {fast.at(0), ref.at(0)};
}

inline size_t count_op(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const auto& node : g.nodes) n += node.op_type == op;
  return n;
}

// The plan's output y (fast and reference kernels) against the plain graph's (reference), and
// the plan's shape inference (its fused nodes' schemas) giving y the shape `want_shape`.
inline void expect_plan_matches_plain(const ir::Graph& plain, const ir::Graph& plan,
                                      const std::map<std::string, Tensor>& feeds,
                                      const std::string& y, const std::string& want_shape) {
  const auto want = execute(plain, feeds, /*reference=*/true);
  expect_close(execute(plan, feeds).at(y), want.at(y));
  expect_close(execute(plan, feeds, /*reference=*/true).at(y), want.at(y));
  ir::Graph inferred = plan;
  passes::infer_shapes(inferred, kOpset);
  const auto info = inferred.find_value_info(y);
  ASSERT_TRUE(info && info->shape);
  EXPECT_EQ(ir::sym_shape_str(*info->shape), want_shape);
}

}  // namespace trtutils::pass_testing
