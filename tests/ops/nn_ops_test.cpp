// Shape inference of the nn op family (Conv, ConvTranspose, pools, Gemm, MatMul, norms).
#include <gtest/gtest.h>

#include "ir/graph_builder.h"
#include "ops/op_registry.h"
#include "trtutils/status.h"

namespace trtutils::ops {
namespace {

using ir::Dim;
using ir::SymShape;

ir::Attribute ints_attr(const std::string& name, std::vector<int64_t> v) {
  return ir::attr_ints(name, v);
}
ir::Attribute int_attr(const std::string& name, int64_t v) {
  return ir::attr_int(name, v);
}
ir::Attribute str_attr(const std::string& name, std::string v) {
  return ir::attr_string(name, v);
}

// Runs the registered shape function on inputs of the given shapes (nullopt = unknown rank);
// returns the output infos.
std::vector<ir::ValueInfo> infer(const std::string& op, std::vector<std::optional<SymShape>> shapes,
                                 std::vector<ir::Attribute> attrs = {}, size_t n_outputs = 1,
                                 DataType dt = DataType::kFloat32) {
  ir::Node node;
  node.op_type = op;
  node.name = "n";
  std::vector<ir::ValueInfo> infos(shapes.size());
  std::vector<const ir::ValueInfo*> ptrs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    node.inputs.push_back("in" + std::to_string(i));
    infos[i].name = node.inputs.back();
    infos[i].dtype = dt;
    infos[i].shape = shapes[i];
    ptrs.push_back(&infos[i]);
  }
  std::vector<ir::ValueInfo> outs(n_outputs);
  for (size_t i = 0; i < n_outputs; ++i) {
    node.outputs.push_back("out" + std::to_string(i));
    outs[i].name = node.outputs.back();
  }
  for (auto& a : attrs) node.attributes[a.name] = a;
  const OpSchema* s = OpRegistry::instance().find("", op);
  EXPECT_NE(s, nullptr) << op;
  InferContext ctx{node, 17, ptrs, std::vector<const Tensor*>(shapes.size(), nullptr), outs};
  s->infer(ctx);
  return ctx.outputs;
}

SymShape S(std::initializer_list<int64_t> v) {
  return SymShape(v.begin(), v.end());
}

TEST(NnOpsInfer, ConvBasicPadsStridesDilations) {
  auto o = infer("Conv", {S({1, 3, 224, 224}), S({64, 3, 7, 7}), S({64})},
                 {ints_attr("pads", {3, 3, 3, 3}), ints_attr("strides", {2, 2})});
  EXPECT_EQ(o[0].dtype, DataType::kFloat32);
  EXPECT_EQ(*o[0].shape, S({1, 64, 112, 112}));
  o = infer("Conv", {S({2, 8, 9, 9}), S({4, 8, 3, 3})}, {ints_attr("dilations", {2, 2})});
  EXPECT_EQ(*o[0].shape, S({2, 4, 5, 5}));
  // Asymmetric pads, 1-D, kernel_shape attribute.
  o = infer("Conv", {S({1, 2, 10}), S({3, 2, 4})},
            {ints_attr("pads", {0, 3}), ints_attr("strides", {3}), ints_attr("kernel_shape", {4})});
  EXPECT_EQ(*o[0].shape, S({1, 3, 4}));
}

TEST(NnOpsInfer, ConvAutoPadAndGroupsAndSymbolicBatch) {
  SymShape x{Dim(std::string("batch")), Dim(32), Dim(7), Dim(8)};
  auto o = infer(
      "Conv", {x, S({32, 1, 3, 3})},
      {int_attr("group", 32), str_attr("auto_pad", "SAME_UPPER"), ints_attr("strides", {2, 2})});
  EXPECT_EQ(*o[0].shape, (SymShape{Dim(std::string("batch")), Dim(32), Dim(4), Dim(4)}));
  o = infer("Conv", {S({1, 4, 7, 8}), S({8, 4, 3, 3})}, {str_attr("auto_pad", "VALID")});
  EXPECT_EQ(*o[0].shape, S({1, 8, 5, 6}));
  // Unknown spatial dim stays unknown; unknown rank gives unknown shape.
  o = infer("Conv", {SymShape{Dim(1), Dim(4), Dim(), Dim(8)}, S({8, 4, 3, 3})});
  EXPECT_FALSE((*o[0].shape)[2].is_static());
  EXPECT_EQ((*o[0].shape)[3].value, 6);
  o = infer("Conv", {std::nullopt, S({8, 4, 3, 3})});
  EXPECT_FALSE(o[0].shape.has_value());
}

TEST(NnOpsInfer, ConvRejectsBadInput) {
  EXPECT_THROW(infer("Conv", {S({1, 4, 8, 8}), S({8, 3, 3, 3})}), Error);  // channels
  EXPECT_THROW(infer("Conv", {S({1, 4, 2, 2}), S({8, 4, 3, 3})}), Error);  // kernel too big
  EXPECT_THROW(infer("Conv", {S({1, 4, 8, 8}), S({8, 4, 3, 3})}, {ints_attr("pads", {1, 1})}),
               Error);
  EXPECT_THROW(
      infer("Conv", {S({1, 4, 8, 8}), S({8, 4, 3, 3})}, {str_attr("auto_pad", "SAME_MIDDLE")}),
      Error);
}

TEST(NnOpsInfer, ConvTranspose) {
  auto o = infer("ConvTranspose", {S({1, 1, 3, 3}), S({1, 2, 3, 3})},
                 {ints_attr("strides", {3, 2}), ints_attr("output_padding", {1, 1})});
  EXPECT_EQ(*o[0].shape, S({1, 2, 10, 8}));
  o = infer("ConvTranspose", {S({1, 1, 3, 3}), S({1, 2, 3, 3})},
            {ints_attr("strides", {3, 2}), ints_attr("output_shape", {10, 8})});
  EXPECT_EQ(*o[0].shape, S({1, 2, 10, 8}));
  o = infer(
      "ConvTranspose", {S({1, 4, 3, 3}), S({4, 3, 3, 3})},
      {int_attr("group", 2), str_attr("auto_pad", "SAME_UPPER"), ints_attr("strides", {2, 2})});
  EXPECT_EQ(*o[0].shape, S({1, 6, 6, 6}));
  o = infer("ConvTranspose", {S({1, 1, 3, 3}), S({1, 2, 3, 3})},
            {ints_attr("pads", {1, 2, 1, 2}), ints_attr("strides", {3, 2})});
  EXPECT_EQ(*o[0].shape, S({1, 2, 7, 3}));
}

TEST(NnOpsInfer, Pools) {
  auto o = infer("MaxPool", {S({1, 64, 112, 112})},
                 {ints_attr("kernel_shape", {3, 3}), ints_attr("pads", {1, 1, 1, 1}),
                  ints_attr("strides", {2, 2})},
                 2);
  EXPECT_EQ(*o[0].shape, S({1, 64, 56, 56}));
  EXPECT_EQ(o[1].dtype, DataType::kInt64);
  EXPECT_EQ(*o[1].shape, S({1, 64, 56, 56}));
  // ceil_mode: 4 -> 2 with kernel 3 stride 2; the window starting in the end pad is dropped.
  o = infer(
      "MaxPool", {S({1, 1, 4, 4})},
      {ints_attr("kernel_shape", {3, 3}), ints_attr("strides", {2, 2}), int_attr("ceil_mode", 1)});
  EXPECT_EQ(*o[0].shape, S({1, 1, 2, 2}));
  o = infer("AveragePool", {S({1, 1, 5, 5})},
            {ints_attr("kernel_shape", {2, 2}), ints_attr("strides", {2, 2}),
             str_attr("auto_pad", "SAME_LOWER")});
  EXPECT_EQ(*o[0].shape, S({1, 1, 3, 3}));
  o = infer("GlobalAveragePool", {S({2, 3, 7, 9})});
  EXPECT_EQ(*o[0].shape, S({2, 3, 1, 1}));
  o = infer("GlobalMaxPool", {S({2, 3, 5})});
  EXPECT_EQ(*o[0].shape, S({2, 3, 1}));
  EXPECT_THROW(infer("MaxPool", {S({1, 1, 4, 4})}), Error);  // kernel_shape required
}

TEST(NnOpsInfer, GemmAndMatMul) {
  auto o = infer("Gemm", {S({8, 2048}), S({1000, 2048}), S({1000})}, {int_attr("transB", 1)});
  EXPECT_EQ(*o[0].shape, S({8, 1000}));
  o = infer("Gemm", {S({5, 3}), S({5, 4})}, {int_attr("transA", 1)});
  EXPECT_EQ(*o[0].shape, S({3, 4}));
  EXPECT_THROW(infer("Gemm", {S({3, 5}), S({4, 5})}), Error);
  EXPECT_THROW(infer("Gemm", {S({3, 5}), S({5, 4}), S({2, 4})}), Error);
  o = infer("MatMul", {S({2, 1, 3, 4}), S({5, 4, 6})});
  EXPECT_EQ(*o[0].shape, S({2, 5, 3, 6}));
  o = infer("MatMul", {S({4}), S({2, 4, 6})});
  EXPECT_EQ(*o[0].shape, S({2, 6}));
  o = infer("MatMul", {S({3, 4}), S({4})});
  EXPECT_EQ(*o[0].shape, S({3}));
  o = infer("MatMul", {S({4}), S({4})});
  EXPECT_EQ(*o[0].shape, S({}));
  EXPECT_THROW(infer("MatMul", {S({3, 4}), S({5, 6})}), Error);
}

TEST(NnOpsInfer, Norms) {
  auto o = infer("BatchNormalization", {S({2, 3, 4, 4}), S({3}), S({3}), S({3}), S({3})});
  EXPECT_EQ(*o[0].shape, S({2, 3, 4, 4}));
  EXPECT_THROW(infer("BatchNormalization", {S({2, 3, 4, 4}), S({3}), S({3}), S({3}), S({3})},
                     {int_attr("training_mode", 1)}),
               Error);
  o = infer("InstanceNormalization", {S({2, 3, 4, 4}), S({3}), S({3})});
  EXPECT_EQ(*o[0].shape, S({2, 3, 4, 4}));
  o = infer("LayerNormalization", {S({2, 3, 4}), S({4}), S({4})}, {int_attr("axis", -1)}, 3);
  EXPECT_EQ(*o[0].shape, S({2, 3, 4}));
  EXPECT_EQ(*o[1].shape, S({2, 3, 1}));
  EXPECT_EQ(*o[2].shape, S({2, 3, 1}));
  EXPECT_EQ(o[1].dtype, DataType::kFloat32);
  o = infer("LayerNormalization", {S({2, 3, 4}), S({3, 4})}, {int_attr("axis", 1)}, 2,
            DataType::kFloat16);
  EXPECT_EQ(o[0].dtype, DataType::kFloat16);
  EXPECT_EQ(*o[1].shape, S({2, 1, 1}));
}

}  // namespace
}  // namespace trtutils::ops
