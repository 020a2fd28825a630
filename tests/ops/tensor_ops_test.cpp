// Tensor op family: CPU kernels on known values (ONNX semantics per opset) and shape inference
// (symbolic dims, constant inputs). Resize expectations come from hand computation and from
// torch.nn.functional.interpolate (numbers committed here, no Python at test time).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/tensor_test_util.h"
#include "trtutils/status.h"

namespace trtutils {
namespace {

using namespace tensor_testing;
using ir::Dim;
using ir::SymShape;
constexpr auto F = DataType::kFloat32;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return static_cast<ErrorCode>(-1);
}

// ---- Concat / Split -------------------------------------------------------------------------

TEST(TensorConcat, AxesAndEmptyInputs) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 1}, {5, 6}), e = f32({2, 0}, {});
  expect_tensor(run1(node("Concat", {ai("axis", 1)}), 13, {a, e, b}), F, {2, 3},
                {1, 2, 5, 3, 4, 6});
  expect_tensor(run1(node("Concat", {ai("axis", -2)}), 13, {a, f32({1, 2}, {7, 8})}), F, {3, 2},
                {1, 2, 3, 4, 7, 8});
  EXPECT_EQ(code_of([&] {
              run1(node("Concat", {ai("axis", 0)}), 13, {a, b});
            }),
            ErrorCode::kInvalidArgument);
}

TEST(TensorConcat, Int64AndInt4) {
  expect_tensor(run1(node("Concat", {ai("axis", 0)}), 13, {i64({2}, {kMax, -1}), i64({1}, {kMin})}),
                DataType::kInt64, {3}, {9.223372036854775807e18, -1, -9.223372036854775808e18});
  Tensor a(DataType::kInt4, {3}), b(DataType::kInt4, {2});
  a.data<uint8_t>()[0] = 0x21;  // 1, 2
  a.data<uint8_t>()[1] = 0x0d;  // -3
  b.data<uint8_t>()[0] = 0x87;  // 7, -8
  const Tensor y = run1(node("Concat", {ai("axis", 0)}), 21, {a, b});
  expect_tensor(y, DataType::kInt4, {5}, {1, 2, -3, 7, -8});
  EXPECT_EQ(y.data<uint8_t>()[0], 0x21);
  EXPECT_EQ(y.data<uint8_t>()[1], 0x7d);
  EXPECT_EQ(y.data<uint8_t>()[2], 0x08);
}

TEST(TensorSplit, AttributeInputNumOutputsAndEqual) {
  const Tensor x = iota_f32({2, 5});
  // opset 11: split attribute
  auto ys = run(node("Split", {ai("axis", 1), ais("split", {2, 3})}, 2), 11, {x});
  expect_tensor(ys[0], F, {2, 2}, {0, 1, 5, 6});
  expect_tensor(ys[1], F, {2, 3}, {2, 3, 4, 7, 8, 9});
  // opset 13: split input, zero-size chunk
  ys = run(node("Split", {ai("axis", -1)}, 3), 13, {x, i64({3}, {4, 0, 1})});
  expect_tensor(ys[0], F, {2, 4}, {0, 1, 2, 3, 5, 6, 7, 8});
  expect_tensor(ys[1], F, {2, 0}, {});
  expect_tensor(ys[2], F, {2, 1}, {4, 9});
  // opset 18: num_outputs with an uneven last chunk (ceil(5/3) = 2 -> 2, 2, 1)
  ys = run(node("Split", {ai("axis", 1), ai("num_outputs", 3)}, 3), 18, {x});
  expect_tensor(ys[0], F, {2, 2}, {0, 1, 5, 6});
  expect_tensor(ys[1], F, {2, 2}, {2, 3, 7, 8});
  expect_tensor(ys[2], F, {2, 1}, {4, 9});
  // equal parts along axis 0 (default)
  ys = run(node("Split", {}, 2), 13, {x});
  expect_tensor(ys[1], F, {1, 5}, {5, 6, 7, 8, 9});
  // uneven without num_outputs, and a split that does not sum up, are errors
  EXPECT_EQ(code_of([&] { run(node("Split", {ai("axis", 1)}, 2), 13, {x}); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              run(node("Split", {ai("axis", 1)}, 2), 13, {x, i64({2}, {1, 1})});
            }),
            ErrorCode::kInvalidArgument);
}

// ---- Slice ----------------------------------------------------------------------------------

TEST(TensorSlice, OpsetOneAttributes) {
  const Tensor x = iota_f32({3, 4});
  expect_tensor(
      run1(node("Slice", {ais("starts", {1, -3}), ais("ends", {1000, -1}), ais("axes", {0, 1})}), 9,
           {x}),
      F, {2, 2}, {5, 6, 9, 10});
  // axes default to 0..k-1
  expect_tensor(run1(node("Slice", {ais("starts", {2}), ais("ends", {3})}), 1, {x}), F, {1, 4},
                {8, 9, 10, 11});
}

TEST(TensorSlice, InputsStepsClampingAndLimits) {
  const Tensor x = iota_f32({3, 5});
  // negative step over the whole axis with INT64_MIN end
  expect_tensor(
      run1(node("Slice"), 13, {x, i64({1}, {-1}), i64({1}, {kMin}), i64({1}, {1}), i64({1}, {-1})}),
      F, {3, 5}, {4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 14, 13, 12, 11, 10});
  // step 2 with INT64_MAX end, start clamped
  expect_tensor(
      run1(node("Slice"), 13,
           {x, i64({2}, {-100, 1}), i64({2}, {kMax, kMax}), i64({2}, {0, 1}), i64({2}, {2, 2})}),
      F, {2, 2}, {1, 3, 11, 13});
  // negative step 2 from beyond the end, int32 starts/ends, negative axes
  expect_tensor(
      run1(node("Slice"), 13, {x, i32({1}, {100}), i32({1}, {0}), i32({1}, {-1}), i32({1}, {-2})}),
      F, {3, 2}, {4, 2, 9, 7, 14, 12});
  // empty result
  expect_tensor(run1(node("Slice"), 13, {x, i64({1}, {3}), i64({1}, {1}), none(), none()}), F,
                {0, 5}, {});
  EXPECT_EQ(code_of([&] {
              run1(node("Slice"), 13, {x, i64({1}, {0}), i64({1}, {1}), none(), i64({1}, {0})});
            }),
            ErrorCode::kInvalidArgument);
}

// ---- Gather ---------------------------------------------------------------------------------

TEST(TensorGather, AxesNegativeIndicesAndIndexTypes) {
  const Tensor x = iota_f32({3, 4});
  expect_tensor(run1(node("Gather"), 13, {x, i64({2, 2}, {0, 2, -1, 1})}), F, {2, 2, 4},
                {0, 1, 2, 3, 8, 9, 10, 11, 8, 9, 10, 11, 4, 5, 6, 7});
  expect_tensor(run1(node("Gather", {ai("axis", 1)}), 13, {x, i32({2}, {3, -4})}), F, {3, 2},
                {3, 0, 7, 4, 11, 8});
  // scalar index drops the axis
  expect_tensor(run1(node("Gather", {ai("axis", -1)}), 13, {x, i64({}, {2})}), F, {3}, {2, 6, 10});
  EXPECT_EQ(code_of([&] {
              run1(node("Gather"), 13, {x, i64({1}, {3})});
            }),
            ErrorCode::kInvalidArgument);
  // uint16 data
  const Tensor u = make<uint16_t>(DataType::kUInt16, {4}, {10, 20, 30, 65535});
  expect_tensor(run1(node("Gather"), 13, {u, i64({2}, {3, 0})}), DataType::kUInt16, {2},
                {65535, 10});
}

// ---- Reshape-like ---------------------------------------------------------------------------

TEST(TensorReshape, ZeroCopyMinusOneAllowZero) {
  const Tensor x = iota_f32({2, 3, 4});
  expect_tensor(run1(node("Reshape"), 13, {x, i64({2}, {0, -1})}), F, {2, 12},
                values(iota_f32({24})));
  EXPECT_EQ(run1(node("Reshape"), 13, {x, i64({3}, {-1, 2, 2})}).shape(), (Shape{6, 2, 2}));
  // opset 1-4: attribute
  EXPECT_EQ(run1(node("Reshape", {ais("shape", {4, 0, 2})}), 4, {x}).shape(), (Shape{4, 3, 2}));
  // allowzero: 0 is a real 0
  const Tensor empty = f32({0, 3}, {});
  EXPECT_EQ(run1(node("Reshape", {ai("allowzero", 1)}), 14, {empty, i64({2}, {3, 0})}).shape(),
            (Shape{3, 0}));
  EXPECT_EQ(code_of([&] {
              run1(node("Reshape"), 13, {x, i64({2}, {5, -1})});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              run1(node("Reshape"), 13, {x, i64({2}, {-1, -1})});
            }),
            ErrorCode::kInvalidArgument);
}

TEST(TensorFlattenSqueezeUnsqueeze, Shapes) {
  const Tensor x = iota_f32({2, 1, 3, 1});
  EXPECT_EQ(run1(node("Flatten"), 13, {x}).shape(), (Shape{2, 3}));
  EXPECT_EQ(run1(node("Flatten", {ai("axis", 0)}), 13, {x}).shape(), (Shape{1, 6}));
  EXPECT_EQ(run1(node("Flatten", {ai("axis", 4)}), 13, {x}).shape(), (Shape{6, 1}));
  EXPECT_EQ(run1(node("Flatten", {ai("axis", -1)}), 13, {x}).shape(), (Shape{6, 1}));
  EXPECT_EQ(run1(node("Squeeze"), 13, {x}).shape(), (Shape{2, 3}));
  EXPECT_EQ(run1(node("Squeeze"), 13, {x, i64({1}, {-1})}).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(run1(node("Squeeze", {ais("axes", {1})}), 11, {x}).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(code_of([&] {
              run1(node("Squeeze"), 13, {x, i64({1}, {0})});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(run1(node("Unsqueeze"), 13, {x, i64({2}, {-1, 0})}).shape(), (Shape{1, 2, 1, 3, 1, 1}));
  EXPECT_EQ(run1(node("Unsqueeze", {ais("axes", {2})}), 11, {iota_f32({2, 3})}).shape(),
            (Shape{2, 3, 1}));
  expect_tensor(run1(node("Unsqueeze"), 13, {f32({}, {5}), i64({1}, {0})}), F, {1}, {5});
  EXPECT_EQ(code_of([&] {
              run1(node("Unsqueeze"), 13, {x, i64({2}, {1, 1})});
            }),
            ErrorCode::kInvalidArgument);
}

// ---- Transpose / Expand / Tile --------------------------------------------------------------

TEST(TensorTranspose, DefaultAndPerm) {
  const Tensor x = iota_f32({2, 3, 4});
  const Tensor d = run1(node("Transpose"), 13, {x});
  EXPECT_EQ(d.shape(), (Shape{4, 3, 2}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k)
        EXPECT_EQ(d.data<float>()[k * 6 + j * 2 + i], x.data<float>()[i * 12 + j * 4 + k]);
  expect_tensor(run1(node("Transpose", {ais("perm", {1, 0})}), 13,
                     {make<int64_t>(DataType::kInt64, {2, 3}, {1, 2, 3, 4, 5, 6})}),
                DataType::kInt64, {3, 2}, {1, 4, 2, 5, 3, 6});
  // bool and int4
  Tensor b(DataType::kBool, {2, 2});
  b.data<uint8_t>()[1] = 1;
  expect_tensor(run1(node("Transpose"), 13, {b}), DataType::kBool, {2, 2}, {0, 0, 1, 0});
  Tensor q(DataType::kUInt4, {2, 2});
  q.data<uint8_t>()[0] = 0x21;
  q.data<uint8_t>()[1] = 0x43;
  expect_tensor(run1(node("Transpose"), 21, {q}), DataType::kUInt4, {2, 2}, {1, 3, 2, 4});
  EXPECT_EQ(code_of([&] {
              run1(node("Transpose", {ais("perm", {0, 0, 1})}), 13, {x});
            }),
            ErrorCode::kInvalidArgument);
}

TEST(TensorTranspose, AllPermutationsMatchNaiveIndexing) {
  for (const Shape& shape : {Shape{2, 3, 1, 4}, Shape{3, 1, 5, 40}, Shape{1, 33, 1, 35}}) {
    for (DataType dt :
         {DataType::kFloat32, DataType::kInt64, DataType::kUInt8, DataType::kFloat16}) {
      Tensor x(dt, shape);
      const size_t esz = static_cast<size_t>(dtype_bits(dt) / 8);
      for (size_t i = 0; i < x.nbytes(); ++i)
        x.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7 + 3);
      std::vector<int64_t> perm = {0, 1, 2, 3};
      do {
        const Tensor y = run1(node("Transpose", {ais("perm", perm)}), 13, {x});
        Shape out(4);
        for (size_t d = 0; d < 4; ++d) out[d] = shape[perm[d]];
        ASSERT_EQ(y.shape(), out);
        std::vector<int64_t> in_idx(4);
        for (int64_t e = 0; e < y.numel(); ++e) {
          int64_t rem = e;
          for (size_t d = 4; d-- > 0;) {
            in_idx[perm[d]] = rem % out[d];
            rem /= out[d];
          }
          const int64_t src =
              ((in_idx[0] * shape[1] + in_idx[1]) * shape[2] + in_idx[2]) * shape[3] + in_idx[3];
          ASSERT_EQ(std::memcmp(y.data<uint8_t>() + e * esz, x.data<uint8_t>() + src * esz, esz), 0)
              << shape_str(shape) << " perm " << shape_str(perm) << " element " << e;
        }
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  }
}

TEST(TensorExpand, BidirectionalBroadcast) {
  const Tensor x = f32({3, 1}, {1, 2, 3});
  expect_tensor(run1(node("Expand"), 13, {x, i64({3}, {2, 1, 2})}), F, {2, 3, 2},
                {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  // a target dim of 1 keeps the input's
  expect_tensor(run1(node("Expand"), 13, {x, i64({1}, {1})}), F, {3, 1}, {1, 2, 3});
  EXPECT_EQ(code_of([&] {
              run1(node("Expand"), 13, {x, i64({2}, {2, 2})});
            }),
            ErrorCode::kInvalidArgument);
}

TEST(TensorTile, Repeats) {
  expect_tensor(run1(node("Tile"), 13, {f32({2, 2}, {1, 2, 3, 4}), i64({2}, {2, 3})}), F, {4, 6},
                {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  EXPECT_EQ(run1(node("Tile"), 13, {f32({2}, {1, 2}), i64({1}, {0})}).shape(), (Shape{0}));
}

// ---- Dropout (inference) / ScatterND ---------------------------------------------------------

TEST(TensorDropout, InferenceIsIdentityTrainingIsRefused) {
  const Tensor x = f32({2, 2}, {1, -2, 3, -4});
  Tensor no(DataType::kBool, {}), yes(DataType::kBool, {});
  yes.data<uint8_t>()[0] = 1;
  // opset 13: no training_mode / training_mode false; the mask is all true.
  const std::vector<Tensor> o = run(node("Dropout", {}, 2), 13, {x, f32({}, {0.3f})});
  expect_tensor(o.at(0), F, {2, 2}, {1, -2, 3, -4});
  expect_tensor(o.at(1), DataType::kBool, {2, 2}, {1, 1, 1, 1});
  expect_tensor(run1(node("Dropout"), 13, {x, f32({}, {0.5f}), no}), F, {2, 2}, {1, -2, 3, -4});
  // training mode with ratio 0 (torchvision's Swin exports) is still the identity ...
  expect_tensor(run1(node("Dropout"), 13, {x, f32({}, {0.0f}), yes}), F, {2, 2}, {1, -2, 3, -4});
  // ... with a non-zero ratio (given or the default 0.5) it is random: refused.
  EXPECT_EQ(code_of([&] {
              run1(node("Dropout"), 13, {x, f32({}, {0.1f}), yes});
            }),
            ErrorCode::kNotSupported);
  EXPECT_EQ(code_of([&] {
              run1(node("Dropout"), 13, {x, none(), yes});
            }),
            ErrorCode::kNotSupported);
  // opset 10: inference always.
  expect_tensor(run1(node("Dropout", {af("ratio", 0.5f)}), 10, {x}), F, {2, 2}, {1, -2, 3, -4});
}

TEST(TensorScatterND, SlicesReductionsAndErrors) {
  const Tensor data = iota_f32({2, 3});  // 0..5
  // Whole rows (k = 1), a negative index.
  expect_tensor(run1(node("ScatterND"), 13, {data, i64({1, 1}, {-1}), f32({1, 3}, {7, 8, 9})}), F,
                {2, 3}, {0, 1, 2, 7, 8, 9});
  // Elements (k = 2).
  expect_tensor(run1(node("ScatterND"), 13, {data, i64({2, 2}, {0, 1, 1, 2}), f32({2}, {-1, -2})}),
                F, {2, 3}, {0, -1, 2, 3, 4, -2});
  // Reductions (opset 16 / 18).
  expect_tensor(run1(node("ScatterND", {as("reduction", "add")}), 16,
                     {data, i64({2, 2}, {0, 0, 0, 0}), f32({2}, {10, 20})}),
                F, {2, 3}, {30, 1, 2, 3, 4, 5});
  expect_tensor(run1(node("ScatterND", {as("reduction", "max")}), 18,
                     {data, i64({1, 1}, {0}), f32({1, 3}, {-1, 5, 1})}),
                F, {2, 3}, {0, 5, 2, 3, 4, 5});
  expect_tensor(run1(node("ScatterND"), 13, {i64({3}, {1, 2, 3}), i64({1, 1}, {1}), i64({1}, {9})}),
                DataType::kInt64, {3}, {1, 9, 3});
  // Out-of-range index, wrong updates shape, k past the rank.
  EXPECT_EQ(code_of([&] {
              run1(node("ScatterND"), 13, {data, i64({1, 1}, {2}), f32({1, 3}, {1, 2, 3})});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              run1(node("ScatterND"), 13, {data, i64({1, 1}, {0}), f32({1, 2}, {1, 2})});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              run1(node("ScatterND"), 13, {data, i64({1, 3}, {0, 0, 0}), f32({1}, {1})});
            }),
            ErrorCode::kInvalidArgument);
}

// ---- TopK / NonZero / GatherND (detection post-processing) --------------------------------

TEST(TensorTopK, OrderTiesAxesAndNaN) {
  // Ties: the lower index first; the middle axis of [2, 3, 2].
  const Tensor x = f32({2, 3, 2}, {1, 5, 3, 5, 3, 0, -1, 2, 7, 2, 7, 2});
  const std::vector<Tensor> o = run(node("TopK", {ai("axis", 1)}, 2), 13, {x, i64({1}, {2})});
  expect_tensor(o.at(0), F, {2, 2, 2}, {3, 5, 3, 5, 7, 2, 7, 2});
  expect_tensor(o.at(1), DataType::kInt64, {2, 2, 2}, {1, 0, 2, 1, 1, 0, 2, 1});
  // Smallest (opset 11), K = 0, K from the attribute (opset 1).
  const Tensor v = f32({5}, {4, -2, 4, 9, -2});
  const std::vector<Tensor> s = run(node("TopK", {ai("largest", 0)}, 2), 11, {v, i64({1}, {3})});
  expect_tensor(s.at(0), F, {3}, {-2, -2, 4});
  expect_tensor(s.at(1), DataType::kInt64, {3}, {1, 4, 0});
  expect_tensor(run(node("TopK", {}, 2), 11, {v, i64({1}, {0})}).at(0), F, {0}, {});
  expect_tensor(run(node("TopK", {ai("k", 2)}, 2), 1, {v}).at(0), F, {2}, {9, 4});
  // NaN counts as the largest value; int64 beyond float precision.
  const std::vector<Tensor> n =
      run(node("TopK", {}, 2), 11, {f32({3}, {1, std::nanf(""), 2}), i64({1}, {2})});
  EXPECT_TRUE(std::isnan(n.at(0).data<float>()[0]));
  EXPECT_EQ(n.at(1).data<int64_t>()[0], 1);
  expect_tensor(run(node("TopK", {}, 2), 11, {i64({3}, {kMax - 1, kMax, 0}), i64({1}, {1})}).at(1),
                DataType::kInt64, {1}, {1});
  EXPECT_EQ(code_of([&] {
              run(node("TopK", {}, 2), 11, {v, i64({1}, {6})});
            }),
            ErrorCode::kInvalidArgument);
}

TEST(TensorNonZero, CoordinatesInRowMajorOrder) {
  expect_tensor(run1(node("NonZero"), 13, {f32({2, 3}, {0, 1, -0.0f, 2, 0, std::nanf("")})}),
                DataType::kInt64, {2, 3}, {0, 1, 1, 1, 0, 2});
  Tensor b(DataType::kBool, {3});
  b.data<uint8_t>()[2] = 1;
  expect_tensor(run1(node("NonZero"), 13, {b}), DataType::kInt64, {1, 1}, {2});
  expect_tensor(run1(node("NonZero"), 13, {f32({2}, {0, 0})}), DataType::kInt64, {1, 0}, {});
}

TEST(TensorGatherND, SlicesBatchDimsAndErrors) {
  const Tensor data = iota_f32({2, 2, 3});  // 0..11
  // k = 1: rows of [2, 3]; k = 3: elements; negative indices.
  expect_tensor(run1(node("GatherND"), 13, {data, i64({1, 1}, {-1})}), F, {1, 2, 3},
                {6, 7, 8, 9, 10, 11});
  expect_tensor(run1(node("GatherND"), 13, {data, i64({2, 3}, {0, 1, 2, 1, 0, -3})}), F, {2},
                {5, 6});
  // batch_dims = 1: per batch, rows of [3].
  expect_tensor(run1(node("GatherND", {ai("batch_dims", 1)}), 13, {data, i64({2, 1}, {1, 0})}), F,
                {2, 3}, {3, 4, 5, 6, 7, 8});
  EXPECT_EQ(code_of([&] {
              run1(node("GatherND"), 13, {data, i64({1, 1}, {2})});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              run1(node("GatherND"), 13, {data, i64({1, 4}, {0, 0, 0, 0})});
            }),
            ErrorCode::kInvalidArgument);
}

TEST(TensorShapes, TopKNonZeroGatherND) {
  const Tensor k = i64({1}, {5});
  const auto topk =
      infer(node("TopK", {ai("axis", 1)}, 2), 13, {{F, SymShape{Dim("n"), 10, 4}}, cin(k)});
  ASSERT_EQ(topk.size(), 2u);
  EXPECT_EQ(topk[0].shape, (SymShape{Dim("n"), 5, 4}));
  EXPECT_EQ(topk[1].dtype, DataType::kInt64);
  EXPECT_EQ(topk[1].shape, (SymShape{Dim("n"), 5, 4}));
  const auto nz = infer(node("NonZero"), 13, {{F, SymShape{3, 4}}});
  EXPECT_EQ(nz[0].dtype, DataType::kInt64);
  ASSERT_TRUE(nz[0].shape.has_value());
  ASSERT_EQ(nz[0].shape->size(), 2u);
  EXPECT_EQ((*nz[0].shape)[0].value, 2);
  EXPECT_FALSE((*nz[0].shape)[1].is_static());
  const auto g = infer(node("GatherND", {ai("batch_dims", 1)}), 13,
                       {{F, SymShape{2, 5, 6, 7}}, {DataType::kInt64, SymShape{2, 4, 2}}});
  EXPECT_EQ(g[0].shape, (SymShape{2, 4, 7}));
}

// ---- Pad ------------------------------------------------------------------------------------

TEST(TensorPad, ModesAndOpsets) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor pads = i64({4}, {0, 2, 1, 1});  // begin (0, 2), end (1, 1)
  expect_tensor(run1(node("Pad"), 13, {x, pads, f32({}, {9})}), F, {3, 6},
                {9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9, 9, 9, 9, 9, 9});
  expect_tensor(run1(node("Pad", {as("mode", "reflect")}), 13, {x, pads}), F, {3, 6},
                {3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2});
  expect_tensor(run1(node("Pad", {as("mode", "edge")}), 13, {x, pads}), F, {3, 6},
                {1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6, 4, 4, 4, 5, 6, 6});
  expect_tensor(run1(node("Pad", {as("mode", "wrap")}), 19, {x, pads}), F, {3, 6},
                {2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4, 2, 3, 1, 2, 3, 1});
  // opset 2: attributes, value as float
  expect_tensor(run1(node("Pad", {ais("pads", {1, 0, 0, 0}), af("value", -1)}), 2, {x}), F, {3, 3},
                {-1, -1, -1, 1, 2, 3, 4, 5, 6});
  // negative pads crop; opset 18 axes
  expect_tensor(run1(node("Pad"), 13, {x, i64({4}, {0, -1, 0, -1}), none()}), F, {2, 1}, {2, 5});
  expect_tensor(run1(node("Pad"), 18, {x, i64({2}, {1, 0}), none(), i64({1}, {-1})}), F, {2, 4},
                {0, 1, 2, 3, 0, 4, 5, 6});
  // integer data with an integer constant
  expect_tensor(run1(node("Pad"), 13, {i32({2}, {7, 8}), i64({2}, {1, 1}), i32({}, {-5})}),
                DataType::kInt32, {4}, {-5, 7, 8, -5});
  EXPECT_EQ(code_of([&] {
              run1(node("Pad", {as("mode", "wrap")}), 18, {x, pads});
            }),
            ErrorCode::kNotSupported);
}

// ---- Shape ops ------------------------------------------------------------------------------

TEST(TensorShapeOps, ShapeSizeConstantOfShapeRange) {
  const Tensor x = iota_f32({2, 3, 4});
  expect_tensor(run1(node("Shape"), 13, {x}), DataType::kInt64, {3}, {2, 3, 4});
  expect_tensor(run1(node("Shape", {ai("start", -2)}), 15, {x}), DataType::kInt64, {2}, {3, 4});
  expect_tensor(run1(node("Shape", {ai("start", 1), ai("end", -1)}), 15, {x}), DataType::kInt64,
                {1}, {3});
  expect_tensor(run1(node("Shape", {ai("start", 5)}), 15, {x}), DataType::kInt64, {0}, {});
  expect_tensor(run1(node("Size"), 13, {x}), DataType::kInt64, {}, {24});
  expect_tensor(run1(node("ConstantOfShape"), 9, {i64({2}, {2, 1})}), F, {2, 1}, {0, 0});
  expect_tensor(run1(node("ConstantOfShape", {at("value", i32({1}, {7}))}), 9, {i64({1}, {3})}),
                DataType::kInt32, {3}, {7, 7, 7});
  expect_tensor(run1(node("ConstantOfShape"), 9, {i64({1}, {0})}), F, {0}, {});
  expect_tensor(run1(node("Range"), 11, {f32({}, {1}), f32({}, {2}), f32({}, {0.25f})}), F, {4},
                {1, 1.25, 1.5, 1.75});
  expect_tensor(run1(node("Range"), 11, {i32({}, {10}), i32({}, {3}), i32({}, {-3})}),
                DataType::kInt32, {3}, {10, 7, 4});
  expect_tensor(run1(node("Range"), 11, {i64({}, {0}), i64({}, {-1}), i64({}, {1})}),
                DataType::kInt64, {0}, {});
}

// ---- Resize / Upsample -----------------------------------------------------------------------

Tensor resize_input() {
  return f32({1, 1, 3, 4}, {-2, -0.5f, 1, 2.5f, 4, 5.5f, 7.25f, 8.5f, 10, 11.5f, 13, 14.5f});
}
ir::Node resize(const std::string& mode, const std::string& coord,
                const std::string& nearest = "round_prefer_floor") {
  return node("Resize", {as("mode", mode), as("coordinate_transformation_mode", coord),
                         as("nearest_mode", nearest)});
}

TEST(ResizeLinear, HandComputedHalfPixel) {
  // [0, 10] x2, half_pixel: coordinates -0.25, 0.25, 0.75, 1.25 -> clamp -> 0, 2.5, 7.5, 10
  expect_tensor(
      run1(resize("linear", "half_pixel"), 13, {f32({2}, {0, 10}), none(), f32({1}, {2})}), F, {4},
      {0, 2.5, 7.5, 10}, 1e-6);
  // align_corners 3 -> 5: coordinates 0, .5, 1, 1.5, 2
  expect_tensor(run1(resize("linear", "align_corners"), 13,
                     {f32({3}, {0, 4, 6}), none(), none(), i64({1}, {5})}),
                F, {5}, {0, 2, 4, 5, 6}, 1e-6);
  // asymmetric 2 -> 4: coordinates 0, .5, 1, 1.5 (clamped to 1)
  expect_tensor(run1(resize("linear", "asymmetric"), 13, {f32({2}, {0, 8}), none(), f32({1}, {2})}),
                F, {4}, {0, 4, 8, 8}, 1e-6);
}

TEST(ResizeLinear, MatchesTorchBilinear) {
  // F.interpolate(x, size=(5, 7), mode='bilinear', align_corners=False)
  const std::vector<double> hp = {-2,       -1.464286, -0.6071428, 0.2500002, 1.107143, 1.964286,
                                  2.5,      0.4000002, 0.9357144,  1.792857,  2.7,      3.600001,
                                  4.400001, 4.900001,  4,          4.535715,  5.392858, 6.375,
                                  7.339286, 8.053572,  8.500001,   7.6,       8.135715, 8.992858,
                                  9.900001, 10.8,      11.6,       12.1,      10,       10.53571,
                                  11.39286, 12.25,     13.10714,   13.96429,  14.5};
  const Tensor sizes = i64({4}, {1, 1, 5, 7});
  expect_tensor(
      run1(resize("linear", "pytorch_half_pixel"), 13, {resize_input(), none(), none(), sizes}), F,
      {1, 1, 5, 7}, hp, 2e-5);
  expect_tensor(run1(resize("linear", "half_pixel"), 13, {resize_input(), none(), none(), sizes}),
                F, {1, 1, 5, 7}, hp, 2e-5);
  // align_corners=True
  const std::vector<double> ac = {-2,   -1.25,  -0.5,  0.25,   1,     1.75, 2.5,    1,      1.75,
                                  2.5,  3.3125, 4.125, 4.8125, 5.5,   4,    4.75,   5.5,    6.375,
                                  7.25, 7.875,  8.5,   7,      7.75,  8.5,  9.3125, 10.125, 10.8125,
                                  11.5, 10,     10.75, 11.5,   12.25, 13,   13.75,  14.5};
  expect_tensor(
      run1(resize("linear", "align_corners"), 13, {resize_input(), none(), none(), sizes}), F,
      {1, 1, 5, 7}, ac, 2e-5);
  // downsampling to 2x3 (no antialias)
  expect_tensor(run1(resize("linear", "pytorch_half_pixel"), 13,
                     {resize_input(), none(), none(), i64({4}, {1, 1, 2, 3})}),
                F, {1, 1, 2, 3}, {-0.25, 1.78125, 3.760417, 8.75, 10.78125, 12.76042}, 2e-5);
}

TEST(ResizeLinear, MatchesTorchTrilinear) {
  Tensor x(F, {1, 1, 2, 3, 4});
  for (int i = 0; i < 24; ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i * i);
  const std::vector<double> want = {
      0,        0.05,     0.15,     0.35,     0.6500001, 0.9,      0.64,     0.8500001, 1.163333,
      1.576667, 2.09,     2.5,      1.6,      2.05,      2.683334, 3.416667, 4.25,      4.900001,
      4.48,     5.170001, 6.123334, 7.176668, 8.330001,  9.220001, 6.4,      7.25,      8.416667,
      9.683333, 11.05,    12.1,     7.2,      7.85,      8.75,     9.75,     10.85,     11.7,
      9.76,     10.57,    11.68333, 12.89667, 14.21,     15.22,    13.6,     14.65,     16.08333,
      17.61667, 19.25,    20.5,     19.36,    20.65,     22.40333, 24.25667, 26.21,     27.7,
      23.2,     24.65,    26.61667, 28.68333, 30.85,     32.5,     14.4,     15.65,     17.35,
      19.15,    21.05,    22.5,     18.88,    20.29,     22.20333, 24.21667, 26.33,     27.94,
      25.6,     27.25,    29.48333, 31.81667, 34.25,     36.1,     34.24,    36.13,     38.68333,
      41.33667, 44.09,    46.18,    40,       42.05,     44.81667, 47.68333, 50.65,     52.9};
  expect_tensor(
      run1(resize("linear", "half_pixel"), 13, {x, none(), none(), i64({5}, {1, 1, 3, 5, 6})}), F,
      {1, 1, 3, 5, 6}, want, 5e-5);
}

TEST(ResizeCubic, MatchesTorchBicubic) {
  const std::vector<double> want = {
      -2.724826,  -2.155656, -1.230003, -0.3402495, 0.555376, 1.495478, 2.075206,
      -0.2528218, 0.3077978, 1.235579,  2.214284,   3.164845, 4.023391, 4.533417,
      3.851178,   4.403493,  5.33334,   6.398438,   7.402354, 8.181691, 8.624022,
      7.955178,   8.515794,  9.443575,  10.42228,   11.37284, 12.23139, 12.74142,
      10.42718,   10.99634,  11.922,    12.81175,   13.70738, 14.64748, 15.22721};
  expect_tensor(run1(resize("cubic", "pytorch_half_pixel"), 13,
                     {resize_input(), none(), none(), i64({4}, {1, 1, 5, 7})}),
                F, {1, 1, 5, 7}, want, 5e-5);
}

TEST(ResizeNearest, HandComputedModes) {
  const Tensor x = f32({3}, {10, 20, 30});
  const Tensor five = i64({1}, {5});
  // half_pixel 3 -> 5: coordinates -0.2, 0.4, 1.0, 1.6, 2.2
  expect_tensor(run1(resize("nearest", "half_pixel"), 13, {x, none(), none(), five}), F, {5},
                {10, 10, 20, 30, 30});
  // asymmetric + floor (torch 'nearest'): 0, .6, 1.2, 1.8, 2.4
  expect_tensor(run1(resize("nearest", "asymmetric", "floor"), 13, {x, none(), none(), five}), F,
                {5}, {10, 10, 20, 20, 30});
  expect_tensor(run1(resize("nearest", "asymmetric", "ceil"), 13, {x, none(), none(), five}), F,
                {5}, {10, 20, 30, 30, 30});
  // ties: asymmetric x2 gives coordinates 0, .5, 1, 1.5, ...
  const Tensor y = f32({4}, {1, 2, 3, 4});
  const Tensor two = f32({1}, {2});
  expect_tensor(run1(resize("nearest", "asymmetric", "round_prefer_floor"), 13, {y, none(), two}),
                F, {8}, {1, 1, 2, 2, 3, 3, 4, 4});
  expect_tensor(run1(resize("nearest", "asymmetric", "round_prefer_ceil"), 13, {y, none(), two}), F,
                {8}, {1, 2, 2, 3, 3, 4, 4, 4});
  // tf_half_pixel_for_nn: (x + .5) / 2 = .25, .75, ... -> round
  expect_tensor(run1(resize("nearest", "tf_half_pixel_for_nn"), 11, {y, f32({0}, {}), two}), F, {8},
                {1, 2, 2, 3, 3, 4, 4, 4});
  // align_corners 4 -> 3: 0, 1.5, 3 -> round_prefer_floor 0, 1, 3
  expect_tensor(run1(resize("nearest", "align_corners"), 13, {y, none(), none(), i64({1}, {3})}), F,
                {3}, {1, 2, 4});
}

TEST(ResizeNearest, MatchesTorchNearestAndAnyDtype) {
  const Tensor sizes = i64({4}, {1, 1, 5, 7});
  expect_tensor(
      run1(resize("nearest", "asymmetric", "floor"), 13, {resize_input(), none(), none(), sizes}),
      F, {1, 1, 5, 7}, {-2,  -2,   -0.5, -0.5, 1,   1,   2.5,  -2,   -2,  -0.5, -0.5, 1,
                        1,   2.5,  4,    4,    5.5, 5.5, 7.25, 7.25, 8.5, 4,    4,    5.5,
                        5.5, 7.25, 7.25, 8.5,  10,  10,  11.5, 11.5, 13,  13,   14.5});
  // torch 'nearest-exact' == half_pixel + round_prefer_ceil
  expect_tensor(run1(resize("nearest", "half_pixel", "round_prefer_ceil"), 13,
                     {resize_input(), none(), none(), sizes}),
                F, {1, 1, 5, 7}, {-2,  -2,  -0.5, 1,    1,   2.5,  2.5,  -2,  -2,  -0.5, 1,   1,
                                  2.5, 2.5, 4,    4,    5.5, 7.25, 7.25, 8.5, 8.5, 10,   10,  11.5,
                                  13,  13,  14.5, 14.5, 10,  10,   11.5, 13,  13,  14.5, 14.5});
  // int64 values beyond float precision move exactly
  const Tensor big = i64({2}, {kMax, kMin});
  expect_tensor(run1(resize("nearest", "asymmetric", "floor"), 13, {big, none(), f32({1}, {2})}),
                DataType::kInt64, {4},
                {9.223372036854775807e18, 9.223372036854775807e18, -9.223372036854775808e18,
                 -9.223372036854775808e18});
}

TEST(ResizeOpsets, ScalesOutputSizeUpsampleAndErrors) {
  const Tensor x = iota_f32({1, 1, 2, 2});
  // opset 10: scales input, asymmetric nearest; output dims floor(in * scale)
  expect_tensor(run1(node("Resize", {as("mode", "nearest")}), 10, {x, f32({4}, {1, 1, 1.5f, 2})}),
                F, {1, 1, 3, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3});
  // Upsample-7 scales attribute; Upsample-9 scales input
  const std::vector<double> up = {0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1,
                                  2, 2, 2, 3, 3, 3, 2, 2, 2, 3, 3, 3};
  expect_tensor(
      run1(node("Upsample", {as("mode", "nearest"), afs("scales", {1, 1, 2, 3})}), 7, {x}), F,
      {1, 1, 4, 6}, up);
  expect_tensor(run1(node("Upsample", {as("mode", "nearest")}), 9, {x, f32({4}, {1, 1, 2, 3})}), F,
                {1, 1, 4, 6}, up);
  // Upsample linear (asymmetric): [0, 1] x2 -> 0, .5, 1, 1
  expect_tensor(
      run1(node("Upsample", {as("mode", "linear")}), 9, {f32({1, 2}, {0, 1}), f32({2}, {1, 2})}), F,
      {1, 4}, {0, 0.5, 1, 1});
  // opset 11: empty roi and scales tensors stand for "not given"
  EXPECT_EQ(run1(resize("nearest", "half_pixel"), 11,
                 {x, f32({0}, {}), f32({0}, {}), i64({4}, {1, 1, 3, 3})})
                .shape(),
            (Shape{1, 1, 3, 3}));
  // opset 18 axes + keep_aspect_ratio_policy
  ir::Node n = node("Resize", {as("mode", "nearest"), ais("axes", {2, 3}),
                               as("keep_aspect_ratio_policy", "not_larger")});
  EXPECT_EQ(run1(n, 18, {iota_f32({1, 1, 2, 4}), none(), none(), i64({2}, {4, 4})}).shape(),
            (Shape{1, 1, 2, 4}));
  n.attributes["keep_aspect_ratio_policy"] = as("keep_aspect_ratio_policy", "not_smaller");
  EXPECT_EQ(run1(n, 18, {iota_f32({1, 1, 2, 4}), none(), none(), i64({2}, {4, 4})}).shape(),
            (Shape{1, 1, 4, 8}));
  // both scales and sizes; antialias; a wrong number of scales
  EXPECT_EQ(code_of([&] {
              run1(resize("linear", "half_pixel"), 13,
                   {x, none(), f32({4}, {1, 1, 2, 2}), i64({4}, {1, 1, 4, 4})});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              run1(node("Resize", {as("mode", "linear"), ai("antialias", 1)}), 18,
                   {x, none(), f32({4}, {1, 1, 0.5f, 0.5f})});
            }),
            ErrorCode::kNotSupported);
  EXPECT_EQ(code_of([&] {
              run1(resize("linear", "half_pixel"), 13, {x, none(), f32({2}, {2, 2})});
            }),
            ErrorCode::kInvalidArgument);
}

TEST(ResizeNearest, FloatCoordinatesAndUnscaledAxes) {
  // Coordinates are float32 like ONNX Runtime: 11 / 2.2f is exactly 5 in float (4.9999999 in
  // double), so output 11 reads input 5 (opset 10: asymmetric, truncation when upsampling).
  Tensor x = iota_f32({7});
  expect_tensor(run1(node("Resize", {as("mode", "nearest")}), 10, {x, f32({1}, {2.2f})}), F, {15},
                {0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5, 6});
  // An axis with scale 1 is copied: tf_half_pixel_for_nn + ceil would map channel 0 to 1.
  const Tensor y = run1(resize("nearest", "tf_half_pixel_for_nn", "ceil"), 13,
                        {iota_f32({2, 2}), none(), none(), i64({2}, {2, 4})});
  expect_tensor(y, F, {2, 4}, {1, 1, 1, 1, 3, 3, 3, 3});
}

TEST(ResizeTfCropAndResize, ExtrapolatesOutside) {
  // roi [0.5, 1.5] on a 3-element axis, 4 outputs: coordinates 1, 5/3, 7/3, 3 (the last two
  // are outside [0, 2])
  ir::Node n = node(
      "Resize", {as("mode", "linear"), as("coordinate_transformation_mode", "tf_crop_and_resize"),
                 af("extrapolation_value", -7)});
  expect_tensor(run1(n, 13, {f32({3}, {0, 10, 20}), f32({2}, {0.5f, 1.5f}), none(), i64({1}, {4})}),
                F, {4}, {10, 16.666666, -7, -7}, 1e-5);
  // roi [0.25, 1.5]: coordinates 0.5 (tie -> floor), 4/3, 13/6 (outside), 3 (outside)
  n.attributes["mode"] = as("mode", "nearest");
  expect_tensor(
      run1(n, 13, {f32({3}, {0, 10, 20}), f32({2}, {0.25f, 1.5f}), none(), i64({1}, {4})}), F, {4},
      {0, 10, -7, -7});
  // an axis whose size does not change (scale 1) is copied, roi or not (as ONNX Runtime)
  expect_tensor(run1(n, 13, {f32({3}, {0, 10, 20}), f32({2}, {0.5f, 1.5f}), none(), i64({1}, {3})}),
                F, {3}, {0, 10, 20});
}

TEST(ResizeLinear, IntegerAndHalfData) {
  // integer results are truncated like ONNX Runtime's static_cast: 127.5 -> 127
  const Tensor x = u8({2}, {0, 255});
  expect_tensor(run1(resize("linear", "align_corners"), 13, {x, none(), none(), i64({1}, {3})}),
                DataType::kUInt8, {3}, {0, 127, 255});
  expect_tensor(run1(resize("linear", "align_corners"), 13,
                     {i8({2}, {0, -101}), none(), none(), i64({1}, {3})}),
                DataType::kInt8, {3}, {0, -50, -101});
  Tensor h(DataType::kFloat16, {2});
  h.data<half>()[0] = float_to_half(1);
  h.data<half>()[1] = float_to_half(2);
  expect_tensor(run1(resize("linear", "align_corners"), 13, {h, none(), none(), i64({1}, {3})}),
                DataType::kFloat16, {3}, {1, 1.5, 2});
}

// ---- Shape inference ------------------------------------------------------------------------

TEST(TensorInfer, SymbolicAndConstantInputs) {
  const SymShape nchw = {Dim("N"), Dim(3), Dim(8), Dim(8)};
  auto out = [](const std::vector<ir::ValueInfo>& o, size_t i = 0) { return sym(o.at(i).shape); };
  // Reshape [N,3,8,8] -> [0, -1]: the -1 is inferred because N cancels
  const Tensor shp = i64({2}, {0, -1});
  EXPECT_EQ(out(infer(node("Reshape"), 13, {{F, nchw}, cin(shp)})), "[N, 192]");
  const Tensor shp2 = i64({2}, {-1, 192});
  EXPECT_EQ(out(infer(node("Reshape"), 13, {{F, nchw}, cin(shp2)})), "[N, 192]");
  const Tensor shp3 = i64({2}, {-1, 96});
  EXPECT_EQ(out(infer(node("Reshape"), 13, {{F, nchw}, cin(shp3)})), "[?, 96]");
  // unknown shape value: rank from the shape input's length
  EXPECT_EQ(out(infer(node("Reshape"), 13, {{F, nchw}, {DataType::kInt64, SymShape{Dim(3)}}})),
            "[?, ?, ?]");
  EXPECT_EQ(out(infer(node("Flatten"), 13, {{F, nchw}})), "[N, 192]");
  EXPECT_EQ(out(infer(node("Transpose", {ais("perm", {0, 2, 3, 1})}), 13, {{F, nchw}})),
            "[N, 8, 8, 3]");
  const Tensor st = i64({1}, {2}), en = i64({1}, {kMax}), ax = i64({1}, {1});
  EXPECT_EQ(out(infer(node("Slice"), 13, {{F, nchw}, cin(st), cin(en), cin(ax)})), "[N, 1, 8, 8]");
  const Tensor st0 = i64({1}, {0}), ax0 = i64({1}, {0});
  EXPECT_EQ(out(infer(node("Slice"), 13, {{F, nchw}, cin(st0), cin(en), cin(ax0)})),
            "[N, 3, 8, 8]");
  EXPECT_EQ(out(infer(node("Concat", {ai("axis", 1)}), 13, {{F, nchw}, {F, nchw}})),
            "[N, 6, 8, 8]");
  const auto split =
      infer(node("Split", {ai("axis", 2), ais("split", {3, 5})}, 2), 11, {{F, nchw}});
  EXPECT_EQ(out(split, 1), "[N, 3, 5, 8]");
  EXPECT_EQ(out(infer(node("Gather", {ai("axis", 1)}), 13,
                      {{F, nchw}, {DataType::kInt64, SymShape{Dim("K"), Dim(2)}}})),
            "[N, K, 2, 8, 8]");
  const Tensor sq = i64({1}, {0});
  EXPECT_EQ(out(infer(node("Unsqueeze"), 13, {{F, nchw}, cin(sq)})), "[1, N, 3, 8, 8]");
  EXPECT_EQ(out(infer(node("Squeeze"), 13, {{F, SymShape{Dim("N"), Dim(1)}}, cin(i64({1}, {1}))})),
            "[N]");
  const Tensor ex = i64({3}, {2, 1, 1});
  EXPECT_EQ(out(infer(node("Expand"), 13, {{F, SymShape{Dim("N"), Dim(1)}}, cin(ex)})),
            "[2, N, 1]");
  const Tensor pads = i64({8}, {0, 0, 1, 1, 0, 0, 1, 1});
  EXPECT_EQ(out(infer(node("Pad"), 13, {{F, nchw}, cin(pads)})), "[N, 3, 10, 10]");
  const Tensor scales = f32({4}, {1, 1, 2, 2});
  EXPECT_EQ(out(infer(node("Resize"), 13, {{F, nchw}, {F, {}, nullptr, true}, cin(scales)})),
            "[N, 3, 16, 16]");
  const Tensor sizes = i64({4}, {1, 3, 5, 5});
  EXPECT_EQ(out(infer(node("Resize"), 13,
                      {{F, nchw}, {F, {}, nullptr, true}, {F, {}, nullptr, true}, cin(sizes)})),
            "[1, 3, 5, 5]");
  const auto shape_out = infer(node("Shape"), 15, {{F, nchw}});
  EXPECT_EQ(shape_out[0].dtype, DataType::kInt64);
  EXPECT_EQ(out(shape_out), "[4]");
  EXPECT_EQ(out(infer(node("Shape", {ai("start", 1)}), 15, {{F, nchw}})), "[3]");
  const Tensor cs = i64({2}, {4, 5});
  const auto cos = infer(node("ConstantOfShape", {at("value", i64({1}, {1}))}), 9, {cin(cs)});
  EXPECT_EQ(cos[0].dtype, DataType::kInt64);
  EXPECT_EQ(out(cos), "[4, 5]");
  EXPECT_EQ(out(infer(node("Size"), 13, {{F, nchw}})), "[]");
  const Tensor r0 = f32({}, {0}), r1 = f32({}, {1}), rd = f32({}, {0.1f});
  EXPECT_EQ(out(infer(node("Range"), 11, {cin(r0), cin(r1), cin(rd)})), "[10]");
  const Tensor reps = i64({4}, {1, 2, 1, 3});
  EXPECT_EQ(out(infer(node("Tile"), 13, {{F, nchw}, cin(reps)})), "[N, 6, 8, 24]");
}

}  // namespace
}  // namespace trtutils
