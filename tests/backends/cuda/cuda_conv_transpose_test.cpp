// ConvTranspose on the GPU (cuDNN backward data) against the CPU reference kernel: strides,
// dilations, symmetric pads, output_padding, groups, 1-D / 2-D / 3-D, with and without bias, in
// float32 (exact FMA arithmetic) and float16; and the forms cuDNN's call cannot express
// (asymmetric pads, auto_pad SAME_UPPER, output_shape) running on the CPU inside a GPU executor
// (per-layer fallback) with the same result.
#include <string>

#include "backends/cuda/cuda_test_util.h"

namespace trtutils {
namespace {

using namespace cuda_testing;  // NOLINT

struct TCase {
  Shape x, w;  // w: [C_in, C_out / group, k...]
  std::vector<int64_t> strides, dilations, pads, output_padding;
  int64_t group = 1;
  bool bias = true;
};

NodeCase make_case(const TCase& t, DataType dt, uint32_t seed) {
  std::vector<ir::Attribute> attrs{ai("group", t.group)};
  if (!t.strides.empty()) attrs.push_back(ais("strides", t.strides));
  if (!t.dilations.empty()) attrs.push_back(ais("dilations", t.dilations));
  if (!t.pads.empty()) attrs.push_back(ais("pads", t.pads));
  if (!t.output_padding.empty()) attrs.push_back(ais("output_padding", t.output_padding));
  std::vector<In> ins{feed(random_tensor(dt, t.x, seed)), weight(random_tensor(dt, t.w, seed + 1))};
  if (t.bias) ins.push_back(weight(random_tensor(dt, {t.w[1] * t.group}, seed + 2)));
  return NodeCase("ConvTranspose", ins, attrs);
}

const std::vector<TCase>& cases() {
  static const std::vector<TCase> v = {
      {{2, 4, 5, 6}, {4, 3, 3, 3}, {}, {}, {}, {}},                               // plain
      {{1, 8, 7, 7}, {8, 4, 2, 2}, {2, 2}, {}, {}, {}},                           // 2x upsampling
      {{1, 8, 7, 9}, {8, 4, 4, 4}, {2, 2}, {}, {1, 1, 1, 1}, {}},                 // DBNet-style
      {{2, 6, 5, 5}, {6, 2, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}, 3},          // groups, out pad
      {{1, 4, 6, 6}, {4, 4, 3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, {}, 1, false},   // dilated
      {{1, 16, 4, 4}, {16, 1, 3, 3}, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}, 16},       // depthwise
      {{3, 5, 11}, {5, 7, 5}, {3}, {}, {2, 2}, {2}},                              // 1-D
      {{1, 3, 3, 4, 5}, {3, 2, 2, 3, 3}, {2, 1, 2}, {}, {0, 1, 1, 0, 1, 1}, {}},  // 3-D
  };
  return v;
}

TEST(CudaConvTranspose, MatchesTheCpuReference) {
  TRT_REQUIRE_CUDA();
  cuda::ExecutorOptions exact;
  exact.allow_tf32 = false;
  for (size_t i = 0; i < cases().size(); ++i) {
    const std::string what = "case " + std::to_string(i);
    check_case(make_case(cases()[i], DataType::kFloat32, 10 + 3 * static_cast<uint32_t>(i)),
               {1e-4, 1e-4}, what + " float32", exact);
    check_case(make_case(cases()[i], DataType::kFloat16, 40 + 3 * static_cast<uint32_t>(i)),
               {2e-2, 2e-2}, what + " float16");
  }
}

// Forms the GPU kernel refuses run on the CPU inside the GPU executor, with the same result.
TEST(CudaConvTranspose, OtherPaddingFormsFallBackToTheCpu) {
  TRT_REQUIRE_CUDA();
  std::vector<NodeCase> v;
  v.push_back(
      make_case({{1, 4, 5, 5}, {4, 2, 3, 3}, {2, 2}, {}, {0, 1, 1, 0}, {}}, DataType::kFloat32, 1));
  NodeCase same =
      make_case({{1, 4, 5, 5}, {4, 2, 3, 3}, {2, 2}, {}, {}, {}}, DataType::kFloat32, 2);
  same.attrs.push_back(as("auto_pad", "SAME_UPPER"));
  v.push_back(same);
  NodeCase shaped =
      make_case({{1, 4, 5, 5}, {4, 2, 3, 3}, {2, 2}, {}, {}, {}}, DataType::kFloat32, 3);
  shaped.attrs.push_back(ais("output_shape", {10, 10}));
  v.push_back(shaped);
  for (size_t i = 0; i < v.size(); ++i) {
    cuda::Executor ex(make_model(v[i]), {});
    const auto got = ex.run({{"in0", v[i].inputs[0].value}});
    EXPECT_EQ(ex.node_placement().at(0), "cpu (fallback)") << i;
    expect_close(got.at("out0"), run_cpu(v[i]).at(0), {1e-5, 1e-5}, "form " + std::to_string(i));
  }
}

}  // namespace
}  // namespace trtutils
