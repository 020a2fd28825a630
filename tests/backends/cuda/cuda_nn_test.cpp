// CUDA nn ops vs the CPU reference: Conv / FusedConv (cuDNN) over geometries at tile edges,
// pools, Softmax, LayerNormalization, reductions, Gemm and MatMul (cuBLASLt), in float32 and
// float16.
#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

const std::vector<DataType> kFloatTypes = {DataType::kFloat32, DataType::kFloat16};

Tolerance tol_for(DataType dt) {
  return dt == DataType::kFloat32 ? kFp32 : kFp16;
}

struct ConvCase {
  std::string name;
  Shape x, w;
  std::vector<ir::Attribute> attrs;
  bool bias = true;
};

std::vector<ConvCase> conv_cases() {
  return {
      {"1x1", {2, 16, 7, 9}, {8, 16, 1, 1}, {}},
      {"3x3 pad 1", {1, 3, 13, 17}, {5, 3, 3, 3}, {ais("pads", {1, 1, 1, 1})}},
      {"3x3 stride 2",
       {2, 8, 15, 15},
       {16, 8, 3, 3},
       {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 2})}},
      {"depthwise", {1, 32, 14, 14}, {32, 1, 3, 3}, {ai("group", 32), ais("pads", {1, 1, 1, 1})}},
      {"grouped", {2, 8, 9, 9}, {12, 2, 3, 3}, {ai("group", 4)}, false},
      {"dilated",
       {1, 4, 12, 12},
       {4, 4, 3, 3},
       {ais("dilations", {2, 2}), ais("pads", {2, 2, 2, 2})}},
      {"asymmetric pads", {1, 3, 10, 11}, {4, 3, 3, 3}, {ais("pads", {0, 1, 1, 2})}},
      {"same_upper stride 2",
       {1, 3, 10, 10},
       {4, 3, 3, 3},
       {as("auto_pad", "SAME_UPPER"), ais("strides", {2, 2})}},
      {"1-D", {2, 4, 31}, {6, 4, 5}, {ais("pads", {2, 2})}},
      {"3-D", {1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, {ais("pads", {1, 1, 1, 1, 1, 1})}},
      {"stem 7x7",
       {1, 3, 32, 32},
       {8, 3, 7, 7},
       {ais("pads", {3, 3, 3, 3}), ais("strides", {2, 2})}},
  };
}

TEST(CudaConv, MatchesCpu) {
  TRT_REQUIRE_CUDA();
  uint32_t seed = 1;
  for (const auto& c : conv_cases()) {
    for (DataType dt : kFloatTypes) {
      std::vector<In> ins = {feed(random_tensor(dt, c.x, seed++)),
                             weight(random_tensor(dt, c.w, seed++))};
      if (c.bias) ins.push_back(weight(random_tensor(dt, {c.w[0]}, seed++)));
      check_case({"Conv", ins, c.attrs}, tol_for(dt),
                 "Conv " + c.name + " " + std::string(dtype_name(dt)));
    }
  }
}

TEST(CudaConv, FusedEpilogues) {
  TRT_REQUIRE_CUDA();
  struct A {
    const char* act;
    std::vector<float> params;
  };
  const std::vector<A> acts = {{"", {}},        {"Relu", {}},      {"Clip", {0.0f, 6.0f}},
                               {"Sigmoid", {}}, {"HardSwish", {}}, {"LeakyRelu", {0.2f}},
                               {"Silu", {}}};
  const Shape xs{2, 6, 9, 11}, ws{10, 6, 3, 3};
  const Shape ys{2, 10, 9, 11};
  uint32_t seed = 100;
  for (const auto& a : acts) {
    for (bool residual : {false, true}) {
      for (DataType dt : kFloatTypes) {
        std::vector<In> ins = {feed(random_tensor(dt, xs, seed++)),
                               weight(random_tensor(dt, ws, seed++)),
                               weight(random_tensor(dt, {10}, seed++))};
        if (residual) ins.push_back(feed(random_tensor(dt, ys, seed++)));
        std::vector<ir::Attribute> attrs = {ais("pads", {1, 1, 1, 1})};
        if (*a.act) {
          attrs.push_back(as("activation", a.act));
          if (!a.params.empty()) attrs.push_back(afs("activation_params", a.params));
        }
        check_case({"FusedConv", ins, attrs, 1, "com.trtutils"}, tol_for(dt),
                   std::string("FusedConv ") + a.act + (residual ? " + residual " : " ") +
                       std::string(dtype_name(dt)));
      }
    }
  }
}

TEST(CudaConv, Tf32OptionStaysClose) {
  TRT_REQUIRE_CUDA();
  cuda::ExecutorOptions o;
  o.allow_tf32 = true;
  check_case({"Conv",
              {feed(random_tensor(DataType::kFloat32, {2, 32, 14, 14}, 7)),
               weight(random_tensor(DataType::kFloat32, {32, 32, 3, 3}, 8))},
              {ais("pads", {1, 1, 1, 1})}},
             {2e-2, 1e-2}, "Conv tf32", o);
}

TEST(CudaPool, MaxAverageGlobal) {
  TRT_REQUIRE_CUDA();
  uint32_t seed = 200;
  for (DataType dt : kFloatTypes) {
    const Tensor x = random_tensor(dt, {2, 3, 15, 16}, seed++);
    const std::string t(dtype_name(dt));
    check_case({"MaxPool",
                {feed(x)},
                {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1})}},
               kExact, "MaxPool resnet " + t);
    check_case({"MaxPool",
                {feed(x)},
                {ais("kernel_shape", {2, 2}), ais("strides", {2, 2}), ai("ceil_mode", 1)}},
               kExact, "MaxPool ceil " + t);
    check_case({"MaxPool", {feed(x)}, {ais("kernel_shape", {3, 3}), ais("dilations", {2, 2})}},
               kExact, "MaxPool dilated " + t);
    for (int64_t include : {0, 1})
      check_case({"AveragePool",
                  {feed(x)},
                  {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}), ais("pads", {1, 0, 2, 1}),
                   ai("count_include_pad", include)}},
                 tol_for(dt), "AveragePool include_pad " + std::to_string(include) + " " + t);
    check_case({"GlobalAveragePool", {feed(random_tensor(dt, {2, 64, 7, 7}, seed++))}}, tol_for(dt),
               "GlobalAveragePool " + t);
    check_case({"GlobalMaxPool", {feed(random_tensor(dt, {2, 5, 3, 33}, seed++))}}, kExact,
               "GlobalMaxPool " + t);
  }
  check_case({"MaxPool",
              {feed(random_tensor(DataType::kInt8, {1, 4, 9, 9}, seed++, -100, 100))},
              {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1})}},
             kExact, "MaxPool int8");
  for (DataType f8 : {DataType::kFloat8E4M3FN, DataType::kFloat8E5M2})
    check_case({"MaxPool",
                {feed(random_tensor(f8, {1, 4, 9, 9}, seed++, -300, 300))},
                {ais("kernel_shape", {3, 3}), ais("strides", {2, 2}), ais("pads", {1, 1, 1, 1})}},
               kExact, "MaxPool " + std::string(dtype_name(f8)));
  check_case({"AveragePool",
              {feed(random_tensor(DataType::kFloat32, {2, 3, 20}, seed++))},
              {ais("kernel_shape", {4}), ais("strides", {3})}},
             kFp32, "AveragePool 1-D");
}

TEST(CudaSoftmax, RowsAndColumns) {
  TRT_REQUIRE_CUDA();
  uint32_t seed = 300;
  const std::vector<std::pair<Shape, int64_t>> cases = {
      // Rows held in registers up to 1024 (1, 2, 4, 8 or 32 per lane), longer rows re-read.
      {{3, 1}, -1},    {{5, 33}, -1},   {{2, 12, 197, 197}, -1}, {{2, 64}, -1}, {{3, 100}, -1},
      {{2, 1000}, -1}, {{2, 3000}, -1}, {{2, 5, 7}, 1},          {{4, 1025}, 1}};
  for (const auto& [s, axis] : cases)
    for (DataType dt : kFloatTypes)
      for (const char* op : {"Softmax", "LogSoftmax"})
        check_case({op, {feed(random_tensor(dt, s, seed++, -6, 6))}, {ai("axis", axis)}},
                   dt == DataType::kFloat32 ? Tolerance{1e-6, 1e-5} : kFp16,
                   std::string(op) + " " + shape_str(s) + " axis " + std::to_string(axis) + " " +
                       std::string(dtype_name(dt)));
}

TEST(CudaNorm, LayerNormalization) {
  TRT_REQUIRE_CUDA();
  uint32_t seed = 400;
  for (DataType dt : kFloatTypes) {
    const std::string t(dtype_name(dt));
    check_case(
        {"LayerNormalization",
         {feed(random_tensor(dt, {2, 197, 768}, seed++)), weight(random_tensor(dt, {768}, seed++)),
          weight(random_tensor(dt, {768}, seed++))},
         {af("epsilon", 1e-6f)}},
        dt == DataType::kFloat32 ? kFp32 : kFp16, "LayerNorm vit " + t);
    check_case(
        {"LayerNormalization",
         {feed(random_tensor(dt, {4, 33}, seed++)), weight(random_tensor(dt, {33}, seed++))}},
        dt == DataType::kFloat32 ? kFp32 : kFp16, "LayerNorm no bias " + t);
    // 16-byte chunks held in registers (768: 3 or 6 chunks per lane), a row length that is not a
    // multiple of 16 bytes (1500 in float16), and rows too long for the registers (3000).
    check_case(
        {"LayerNormalization",
         {feed(random_tensor(dt, {3, 1500}, seed++)), weight(random_tensor(dt, {1500}, seed++)),
          weight(random_tensor(dt, {1500}, seed++))}},
        dt == DataType::kFloat32 ? kFp32 : kFp16, "LayerNorm 1500 " + t);
    check_case(
        {"LayerNormalization",
         {feed(random_tensor(dt, {2, 3000}, seed++)), weight(random_tensor(dt, {3000}, seed++))}},
        dt == DataType::kFloat32 ? kFp32 : kFp16, "LayerNorm 3000 " + t);
  }
  check_case({"LayerNormalization",
              {feed(random_tensor(DataType::kFloat32, {2, 3, 4}, seed++)),
               weight(random_tensor(DataType::kFloat32, {3, 4}, seed++)),
               weight(random_tensor(DataType::kFloat32, {3, 4}, seed++))},
              {ai("axis", 1)},
              3},
             kFp32, "LayerNorm axis 1 with mean / inv_std");
}

TEST(CudaReduce, Reductions) {
  TRT_REQUIRE_CUDA();
  uint32_t seed = 500;
  const Tensor x = random_tensor(DataType::kFloat32, {2, 5, 7, 9}, seed++, 0.1f, 2);
  check_case({"ReduceMean", {feed(x)}, {ais("axes", {-1})}}, kFp32, "ReduceMean last");
  check_case({"ReduceMean", {feed(x)}, {ais("axes", {2, 3}), ai("keepdims", 1)}}, kFp32,
             "ReduceMean spatial");
  check_case({"ReduceMean", {feed(x)}, {ais("axes", {1}), ai("keepdims", 0)}}, kFp32,
             "ReduceMean inner axis");
  check_case({"ReduceSum", {feed(x), weight(i64({2}, {1, 2}))}, {}, 1, "", 13}, kFp32,
             "ReduceSum axes input");
  check_case({"ReduceMax", {feed(x)}, {ais("axes", {0})}}, kExact, "ReduceMax outer");
  check_case({"ReduceMin", {feed(x)}}, kExact, "ReduceMin all");
  check_case({"ReduceL2", {feed(x)}, {ais("axes", {3})}}, kFp32, "ReduceL2");
  check_case({"ReduceSumSquare", {feed(x)}, {ais("axes", {1, 2})}}, kFp32, "ReduceSumSquare");
  check_case({"ReduceLogSumExp", {feed(x)}, {ais("axes", {3})}}, kFp32, "ReduceLogSumExp");
  check_case({"ReduceMean",
              {feed(random_tensor(DataType::kFloat16, {2, 197, 768}, seed++))},
              {ais("axes", {-1})}},
             kFp16, "ReduceMean float16");
  // A long middle axis (r >= 64) with few outputs: the split reduction (reduce_mid_kernel), r
  // not a multiple of its 16 slices x 8 loads, inner not a multiple of 32.
  const Tensor m = random_tensor(DataType::kFloat32, {3, 300, 40}, seed++, 0.9f, 1.1f);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                         "ReduceL1", "ReduceL2", "ReduceSumSquare"})
    check_case({op, {feed(m)}, {ais("axes", {1})}}, kFp32, std::string(op) + " middle axis");
  check_case({"ReduceMean",
              {feed(random_tensor(DataType::kFloat16, {2, 96, 64}, seed++))},
              {ais("axes", {1})}},
             kFp16, "ReduceMean middle axis float16");
}

TEST(CudaGemm, GemmVariants) {
  TRT_REQUIRE_CUDA();
  uint32_t seed = 600;
  for (DataType dt : kFloatTypes) {
    const std::string t(dtype_name(dt));
    for (int64_t m : {1, 7, 129})
      for (int64_t n : {1, 65}) {
        const int64_t k = 33;
        check_case(
            {"Gemm",
             {feed(random_tensor(dt, {m, k}, seed++)), weight(random_tensor(dt, {k, n}, seed++)),
              weight(random_tensor(dt, {n}, seed++))}},
            tol_for(dt), "Gemm bias " + std::to_string(m) + "x" + std::to_string(n) + " " + t);
      }
    check_case(
        {"Gemm",
         {feed(random_tensor(dt, {33, 7}, seed++)), weight(random_tensor(dt, {65, 33}, seed++)),
          weight(random_tensor(dt, {7, 1}, seed++))},
         {ai("transA", 1), ai("transB", 1), af("alpha", 0.5f), af("beta", 2.0f)}},
        tol_for(dt), "Gemm transposed alpha beta column C " + t);
    check_case(
        {"Gemm",
         {feed(random_tensor(dt, {7, 33}, seed++)), feed(random_tensor(dt, {33, 65}, seed++)),
          feed(random_tensor(dt, {7, 65}, seed++))},
         {af("beta", 0.25f)}},
        tol_for(dt), "Gemm full C " + t);
    check_case({"Gemm",
                {feed(random_tensor(dt, {4, 2048}, seed++)),
                 weight(random_tensor(dt, {1000, 2048}, seed++, -0.05f, 0.05f)),
                 weight(random_tensor(dt, {1000}, seed++))},
                {ai("transB", 1)}},
               tol_for(dt), "Gemm classifier head " + t);
  }
}

TEST(CudaGemm, MatMulBatching) {
  TRT_REQUIRE_CUDA();
  uint32_t seed = 700;
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{5, 33}, {33, 17}},
      {{2, 3, 7, 33}, {33, 17}},
      {{2, 3, 7, 33}, {2, 3, 33, 17}},
      {{2, 1, 7, 8}, {1, 3, 8, 5}},
      {{33}, {33, 17}},
      {{5, 33}, {33}},
      {{12, 197, 64}, {12, 64, 197}},
      {{1, 197, 768}, {768, 2304}},
      {{7, 33}, {4, 33, 9}},
  };
  for (const auto& [a, b] : cases)
    for (DataType dt : kFloatTypes) {
      const bool weight_b = b.size() == 2;
      check_case(
          {"MatMul",
           {feed(random_tensor(dt, a, seed++)),
            weight_b ? weight(random_tensor(dt, b, seed++, -0.2f, 0.2f))
                     : feed(random_tensor(dt, b, seed++, -0.2f, 0.2f))}},
          tol_for(dt),
          "MatMul " + shape_str(a) + " x " + shape_str(b) + " " + std::string(dtype_name(dt)));
    }
}

}  // namespace
}  // namespace trtutils
