#include "ir/graph.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ir/graph_builder.h"
#include "trtutils/status.h"

namespace trtutils::ir {
namespace {

std::vector<std::string> op_order(const Graph& g) {
  std::vector<std::string> r;
  for (const auto& n : g.nodes) r.push_back(n.name);
  return r;
}

TEST(Graph, BuilderMakesAModel) {
  GraphBuilder b("net");
  const auto x = b.input("x", DataType::kFloat32, {Dim("batch"), 3, 8, 8});
  const auto w = b.initializer("w", Tensor(DataType::kFloat32, {4, 3, 3, 3}));
  const auto y = b.node("Conv", {x, w}, {attr_ints("pads", {1, 1, 1, 1}), attr_int("group", 1)});
  ASSERT_EQ(y.size(), 1u);
  const auto z = b.node("Relu", {y[0]}, {}, 1, "", "relu");
  b.output(z[0], DataType::kFloat32);
  const Model m = b.build(17);
  EXPECT_EQ(m.opset(), 17);
  EXPECT_EQ(m.graph.name, "net");
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[0].op_type, "Conv");
  EXPECT_EQ(m.graph.nodes[0].attr_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(m.graph.nodes[0].attr_int("group", 0), 1);
  EXPECT_EQ(m.graph.nodes[1].name, "relu");
  EXPECT_EQ(m.graph.inputs[0].shape->at(0), Dim("batch"));
  EXPECT_EQ(m.graph.inputs[0].shape->at(1), Dim(3));
  EXPECT_TRUE(m.graph.is_initializer("w"));
  EXPECT_EQ(m.graph.outputs[0].name, z[0]);
  const auto multi = b.node("Split", {x}, {attr_int("axis", 1)}, 3);
  EXPECT_EQ(multi.size(), 3u);
  EXPECT_THROW(b.initializer("w", Tensor(DataType::kFloat32, {1})), Error);
}

TEST(Graph, TopologicalSortIsStableAndReordersOutOfOrderNodes) {
  GraphBuilder b;
  const auto x = b.input("x", DataType::kFloat32, {4});
  b.node_with_outputs("Relu", {"b"}, {"c"});  // consumes b before it is produced
  b.node_with_outputs("Neg", {x}, {"a"});
  b.node_with_outputs("Abs", {"a"}, {"b"});
  b.node_with_outputs("Exp", {x}, {"d"});  // independent: keeps its relative place
  b.output("c");
  b.output("d");
  Graph g = b.build_graph();
  g.nodes[0].name = "relu";
  g.nodes[1].name = "neg";
  g.nodes[2].name = "abs";
  g.nodes[3].name = "exp";
  g.topological_sort();
  EXPECT_EQ(op_order(g), (std::vector<std::string>{"neg", "abs", "relu", "exp"}));
  // Already sorted: unchanged.
  g.topological_sort();
  EXPECT_EQ(op_order(g), (std::vector<std::string>{"neg", "abs", "relu", "exp"}));
}

TEST(Graph, TopologicalSortRejectsCyclesAndMissingProducers) {
  {
    GraphBuilder b;
    b.input("x", DataType::kFloat32, {4});
    b.node_with_outputs("Add", {"x", "q"}, {"p"});
    b.node_with_outputs("Neg", {"p"}, {"q"});
    b.output("q");
    Graph g = b.build_graph();
    try {
      g.topological_sort();
      FAIL() << "cycle not detected";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
    }
  }
  {
    GraphBuilder b;
    b.input("x", DataType::kFloat32, {4});
    b.node_with_outputs("Add", {"x", "nowhere"}, {"p"});
    b.output("p");
    Graph g = b.build_graph();
    try {
      g.topological_sort();
      FAIL() << "missing producer not detected";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("'nowhere'"), std::string::npos) << e.what();
    }
  }
  {
    GraphBuilder b;  // two producers of one value
    b.input("x", DataType::kFloat32, {4});
    b.node_with_outputs("Neg", {"x"}, {"p"});
    b.node_with_outputs("Abs", {"x"}, {"p"});
    b.output("p");
    Graph g = b.build_graph();
    EXPECT_THROW(g.topological_sort(), Error);
  }
  {
    GraphBuilder b;  // omitted optional inputs ("") need no producer
    b.input("x", DataType::kFloat32, {4});
    b.node_with_outputs("Clip", {"x", "", ""}, {"y"});
    b.output("y");
    Graph g = b.build_graph();
    EXPECT_NO_THROW(g.topological_sort());
  }
}

TEST(Graph, RemoveDeadNodesKeepsOnlyWhatOutputsNeed) {
  GraphBuilder b;
  const auto x = b.input("x", DataType::kFloat32, {4});
  b.initializer("used", Tensor(DataType::kFloat32, {4}));
  b.initializer("unused", Tensor(DataType::kFloat32, {4}));
  b.node_with_outputs("Add", {x, "used"}, {"a"});
  b.node_with_outputs("Mul", {x, "unused"}, {"dead1"});
  b.node_with_outputs("Neg", {"dead1"}, {"dead2"});
  b.node_with_outputs("Split", {"a"}, {"s0", "s1"});  // one output used keeps the node
  b.output("s1");
  Graph g = b.build_graph();
  g.value_info["dead2"] = ValueInfo{"dead2", DataType::kFloat32, SymShape{4}, {}};
  g.value_info["a"] = ValueInfo{"a", DataType::kFloat32, SymShape{4}, {}};
  g.remove_dead_nodes();
  std::vector<std::string> ops;
  for (const auto& n : g.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"Add", "Split"}));
  EXPECT_TRUE(g.is_initializer("used"));
  EXPECT_FALSE(g.is_initializer("unused"));
  EXPECT_EQ(g.value_info.count("dead2"), 0u);
  EXPECT_EQ(g.value_info.count("a"), 1u);
  EXPECT_EQ(g.inputs.size(), 1u);  // graph inputs stay even if unused
}

TEST(Graph, UniqueNameAndFindValueInfo) {
  GraphBuilder b;
  const auto x = b.input("x", DataType::kFloat16, {2, Dim("n")});
  b.initializer("w", Tensor(DataType::kInt8, {3}));
  b.node_with_outputs("Relu", {x}, {"y"});
  b.output("y", DataType::kFloat16);
  const Graph g = b.build_graph();
  EXPECT_EQ(g.unique_name("z"), "z");
  EXPECT_EQ(g.unique_name("x"), "x_1");
  EXPECT_EQ(g.unique_name("y"), "y_1");
  EXPECT_EQ(g.find_value_info("x")->dtype, DataType::kFloat16);
  EXPECT_EQ(g.find_value_info("w")->dtype, DataType::kInt8);
  EXPECT_EQ(*g.find_value_info("w")->shape, (SymShape{3}));
  EXPECT_EQ(g.find_value_info("y")->dtype, DataType::kFloat16);
  EXPECT_FALSE(g.find_value_info("nothing").has_value());
  EXPECT_EQ(sym_shape_str(*g.find_value_info("x")->shape), "[2, n]");
}

}  // namespace
}  // namespace trtutils::ir
