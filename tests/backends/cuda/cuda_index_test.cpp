// The GPU index ops against the CPU kernels, bytes equal: ArgMax / ArgMin (ties, select_last_index,
// integer inputs), GatherElements / ScatterElements (negative indices, reductions over duplicate
// indices), GatherND (batch_dims) / ScatterND (slices, reductions), NonZero (-0, NaN, no hit),
// CumSum (exclusive, reverse, integers) and Not; InstanceNormalization and GroupNormalization
// within float tolerance.
#include <fmt/format.h>

#include <cmath>

#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

// Random integers in [lo, hi] as dtype dt (indices, or values with many ties).
Tensor ints(DataType dt, const Shape& s, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> u(lo, hi);
  Tensor t(dt, s);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t v = u(rng);
    if (dt == DataType::kInt64)
      t.data<int64_t>()[i] = v;
    else if (dt == DataType::kInt32)
      t.data<int32_t>()[i] = static_cast<int32_t>(v);
    else if (dt == DataType::kFloat32)
      t.data<float>()[i] = static_cast<float>(v);
    else if (dt == DataType::kFloat16)
      t.data<half>()[i] = float_to_half(static_cast<float>(v));
    else if (dt == DataType::kBool || dt == DataType::kUInt8)
      t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    else
      ADD_FAILURE() << "ints: dtype " << dtype_name(dt);
  }
  return t;
}

TEST(CudaIndex, ArgMaxArgMinMatchTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  int cases = 0;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32, DataType::kInt64})
    for (const char* op : {"ArgMax", "ArgMin"})
      for (int64_t axis : {0, 1, -1})
        for (int64_t last : {0, 1}) {
          const Tensor x = ints(dt, {3, 37, 5}, 11 + static_cast<uint32_t>(cases), -4, 4);
          check_case({op,
                      {feed(x)},
                      {ai("axis", axis), ai("keepdims", axis == 1 ? 0 : 1),
                       ai("select_last_index", last)}},
                     kExact, fmt::format("{} {} axis {} last {}", op, dtype_name(dt), axis, last));
          ++cases;
        }
  EXPECT_EQ(cases, 48);
}

TEST(CudaIndex, GatherElementsMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  const Tensor data = random_tensor(DataType::kFloat32, {4, 6, 5}, 3);
  for (int64_t axis : {0, 1, 2, -1}) {
    const int64_t len = data.dim(static_cast<size_t>(axis < 0 ? axis + 3 : axis));
    for (DataType it : {DataType::kInt64, DataType::kInt32}) {
      const Tensor idx = ints(it, {3, 4, 5}, 5 + static_cast<uint32_t>(axis), -len, len - 1);
      const std::string what = fmt::format("GatherElements axis {} {}", axis, dtype_name(it));
      check_case({"GatherElements", {feed(data), feed(idx)}, {ai("axis", axis)}}, kExact, what);
      check_case({"GatherElements", {feed(data), weight(idx)}, {ai("axis", axis)}}, kExact,
                 what + " (host indices)");
    }
  }
  check_case({"GatherElements",
              {feed(ints(DataType::kFloat16, {2, 3}, 1, -9, 9)),
               feed(ints(DataType::kInt64, {2, 7}, 2, 0, 2))},
              {ai("axis", 1)}},
             kExact, "GatherElements float16, more indices than the axis");
}

TEST(CudaIndex, ScatterElementsMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  const Tensor data = random_tensor(DataType::kFloat32, {5, 6}, 7);
  // none: a permutation per column (no duplicates: their order is left open by ONNX)
  Tensor perm(DataType::kInt64, {5, 6});
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 6; ++c) perm.data<int64_t>()[r * 6 + c] = (r * 2 + c) % 5 - (c % 2) * 5;
  const Tensor upd = random_tensor(DataType::kFloat32, {5, 6}, 8);
  check_case({"ScatterElements", {feed(data), feed(perm), feed(upd)}, {ai("axis", 0)}, 1, "", 18},
             kExact, "ScatterElements none");
  // reductions: duplicate indices applied in order
  const Tensor dup = ints(DataType::kInt64, {7, 6}, 9, -5, 4);
  const Tensor upd2 = random_tensor(DataType::kFloat32, {7, 6}, 10, 0.5f, 2.0f);
  for (const char* red : {"add", "mul", "max", "min"}) {
    check_case({"ScatterElements",
                {feed(data), feed(dup), feed(upd2)},
                {ai("axis", 0), as("reduction", red)},
                1,
                "",
                18},
               kExact, fmt::format("ScatterElements {}", red));
    check_case({"ScatterElements",
                {feed(ints(DataType::kInt64, {5, 6}, 3, -9, 9)), feed(dup),
                 feed(ints(DataType::kInt64, {7, 6}, 4, -3, 3))},
                {ai("axis", 0), as("reduction", red)},
                1,
                "",
                18},
               kExact, fmt::format("ScatterElements int64 {}", red));
  }
  check_case({"ScatterElements",
              {feed(data), feed(ints(DataType::kInt32, {5, 2}, 12, 0, 5)),
               feed(random_tensor(DataType::kFloat32, {5, 2}, 13))},
              {ai("axis", 1), as("reduction", "add")},
              1,
              "",
              18},
             kExact, "ScatterElements axis 1 int32 indices");
}

TEST(CudaIndex, GatherNdMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  const Tensor data = random_tensor(DataType::kFloat32, {3, 4, 5, 2}, 21);
  struct C {
    Shape idx;
    int64_t batch_dims;
  };
  uint32_t seed = 30;
  for (const C& c : {C{{6, 1}, 0}, C{{2, 3, 2}, 0}, C{{7, 4}, 0}, C{{3, 5, 1}, 1}, C{{3, 2, 3}, 1},
                     C{{3, 4, 2, 1}, 2}}) {
    Tensor idx(DataType::kInt64, c.idx);
    std::mt19937 rng(seed++);
    const int64_t k = c.idx.back();
    for (int64_t i = 0; i < idx.numel(); ++i) {
      const int64_t len = data.dim(static_cast<size_t>(c.batch_dims + i % k));
      idx.data<int64_t>()[i] = std::uniform_int_distribution<int64_t>(-len, len - 1)(rng);
    }
    check_case({"GatherND", {feed(data), feed(idx)}, {ai("batch_dims", c.batch_dims)}}, kExact,
               fmt::format("GatherND indices {} batch_dims {}", shape_str(c.idx), c.batch_dims));
  }
}

TEST(CudaIndex, ScatterNdMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  const Tensor data = random_tensor(DataType::kFloat32, {4, 4, 4}, 40);
  // none: distinct rows (the YOLO slice-assignment form writes whole slices)
  const Tensor rows = i64({2, 1}, {0, 2});
  check_case({"ScatterND",
              {feed(data), feed(rows), feed(random_tensor(DataType::kFloat32, {2, 4, 4}, 41))}},
             kExact, "ScatterND rows");
  const Tensor cells = i64({3, 3}, {0, 1, 2, 3, 3, 3, -1, 0, 0});
  check_case(
      {"ScatterND", {feed(data), weight(cells), feed(random_tensor(DataType::kFloat32, {3}, 42))}},
      kExact, "ScatterND elements (host indices)");
  const Tensor dup = i64({4, 1}, {1, 3, 1, 1});
  const Tensor upd = random_tensor(DataType::kFloat32, {4, 4, 4}, 43, 0.5f, 2.0f);
  for (const char* red : {"add", "mul", "max", "min"})
    check_case({"ScatterND", {feed(data), feed(dup), feed(upd)}, {as("reduction", red)}, 1, "", 18},
               kExact, fmt::format("ScatterND {}", red));
}

TEST(CudaIndex, NonZeroMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  Tensor x = ints(DataType::kFloat32, {3, 5, 7}, 50, -1, 1);
  x.data<float>()[0] = -0.0f;
  x.data<float>()[1] = std::nanf("");
  check_case({"NonZero", {feed(x)}}, kExact, "NonZero float32 rank 3");
  check_case({"NonZero", {feed(ints(DataType::kBool, {1000}, 51, 0, 1))}}, kExact, "NonZero bool");
  check_case({"NonZero", {feed(ints(DataType::kInt64, {2, 2, 2, 9}, 52, -1, 1))}}, kExact,
             "NonZero int64 rank 4");
  check_case({"NonZero", {feed(ints(DataType::kFloat16, {4, 300}, 53, -1, 1))}}, kExact,
             "NonZero float16");
  check_case({"NonZero", {feed(Tensor(DataType::kFloat32, {2, 8}))}}, kExact, "NonZero no hit");
  // a data-dependent shape: the executor runs eagerly, and a second run gives the same
  cuda::Executor ex(make_model({"NonZero", {feed(x)}}), {});
  const auto a = ex.run({{"in0", x}}), b = ex.run({{"in0", x}});
  expect_close(b.at("out0"), a.at("out0"), kExact, "NonZero second run");
}

TEST(CudaIndex, CumSumMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  int cases = 0;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32, DataType::kInt64})
    for (int64_t axis : {0, 1, -1})
      for (int64_t exclusive : {0, 1})
        for (int64_t reverse : {0, 1}) {
          const Tensor x = dt == DataType::kFloat32 ? random_tensor(dt, {4, 33, 6}, 60)
                                                    : ints(dt, {4, 33, 6}, 61, -3, 3);
          check_case({"CumSum",
                      {feed(x), weight(i64({}, {axis}))},
                      {ai("exclusive", exclusive), ai("reverse", reverse)},
                      1,
                      "",
                      14},
                     kExact,
                     fmt::format("CumSum {} axis {} exclusive {} reverse {}", dtype_name(dt), axis,
                                 exclusive, reverse));
          ++cases;
        }
  EXPECT_EQ(cases, 48);
}

TEST(CudaIndex, NotMatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  check_case({"Not", {feed(ints(DataType::kBool, {3, 77}, 70, 0, 1))}}, kExact, "Not");
}

TEST(CudaNorm, InstanceAndGroupNormalizationMatchTheCpuKernels) {
  TRT_REQUIRE_CUDA();
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    const Tolerance tol = dt == DataType::kFloat32 ? Tolerance{1e-5, 1e-5} : Tolerance{4e-3, 4e-3};
    for (const Shape& s : {Shape{2, 6, 9, 11}, Shape{1, 8, 1, 1}, Shape{3, 4, 50}}) {
      const Tensor x = random_tensor(dt, s, 80, -3.0f, 5.0f);
      const int64_t c = s[1];
      const Tensor scale = random_tensor(DataType::kFloat32, {c}, 81, 0.5f, 2.0f);
      const Tensor bias = random_tensor(DataType::kFloat32, {c}, 82);
      const std::string what = fmt::format("{} {}", dtype_name(dt), shape_str(s));
      check_case({"InstanceNormalization", {feed(x), weight(scale), weight(bias)}}, tol,
                 "InstanceNormalization " + what);
      for (int64_t g : {int64_t{1}, int64_t{2}, c})
        check_case({"GroupNormalization",
                    {feed(x), weight(scale), weight(bias)},
                    {ai("num_groups", g), af("epsilon", 1e-3f)},
                    1,
                    "",
                    21},
                   tol, fmt::format("GroupNormalization groups {} {}", g, what));
      check_case({"GroupNormalization",
                  {feed(x), weight(random_tensor(DataType::kFloat32, {2}, 83)),
                   weight(random_tensor(DataType::kFloat32, {2}, 84))},
                  {ai("num_groups", 2)},
                  1,
                  "",
                  18},
                 tol, "GroupNormalization opset 18 per-group scale " + what);
    }
  }
}

// RoiAlign: both modes and coordinate rules, adaptive and fixed sampling, regions partly outside
// the map, float16, int32 batch indices.
TEST(CudaRoiAlign, MatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 17, 23}, 90);
  const Tensor rois =
      f32({5, 4}, {0, 0, 8, 8, 2.5f, 3, 20, 15, -4, -3, 5, 6, 10, 1, 10.5f, 30, 0, 0, 22, 16});
  const Tensor batch = i64({5}, {0, 1, 1, 0, 1});
  int cases = 0;
  for (const char* mode : {"avg", "max"})
    for (int64_t opset : {10, 16})
      for (int64_t sampling : {0, 2}) {
        const std::vector<ir::Attribute> attrs = {
            as("mode", mode), ai("output_height", 4), ai("output_width", 3),
            ai("sampling_ratio", sampling), af("spatial_scale", 0.5f)};
        const std::string what =
            fmt::format("RoiAlign {} opset {} sampling {}", mode, opset, sampling);
        check_case({"RoiAlign", {feed(x), feed(rois), feed(batch)}, attrs, 1, "", opset},
                   {1e-5, 1e-5}, what);
        ++cases;
      }
  EXPECT_EQ(cases, 8);
  Tensor b32(DataType::kInt32, {5});
  for (int64_t i = 0; i < 5; ++i)
    b32.data<int32_t>()[i] = static_cast<int32_t>(batch.data<int64_t>()[i]);
  check_case({"RoiAlign",
              {feed(random_tensor(DataType::kFloat16, {2, 3, 17, 23}, 91)), feed(rois), feed(b32)},
              {ai("output_height", 7), ai("output_width", 7)},
              1,
              "",
              16},
             {2e-3, 2e-3}, "RoiAlign float16, int32 batch indices");
}

// GridSample: every mode, padding rule and corner alignment, a grid reaching past [-1, 1].
TEST(CudaGridSample, MatchesTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  const Tensor x = random_tensor(DataType::kFloat32, {2, 3, 9, 13}, 95);
  const Tensor g = random_tensor(DataType::kFloat32, {2, 5, 7, 2}, 96, -1.3f, 1.3f);
  int cases = 0;
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (int64_t ac : {0, 1}) {
        check_case({"GridSample",
                    {feed(x), feed(g)},
                    {as("mode", mode), as("padding_mode", pad), ai("align_corners", ac)},
                    1,
                    "",
                    16},
                   {1e-5, 1e-5}, fmt::format("GridSample {} {} align_corners {}", mode, pad, ac));
        ++cases;
      }
  EXPECT_EQ(cases, 18);
  check_case({"GridSample",
              {feed(random_tensor(DataType::kFloat16, {1, 4, 6, 6}, 97)),
               feed(random_tensor(DataType::kFloat16, {1, 3, 3, 2}, 98))},
              {},
              1,
              "",
              16},
             {2e-3, 2e-3}, "GridSample float16");
}

// Einsum as one cuBLASLt product: the contractions exporters write (batched matmul, attention
// scores and context, channel mixing, outer product, a transpose, ellipsis and size-1
// broadcasting) against the CPU reference; diagonals and sums inside one operand fall back.
TEST(CudaEinsum, ProductsMatchTheCpuKernel) {
  TRT_REQUIRE_CUDA();
  struct C {
    const char* eq;
    std::vector<Shape> shapes;
  };
  const std::vector<C> cases = {
      {"bij,bjk->bik", {{3, 5, 7}, {3, 7, 4}}},
      {"nqhd,nkhd->nhqk", {{2, 9, 3, 8}, {2, 11, 3, 8}}},
      {"nhqk,nkhd->nqhd", {{2, 3, 9, 11}, {2, 11, 3, 8}}},
      {"bhwc,hkc->bhwk", {{2, 5, 6, 8}, {5, 7, 8}}},
      {"bij,jk->bik", {{3, 5, 7}, {7, 4}}},
      {"i,j->ij", {{6}, {5}}},
      {"ij,ij->i", {{4, 9}, {4, 9}}},
      {"...ij,...jk->...ik", {{2, 3, 4, 5}, {3, 5, 6}}},
      {"bij,bjk->bik", {{1, 5, 7}, {3, 7, 4}}},
      {"ij->ji", {{7, 5}}},
      {"bcij->bjci", {{2, 3, 4, 5}}},
      // MaxViT's relative attention (upper case, spaces)
      {"B G H I D, B G H J D -> B G H I J", {{2, 3, 2, 7, 8}, {2, 3, 2, 7, 8}}},
      {"B G H I J, B G H J D -> B G H I D", {{2, 3, 2, 7, 7}, {2, 3, 2, 7, 8}}},
  };
  uint32_t seed = 100;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16})
    for (const C& c : cases) {
      std::vector<In> ins;
      for (const Shape& s : c.shapes) ins.push_back(feed(random_tensor(dt, s, seed++)));
      const Tolerance tol =
          dt == DataType::kFloat32 ? Tolerance{1e-5, 1e-4} : Tolerance{1e-2, 1e-2};
      NodeCase nc{"Einsum", ins, {as("equation", c.eq)}};
      const auto want = run_cpu(nc);
      cuda::ExecutorOptions o;
      o.allow_tf32 = false;
      const auto got = run_gpu(nc, o);
      expect_close(got.at(0), want.at(0), tol, fmt::format("Einsum {} {}", c.eq, dtype_name(dt)));
    }
  for (const char* eq : {"ii->i", "ij->i"}) {
    NodeCase nc{
        "Einsum", {feed(random_tensor(DataType::kFloat32, {4, 4}, 7))}, {as("equation", eq)}};
    cuda::Executor ex(make_model(nc), {});
    EXPECT_EQ(ex.node_placement().at(0), "cpu (fallback)") << eq;
  }
}

}  // namespace
}  // namespace trtutils
